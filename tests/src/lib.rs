//! Shared harness for the cross-game tests in `tests/tests/`.

use engine::playout::PlayoutStats;
use engine::registry::resolve_setup;
use engine::{Game, GameRng, GameVisitor};

/// The option spreads every game is tested with: (game id, options, seats).
pub const CASES: &[(&str, &[&str], Option<usize>)] = &[
    ("utara", &[], None),
    ("utara", &["moon=dark", "sun=rising", "scoring=advanced"], Some(3)),
    ("utara", &["moon=half", "sun=high", "blocks=true"], Some(4)),
    (
        "utara",
        &["sun=setting", "stormy=true", "rounds=1", "sky=12x7"],
        Some(6),
    ),
    ("utara", &["dice=3", "max_turns=4", "moon=half"], Some(5)),
    ("ur", &[], None),
    ("ur", &["astragal=bone"], None),
    ("ur", &["rules=finkel"], None),
    ("ur", &["max_turns=25"], None),
    ("uptick", &[], None),
    ("uptick", &["size=5", "reserve=4"], None),
    ("uptick", &["size=12", "reserve=20"], None),
    ("uptick", &["max_turns=12"], None),
    ("cuatto", &[], None),
    ("cuatto", &[], Some(2)),
    ("cuatto", &["setup=full"], Some(6)),
    (
        "cuatto",
        &["setup=full", "doubles=true", "exact_exit=true", "length=12"],
        Some(3),
    ),
    ("cuatto", &["length=24", "max_turns=40"], Some(5)),
    ("spartan", &[], None),
    ("spartan", &["max_turns=3"], None),
];

/// A finished random game: what was played and where it ended.
#[derive(Debug, Clone)]
pub struct PlayedGame {
    /// (seat, move text) in order.
    pub moves: Vec<(usize, String)>,
    /// The final position.
    pub final_position: String,
    /// The outcome as JSON.
    pub outcome: String,
}

/// Plays one random game of `G` from `seed` and checks, at every state, the
/// engine's promises (see each `assert!`). Returns what was played.
pub struct CheckedPlayout<'a> {
    /// Options as `key=value`.
    pub options: &'a [&'a str],
    /// Seats (game default if `None`).
    pub seats: Option<usize>,
    /// Game seed.
    pub seed: u64,
    /// Check every legal move by applying it to a copy (slower).
    pub apply_every_move: bool,
}

impl GameVisitor for CheckedPlayout<'_> {
    type Output = PlayedGame;

    fn visit<G: Game>(self) -> PlayedGame {
        let (options, _, seats) = resolve_setup::<G, _>(self.options, self.seats).expect("options");
        let mut game = G::new(&options, seats, GameRng::from_seed(self.seed));
        let mut chooser = GameRng::from_seed(self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut probe = GameRng::from_seed(self.seed ^ 0xdead_beef);
        let mut moves = Vec::new();
        let mut played = Vec::new();
        loop {
            let position = game.position();
            let again = G::from_position(&options, &position, GameRng::from_seed(12345))
                .unwrap_or_else(|e| panic!("{}: position does not parse back: {e}\n{position}", G::ID));
            assert_eq!(
                again,
                game,
                "{}: position round trip changed the state\n{position}",
                G::ID
            );
            assert_eq!(again.position(), position);
            assert!(
                !game.render().trim().is_empty(),
                "{}: every state can be drawn",
                G::ID
            );
            for seat in 0..seats {
                let obs = serde_json::to_value(game.observation(seat)).expect("observation serializes");
                // The fast writer the referee uses says exactly what serde says.
                let mut fast = String::new();
                game.write_observation(seat, &mut fast);
                assert_eq!(
                    fast,
                    serde_json::to_string(&game.observation(seat)).expect("serializes"),
                    "{}: write_observation differs from the Serialize form for seat {seat}\n{position}",
                    G::ID
                );
                let sampled = game.determinize(seat, &mut probe);
                let seen = serde_json::to_value(sampled.observation(seat)).expect("serializes");
                assert_eq!(
                    obs,
                    seen,
                    "{}: a determinized state must look the same to seat {seat}",
                    G::ID
                );
                // What a search bot does with its observation: rebuild a state from
                // the public position and sample the rest. It must look the same too,
                // and the public position must not carry the dice to come.
                let public = game.public_position(seat);
                assert_eq!(
                    game.position_without_rng(),
                    engine::game::strip_rng(&game.position()),
                    "{}: position_without_rng is not the position without its rng",
                    G::ID
                );
                assert!(
                    !public.contains("rng="),
                    "{}: public position leaks the RNG",
                    G::ID
                );
                let rebuilt = G::from_position(&options, &public, GameRng::from_seed(99))
                    .unwrap_or_else(|e| panic!("{}: public position does not parse: {e}\n{public}", G::ID))
                    .determinize(seat, &mut probe);
                let seen = serde_json::to_value(rebuilt.observation(seat)).expect("serializes");
                assert_eq!(
                    obs,
                    seen,
                    "{}: a state rebuilt from seat {seat}'s public position differs",
                    G::ID
                );
                assert_eq!(rebuilt.public_position(seat), public);
            }
            let to_act = game.to_act();
            if to_act.is_empty() {
                break;
            }
            for seat in 0..seats {
                if !to_act.contains(seat) {
                    moves.clear();
                    game.legal_moves(seat, &mut moves);
                    assert!(
                        moves.is_empty(),
                        "{}: seat {seat} is not to act but has moves",
                        G::ID
                    );
                }
            }
            for seat in to_act.iter() {
                moves.clear();
                game.legal_moves(seat, &mut moves);
                assert!(
                    !moves.is_empty(),
                    "{}: seat {seat} to act without moves\n{position}",
                    G::ID
                );
                for m in &moves {
                    let text = m.to_string();
                    let mut written = String::new();
                    G::write_move(m, &mut written);
                    assert_eq!(written, text, "{}: write_move and Display differ", G::ID);
                    let parsed = game
                        .parse_move(&text)
                        .unwrap_or_else(|e| panic!("{}: {text}: {e}", G::ID));
                    assert_eq!(&parsed, m, "{}: move notation round trip", G::ID);
                    if self.apply_every_move {
                        let mut copy = game.clone();
                        copy.play(seat, m).unwrap_or_else(|e| {
                            panic!("{}: legal move {text} refused: {e}\n{position}", G::ID)
                        });
                    }
                }
                let mut list = String::new();
                G::write_move_list(&moves, &mut list);
                let joined: Vec<String> = moves.iter().map(ToString::to_string).collect();
                assert_eq!(
                    list,
                    joined.join(","),
                    "{}: write_move_list and Display differ",
                    G::ID
                );
                let m = moves[chooser.below(moves.len() as u32) as usize].clone();
                game.play(seat, &m)
                    .unwrap_or_else(|e| panic!("{}: {m} refused: {e}", G::ID));
                played.push((seat, m.to_string()));
                assert!(played.len() < 200_000, "{}: the game does not end", G::ID);
            }
        }
        let outcome = game.outcome().expect("a game with nobody to act has an outcome");
        assert_eq!(outcome.ranks.len(), seats);
        assert_eq!(outcome.scores.len(), seats);
        assert!(outcome.ranks.iter().all(|&r| (1..=seats as u8).contains(&r)));
        assert!(outcome.ranks.contains(&1), "somebody is first");
        PlayedGame {
            moves: played,
            final_position: game.position(),
            outcome: serde_json::to_string(&outcome).expect("outcome serializes"),
        }
    }
}

