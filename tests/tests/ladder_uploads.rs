//! Authors' bots end to end through the real programs, as a host and strangers
//! run them: `ladder serve`, `ladder admin add-author`, `ladder submit` and
//! `ladder worker --sandbox isolated`, on SQLite and (with ASTRAGAL_PG_URL)
//! PostgreSQL. A Python bot with a build step, a JavaScript bot, a build that
//! fails, a bot that fails its check, a second version that supersedes the
//! first, a bot that hunts for another author's files, and hostile archives:
//! every accepted bot rated, every refused one with its reason.

use astragal_tests::attacks::{self, CACHE_CHANCE_HITS, RELAY_CHANCE_HITS, hits_of};
use astragal_tests::{
    LadderServer, Reaped, binary, ladder, ladder_admin, output_text as text, test_stores, workspace_root,
};
use referee::sandbox::{Level, Sandbox};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const ADMIN_TOKEN: &str = "admin-secret-uploads-0123";

/// Whether `--sandbox isolated` works here; if not, says why `test` is skipped.
fn isolation(test: &str) -> bool {
    match Sandbox::at(Level::Isolated).check() {
        Ok(()) => true,
        Err(e) => astragal_tests::skipped(test, &e.to_string()),
    }
}

fn admin(url: &str, args: &[&str]) -> String {
    ladder_admin(url, ADMIN_TOKEN, args)
}

/// A bot's folder under `root`: `files` by path, and its manifest.
fn folder(root: &Path, name: &str, manifest: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("astragal.toml"), manifest).unwrap();
    for (path, body) in files {
        let at = dir.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, body).unwrap();
    }
    dir
}

fn starter() -> String {
    std::fs::read_to_string(workspace_root().join("bots/starters/python/bot.py")).unwrap()
}

/// Runs a worker until the server has nothing left to build, check or play.
fn work(url: &str, token: &str, cache: &Path) -> Output {
    ladder(
        &[
            "worker",
            "--server",
            url,
            "--exit-when-idle",
            "--sandbox",
            "isolated",
            "--concurrency",
            "2",
            "--build-area",
            "32",
            "--runtimes",
            "python3,node",
            "--cache-dir",
            &cache.to_string_lossy(),
        ],
        &[("ASTRAGAL_WORKER_TOKEN", token)],
    )
}

/// Each bot's status as `ladder author bots` prints it (`NAME (GAME, vN): STATUS ...`).
fn statuses(url: &str, token_file: &Path) -> Vec<(String, String, String)> {
    let o = ladder(
        &[
            "author",
            "--server",
            url,
            "--token-file",
            &token_file.to_string_lossy(),
            "bots",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(" (")?;
            let (_, rest) = rest.split_once("): ")?;
            let status = rest.split([' ', '—']).next()?.to_owned();
            Some((name.to_owned(), status, l.to_owned()))
        })
        .collect()
}

fn status_of<'a>(all: &'a [(String, String, String)], name: &str) -> &'a (String, String, String) {
    all.iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("no bot {name} in {all:#?}"))
}

