//! Operating a ladder, through the real programs: workers that are stopped
//! (SIGTERM, as a rolling restart or an autoscaler does) give back what they
//! hold instead of letting it run out, a worker killed mid-build delays the
//! version by one lease period, the health and metrics endpoints, retention,
//! and a backup restored with every game in it. On SQLite and (with
//! ASTRAGAL_PG_URL) PostgreSQL.

use astragal_tests::{
    LadderServer, binary, ladder, ladder_admin, output_text as text, test_stores, workspace_root,
};
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ADMIN_TOKEN: &str = "admin-secret-operating-0123";

/// A child killed and reaped when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
            .env("RUST_LOG", "info")
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
        wait_for_count(&t.url, leased, 1, &mut w.0);
        let held = rows(
            &t.url,
            "SELECT id, seed FROM match_groups WHERE status = 'leased' ORDER BY id",
        );
        sigterm(&w.0);
        let said = ended(w);
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
        let o = ladder(
            &[
                "worker",
                "--server",
                &server.url,
                "--sandbox",
                "none",
                "--allow-unsandboxed",
                "--runtimes",
                "none",
                "--concurrency",
                "2",
                "--exit-when-idle",
            ],
            &[("ASTRAGAL_WORKER_TOKEN", &token)],
        );
        assert!(o.status.success(), "{}", text(&o));
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
        wait_for_count(&t.url, leased, 1, &mut w.0);
        sigterm(&w.0);
        let said = ended(w);
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
        let o = ladder(
            &[
                "worker",
                "--server",
                &server.url,
                "--sandbox",
                "none",
                "--allow-unsandboxed",
                "--runtimes",
                "none",
                "--concurrency",
                "2",
                "--exit-when-idle",
            ],
            &[("ASTRAGAL_WORKER_TOKEN", &token)],
        );
        assert!(o.status.success(), "{}", text(&o));
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
        let mut w = builder(&token, "0");
        wait_for_count(&t.url, leased, 1, &mut w.0);
        sigterm(&w.0);
        let said = ended(w);
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
        let now = ladder::store::now_ms();
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