/// Plays random games of every case for `budget` decisions per case, as the
/// benchmark does, and returns the totals (used by a smoke test).
pub fn smoke(budget: u64) -> PlayoutStats {
    struct Smoke<'a>(&'a [&'a str], Option<usize>, u64);
    impl GameVisitor for Smoke<'_> {
        type Output = PlayoutStats;
        fn visit<G: Game>(self) -> PlayoutStats {
            let (options, _, seats) = resolve_setup::<G, _>(self.0, self.1).expect("options");
            let mut stats = PlayoutStats::default();
            let mut chooser = GameRng::from_seed(1);
            let mut moves = Vec::new();
            while stats.decisions < self.2 {
                let mut g = G::new(&options, seats, GameRng::from_seed(stats.games));
                stats.decisions += engine::playout::random_playout(&mut g, &mut chooser, &mut moves);
                stats.games += 1;
            }
            stats
        }
    }
    let mut total = PlayoutStats::default();
    for (id, opts, seats) in CASES {
        let s = engine::with_game(id, Smoke(opts, *seats, budget)).expect("known game");
        total.games += s.games;
        total.decisions += s.decisions;
    }
    total
}

/// The workspace's root folder.
pub fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// The cargo that runs the tests, to build something from inside a test, in the
/// environment the outer `cargo test` had. Cargo gives a test the variables of
/// its package (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ...); some build scripts
/// (ring's) rerun when those change, so a build that saw them would make the next
/// plain `cargo build` or `cargo test` rebuild ring and everything above it.
pub fn cargo() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO"));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let set_for_the_test = key == "OUT_DIR"
            || key.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&key.as_ref());
        if set_for_the_test {
            command.env_remove(key.as_ref());
        }
    }
    command
}

/// The target folder's `debug`, once the workspace's programs and libraries
/// (the Python extension module among them) are built there: once per test
/// process, with the cargo that runs the tests.
///
/// Built as `cargo test --workspace` builds: every package, its tests
/// included. Cargo unifies features over what one command builds, so a build of
/// only the programs (`-p … --bins`) compiled 35 dependencies again with other
/// features (2 min 51 s on 2 cores, measured); this one finds them built.
///
/// # Panics
/// If the build fails.
pub fn built_workspace() -> &'static std::path::Path {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let root = workspace_root();
        let status = cargo()
            .args(["build", "-q", "--workspace", "--lib", "--bins", "--tests"])
            .current_dir(&root)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the workspace failed");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        target.join("debug")
    })
}

/// Path of a workspace binary (`referee`, `astragal-bot`), built once per test run
/// ([`built_workspace`]), so the tests drive the programs users run.
///
/// # Panics
/// If the build fails.
pub fn binary(name: &str) -> std::path::PathBuf {
    built_workspace().join(name)
}