#[test]
fn strangers_upload_bots_that_are_built_checked_and_rated_and_nothing_else() {
    if !isolation("ladder_uploads") {
        return;
    }
    let node = ["/usr/bin/node", "/usr/local/bin/node"]
        .iter()
        .any(|p| Path::new(p).is_file());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for store in rt.block_on(test_stores("uploads")) {
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path();
        let server = LadderServer::start(&store.url, ADMIN_TOKEN, &[]);
        let url = server.url.clone();
        let worker_token = admin(&url, &["add-worker", "w1"]).trim().to_owned();
        admin(&url, &["register-bot", "rnd", "ur", "builtin:random"]);
        let alice = root.join("alice.token");
        let bob = root.join("bob.token");
        for (name, file) in [("alice", &alice), ("bob", &bob)] {
            let token = admin(&url, &["add-author", name, "--max-bots", "5"]);
            std::fs::write(file, token).unwrap();
        }
        let submit = |token: &Path, what: &Path| {
            ladder(
                &[
                    "submit",
                    "--server",
                    &url,
                    "--token-file",
                    &token.to_string_lossy(),
                    &what.to_string_lossy(),
                ],
                &[],
            )
        };

        // A Python bot whose build makes what it plays: without the build,
        // `play.py` is not there and the bot cannot start.
        let lucky = folder(
            root,
            "lucky",
            "name = \"lucky\"\ngames = [\"ur\"]\nruntime = \"python3\"\nbuild = \"python3 build.py\"\nrun = \"python3 play.py\"\n",
            &[
                ("bot.py", &starter()),
                ("lucky-secret.txt", "alice's own notes"),
                (
                    "build.py",
                    "import shutil\nshutil.copy('bot.py', 'play.py')\nprint('built play.py')\n",
                ),
            ],
        );
        // A bot that fails its build, one that fails its check, and one of bob's
        // that looks for alice's files and gives up (failing its check) if it
        // finds any.
        let broken = folder(
            root,
            "broken",
            "name = \"broken\"\ngames = [\"ur\"]\nruntime = \"python3\"\nbuild = \"python3 make.py\"\nrun = \"python3 bot.py\"\n",
            &[
                ("bot.py", &starter()),
                (
                    "make.py",
                    "import sys\nprint('error: the compiler says no')\nsys.exit(2)\n",
                ),
            ],
        );
        let crasher = folder(
            root,
            "crasher",
            "name = \"crasher\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 crash.py\"\n",
            &[(
                "crash.py",
                "print('hello, I am not a protocol')\nraise SystemExit(3)\n",
            )],
        );
        let snoop_py = "import os, sys\n\
            for top in os.listdir('/'):\n\
            \x20   if top in ('proc', 'sys', 'dev', 'usr', 'lib', 'lib64', 'bin', 'sbin', 'etc'):\n\
            \x20       continue\n\
            \x20   for d, _, files in os.walk('/' + top):\n\
            \x20       if 'lucky-secret.txt' in files:\n\
            \x20           sys.exit('found alice: ' + d)\n\
            exec(open('bot.py').read())\n";
        let snoop = folder(
            root,
            "snoop",
            "name = \"snoop\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 snoop.py\"\n",
            &[("snoop.py", snoop_py), ("bot.py", &starter())],
        );
        for (token, dir) in [
            (&alice, &lucky),
            (&alice, &broken),
            (&alice, &crasher),
            (&bob, &snoop),
        ] {
            let o = submit(token, dir);
            assert!(o.status.success(), "{}: {}", dir.display(), text(&o));
            assert!(text(&o).contains("building"), "{}", text(&o));
        }
        if node {
            let js = std::fs::read_to_string(workspace_root().join("bots/js/random_bot.js")).unwrap();
            let jsbot = folder(
                root,
                "jsbot",
                "name = \"jsbot\"\ngames = [\"ur\"]\nruntime = \"node\"\nrun = \"node random_bot.js\"\n",
                &[("random_bot.js", &js)],
            );
            let o = submit(&bob, &jsbot);
            assert!(o.status.success(), "{}", text(&o));
        }

        // Hostile builds, by a third author: one fills its area, one leaves a
        // FIFO, one looks at /proc and for a Unix socket of the host's.
        let mallory = root.join("mallory.token");
        std::fs::write(
            &mallory,
            admin(&url, &["add-author", "mallory", "--max-bots", "5"]),
        )
        .unwrap();
        let sock_dir = root.join("sock");
        std::fs::create_dir(&sock_dir).unwrap();
        let sock = sock_dir.join("db.sock");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        listener.set_nonblocking(true).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
            std::fs::set_permissions(&sock_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let hostile_build = |name: &str, build: &str| {
            let dir = folder(
                root,
                name,
                &format!(
                    "name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nbuild = \"python3 build.py\"\nrun = \"python3 bot.py\"\n"
                ),
                &[("bot.py", &starter()), ("build.py", build)],
            );
            let o = submit(&mallory, &dir);
            assert!(o.status.success(), "{name}: {}", text(&o));
        };
        hostile_build(
            "filler",
            "block = bytes(1 << 20)\n\
             try:\n\
             \x20   for i in range(24):\n\
             \x20       with open(f'big{i}', 'wb') as f:\n\
             \x20           for _ in range(60):\n\
             \x20               f.write(block)\n\
             except OSError as e:\n\
             \x20   raise SystemExit(f'stopped after {i} files: {e}')\n",
        );
        hostile_build("piper", "import os\nos.mkfifo('pipe')\n");
        hostile_build(
            "looker",
            &format!(
                "import os, socket\n\
                 print('PROCESSES=%d' % sum(p.isdigit() for p in os.listdir('/proc')))\n\
                 try:\n\
                 \x20   s = socket.socket(socket.AF_UNIX)\n\
                 \x20   s.connect({sock:?})\n\
                 \x20   print('CONNECTED')\n\
                 except OSError as e:\n\
                 \x20   print('REFUSED', e)\n\
                 raise SystemExit(3)\n",
                sock = sock.display().to_string()
            ),
        );

        // Hostile archives: refused with their reason, nothing stored.
        let evil = root.join("evil.tar");
        {
            let mut out = tar::Builder::new(Vec::new());
            for (path, data) in [
                (
                    "astragal.toml",
                    "name = \"evil\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 x.py\"\n",
                ),
                ("../../etc/evil", "x"),
            ] {
                let mut h = tar::Header::new_gnu();
                h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(data.len() as u64);
                h.set_cksum();
                out.append(&h, data.as_bytes()).unwrap();
            }
            std::fs::write(&evil, out.into_inner().unwrap()).unwrap();
        }
        let o = submit(&alice, &evil);
        assert!(
            !o.status.success() && text(&o).contains("`..` in a path"),
            "{}",
            text(&o)
        );
        let o = submit(&alice, &root.join("no-such-folder"));
        assert!(
            !o.status.success() && text(&o).contains("cannot read"),
            "{}",
            text(&o)
        );

        // The worker builds and checks every version, then there is nothing to play.
        let cache = root.join("cache");
        let o = work(&url, &worker_token, &cache);
        assert!(o.status.success(), "{}", text(&o));
        let mine = statuses(&url, &alice);
        assert_eq!(status_of(&mine, "lucky").1, "active", "{mine:#?}");
        assert_eq!(status_of(&mine, "broken").1, "build-failed", "{mine:#?}");
        assert_eq!(status_of(&mine, "crasher").1, "rejected", "{mine:#?}");
        // Its status quotes the line that failed: the compiler's, the check's.
        assert!(
            status_of(&mine, "broken")
                .2
                .contains("its build failed: error: the compiler says no (the log says more)"),
            "{mine:#?}"
        );
        assert!(
            status_of(&mine, "crasher").2.contains("it failed its "),
            "{mine:#?}"
        );
        // Each hostile build failed inside its own walls, and says why.
        let theirs = statuses(&url, &mallory);
        for name in ["filler", "piper", "looker"] {
            assert_eq!(status_of(&theirs, name).1, "build-failed", "{theirs:#?}");
        }
        // Each author reads why: the build's log, the check's report.
        let log = |token: &Path, name: &str| {
            let o = ladder(
                &[
                    "author",
                    "--server",
                    &url,
                    "--token-file",
                    &token.to_string_lossy(),
                    "log",
                    name,
                ],
                &[],
            );
            assert!(o.status.success(), "{}", text(&o));
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        let filled = log(&mallory, "filler");
        assert!(
            filled.contains("No space left on device") && filled.contains("stopped after 0 files"),
            "{filled}"
        );
        assert!(
            log(&mallory, "piper").contains("cannot be packed"),
            "{}",
            log(&mallory, "piper")
        );
        let looked = log(&mallory, "looker");
        let seen: u32 = looked
            .split("PROCESSES=")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(u32::MAX);
        assert!(seen <= 6 && looked.contains("REFUSED"), "{looked}");
        assert!(
            listener.accept().is_err(),
            "a build connected to the host's socket"
        );
        assert!(
            log(&alice, "broken").contains("the compiler says no")
                && log(&alice, "broken").contains("(not checked: its build failed"),
            "{}",
            log(&alice, "broken")
        );
        assert!(
            log(&alice, "lucky").contains("built play.py"),
            "{}",
            log(&alice, "lucky")
        );
        let crashed = log(&alice, "crasher");
        assert!(
            crashed.contains("handshake") && crashed.contains("--- check report ---"),
            "{crashed}"
        );
        let nosy = ladder(
            &[
                "author",
                "--server",
                &url,
                "--token-file",
                &bob.to_string_lossy(),
                "log",
                "lucky",
            ],
            &[],
        );
        assert!(
            !nosy.status.success() && text(&nosy).contains("not one of your bots"),
            "{}",
            text(&nosy)
        );
        let theirs = statuses(&url, &bob);
        assert_eq!(
            status_of(&theirs, "snoop").1,
            "active",
            "bob's bot found alice's files: {theirs:#?}"
        );
        if node {
            assert_eq!(status_of(&theirs, "jsbot").1, "active", "{theirs:#?}");
        }
        // Each author reads only their own.
        assert!(!theirs.iter().any(|(n, _, _)| n == "lucky") && !mine.iter().any(|(n, _, _)| n == "snoop"));
        let s = rt.block_on(ladder::store::Store::open(&store.url)).unwrap();
        let broken_row = rt.block_on(s.bots().bot("broken")).unwrap().unwrap();
        assert_eq!(broken_row.artifact_sha256, None);

        // A competition: every active bot enters and is rated.
        let opened = admin(
            &url,
            &[
                "open",
                "first",
                "--game",
                "ur",
                "--max-games",
                "40",
                "--movetime",
                "2000",
            ],
        );
        // Versions that failed their build or check do not enter.
        let entrants = opened.split("bots: ").nth(1).unwrap_or_default();
        assert!(
            entrants.contains("lucky") && !entrants.contains("broken") && !entrants.contains("crasher"),
            "{opened}"
        );
        let o = work(&url, &worker_token, &cache);
        assert!(o.status.success(), "{}", text(&o));
        // The host sees whose each bot is and which files it plays.
        let all = admin(&url, &["bots"]);
        let line = all.lines().find(|l| l.starts_with("lucky (")).unwrap_or_default();
        assert!(
            line.contains(" · by alice") && line.contains(" · files "),
            "{all}"
        );
        let rnd = all.lines().find(|l| l.starts_with("rnd (")).unwrap_or_default();
        assert!(!rnd.contains(" · by ") && !rnd.contains(" · files "), "{all}");
        let table = admin(&url, &["standings", "first"]);
        for bot in ["lucky", "snoop", "rnd"].iter().chain(node.then_some(&"jsbot")) {
            assert!(
                table.lines().any(|l| l.split_whitespace().nth(1) == Some(bot)),
                "{bot} unrated:\n{table}"
            );
        }
        for bot in ["broken", "crasher"] {
            assert!(!table.contains(bot), "{bot} was rated:\n{table}");
        }
        // Each record names the files an uploaded bot ran from; the host's bot, none.
        let lucky_files = rt
            .block_on(s.bots().bot("lucky"))
            .unwrap()
            .unwrap()
            .artifact_sha256
            .unwrap();
        let first = rt
            .block_on(s.competitions().competition("first"))
            .unwrap()
            .unwrap();
        let records = rt
            .block_on(s.games().records(first.id, ladder::store::GameId(0), 1000))
            .unwrap();
        let mut named = 0;
        for (_, text) in &records {
            let rec: serde_json::Value = serde_json::from_str(text).unwrap();
            for seat in rec["seats"].as_array().unwrap() {
                match seat["entrant"].as_str() {
                    Some("lucky") => {
                        assert_eq!(seat["artifact"].as_str(), Some(lucky_files.as_str()), "{seat}");
                        named += 1;
                    }
                    Some("rnd") => assert!(seat.get("artifact").is_none(), "{seat}"),
                    _ => {}
                }
            }
        }
        assert!(named > 0, "lucky played no recorded game");

        // A worker that says an uploaded bot ran from other files is refused;
        // the honest report of the same group is taken.
        admin(
            &url,
            &[
                "open",
                "forge",
                "--game",
                "ur",
                "--max-games",
                "2",
                "--movetime",
                "2000",
            ],
        );
        rt.block_on(async {
            let mut w = ladder::worker::connect(&url, &worker_token, None).await.unwrap();
            let py = vec!["python3".to_owned(), "node".to_owned()];
            let leased = loop {
                let r = w
                    .lease_groups(proto::ladder::LeaseGroupsRequest {
                        max_groups: 1,
                        runtimes: py.clone(),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                if let Some(g) = r.groups.into_iter().find(|g| g.competition == "forge") {
                    break g;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            let cache =
                ladder::worker::artifacts::ArtifactCache::open(&root.join("forge-cache"), 1 << 30).unwrap();
            let mut homes = std::collections::HashMap::new();
            let mut pins = Vec::new();
            let mut api = ladder::worker::Api::on(w.clone());
            for e in leased.entrants.iter().filter(|e| !e.artifact_sha256.is_empty()) {
                let pin = cache.folder(&mut api, &e.artifact_sha256).await.unwrap();
                homes.insert(e.artifact_sha256.clone(), pin.dir.clone());
                pins.push(pin);
            }
            let lease = ladder::worker::leased_group(leased.clone()).unwrap();
            let records = tokio::task::spawn_blocking(move || {
                let mut pool = referee::game::BotPool::fresh();
                ladder::worker::play_leases_in(
                    &[lease],
                    &homes,
                    None,
                    &Sandbox::at(Level::Isolated),
                    &mut pool,
                )
                .unwrap()
            })
            .await
            .unwrap()
            .remove(0)
            .records;
            let forged: Vec<String> = records
                .iter()
                .map(|r| {
                    let mut v: serde_json::Value = serde_json::from_str(r).unwrap();
                    for seat in v["seats"].as_array_mut().unwrap() {
                        if seat.get("artifact").is_some() {
                            seat["artifact"] = serde_json::Value::String("0".repeat(64));
                        }
                    }
                    v.to_string()
                })
                .collect();
            assert_ne!(forged, records, "the group has no uploaded bot to forge");
            let report = |records: Vec<String>| proto::ladder::ReportRequest {
                logs: Vec::new(),
                lease: leased.lease.clone(),
                group_id: leased.group_id,
                records,
            };
            let refused = w.report(report(forged)).await.unwrap_err();
            assert!(refused.message().contains("names files"), "{}", refused.message());
            w.report(report(records)).await.unwrap();
            drop(pins);
        });

        // A second version: built and checked, it replaces the first, which
        // keeps its games.
        std::fs::write(
            lucky.join("build.py"),
            "import shutil\nshutil.copy('bot.py', 'play.py')\nprint('built v2')\n",
        )
        .unwrap();
        let o = submit(&alice, &lucky);
        assert!(o.status.success() && text(&o).contains("lucky@2"), "{}", text(&o));
        let o = work(&url, &worker_token, &cache);
        assert!(o.status.success(), "{}", text(&o));
        let mine = statuses(&url, &alice);
        assert_eq!(status_of(&mine, "lucky@2").1, "active", "{mine:#?}");
        assert_eq!(status_of(&mine, "lucky").1, "superseded", "{mine:#?}");
        let table = admin(&url, &["standings", "first"]);
        assert!(
            table.contains("lucky "),
            "the first version lost its games:\n{table}"
        );
        drop(scratch);
    }
}

/// Attack as an author would make it (issues 59 and 81): an uploaded Python bot whose
/// live processes copy each other's words (byte-range locks on a file every
/// sandbox shows), so that a word spoken in rotation 0 of a group outlives its
/// speller in processes of other groups, and is read in rotation 1. Played by a
/// worker at `--concurrency 2` and 4, and beside a second run of the same bot
/// on the machine: hits at chance ([`RELAY_CHANCE_HITS`]: at most one). Without
/// the turn of the machine's rotation gate before a worker's later rotations,
/// the same worker heard the other army's secret roll in 28 of 32 second games
/// beside the second run, and in 32 of 32 at concurrency 4 alone. (Against the
/// Python starter, which plays at random, the attack could not tell a hit: it
/// checks the other army's dice as revealed after its rerolls.) Then the same
/// bot with `--cache`, whose words sit in the page cache of a large file every
/// sandbox shows and outlive every process: hits at chance
/// ([`CACHE_CHANCE_HITS`]) at concurrency 2 and 4.
#[test]
fn an_uploaded_relay_live_or_through_the_page_cache_hears_nothing_of_the_other_rotation() {
    if !isolation("uploaded relay") {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let server = LadderServer::start(&root.join("ladder.db").to_string_lossy(), ADMIN_TOKEN, &[]);
    let url = server.url.clone();
    let worker_token = admin(&url, &["add-worker", "w1"]).trim().to_owned();
    let author = root.join("author.token");
    std::fs::write(&author, admin(&url, &["add-author", "eve", "--max-bots", "5"])).unwrap();
    let relay_source = std::fs::read_to_string(workspace_root().join("tests/data/relay_bot.py")).unwrap();
    let manifest = |name: &str, file: &str| {
        format!("name = \"{name}\"\ngames = [\"spartan\"]\nruntime = \"python3\"\nrun = \"python3 {file}\"\n")
    };
    let relay = folder(
        root,
        "relay",
        &manifest("relay", "relay_bot.py"),
        &[("relay_bot.py", &relay_source)],
    );
    // The opponent plays the same in both rotations of a group: the roll the
    // relay checks is the other army's as revealed after its rerolls.
    let good = folder(
        root,
        "good",
        &manifest("good", "relay_bot.py --honest"),
        &[("relay_bot.py", &relay_source)],
    );
    let cache_bot = folder(
        root,
        "cache-bot",
        &manifest("cache", "relay_bot.py --cache"),
        &[("relay_bot.py", &relay_source)],
    );
    for bot in [&relay, &good, &cache_bot] {
        let o = ladder(
            &[
                "submit",
                "--server",
                &url,
                "--token-file",
                &author.to_string_lossy(),
                &bot.to_string_lossy(),
            ],
            &[],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let cache = root.join("cache");
    let o = work(&url, &worker_token, &cache);
    assert!(o.status.success(), "{}", text(&o));
    let mine = statuses(&url, &author);
    for name in ["relay", "good", "cache"] {
        assert_eq!(status_of(&mine, name).1, "active", "{mine:#?}");
    }
    // One attacker at a time plays the honest bot.
    admin(&url, &["disable", "cache"]);
    // At --batch 1 a task's wave is the first rotations of the batches it
    // leases while no turn waits; at 4, of bigger batches. Last, at
    // concurrency 1 beside a second run of the same bot on the machine, alive
    // throughout (without the gate's turn before the worker's later rotations,
    // it heard in 32 of 32 second games).
    let play = |name: &str, concurrency: &str, batch: &str, attack: &str| {
        admin(
            &url,
            &[
                "open",
                name,
                "--game",
                "spartan",
                "--max-games",
                "64",
                "--movetime",
                "2000",
            ],
        );
        let logs = root.join(name);
        let o = ladder(
            &[
                "worker",
                "--server",
                &url,
                "--exit-when-idle",
                "--sandbox",
                "isolated",
                "--concurrency",
                concurrency,
                "--batch",
                batch,
                "--runtimes",
                "python3",
                "--cache-dir",
                &cache.to_string_lossy(),
                "--log-dir",
                &logs.to_string_lossy(),
            ],
            &[("ASTRAGAL_WORKER_TOKEN", &worker_token)],
        );
        assert!(o.status.success(), "{}", text(&o));
        attacks::reports(&logs, &format!("ATTACK {attack}"))
    };
    for (concurrency, batch, beside) in [("1", "4", true), ("2", "1", false), ("4", "4", false)] {
        let second_run = beside.then(|| {
            attacks::SecondRun::start(
                &format!(
                    "python3 {}",
                    workspace_root().join("tests/data/relay_bot.py").display()
                ),
                &format!(
                    "python3 {} --honest",
                    workspace_root().join("tests/data/relay_bot.py").display()
                ),
                "isolated",
                &root.join("second-run-logs"),
            )
        });
        let name = format!("relay-c{concurrency}-b{batch}");
        let reports = play(&name, concurrency, batch, "relay");
        drop(second_run);
        let (hits, games) = hits_of(&reports, "relay");
        assert_eq!(games, 64, "{name}: the attack ran in every game: {reports:?}");
        assert!(
            hits <= RELAY_CHANCE_HITS,
            "{name}: {hits} of 32 second games heard: {reports:?}"
        );
    }
    // The page cache's words outlive every process (issue 81: with the
    // machine's rotation gate, an uploaded copy heard 44 of 64).
    admin(&url, &["disable", "relay"]);
    admin(&url, &["enable", "cache"]);
    for (concurrency, batch) in [("2", "1"), ("4", "4")] {
        let name = format!("cache-c{concurrency}-b{batch}");
        let reports = play(&name, concurrency, batch, "cache");
        let (hits, games) = hits_of(&reports, "cache");
        assert_eq!(games, 64, "{name}: the attack ran in every game: {reports:?}");
        assert!(
            hits <= CACHE_CHANCE_HITS,
            "{name}: {hits} of 64 games heard: {reports:?}"
        );
    }
}

/// Two authors on one ladder (issue 58): mallory floods at once — 50 wrong
/// sign-ins on the pages, then six uploads sent together, each with a build of
/// three seconds — and then honest uploads one bot. Builds are drawn
/// round-robin across authors, so honest's is built second: when it is active,
/// at least four of mallory's are still waiting for theirs. Then she sends 20
/// challenges at once with her first version (two are granted, the host's
/// cap), and honest's bot plays in the ladder's competition beside them. Before, builds went oldest first, and honest's
/// waited for all six of mallory's.
#[test]
fn an_honest_authors_upload_is_built_soon_beside_a_flooding_author() {
    if !isolation("flooding author") {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let server = LadderServer::start(&root.join("ladder.db").to_string_lossy(), ADMIN_TOKEN, &[]);
    let url = server.url.clone();
    let worker_token = admin(&url, &["add-worker", "w1"]).trim().to_owned();
    let mallory = root.join("mallory.token");
    std::fs::write(
        &mallory,
        admin(&url, &["add-author", "mallory", "--max-bots", "6"]),
    )
    .unwrap();
    let honest = root.join("honest.token");
    std::fs::write(&honest, admin(&url, &["add-author", "honest"])).unwrap();

    // Wrong tokens on the pages, as fast as they go: slowed, never served.
    let mut slowed = 0;
    for k in 0..50 {
        let (status, _, _) = astragal_tests::http_request(
            server.web,
            "POST",
            "/author/sign-in",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Origin", "http://localhost"),
            ],
            format!("token=not-a-token-{k}").as_bytes(),
        );
        assert!(matches!(status, 401 | 429), "a wrong token: {status}");
        slowed += usize::from(status == 429);
    }
    assert!(slowed > 0, "50 wrong sign-ins and none slowed");

    let manifest = |name: &str, build: &str| {
        format!(
            "name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n{build}"
        )
    };
    let slow_build = "build = \"python3 -c 'import time; time.sleep(3)'\"\n";
    let submit = |token: &Path, dir: &Path| {
        ladder(
            &[
                "submit",
                "--server",
                &url,
                "--token-file",
                &token.to_string_lossy(),
                &dir.to_string_lossy(),
            ],
            &[],
        )
    };
    let floods: Vec<PathBuf> = (0..6)
        .map(|k| {
            let name = format!("flood{k}");
            folder(
                root,
                &name,
                &manifest(&name, slow_build),
                &[("bot.py", &starter())],
            )
        })
        .collect();
    std::thread::scope(|s| {
        let sent: Vec<_> = floods
            .iter()
            .map(|dir| s.spawn(|| submit(&mallory, dir)))
            .collect();
        for o in sent {
            let o = o.join().unwrap();
            assert!(o.status.success(), "{}", text(&o));
        }
    });
    let fair = folder(root, "fair", &manifest("fair", ""), &[("bot.py", &starter())]);
    let o = submit(&honest, &fair);
    assert!(o.status.success(), "{}", text(&o));

    // A competition to play in, then one worker that builds and checks, one
    // version at a time, and plays.
    admin(&url, &["register-bot", "rnd", "ur", "builtin:random"]);
    admin(&url, &["open", "main", "--game", "ur", "--movetime", "2000"]);
    let cache = root.join("cache");
    let mut worker = Reaped(
        Command::new(binary("ladder"))
            .args([
                "worker",
                "--server",
                &url,
                "--sandbox",
                "isolated",
                "--runtimes",
                "python3",
            ])
            .arg("--cache-dir")
            .arg(&cache)
            .env("ASTRAGAL_WORKER_TOKEN", &worker_token)
            .current_dir(workspace_root())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    loop {
        let mine = statuses(&url, &honest);
        match status_of(&mine, "fair").1.as_str() {
            "active" => break,
            "building" => {}
            other => panic!("honest's bot ended {other}: {mine:?}"),
        }
        assert!(worker.0.try_wait().unwrap().is_none(), "the worker stopped");
        // Looked at again a little later: the status is the event waited for.
        std::thread::sleep(Duration::from_millis(200));
    }
    let built_in = started.elapsed();
    let hers = statuses(&url, &mallory);
    let waiting = hers.iter().filter(|(_, status, _)| status == "building").count();
    assert!(waiting >= 4, "honest's build waited behind mallory's: {hers:#?}");
    // Her first version plays by now: she floods challenges with it, 20 at
    // once of 100 games each, against the host's cap of 200 a day.
    let (first, _, _) = hers
        .iter()
        .find(|(_, status, _)| status == "active")
        .unwrap_or_else(|| panic!("none of mallory's versions is active: {hers:#?}"));
    let challenges: Vec<Output> = std::thread::scope(|s| {
        let sent: Vec<_> = (0..20)
            .map(|_| {
                s.spawn(|| {
                    ladder(
                        &[
                            "author",
                            "--server",
                            &url,
                            "--token-file",
                            &mallory.to_string_lossy(),
                            "challenge",
                            first,
                            "rnd",
                            "--games",
                            "100",
                        ],
                        &[],
                    )
                })
            })
            .collect();
        sent.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let granted = challenges.iter().filter(|o| o.status.success()).count();
    assert_eq!(
        granted, 2,
        "20 challenges of 100 games, 200 a day: {granted} granted"
    );
    // And honest's bot plays, beside her challenges: rated in the competition
    // once a group of it is reported.
    let played = |table: &str| {
        table.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.get(1) == Some(&"fair") && words.get(4).is_some_and(|g| *g != "0")
        })
    };
    while !played(&admin(&url, &["standings", "main"])) {
        assert!(worker.0.try_wait().unwrap().is_none(), "the worker stopped");
        std::thread::sleep(Duration::from_millis(200));
    }
    // With its own files: the server once leased a bot that became active
    // after it was first read without them, and every game was a failed start.
    let all = admin(&url, &["bots"]);
    assert!(
        !all.lines().any(|l| l.contains("failed start")),
        "a bot could not start:\n{all}"
    );
    eprintln!(
        "honest's bot active {built_in:.1?} and playing {:.1?} after the worker started; {waiting} of mallory's 6 still building then",
        started.elapsed()
    );
}

/// Games recorded in competition `name`, as its page's JSON says.
fn games_of(server: &LadderServer, name: &str) -> i64 {
    let (status, body) = astragal_tests::http_get(server.web, &format!("/competitions/{name}.json"));
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    page["games"].as_i64().unwrap_or(-1)
}

/// Whether a process whose command line is exactly `words` lives on this machine.
fn process_alive(words: &[&str]) -> bool {
    let wanted: Vec<u8> = words.iter().flat_map(|w| w.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted))
}

/// Attack (issue 76): an author's build that first burns every core it can
/// (four busy processes) and then never ends — a daemon in a session of its
/// own, and a shell that ignores TERM. Before, a worker built between one
/// task's batches (and a build held the machine's rotation gate): at
/// `--concurrency 1` it played no game until the build's limit, 10 minutes by
/// default; and a build's processes had no CPU bound (the burner, run without
/// the worker's cgroup, used 2.02 cores of 2). Now builds run on a task of
/// their own, in a cgroup held to `--bot-cores`: the burner gets that share and
/// no more, games go on while it runs, and at its limit (`ladder serve
/// --build-seconds`) its whole tree is killed and the version ends
/// `build-failed`.
#[test]
fn a_build_that_burns_cores_and_never_ends_gets_its_share_holds_back_no_game_and_dies_whole() {
    if !isolation("endless build") {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let server = LadderServer::start(
        &root.join("ladder.db").to_string_lossy(),
        ADMIN_TOKEN,
        &["--build-seconds", "20"],
    );
    let url = server.url.clone();
    let worker_token = admin(&url, &["add-worker", "w1"]).trim().to_owned();
    let mallory = root.join("mallory.token");
    std::fs::write(&mallory, admin(&url, &["add-author", "mallory"])).unwrap();
    // A number no other process on the machine sleeps for.
    let naps = format!("{}", 100_000 + std::process::id() % 100_000);
    let endless = folder(
        root,
        "endless",
        "name = \"endless\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\nbuild = \"sh build.sh\"\n",
        &[
            ("bot.py", &starter()),
            ("burn.py", BURNER),
            (
                "build.sh",
                &format!("python3 burn.py\n(setsid sleep {naps} &)\ntrap '' TERM\nexec sleep {naps}\n"),
            ),
        ],
    );
    let o = ladder(
        &[
            "submit",
            "--server",
            &url,
            "--token-file",
            &mallory.to_string_lossy(),
            &endless.to_string_lossy(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    admin(&url, &["register-bot", "rnd1", "ur", "builtin:random"]);
    admin(&url, &["register-bot", "rnd2", "ur", "builtin:random"]);
    admin(&url, &["open", "main", "--game", "ur", "--movetime", "2000"]);
    let _worker = Reaped(
        Command::new(binary("ladder"))
            .args([
                "worker",
                "--server",
                &url,
                "--sandbox",
                "isolated",
                "--concurrency",
                "1",
                "--runtimes",
                "python3",
                "--bot-cores",
                BUILD_CORES,
            ])
            .arg("--cache-dir")
            .arg(root.join("cache"))
            .env("ASTRAGAL_WORKER_TOKEN", &worker_token)
            .current_dir(workspace_root())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // While the build runs (its sleeper alive), the worker's one task plays.
    let mut seen_building = false;
    loop {
        let mine = statuses(&url, &mallory);
        let (_, status, line) = status_of(&mine, "endless");
        let games = games_of(&server, "main");
        let building = status == "building" && process_alive(&["sleep", &naps]);
        seen_building |= building;
        if building && games >= 20 {
            break;
        }
        assert!(
            status == "building",
            "the build ended ({line}) with {games} games played while it ran"
        );
        // Looked at again a little later: the counts are the events waited for.
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(seen_building);
    // At its limit the build is killed, its daemon too, and its version fails.
    let line = loop {
        let mine = statuses(&url, &mallory);
        let (_, status, line) = status_of(&mine, "endless");
        if status != "building" {
            break line.clone();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(line.contains("build-failed"), "{line}");
    assert!(
        !process_alive(&["sleep", &naps]),
        "the build's daemon outlived its build ({line})"
    );
    // The burner's own account of the CPU it got: its share, and no more (a
    // cgroup's quota is a ceiling, so a loaded machine only lowers it).
    let o = ladder(
        &[
            "author",
            "--server",
            &url,
            "--token-file",
            &mallory.to_string_lossy(),
            "log",
            "endless",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let log = String::from_utf8_lossy(&o.stdout);
    let used: f64 = log
        .lines()
        .find_map(|l| l.strip_prefix("cores used: "))
        .unwrap_or_else(|| panic!("the burner said nothing: {log}"))
        .trim()
        .parse()
        .unwrap();
    let share: f64 = BUILD_CORES.parse().unwrap();
    assert!(
        used <= share * 1.3,
        "a build given {share} cores used {used:.2} (its log: {log})"
    );
}

/// The CPU share the burning build's worker gives each bot and build.
const BUILD_CORES: &str = "0.5";

/// A build step that keeps four processes busy for two seconds and says how
/// many cores they got on average: its children's CPU time over the wall time.
const BURNER: &str = r#"import os, time
start = time.monotonic()
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            pass
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
wall = time.monotonic() - start
t = os.times()
print(f"cores used: {(t.children_user + t.children_system) / wall:.2f}", flush=True)
"#;
