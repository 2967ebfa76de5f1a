//! Bots served by their authors from their own machines, over `grpcs://`: the
//! referee verifies the server's certificate before it sends anything, and sends
//! the seat's secret with every call; the author's server refuses a caller without
//! it. What the server is told: the game and the seat, nothing of the host.

use bots::grpc::BotService;
use proto::grpc::bot_server::BotServer;
use referee::game::SeatSetup;
use referee::{BotSpec, FaultKind, GameRecord, GameSetup, Limits, LogPlace, Termination};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "the-authors-own-secret-42";

/// Every call's metadata keys as the author's server saw them, and whether it
/// carried the secret.
#[derive(Default)]
struct Seen {
    keys: Vec<String>,
    calls: usize,
    with_secret: usize,
}

/// The author's server: a random bot over TLS with `cert` (plain HTTP/2
/// without), refusing every call without `Bearer SECRET`. Its URL and what it saw.
fn authors_server(
    runtime: &tokio::runtime::Runtime,
    cert: Option<&rcgen::CertifiedKey<rcgen::KeyPair>>,
) -> (String, Arc<Mutex<Seen>>) {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let scheme = if cert.is_some() { "grpcs" } else { "grpc" };
    let url = format!("{scheme}://localhost:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = seen.clone();
    let check = move |req: tonic::Request<()>| {
        let mut s = log.lock().unwrap();
        s.calls += 1;
        for k in req.metadata().keys() {
            let k = match k {
                tonic::metadata::KeyRef::Ascii(k) => k.as_str().to_owned(),
                tonic::metadata::KeyRef::Binary(k) => k.as_str().to_owned(),
            };
            if !s.keys.contains(&k) {
                s.keys.push(k);
            }
        }
        match req.metadata().get("authorization").and_then(|v| v.to_str().ok()) {
            Some(v) if v == format!("Bearer {SECRET}") => {
                s.with_secret += 1;
                Ok(req)
            }
            _ => Err(tonic::Status::unauthenticated("not the ladder")),
        }
    };
    let make: bots::grpc::BotFactory = Arc::new(|| bots::builtin("random", &[]).unwrap());
    let service = BotServer::with_interceptor(BotService::new(make, "an author"), check);
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let mut builder = tonic::transport::Server::builder();
    if let Some(cert) = cert {
        let identity =
            tonic::transport::Identity::from_pem(cert.cert.pem(), cert.signing_key.serialize_pem());
        builder = builder
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .unwrap();
    }
    runtime.spawn(builder.add_service(service).serve_with_incoming(incoming));
    (url, seen)
}

/// One game of the author's bot (seat 0, with `secret`) against a built-in,
/// trusting `ca`.
fn play(url: &str, secret: Option<&str>, ca: Option<&str>) -> GameRecord {
    let mut remote = SeatSetup::new(BotSpec::parse(url).unwrap());
    if let Some(s) = secret {
        remote
            .env
            .push((referee::session::BOT_SECRET_ENV.into(), s.into()));
    }
    let seats = vec![remote, SeatSetup::new(BotSpec::parse("builtin:first").unwrap())];
    let limits = Limits {
        grpc_ca: ca.map(|pem| Arc::from(pem.as_bytes())),
        handshake: Duration::from_secs(10),
        ..astragal_tests::fast_limits()
    };
    let setup = GameSetup {
        game: "ur".into(),
        options: vec![],
        seed: 11,
        position: None,
        pairing: None,
    };
    // The referee's gRPC runtime blocks its caller: a plain thread, not this test's.
    std::thread::spawn(move || referee::play_game(&setup, &seats, &limits, &LogPlace::default()).unwrap())
        .join()
        .unwrap()
}

/// Attack, both ways: a caller without the secret is refused by the author's
/// server, and a server whose certificate no trusted authority signed (a man in
/// the middle, or the wrong host) is refused by the referee before it is sent
/// anything. With both right, the game is played, every call carrying the secret
/// and nothing else of the host's.
#[test]
fn a_grpcs_bot_gets_the_secret_over_verified_tls_and_nothing_else() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let ca = cert.cert.pem();
    let (url, seen) = authors_server(&runtime, Some(&cert));

    // Right certificate, right secret: a whole game.
    let rec = play(&url, Some(SECRET), Some(&ca));
    assert_eq!(rec.termination, Termination::Normal, "{:?}", rec.faults);
    assert!(rec.moves.iter().any(|m| m.seat == 0 && !m.fallback));
    {
        let s = seen.lock().unwrap();
        assert!(
            s.calls > 2 && s.with_secret == s.calls,
            "{} calls, {} with the secret",
            s.calls,
            s.with_secret
        );
        // gRPC's own headers and the secret: no worker name, token or address.
        for k in &s.keys {
            assert!(
                [
                    "authorization",
                    "te",
                    "content-type",
                    "user-agent",
                    "grpc-timeout",
                    "grpc-accept-encoding",
                    "grpc-encoding"
                ]
                .contains(&k.as_str()),
                "the bot's server was told {k}"
            );
        }
    }

    // A wrong secret: the author's server refuses it; the seat is charged.
    let calls_before = seen.lock().unwrap().calls;
    let rec = play(&url, Some("a-guess"), Some(&ca));
    let f = rec
        .faults
        .iter()
        .find(|f| f.seat == 0)
        .expect("the refused seat is charged");
    assert_eq!(f.kind, FaultKind::Handshake, "{}", f.detail);
    assert_eq!(rec.outcome.ranks[0], 2);
    let s = seen.lock().unwrap();
    assert!(s.calls > calls_before && s.with_secret < s.calls);
    drop(s);

    // A certificate of another authority: the referee refuses the server before
    // any call reaches it.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let calls_before = seen.lock().unwrap().calls;
    let rec = play(&url, Some(SECRET), Some(&other.cert.pem()));
    let f = rec
        .faults
        .iter()
        .find(|f| f.seat == 0)
        .expect("the untrusted seat is charged");
    assert_eq!(f.kind, FaultKind::Spawn, "{}", f.detail);
    // Nor the system's roots, which never signed it.
    let rec = play(&url, Some(SECRET), None);
    assert_eq!(
        rec.faults.iter().find(|f| f.seat == 0).map(|f| f.kind),
        Some(FaultKind::Spawn)
    );
    assert_eq!(
        seen.lock().unwrap().calls,
        calls_before,
        "a call reached an unverified server"
    );

    // Over plain grpc:// the secret is never sent: the same server without TLS
    // is called, and sees no secret (so it refuses the referee).
    let (plain, seen_plain) = authors_server(&runtime, None);
    let rec = play(&plain, Some(SECRET), Some(&ca));
    assert!(rec.faults.iter().any(|f| f.seat == 0));
    let s = seen_plain.lock().unwrap();
    assert!(
        s.calls > 0 && s.with_secret == 0,
        "{} calls, {} with the secret in clear",
        s.calls,
        s.with_secret
    );
    runtime.shutdown_background();
}

