//! The `ladder` command as hosts run it: a tournament killed with SIGKILL and run
//! again, a server killed with SIGKILL mid-run and restarted, the SPRT, ratings from
//! records. On SQLite, and on PostgreSQL too when ASTRAGAL_PG_URL is set.

use astragal_tests::attacks::{self, CACHE_CHANCE_HITS, RELAY_CHANCE_HITS, SIGNAL_CHANCE_HITS, hits_of};
use astragal_tests::{LadderServer, Reaped, binary, test_stores, workspace_root};
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ladder(args: &[&str]) -> Output {
    Command::new(binary("ladder"))
        .args(args)
        .current_dir(workspace_root())
        .env_remove("ASTRAGAL_ADMIN_TOKEN")
        .env_remove("ASTRAGAL_WORKER_TOKEN")
        .output()
        .expect("ladder runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

const TOURNAMENT: &[&str] = &[
    "tournament",
    "--game",
    "ur",
    "--opt",
    "rules=finkel",
    "--bot",
    "rnd=builtin:random",
    "--bot",
    "rnd9=builtin:random?seed=9",
    "--bot",
    "first=builtin:first",
    "--games",
    "3000",
    "--concurrency",
    "2",
    "--json",
];

#[test]
fn a_killed_tournament_resumes_with_no_game_lost_or_counted_twice() {
    let rt = runtime();
    // The tournament uninterrupted, for comparison.
    let whole = ladder(&[TOURNAMENT, &["--seed", "1"]].concat());
    assert!(whole.status.success(), "{}", text(&whole));
    for store in rt.block_on(test_stores("resume")) {
        // Killed (SIGKILL) as soon as its first games are recorded.
        let mut child = Command::new(binary("ladder"))
            .args([TOURNAMENT, &["--db", &store.url, "--seed", "1"]].concat())
            .current_dir(workspace_root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("a progress line").unwrap();
        assert!(first.contains("/3000 games"), "{first}");
        child.kill().unwrap();
        child.wait().unwrap();

        // Resumed without --seed: the stored tournament's seed.
        let resumed = ladder(&[TOURNAMENT, &["--db", &store.url]].concat());
        assert!(resumed.status.success(), "{}", text(&resumed));
        let msg = text(&resumed);
        let before: u64 = msg
            .lines()
            .find_map(|l| {
                l.split("; ")
                    .nth(1)?
                    .strip_suffix(" were already recorded")?
                    .parse()
                    .ok()
            })
            .unwrap_or(0);
        assert!(
            before > 0 && before < 3000,
            "{}: killed too late or too early ({before}):\n{msg}",
            store.kind
        );

        // Same standings as the uninterrupted run: every game once, the same games.
        let a: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
        let b: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap();
        assert_eq!(b["games"], 3000);
        assert_eq!(a["rows"], b["rows"], "{}", store.kind);
        let s = rt.block_on(ladder::store::Store::open(&store.url)).unwrap();
        let comp = rt
            .block_on(s.competitions().competition("tournament"))
            .unwrap()
            .unwrap();
        let results = rt.block_on(s.games().results(comp.id)).unwrap();
        let mut keys: Vec<(i64, i64)> = results.iter().map(|r| (r.group_id, r.rotation)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 3000);

        // Running it again plays nothing; other settings are refused with the difference.
        let again = ladder(&[TOURNAMENT, &["--db", &store.url]].concat());
        assert!(text(&again).contains("this run: 0 games") || again.status.success());
        let other = ladder(
            &[
                &TOURNAMENT[..TOURNAMENT.len() - 1],
                &["--db", &store.url, "--seed", "4"],
            ]
            .concat(),
        );
        assert!(!other.status.success());
        assert!(
            text(&other).contains("seed: stored 1, given 4"),
            "{}",
            text(&other)
        );

        // Ratings recomputed from the stored records alone equal the stored results'.
        let from_results = ladder(&["ratings", "--db", &store.url, "--json"]);
        let from_records = ladder(&["ratings", "--db", &store.url, "--json", "--from-records"]);
        assert!(from_records.status.success(), "{}", text(&from_records));
        let x: serde_json::Value = serde_json::from_slice(&from_results.stdout).unwrap();
        let y: serde_json::Value = serde_json::from_slice(&from_records.stdout).unwrap();
        for (rx, ry) in x["tournament"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .zip(y["tournament"]["rows"].as_array().unwrap())
        {
            assert_eq!(rx["name"], ry["name"]);
            assert!((rx["elo"].as_f64().unwrap() - ry["elo"].as_f64().unwrap()).abs() < 1e-6);
        }
    }
}

/// A new empty directory for one test, under the system's temporary directory.
fn fresh_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("astragal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `--sandbox isolated` works here; elsewhere than CI, says why the test
/// is skipped (CI must isolate: there the test fails).
fn isolation(test: &str) -> bool {
    match referee::sandbox::Sandbox::at(referee::sandbox::Level::Isolated).check() {
        Ok(()) => true,
        Err(e) => astragal_tests::skipped(test, &e.to_string()),
    }
}

/// The admin token every test server takes (from its environment).
const ADMIN_TOKEN: &str = "admin-secret-0123456789";

/// `ladder admin ARGS` against `url`, the token from the environment; its output.
fn admin_at(url: &str, args: &[&str]) -> String {
    let o = Command::new(binary("ladder"))
        .args([&["admin", "--server", url], args].concat())
        .env("ASTRAGAL_ADMIN_TOKEN", ADMIN_TOKEN)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A new worker's token, as `ladder admin add-worker` prints it.
fn add_worker(url: &str, name: &str) -> String {
    admin_at(url, &["add-worker", name]).trim().to_owned()
}

#[test]
fn a_server_killed_mid_run_restarts_and_every_game_is_recorded_once() {
    let rt = runtime();
    for store in rt.block_on(test_stores("crash")) {
        let server = LadderServer::start(&store.url, ADMIN_TOKEN, &["--lease-seconds", "2"]);
        let url = server.url.clone();
        let listen = url.trim_start_matches("http://").to_owned();
        let admin = |args: &[&str]| admin_at(&url, args);
        let token = add_worker(&url, "w1");
        admin(&["register-bot", "rnd", "ur", "builtin:random"]);
        admin(&["register-bot", "rnd3", "ur", "builtin:random?seed=3"]);
        admin(&["register-bot", "first", "ur", "builtin:first"]);
        admin(&[
            "open",
            "crash",
            "--game",
            "ur",
            "--max-games",
            "600",
            "--movetime",
            "2000",
        ]);
        let mut worker = Reaped(
            Command::new(binary("ladder"))
                .args([
                    "worker",
                    "--server",
                    &url,
                    "--concurrency",
                    "2",
                    "--exit-when-idle",
                    // Built-in bots only: no process to contain.
                    "--sandbox",
                    "none",
                    "--allow-unsandboxed",
                ])
                .env("ASTRAGAL_WORKER_TOKEN", &token)
                .current_dir(workspace_root())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // Kill the server with SIGKILL once some games are in, then restart it.
        let s = rt.block_on(ladder::store::Store::open(&store.url)).unwrap();
        let comp = rt
            .block_on(s.competitions().competition("crash"))
            .unwrap()
            .unwrap();
        let start = Instant::now();
        while rt.block_on(s.shapes().game_count(comp.id)).unwrap() < 40 {
            assert!(start.elapsed() < Duration::from_secs(60), "no games recorded");
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(server); // SIGKILL, as `kill -9`
        let at_kill = rt.block_on(s.shapes().game_count(comp.id)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let _server = LadderServer::start_at(&store.url, ADMIN_TOKEN, &listen, &["--lease-seconds", "2"]);
        let start = Instant::now();
        let status = loop {
            if let Some(st) = worker.0.try_wait().unwrap() {
                break st;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "the worker did not finish"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success());
        let results = rt.block_on(s.games().results(comp.id)).unwrap();
        assert!(at_kill < 600, "{}: the run ended before the kill", store.kind);
        assert_eq!(results.len(), 600, "{}", store.kind);
        let mut keys: Vec<(i64, i64)> = results.iter().map(|r| (r.group_id, r.rotation)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 600, "a game was recorded twice");
        let groups = rt.block_on(s.groups().of_competition(comp.id)).unwrap();
        assert_eq!(groups.len(), 300);
        assert!(
            groups
                .iter()
                .all(|g| g.status == ladder::store::GroupStatus::Done)
        );
        assert!(admin(&["standings", "crash"]).contains("600 games"));
        rt.block_on(s.games().close());
    }
}

#[test]
fn sprt_decides_for_the_stronger_bot_and_against_the_weaker() {
    // builtin:first scores about 65% against random at tablet Ur (+110 Elo).
    let base = [
        "sprt",
        "--game",
        "ur",
        "--elo0",
        "0",
        "--elo1",
        "40",
        "--model",
        "logistic",
        "--concurrency",
        "2",
        "--max-games",
        "20000",
    ];
    let o = ladder(
        &[
            &base[..],
            &["--bot", "first=builtin:first", "--vs", "rnd=builtin:random"],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("H1 accepted: first is stronger than rnd"),
        "{}",
        text(&o)
    );
    let o = ladder(
        &[
            &base[..],
            &["--bot", "rnd=builtin:random", "--vs", "first=builtin:first"],
        ]
        .concat(),
    );
    assert!(text(&o).contains("H0 accepted"), "{}", text(&o));
    let o = ladder(&[
        "sprt",
        "--game",
        "cuatto",
        "--bot",
        "builtin:random",
        "--vs",
        "builtin:first",
        "--opt",
        "players=4",
    ]);
    assert!(!o.status.success());
}

#[test]
fn an_sprt_sweep_decides_and_says_it_is_a_sweep() {
    // Greedy beats random at Uptick in every pair: no variance, yet the exact LLR
    // decides (the closed-form approximation stayed at 0 for ever).
    let o = ladder(&[
        "sprt",
        "--game",
        "uptick",
        "--bot",
        "builtin:greedy",
        "--vs",
        "builtin:random",
        "--elo0",
        "0",
        "--elo1",
        "100",
        "--model",
        "logistic",
        "--max-games",
        "100",
        "--seed",
        "3",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("H1 accepted: greedy is stronger than random"),
        "{out}"
    );
    assert!(out.contains("a sweep: Elo ≥ +"), "{out}");
    // The running state was shown: LLR, bounds and the pairs.
    assert!(out.contains("LLR +") && out.contains("pairs 0-0-0-0-"), "{out}");
}

#[test]
fn the_default_normalized_llr_of_a_short_sweep_is_fishtests_not_zero() {
    // 17 pairs all won by greedy: fishtest's LLR_normalized(0, 10, [0,0,0,0,17]) is
    // 0.678 (this once printed 0.00, the solver having given up).
    let o = ladder(&[
        "sprt",
        "--game",
        "uptick",
        "--bot",
        "greedy=builtin:greedy",
        "--vs",
        "random=builtin:random",
        "--seed",
        "1",
        "--max-games",
        "34",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("pentanomial 0-½-1-1½-2: 0-0-0-0-17"), "{out}");
    assert!(out.contains("LLR 0.68 "), "{out}");
}

#[test]
fn ctrl_c_stops_an_sprt_and_prints_where_it_stood() {
    let slow = format!("{} --mode ponder", binary("hostile_bot").display());
    let mut child = Command::new(binary("ladder"))
        .args([
            "sprt",
            "--game",
            "ur",
            "--bot",
            &format!("slow={slow}"),
            "--vs",
            "builtin:random",
            "--elo0",
            "0",
            "--elo1",
            "5",
            "--seed",
            "1",
        ])
        .current_dir(workspace_root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first progress line comes after the first pair.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("LLR") {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "ladder ended before a pair"
        );
    }
    assert!(
        line.contains(" games/s, at most "),
        "the progress line has the rate: {line}"
    );
    let pid = i32::try_from(child.id()).unwrap();
    let sent = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let started = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?} to stop",
        started.elapsed()
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(out.contains("interrupted, undecided after"), "{out}");
    assert!(
        out.contains("pentanomial 0-½-1-1½-2:") && out.contains("LLR "),
        "{out}"
    );
}

#[test]
fn help_and_errors_teach() {
    let o = ladder(&["--help"]);
    for word in ["tournament", "ratings", "sprt", "serve", "worker", "admin"] {
        assert!(text(&o).contains(word), "{word}");
    }
    let o = ladder(&["tournament", "--game", "ur", "--bot", "builtin:random"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("give at least 2 --bot"), "{}", text(&o));
    let o = ladder(&[
        "tournament",
        "--game",
        "ur",
        "--bot",
        "a=builtin:random",
        "--bot",
        "a=builtin:first",
    ]);
    assert!(text(&o).contains("two bots are named \"a\""), "{}", text(&o));
    let o = ladder(&[
        "tournament",
        "--game",
        "ur",
        "--bot",
        "human",
        "--bot",
        "builtin:first",
    ]);
    assert!(text(&o).contains("cannot seat `human`"), "{}", text(&o));
    let short = std::env::temp_dir().join(format!("astragal-short-token-{}", std::process::id()));
    std::fs::write(&short, "short\n").unwrap();
    let o = ladder(&[
        "serve",
        "--db",
        "x.db",
        "--admin-token-file",
        short.to_str().unwrap(),
    ]);
    assert!(text(&o).contains("use at least 16"), "{}", text(&o));
    let _ = std::fs::remove_file(&short);
    // A token is never taken from the command line.
    let o = ladder(&["worker", "--token", "a-token-on-the-command-line"]);
    assert!(
        !o.status.success() && text(&o).contains("--token"),
        "{}",
        text(&o)
    );
    let o = ladder(&["worker", "--sandbox", "none", "--allow-unsandboxed"]);
    assert!(text(&o).contains("ASTRAGAL_WORKER_TOKEN"), "{}", text(&o));
    let o = ladder(&["ratings", "--db", "mysql://x"]);
    assert!(text(&o).contains("neither sqlite:FILE"), "{}", text(&o));
}

#[test]
fn a_worker_refuses_to_run_bots_unsandboxed_unless_told_so_explicitly() {
    let o = ladder(&["worker", "--sandbox", "none"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--allow-unsandboxed"), "{}", text(&o));
}

#[test]
fn a_worker_isolates_registered_bots_and_gives_them_only_their_registered_environment() {
    if !isolation("worker environment") {
        return;
    }
    let dir = fresh_dir("worker-env");
    let db = dir.join("ladder.db");
    let logs = dir.join("logs");
    let server = LadderServer::start(db.to_str().unwrap(), ADMIN_TOKEN, &["--lease-seconds", "2"]);
    let url = server.url.clone();
    let admin = |args: &[&str]| admin_at(&url, args);
    let token = add_worker(&url, "w1");
    let attacker = format!(
        "{} --attack env --secret {token}",
        env!("CARGO_BIN_EXE_attack_bot")
    );
    let said = admin(&[
        "register-bot",
        "attacker",
        "ur",
        &attacker,
        "--env",
        "GIVEN_AT_REGISTRATION=yes",
    ]);
    assert!(said.contains("environment: GIVEN_AT_REGISTRATION"), "{said}");
    admin(&["register-bot", "first", "ur", "builtin:first"]);
    admin(&[
        "open",
        "env",
        "--game",
        "ur",
        "--max-games",
        "2",
        "--movetime",
        "2000",
    ]);
    // The token reaches the worker the usual way, through its environment.
    let out = Command::new(binary("ladder"))
        .args(["worker", "--server", &url, "--exit-when-idle", "--log-dir"])
        .arg(&logs)
        .env("ASTRAGAL_WORKER_TOKEN", &token)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let reports = attacks::reports(&logs, "ATTACK env");
    assert_eq!(reports.len(), 2, "{reports:?}");
    // Each log is named by its group, seat and bot, so a host finds a bot's logs
    // (built-in bots run inside the worker and have none).
    let names: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let attacker_logs = names
        .iter()
        .filter(|n| n.starts_with("env-g") && n.contains("-attacker") && n.ends_with(".stderr.log"))
        .count();
    assert_eq!(attacker_logs, 2, "{names:?}");
    for r in &reports {
        assert!(r.contains(": contained "), "{r}");
        assert!(r.contains("\"GIVEN_AT_REGISTRATION\""), "{r}");
        assert!(!r.contains("ASTRAGAL_"), "{r}");
    }
    assert!(admin(&["standings", "env"]).contains("2 games"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_server_log_has_no_colour_codes_unless_on_a_terminal() {
    use std::io::BufRead;
    let dir = fresh_dir("colour");
    let mut child = Command::new(binary("ladder"))
        .args(["serve", "--db"])
        .arg(format!("sqlite:{}", dir.join("c.db").display()))
        .args(["--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .env("ASTRAGAL_ADMIN_TOKEN", "a".repeat(64))
        .env("RUST_LOG", "debug")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    while !said.contains("web on") {
        let line = lines.next().expect("the server said where it listens").unwrap();
        said.push_str(&line);
        said.push('\n');
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        said.contains("DEBUG") || said.contains("INFO"),
        "RUST_LOG=debug logs something: {said}"
    );
    assert!(
        !said.contains('\u{1b}'),
        "colour codes in a redirected log: {said:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_service_runs_a_real_server_and_reports_each_row_or_names_a_bad_database() {
    let o = ladder(&[
        "bench-service",
        "--db",
        "sqlite",
        "--workers",
        "1,3",
        "--seconds",
        "1",
        "--warmup",
        "0.5",
        "--batch",
        "4",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, workers) in rows.iter().zip([1, 3]) {
        assert_eq!(row["workers"], workers);
        // Ur has two seats: two games a group, and something was played.
        let (groups, games) = (
            row["groups_per_s"].as_f64().unwrap(),
            row["games_per_s"].as_f64().unwrap(),
        );
        assert!(groups > 0.0 && (games - 2.0 * groups).abs() < 1e-6, "{row}");
        assert!(row["lease_ms"][0].as_f64().unwrap() <= row["lease_ms"][1].as_f64().unwrap());
    }
    assert!(report["games_stored"].as_u64().unwrap() > 0);
    let o = ladder(&["bench-service", "--db", "mysql://x", "--seconds", "1"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("give `sqlite` or a postgres:// URL"),
        "{}",
        text(&o)
    );
}

#[test]
fn bench_web_times_every_page_of_a_filled_competition() {
    let o = ladder(&[
        "bench-web",
        "--games",
        "3001",
        "--bots",
        "5",
        "--requests",
        "3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (report["games"].as_u64(), report["bots"].as_u64()),
        (Some(3001), Some(5))
    );
    let pages = report["pages"].as_array().unwrap();
    let names: Vec<&str> = pages.iter().map(|p| p["page"].as_str().unwrap()).collect();
    for want in [
        "/",
        "/competitions/bench",
        "/bots/b2",
        "/games/",
        "/competitions/bench/games?bot=b2&before=",
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(want)),
            "{want} not measured: {names:?}"
        );
    }
    for p in pages {
        // Every page answered (the bench fails on any other status) with a body.
        assert!(p["bytes"].as_u64().unwrap() > 0, "{p}");
        assert!(
            p["p50_ms"].as_f64().unwrap() <= p["max_ms"].as_f64().unwrap(),
            "{p}"
        );
    }
    let o = ladder(&["bench-web", "--db", "mysql://x"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("give `sqlite` or a postgres:// URL"),
        "{}",
        text(&o)
    );
}

#[test]
fn admin_manages_bots_and_says_refusals_in_plain_sentences() {
    let dir = std::env::temp_dir().join(format!("astragal-admin-bots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite:{}", dir.join("l.db").display());
    let server = LadderServer::start(&db, ADMIN_TOKEN, &["--lease-seconds", "2"]);
    let url = server.url.clone();
    let out = admin_at(&url, &["register-bot", "typo", "ur", "pyhton3 nothing.py"]);
    assert!(
        out.contains("typo (ur, v1): pyhton3 nothing.py · active"),
        "{out}"
    );
    let out = admin_at(&url, &["disable", "typo", "--reason", "no such program"]);
    assert!(out.contains("disabled by the admin: no such program"), "{out}");
    let out = admin_at(&url, &["update", "typo", "builtin:random"]);
    assert!(
        out.contains("typo@2 (ur, v2): builtin:random · active · replaces typo"),
        "{out}"
    );
    let out = admin_at(&url, &["bots"]);
    assert!(
        out.contains("typo (ur, v1)") && out.contains("superseded — replaced by typo@2"),
        "{out}"
    );
    // Refusals: the server's sentence, no gRPC status dump.
    for (args, says) in [
        (&["enable", "nosuch"][..], "no bot named \"nosuch\""),
        (
            &["register-bot", "b", "ur", "builtin:nosuch"][..],
            "no built-in bot \"nosuch\"",
        ),
        (&["enable", "typo"][..], "is superseded"),
    ] {
        let o = Command::new(binary("ladder"))
            .args([&["admin", "--server", &url], args].concat())
            .env("ASTRAGAL_ADMIN_TOKEN", ADMIN_TOKEN)
            // What a user sees: no backtrace asked for.
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("status:") && !err.contains("metadata"),
            "{args:?}: {err}"
        );
    }
    let o = Command::new(binary("ladder"))
        .args(["admin", "--server", &url, "bots"])
        .env("ASTRAGAL_ADMIN_TOKEN", "wrong-token-0123456789")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the server refused the token"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Opens competition `name` of `games` games of `game` among the registered bots,
/// has a real `ladder worker` (its token in `token_file`, isolated bots' stderr
/// logs in `dir/logs`) play it all, and returns the lines of those logs that begin
/// with `prefix`.
fn play_out(
    url: &str,
    token_file: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
    game: &str,
    games: u64,
    prefix: &str,
) -> Vec<String> {
    play_out_with(url, token_file, dir, name, game, games, prefix, &[])
}

/// [`play_out`] with more arguments for the worker.
#[allow(clippy::too_many_arguments)]
fn play_out_with(
    url: &str,
    token_file: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
    game: &str,
    games: u64,
    prefix: &str,
    worker_args: &[&str],
) -> Vec<String> {
    let games = games.to_string();
    admin_at(
        url,
        &[
            "open",
            name,
            "--game",
            game,
            "--max-games",
            &games,
            "--movetime",
            "2000",
        ],
    );
    let logs = dir.join("logs").join(name);
    let out = Command::new(binary("ladder"))
        .args(["worker", "--server", url, "--exit-when-idle", "--token-file"])
        .arg(token_file)
        .arg("--log-dir")
        .arg(&logs)
        .args(worker_args)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    attacks::reports(&logs, prefix)
}

/// The red team's path to a worker's token: `add-worker > w1.token` left it
/// world-readable, the bot was shown its folder, read it, wrote it on an `info`
/// line, and the public pages showed it. Now the file is private, masked from the
/// bot, and any worker token a bot writes reads `[hidden]` on every page.
#[test]
fn a_workers_token_never_reaches_a_bot_or_a_page() {
    use std::os::unix::fs::PermissionsExt;
    if !isolation("worker token") {
        return;
    }
    let dir = fresh_dir("worker-token");
    let bot = dir.join("bot");
    std::fs::create_dir_all(&bot).unwrap();
    std::fs::write(bot.join("notes.txt"), "the bot's own").unwrap();
    let db = dir.join("ladder.db");
    let server = LadderServer::start(db.to_str().unwrap(), ADMIN_TOKEN, &[]);
    let admin = |args: &[&str]| admin_at(&server.url, args);
    // The worker's token, saved the way the docs say, in the bot's own folder.
    let token_file = bot.join("w1.token");
    let saved = Command::new(binary("ladder"))
        .args(["admin", "--server", &server.url, "add-worker", "w1"])
        .env("ASTRAGAL_ADMIN_TOKEN", ADMIN_TOKEN)
        .stdout(std::fs::File::create(&token_file).unwrap())
        .output()
        .unwrap();
    assert!(saved.status.success(), "{}", text(&saved));
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the token file is {mode:o}");
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    // Another worker's token, left readable in the bot's folder by mistake: the
    // bot reads it and writes it on an `info` line.
    let other = add_worker(&server.url, "w2");
    std::fs::write(bot.join("w2.txt"), &other).unwrap();
    let attacker = format!(
        "{} --attack read --secret {token} --read={} --read={} {}",
        env!("CARGO_BIN_EXE_attack_bot"),
        token_file.display(),
        bot.join("w2.txt").display(),
        bot.join("notes.txt").display(),
    );
    admin(&["register-bot", "attacker", "ur", &attacker]);
    admin(&["register-bot", "first", "ur", "builtin:first"]);
    let reports = play_out(&server.url, &token_file, &dir, "tokens", "ur", 2, "ATTACK read");
    let own: Vec<&String> = reports.iter().filter(|r| r.contains("w1.token")).collect();
    assert_eq!(own.len(), 2, "{reports:?}");
    assert!(own.iter().all(|r| r.contains(": contained ")), "{own:?}");
    // The game's private log holds what the bot wrote (so the pages below can
    // fail); the public record does not...
    let rt = runtime();
    let store = rt
        .block_on(ladder::store::Store::open(db.to_str().unwrap()))
        .unwrap();
    let game = ladder::store::GameId(1);
    let logs = rt
        .block_on(store.logs().game_logs(game))
        .unwrap()
        .expect("game 1 is stored");
    let written = format!("{:?}", logs.seats);
    assert!(
        written.contains(&other),
        "the bot did not write the token: {written}"
    );
    let (_, stored) = rt.block_on(store.games().record(game)).unwrap().unwrap();
    assert!(!stored.contains(&other), "the public record keeps info: {stored}");
    // ...and no page shows it, nor the worker's own token or the admin token.
    for path in [
        "/",
        "/competitions/tokens",
        "/bots/attacker",
        "/bots/attacker.json",
        "/games/1",
        "/api/games/1",
        "/api/games/2",
    ] {
        let (status, body) = astragal_tests::http_get(server.web, path);
        assert_eq!(status, 200, "{path}: {body}");
        for secret in [&token, &other, &ADMIN_TOKEN.to_owned()] {
            assert!(!body.contains(secret.as_str()), "{path} shows a token");
        }
    }
    // Every answer forbids sniffing and framing and loads nothing from elsewhere;
    // a game has one address.
    for path in ["/", "/games/1"] {
        let (_, head, _) = astragal_tests::http_get_with_head(server.web, path);
        let head = head.to_lowercase();
        for header in [
            "x-content-type-options: nosniff",
            "x-frame-options: deny",
            "content-security-policy: default-src 'none'",
        ] {
            assert!(head.contains(header), "{path}: no {header}: {head}");
        }
    }
    for path in ["/games/+1", "/games/01", "/api/games/01"] {
        assert_eq!(astragal_tests::http_get(server.web, path).0, 400, "{path}");
    }
    // Even the host reads the line with the tokens in it hidden.
    let redactor = ladder::app::redact::Redactor::new(ladder::app::redact::HostSecrets {
        admin_token: Some(ADMIN_TOKEN.to_owned()),
        token_hashes: rt.block_on(store.workers().token_hashes()).unwrap(),
    });
    let hosts = rt
        .block_on(ladder::app::logs::readable_logs(
            &store,
            ladder::app::logs::LogReader::Host,
            game,
            &redactor,
        ))
        .unwrap()
        .unwrap();
    let shown = serde_json::to_string(&hosts).unwrap();
    assert!(
        shown.contains("[hidden]") && !shown.contains(&other) && !shown.contains(&token),
        "{shown}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The red team read a group's seed from the SQLite write-ahead log of a
/// tournament whose store lay beside the bot, and foresaw every roll of the
/// mirrored game. The database, its log, the log's index and a journal are all
/// masked: what the bot reads there is empty.
#[test]
fn an_isolated_bot_beside_the_store_reads_nothing_of_it() {
    if !isolation("write-ahead log") {
        return;
    }
    let dir = fresh_dir("wal");
    std::fs::write(dir.join("notes.txt"), "the bot's own").unwrap();
    let db = dir.join("t.db");
    let files: Vec<String> = ["", "-wal", "-shm"]
        .iter()
        .map(|s| format!("{}{s}", db.display()))
        .collect();
    let attacker = format!(
        "attacker={} --attack read {} {}",
        env!("CARGO_BIN_EXE_attack_bot"),
        files
            .iter()
            .map(|f| format!("--read={f}"))
            .collect::<Vec<_>>()
            .join(" "),
        dir.join("notes.txt").display(),
    );
    let logs = dir.join("logs");
    let o = ladder(&[
        "tournament",
        "--game",
        "ur",
        "--bot",
        &attacker,
        "--bot",
        "builtin:first",
        "--games",
        "4",
        "--sandbox",
        "isolated",
        "--db",
        db.to_str().unwrap(),
        "--log-dir",
        logs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let reports = attacks::reports(&logs, "ATTACK read");
    for f in &files {
        let of_file: Vec<&String> = reports.iter().filter(|r| r.contains(&format!("{f}: "))).collect();
        assert!(!of_file.is_empty(), "{f} was not tried: {reports:?}");
        for r in of_file {
            // Read as the empty file that masks it (or not at all), never its bytes.
            assert!(r.ends_with(": Ok(0)") || r.contains(": Err("), "{r}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bot that writes terminal escapes (a window title, a screen clear) and dies
/// in its handshake gets them into its fault details and its suspension reason;
/// `ladder admin bots` shows them as visible escapes, never raw.
#[test]
fn escapes_a_bot_wrote_never_reach_the_admins_terminal() {
    let dir = fresh_dir("escapes");
    let db = dir.join("ladder.db");
    let server = LadderServer::start(db.to_str().unwrap(), ADMIN_TOKEN, &["--suspend-after", "1"]);
    let admin = |args: &[&str]| admin_at(&server.url, args);
    let token = add_worker(&server.url, "w1");
    let hostile = r#"sh -c "printf '\\033]0;pwned\\007\\033[2J\\n' >&2; exit 3""#;
    admin(&["register-bot", "hostile", "ur", hostile]);
    admin(&["register-bot", "first", "ur", "builtin:first"]);
    admin(&[
        "open",
        "esc",
        "--game",
        "ur",
        "--max-games",
        "2",
        "--movetime",
        "2000",
    ]);
    let out = Command::new(binary("ladder"))
        .args([
            "worker",
            "--server",
            &server.url,
            "--exit-when-idle",
            "--sandbox",
            "none",
            "--allow-unsandboxed",
        ])
        .env("ASTRAGAL_WORKER_TOKEN", &token)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let bots = admin(&["bots"]);
    assert!(bots.contains("hostile") && bots.contains("suspended"), "{bots}");
    assert!(
        !bots.contains('\u{1b}') && !bots.contains('\u{7}'),
        "raw escapes: {bots:?}"
    );
    // What the bot wrote is there, made visible (so this test can fail).
    assert!(bots.contains("pwned"), "{bots}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With its own hard limit on open files below the bots' (`ulimit -n 128` against
/// `--bot-open-files 256`), every spawn failed with EPERM and every bot was
/// suspended within 8 games, while the startup check passed. Now the worker
/// refuses to start, naming the limit.
#[test]
fn a_worker_below_the_bots_limits_refuses_to_start_and_says_which() {
    let ladder = binary("ladder");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 128 && exec {} worker --server http://127.0.0.1:9 --sandbox none --allow-unsandboxed",
            ladder.display()
        ))
        .env("ASTRAGAL_WORKER_TOKEN", "0123456789abcdef0123456789abcdef")
        .output()
        .unwrap();
    let err = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("open files") && err.contains("128") && err.contains("--bot-open-files"),
        "{err}"
    );
    // The referee checks the same; within its limits the game is played.
    let bot = binary("astragal-bot");
    for (flag, plays) in [("256", false), ("64", true)] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n 128 && exec {} play --game ur --bot builtin:random --bot {} --bot-open-files {flag}",
                binary("referee").display(),
                bot.display()
            ))
            .output()
            .unwrap();
        assert_eq!(o.status.success(), plays, "{}", text(&o));
        assert_eq!(text(&o).contains("hard limit is 128"), !plays, "{}", text(&o));
    }
}

/// The real `ladder serve` bounds what one worker holds (`--held-per-worker`): a
/// worker looping on 64-group leases gets its two and then nothing, while another
/// worker still gets work.
#[test]
fn ladder_serve_bounds_the_groups_one_worker_holds() {
    use proto::ladder::LeaseGroupsRequest;
    let dir = fresh_dir("held");
    let db = dir.join("ladder.db");
    let server = LadderServer::start(db.to_str().unwrap(), ADMIN_TOKEN, &["--held-per-worker", "2"]);
    let admin = |args: &[&str]| admin_at(&server.url, args);
    let (hoarder, other) = (add_worker(&server.url, "w1"), add_worker(&server.url, "w2"));
    admin(&["register-bot", "first", "ur", "builtin:first"]);
    admin(&["register-bot", "random", "ur", "builtin:random"]);
    admin(&["open", "held", "--game", "ur", "--max-games", "200"]);
    let rt = runtime();
    // Leases up to 64 groups; with `wait`, asks again as the server says while
    // the scheduler has none ready yet.
    let lease_64 = |token: &str, wait: bool| {
        rt.block_on(async {
            let mut c = ladder::worker::connect(&server.url, token, None).await.unwrap();
            loop {
                let r = c
                    .lease_groups(LeaseGroupsRequest {
                        max_groups: 64,
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .into_inner();
                if !wait || !r.groups.is_empty() || r.retry_after_ms == 0 {
                    return r.groups.len();
                }
                tokio::time::sleep(Duration::from_millis(u64::from(r.retry_after_ms))).await;
            }
        })
    };
    assert_eq!(lease_64(&hoarder, true), 2);
    assert_eq!(lease_64(&hoarder, false), 0, "a third group while holding two");
    assert_eq!(lease_64(&other, true), 2, "the other worker still gets work");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A real `ladder serve` in a fresh folder `name`, worker `w1`'s token saved
/// there, and two Spartan bots registered: the attacker (`--attack ATTACK`,
/// named ATTACK) and the honest `good`. The folder, the server, the token file.
fn spartan_attack_ladder(name: &str, attack: &str) -> (std::path::PathBuf, LadderServer, std::path::PathBuf) {
    let dir = fresh_dir(name);
    let db = dir.join("ladder.db");
    let server = LadderServer::start(db.to_str().unwrap(), ADMIN_TOKEN, &[]);
    let token_file = dir.join("w1.token");
    std::fs::write(&token_file, add_worker(&server.url, "w1")).unwrap();
    let attacker = format!("{} --attack {attack}", env!("CARGO_BIN_EXE_attack_bot"));
    let honest = format!("{} --mode good", env!("CARGO_BIN_EXE_hostile_bot"));
    admin_at(&server.url, &["register-bot", attack, "spartan", &attacker]);
    admin_at(&server.url, &["register-bot", "good", "spartan", &honest]);
    (dir, server, token_file)
}

/// Attack through the real server and worker: the `signal` attacker (the red
/// team's file-lock channel between two live processes of one bot) hears nothing
/// of the other rotation of any group. The worker plays its batch of leases in
/// waves, rotation by rotation, every process quit between two waves. Before,
/// the process that played rotation 0 was kept alive while rotation 1 was played
/// (the red team: 20 of 20 through `ladder serve` and `ladder worker`).
#[test]
fn a_worker_never_keeps_a_process_of_one_rotation_alive_into_the_next() {
    if !isolation("worker signal") {
        return;
    }
    let (dir, server, token_file) = spartan_attack_ladder("worker-signal", "signal");
    let reports = play_out(
        &server.url,
        &token_file,
        &dir,
        "waves",
        "spartan",
        20,
        "ATTACK signal",
    );
    assert_eq!(reports.len(), 20, "the attack ran in every game: {reports:?}");
    // The bots are processes, so the group is dealt a seed per rotation and a
    // kept process may play both: what it heard can match only by chance. A
    // kept process holds the words of every game it played, so chance hits
    // happen (1 of 20 seen); a live channel under mirrored dice heard 20 of 20.
    let heard = reports.iter().filter(|r| r.contains(": escaped ")).count();
    assert!(heard <= SIGNAL_CHANCE_HITS, "{heard} of 20 heard: {reports:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Plays 64 games of Spartan Yahtzee between `attack` and an honest bot on a
/// worker at `--concurrency 2 --batch 1` and at `4 --batch 4` (at batch 1 a
/// task's wave is the first rotations of the batches it leases while no turn
/// waits; at 4, of bigger batches): the attack reports every game and hears
/// the other army's secret roll at most `chance` times.
fn hears_at_chance_at_concurrency_2_and_4(
    url: &str,
    token_file: &std::path::Path,
    dir: &std::path::Path,
    attack: &str,
    chance: usize,
) {
    for (concurrency, batch) in [("2", "1"), ("4", "4")] {
        let reports = play_out_with(
            url,
            token_file,
            dir,
            &format!("{attack}-c{concurrency}"),
            "spartan",
            64,
            &format!("ATTACK {attack}"),
            &[
                "--concurrency",
                concurrency,
                "--batch",
                batch,
                "--sandbox",
                "isolated",
            ],
        );
        let (hits, games) = hits_of(&reports, attack);
        assert_eq!(
            games, 64,
            "{attack} c{concurrency}: the attack ran in every game: {reports:?}"
        );
        assert!(
            hits <= chance,
            "{attack} c{concurrency}: {hits} of 64 games heard: {reports:?}"
        );
    }
}

/// Attack through the real server and worker (issue 59): the `relay` attacker's
/// live processes copy each other's words, so a word outlives its speller while
/// any process of the bot lives on the machine, in another of the worker's
/// threads say. Before the machine's rotation gate, a worker at `--concurrency 2`
/// or 4 let one task's processes carry a group's rotation 0 dice into its
/// rotation 1 played by another task. Now a rotation starts only once no bot
/// process lives on the machine: hits at chance ([`RELAY_CHANCE_HITS`]: at
/// most one) at concurrency 2 and 4, and beside a second run of the bot.
#[test]
fn a_worker_at_any_concurrency_relays_nothing_between_rotations() {
    if !isolation("worker relay") {
        return;
    }
    let (dir, server, token_file) = spartan_attack_ladder("worker-relay", "relay");
    hears_at_chance_at_concurrency_2_and_4(&server.url, &token_file, &dir, "relay", RELAY_CHANCE_HITS);
    // Beside a second run of the same bot on the machine, alive throughout
    // (without the gate's turn before a worker's later rotations: 32 of 32).
    let second_run = attacks::SecondRun::start(
        &format!("{} --attack relay", env!("CARGO_BIN_EXE_attack_bot")),
        &format!("{} --mode good", env!("CARGO_BIN_EXE_hostile_bot")),
        "isolated",
        &dir.join("second-run-logs"),
    );
    let reports = play_out_with(
        &server.url,
        &token_file,
        &dir,
        "relay-beside",
        "spartan",
        40,
        "ATTACK relay",
        &["--batch", "4", "--sandbox", "isolated"],
    );
    drop(second_run);
    let (hits, games) = hits_of(&reports, "relay");
    assert_eq!(games, 40, "beside a second run: {reports:?}");
    assert!(
        hits <= RELAY_CHANCE_HITS,
        "beside a second run: {hits} of 20 second games heard: {reports:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Attack through the real server and worker (issue 81): the `cache` attacker
/// leaves its words in the page cache of a large file every sandbox shows,
/// which outlives every process, so no wait between rotations and no quitting
/// of processes closes it (with the machine's rotation gate, an uploaded copy
/// of it heard 44 of 64 on a worker). The worker deals a group of processes a
/// seed per rotation: hits at chance ([`CACHE_CHANCE_HITS`]) at concurrency 2
/// and 4, and with two workers on the machine at once.
#[test]
fn a_worker_relays_nothing_through_the_page_cache_alone_or_beside_another() {
    if !isolation("worker cache") {
        return;
    }
    let (dir, server, token_file) = spartan_attack_ladder("worker-cache", "cache");
    hears_at_chance_at_concurrency_2_and_4(&server.url, &token_file, &dir, "cache", CACHE_CHANCE_HITS);
    // Two workers on this machine, one kernel, taking groups from one
    // competition at once.
    let second_token = dir.join("w2.token");
    std::fs::write(&second_token, add_worker(&server.url, "w2")).unwrap();
    admin_at(
        &server.url,
        &[
            "open",
            "cache-two",
            "--game",
            "spartan",
            "--max-games",
            "64",
            "--movetime",
            "2000",
        ],
    );
    let logs = dir.join("logs").join("cache-two");
    let workers: Vec<std::process::Child> = [&token_file, &second_token]
        .into_iter()
        .map(|token| {
            Command::new(binary("ladder"))
                .args([
                    "worker",
                    "--server",
                    &server.url,
                    "--exit-when-idle",
                    "--token-file",
                ])
                .arg(token)
                .arg("--log-dir")
                .arg(&logs)
                .args(["--concurrency", "2", "--sandbox", "isolated"])
                .current_dir(workspace_root())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for w in workers {
        let out = w.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    let reports = attacks::reports(&logs, "ATTACK cache");
    let (hits, games) = hits_of(&reports, "cache");
    assert_eq!(
        games, 64,
        "two workers: the attack ran in every game: {reports:?}"
    );
    assert!(
        hits <= CACHE_CHANCE_HITS,
        "two workers: {hits} of 64 games heard: {reports:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--server`, `--token-file` and `--ca-cert` are declared once for every
/// command that calls a server: each command's help says them alike.
#[test]
fn the_connection_flags_are_the_same_for_every_client_command() {
    let flags = |command: &str| -> Vec<String> {
        let help = ladder(&[command, "--help"]);
        assert!(help.status.success(), "{command}: {}", text(&help));
        let said = text(&help);
        let lines: Vec<String> = ["--server", "--token-file", "--ca-cert"]
            .iter()
            .map(|flag| {
                // The flag's line and the lines its text wraps onto, in one.
                let at = said
                    .lines()
                    .position(|l| l.trim_start().starts_with(flag))
                    .unwrap_or_else(|| panic!("{command} has no {flag}: {said}"));
                let rest = said.lines().skip(at + 1);
                std::iter::once(said.lines().nth(at).unwrap())
                    .chain(rest.take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with('-')))
                    .flat_map(str::split_whitespace)
                    .filter(|w| !w.starts_with("[default:") && !w.starts_with("http://127.0.0.1:50060]"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        lines
    };
    let admin = flags("admin");
    assert!(admin[1].contains("ASTRAGAL_WORKER_TOKEN"), "{admin:?}");
    for command in ["author", "submit", "worker"] {
        assert_eq!(flags(command), admin, "{command}");
    }
}
