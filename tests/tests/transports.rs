//! One conformance suite, two transports: the same bots, games and faults over
//! stdin/stdout and over gRPC must give the same results; and the faults only a
//! network has (an unreachable endpoint, a server that dies) end as recorded
//! faults too, never as a hang.

use astragal_tests::{GrpcServer, binary};
use bots::grpc::BotFactory;
use bots::{Bot, View};
use referee::game::SeatSetup;
use referee::{BotSpec, FaultKind, GameRecord, Termination};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A gRPC server for bots made by `make` (the reference `bots::grpc` service).
fn serve(make: BotFactory) -> GrpcServer {
    GrpcServer::start(|listener| bots::grpc::serve_on(listener, make, std::future::pending()))
}

fn play(game: &str, seats: &[SeatSetup], seed: u64) -> GameRecord {
    astragal_tests::play_guarded(game, seats, seed)
}

/// The built-in bots with options that keep the searches short.
const BOTS: &[(&str, &[(&str, &str)])] = &[
    ("random", &[("seed", "7")]),
    ("greedy", &[("seed", "7"), ("samples", "2")]),
    ("mcts", &[("seed", "7"), ("iterations", "40")]),
];

#[test]
fn every_builtin_bot_plays_the_same_games_in_process_over_stdio_and_over_grpc() {
    for &(name, opts) in BOTS {
        let options: Vec<(String, String)> = opts
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let server = serve({
            let options = options.clone();
            Arc::new(move || bots::builtin(name, &options).unwrap())
        });
        let flags: String = opts.iter().map(|(k, v)| format!(" --opt {k}={v}")).collect();
        let stdio = SeatSetup::new(BotSpec::Process {
            command: format!("{} --bot {name}{flags}", binary("astragal-bot").display()),
        });
        let in_process = SeatSetup::new(BotSpec::Builtin {
            name: name.into(),
            options: options.clone(),
        });
        let first = SeatSetup::new(BotSpec::parse("builtin:first").unwrap());
        for game in engine::GAME_IDS {
            let seats = engine::game_info(game).unwrap().default_seats;
            for seed in [1, 2] {
                let over = |bot: &SeatSetup| -> Vec<SeatSetup> {
                    (0..seats)
                        .map(|s| if s == 0 { bot.clone() } else { first.clone() })
                        .collect()
                };
                let a = play(game, &over(&stdio), seed);
                let b = play(game, &over(&server.spec()), seed);
                let c = play(game, &over(&in_process), seed);
                for r in [&a, &b, &c] {
                    assert!(r.faults.is_empty(), "{name} {game}: {:?}", r.faults);
                }
                let moves =
                    |r: &GameRecord| r.moves.iter().map(|m| (m.seat, m.mv.clone())).collect::<Vec<_>>();
                assert_eq!(
                    moves(&a),
                    moves(&b),
                    "{name} {game} seed {seed}: stdio and gRPC differ"
                );
                assert_eq!(
                    moves(&a),
                    moves(&c),
                    "{name} {game} seed {seed}: stdio and in-process differ"
                );
                assert_eq!(a.outcome, b.outcome);
                referee::replay::replay(&b).expect("replays");
            }
        }
    }
}

/// A bot that misbehaves from its `after`-th request on.
struct Misbehaving {
    kind: &'static str,
    calls: Arc<AtomicUsize>,
    after: usize,
}

impl Bot for Misbehaving {
    fn name(&self) -> String {
        format!("misbehaving-{}", self.kind)
    }
    fn reads_observations(&self) -> bool {
        false
    }
    fn choose(&mut self, view: &View<'_>) -> String {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n >= self.after {
            match self.kind {
                "sleep" => std::thread::sleep(Duration::from_secs(5)),
                "slow" => std::thread::sleep(Duration::from_millis(700)),
                "illegal" => return "fly-to-the-moon".into(),
                _ => {}
            }
        }
        view.legal[0].to_owned()
    }
}

fn misbehaving(kind: &'static str, after: usize) -> (BotFactory, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    (
        Arc::new(move || {
            Box::new(Misbehaving {
                kind,
                calls: c.clone(),
                after,
            }) as Box<dyn Bot>
        }),
        calls,
    )
}

