//! What a newcomer meets on a ladder, host or author (issue 60): a competition
//! opened for the game's own number of seats that says what it waits for, a
//! viewer with a way back to its competition, public pages that keep an author's
//! failed versions to the author, and a status that quotes the failing line. Run
//! through the real programs, on SQLite and (with ASTRAGAL_PG_URL) PostgreSQL.

use astragal_tests::{LadderServer, http_get, ladder, ladder_admin, output_text as text, test_stores};
use std::path::Path;

const ADMIN_TOKEN: &str = "admin-secret-newcomers-0123";

/// Runs a worker of the host's bots and python3 uploads until nothing is left.
fn work(url: &str, token: &str) {
    let o = ladder(
        &[
            "worker",
            "--server",
            url,
            "--exit-when-idle",
            "--sandbox",
            "none",
            "--allow-unsandboxed",
            "--runtimes",
            "python3",
        ],
        &[("ASTRAGAL_WORKER_TOKEN", token)],
    );
    assert!(o.status.success(), "{}", text(&o));
}

/// The first game id a page links to the viewer.
fn first_game(page: &str) -> String {
    page.split("href=\"/games/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no game linked: {page}"))
        .to_owned()
}

/// `ladder author ARGS…` as the author whose token is in `token`.
fn as_author(url: &str, token: &Path, args: &[&str]) -> std::process::Output {
    let token = token.to_string_lossy();
    let mut all = vec!["author", "--server", url, "--token-file", &token];
    all.extend_from_slice(args);
    ladder(&all, &[])
}

/// `ladder submit ARGS…` as the author whose token is in `token`.
fn submit_as(url: &str, token: &Path, args: &[&str]) -> std::process::Output {
    let token = token.to_string_lossy();
    let mut all = vec!["submit", "--server", url, "--token-file", &token];
    all.extend_from_slice(args);
    ladder(&all, &[])
}

fn submit(url: &str, token: &Path, dir: &Path, manifest: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("astragal.toml"), manifest).unwrap();
    let starter =
        std::fs::read_to_string(astragal_tests::workspace_root().join("bots/starters/python/bot.py"))
            .unwrap();
    std::fs::write(dir.join("bot.py"), starter).unwrap();
    let o = submit_as(url, token, &[&dir.to_string_lossy()]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_competition_short_of_bots_says_what_it_waits_for_and_cuatto_opens_for_four() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("newcomers-seats")) {
        let server = LadderServer::start(&t.url, ADMIN_TOKEN, &[]);
        let admin = |args: &[&str]| ladder_admin(&server.url, ADMIN_TOKEN, args);
        for name in ["cu-a", "cu-b", "cu-c"] {
            admin(&["register-bot", name, "cuatto", "builtin:random"]);
        }
        // No --seats: Cuatto's own four, not its smallest two.
        let opened = admin(&["open", "four", "--game", "cuatto"]);
        assert!(
            opened.contains(" · 4 seats · ") && opened.contains("needs 4 active bots, has 3"),
            "{}: {opened}",
            t.kind
        );
        let (status, page) = http_get(server.web, "/competitions/four");
        assert_eq!(status, 200, "{page}");
        assert!(page.contains("needs 4 active bots, has 3"), "{}: {page}", t.kind);
        admin(&["register-bot", "cu-d", "cuatto", "builtin:random"]);
        let listed = admin(&["list"]);
        assert!(
            listed.contains("four: cuatto") && !listed.contains("needs"),
            "{}: {listed}",
            t.kind
        );
        let (_, page) = http_get(server.web, "/competitions/four");
        assert!(!page.contains("active bots, has"), "{}: {page}", t.kind);
        // Two-seat games still open for two.
        admin(&["register-bot", "ur-a", "ur", "builtin:random"]);
        let ur = admin(&["open", "ur-l", "--game", "ur"]);
        assert!(
            ur.contains(" · 2 seats · ") && ur.contains("needs 2 active bots, has 1"),
            "{}: {ur}",
            t.kind
        );
    }
}