/// A folder holding the Python package `astragal_engine` as pip would lay it out:
/// its Python files from `python/python/astragal_engine` and the extension module built from this
/// workspace (with the cargo that runs the tests), so that `PYTHONPATH` set to it
/// (or a working directory in it) imports this checkout's package and not the
/// source folder or an installed one. Laid out once per test process.
///
/// # Panics
/// If the build fails.
pub fn python_package() -> std::path::PathBuf {
    static LAID_OUT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    LAID_OUT
        .get_or_init(|| {
            let root = workspace_root();
            let debug = built_workspace();
            let dir = debug.join("python-package");
            // Only what is laid out here: nothing left from an earlier layout.
            let _ = std::fs::remove_dir_all(&dir);
            let package = dir.join("astragal_engine");
            std::fs::create_dir_all(&package).expect("make the package folder");
            let source = root.join("python").join("python").join("astragal_engine");
            for entry in std::fs::read_dir(&source).expect("python/python/astragal_engine exists") {
                let path = entry.expect("read python/python/astragal_engine").path();
                let keep = path
                    .extension()
                    .is_some_and(|e| e == "py" || e == "pyi" || e == "typed");
                if let (true, Some(name)) = (keep, path.file_name()) {
                    std::fs::copy(&path, package.join(name)).expect("copy a package file");
                }
            }
            std::fs::copy(debug.join("lib_astragal.so"), package.join("_astragal.abi3.so"))
                .expect("copy the extension module");
            dir
        })
        .clone()
}

/// Whether a program is on PATH.
pub fn on_path(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A test (or part of one) that cannot run here, `why`: under CI (`CI` set) that
/// is a failure, because `.ci/run` installs every tool the tests need and a test
/// that passes by skipping proves nothing; elsewhere it says so on stderr.
/// Returns `false`, for `if !available { return skipped(…) }`.
///
/// # Panics
/// Under CI.
pub fn skipped(test: &str, why: &str) -> bool {
    assert!(std::env::var("CI").is_err(), "{test} cannot run under CI: {why}");
    eprintln!("SKIPPED {test}: {why}");
    false
}

/// A gRPC bot server on 127.0.0.1 and a free port, on a runtime of its own;
/// dropping it (or [`GrpcServer::kill`]) stops the server and its connections.
pub struct GrpcServer {
    /// What to pass as `--bot`.
    pub url: String,
    runtime: Option<tokio::runtime::Runtime>,
}

impl GrpcServer {
    /// Binds a free port and runs `serve` on it (a tonic server's future).
    ///
    /// # Panics
    /// If no runtime or port can be had.
    pub fn start<F>(serve: impl FnOnce(tokio::net::TcpListener) -> F) -> GrpcServer
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("a free port");
        let url = format!("grpc://{}", listener.local_addr().expect("a bound address"));
        runtime.spawn(serve(listener));
        GrpcServer {
            url,
            runtime: Some(runtime),
        }
    }

    /// A seat for this server.
    ///
    /// # Panics
    /// Never: the url is a `grpc://` address.
    pub fn spec(&self) -> referee::SeatSetup {
        referee::SeatSetup::new(referee::BotSpec::parse(&self.url).expect("a grpc:// url"))
    }

    /// The server dies: its runtime stops at once, connections drop.
    pub fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Short deadlines for fault tests: nothing waits long.
pub fn fast_limits() -> referee::Limits {
    use std::time::Duration;
    referee::Limits {
        tc: referee::TimeControl::MoveTime(Duration::from_millis(300)),
        margin: Duration::from_millis(100),
        handshake: Duration::from_millis(1500),
        ping: Duration::from_millis(1000),
        quit_grace: Duration::from_millis(200),
        ..referee::Limits::default()
    }
}

/// Plays one game on its own thread with [`fast_limits`]; a game that takes a
/// minute means the referee hung, and the test fails.
///
/// # Panics
/// On a hang or a refused setup.
pub fn play_guarded(game: &str, seats: &[referee::SeatSetup], seed: u64) -> referee::GameRecord {
    let setup = referee::GameSetup {
        game: game.into(),
        options: vec![],
        seed,
        position: None,
        pairing: None,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let seats = seats.to_vec();
    std::thread::spawn(move || {
        let _ = tx.send(referee::play_game(
            &setup,
            &seats,
            &fast_limits(),
            &referee::LogPlace::default(),
        ));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the referee hung")
        .expect("setup is valid")
}

/// A store for a ladder test: a fresh SQLite file, or a fresh PostgreSQL database
/// (dropped when this is dropped).
pub struct TestStore {
    /// What to pass as `--db`.
    pub url: String,
    /// Which back end, for messages.
    pub kind: &'static str,
    cleanup: Cleanup,
}

enum Cleanup {
    File(std::path::PathBuf),
    Postgres { admin_url: String, name: String },
}

static STORE_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn unique(tag: &str) -> String {
    let n = STORE_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("astragal_{tag}_{}_{n}_{nanos}", std::process::id())
}

/// The stores the ladder suite runs on: SQLite always, and PostgreSQL when
/// `ASTRAGAL_PG_URL` is set (a server URL whose user may create databases).
///
/// # Panics
/// When `ASTRAGAL_PG_URL` is set but the server refuses to create a database, or
/// under CI when it is not set ([`skipped`]).
pub async fn test_stores(tag: &str) -> Vec<TestStore> {
    let path = std::env::temp_dir().join(format!("{}.db", unique(tag)));
    let mut out = vec![TestStore {
        url: format!("sqlite:{}", path.display()),
        kind: "sqlite",
        cleanup: Cleanup::File(path),
    }];
    let pg = std::env::var("ASTRAGAL_PG_URL").ok().filter(|u| !u.is_empty());
    if pg.is_none() {
        skipped(
            &format!("{tag} on PostgreSQL"),
            "set ASTRAGAL_PG_URL to a PostgreSQL server",
        );
    }
    if let Some(base) = pg {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        // A database's name as PostgreSQL takes it unquoted: letters, digits, `_`.
        let name: String = unique(tag)
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let mut conn = sqlx::AnyConnection::connect(&base)
            .await
            .unwrap_or_else(|e| panic!("ASTRAGAL_PG_URL={base}: cannot connect: {e}"));
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("cannot create a test database on {base}: {e}"));
        let _ = conn.close().await;
        let (head, query) = base
            .split_once('?')
            .map_or((base.as_str(), None), |(h, q)| (h, Some(q)));
        let scheme_end = head.find("://").map_or(0, |i| i + 3);
        let host_part = match head[scheme_end..].find('/') {
            Some(i) => &head[..scheme_end + i],
            None => head,
        };
        let url = match query {
            Some(q) => format!("{host_part}/{name}?{q}"),
            None => format!("{host_part}/{name}"),
        };
        out.push(TestStore {
            url,
            kind: "postgres",
            cleanup: Cleanup::Postgres {
                admin_url: base,
                name,
            },
        });
    }
    let kinds: Vec<&str> = out.iter().map(|s| s.kind).collect();
    eprintln!("{tag}: on {}", kinds.join(" and "));
    out
}

impl Drop for TestStore {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::File(p) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
                }
            }
            Cleanup::Postgres { admin_url, name } => {
                // Best effort, on a runtime of its own (drop may run inside another).
                let (admin_url, name) = (admin_url.clone(), name.clone());
                let _ = std::thread::spawn(move || {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                        return;
                    };
                    rt.block_on(async {
                        use sqlx::Connection;
                        if let Ok(mut c) = sqlx::AnyConnection::connect(&admin_url).await {
                            let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                            let _ = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut c).await;
                        }
                    });
                })
                .join();
            }
        }
    }
}

