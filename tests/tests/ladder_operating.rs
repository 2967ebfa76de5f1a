//! Operating a ladder, through the real programs: workers that are stopped
//! (SIGTERM, as a rolling restart or an autoscaler does) give back what they
//! hold instead of letting it run out, a worker killed mid-build delays the
//! version by one lease period, the health and metrics endpoints, retention,
//! and a backup restored with every game in it. On SQLite and (with
//! ASTRAGAL_PG_URL) PostgreSQL.

use astragal_tests::{
    LadderServer, Reaped, binary, ladder, ladder_admin, output_text as text, test_stores, workspace_root,
};
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ADMIN_TOKEN: &str = "admin-secret-operating-0123";

fn admin(url: &str, args: &[&str]) -> String {
    ladder_admin(url, ADMIN_TOKEN, args)
}

/// Runs `sql` on the store at `url` and reads its rows' first two columns as
/// integers (a missing second column reads 0).
fn rows(url: &str, sql: &str) -> Vec<(i64, i64)> {
    use sqlx::{Connection, Row};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        sqlx::any::install_default_drivers();
        let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_all(&mut conn)
            .await
            .unwrap();
        let out = rows
            .iter()
            .map(|r| {
                let a: i64 = r.try_get(0).unwrap();
                let b: i64 = if r.len() > 1 { r.try_get(1).unwrap_or(0) } else { 0 };
                (a, b)
            })
            .collect();
        let _ = conn.close().await;
        out
    })
}

fn count(url: &str, sql: &str) -> i64 {
    rows(url, sql)[0].0
}