#[test]
fn the_viewer_leads_back_to_its_competition_and_failed_versions_stay_the_authors() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("newcomers-pages")) {
        let scratch = tempfile::tempdir().unwrap();
        let server = LadderServer::start(&t.url, ADMIN_TOKEN, &[]);
        let admin = |args: &[&str]| ladder_admin(&server.url, ADMIN_TOKEN, args);
        let worker = admin(&["add-worker", "w1"]).trim().to_owned();
        let alice = scratch.path().join("alice.token");
        std::fs::write(&alice, admin(&["add-author", "alice"])).unwrap();
        admin(&["register-bot", "rnd", "ur", "builtin:random"]);
        admin(&["open", "ur-ladder", "--game", "ur", "--max-games", "4"]);
        let plain = "name = \"lucky\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n";
        submit(&server.url, &alice, &scratch.path().join("v1"), plain);
        // Its second version's build fails, saying so on its first error line.
        let failing = format!(
            "{plain}build = \"python3 -c \\\"import sys; print('step 1 done'); print('error: no compiler for lucky'); \
             sys.exit(2)\\\"\"\n"
        );
        submit(&server.url, &alice, &scratch.path().join("v2"), &failing);
        work(&server.url, &worker);

        let (_, page) = http_get(server.web, "/competitions/ur-ladder");
        let game = first_game(&page);
        let (status, viewer) = http_get(server.web, &format!("/games/{game}"));
        assert_eq!(status, 200);
        assert!(
            viewer.contains("href=\"/competitions/ur-ladder\""),
            "{}: no way back in the viewer",
            t.kind
        );

        // The author reads why in a line; the public never sees the version.
        let o = as_author(&server.url, &alice, &["bots"]);
        let mine = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            mine.contains("lucky@2") && mine.contains("its build failed: error: no compiler for lucky"),
            "{}: {mine}",
            t.kind
        );
        let (status, public) = http_get(server.web, "/bots/lucky");
        assert_eq!(status, 200, "{public}");
        assert!(!public.contains("lucky@2"), "{}: {public}", t.kind);
        let (status, _) = http_get(server.web, "/bots/lucky@2");
        assert_eq!(status, 404, "{}", t.kind);
        let (status, json) = http_get(server.web, "/bots/lucky.json");
        assert_eq!(status, 200);
        assert!(!json.contains("lucky@2"), "{}: {json}", t.kind);
    }
}

/// The levels a worker may run at here: `none` always, `isolated` where this
/// machine gives it (else it says why that part is skipped).
fn levels(test: &str) -> Vec<referee::sandbox::Level> {
    use referee::sandbox::{Level, Sandbox};
    let mut levels = vec![Level::None];
    match Sandbox::at(Level::Isolated).check() {
        Ok(()) => levels.push(Level::Isolated),
        Err(e) => {
            astragal_tests::skipped(&format!("{test}/isolated"), &e.to_string());
        }
    }
    levels
}