fn two_seat_fault(server: &GrpcServer, kind: FaultKind) -> GameRecord {
    let rec = play(
        "ur",
        &[
            SeatSetup::new(BotSpec::parse("builtin:first").unwrap()),
            server.spec(),
        ],
        3,
    );
    assert_eq!(rec.faults.len(), 1, "{:?}", rec.faults);
    assert_eq!(
        (rec.faults[0].seat, rec.faults[0].kind),
        (1, kind),
        "{}",
        rec.faults[0].detail
    );
    assert_eq!(rec.termination, Termination::Forfeit);
    assert_eq!(rec.outcome.ranks, vec![1, 2]);
    rec
}

#[test]
fn grpc_deadline_exceeded_and_a_slow_server_time_out() {
    let (make, _) = misbehaving("sleep", 2);
    let rec = two_seat_fault(&serve(make), FaultKind::Timeout);
    assert!(rec.faults[0].at_move >= 2);
    let (make, _) = misbehaving("slow", 0);
    two_seat_fault(&serve(make), FaultKind::Timeout);
}

#[test]
fn grpc_reply_that_is_not_a_legal_move() {
    let (make, _) = misbehaving("illegal", 1);
    let rec = two_seat_fault(&serve(make), FaultKind::Illegal);
    assert!(
        rec.faults[0].detail.contains("fly-to-the-moon"),
        "{}",
        rec.faults[0].detail
    );
}

#[test]
fn grpc_endpoint_unreachable_at_start() {
    // A port nobody listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let spec = SeatSetup::new(BotSpec::parse(&format!("grpc://127.0.0.1:{port}")).unwrap());
    let rec = play(
        "ur",
        &[SeatSetup::new(BotSpec::parse("builtin:first").unwrap()), spec],
        3,
    );
    assert_eq!(
        (rec.faults[0].seat, rec.faults[0].kind),
        (1, FaultKind::Spawn),
        "{}",
        rec.faults[0].detail
    );
    assert!(
        rec.faults[0].detail.contains("cannot reach"),
        "{}",
        rec.faults[0].detail
    );
    assert!(rec.moves.is_empty());
}

#[test]
fn grpc_server_dying_mid_game_is_a_crash() {
    // The server's bot tells a watcher when it has answered three requests; the
    // watcher then kills the server while the game goes on.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let make: BotFactory = Arc::new(move || {
        Box::new(Misbehaving {
            kind: "none",
            calls: c.clone(),
            after: usize::MAX,
        }) as Box<dyn Bot>
    });
    let mut server = serve(make);
    let spec = server.spec();
    let game = std::thread::spawn(move || {
        play(
            "cuatto",
            &[SeatSetup::new(BotSpec::parse("builtin:first").unwrap()), spec],
            4,
        )
    });
    while calls.load(Ordering::SeqCst) < 3 {
        std::thread::sleep(Duration::from_millis(1));
    }
    server.kill();
    let rec = game.join().unwrap();
    assert_eq!(rec.faults.len(), 1, "{:?}", rec.faults);
    assert_eq!(rec.faults[0].seat, 1);
    assert!(
        matches!(rec.faults[0].kind, FaultKind::Crash | FaultKind::Timeout),
        "{:?}",
        rec.faults[0]
    );
    assert_eq!(rec.outcome.ranks, vec![1, 2]);
}

/// A bot that answers only once the other seat's request of the same step has
/// reached the server too (or after 5 s, far past the move's deadline).
struct Rendezvous {
    arrived: Arc<(std::sync::Mutex<u64>, std::sync::Condvar)>,
}

impl Bot for Rendezvous {
    fn name(&self) -> String {
        "rendezvous".into()
    }
    fn reads_observations(&self) -> bool {
        false
    }
    fn choose(&mut self, view: &View<'_>) -> String {
        let (count, bell) = &*self.arrived;
        let mut n = count.lock().unwrap();
        let mine = *n;
        *n += 1;
        if mine % 2 == 0 {
            let _ = bell
                .wait_timeout_while(n, Duration::from_secs(5), |n| *n == mine + 1)
                .unwrap();
        } else {
            bell.notify_all();
        }
        view.legal[0].to_owned()
    }
}