/// Records a dishonest worker could send for a genuine two-seat `record`, each made
/// consistent in everything else (final position, outcome and termination
/// recomputed), so that only the check of its faults can refuse it: a timeout
/// added to the winner of a finished game, a fault by a seat that was not to act,
/// one seat faulting twice, a game cut short with no fault (every seat tied
/// first), and a fault by a seat that does not exist.
pub fn forged_faults(record: &referee::GameRecord) -> Vec<(&'static str, referee::GameRecord)> {
    use referee::record::{FaultRecord, final_outcome};
    use referee::{FaultKind, Termination};
    let replayed = |moves: &[referee::record::MoveRecord]| {
        let setup = referee::GameSetup {
            game: record.game.clone(),
            options: record.options.clone(),
            seed: record.seed,
            position: record.start_position.clone(),
            pairing: record.pairing,
        };
        let mut game = referee::game::create_game(&setup, record.seats.len()).unwrap();
        let mut to_act = Vec::new();
        for m in moves {
            to_act.push(game.to_act());
            game.play(m.seat, &m.mv).unwrap();
        }
        (game, to_act)
    };
    let fault = |seat, at_move| FaultRecord {
        seat,
        kind: FaultKind::Timeout,
        detail: "no move within 1000 ms".into(),
        at_move,
        setup: false,
    };
    // Everything else consistent with the faults and the moves kept.
    let finish = |mut r: referee::GameRecord| {
        let (game, _) = replayed(&r.moves);
        r.final_position = game.position();
        let (outcome, termination) = final_outcome(r.seats.len(), game.outcome().as_ref(), &r.faults);
        (r.outcome, r.termination) = (outcome, termination);
        r
    };
    assert!(
        record.faults.is_empty() && record.moves.len() > 4,
        "a clean game to forge"
    );
    let mut out = Vec::new();

    let winner = record.outcome.ranks.iter().position(|&r| r == 1).unwrap();
    let mut r = record.clone();
    r.faults = vec![fault(winner, r.moves.len())];
    out.push(("a timeout added to the winner of a finished game", finish(r)));

    // Cut after a move where one seat alone was to act, and charge the other.
    let (_, to_act) = replayed(&record.moves);
    let k = (1..record.moves.len())
        .find(|&k| to_act[k].len() == 1)
        .expect("a move with one seat to act");
    let idle = (0..2).find(|&s| !to_act[k].contains(s)).unwrap();
    let mut r = record.clone();
    r.moves.truncate(k);
    r.faults = vec![fault(idle, k)];
    out.push(("a fault by a seat that was not to act", finish(r)));

    let actor = to_act[k].iter().next().unwrap();
    let mut r = record.clone();
    r.moves.truncate(k);
    r.faults = vec![fault(actor, k), fault(actor, k)];
    out.push(("the same seat faulting twice", finish(r)));

    let mut r = record.clone();
    r.moves.truncate(k);
    let r = finish(r);
    let mut cut = r.clone();
    cut.outcome.ranks = vec![1; cut.seats.len()];
    cut.termination = Termination::Normal;
    out.push(("a game cut short with no fault, every seat tied first", cut));

    let mut r = record.clone();
    r.moves.truncate(k);
    r.faults = vec![fault(7, k)];
    // final_outcome cannot rank a seat that does not exist: keep the outcome as is.
    let (game, _) = replayed(&r.moves);
    r.final_position = game.position();
    r.termination = Termination::Forfeit;
    out.push(("a fault by seat 7 of 2", r));
    out
}