/// A runtime is a promise a worker keeps before it offers it: a tiny program is
/// built and run with it, in the sandbox builds run in, and what it found is
/// said; a broken one says why, in the tool's own words. (Under isolation the
/// JDK's settings in `/etc` were not shown, and `javac` died at its first class:
/// the `java` runtime was offered and could build nothing.)
#[test]
fn a_worker_keeps_each_runtimes_promise_before_it_offers_it() {
    use ladder::worker::promise::{Probe, check, check_runtime};
    use referee::sandbox::Sandbox;
    for level in levels("runtime promises") {
        let sandbox = Sandbox::at(level);
        if astragal_tests::on_path("c++") {
            let found = check_runtime("cc", &sandbox).unwrap_or_else(|e| panic!("{level}: {e}"));
            assert!(
                found.contains("C default standard 2")
                    && found.contains("C++ standard 20")
                    && found.contains("Make"),
                "{level}: {found}"
            );
        } else {
            astragal_tests::skipped("the cc runtime's promise", "no c++ on PATH");
        }
        if astragal_tests::on_path("javac") {
            let found = check_runtime("java", &sandbox).unwrap_or_else(|e| panic!("{level}: {e}"));
            assert!(
                found.contains("javac ") && found.contains(" runs"),
                "{level}: {found}"
            );
        } else {
            astragal_tests::skipped("the java runtime's promise", "no javac on PATH");
        }
        let found = check_runtime("python3", &sandbox).unwrap_or_else(|e| panic!("{level}: {e}"));
        assert!(found.starts_with("Python 3."), "{level}: {found}");
        // Cargo's promise is kept where cargo is on the bots' PATH, and refused
        // in its own words where it is not (here rustup's cargo is in ~/.cargo).
        let on_bots_path = referee::sandbox::BOT_PATH
            .split(':')
            .any(|dir| Path::new(dir).join("cargo").is_file());
        match check_runtime("cargo", &sandbox) {
            Ok(found) => {
                assert!(on_bots_path, "{level}: cargo kept off the bots' PATH: {found}");
                assert!(
                    found.contains("cargo ") && found.contains("rustc's program runs"),
                    "{level}: {found}"
                );
            }
            Err(why) => {
                let why = why.to_string();
                assert!(!on_bots_path, "{level}: {why}");
                assert!(
                    why.contains("cargo") && why.contains("not found"),
                    "{level}: {why}"
                );
            }
        }
        // The engine's package: offered only where the host gave it, and only of
        // the worker's own version.
        let why = check_runtime("python3-engine", &sandbox).unwrap_err().to_string();
        assert!(
            why.contains("No module named 'astragal_engine'"),
            "{level}: {why}"
        );
        let with = |dir: &Path| {
            let mut s = sandbox.clone();
            s.env
                .push(("PYTHONPATH".into(), dir.to_string_lossy().into_owned()));
            s.read_only.push(dir.to_owned());
            s
        };
        let package = astragal_tests::python_package();
        let found =
            check_runtime("python3-engine", &with(&package)).unwrap_or_else(|e| panic!("{level}: {e}"));
        assert!(
            found.starts_with("Python 3.")
                && found.ends_with(&format!("with astragal_engine {}", engine::ENGINE_VERSION)),
            "{level}: {found}"
        );
        let old = tempfile::tempdir().unwrap();
        std::fs::create_dir(old.path().join("astragal_engine")).unwrap();
        std::fs::write(
            old.path().join("astragal_engine/__init__.py"),
            "ENGINE_VERSION = '0.0.1'\n",
        )
        .unwrap();
        let why = check_runtime(
            "python3-engine",
            &with(&std::fs::canonicalize(old.path()).unwrap()),
        )
        .unwrap_err();
        assert!(
            matches!(&why, ladder::worker::promise::PromiseError::EngineVersion { found, .. } if found == "0.0.1"),
            "{level}: {why}"
        );
        let why = why.to_string();
        assert!(
            why.contains("\"0.0.1\"") && why.contains(engine::ENGINE_VERSION),
            "{level}: {why}"
        );
        let broken = Probe {
            files: &[("probe.sh", "echo 'cc: fatal error: no input files' >&2\nexit 4\n")],
            command: "sh probe.sh",
        };
        let why = check(&broken, &sandbox, std::time::Duration::from_secs(60))
            .unwrap_err()
            .to_string();
        assert!(
            why.contains("fatal error: no input files") && why.contains('4'),
            "{level}: {why}"
        );
    }
}