#[test]
fn simultaneous_grpc_seats_both_think_while_each_is_timed_alone() {
    // Spartan asks both seats at every step. Each bot waits for the other's
    // request before it answers: had the referee sent one request only after the
    // other's answer, the first would wait out its deadline.
    let arrived = Arc::new((std::sync::Mutex::new(0), std::sync::Condvar::new()));
    let a = arrived.clone();
    let server = serve(Arc::new(move || {
        Box::new(Rendezvous { arrived: a.clone() }) as Box<dyn Bot>
    }));
    let rec = play("spartan", &[server.spec(), server.spec()], 5);
    assert!(rec.faults.is_empty(), "{:?}", rec.faults);
    assert_eq!(rec.termination, Termination::Normal);
    assert_eq!(*arrived.0.lock().unwrap() as usize, rec.moves.len());
    assert!(rec.moves.len() >= 2, "{} moves", rec.moves.len());
}

/// Answers at once, except that its first move takes `pause`.
struct PausesOnce {
    paused: Arc<std::sync::atomic::AtomicBool>,
    pause: Duration,
}

impl Bot for PausesOnce {
    fn name(&self) -> String {
        "pauses-once".into()
    }
    fn reads_observations(&self) -> bool {
        false
    }
    fn choose(&mut self, view: &View<'_>) -> String {
        if !self.paused.swap(true, Ordering::SeqCst) {
            std::thread::sleep(self.pause);
        }
        view.legal[0].to_owned()
    }
}

#[test]
fn a_grpc_seat_keeps_answering_its_servers_pings_while_the_other_seat_thinks() {
    // The strict server pings its connections every 20 ms and drops one that has
    // not answered a ping within 1 s; the other seat's first move takes 1.6 s.
    let strict_server = GrpcServer::start(|listener| {
        tonic::transport::Server::builder()
            .http2_keepalive_interval(Some(Duration::from_millis(20)))
            .http2_keepalive_timeout(Some(Duration::from_secs(1)))
            .add_service(proto::grpc::bot_server::BotServer::new(
                bots::grpc::BotService::new(Arc::new(|| bots::builtin("first", &[]).unwrap()), "strict"),
            ))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
    });
    let strict = strict_server.spec();
    let play_with = |keep: Duration| {
        let paused = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let slow = serve(Arc::new(move || {
            Box::new(PausesOnce {
                paused: paused.clone(),
                pause: Duration::from_millis(1600),
            }) as Box<dyn Bot>
        }));
        let limits = referee::Limits {
            tc: referee::TimeControl::MoveTime(Duration::from_secs(5)),
            remote_keep: keep,
            ..astragal_tests::fast_limits()
        };
        let setup = referee::GameSetup {
            game: "ur".into(),
            options: vec![],
            seed: 9,
            position: None,
            pairing: None,
        };
        let seats = [slow.spec(), strict.clone()];
        referee::play_game(&setup, &seats, &limits, &referee::LogPlace::default()).unwrap()
    };
    // Kept: the strict seat's connection is driven while the other seat thinks.
    let rec = play_with(Duration::ZERO);
    assert!(rec.faults.is_empty(), "{:?}", rec.faults);
    assert_eq!(rec.termination, Termination::Normal);
    // Not kept for longer than the pause: the server drops the silent connection,
    // and the strict seat's next call fails (what the keeper is for).
    let rec = play_with(Duration::from_secs(3600));
    assert_eq!(rec.faults.len(), 1, "{:?}", rec.faults);
    assert_eq!(
        (rec.faults[0].seat, rec.faults[0].kind),
        (1, FaultKind::Crash),
        "{:?}",
        rec.faults
    );
}

#[test]
fn check_bot_times_a_grpc_bot() {
    let server = serve(Arc::new(|| bots::builtin("random", &[]).unwrap()));
    let report = referee::check::check_bot(&server.spec(), "ur", &[], &astragal_tests::fast_limits(), 2);
    assert!(report.passed(), "{}", report.text());
    let speed = report
        .items
        .iter()
        .find(|i| i.check == "speed")
        .expect("a speed line");
    let ms: f64 = speed
        .detail
        .split(" ms per move")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ms > 0.0, "a gRPC round trip takes time: {}", speed.detail);
}