pub mod in_process;

/// Headless Chromium for the page tests: CI installs it (`.ci/run`), and there a
/// missing one fails; elsewhere the browser tests are skipped without it.
pub mod browser {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// Chromium's path, if it is here.
    ///
    /// # Panics
    /// Under CI (`CI` set) when it is missing.
    pub fn chromium() -> Option<PathBuf> {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            if let Ok(o) = Command::new("which").arg(name).output()
                && o.status.success()
            {
                return Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
            }
        }
        crate::skipped(
            "the browser test",
            "no chromium on PATH (apt-get install chromium)",
        );
        None
    }

    /// A headless run with its own profile, no first-run or background traffic.
    pub fn headless(browser: &Path, profile: &Path) -> Command {
        let mut c = Command::new(browser);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
        c
    }

    /// What the page's DOM is after its script ran, at `url`.
    ///
    /// # Panics
    /// When the browser fails.
    pub fn dom(browser: &Path, profile: &Path, url: &str) -> String {
        let o = headless(browser, profile)
            .args(["--virtual-time-budget=3000", "--dump-dom", url])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    }

    /// A screenshot of `url` in a window `width` × `height`, to `png`.
    ///
    /// # Panics
    /// When the browser fails or writes no picture.
    pub fn screenshot(browser: &Path, profile: &Path, url: &str, (width, height): (u32, u32), png: &Path) {
        let o = headless(browser, profile)
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--screenshot={}", png.display()))
            .arg(url)
            .output()
            .unwrap();
        assert!(
            o.status.success() && png.exists(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// A Chromium driven over WebDriver (`chromedriver`): pages that need a
    /// person's hand (a form typed in, a file chosen, a button pressed). The
    /// driver and its browser are killed when this is dropped.
    pub struct Driver {
        driver: std::process::Child,
        addr: std::net::SocketAddr,
        session: String,
    }

    impl Driver {
        /// Starts `chromedriver` on a port it picks (read from the line it prints)
        /// and a headless Chromium with its own profile in a `width` × `height`
        /// window. `None`, with the reason said, when either is missing outside CI.
        ///
        /// # Panics
        /// Under CI when either is missing, or when the driver does not start.
        pub fn start(browser: &Path, profile: &Path, (width, height): (u32, u32)) -> Option<Driver> {
            use std::io::BufRead;
            let Ok(mut driver) = Command::new("chromedriver")
                .arg("--port=0")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
            else {
                crate::skipped(
                    "the browser test",
                    "no chromedriver on PATH (apt-get install chromium-driver)",
                );
                return None;
            };
            let mut lines = std::io::BufReader::new(driver.stdout.take().unwrap()).lines();
            let port: u16 = loop {
                let line = lines.next().expect("chromedriver says its port").unwrap();
                if let Some(rest) = line.split("started successfully on port ").nth(1) {
                    break rest.trim_end_matches('.').trim().parse().unwrap();
                }
            };
            // The rest of its output, drained so it never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            let caps = serde_json::json!({ "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": browser.display().to_string(),
                    "args": ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", "--disable-extensions", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        format!("--user-data-dir={}", profile.display()),
                        format!("--window-size={width},{height}")],
                },
            }}});
            let mut d = Driver {
                driver,
                addr,
                session: String::new(),
            };
            let v = d.call("POST", "/session", &caps);
            d.session = v["sessionId"].as_str().expect("a WebDriver session").to_owned();
            Some(d)
        }

        /// One WebDriver command; its `value`.
        fn call(&self, method: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
            let body = match (method, body) {
                ("GET", _) => String::new(),
                (_, serde_json::Value::Null) => "{}".to_owned(),
                _ => body.to_string(),
            };
            let (status, _, text) = crate::http_request(
                self.addr,
                method,
                path,
                &[("Content-Type", "application/json")],
                body.as_bytes(),
            );
            let v: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}: {text}"));
            assert_eq!(status, 200, "WebDriver {method} {path}: {v}");
            v["value"].clone()
        }

        fn in_session(&self, method: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
            self.call(method, &format!("/session/{}{path}", self.session), &body)
        }

        /// Opens `url` and waits for it to load.
        pub fn goto(&self, url: &str) {
            self.in_session("POST", "/url", serde_json::json!({ "url": url }));
        }

        /// The current page's HTML.
        pub fn source(&self) -> String {
            self.in_session("GET", "/source", serde_json::Value::Null)
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }

        /// The current page's HTML once it holds `what` (a click's page may still
        /// be loading when the click returns), at most `tries` looks 50 ms apart.
        ///
        /// # Panics
        /// When it never does.
        pub fn source_with(&self, what: &str, tries: usize) -> String {
            let mut page = String::new();
            for _ in 0..tries {
                page = self.source();
                if page.contains(what) {
                    return page;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            panic!("the page never showed {what}: {page}");
        }

        /// The current page's address.
        pub fn url(&self) -> String {
            self.in_session("GET", "/url", serde_json::Value::Null)
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }

        /// The element `css` selects (the first).
        fn element(&self, css: &str) -> String {
            let v = self.in_session(
                "POST",
                "/element",
                serde_json::json!({ "using": "css selector", "value": css }),
            );
            v.as_object()
                .and_then(|o| o.values().next())
                .and_then(|id| id.as_str())
                .unwrap_or_else(|| panic!("no element {css}"))
                .to_owned()
        }

        /// Types `text` into the element `css` selects (a file input takes a path).
        pub fn type_into(&self, css: &str, text: &str) {
            let el = self.element(css);
            self.in_session(
                "POST",
                &format!("/element/{el}/value"),
                serde_json::json!({ "text": text }),
            );
        }

        /// Clicks the element `css` selects, and waits for what it loads.
        pub fn click(&self, css: &str) {
            let el = self.element(css);
            self.in_session("POST", &format!("/element/{el}/click"), serde_json::json!({}));
        }

        /// Sets the window to `width` × `height`.
        pub fn resize(&self, (width, height): (u32, u32)) {
            self.in_session(
                "POST",
                "/window/rect",
                serde_json::json!({ "width": width, "height": height }),
            );
        }

        /// The page as a PNG, to `png`.
        pub fn screenshot(&self, png: &Path) {
            use base64::Engine;
            let v = self.in_session("GET", "/screenshot", serde_json::Value::Null);
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v.as_str().expect("a screenshot"))
                .expect("base64");
            std::fs::write(png, bytes).unwrap();
        }

        /// Runs `js` (a function body) in the page; what it returns.
        pub fn script(&self, js: &str) -> serde_json::Value {
            self.in_session(
                "POST",
                "/execute/sync",
                serde_json::json!({ "script": js, "args": [] }),
            )
        }

        /// What runs off the page's right edge (tag, class and right edge of each
        /// element that ends beyond the window's width); empty when the page fits.
        pub fn overflowing(&self) -> Vec<String> {
            let v = self.script(
                "const w = window.innerWidth; const out = [];\
                 if (document.documentElement.scrollWidth > w) { out.push('page ' + document.documentElement.scrollWidth + ' > ' + w); }\
                 for (const e of document.querySelectorAll('body *')) {\
                   const r = e.getBoundingClientRect();\
                   if (r.right > w + 0.5) { out.push(e.tagName + '.' + e.className + ' ends at ' + Math.round(r.right)); }\
                 }\
                 return out;",
            );
            v.as_array()
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
                .unwrap_or_default()
        }

        /// Forgets every cookie: the browser is a stranger again.
        pub fn forget_cookies(&self) {
            self.in_session("DELETE", "/cookie", serde_json::Value::Null);
        }
    }

    impl Drop for Driver {
        fn drop(&mut self) {
            if !self.session.is_empty() {
                let _ = crate::http_request(
                    self.addr,
                    "DELETE",
                    &format!("/session/{}", self.session),
                    &[],
                    b"",
                );
            }
            let _ = self.driver.kill();
            let _ = self.driver.wait();
        }
    }

    /// The values of every `name="..."` attribute in `html`.
    pub fn attributes<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
        let key = format!(" {name}=\"");
        html.match_indices(&key)
            .map(|(i, _)| {
                let rest = &html[i + key.len()..];
                &rest[..rest.find('"').unwrap_or(rest.len())]
            })
            .collect()
    }
}