/// Waits until `sql`'s count is at least `n`, looking again every 20 ms (the
/// store's state is the event waited for), while `child` still runs.
fn wait_for_count(url: &str, sql: &str, n: i64, child: &mut Child) {
    loop {
        if count(url, sql) >= n {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the worker ended ({status}) before {sql} reached {n}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn worker(url: &str, token: &str, extra: &[&str]) -> Reaped {
    Reaped(
        Command::new(binary("ladder"))
            .args([
                "worker",
                "--server",
                url,
                "--sandbox",
                "none",
                "--allow-unsandboxed",
                "--runtimes",
                "none",
            ])
            .args(extra)
            .env("ASTRAGAL_WORKER_TOKEN", token)
            .env("RUST_LOG", "info,ladder::worker::holdings=debug")
            .current_dir(workspace_root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

fn sigterm(child: &Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

/// What a stopped worker wrote, and that it ended well.
/// What `w` wrote to its stderr up to the first line holding `needle` (an
/// event it logs), read a byte at a time so that nothing after it is taken
/// from the pipe ([`ended`] reads the rest).
fn until_line(w: &mut Reaped, needle: &str) -> String {
    use std::io::Read;
    let pipe = w.0.stderr.as_mut().expect("the worker's stderr is piped");
    let mut seen = Vec::new();
    let mut byte = [0u8];
    loop {
        if pipe.read(&mut byte).unwrap() == 0 {
            panic!(
                "the worker ended before it said {needle:?}: {}",
                String::from_utf8_lossy(&seen)
            );
        }
        seen.push(byte[0]);
        if byte[0] == b'\n' {
            let text = String::from_utf8_lossy(&seen);
            if text.lines().last().is_some_and(|l| l.contains(needle)) {
                return text.into_owned();
            }
        }
    }
}

fn ended(mut w: Reaped) -> String {
    let mut err = String::new();
    if let Some(pipe) = w.0.stderr.take() {
        for line in std::io::BufReader::new(pipe).lines() {
            err.push_str(&line.unwrap());
            err.push('\n');
        }
    }
    let status = w.0.wait().unwrap();
    assert!(status.success(), "the worker ended {status}: {err}");
    err
}

/// A ladder of two slow bots (each move 5 ms), 8 groups of two games, whose
/// leases last an hour: a group left leased would wait an hour.
fn slow_ladder(db: &str) -> (LadderServer, String) {
    let server = LadderServer::start(db, ADMIN_TOKEN, &["--lease-seconds", "3600"]);
    let slow = format!("{} --mode ponder --think 5", binary("hostile_bot").display());
    admin(&server.url, &["register-bot", "slow1", "ur", &slow]);
    admin(&server.url, &["register-bot", "slow2", "ur", &slow]);
    admin(
        &server.url,
        &[
            "open",
            "c",
            "--game",
            "ur",
            "--max-games",
            "16",
            "--movetime",
            "2000",
        ],
    );
    let token = admin(&server.url, &["add-worker", "w1"]).trim().to_owned();
    (server, token)
}

/// Every group recorded once, each with both its games.
fn every_group_recorded_once(url: &str, kind: &str) {
    let per_group = rows(
        url,
        "SELECT group_id, COUNT(*) FROM games GROUP BY group_id ORDER BY group_id",
    );
    assert_eq!(per_group.len(), 8, "{kind}: groups recorded: {per_group:?}");
    assert!(
        per_group.iter().all(|&(_, games)| games == 2),
        "{kind}: each group's two games once: {per_group:?}"
    );
    assert_eq!(
        count(url, "SELECT COUNT(*) FROM match_groups WHERE status <> 'done'"),
        0,
        "{kind}: every group done"
    );
}

#[test]
fn a_worker_stopped_mid_batch_gives_back_at_once_what_it_holds_and_every_group_is_recorded_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("stop_give_back")) {
        let (server, token) = slow_ladder(&t.url);
        let mut w = worker(
            &server.url,
            &token,
            &["--batch", "4", "--concurrency", "1", "--stop-within", "0"],
        );
        let leased = "SELECT COUNT(*) FROM match_groups WHERE status = 'leased'";
        // Once the worker says it holds them (the store shows a lease a moment
        // before the worker has the reply).
        let before = until_line(&mut w, "groups held");
        let held = rows(
            &t.url,
            "SELECT id, seed FROM match_groups WHERE status = 'leased' ORDER BY id",
        );
        sigterm(&w.0);
        let said = before + &ended(w);
        assert!(said.contains("leases given back"), "{}: {said}", t.kind);
        // None waits out its hour: each is scheduled again, with a new seed
        // (the worker may have seen the old one's dice).
        assert_eq!(count(&t.url, leased), 0, "{}: nothing left leased", t.kind);
        let after = rows(
            &t.url,
            "SELECT id, seed FROM match_groups WHERE status = 'scheduled' ORDER BY id",
        );
        for (id, seed) in &held {
            let now = after.iter().find(|(i, _)| i == id);
            let Some((_, new_seed)) = now else {
                panic!(
                    "{}: group {id} held at the stop is not scheduled again: {after:?}",
                    t.kind
                );
            };
            assert_ne!(new_seed, seed, "{}: group {id} is dealt with a new seed", t.kind);
        }
        // Its token did not lose them as expired leases.
        assert_eq!(
            count(&t.url, "SELECT leases_expired FROM workers WHERE name = 'w1'"),
            0,
            "{}",
            t.kind
        );
        // Another worker plays them all at once (no lease to wait out).
        work_until_idle(&server.url, &token);
        every_group_recorded_once(&t.url, t.kind);
    }
}

#[test]
fn a_worker_stopped_mid_batch_with_time_to_finish_reports_its_games_and_leases_no_more() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("stop_finish")) {
        let (server, token) = slow_ladder(&t.url);
        let mut w = worker(
            &server.url,
            &token,
            &["--batch", "2", "--concurrency", "1", "--stop-within", "600"],
        );
        let leased = "SELECT COUNT(*) FROM match_groups WHERE status = 'leased'";
        let before = until_line(&mut w, "groups held");
        sigterm(&w.0);
        let said = before + &ended(w);
        assert!(!said.contains("leases given back"), "{}: {said}", t.kind);
        assert_eq!(count(&t.url, leased), 0, "{}: nothing left leased", t.kind);
        // What it held was played and reported; it took nothing new.
        let done = count(&t.url, "SELECT COUNT(*) FROM match_groups WHERE status = 'done'");
        let leased_by_it = count(&t.url, "SELECT groups_leased FROM workers WHERE name = 'w1'");
        assert!(done >= 1, "{}: the groups in hand were reported", t.kind);
        assert_eq!(
            done, leased_by_it,
            "{}: every group it leased is reported",
            t.kind
        );
        assert!(
            done < 8,
            "{}: it stopped leasing at the stop ({done} of 8)",
            t.kind
        );
        assert_eq!(
            count(&t.url, "SELECT COUNT(*) FROM games"),
            2 * done,
            "{}: both games of each",
            t.kind
        );
        work_until_idle(&server.url, &token);
        every_group_recorded_once(&t.url, t.kind);
    }
}

/// An author's bot folder whose build takes `seconds`.
fn slow_build(root: &Path, seconds: u32) -> std::path::PathBuf {
    let dir = root.join("slowbuild");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("astragal.toml"),
        format!(
            "name = \"slowbuild\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n\
             build = \"python3 -c 'import time; time.sleep({seconds})'\"\n"
        ),
    )
    .unwrap();
    std::fs::copy(
        workspace_root().join("bots/starters/python/bot.py"),
        dir.join("bot.py"),
    )
    .unwrap();
    dir
}

#[test]
fn a_build_is_given_back_on_sigterm_and_outlives_a_killed_worker_by_one_lease_period() {
    use referee::sandbox::{Level, Sandbox};
    if let Err(e) = Sandbox::at(Level::Isolated).check() {
        astragal_tests::skipped("builds given back", &e.to_string());
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("build_lease")) {
        let scratch = tempfile::tempdir().unwrap();
        let lease_seconds = 2;
        let server = LadderServer::start(
            &t.url,
            ADMIN_TOKEN,
            &["--lease-seconds", &lease_seconds.to_string()],
        );
        let token = admin(&server.url, &["add-worker", "w1"]).trim().to_owned();
        let token2 = admin(&server.url, &["add-worker", "w2"]).trim().to_owned();
        let author = scratch.path().join("author.token");
        std::fs::write(&author, admin(&server.url, &["add-author", "alice"])).unwrap();
        let dir = slow_build(scratch.path(), 60);
        let o = ladder(
            &[
                "submit",
                "--server",
                &server.url,
                "--token-file",
                &author.to_string_lossy(),
                &dir.to_string_lossy(),
            ],
            &[],
        );
        assert!(o.status.success(), "{}", text(&o));
        let builder = |token: &str, stop_within: &str| {
            Reaped(
                Command::new(binary("ladder"))
                    .args([
                        "worker",
                        "--server",
                        &server.url,
                        "--sandbox",
                        "isolated",
                        "--runtimes",
                        "python3",
                        "--stop-within",
                        stop_within,
                    ])
                    .env("ASTRAGAL_WORKER_TOKEN", token)
                    .env("RUST_LOG", "info")
                    .current_dir(workspace_root())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            )
        };
        let leased = "SELECT COUNT(*) FROM bots WHERE name LIKE 'slowbuild%' AND prep_lease IS NOT NULL";
        let tries = "SELECT COUNT(*) FROM prep_tries";

        // SIGTERM mid-build: given back at once, and the version charged nothing.
        // Sent once the worker says it holds the build (the store shows the
        // lease a moment before the worker has the reply).
        let mut w = builder(&token, "0");
        let before = until_line(&mut w, "building and checking");
        sigterm(&w.0);
        let said = before + &ended(w);
        assert!(said.contains("build=true"), "{}: {said}", t.kind);
        assert_eq!(
            count(&t.url, leased),
            0,
            "{}: the build is free for another worker",
            t.kind
        );
        assert_eq!(
            count(&t.url, tries),
            0,
            "{}: a stop is not the version's try",
            t.kind
        );

        // kill -9 mid-build: the lease lasts one period from its last renewal,
        // not the build's whole time limit, and it is renewed while the build
        // runs.
        let mut w = builder(&token, "0");
        wait_for_count(&t.url, leased, 1, &mut w.0);
        let expiry = |url: &str| {
            rows(
                url,
                "SELECT prep_expires_ms, 0 FROM bots WHERE name LIKE 'slowbuild%' AND prep_lease IS NOT NULL",
            )[0]
            .0
        };
        let first = expiry(&t.url);
        let now = ladder::clock::system_ms();
        assert!(
            first - now <= lease_seconds * 1000,
            "{}: a build's lease runs {} ms ahead, more than one period",
            t.kind,
            first - now
        );
        // Renewed: its expiry moves on while the build runs.
        loop {
            if expiry(&t.url) > first {
                break;
            }
            assert!(w.0.try_wait().unwrap().is_none(), "the worker ended");
            std::thread::sleep(Duration::from_millis(50));
        }
        w.0.kill().unwrap();
        let _ = w.0.wait();
        let killed = std::time::Instant::now();
        // Another worker takes it once the period has run out.
        let mut w2 = builder(&token2, "0");
        loop {
            let by = rows(
                &t.url,
                "SELECT COALESCE(prepared_by, 0), 0 FROM bots WHERE name LIKE 'slowbuild%' AND prep_lease IS NOT NULL",
            );
            let w2_id = count(&t.url, "SELECT id FROM workers WHERE name = 'w2'");
            if by.first().is_some_and(|&(by, _)| by == w2_id) {
                break;
            }
            assert!(w2.0.try_wait().unwrap().is_none(), "the second worker ended");
            std::thread::sleep(Duration::from_millis(50));
        }
        // Said, not asserted (a test waits on events, not on the clock).
        println!(
            "{}: the build was taken by another worker {:.1?} after a kill -9 (lease period {lease_seconds} s)",
            t.kind,
            killed.elapsed()
        );
        assert_eq!(
            count(&t.url, tries),
            1,
            "{}: the lease that ran out is one try",
            t.kind
        );
        sigterm(&w2.0);
        let _ = ended(w2);
    }
}

/// The value of the series `line_start` (its name and labels) in a scrape.
fn series(scrape: &str, line_start: &str) -> f64 {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {line_start} in\n{scrape}"))
}

/// Four built-in bots in an open Ur ladder of `games` games.
fn builtin_ladder(url: &str, games: u32) -> String {
    for (name, spec) in [
        ("rnd", "builtin:random"),
        ("first", "builtin:first"),
        ("greedy", "builtin:greedy"),
        ("rnd2", "builtin:random?seed=2"),
    ] {
        admin(url, &["register-bot", name, "ur", spec]);
    }
    admin(
        url,
        &["open", "c", "--game", "ur", "--max-games", &games.to_string()],
    );
    admin(url, &["add-worker", "w1"]).trim().to_owned()
}

fn work_until_idle(url: &str, token: &str) {
    let o = ladder(
        &[
            "worker",
            "--server",
            url,
            "--sandbox",
            "none",
            "--allow-unsandboxed",
            "--runtimes",
            "none",
            "--concurrency",
            "2",
            "--batch",
            "4",
            "--exit-when-idle",
        ],
        &[("ASTRAGAL_WORKER_TOKEN", token)],
    );
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn probes_and_metrics_say_what_a_host_watches_and_readiness_ends_with_the_schema_or_the_stop() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("metrics")) {
        let mut server = LadderServer::start(&t.url, ADMIN_TOKEN, &["--metrics", "127.0.0.1:0"]);
        let ops = server.metrics.expect("a metrics port");
        for at in [server.web, ops] {
            assert_eq!(astragal_tests::http_get(at, "/healthz"), (200, "ok\n".to_owned()));
            assert_eq!(
                astragal_tests::http_get(at, "/readyz"),
                (200, "ready\n".to_owned())
            );
        }
        // The public pages never show the host's numbers.
        assert_eq!(
            astragal_tests::http_get(server.web, "/metrics").0,
            404,
            "{}",
            t.kind
        );

        let token = builtin_ladder(&server.url, 40);
        // A worker with its own metrics, read while it runs.
        let mut w = Reaped(
            Command::new(binary("ladder"))
                .args([
                    "worker",
                    "--server",
                    &server.url,
                    "--sandbox",
                    "none",
                    "--allow-unsandboxed",
                    "--runtimes",
                    "none",
                    "--metrics",
                    "127.0.0.1:0",
                ])
                .env("ASTRAGAL_WORKER_TOKEN", &token)
                .current_dir(workspace_root())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut lines = std::io::BufReader::new(w.0.stderr.take().unwrap()).lines();
        let worker_ops: std::net::SocketAddr = loop {
            let line = lines
                .next()
                .expect("the worker says where its metrics are")
                .unwrap();
            if let Some(rest) = line.strip_prefix("ladder worker: metrics on http://") {
                break rest.trim_end_matches("/metrics").parse().unwrap();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        wait_for_count(&t.url, "SELECT COUNT(*) FROM games", 40, &mut w.0);
        let (status, scrape) = astragal_tests::http_get(worker_ops, "/metrics");
        assert_eq!(status, 200);
        assert!(series(&scrape, "ladder_worker_games_total") >= 40.0, "{scrape}");
        assert!(
            series(&scrape, "ladder_worker_groups_reported_total") >= 20.0,
            "{scrape}"
        );
        sigterm(&w.0);
        let _ = w.0.wait();

        // A page, then the server's numbers: what the store holds, and what it did.
        assert_eq!(astragal_tests::http_get(server.web, "/competitions/c").0, 200);
        let (status, scrape) = astragal_tests::http_get(ops, "/metrics");
        assert_eq!(status, 200);
        assert_eq!(
            series(&scrape, "ladder_games_recorded_total"),
            40.0,
            "{}: {scrape}",
            t.kind
        );
        assert_eq!(
            series(&scrape, "ladder_groups_recorded_total"),
            20.0,
            "{}",
            t.kind
        );
        assert!(
            series(&scrape, "ladder_leases_total{kind=\"granted\"}") >= 20.0,
            "{scrape}"
        );
        assert_eq!(series(&scrape, "ladder_groups_waiting"), 0.0, "{}", t.kind);
        assert_eq!(series(&scrape, "ladder_groups_leased"), 0.0, "{}", t.kind);
        assert!(series(&scrape, "ladder_grpc_seconds_count{kind=\"LeaseGroups\"}") >= 1.0);
        assert!(series(&scrape, "ladder_grpc_seconds_count{kind=\"ReportGroups\"}") >= 1.0);
        assert_eq!(
            series(
                &scrape,
                "ladder_http_seconds_count{kind=\"/competitions/{name}\"}"
            ),
            1.0,
            "{scrape}"
        );
        assert!(series(&scrape, "ladder_db_max_connections") >= 1.0);
        // A path no client sends is one label, whatever it was.
        let _ = astragal_tests::http_get(server.web, "/no/such/page/0123");
        let (_, scrape) = astragal_tests::http_get(ops, "/metrics");
        assert!(!scrape.contains("/no/such"), "{scrape}");
        assert!(series(&scrape, "ladder_http_seconds_count{kind=\"unmatched\"}") >= 1.0);

        // A schema this program does not expect is not ready, and says why.
        rows_exec(
            &t.url,
            "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
        );
        let (status, said) = astragal_tests::http_get(server.web, "/readyz");
        assert_eq!(status, 503, "{}: {said}", t.kind);
        assert!(said.contains("schema is at migration"), "{said}");
        assert!(
            server.terminate().success(),
            "{}: SIGTERM ends the server well",
            t.kind
        );
    }
}

/// Runs `sql`, which returns no rows.
fn rows_exec(url: &str, sql: &str) {
    use sqlx::Connection;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        sqlx::any::install_default_drivers();
        let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&mut conn)
            .await
            .unwrap();
        let _ = conn.close().await;
    });
}

#[test]
fn a_backup_taken_while_serving_restores_with_every_game() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("backup")) {
        let scratch = tempfile::tempdir().unwrap();
        let server = LadderServer::start(&t.url, ADMIN_TOKEN, &[]);
        let token = builtin_ladder(&server.url, 60);
        work_until_idle(&server.url, &token);
        let games = rows(&t.url, "SELECT id, LENGTH(record) FROM games ORDER BY id");
        assert_eq!(games.len(), 60, "{}", t.kind);
        // Taken while the server serves.
        let restored_url = match t.kind {
            "sqlite" => {
                let to = scratch.path().join("backup.db");
                let o = ladder(&["backup", "--db", &t.url, "--to", &to.to_string_lossy()], &[]);
                assert!(o.status.success(), "{}", text(&o));
                // Only its owner reads it, as the store (token hashes, private logs).
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&to).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o600, "the backup is {mode:o}");
                // Never over a file.
                let again = ladder(&["backup", "--db", &t.url, "--to", &to.to_string_lossy()], &[]);
                assert!(!again.status.success());
                assert!(text(&again).contains("never written over"), "{}", text(&again));
                format!("sqlite:{}", to.display())
            }
            _ => {
                if !astragal_tests::on_path("pg_dump") || !astragal_tests::on_path("pg_restore") {
                    astragal_tests::skipped("a PostgreSQL backup", "pg_dump and pg_restore are not on PATH");
                    continue;
                }
                let dump = scratch.path().join("ladder.dump");
                let o = Command::new("pg_dump")
                    .args(["--format=custom", "--file"])
                    .arg(&dump)
                    .arg(&t.url)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", text(&o));
                let restored = rt.block_on(test_stores("restored")).pop().unwrap();
                let o = Command::new("pg_restore")
                    .args(["--no-owner", "--dbname", &restored.url])
                    .arg(&dump)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", text(&o));
                let url = restored.url.clone();
                std::mem::forget(restored);
                url
            }
        };
        // The restored ladder serves every game, record for record.
        let again = LadderServer::start(&restored_url, ADMIN_TOKEN, &[]);
        assert_eq!(
            rows(&restored_url, "SELECT id, LENGTH(record) FROM games ORDER BY id"),
            games,
            "{}",
            t.kind
        );
        let listed = admin(&again.url, &["list"]);
        assert!(listed.contains("60 games of 60"), "{}: {listed}", t.kind);
        assert_eq!(
            rows(
                &restored_url,
                "SELECT COUNT(*), 0 FROM match_groups WHERE status = 'done'"
            ),
            vec![(30, 0)],
            "{}",
            t.kind
        );
    }
}