/// Through the ladder: the host registers an author's `grpcs://` bot with its
/// secret; a worker that trusts the author's certificate authority plays it, and
/// one given another authority refuses the server, so the bot is charged and the
/// server is called by no one.
#[test]
fn a_worker_plays_a_grpcs_bot_only_behind_a_certificate_it_trusts() {
    use astragal_tests::in_process::{InProcessServer, config};
    use ladder::app;
    use proto::ladder::*;
    let authors_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (url, seen) = authors_server(&authors_rt, Some(&cert));
    let ca: Arc<[u8]> = Arc::from(cert.cert.pem().as_bytes());
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let other_ca: Arc<[u8]> = Arc::from(other.cert.pem().as_bytes());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        const ADMIN: &str = "admin-grpcs";
        const WORKER: &str = "worker-grpcs";
        let store = astragal_tests::test_stores("grpcs_ladder").await.remove(0);
        let db = ladder::store::Store::open(&store.url).await.unwrap();
        db.workers()
            .add_worker("w1", &app::token_hash(WORKER))
            .await
            .unwrap();
        let serving = InProcessServer::start(db, config(ADMIN, Default::default()), false).await;
        let ladder_url = serving.url.clone();
        let mut admin = ladder::worker::connect(&ladder_url, ADMIN, None).await.unwrap();
        for (name, spec, env) in [
            (
                "remote",
                url.as_str(),
                vec![EnvVar {
                    key: referee::session::BOT_SECRET_ENV.into(),
                    value: SECRET.into(),
                }],
            ),
            ("first", "builtin:first", vec![]),
        ] {
            admin
                .register_bot(RegisterBotRequest {
                    name: name.into(),
                    game: "ur".into(),
                    spec: spec.into(),
                    env,
                })
                .await
                .unwrap();
        }
        let worker = |ca: Arc<[u8]>| ladder::worker::WorkerConfig {
            server: ladder_url.clone(),
            token: WORKER.into(),
            ca_pem: None,
            name: "w1".into(),
            concurrency: 1,
            batch: 1,
            max_groups: None,
            exit_when_idle: true,
            log_dir: None,
            sandbox: referee::sandbox::Sandbox::default(),
            progress: false,
            stop_within: Duration::ZERO,
            uploads: ladder::worker::WorkerUploads {
                grpc_ca: Some(ca),
                // The authors' bots of this test are served on loopback.
                remote_allow: vec!["127.0.0.0/8".parse().unwrap()],
                ..Default::default()
            },
        };
        let reader = admin.clone();
        let records = |c: &'static str| {
            let mut admin = reader.clone();
            async move {
                admin
                    .game_records(GameRecordsRequest {
                        competition: c.into(),
                        after_id: 0,
                        limit: 10,
                    })
                    .await
                    .unwrap()
                    .into_inner()
                    .records
                    .iter()
                    .map(|r| serde_json::from_str::<GameRecord>(&r.json).unwrap())
                    .collect::<Vec<_>>()
            }
        };
        for (name, ca, trusted) in [("trusted", ca, true), ("untrusted", other_ca, false)] {
            admin
                .open_competition(OpenCompetitionRequest {
                    name: name.into(),
                    game: "ur".into(),
                    max_games: 2,
                    movetime_ms: 2000,
                    ..Default::default()
                })
                .await
                .unwrap();
            let calls_before = seen.lock().unwrap().calls;
            let played = ladder::worker::run(worker(ca), std::future::pending())
                .await
                .unwrap();
            assert_eq!(played, 1, "{name}");
            admin
                .close_competition(CloseCompetitionRequest { name: name.into() })
                .await
                .unwrap();
            for rec in records(name).await {
                let seat = rec
                    .seats
                    .iter()
                    .position(|s| s.entrant.as_deref() == Some("remote"))
                    .unwrap();
                let fault = rec.faults.iter().find(|f| f.seat == seat);
                if trusted {
                    assert!(fault.is_none(), "{fault:?}");
                    assert!(rec.moves.iter().any(|m| m.seat == seat && !m.fallback));
                } else {
                    assert_eq!(fault.map(|f| f.kind), Some(FaultKind::Spawn), "{:?}", rec.faults);
                }
            }
            let s = seen.lock().unwrap();
            if trusted {
                assert!(s.calls > calls_before && s.with_secret == s.calls);
            } else {
                assert_eq!(
                    s.calls, calls_before,
                    "a worker called a server it does not trust"
                );
            }
        }

        // Self-service: an author uploads only a manifest naming where the bot is
        // served, with its secret; a worker checks it there and it plays.
        let db = ladder::store::Store::open(&store.url).await.unwrap();
        db.authors()
            .add_author("alice", &app::token_hash("alice-grpcs-token"), 3)
            .await
            .unwrap();
        admin
            .set_bot_status(SetBotStatusRequest {
                name: "remote".into(),
                status: BotStatus::Disabled.into(),
                reason: String::new(),
            })
            .await
            .unwrap();
        let mut alice = ladder::worker::connect(&ladder_url, "alice-grpcs-token", None)
            .await
            .unwrap();
        let upload = |manifest: String| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("astragal.toml"), manifest).unwrap();
            let bytes = ladder::submission::pack_folder(dir.path()).unwrap();
            vec![UploadChunk { data: bytes }]
        };
        let manifest = |run: &str, extra: &str| {
            format!("name = \"served\"\ngames = [\"ur\"]\nruntime = \"remote\"\nrun = \"{run}\"\n{extra}")
        };
        for (why, text) in [
            ("in clear", manifest(&url.replacen("grpcs://", "grpc://", 1), "")),
            ("with a build", manifest(&url, "build = \"make\"\n")),
            ("a secret with a space", manifest(&url, "secret = \"a b\"\n")),
        ] {
            let refused = alice.submit(tokio_stream::iter(upload(text))).await.unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{why}: {refused:?}");
            assert!(
                refused.message().contains("remote bot"),
                "{why}: {}",
                refused.message()
            );
        }
        alice
            .submit(tokio_stream::iter(upload(manifest(
                &url,
                &format!("secret = \"{SECRET}\"\n"),
            ))))
            .await
            .unwrap();
        let calls_before = seen.lock().unwrap().calls;
        let mut checker = worker(Arc::from(cert.cert.pem().as_bytes()));
        checker.uploads.runtimes = vec!["remote".into()];
        ladder::worker::run(checker.clone(), std::future::pending())
            .await
            .unwrap();
        let mine = alice.my_bots(MyBotsRequest {}).await.unwrap().into_inner().bots;
        assert_eq!(mine[0].status, i32::from(BotStatus::Active), "{mine:?}");
        admin
            .open_competition(OpenCompetitionRequest {
                name: "self".into(),
                game: "ur".into(),
                max_games: 2,
                movetime_ms: 2000,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(
            ladder::worker::run(checker, std::future::pending())
                .await
                .unwrap(),
            1
        );
        for rec in records("self").await {
            let seat = rec
                .seats
                .iter()
                .position(|s| s.entrant.as_deref() == Some("served"))
                .unwrap();
            assert!(rec.faults.is_empty(), "{:?}", rec.faults);
            assert!(rec.moves.iter().any(|m| m.seat == seat && !m.fallback));
        }
        let (calls, with_secret) = {
            let s = seen.lock().unwrap();
            (s.calls, s.with_secret)
        };
        assert!(calls > calls_before && with_secret == calls);
        serving.stop().await;
    });
    authors_rt.shutdown_background();
}