/// A child process killed and reaped when dropped (a test that fails midway
/// leaves no server or worker behind).
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `ladder serve` of the built binary on loopback, on ports the system chose:
/// its gRPC URL and its pages' address, read from the lines it prints once it
/// listens (no polling). Killed and reaped when dropped.
pub struct LadderServer {
    /// `http://127.0.0.1:PORT`, the gRPC API.
    pub url: String,
    /// The web pages.
    pub web: std::net::SocketAddr,
    /// The host's metrics port, when `extra` asked for one (`--metrics`).
    pub metrics: Option<std::net::SocketAddr>,
    child: std::process::Child,
}

impl LadderServer {
    /// Starts `ladder serve --db DB` with the admin token `admin_token` and `extra`
    /// arguments; returns once both ports listen.
    ///
    /// # Panics
    /// If the server does not start.
    pub fn start(db: &str, admin_token: &str, extra: &[&str]) -> LadderServer {
        LadderServer::start_at(db, admin_token, "127.0.0.1:0", extra)
    }

    /// [`LadderServer::start`] with its gRPC port at `listen`: a server started
    /// again where a worker already looks for it (the port the one before it
    /// got, now free).
    ///
    /// # Panics
    /// If the server does not start.
    pub fn start_at(db: &str, admin_token: &str, listen: &str, extra: &[&str]) -> LadderServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new(binary("ladder"))
            .args(["serve", "--db", db, "--listen", listen, "--http", "127.0.0.1:0"])
            .args(extra)
            .env("ASTRAGAL_ADMIN_TOKEN", admin_token)
            .current_dir(workspace_root())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ladder serve starts");
        let mut lines = std::io::BufReader::new(child.stderr.take().expect("piped")).lines();
        let mut said = String::new();
        let (mut url, mut web, mut metrics) = (None, None, None);
        while url.is_none() || web.is_none() {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("ladder serve ended before it listened: {said}");
            };
            said.push_str(&line);
            said.push('\n');
            if let Some(addr) = line.strip_prefix("ladder: gRPC on ") {
                url = Some(format!("http://{addr}"));
            } else if let Some(addr) = line.strip_prefix("ladder: web on http://") {
                web = Some(addr.parse().expect("an address"));
            } else if let Some(rest) = line.strip_prefix("ladder: metrics on http://") {
                metrics = Some(rest.trim_end_matches("/metrics").parse().expect("an address"));
            }
        }
        // Keep reading its log so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        LadderServer {
            url: url.expect("read above"),
            web: web.expect("read above"),
            metrics,
            child,
        }
    }
}