#[test]
fn retention_lets_go_of_old_private_logs_unplayed_versions_files_and_ended_sessions_and_nothing_a_game_needs()
{
    use referee::sandbox::{Level, Sandbox};
    if let Err(e) = Sandbox::at(Level::Isolated).check() {
        astragal_tests::skipped("retention", &e.to_string());
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    for t in rt.block_on(test_stores("retention")) {
        let scratch = tempfile::tempdir().unwrap();
        let server = LadderServer::start(&t.url, ADMIN_TOKEN, &[]);
        let token = admin(&server.url, &["add-worker", "w1"]).trim().to_owned();
        let author_token = admin(&server.url, &["add-author", "alice"]);
        let author = scratch.path().join("author.token");
        std::fs::write(&author, &author_token).unwrap();
        admin(&server.url, &["register-bot", "rnd", "ur", "builtin:random"]);
        admin(&server.url, &["open", "c", "--game", "ur", "--max-games", "8"]);
        let starter = std::fs::read_to_string(workspace_root().join("bots/starters/python/bot.py")).unwrap();
        // One that plays and says something on stderr every game; one that
        // fails its check and never plays.
        for (name, run) in [("talker", "python3 noisy.py"), ("broken", "python3 nothing.py")] {
            let dir = scratch.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("astragal.toml"),
                format!("name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"{run}\"\n"),
            )
            .unwrap();
            std::fs::write(dir.join("bot.py"), &starter).unwrap();
            std::fs::write(
                dir.join("noisy.py"),
                "import runpy, sys\nsys.stderr.write('thinking hard\\n')\nrunpy.run_path('bot.py', run_name='__main__')\n",
            )
            .unwrap();
            let o = ladder(
                &[
                    "submit",
                    "--server",
                    &server.url,
                    "--token-file",
                    &author.to_string_lossy(),
                    &dir.to_string_lossy(),
                ],
                &[],
            );
            assert!(o.status.success(), "{}", text(&o));
        }
        let o = ladder(
            &[
                "worker",
                "--server",
                &server.url,
                "--sandbox",
                "isolated",
                "--runtimes",
                "python3",
                "--exit-when-idle",
            ],
            &[("ASTRAGAL_WORKER_TOKEN", &token)],
        );
        assert!(o.status.success(), "{}", text(&o));
        let (status, _, _) = astragal_tests::http_request(
            server.web,
            "POST",
            "/author/sign-in",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Origin", "http://localhost"),
            ],
            format!("token={}", author_token.trim()).as_bytes(),
        );
        assert_eq!(status, 303, "{}: signing in", t.kind);
        let games = count(&t.url, "SELECT COUNT(*) FROM games");
        let logs = count(&t.url, "SELECT COUNT(*) FROM seat_logs");
        let files = count(&t.url, "SELECT COUNT(*) FROM artifacts");
        assert_eq!(games, 8, "{}", t.kind);
        assert!(
            logs >= 1,
            "{}: the talker's stderr is kept for alice: {logs}",
            t.kind
        );
        assert_eq!(
            count(
                &t.url,
                "SELECT COUNT(*) FROM bots WHERE name LIKE 'broken%' AND status = 'rejected'"
            ),
            1,
            "{}",
            t.kind
        );
        let gc = |dry: bool| {
            let args: &[&str] = if dry { &["gc", "--dry-run"] } else { &["gc"] };
            admin(&server.url, args)
        };
        // Nothing is past its time yet.
        let said = gc(true);
        assert!(
            said.contains("would free: 0 private logs") && said.contains("the files of 0 versions"),
            "{}: {said}",
            t.kind
        );
        // Forty days later (the clock moved through the store), and the
        // session ended.
        let day = 86_400_000i64;
        for sql in [
            format!("UPDATE games SET recorded_ms = recorded_ms - {}", 40 * day),
            format!("UPDATE bots SET created_ms = created_ms - {}", 40 * day),
            format!("UPDATE artifacts SET created_ms = created_ms - {}", 40 * day),
            "UPDATE web_sessions SET expires_ms = 1".to_owned(),
        ] {
            rows_exec(&t.url, &sql);
        }
        let said = gc(true);
        assert!(
            said.contains(&format!("would free: {logs} private logs"))
                && said.contains("the files of 1 versions (1 files")
                && said.contains("1 ended sessions")
                && said.contains("kept 30 days"),
            "{}: {said}",
            t.kind
        );
        assert_eq!(
            count(&t.url, "SELECT COUNT(*) FROM seat_logs"),
            logs,
            "{}: a dry run removes nothing",
            t.kind
        );
        assert_eq!(
            count(&t.url, "SELECT COUNT(*) FROM artifacts"),
            files,
            "{}",
            t.kind
        );
        let said = gc(false);
        assert!(
            said.starts_with(&format!("freed: {logs} private logs")),
            "{}: {said}",
            t.kind
        );
        assert_eq!(count(&t.url, "SELECT COUNT(*) FROM seat_logs"), 0, "{}", t.kind);
        assert_eq!(
            count(&t.url, "SELECT COUNT(*) FROM web_sessions"),
            0,
            "{}",
            t.kind
        );
        assert_eq!(
            count(&t.url, "SELECT COUNT(*) FROM artifacts"),
            files - 1,
            "{}",
            t.kind
        );
        // Every game stays, and so do the files of the version that played them.
        assert_eq!(count(&t.url, "SELECT COUNT(*) FROM games"), games, "{}", t.kind);
        assert_eq!(
            count(
                &t.url,
                "SELECT COUNT(*) FROM bots b JOIN artifacts a ON a.sha256 = b.artifact_sha256 WHERE b.name LIKE 'talker%'"
            ),
            1,
            "{}",
            t.kind
        );
        // Again: nothing more to free.
        assert!(gc(false).starts_with("freed: 0 private logs"), "{}", t.kind);
    }
}