/// The C++ and Java starters go up as they are: built by a worker in its
/// isolated sandbox with their manifests' build lines, checked, and active at
/// every game.
#[test]
fn the_cpp_and_java_starters_upload_build_and_pass_their_check_as_they_are() {
    use referee::sandbox::{Level, Sandbox};
    if let Err(e) = Sandbox::at(Level::Isolated).check() {
        astragal_tests::skipped("the starters uploaded", &e.to_string());
        return;
    }
    if !(astragal_tests::on_path("c++") && astragal_tests::on_path("javac")) {
        astragal_tests::skipped("the starters uploaded", "no c++ or javac on PATH");
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt.block_on(test_stores("newcomers-kits")).remove(0);
    let scratch = tempfile::tempdir().unwrap();
    let server = LadderServer::start(&t.url, ADMIN_TOKEN, &[]);
    let admin = |args: &[&str]| ladder_admin(&server.url, ADMIN_TOKEN, args);
    let worker = admin(&["add-worker", "w1"]).trim().to_owned();
    let author = scratch.path().join("carol.token");
    std::fs::write(&author, admin(&["add-author", "carol", "--max-bots", "10"])).unwrap();
    let kits = astragal_tests::workspace_root().join("bots/starters");
    for (kit, files) in [
        ("cpp", ["astragal.toml", "bot.cpp"]),
        ("java", ["astragal.toml", "Bot.java"]),
    ] {
        // The kit's own files, without what its check.sh built here.
        let dir = scratch.path().join(kit);
        std::fs::create_dir_all(&dir).unwrap();
        for file in files {
            std::fs::copy(kits.join(kit).join(file), dir.join(file)).unwrap();
        }
        let o = submit_as(&server.url, &author, &[&dir.to_string_lossy()]);
        assert!(o.status.success(), "{kit}: {}", text(&o));
    }
    let o = ladder(
        &[
            "worker",
            "--server",
            &server.url,
            "--exit-when-idle",
            "--sandbox",
            "isolated",
            "--runtimes",
            "cc,java",
        ],
        &[("ASTRAGAL_WORKER_TOKEN", &worker)],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = as_author(&server.url, &author, &["bots"]);
    let bots = String::from_utf8_lossy(&o.stdout).into_owned();
    for kit in ["cpp", "java"] {
        for game in engine::GAME_IDS {
            let line = bots
                .lines()
                .find(|l| l.starts_with(&format!("starter-{kit}-{game} ")))
                .unwrap_or_else(|| panic!("no starter-{kit}-{game}: {bots}"));
            assert!(line.contains("): active"), "{line}\n{bots}");
        }
    }
}

/// The searching Python starter goes up as it is, its manifest beside the plain
/// one's (`ladder submit --manifest search.toml`): a worker without the engine's
/// package leaves it alone, and one that offers it (`--python-engine`) checks it
/// and plays its games, in the sandbox where this machine has one.
#[test]
fn the_searching_starter_uploads_as_it_is_and_plays_where_the_engine_is_offered() {
    use referee::sandbox::Level;
    let package = astragal_tests::python_package();
    let level = *levels("the searching starter uploaded").last().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt.block_on(test_stores("newcomers-engine")).remove(0);
    let scratch = tempfile::tempdir().unwrap();
    let server = LadderServer::start(&t.url, ADMIN_TOKEN, &[]);
    let admin = |args: &[&str]| ladder_admin(&server.url, ADMIN_TOKEN, args);
    let worker = admin(&["add-worker", "w1"]).trim().to_owned();
    let author = scratch.path().join("dana.token");
    std::fs::write(&author, admin(&["add-author", "dana", "--max-bots", "10"])).unwrap();
    admin(&["register-bot", "rnd", "ur", "builtin:random"]);
    admin(&["open", "ur-engine", "--game", "ur", "--max-games", "4"]);
    let kit = astragal_tests::workspace_root().join("bots/starters/python");
    let o = submit_as(
        &server.url,
        &author,
        &[
            "--manifest",
            &kit.join("search.toml").to_string_lossy(),
            &kit.to_string_lossy(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let bots = || String::from_utf8_lossy(&as_author(&server.url, &author, &["bots"]).stdout).into_owned();
    let sandbox: &[&str] = match level {
        Level::Isolated => &["--sandbox", "isolated"],
        Level::None => &["--sandbox", "none", "--allow-unsandboxed"],
    };
    let run_worker = |more: &[&str]| {
        let mut args = vec!["worker", "--server", &server.url, "--exit-when-idle"];
        args.extend_from_slice(sandbox);
        args.extend_from_slice(more);
        let o = ladder(&args, &[("ASTRAGAL_WORKER_TOKEN", &worker)]);
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
    };
    // Without the package the runtime is not this worker's: nothing is taken.
    run_worker(&["--runtimes", "python3"]);
    let before = bots();
    assert!(
        before.contains("starter-python-search-ur ") && !before.contains("): active"),
        "{before}"
    );
    let said = run_worker(&[
        "--runtimes",
        "python3-engine",
        "--python-engine",
        &package.to_string_lossy(),
    ]);
    assert!(
        said.contains("runtime python3-engine: Python 3.") && said.contains(engine::ENGINE_VERSION),
        "{said}"
    );
    let after = bots();
    for game in engine::GAME_IDS {
        let line = after
            .lines()
            .find(|l| l.starts_with(&format!("starter-python-search-{game} ")))
            .unwrap_or_else(|| panic!("no starter-python-search-{game}: {after}"));
        assert!(line.contains("): active"), "{line}\n{after}");
    }
    let (status, games) = http_get(server.web, "/competitions/ur-engine/games.jsonl");
    assert_eq!(status, 200, "{games}");
    let records: Vec<serde_json::Value> = games
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect();
    assert_eq!(records.len(), 4, "{games}");
    for r in &records {
        assert!(r.to_string().contains("starter-python-search-ur"), "{r}");
    }
}

/// A newcomer's first upload, a starter kit of five games, meets a cap of three
/// bots: refused as a whole, saying why in terms of the upload (it used to
/// count the bots it was making: "you have 3 bots" to an author with none).
/// Under the default cap it goes up; its first version answers to `NAME@1`.
#[test]
fn a_starter_kit_fits_the_default_cap_and_a_smaller_cap_says_why_not() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt.block_on(test_stores("newcomers-cap")).remove(0);
    let scratch = tempfile::tempdir().unwrap();
    let server = LadderServer::start(&t.url, ADMIN_TOKEN, &[]);
    let admin = |args: &[&str]| ladder_admin(&server.url, ADMIN_TOKEN, args);
    let kit = astragal_tests::workspace_root().join("bots/starters/python");
    let upload = |token: &Path| submit_as(&server.url, token, &[&kit.to_string_lossy()]);
    let small = scratch.path().join("erin.token");
    std::fs::write(&small, admin(&["add-author", "erin", "--max-bots", "3"])).unwrap();
    let o = upload(&small);
    assert!(!o.status.success());
    let said = text(&o);
    assert!(
        said.contains("this upload makes a bot for each of its 5 games")
            && said.contains("gives you 3 bots, 0 of them made already"),
        "{said}"
    );
    let author = |token: &Path, args: &[&str]| as_author(&server.url, token, args);
    let mine = String::from_utf8_lossy(&author(&small, &["bots"]).stdout).into_owned();
    assert!(
        mine.contains("no bots yet"),
        "nothing of the upload was kept: {mine}"
    );
    let usual = scratch.path().join("finn.token");
    std::fs::write(&usual, admin(&["add-author", "finn"])).unwrap();
    let o = upload(&usual);
    assert!(o.status.success(), "{}", text(&o));
    let o = author(&usual, &["log", "starter-python-ur@1"]);
    assert!(o.status.success(), "{}", text(&o));
    // Another author's bot is refused as not theirs, not as a bad token.
    let o = author(&small, &["log", "starter-python-ur"]);
    let said = text(&o);
    assert!(
        !o.status.success() && said.contains("is not one of your bots") && !said.contains("token"),
        "{said}"
    );
}