impl LadderServer {
    /// Sends SIGTERM and waits for the server to exit; whether it exited well.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("a pid"));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        self.child.wait().expect("the server is reaped")
    }
}

impl Drop for LadderServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 GET on loopback: the status and the body.
///
/// # Panics
/// If the server does not answer with HTTP.
pub fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let (status, _, body) = http_get_with_head(addr, path);
    (status, body)
}

/// As [`http_get`], with the answer's head (status line and headers) too.
///
/// # Panics
/// If the server does not answer with HTTP.
pub fn http_get_with_head(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    http_request(addr, "GET", path, &[], b"")
}

/// One HTTP/1.1 request to `addr` (`Host: localhost`, the connection closed after
/// it) with extra `headers` and `body`; the answer's status, head and body.
///
/// # Panics
/// If the server does not answer with HTTP.
pub fn http_request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("the server listens");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if method != "GET" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("a request");
    s.write_all(body).expect("a request's body");
    // The head, then a body of its Content-Length (a server may keep the
    // connection open after it), or chunked, or to the connection's end.
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = s.read(&mut buf).expect("an answer");
        assert!(n > 0, "the server closed before its answer's head ended");
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut body = raw.split_off(head_end + 4);
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        while body.len() < len {
            let n = s.read(&mut buf).expect("an answer's body");
            assert!(n > 0, "the server closed before its answer's body ended");
            body.extend_from_slice(&buf[..n]);
        }
        body.truncate(len);
    } else {
        s.read_to_end(&mut body).expect("an answer's body");
        if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            body = dechunked(&body);
        }
    }
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

/// A chunked body's data.
fn dechunked(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..line_end])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = line_end + 2;
        let end = (start + size).min(raw.len());
        out.extend_from_slice(&raw[start..end]);
        raw = raw.get(end + 2..).unwrap_or(&[]);
    }
    out
}

/// What a finished program wrote, stdout then stderr.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs the `ladder` program with `args` from the workspace's root, with none
/// of the tokens of this process's environment and `envs` on top.
pub fn ladder(args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(binary("ladder"));
    cmd.args(args)
        .current_dir(workspace_root())
        .env_remove("ASTRAGAL_ADMIN_TOKEN")
        .env_remove("ASTRAGAL_WORKER_TOKEN")
        .env_remove("ASTRAGAL_AUTHOR_TOKEN");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("ladder runs")
}