/// The recipes in `deploy/` were written from documentation, not run here:
/// at least every `ladder` flag they pass is one the program has.
#[test]
fn the_deployment_recipes_use_only_flags_that_exist() {
    let help = |cmd: &str| {
        let o = ladder(&[cmd, "--help"], &[]);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let known = format!("{}{}", help("serve"), help("worker"));
    let deploy = workspace_root().join("deploy");
    let mut checked = 0;
    for file in [
        "server.Dockerfile",
        "worker.Dockerfile",
        "compose.yaml",
        "k8s/workers.yaml",
    ] {
        let body = std::fs::read_to_string(deploy.join(file)).unwrap();
        for line in body.lines().filter(|l| !l.trim_start().starts_with('#')) {
            for flag in line.split('"').skip(1).step_by(2).filter(|w| w.starts_with("--")) {
                assert!(
                    known.contains(&format!("{flag} ")) || known.contains(&format!("{flag}\n")),
                    "deploy/{file} passes {flag}, which neither `ladder serve` nor `ladder worker` takes"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "the recipes' flags were found ({checked})");
}

/// `ladder serve --help`'s long flags, each with its default when it has one.
fn serve_flags() -> Vec<(String, Option<String>)> {
    let help = text(&ladder(&["serve", "--help"], &[]));
    let mut flags: Vec<(String, Option<String>)> = Vec::new();
    for line in help.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("--") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            flags.push((name, None));
        } else if let (Some(last), Some(at)) = (flags.last_mut(), line.rfind("[default: ")) {
            last.1 = Some(line[at + "[default: ".len()..].trim_end_matches(']').to_owned());
        }
    }
    flags.retain(|(name, _)| name != "help" && name != "config");
    flags
}

/// deploy/ladder.toml documents every `ladder serve` flag, each with the
/// default the command has, so the example cannot fall behind the command.
#[test]
fn the_example_config_names_every_serve_flag_with_its_default() {
    let flags = serve_flags();
    assert!(flags.len() > 20, "{flags:?}");
    let example = std::fs::read_to_string(workspace_root().join("deploy/ladder.toml")).unwrap();
    // Its keys, set or commented out (`# key = value`).
    let mut keys: Vec<(String, String)> = Vec::new();
    for line in example.lines() {
        let line = line.strip_prefix("# ").unwrap_or(line);
        if let Some((key, value)) = line.split_once(" = ")
            && key.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        {
            keys.push((key.to_owned(), value.to_owned()));
        }
    }
    for (flag, default) in &flags {
        let given: Vec<&(String, String)> = keys.iter().filter(|(k, _)| k == flag).collect();
        assert_eq!(
            given.len(),
            1,
            "deploy/ladder.toml names --{flag} {} times",
            given.len()
        );
        if let Some(default) = default {
            // The file's value as the help writes it: strings unquoted, a list
            // space-separated.
            let value = given[0]
                .1
                .trim_matches(['[', ']'])
                .replace("\", \"", " ")
                .replace('"', "");
            assert_eq!(&value, default, "deploy/ladder.toml's default of --{flag}");
        }
    }
    for (key, _) in &keys {
        assert!(
            flags.iter().any(|(f, _)| f == key),
            "deploy/ladder.toml names {key}, no flag of ladder serve"
        );
    }
}

/// `--config FILE` sets the flags it names, the command line wins over it, and
/// a key or value it cannot take stops the server before it starts, naming it.
#[test]
fn a_config_file_sets_serves_flags_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("config.db").display());
    let config = dir.path().join("ladder.toml");
    // `listen` here could not bind; the command line's (the helper's
    // 127.0.0.1:0) wins. `metrics` comes from the file alone.
    std::fs::write(
        &config,
        "listen = \"256.0.0.1:1\"\nmetrics = \"127.0.0.1:0\"\nlease_seconds = 30\nruntimes = [\"python3\", \"node\"]\n",
    )
    .unwrap();
    let server = LadderServer::start(&db, ADMIN_TOKEN, &["--config", config.to_str().unwrap()]);
    let metrics = server.metrics.expect("the file's metrics address is served");
    let (status, _) = astragal_tests::http_get(metrics, "/healthz");
    assert_eq!(status, 200);
    drop(server);

    for (file, says) in [
        ("bogus = 1\n", "unknown key \"bogus\""),
        ("lease-seconds = \"soon\"\n", "--lease-seconds"),
        ("runtimes = [\"cobol\"]\n", "unknown runtime \"cobol\""),
        ("http = { port = 80 }\n", "http: a table is not a flag's value"),
        ("db = \n", "not TOML"),
    ] {
        std::fs::write(&config, file).unwrap();
        let out = ladder(
            &["serve", "--db", &db, "--config", config.to_str().unwrap()],
            &[("ASTRAGAL_ADMIN_TOKEN", ADMIN_TOKEN)],
        );
        assert_eq!(out.status.code(), Some(2), "{file}: {}", text(&out));
        assert!(text(&out).contains(says), "{file}: {}", text(&out));
    }
    let missing = dir.path().join("nowhere.toml");
    let out = ladder(&["serve", "--config", missing.to_str().unwrap()], &[]);
    assert!(text(&out).contains("cannot read --config"), "{}", text(&out));
}