/// `ladder admin --server URL ARGS` with the admin token; what it printed (it
/// must succeed).
pub fn ladder_admin(url: &str, admin_token: &str, args: &[&str]) -> String {
    let o = ladder(
        &[&["admin", "--server", url], args].concat(),
        &[("ASTRAGAL_ADMIN_TOKEN", admin_token)],
    );
    assert!(o.status.success(), "admin {args:?}: {}", output_text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The red team's attack bots, read from their stderr logs: `tests/src/bin/attack_bot.rs`
/// and the uploaded `tests/data/relay_bot.py` write one `ATTACK name: verdict ...`
/// line a game.
pub mod attacks {
    use std::path::Path;

    /// The lines of the logs in `logs` that start with `prefix` (`ATTACK read`,
    /// or `ATTACK ` for every attack).
    pub fn reports(logs: &Path, prefix: &str) -> Vec<String> {
        let mut reports = Vec::new();
        for entry in std::fs::read_dir(logs).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            reports.extend(text.lines().filter(|l| l.starts_with(prefix)).map(str::to_owned));
        }
        reports
    }

    /// Of the reports of `attack` (`relay`, `cache`): in how many games it heard
    /// the other army's secret first roll, and how many games reported.
    pub fn hits_of(reports: &[String], attack: &str) -> (usize, usize) {
        let prefix = format!("ATTACK {attack}:");
        let mine: Vec<&String> = reports.iter().filter(|r| r.starts_with(&prefix)).collect();
        (
            mine.iter().filter(|r| r.contains(": escaped")).count(),
            mine.len(),
        )
    }

    /// Hits the relay may score by chance with no channel at all: another game alive
    /// in the same span would have to hold the same two secret first rolls (10 dice
    /// each), swapped, under a 12-bit key of the right one; about 1 in 10^6 a word,
    /// so well under one hit in a hundred runs of these tests. One is allowed, never
    /// more.
    pub const RELAY_CHANCE_HITS: usize = 1;

    /// Hits the `cache` attack may score by chance in 64 games with no channel
    /// at all: its words stay in the page cache from game to game and run to
    /// run, under 64 keys, so each game hears some other game's word, which
    /// names the other army's roll only if two first rolls (10 dice each) were
    /// the same: about 1 in 800 a game, so 0.08 hits a test; at most two are
    /// allowed (three or more: about 1 in 10,000 runs).
    pub const CACHE_CHANCE_HITS: usize = 2;

    /// Hits the `signal` attack may score by chance in 20 games with no channel
    /// at all, once its processes are kept from game to game (games dealt
    /// apart): a kept process holds a 16-bit word under a slot for every game
    /// it played, and reads its own words back; one of 20 has been seen. A live
    /// channel under mirrored dice hears 20 of 20.
    pub const SIGNAL_CHANCE_HITS: usize = 5;

    /// A second run of a relay bot on this machine, alive until dropped: a
    /// `referee match` of Spartan Yahtzee between `relay` and `opponent` (bot
    /// commands), at sandbox `level`. Its processes copy every word the relay's
    /// other processes on the machine spell, so without the rotation gate a word
    /// spelled in one rotation of a group is there to be read in the next,
    /// whatever the timing of the run under test.
    pub struct SecondRun {
        child: std::process::Child,
    }

    impl SecondRun {
        /// Starts the run, its logs in `logs`; returns once its relay has
        /// reported a game (so its processes are alive and copying).
        ///
        /// # Panics
        /// If the referee cannot start or the run ends first.
        pub fn start(relay: &str, opponent: &str, level: &str, logs: &Path) -> SecondRun {
            let mut child = std::process::Command::new(crate::binary("referee"))
                .args([
                    "match",
                    "--game",
                    "spartan",
                    "--movetime",
                    "2000",
                    "--games",
                    "100000",
                ])
                .args([
                    "--seed",
                    "5",
                    "--sandbox",
                    level,
                    "--bot",
                    relay,
                    "--bot",
                    opponent,
                ])
                .arg("--log-dir")
                .arg(logs)
                .current_dir(crate::workspace_root())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("the referee runs");
            // Under way once its relay has reported a game: the report is a line
            // in a file, looked for every few milliseconds.
            while hits_of(&reports(logs, "ATTACK relay"), "relay").1 == 0 {
                if let Some(status) = child.try_wait().expect("the referee can be waited for") {
                    panic!("the second run ended before its first game: {status}");
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            SecondRun { child }
        }
    }

    impl Drop for SecondRun {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The author's pages driven over plain HTTP: signing in, reading a page with
/// the session, a form posted with its CSRF token.
pub mod author_pages {
    use super::http_request;
    use std::net::SocketAddr;

    /// Signs in with `token` through the form; the session cookie (`name=value`) and
    /// the `Set-Cookie` header it came in.
    pub fn sign_in(web: SocketAddr, token: &str) -> (String, String) {
        let (status, head, body) = http_request(
            web,
            "POST",
            "/author/sign-in",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Origin", "http://localhost"),
            ],
            format!("token={token}").as_bytes(),
        );
        assert_eq!(status, 303, "signing in: {head}\n{body}");
        let set = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
            .expect("a session cookie")
            .to_owned();
        let cookie = set["set-cookie:".len()..]
            .trim()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        (cookie, set)
    }

    /// A page's body as the holder of `cookie` (none: a stranger) gets it.
    pub fn get_as(web: SocketAddr, cookie: Option<&str>, path: &str) -> (u16, String) {
        let headers: Vec<(&str, &str)> = cookie.map(|c| ("Cookie", c)).into_iter().collect();
        let (status, _, body) = http_request(web, "GET", path, &headers, b"");
        (status, body)
    }

    /// The CSRF token on a page's forms.
    pub fn csrf_on(page: &str) -> String {
        let at = page
            .find("name=\"csrf\" value=\"")
            .expect("a form with a CSRF token")
            + 19;
        page[at..at + 64].to_owned()
    }

    /// A form posted as the holder of `cookie`, from `origin`.
    pub fn post_form(web: SocketAddr, cookie: &str, origin: &str, path: &str, form: &str) -> (u16, String) {
        let (status, head, body) = http_request(
            web,
            "POST",
            path,
            &[
                ("Cookie", cookie),
                ("Origin", origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            form.as_bytes(),
        );
        (status, format!("{head}\n{body}"))
    }
}
