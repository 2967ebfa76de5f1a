//! The ladder service through its gRPC API, on SQLite and (with ASTRAGAL_PG_URL) on
//! PostgreSQL: tokens, bad input, a full run by a worker, forged records, expired
//! leases, and ratings recomputed from the records alone.

use astragal_tests::in_process::{InProcessServer as Server, config, lease_groups_ready, lease_ready};
use astragal_tests::test_stores;
use ladder::app::{self, ServiceConfig};
use ladder::clock::{Clock, system_ms};
use ladder::serve::{Tls, Transport};
use ladder::store::Store;
use ladder::worker::{self, Client, WorkerConfig};
use proto::ladder::*;
use std::time::Duration;
use tonic::Code;

const ADMIN: &str = "admin-token-1";
/// The token of worker `w1`, which every test's store knows.
const WORKER: &str = "worker-token-1";

async fn start(db: &str, lease: Duration) -> Server {
    start_with(db, lease, None).await
}

/// A server on `localhost` (the name its certificate gives) over TLS.
async fn start_with(db: &str, lease: Duration, tls: Option<Tls>) -> Server {
    serve(with_w1(db).await, lease, tls).await
}

/// A server whose workers may each hold `held` unreported groups.
async fn start_holding(db: &str, lease: Duration, held: u32) -> Server {
    serve_holding(with_w1(db).await, lease, None, held).await
}

/// A server whose leases run out by `clock` (a manual one: the test moves it
/// past a lease instead of waiting for one), workers holding `held` groups each.
async fn start_clocked(db: &str, lease: Duration, held: u32, clock: &Clock) -> Server {
    serve_holding(with_w1(db).await.with_clock(clock.clone()), lease, None, held).await
}

/// The store at `db`, with worker `w1` (token [`WORKER`]) added.
async fn with_w1(db: &str) -> Store {
    let store = Store::open(db).await.expect("store opens");
    store
        .workers()
        .add_worker("w1", &app::token_hash(WORKER))
        .await
        .expect("a new store takes a worker");
    store
}

/// A second server on a store another server already set up.
async fn start_another(db: &str, lease: Duration) -> Server {
    serve(Store::open(db).await.expect("store opens"), lease, None).await
}

async fn serve(store: Store, lease: Duration, tls: Option<Tls>) -> Server {
    serve_holding(store, lease, tls, app::HELD_PER_WORKER).await
}

async fn serve_holding(store: Store, lease: Duration, tls: Option<Tls>, held_per_worker: u32) -> Server {
    let cfg = ServiceConfig {
        lease,
        held_per_worker,
        ..config(ADMIN, Default::default())
    };
    let transport = Transport {
        tls,
        ..Default::default()
    };
    Server::start_with(store, cfg, transport, false).await
}

/// A server on `db` (60 s leases) with competition `name` opened among `bots`, and
/// an admin client.
async fn opened(db: &str, name: &str, max_games: u64, bots: &[(&str, &str)]) -> (Server, Client) {
    let server = start(db, Duration::from_secs(60)).await;
    let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
    setup(&mut a, name, max_games, bots).await;
    (server, a)
}

async fn setup(c: &mut Client, name: &str, max_games: u64, bots: &[(&str, &str)]) {
    for (n, spec) in bots {
        c.register_bot(RegisterBotRequest {
            name: (*n).into(),
            game: "ur".into(),
            spec: (*spec).into(),
            env: vec![],
        })
        .await
        .unwrap();
    }
    c.open_competition(OpenCompetitionRequest {
        name: name.into(),
        game: "ur".into(),
        options: vec!["rules=finkel".into()],
        seats: 0,
        seed: Some(5),
        max_games,
        movetime_ms: 100,
        tc: String::new(),
        independent_seeds: false,
        ..Default::default()
    })
    .await
    .unwrap();
}

/// A worker that stops when the server has nothing left to play.
fn until_idle(url: &str, name: &str, concurrency: usize) -> WorkerConfig {
    WorkerConfig {
        server: url.to_owned(),
        token: WORKER.into(),
        ca_pem: None,
        name: name.into(),
        concurrency,
        batch: 1,
        max_groups: None,
        exit_when_idle: true,
        log_dir: None,
        sandbox: referee::sandbox::Sandbox::default(),
        // On, so the tests show a worker with progress still ends when idle.
        progress: true,
        stop_within: Duration::ZERO,
        uploads: Default::default(),
    }
}

/// Plays every rotation of a lease honestly, with the unsandboxed worker's own
/// code, off the executor; its records, not reported.
async fn play_by_hand(lease: &LeaseReply) -> Vec<String> {
    let lease = worker::leased_group(lease.clone()).unwrap();
    tokio::task::spawn_blocking(move || {
        worker::play_lease(
            &lease,
            None,
            &Default::default(),
            &mut referee::game::BotPool::reusing(),
        )
        .unwrap()
    })
    .await
    .unwrap()
}

/// Leases a group and plays it honestly: the lease and its records, not reported.
async fn lease_and_play(w: &mut Client) -> (LeaseReply, Vec<String>) {
    let lease = lease_ready(w, LeaseRequest::default()).await;
    assert!(lease.has_work);
    let records = play_by_hand(&lease).await;
    (lease, records)
}

/// Reports a leased group's records; the outcome the server names.
async fn report(w: &mut Client, lease: &LeaseReply, records: Vec<String>) -> ReportOutcome {
    w.report(ReportRequest {
        logs: Vec::new(),
        lease: lease.lease.clone(),
        group_id: lease.group_id,
        records,
    })
    .await
    .unwrap()
    .into_inner()
    .outcome()
}

/// Every record of a competition, page by page.
async fn all_records(c: &mut Client, competition: &str) -> Vec<referee::GameRecord> {
    all_records_by_id(c, competition)
        .await
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

/// Every record of `competition` with its game's key.
async fn all_records_by_id(c: &mut Client, competition: &str) -> Vec<(i64, referee::GameRecord)> {
    let mut records = Vec::new();
    let mut after = 0;
    loop {
        let page = c
            .game_records(GameRecordsRequest {
                competition: competition.into(),
                after_id: after,
                limit: 25,
            })
            .await
            .unwrap()
            .into_inner()
            .records;
        let Some(last) = page.last() else { break };
        after = last.id;
        for r in page {
            records.push((r.id, serde_json::from_str(&r.json).unwrap()));
        }
    }
    records
}

const BOTS: &[(&str, &str)] = &[
    ("rnd", "builtin:random"),
    ("rnd7", "builtin:random?seed=7"),
    ("first", "builtin:first"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_required_and_bad_input_is_named() {
    for store in test_stores("tokens").await {
        let server = start(&store.url, Duration::from_secs(60)).await;
        let mut anon = ladder_client::LadderClient::connect(server.url.clone())
            .await
            .unwrap();
        let e = anon
            .list_competitions(ListCompetitionsRequest {})
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{}: {e}", store.kind);
        let mut wrong = worker::connect(&server.url, "nope-nope", None).await.unwrap();
        let e = wrong.lease(LeaseRequest::default()).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);
        let mut w = worker::connect(&server.url, WORKER, None).await.unwrap();
        let e = w
            .register_bot(RegisterBotRequest {
                name: "x".into(),
                game: "ur".into(),
                spec: "builtin:random".into(),
                env: vec![],
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied);
        assert!(w.list_competitions(ListCompetitionsRequest {}).await.is_ok());

        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        let bad = |name: &str, game: &str, spec: &str| RegisterBotRequest {
            name: name.into(),
            game: game.into(),
            spec: spec.into(),
            env: vec![],
        };
        let e = a
            .register_bot(bad("x", "chess", "builtin:random"))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("chess"), "{}", e.message());
        let e = a
            .register_bot(bad("a b", "ur", "builtin:random"))
            .await
            .unwrap_err();
        assert!(
            e.code() == Code::InvalidArgument && e.message().contains("a b"),
            "{}",
            e.message()
        );
        let e = a.register_bot(bad("x", "ur", "human")).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        a.register_bot(bad("x", "ur", "builtin:random")).await.unwrap();
        let e = a.register_bot(bad("x", "ur", "builtin:first")).await.unwrap_err();
        assert_eq!(e.code(), Code::AlreadyExists, "{e}");
        let e = a
            .open_competition(OpenCompetitionRequest {
                name: "c".into(),
                game: "ur".into(),
                options: vec!["rules=nonsense".into()],
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(
            e.code() == Code::InvalidArgument && e.message().contains("nonsense"),
            "{}",
            e.message()
        );
        let e = a
            .standings(StandingsRequest {
                competition: "missing".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_plays_a_competition_and_ratings_come_back_from_the_records() {
    for store in test_stores("run").await {
        let (server, mut a) = opened(&store.url, "finkel", 60, BOTS).await;
        let reported = worker::run(until_idle(&server.url, "test", 2), std::future::pending())
            .await
            .unwrap();
        assert_eq!(reported, 30, "{}", store.kind);
        let st = a
            .standings(StandingsRequest {
                competition: "finkel".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.games, 60);
        assert_eq!(st.rows.iter().map(|r| r.games).sum::<u64>(), 120);
        // Every bot got games, none was left out by the scheduler.
        assert!(st.rows.iter().all(|r| r.games >= 20), "{:?}", st.rows);
        // Every record is kept, each (group, rotation) once, and the ratings can be
        // recomputed from the records alone.
        let records = all_records(&mut a, "finkel").await;
        for rec in &records {
            referee::replay::replay(rec).unwrap();
        }
        assert_eq!(records.len(), 60);
        let mut keys: Vec<(u64, usize)> = records
            .iter()
            .map(|r| (r.pairing.unwrap().group, r.pairing.unwrap().rotation))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 60);
        let again = ladder::local::standings_from_records(&records, None).unwrap();
        for row in &st.rows {
            let r = again.rows.iter().find(|r| r.name == row.bot).unwrap();
            assert!(
                (r.elo - row.elo).abs() < 1e-6 && r.games == row.games,
                "{} vs {:?}",
                row.elo,
                r
            );
        }
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_records_are_refused_and_reports_count_once() {
    for store in test_stores("forged").await {
        let (server, mut a) = opened(&store.url, "finkel", 2, &BOTS[..2]).await;
        let mut w = worker::connect(&server.url, WORKER, None).await.unwrap();
        let (lease, genuine) = lease_and_play(&mut w).await;
        let report = |records: Vec<String>| ReportRequest {
            logs: Vec::new(),
            lease: lease.lease.clone(),
            group_id: lease.group_id,
            records,
        };
        let tamper = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut out = genuine.clone();
            let mut v: serde_json::Value = serde_json::from_str(&out[0]).unwrap();
            f(&mut v);
            out[0] = v.to_string();
            out
        };
        // The winner swapped.
        let forged = tamper(&|v| {
            let r = v["outcome"]["ranks"].as_array().unwrap().clone();
            v["outcome"]["ranks"] = serde_json::json!([r[1], r[0]]);
        });
        let e = w.report(report(forged)).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}: {e}", store.kind);
        assert!(e.message().contains("does not reproduce"), "{}", e.message());
        // Another seed, another seat's bot, a missing rotation, garbage.
        let e = w
            .report(report(tamper(&|v| v["seed"] = 99.into())))
            .await
            .unwrap_err();
        assert!(e.message().contains("seed 99"), "{}", e.message());
        // A record of this mirrored group that says it was dealt apart (its
        // games would then count as independent, not as a pair).
        let e = w
            .report(report(tamper(&|v| v["pairing"]["mirrored"] = false.into())))
            .await
            .unwrap_err();
        assert!(
            e.message()
                .contains("says its group was dealt a seed per rotation"),
            "{}",
            e.message()
        );
        let e = w
            .report(report(tamper(&|v| {
                v["seats"][0]["spec"] = "builtin:first".into()
            })))
            .await
            .unwrap_err();
        assert!(e.message().contains("seat 0"), "{}", e.message());
        let e = w.report(report(genuine[..1].to_vec())).await.unwrap_err();
        assert!(e.message().contains("one per rotation"), "{}", e.message());
        let e = w.report(report(vec!["{".into(), "x".into()])).await.unwrap_err();
        assert!(e.message().contains("does not parse"), "{}", e.message());
        // Nothing of the refused reports was stored.
        let st = a
            .standings(StandingsRequest {
                competition: "finkel".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.games, 0);
        // The genuine report is kept, once.
        let ok = w.report(report(genuine.clone())).await.unwrap().into_inner();
        assert_eq!(ok.outcome(), ReportOutcome::Recorded);
        let again = w.report(report(genuine.clone())).await.unwrap().into_inner();
        assert_eq!(again.outcome(), ReportOutcome::AlreadyRecorded);
        let st = a
            .standings(StandingsRequest {
                competition: "finkel".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.games, 2);
        // A row says whether its Elo is a bound: exactly the rows without a finite
        // interval (one bot winning both games is separated from the other).
        for r in &st.rows {
            assert_eq!(
                r.separated() != Separation::None,
                r.ci95.is_infinite(),
                "{}: {r:?}",
                store.kind
            );
        }
        // The competition is full: no more work.
        assert!(
            !w.lease(LeaseRequest::default())
                .await
                .unwrap()
                .into_inner()
                .has_work
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_goes_to_another_worker() {
    for store in test_stores("lease").await {
        let clock = Clock::manual(system_ms());
        let server = start_clocked(&store.url, Duration::from_secs(60), app::HELD_PER_WORKER, &clock).await;
        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        setup(&mut a, "finkel", 4, &BOTS[..2]).await;
        // A worker leases a group and dies without reporting.
        let mut dead = worker::connect(&server.url, WORKER, None).await.unwrap();
        let lost = lease_ready(
            &mut dead,
            LeaseRequest {
                worker: "dead".into(),
            },
        )
        .await;
        assert!(lost.has_work);
        let records = play_by_hand(&lost).await;
        // Its lease runs out, and a whole lease more: the live worker below has
        // the same token (w1), and a group goes back to the worker that let it
        // expire only after that. The live worker's own leases do not run out,
        // as this clock stands still while it plays.
        clock.advance(Duration::from_secs(121));
        // A live worker finishes everything, the dead worker's group included.
        let reported = worker::run(until_idle(&server.url, "live", 1), std::future::pending())
            .await
            .unwrap();
        assert_eq!(reported, 2, "{}", store.kind);
        // The dead worker's late report is refused or finds the group done.
        let late = dead
            .report(ReportRequest {
                logs: Vec::new(),
                lease: lost.lease.clone(),
                group_id: lost.group_id,
                records,
            })
            .await;
        match late {
            Ok(r) => assert_eq!(r.into_inner().outcome(), ReportOutcome::AlreadyRecorded),
            Err(e) => assert_eq!(e.code(), Code::FailedPrecondition, "{e}"),
        }
        let st = a
            .standings(StandingsRequest {
                competition: "finkel".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.games, 4);
        server.stop().await;
    }
}

/// Groups the service schedules with 3+ seats are oriented so that, over the
/// competition, each bot sits right after each other one about as often as right
/// before it (rotations alone keep who follows whom; in Utara that decides games).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_seat_competition_seats_every_bot_after_every_other_equally_often() {
    for store in test_stores("follow").await {
        let server = start(&store.url, Duration::from_secs(60)).await;
        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        let bots = ["r1", "r2", "r3", "r4"];
        for (k, name) in bots.iter().enumerate() {
            a.register_bot(RegisterBotRequest {
                name: (*name).into(),
                game: "utara".into(),
                spec: format!("builtin:random?seed={k}"),
                env: vec![],
            })
            .await
            .unwrap();
        }
        a.open_competition(OpenCompetitionRequest {
            name: "three".into(),
            game: "utara".into(),
            options: vec![],
            seats: 3,
            seed: Some(11),
            max_games: 3 * 24,
            movetime_ms: 2000,
            tc: String::new(),
            independent_seeds: false,
            ..Default::default()
        })
        .await
        .unwrap();
        let reported = worker::run(until_idle(&server.url, "test", 2), std::future::pending())
            .await
            .unwrap();
        assert_eq!(reported, 24, "{}", store.kind);
        // Who sits right after whom (turns go round the table), over every game.
        let mut follows: std::collections::HashMap<(String, String), i64> = Default::default();
        for rec in all_records(&mut a, "three").await {
            let names: Vec<String> = rec.seats.iter().map(|s| s.entrant.clone().unwrap()).collect();
            for s in 0..3 {
                *follows
                    .entry((names[s].clone(), names[(s + 1) % 3].clone()))
                    .or_default() += 1;
            }
        }
        for x in bots {
            for y in bots {
                if x < y {
                    let (xy, yx) = (
                        follows.get(&(x.into(), y.into())).copied().unwrap_or(0),
                        follows.get(&(y.into(), x.into())).copied().unwrap_or(0),
                    );
                    // One group (3 games) may tip the balance, no more.
                    assert!(
                        (xy - yx).abs() <= 3,
                        "{x}->{y} {xy} times, {y}->{x} {yx} ({})",
                        store.kind
                    );
                }
            }
        }
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_faults_are_refused_by_the_server_and_nothing_is_stored() {
    for store in test_stores("forgedfaults").await {
        let (server, mut a) = opened(&store.url, "finkel", 2, &BOTS[..2]).await;
        let mut w = worker::connect(&server.url, WORKER, None).await.unwrap();
        let (lease, genuine) = lease_and_play(&mut w).await;
        let first: referee::GameRecord = serde_json::from_str(&genuine[0]).unwrap();
        for (what, forged) in astragal_tests::forged_faults(&first) {
            let records = vec![serde_json::to_string(&forged).unwrap(), genuine[1].clone()];
            let e = w
                .report(ReportRequest {
                    logs: Vec::new(),
                    lease: lease.lease.clone(),
                    group_id: lease.group_id,
                    records,
                })
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{}: {what}: {e}", store.kind);
            assert!(
                e.message().contains("does not reproduce"),
                "{what}: {}",
                e.message()
            );
        }
        let st = a
            .standings(StandingsRequest {
                competition: "finkel".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.games, 0, "{}: nothing forged was stored", store.kind);
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_have_their_own_tokens_and_a_voided_workers_groups_are_played_again() {
    for store in test_stores("workers").await {
        let (server, mut a) = opened(&store.url, "finkel", 12, BOTS).await;
        // The admin token does not lease: every group must be some worker's.
        let e = a.lease(LeaseRequest::default()).await.unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "{}", store.kind);
        let w2 = a
            .add_worker(AddWorkerRequest { name: "w2".into() })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(w2.token.len(), 64);
        let e = a
            .add_worker(AddWorkerRequest { name: "w2".into() })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::AlreadyExists);
        // w2 plays half the competition.
        let half = WorkerConfig {
            token: w2.token.clone(),
            max_groups: Some(3),
            ..until_idle(&server.url, "w2", 1)
        };
        assert_eq!(worker::run(half, std::future::pending()).await.unwrap(), 3);
        assert_eq!(
            worker::run(until_idle(&server.url, "w1", 1), std::future::pending())
                .await
                .unwrap(),
            3
        );
        let list = a.list_workers(ListWorkersRequest {}).await.unwrap().into_inner();
        let by = |n: &str| list.workers.iter().find(|w| w.name == n).unwrap().clone();
        assert_eq!((by("w1").groups, by("w1").games), (3, 6), "{}", store.kind);
        assert_eq!((by("w2").groups, by("w2").games), (3, 6));
        assert!(by("w1").flag.is_empty() && by("w2").flag.is_empty());

        // Revoked: its token is refused from then on.
        let mut as_w2 = worker::connect(&server.url, &w2.token, None).await.unwrap();
        assert!(as_w2.lease(LeaseRequest::default()).await.is_ok());
        a.revoke_worker(WorkerRequest { name: "w2".into() })
            .await
            .unwrap();
        let e = as_w2.lease(LeaseRequest::default()).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{e}");

        // Voided: its games are gone and its groups are played again, by w1,
        // each with a new seed (the voided games made the old one public).
        let seeds = |records: &[referee::GameRecord]| -> std::collections::HashMap<u64, u64> {
            records
                .iter()
                .map(|r| (r.pairing.map_or(0, |p| p.group), r.seed))
                .collect()
        };
        let before = seeds(&all_records(&mut a, "finkel").await);
        let v = a
            .void_worker(WorkerRequest { name: "w2".into() })
            .await
            .unwrap()
            .into_inner();
        assert_eq!((v.groups, v.games), (3, 6), "{}", store.kind);
        assert_eq!(games_of(&mut a, "finkel").await, 6);
        assert_eq!(
            worker::run(until_idle(&server.url, "w1", 1), std::future::pending())
                .await
                .unwrap(),
            3
        );
        assert_eq!(games_of(&mut a, "finkel").await, 12);
        let after = seeds(&all_records(&mut a, "finkel").await);
        let dealt_again = before.iter().filter(|(g, seed)| after[g] != **seed).count();
        assert_eq!((before.len(), dealt_again), (6, 3), "{}", store.kind);
        let list = a.list_workers(ListWorkersRequest {}).await.unwrap().into_inner();
        let w1 = list.workers.iter().find(|w| w.name == "w1").unwrap();
        assert_eq!((w1.groups, w1.games), (6, 12));
        server.stop().await;
    }
}

async fn games_of(a: &mut Client, competition: &str) -> u64 {
    a.standings(StandingsRequest {
        competition: competition.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .games
}

/// A gRPC bot that answers every request with the same enormous move.
struct HugeMove;

impl bots::Bot for HugeMove {
    fn name(&self) -> String {
        "huge".into()
    }
    fn choose(&mut self, _view: &bots::View<'_>) -> String {
        "x".repeat(3 << 20)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_info_flood_and_a_3_mb_grpc_move_are_recorded_and_charged_never_stalling_the_group() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let huge_url = format!("grpc://{}", listener.local_addr().unwrap());
    let make: bots::grpc::BotFactory = std::sync::Arc::new(|| Box::new(HugeMove) as Box<dyn bots::Bot>);
    tokio::spawn(bots::grpc::serve_on(listener, make, std::future::pending()));
    let flood = format!(
        "{} --mode info-flood --after 0",
        astragal_tests::binary("hostile_bot").display()
    );
    for store in test_stores("flood").await {
        let server = start(&store.url, Duration::from_secs(60)).await;
        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        // Ur's tablet rules: long games, so an uncapped flood would pass 4 MiB.
        let bots = [
            ("flood", flood.as_str()),
            ("huge", huge_url.as_str()),
            ("first", "builtin:first"),
        ];
        for (n, spec) in bots {
            a.register_bot(RegisterBotRequest {
                name: n.into(),
                game: "ur".into(),
                spec: spec.into(),
                env: vec![],
            })
            .await
            .unwrap();
        }
        a.open_competition(OpenCompetitionRequest {
            name: "flood".into(),
            game: "ur".into(),
            max_games: 6,
            movetime_ms: 5000,
            ..Default::default()
        })
        .await
        .unwrap();
        let played = worker::run(until_idle(&server.url, "w1", 1), std::future::pending())
            .await
            .unwrap();
        assert_eq!(played, 3, "{}: every group recorded", store.kind);
        let by_id = all_records_by_id(&mut a, "flood").await;
        assert_eq!(by_id.len(), 6);
        let records: Vec<referee::GameRecord> = by_id.iter().map(|(_, r)| r.clone()).collect();
        let mut flooded = 0;
        for (id, rec) in &by_id {
            let text = serde_json::to_string(rec).unwrap();
            assert!(text.len() < 256 << 10, "a record of {} bytes", text.len());
            // Info lines are the author's: out of the record, in the game's logs.
            assert!(rec.moves.iter().all(|m| m.info.is_empty()), "{text}");
            let logs = a
                .game_logs(GameLogsRequest { game_id: *id })
                .await
                .unwrap()
                .into_inner();
            for (seat, s) in rec.seats.iter().enumerate() {
                let entrant = s.entrant.as_deref().unwrap();
                let info: usize = logs
                    .seats
                    .iter()
                    .filter(|l| l.seat as usize == seat)
                    .flat_map(|l| &l.info)
                    .map(|l| serde_json::to_string(&l.line).unwrap().len() + 1)
                    .sum();
                assert!(
                    info <= referee::game::INFO_BYTES_PER_GAME,
                    "{entrant}: {info} bytes of info"
                );
                if entrant == "flood" && info > 0 {
                    flooded += 1;
                }
                if entrant == "huge" {
                    // Charged, with a short detail: never the move itself.
                    let f = rec.faults.iter().find(|f| f.seat == seat).unwrap_or_else(|| {
                        panic!(
                            "the huge move is a fault: {}",
                            serde_json::to_string(rec).unwrap()
                        )
                    });
                    assert_eq!(f.kind, referee::FaultKind::Malformed, "{}", f.detail);
                    assert!(
                        f.detail.len() <= referee::record::FAULT_DETAIL_KEPT,
                        "{}",
                        f.detail.len()
                    );
                }
            }
        }
        assert!(flooded >= 1, "the flooding bot's info was kept, capped");
        let played = |name: &str| {
            records
                .iter()
                .any(|r| r.seats.iter().any(|s| s.entrant.as_deref() == Some(name)))
        };
        assert!(
            played("huge") && played("flood"),
            "both hostile bots were scheduled"
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_serves_tls_and_workers_verify_it() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.signing_key.serialize_pem());
    let identity = Tls::from_pem(&cert_pem, &key_pem);
    let store = &test_stores("tls").await[0];
    let server = start_with(&store.url, Duration::from_secs(60), Some(identity)).await;
    assert!(server.url.starts_with("https://"));
    let mut a = worker::connect(&server.url, ADMIN, Some(cert_pem.as_bytes()))
        .await
        .unwrap();
    setup(&mut a, "finkel", 4, &BOTS[..2]).await;
    let tls_worker = WorkerConfig {
        ca_pem: Some(cert_pem.clone().into_bytes()),
        ..until_idle(&server.url, "w1", 1)
    };
    assert_eq!(worker::run(tls_worker, std::future::pending()).await.unwrap(), 2);
    assert_eq!(games_of(&mut a, "finkel").await, 4);
    // A worker that does not trust the certificate does not talk to the server.
    let untrusting = worker::connect(&server.url, WORKER, None).await;
    let refused = match untrusting {
        Err(_) => true,
        Ok(mut c) => c.list_competitions(ListCompetitionsRequest {}).await.is_err(),
    };
    assert!(refused, "a certificate no authority signed was accepted");
    // A worker given another authority stops at once and says why, rather than
    // retrying for ever with "transport error".
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let wrong_ca = WorkerConfig {
        ca_pem: Some(other.cert.pem().into_bytes()),
        ..until_idle(&server.url, "w1", 1)
    };
    let e = tokio::time::timeout(
        Duration::from_secs(60),
        worker::run(wrong_ca, std::future::pending()),
    )
    .await
    .expect("a worker with the wrong authority stops")
    .unwrap_err()
    .to_string();
    assert!(e.contains("certificate") && e.contains("--ca-cert"), "{e}");
    // Nor does one that speaks plain HTTP/2 to it.
    let plain = server.url.replace("https://", "http://");
    let refused = match worker::connect(&plain, WORKER, None).await {
        Err(_) => true,
        Ok(mut c) => c.list_competitions(ListCompetitionsRequest {}).await.is_err(),
    };
    assert!(refused, "plain HTTP/2 reached a TLS server");
    server.stop().await;
}

/// Plays every group of a batch lease honestly.
async fn play_all(leases: &[LeaseReply]) -> Vec<Vec<String>> {
    let leases = leases.to_vec();
    tokio::task::spawn_blocking(move || {
        leases
            .iter()
            .map(|l| {
                worker::play_lease(
                    &worker::leased_group(l.clone()).unwrap(),
                    None,
                    &Default::default(),
                    &mut referee::game::BotPool::reusing(),
                )
                .unwrap()
            })
            .collect()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_leased_and_reported_in_one_call_and_a_forged_group_in_it_is_refused_alone() {
    for store in test_stores("batch").await {
        let (server, mut a) = opened(&store.url, "finkel", 16, &BOTS[..2]).await;
        let mut w = worker::connect(&server.url, WORKER, None).await.unwrap();
        let leased = lease_groups_ready(&mut w, 5).await;
        assert_eq!(leased.len(), 5, "{}", store.kind);
        let mut ids: Vec<i64> = leased.iter().map(|g| g.group_id).collect();
        ids.dedup();
        assert_eq!(ids.len(), 5, "five different groups");
        assert!(leased.iter().all(|g| g.lease == leased[0].lease && g.has_work));
        let played = play_all(&leased).await;
        let reports: Vec<ReportRequest> = leased
            .iter()
            .zip(&played)
            .map(|(l, records)| ReportRequest {
                logs: Vec::new(),
                lease: l.lease.clone(),
                group_id: l.group_id,
                records: records.clone(),
            })
            .collect();
        // Group 2's winner swapped: that group is refused, the other four kept.
        let mut forged = reports.clone();
        let mut v: serde_json::Value = serde_json::from_str(&forged[2].records[0]).unwrap();
        let r = v["outcome"]["ranks"].as_array().unwrap().clone();
        v["outcome"]["ranks"] = serde_json::json!([r[1], r[0]]);
        forged[2].records[0] = v.to_string();
        // And a group that does not exist.
        forged.push(ReportRequest {
            logs: Vec::new(),
            group_id: 999_999,
            ..reports[0].clone()
        });
        let outcomes = w
            .report_groups(ReportGroupsRequest { reports: forged })
            .await
            .unwrap()
            .into_inner()
            .outcomes;
        assert_eq!(outcomes.len(), 6);
        for (k, o) in outcomes.iter().enumerate() {
            match k {
                2 => {
                    assert_eq!(
                        (o.outcome(), o.code),
                        (ReportOutcome::Refused, Code::InvalidArgument as u32)
                    );
                    assert!(o.message.contains("does not reproduce"), "{}", o.message);
                }
                5 => {
                    assert_eq!(
                        (o.outcome(), o.code),
                        (ReportOutcome::Refused, Code::NotFound as u32)
                    );
                    assert!(o.message.contains("999999"), "{}", o.message);
                }
                _ => assert_eq!(o.outcome(), ReportOutcome::Recorded, "{k}: {o:?}"),
            }
        }
        assert_eq!(games_of(&mut a, "finkel").await, 8);
        // Too many reports in one call is refused whole, with the limit named.
        let e = w
            .report_groups(ReportGroupsRequest {
                reports: vec![reports[0].clone(); 65],
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("at most 64"), "{}", e.message());
        // The honest group 2 still goes in; the others were in already.
        let again = w
            .report_groups(ReportGroupsRequest { reports })
            .await
            .unwrap()
            .into_inner()
            .outcomes;
        let words: Vec<&str> = again.iter().map(|o| o.outcome().as_str_name()).collect();
        assert_eq!(
            words,
            [
                "REPORT_OUTCOME_ALREADY_RECORDED",
                "REPORT_OUTCOME_ALREADY_RECORDED",
                "REPORT_OUTCOME_RECORDED",
                "REPORT_OUTCOME_ALREADY_RECORDED",
                "REPORT_OUTCOME_ALREADY_RECORDED"
            ]
        );
        // A batching worker plays the rest; each game is there once.
        let batching = WorkerConfig {
            batch: 4,
            ..until_idle(&server.url, "w1", 2)
        };
        assert_eq!(worker::run(batching, std::future::pending()).await.unwrap(), 3);
        let records = all_records(&mut a, "finkel").await;
        let mut keys: Vec<(u64, usize)> = records
            .iter()
            .map(|r| {
                let p = r.pairing.unwrap();
                (p.group, p.rotation)
            })
            .collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 16, "{}: every game once", store.kind);
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_database_record_every_group_exactly_once() {
    // Both servers schedule and lease at once; PostgreSQL is what they share.
    let Some(store) = postgres_store("two_servers").await else {
        return;
    };
    let one = start(&store.url, Duration::from_secs(60)).await;
    let two = start_another(&store.url, Duration::from_secs(60)).await;
    let mut a = worker::connect(&one.url, ADMIN, None).await.unwrap();
    // Two searching bots make games take long enough that both servers' workers
    // are at work together.
    let bots = [
        ("r1", "builtin:random?seed=1"),
        ("r2", "builtin:random?seed=2"),
        ("m1", "builtin:mcts?iterations=30"),
        ("m2", "builtin:mcts?iterations=40"),
    ];
    setup(&mut a, "finkel", 120, &bots).await;
    let mut a2 = worker::connect(&two.url, ADMIN, None).await.unwrap();
    let w2 = a2
        .add_worker(AddWorkerRequest { name: "w2".into() })
        .await
        .unwrap()
        .into_inner();
    let on_one = WorkerConfig {
        batch: 3,
        ..until_idle(&one.url, "w1", 2)
    };
    let on_two = WorkerConfig {
        batch: 2,
        token: w2.token.clone(),
        ..until_idle(&two.url, "w2", 2)
    };
    let (n1, n2) = tokio::join!(
        worker::run(on_one, std::future::pending()),
        worker::run(on_two, std::future::pending())
    );
    let (n1, n2) = (n1.unwrap(), n2.unwrap());
    assert_eq!(n1 + n2, 60, "{n1} + {n2} groups reported");
    assert!(n1 > 0 && n2 > 0, "both servers served: {n1}, {n2}");
    // Exactly 60 groups were scheduled, numbered 0..60, and every rotation of each
    // is stored once, with the group's own seed.
    let db = Store::open(&store.url).await.unwrap();
    let c = db.competitions().competition("finkel").await.unwrap().unwrap();
    let groups = db.groups().of_competition(c.id).await.unwrap();
    let numbers: Vec<i64> = groups.iter().map(|g| g.group_no).collect();
    assert_eq!(numbers, (0..60).collect::<Vec<i64>>());
    let records = all_records(&mut a, "finkel").await;
    assert_eq!(records.len(), 120);
    let mut keys = std::collections::HashSet::new();
    for r in &records {
        let p = r.pairing.unwrap();
        assert!(
            keys.insert((p.group, p.rotation)),
            "group {} rotation {} twice",
            p.group,
            p.rotation
        );
        assert_eq!(r.seed, engine::group_seed(c.seed as u64, p.group));
    }
    // The choices stayed sound: every pair met, and no bot was left behind.
    let mut per_bot = std::collections::HashMap::<String, u64>::new();
    let mut pairs = std::collections::HashSet::new();
    for r in &records {
        let names: Vec<String> = r.seats.iter().map(|s| s.entrant.clone().unwrap()).collect();
        for n in &names {
            *per_bot.entry(n.clone()).or_default() += 1;
        }
        let mut pair = names.clone();
        pair.sort();
        pairs.insert(pair);
    }
    assert_eq!(pairs.len(), 6, "{pairs:?}");
    assert!(per_bot.values().all(|&g| g >= 30), "{per_bot:?}");
    db.games().close().await;
    one.stop().await;
    two.stop().await;
}

async fn bots_by_name(a: &mut Client) -> std::collections::HashMap<String, BotInfo> {
    a.list_bots(ListBotsRequest {})
        .await
        .unwrap()
        .into_inner()
        .bots
        .into_iter()
        .map(|b| (b.name.clone(), b))
        .collect()
}

async fn games_per_bot(a: &mut Client, competition: &str) -> std::collections::HashMap<String, u64> {
    a.standings(StandingsRequest {
        competition: competition.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .rows
    .into_iter()
    .map(|r| (r.bot, r.games))
    .collect()
}

fn for_groups(url: &str, groups: u64) -> WorkerConfig {
    WorkerConfig {
        max_groups: Some(groups),
        exit_when_idle: false,
        progress: false,
        uploads: Default::default(),
        ..until_idle(url, "suspender", 1)
    }
}

/// A bot that starts but crashes every game, or moves illegally every game, was
/// never suspended (277 forfeits in 286 games): only failed starts counted. Any
/// game in which a bot broke counts now, and the reason says how it broke.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_that_crashes_or_moves_illegally_every_game_is_suspended_with_how_it_broke() {
    let hostile = astragal_tests::binary("hostile_bot").display().to_string();
    let crasher = format!("{hostile} --mode crash");
    let illegal = format!("{hostile} --mode illegal");
    for store in test_stores("broke").await {
        let kind = store.kind;
        let bots = [
            ("good", "builtin:random"),
            ("first", "builtin:first"),
            ("crasher", crasher.as_str()),
            ("illegal", illegal.as_str()),
        ];
        let (server, mut a) = opened(&store.url, "open", 0, &bots).await;
        worker::run(for_groups(&server.url, 60), std::future::pending())
            .await
            .unwrap();
        let list = bots_by_name(&mut a).await;
        let games = games_per_bot(&mut a, "open").await;
        for (name, says) in [("crasher", "crashed"), ("illegal", "broke the protocol")] {
            let b = &list[name];
            assert_eq!(b.status(), BotStatus::Suspended, "{kind}: {b:?}");
            // Five in a row suspend it; a group's second game can make it six.
            assert!(
                b.status_reason.starts_with(says)
                    && (b.status_reason.contains(" 5 reported games in a row")
                        || b.status_reason.contains(" 6 reported games in a row")),
                "{kind}: {}",
                b.status_reason
            );
            // No detail of a fault (a path, a command line) in a public reason.
            assert!(
                !b.status_reason.contains("hostile_bot"),
                "{kind}: {}",
                b.status_reason
            );
            assert!((5..=6).contains(&games[name]), "{kind}: {games:?}");
        }
        assert_eq!(list["good"].status(), BotStatus::Active);
        assert_eq!(list["first"].status(), BotStatus::Active);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_that_cannot_start_is_suspended_and_the_admin_disables_enables_removes_and_updates_bots() {
    for store in test_stores("suspend").await {
        let kind = store.kind;
        // The host's typo: a program that does not exist on the worker.
        let bots = [
            ("good", "builtin:random"),
            ("first", "builtin:first"),
            ("typo", "pyhton3 nothing.py"),
        ];
        let (server, mut a) = opened(&store.url, "open", 0, &bots).await;
        // Nothing checkable is wrong with the typo's spec at registration; what is
        // wrong with these is.
        for (spec, says) in [
            ("builtin:nosuch", "no built-in bot \"nosuch\""),
            ("python3 'unclosed.py", "are its quotes balanced"),
            ("builtin:random?depth", "not key=value"),
        ] {
            let e = a
                .register_bot(RegisterBotRequest {
                    name: "bad".into(),
                    game: "ur".into(),
                    spec: spec.into(),
                    env: vec![],
                })
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{spec}");
            assert!(e.message().contains(says), "{spec}: {}", e.message());
        }
        worker::run(for_groups(&server.url, 40), std::future::pending())
            .await
            .unwrap();
        let list = bots_by_name(&mut a).await;
        let typo = &list["typo"];
        assert_eq!(typo.status(), BotStatus::Suspended, "{kind}: {typo:?}");
        assert!(
            typo.status_reason.contains("could not start") && typo.status_reason.contains("spawn"),
            "{kind}: {}",
            typo.status_reason
        );
        // Five failed starts suspend it; the second game of the group that
        // reached five is the most it can have beyond them.
        let games = games_per_bot(&mut a, "open").await;
        assert!(games["typo"] >= 5 && games["typo"] <= 6, "{kind}: {games:?}");
        assert_eq!(games.values().sum::<u64>(), 2 * 80, "{kind}: {games:?}");
        assert_eq!(list["good"].status(), BotStatus::Active);

        // Re-registering a name with another command says how to change it.
        let e = a
            .register_bot(RegisterBotRequest {
                name: "typo".into(),
                game: "ur".into(),
                spec: "python3 nothing.py".into(),
                env: vec![],
            })
            .await
            .unwrap_err();
        assert!(
            e.message().contains("ladder admin update typo"),
            "{}",
            e.message()
        );
        // Enabled again, it starts its run from nought.
        let b = a
            .set_bot_status(SetBotStatusRequest {
                name: "typo".into(),
                status: BotStatus::Active.into(),
                reason: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!((b.status(), b.start_failures), (BotStatus::Active, 0));
        // A new version with a command that works: its own row, linked.
        let v2 = a
            .update_bot(RegisterBotRequest {
                name: "typo".into(),
                game: String::new(),
                spec: "builtin:greedy".into(),
                env: vec![],
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (v2.name.as_str(), v2.version, v2.previous.as_str(), v2.status()),
            ("typo@2", 2, "typo", BotStatus::Active)
        );
        let e = a
            .update_bot(RegisterBotRequest {
                name: "typo".into(),
                game: String::new(),
                spec: "builtin:random".into(),
                env: vec![],
            })
            .await
            .unwrap_err();
        assert!(e.message().contains("superseded"), "{}", e.message());
        // Disabled and removed bots are scheduled no more.
        let b = a
            .set_bot_status(SetBotStatusRequest {
                name: "first".into(),
                status: BotStatus::Disabled.into(),
                reason: "under review".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(b.status_reason, "disabled by the admin: under review");
        let before = games_per_bot(&mut a, "open").await;
        worker::run(for_groups(&server.url, 20), std::future::pending())
            .await
            .unwrap();
        let after = games_per_bot(&mut a, "open").await;
        assert_eq!(after["first"], before["first"], "{kind}: {after:?}");
        assert_eq!(after["typo"], before["typo"], "{kind}: {after:?}");
        assert_eq!(
            after["typo@2"], 40,
            "{kind}: every group was good v typo@2: {after:?}"
        );
        a.set_bot_status(SetBotStatusRequest {
            name: "first".into(),
            status: BotStatus::Removed.into(),
            reason: String::new(),
        })
        .await
        .unwrap();
        let e = a
            .set_bot_status(SetBotStatusRequest {
                name: "first".into(),
                status: BotStatus::Active.into(),
                reason: String::new(),
            })
            .await
            .unwrap_err();
        assert!(e.message().contains("removed"), "{}", e.message());
        let e = a
            .set_bot_status(SetBotStatusRequest {
                name: "first".into(),
                status: 99,
                reason: String::new(),
            })
            .await
            .unwrap_err();
        assert!(
            e.message().contains("active, disabled or removed"),
            "{}",
            e.message()
        );
        server.stop().await;
    }
}

/// A burst of leases past what the server serves at once: each waits its turn
/// and is answered with groups or with `retry_after_ms` (never a false "no
/// work" while groups are left), and asking as told hands out every group
/// exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_leases_waits_its_turn_and_every_group_is_handed_out_once() {
    for store in test_stores("burst").await {
        let kind = store.kind;
        // One token for the whole burst: it may hold every group unreported.
        let server = start_holding(&store.url, Duration::from_secs(60), 1000).await;
        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        setup(&mut a, "burst", 2 * 300, BOTS).await;
        let mut clients = Vec::new();
        for _ in 0..48 {
            clients.push(worker::connect(&server.url, WORKER, None).await.unwrap());
        }
        let mut leased = Vec::new();
        let mut told_to_wait = 0;
        loop {
            let calls: Vec<_> = clients
                .drain(..)
                .map(|mut w| {
                    tokio::spawn(async move {
                        let r = w
                            .lease_groups(LeaseGroupsRequest {
                                max_groups: 4,
                                ..Default::default()
                            })
                            .await
                            .unwrap()
                            .into_inner();
                        (w, r)
                    })
                })
                .collect();
            let mut finished = false;
            for c in calls {
                let (w, r) = c.await.unwrap();
                clients.push(w);
                if r.groups.is_empty() {
                    if r.retry_after_ms == 0 {
                        finished = true;
                    } else {
                        told_to_wait += 1;
                        assert!(r.retry_after_ms <= 6_000, "{kind}: {}", r.retry_after_ms);
                    }
                }
                leased.extend(r.groups.into_iter().map(|g| g.group_no));
            }
            if finished {
                break;
            }
        }
        leased.sort_unstable();
        let n = leased.len();
        leased.dedup();
        assert_eq!((n, leased.len()), (300, 300), "{kind}: every group once");
        assert_eq!(leased.last(), Some(&299), "{kind}");
        eprintln!("{kind}: {told_to_wait} leases told to come back");
        server.stop().await;
    }
}

/// A server keeps the worker tokens it has checked, for minutes. A token
/// revoked through another server on the same database is refused once
/// TOKEN_CACHE has passed: each server watches the store's revocation mark.
/// Both servers read one manual clock, which the test moves past TOKEN_CACHE
/// instead of waiting for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_through_another_server_is_refused_soon_after() {
    for store in test_stores("revoke_across").await {
        let kind = store.kind;
        let clock = Clock::manual(1_700_000_000_000);
        let one = start_clocked(&store.url, Duration::from_secs(60), app::HELD_PER_WORKER, &clock).await;
        let other_store = Store::open(&store.url).await.unwrap().with_clock(clock.clone());
        let other = serve(other_store, Duration::from_secs(60), None).await;
        let mut a = worker::connect(&one.url, ADMIN, None).await.unwrap();
        let w2 = a
            .add_worker(AddWorkerRequest { name: "w2".into() })
            .await
            .unwrap()
            .into_inner();
        let mut at_other = worker::connect(&other.url, &w2.token, None).await.unwrap();
        // The other server checks the token, and keeps it.
        clock.advance(Duration::from_millis(1));
        at_other
            .lease(LeaseRequest::default())
            .await
            .unwrap_or_else(|e| panic!("{kind}: a new worker's token works: {e}"));
        a.revoke_worker(WorkerRequest { name: "w2".into() })
            .await
            .unwrap();
        // Within TOKEN_CACHE the other server may still serve what it kept: it
        // does here, since its clock has not moved (so the cache is what
        // answers, not a read of the row).
        at_other
            .lease(LeaseRequest::default())
            .await
            .unwrap_or_else(|e| panic!("{kind}: the other server read the row again at once: {e}"));
        // Once TOKEN_CACHE has passed, it reads the mark, sees the revocation,
        // and refuses the next call.
        clock.advance(app::TOKEN_CACHE);
        let refused = at_other.lease(LeaseRequest::default()).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unauthenticated, "{kind}: {refused}");
        // And the server it was revoked through refuses it at once.
        let mut at_one = worker::connect(&one.url, &w2.token, None).await.unwrap();
        let e = at_one.lease(LeaseRequest::default()).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{kind}: {e}");
        one.stop().await;
        other.stop().await;
    }
}

/// A plain HTTP/1.1 GET on loopback: status and body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

/// A server with its web pages on loopback: the gRPC URL, the pages' address.
type WebServer = Server;

async fn web_server(db: &str) -> WebServer {
    Server::start(with_w1(db).await, config(ADMIN, Default::default()), true).await
}

/// A PostgreSQL test store, for a test about PostgreSQL alone. Without
/// `ASTRAGAL_PG_URL` the test is skipped, saying so; under CI it fails instead.
async fn postgres_store(tag: &str) -> Option<astragal_tests::TestStore> {
    let store = test_stores(tag).await.into_iter().find(|s| s.kind == "postgres");
    if store.is_none() {
        astragal_tests::skipped(tag, "set ASTRAGAL_PG_URL to a PostgreSQL server to run it");
    }
    store
}

/// A server with its pages (on SQLite) and a competition `name` of `games` games
/// among [`BOTS`], played: the store (kept until the test ends), the server, an
/// admin client.
async fn web_with_games(tag: &str, name: &str, games: u64) -> (astragal_tests::TestStore, WebServer, Client) {
    let store = test_stores(tag).await.remove(0);
    let server = web_server(&store.url).await;
    let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
    setup(&mut a, name, games, BOTS).await;
    worker::run(until_idle(&server.url, name, 1), std::future::pending())
        .await
        .unwrap();
    (store, server, a)
}

/// A chunked HTTP body, joined.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_competitions_games_download_as_json_lines_by_range_and_replay() {
    let (_store, server, _a) = web_with_games("download", "dl", 24).await;
    let web = server.web;
    let (status, body) = http_get(web, "/competitions/dl/games.jsonl").await;
    assert_eq!(status, 200, "{body}");
    let all = dechunk(&body);
    let lines: Vec<serde_json::Value> = all.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 24, "every game, once");
    let ids: Vec<i64> = lines.iter().map(|l| l["game_id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");
    // Each line is a record (the seed a string, whole) that replays.
    let file = std::env::temp_dir().join(format!("astragal-dl-{}.jsonl", std::process::id()));
    std::fs::write(&file, &all).unwrap();
    for l in &lines {
        assert!(l["seed"].is_string(), "{l}");
        let rec: referee::GameRecord = serde_json::from_value(l.clone()).unwrap();
        referee::replay::replay(&rec).unwrap();
    }
    let o = std::process::Command::new(astragal_tests::binary("referee"))
        .arg("replay")
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_file(&file);
    // A range: after one game, up to another, inclusive.
    let (_, body) = http_get(
        web,
        &format!("/competitions/dl/games.jsonl?after={}&until={}", ids[4], ids[9]),
    )
    .await;
    let part: Vec<i64> = dechunk(&body)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["game_id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(part, ids[5..=9].to_vec());
    assert_eq!(http_get(web, "/competitions/dl/games.jsonl?after=x").await.0, 400);
    assert_eq!(http_get(web, "/competitions/nosuch/games.jsonl").await.0, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_page_links_every_game_to_its_viewer() {
    let (_store, server, mut a) = web_with_games("web", "web", 8).await;
    let web = server.web;
    let (status, front) = http_get(web, "/").await;
    assert_eq!(status, 200);
    let first = front.find("href=\"/games/").expect("a link to a game's viewer");
    let id: i64 = front[first + 13..].split('"').next().unwrap().parse().unwrap();
    let (status, record) = http_get(web, &format!("/api/games/{id}")).await;
    assert_eq!(status, 200);
    let rec: referee::GameRecord = serde_json::from_str(&record).unwrap();
    // The seed is a string, whole (a JavaScript number rounds 64 bits), and the
    // record still reads as a record.
    let raw: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(raw["seed"], rec.seed.to_string(), "{record}");
    let (status, page) = http_get(web, &format!("/games/{id}")).await;
    assert_eq!(status, 200);
    let data = &page[page.find(r#"id="data">"#).unwrap() + 10..];
    let data: serde_json::Value = serde_json::from_str(&data[..data.find("</script>").unwrap()]).unwrap();
    assert_eq!(data["frames"].as_array().unwrap().len(), rec.moves.len() + 1);
    assert_eq!(http_get(web, "/games/999999").await.0, 404);
    // Each bot has a page: its results against each opponent and its newest
    // games linked to the viewer, and never its command line.
    let bot = &front[front.find("href=\"/bots/").unwrap_or_else(|| panic!("{front}")) + 12..];
    let bot = bot.split('"').next().unwrap();
    let (status, page) = http_get(web, &format!("/bots/{bot}")).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("Against each opponent") && page.contains("href=\"/games/"),
        "{page}"
    );
    assert!(
        !page.contains("builtin:"),
        "a bot's page shows its command line: {page}"
    );
    let (status, json) = http_get(web, &format!("/bots/{bot}.json")).await;
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let c = &json["competitions"][0];
    let met: u64 = c["against"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["wins"].as_u64().unwrap() + a["draws"].as_u64().unwrap() + a["losses"].as_u64().unwrap())
        .sum();
    // All 8 games are on the front page's recent list: count the bot's there.
    let recent_games = &front[front.find("Recent games").unwrap()..];
    let rows = recent_games
        .split("<tr ")
        .filter(|r| r.contains(&format!("href=\"/bots/{bot}\"")))
        .count() as u64;
    assert_eq!(met, rows, "{bot}'s results against others: {json}");
    assert_eq!(c["recent"].as_array().unwrap().len() as u64, rows, "{json}");
    assert!(!json.to_string().contains("builtin:"));
    assert_eq!(http_get(web, "/bots/nosuch").await.0, 404);
    // All of its max_games played: finished. A bot taken out of play is marked.
    a.set_bot_status(SetBotStatusRequest {
        name: "first".into(),
        status: BotStatus::Disabled.into(),
        reason: "under review".into(),
    })
    .await
    .unwrap();
    let (status, json) = http_get(web, "/api/standings.json").await;
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let c = &json["competitions"][0];
    assert_eq!(
        (c["status"].as_str(), c["games"].as_u64()),
        (Some("finished"), Some(8)),
        "{c}"
    );
    assert_eq!(c["out_of_play"]["first"]["status"], "disabled", "{c}");
    assert_eq!(
        c["out_of_play"]["first"]["reason"],
        "disabled by the admin: under review"
    );
    assert!(c["out_of_play"].get("rnd").is_none(), "{c}");
    assert_eq!(http_get(web, "/games/x").await.0, 400);
    server.stop().await;
}

/// The JSON at `path`, which must answer 200.
async fn get_json(web: std::net::SocketAddr, path: &str) -> serde_json::Value {
    let (status, body) = http_get(web, path).await;
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// Every game id of a competition (of one bot, with `bot`), walking the games
/// list page by page as a reader would, newest first.
async fn all_game_ids(web: std::net::SocketAddr, competition: &str, bot: Option<&str>) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut args: Vec<String> = before.map(|b| format!("before={b}")).into_iter().collect();
        args.extend(bot.map(|b| format!("bot={b}")));
        let page = get_json(
            web,
            &format!("/competitions/{competition}/games.json?{}", args.join("&")),
        )
        .await;
        ids.extend(
            page["games"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["id"].as_i64().unwrap()),
        );
        match page["next_before"].as_i64() {
            Some(b) => before = Some(b),
            None => return ids,
        }
    }
}

/// The host's typo with a secret on its command line and in its environment.
const TYPO_SPEC: &str = "pyhton3 /srv/secret-dir/nothing.py --token=SECRETXYZ";
const TYPO_SECRETS: &[&str] = &[
    "pyhton3",
    "secret-dir",
    "nothing.py",
    "SECRETXYZ",
    "sk-verysecret-77",
];

/// A ladder whose games are all played: `rnd`, `rnd7`, `first` and `typo` (a
/// command that cannot start, suspended after five games), `games` in all.
async fn played_ladder(db: &str, competition: &str, games: u64) -> WebServer {
    let server = web_server(db).await;
    let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
    a.register_bot(RegisterBotRequest {
        name: "typo".into(),
        game: "ur".into(),
        spec: TYPO_SPEC.into(),
        env: vec![EnvVar {
            key: "API_KEY".into(),
            value: "sk-verysecret-77".into(),
        }],
    })
    .await
    .unwrap();
    setup(&mut a, competition, games, BOTS).await;
    worker::run(until_idle(&server.url, competition, 2), std::future::pending())
        .await
        .unwrap();
    server
}

/// Attack: a host's bot has secrets on its command line and in its environment,
/// and cannot start. The record names the seat by its bot and says the bot could
/// not start, and neither it, nor the store, nor any public page, JSON or record
/// holds the command or the environment. Nothing else is hidden: text that shares
/// words with a spec reads as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_shows_a_command_line_or_an_environment_value() {
    let store = test_stores("redact").await.remove(0);
    let server = played_ladder(&store.url, "open", 40).await;
    let web = server.web;
    let db = Store::open(&store.url).await.unwrap();
    let ids = all_game_ids(web, "open", None).await;
    assert_eq!(ids.len(), 40);
    let typo_games = all_game_ids(web, "open", Some("typo")).await;
    // Suspended after five failed starts: at most the rest of that group and one
    // more group the second play slot held by then (two games each).
    assert!((5..=8).contains(&typo_games.len()), "{typo_games:?}");
    // The stored record names the bot and says what happened, and quotes nothing
    // of its command or environment: there is nothing for a page to hide.
    for id in &typo_games {
        let (_, raw) = db
            .games()
            .record(ladder::store::GameId(*id))
            .await
            .unwrap()
            .unwrap();
        for secret in TYPO_SECRETS {
            assert!(!raw.contains(secret), "game {id}'s record holds {secret}: {raw}");
        }
        assert!(
            raw.contains("\"entrant\":\"typo\"") && raw.contains("cannot start"),
            "{raw}"
        );
    }
    // An admin's reason in words that a find-and-replace over the spec's words
    // would have garbled ("srv").
    let reason_said = "moved off srv; replaced by rnd";
    let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
    a.set_bot_status(SetBotStatusRequest {
        name: "rnd7".into(),
        status: BotStatus::Disabled.into(),
        reason: reason_said.into(),
    })
    .await
    .unwrap();
    let rnd7 = get_json(web, "/bots/rnd7.json").await;
    assert_eq!(
        rnd7["status_reason"],
        format!("disabled by the admin: {reason_said}"),
        "{rnd7}"
    );
    let mut pages: Vec<String> = [
        "/",
        "/api/standings.json",
        "/competitions/open",
        "/competitions/open.json",
        "/competitions/open/games",
        "/competitions/open/games.json",
        "/competitions/open/games?bot=typo",
        "/bots/typo",
        "/bots/typo.json",
        "/bots/rnd",
        "/competitions/open/games.jsonl",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    for id in &typo_games {
        pages.push(format!("/games/{id}"));
        pages.push(format!("/api/games/{id}"));
    }
    for path in &pages {
        let (status, body) = http_get(web, path).await;
        assert_eq!(status, 200, "{path}");
        for secret in TYPO_SECRETS {
            assert!(!body.contains(secret), "{path} shows {secret}: {body}");
        }
    }
    // What stays: the record still replays, the bot is named, the fault is said.
    let rec: referee::GameRecord =
        serde_json::from_value(get_json(web, &format!("/api/games/{}", typo_games[0])).await).unwrap();
    assert!(referee::replay::replay(&rec).is_ok());
    let bot = get_json(web, "/bots/typo.json").await;
    assert_eq!(bot["status"], "suspended", "{bot}");
    let reason = bot["status_reason"].as_str().unwrap();
    // The reason says how it broke and never quotes a fault's detail (which
    // named the command), so there is nothing in it to hide.
    assert!(
        reason.contains("could not start")
            && reason.contains("last fault: spawn")
            && !reason.contains("[hidden]"),
        "{reason}"
    );
    // Faults by kind: a spawn fault in every game it was seated in.
    let c = &bot["competitions"][0];
    let spawn = c["faults_by_kind"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "spawn")
        .unwrap_or_else(|| panic!("{c}"));
    assert_eq!(spawn["games"].as_u64(), Some(typo_games.len() as u64), "{c}");
    let newest = &c["newest_faults"][0];
    assert_eq!(newest["game"].as_i64(), Some(typo_games[0]), "{c}");
    assert!(newest["detail"].as_str().unwrap().contains("cannot start"), "{c}");
    let (_, page) = http_get(web, "/bots/typo").await;
    assert!(page.contains("data-kind=\"spawn\""), "{page}");
    // A fault's detail (a traceback, say) keeps its line breaks on the page.
    assert!(page.contains("td.detail{white-space:pre-wrap"), "{page}");
    server.stop().await;
}

/// The competition page draws every standing's interval and says how busy it is;
/// the games list, walked page by page, holds every game once, and per bot its
/// own games; the bot page's rating history climbs in games, and its results
/// against each opponent add up to its games.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn competition_and_bot_pages_hold_every_game_once_and_each_bots_history() {
    for store in test_stores("pages").await {
        let kind = store.kind;
        let server = played_ladder(&store.url, "big", 130).await;
        let web = server.web;
        let c = get_json(web, "/competitions/big.json").await;
        assert_eq!(
            (c["status"].as_str(), c["games"].as_u64()),
            (Some("finished"), Some(130)),
            "{kind}: {c}"
        );
        let a = &c["activity"];
        assert_eq!(a["games_last_hour"].as_u64(), Some(130), "{kind}: {a}");
        assert_eq!(
            (a["workers_active"].as_u64(), a["groups_waiting"].as_u64()),
            (Some(0), Some(0)),
            "{kind}: {a}"
        );
        let rows = c["standings"]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 4, "{kind}");
        let (_, page) = http_get(web, "/competitions/big").await;
        assert_eq!(page.matches("data-interval=").count(), 4, "{kind}: {page}");
        assert!(page.contains("href=\"/competitions/big/games\""), "{kind}");

        let ids = all_game_ids(web, "big", None).await;
        assert_eq!(ids.len(), 130, "{kind}: three pages of 50, 50 and 30");
        assert!(
            ids.windows(2).all(|w| w[0] > w[1]),
            "{kind}: newest first, each once: {ids:?}"
        );
        for r in rows {
            let name = r["name"].as_str().unwrap();
            let mine = all_game_ids(web, "big", Some(name)).await;
            assert_eq!(mine.len() as u64, r["games"].as_u64().unwrap(), "{kind}: {name}");
            assert!(mine.iter().all(|id| ids.contains(id)), "{kind}: {name}");
            let bot = get_json(web, &format!("/bots/{name}.json")).await;
            let bc = &bot["competitions"][0];
            let met: u64 = bc["against"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    a["wins"].as_u64().unwrap() + a["draws"].as_u64().unwrap() + a["losses"].as_u64().unwrap()
                })
                .sum();
            assert_eq!(met, mine.len() as u64, "{kind}: {name}: {bc}");
            if name == "typo" {
                continue;
            }
            let history = bc["rating_history"].as_array().unwrap();
            assert!(!history.is_empty(), "{kind}: {name}: {bc}");
            let at: Vec<u64> = history.iter().map(|p| p["games"].as_u64().unwrap()).collect();
            assert!(
                at.windows(2).all(|w| w[0] < w[1]) && *at.last().unwrap() <= 130,
                "{kind}: {at:?}"
            );
            let (_, page) = http_get(web, &format!("/bots/{name}")).await;
            assert_eq!(
                page.matches("data-point=").count(),
                history.len(),
                "{kind}: {name}"
            );
        }
        assert_eq!(http_get(web, "/competitions/nosuch").await.0, 404);
        assert_eq!(http_get(web, "/competitions/big/games?bot=nosuch").await.0, 404);
        assert_eq!(http_get(web, "/competitions/big/games?before=x").await.0, 400);
        server.stop().await;
    }
}

/// In headless Chromium: the front page, a competition's page and bot pages show
/// the standings, the interval bars, the rating chart and the faults as their JSON
/// says. Screenshots at desktop and phone widths go to
/// `target/test-artifacts/ladder/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_real_browser_the_ladder_pages_show_what_their_json_says() {
    use astragal_tests::browser::{attributes, chromium, dom, screenshot};
    let Some(browser) = chromium() else { return };
    let store = test_stores("browser").await.remove(0);
    let server = played_ladder(&store.url, "shown", 60).await;
    let web = server.web;
    let base = format!("http://{web}");
    let profile = std::env::temp_dir().join(format!("astragal-ladder-browser-{}", std::process::id()));
    let shots = astragal_tests::workspace_root().join("target/test-artifacts/ladder");
    std::fs::create_dir_all(&shots).unwrap();
    let c = get_json(web, "/competitions/shown.json").await;
    let names: Vec<String> = c["standings"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    let rnd = get_json(web, "/bots/rnd.json").await;
    let typo = get_json(web, "/bots/typo.json").await;
    // The second page of the games list: the page lists what its JSON lists.
    let first = get_json(web, "/competitions/shown/games.json").await;
    let older = first["next_before"].as_i64().expect("more than a page of games");
    let listed = get_json(web, &format!("/competitions/shown/games.json?before={older}")).await;
    let listed: Vec<String> = listed["games"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].to_string())
        .collect();
    assert!(!listed.is_empty());
    let games_path = format!("/competitions/shown/games?before={older}");
    let pages = [
        ("front", "/".to_owned()),
        ("competition", "/competitions/shown".to_owned()),
        ("bot", "/bots/rnd".to_owned()),
        ("bot-faults", "/bots/typo".to_owned()),
        ("games", games_path),
    ];
    let checks = tokio::task::spawn_blocking(move || {
        for (name, path) in pages {
            let url = format!("{base}{path}");
            let page = dom(&browser, &profile, &url);
            match name {
                "front" | "competition" => {
                    let drawn: Vec<String> = attributes(&page, "data-bot")
                        .iter()
                        .map(|s| (*s).to_owned())
                        .collect();
                    assert_eq!(drawn, names, "{path}: the standings in their order");
                    assert_eq!(attributes(&page, "data-interval").len(), names.len(), "{path}");
                }
                "bot" => {
                    let history = rnd["competitions"][0]["rating_history"].as_array().unwrap();
                    let want: Vec<String> = history
                        .iter()
                        .map(|p| format!("{}:{:.1}", p["games"], p["elo"].as_f64().unwrap()))
                        .collect();
                    assert_eq!(
                        attributes(&page, "data-point"),
                        want,
                        "{path}: the chart's points"
                    );
                }
                "games" => {
                    assert_eq!(attributes(&page, "data-game"), listed, "{path}");
                    assert!(
                        page.contains(">Newest</a>"),
                        "{path}: a link back to the first page"
                    );
                }
                _ => {
                    let kinds: Vec<&str> = typo["competitions"][0]["faults_by_kind"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t["kind"].as_str().unwrap())
                        .collect();
                    assert_eq!(attributes(&page, "data-kind"), kinds, "{path}");
                    assert!(!page.contains("pyhton3"), "{path}");
                }
            }
            for (size, width) in [((1200, 1400), "desktop"), ((390, 1600), "phone")] {
                screenshot(
                    &browser,
                    &profile,
                    &url,
                    size,
                    &shots.join(format!("{name}-{width}.png")),
                );
            }
        }
        let _ = std::fs::remove_dir_all(&profile);
    });
    checks.await.unwrap();
    server.stop().await;
}

/// What a dishonest worker does to have a bot suspended: it leases a group, plays
/// it with `victim`'s command swapped for one that cannot start, and reports the
/// records (which name seats by their bots, not their commands). Replay cannot
/// tell such a spawn fault from a real one. Returns whether there was a group to
/// forge.
async fn forge_spawn_faults(w: &mut Client, victim: &str) -> bool {
    let lease = lease_ready(w, LeaseRequest::default()).await;
    if !lease.has_work {
        return false;
    }
    let mut forged = lease.clone();
    for e in &mut forged.entrants {
        if e.bot == victim {
            e.spec = "/nonexistent/astragal-victim".into();
        }
    }
    let records = play_by_hand(&forged).await;
    assert_eq!(
        report(w, &lease, records).await,
        ReportOutcome::Recorded,
        "the forgery replays"
    );
    true
}

/// Three reports of forged spawn faults from one worker suspended a bot and
/// starved a two-bot competition. A run of failed starts now needs two workers
/// to have seen it (one, while the ladder has a single worker); voiding a worker
/// undoes the suspensions it caused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_cannot_suspend_a_bot_and_voiding_it_undoes_what_it_caused() {
    for store in test_stores("forgedspawn").await {
        let kind = store.kind;
        let (server, mut a) = opened(&store.url, "forge", 200, &[BOTS[0], BOTS[2]]).await;
        let honest = a
            .add_worker(AddWorkerRequest { name: "w2".into() })
            .await
            .unwrap()
            .into_inner()
            .token;
        let mut w1 = worker::connect(&server.url, WORKER, None).await.unwrap();
        // Eight failed starts (two a group), past the five that suspend.
        for _ in 0..4 {
            assert!(forge_spawn_faults(&mut w1, "rnd").await, "{kind}");
        }
        let rnd = &bots_by_name(&mut a).await["rnd"];
        assert_eq!(
            rnd.status(),
            BotStatus::Active,
            "{kind}: one worker suspended it: {rnd:?}"
        );
        assert_eq!(rnd.start_failures, 8, "{kind}");
        // The honest worker still has work.
        let mut w2 = worker::connect(&server.url, &honest, None).await.unwrap();
        let (lease, records) = lease_and_play(&mut w2).await;
        assert_eq!(
            report(&mut w2, &lease, records).await,
            ReportOutcome::Recorded,
            "{kind}"
        );
        // It started there: the run begins again.
        assert_eq!(bots_by_name(&mut a).await["rnd"].start_failures, 0, "{kind}");
        // With the honest worker gone, w1 is the ladder's only worker and its
        // reports alone count: a run of five suspends.
        a.revoke_worker(WorkerRequest { name: "w2".into() })
            .await
            .unwrap();
        for _ in 0..3 {
            assert!(forge_spawn_faults(&mut w1, "rnd").await, "{kind}");
        }
        let rnd = &bots_by_name(&mut a).await["rnd"];
        assert_eq!(rnd.status(), BotStatus::Suspended, "{kind}: {rnd:?}");
        // Voiding w1 undoes it: the bot is back, its run without w1's part.
        a.void_worker(WorkerRequest { name: "w1".into() }).await.unwrap();
        let rnd = &bots_by_name(&mut a).await["rnd"];
        assert_eq!(
            (rnd.status(), rnd.start_failures),
            (BotStatus::Active, 0),
            "{kind}: {rnd:?}"
        );
        server.stop().await;
    }
}

async fn lease_up_to_64(w: &mut Client) -> Vec<LeaseReply> {
    w.lease_groups(LeaseGroupsRequest {
        max_groups: 64,
        ..Default::default()
    })
    .await
    .unwrap()
    .into_inner()
    .groups
}

/// One worker token looping on 64-group leases held 69,889 groups in 20 s; any
/// worker could report another's lease; a worker that let a lease expire got the
/// same group, with the same seed, again. Now a worker holds at most
/// `--held-per-worker` groups, a lease is reported only by its worker, and an
/// expired group goes to another worker with a new seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cannot_hoard_leases_report_anothers_or_see_a_seed_twice() {
    for store in test_stores("hoard").await {
        let kind = store.kind;
        let clock = Clock::manual(system_ms());
        let server = start_clocked(&store.url, Duration::from_secs(60), 4, &clock).await;
        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        setup(&mut a, "hoard", 400, BOTS).await;
        let other = a
            .add_worker(AddWorkerRequest { name: "w2".into() })
            .await
            .unwrap()
            .into_inner()
            .token;
        let mut w1 = worker::connect(&server.url, WORKER, None).await.unwrap();
        let mut w2 = worker::connect(&server.url, &other, None).await.unwrap();
        let held = lease_groups_ready(&mut w1, 64).await;
        assert_eq!(held.len(), 4, "{kind}");
        assert!(
            lease_up_to_64(&mut w1).await.is_empty(),
            "{kind}: a fifth group while holding four"
        );
        assert_eq!(
            lease_groups_ready(&mut w2, 64).await.len(),
            4,
            "{kind}: the others still get work"
        );
        // w2 reports w1's lease, played honestly: nothing is stored.
        let records = play_by_hand(&held[0]).await;
        let reply = w2
            .report(ReportRequest {
                logs: Vec::new(),
                lease: held[0].lease.clone(),
                group_id: held[0].group_id,
                records: records.clone(),
            })
            .await;
        assert!(
            reply
                .as_ref()
                .map_or(true, |r| r.get_ref().outcome() != ReportOutcome::Recorded),
            "{kind}: another worker's lease was recorded: {reply:?}"
        );
        // Every lease runs out.
        clock.advance(Duration::from_secs(61));
        let again = lease_up_to_64(&mut w1).await;
        let before: std::collections::HashMap<i64, u64> = held.iter().map(|g| (g.group_id, g.seed)).collect();
        assert!(
            again.iter().all(|g| !before.contains_key(&g.group_id)),
            "{kind}: w1 got back a group it let expire"
        );
        let theirs = lease_groups_ready(&mut w2, 64).await;
        let back: Vec<&LeaseReply> = theirs
            .iter()
            .filter(|g| before.contains_key(&g.group_id))
            .collect();
        assert!(
            !back.is_empty(),
            "{kind}: w1's expired groups went to w2: {theirs:?}"
        );
        for g in back {
            assert_ne!(
                g.seed, before[&g.group_id],
                "{kind}: group {} dealt its seed twice",
                g.group_id
            );
        }
        // w1's old lease of a group now held by w2 stores nothing.
        let late = w1
            .report(ReportRequest {
                logs: Vec::new(),
                lease: held[0].lease.clone(),
                group_id: held[0].group_id,
                records,
            })
            .await;
        assert!(
            late.map_or(true, |r| r.into_inner().outcome() != ReportOutcome::Recorded),
            "{kind}"
        );
        server.stop().await;
    }
}

/// A caller without a known token was answered only after its request's body was
/// read and decoded (80 concurrent 15 MiB messages cost the server 200 MiB). Now
/// the token is checked from the headers first: a stranger's oversized report is
/// refused as unauthenticated, where a worker's is refused for its size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_without_a_token_is_refused_before_its_body_is_read() {
    for store in test_stores("bodyauth").await {
        let kind = store.kind;
        let server = start(&store.url, Duration::from_secs(60)).await;
        let huge = || ReportGroupsRequest {
            reports: vec![ReportRequest {
                logs: Vec::new(),
                lease: "a-lease".into(),
                group_id: 1,
                records: vec!["x".repeat(17 << 20)],
            }],
        };
        let mut stranger = worker::connect(&server.url, "no-token-of-this-ladder", None)
            .await
            .unwrap();
        let e = stranger.report_groups(huge()).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{kind}: {e}");
        // Read by a worker, the same body meets the size limit: the check above
        // came first.
        let mut w = worker::connect(&server.url, WORKER, None).await.unwrap();
        let e = w.report_groups(huge()).await.unwrap_err();
        assert_ne!(e.code(), Code::Unauthenticated, "{kind}: {e}");
        assert!(e.message().contains("message"), "{kind}: {e}");
        server.stop().await;
    }
}

/// `ladder admin open` on PostgreSQL once committed the competition and then added
/// its entrants one at a time, while the scheduler looked every 200 ms: a run gave
/// all its groups to one pair, and three entrants never played. Held mid-open (its
/// entrants' table locked by another connection), the competition must not be seen
/// at all; released, it has every bot of its game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_competition_is_never_seen_half_opened() {
    use sqlx::Connection;
    let Some(pg) = postgres_store("open_race").await else {
        return;
    };
    let store = Store::open(&pg.url).await.unwrap();
    for i in 0..40 {
        store
            .bots()
            .register_bot(&format!("b{i}"), "ur", "builtin:random", &[])
            .await
            .unwrap();
    }
    store
        .bots()
        .register_bot("other", "cuatto", "builtin:random", &[])
        .await
        .unwrap();
    let mut lock = sqlx::AnyConnection::connect(&pg.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut lock).await.unwrap();
    sqlx::query("LOCK TABLE entrants IN EXCLUSIVE MODE")
        .execute(&mut lock)
        .await
        .unwrap();
    let opening = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .competitions()
                .open_competition(&ladder::store::NewCompetition {
                    name: "main".into(),
                    game: "ur".into(),
                    options: vec![],
                    seats: 2,
                    format: ladder::store::CompetitionFormat::Ladder,
                    seed: 1,
                    max_games: 300,
                    time: "movetime=100".parse().unwrap(),
                    config: String::new(),
                    seeding: ladder::store::Seeding::Mirrored,
                })
                .await
        })
    };
    // Wait until the open is held on the lock (a backend waiting on a lock).
    let mut watch = sqlx::AnyConnection::connect(&pg.url).await.unwrap();
    let start = std::time::Instant::now();
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .fetch_one(&mut watch)
        .await
        .unwrap();
        if waiting > 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the open never reached the lock"
        );
        tokio::task::yield_now().await;
    }
    // Mid-open, from another connection: no competition, so nothing to schedule.
    let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM competitions WHERE name = 'main'")
        .fetch_one(&mut watch)
        .await
        .unwrap();
    assert_eq!(seen, 0, "the competition was visible before its entrants");
    sqlx::query("ROLLBACK").execute(&mut lock).await.unwrap();
    let c = opening.await.unwrap().unwrap();
    let entrants = store.competitions().entrants(c.id).await.unwrap();
    assert_eq!(entrants.len(), 40, "every bot of the game enters, no other");
    store.games().close().await;
}

/// A bot that thought over every move made its group outlive the lease (then a
/// fixed 120 s; 1.2 s here, renewed every 400 ms): the group was dealt again to the same worker, whose
/// kept processes knew every die of it, and later with a new seed to another
/// worker while the first one's report was refused, again and again. Now a lease
/// lasts at least three of the time control's longest decisions and the worker
/// renews it while it plays: two workers compete for one slow group, and it is
/// recorded once, from the deal it was first given, with no game lost on time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_bot_never_outlives_its_lease_nor_sees_its_group_dealt_twice() {
    for store in test_stores("slow").await {
        let kind = store.kind;
        let server = start(&store.url, Duration::from_millis(1200)).await;
        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        let slow = format!(
            "{} --mode ponder --think 100",
            astragal_tests::binary("hostile_bot").display()
        );
        for (name, spec) in [("slow", slow.as_str()), ("quick", "builtin:random")] {
            a.register_bot(RegisterBotRequest {
                name: name.into(),
                game: "ur".into(),
                spec: spec.into(),
                env: vec![],
            })
            .await
            .unwrap();
        }
        a.open_competition(OpenCompetitionRequest {
            name: "slow".into(),
            game: "ur".into(),
            options: vec!["max_turns=40".into()],
            seed: Some(5),
            max_games: 2,
            movetime_ms: 150,
            ..Default::default()
        })
        .await
        .unwrap();
        let other = a
            .add_worker(AddWorkerRequest { name: "w2".into() })
            .await
            .unwrap()
            .into_inner()
            .token;
        let w1 = WorkerConfig {
            max_groups: Some(1),
            ..until_idle(&server.url, "w1", 1)
        };
        let w2 = WorkerConfig {
            token: other,
            max_groups: Some(1),
            ..until_idle(&server.url, "w2", 1)
        };
        let (r1, r2) = tokio::join!(
            worker::run(w1, std::future::pending()),
            worker::run(w2, std::future::pending())
        );
        assert_eq!(
            r1.unwrap() + r2.unwrap(),
            1,
            "{kind}: one report of the group, taken"
        );
        let records = all_records(&mut a, "slow").await;
        assert_eq!(records.len(), 2, "{kind}");
        let slow_moves: usize = records
            .iter()
            .map(|r| {
                r.moves
                    .iter()
                    .filter(|m| r.seats[m.seat].entrant.as_deref() == Some("slow"))
                    .count()
            })
            .sum();
        assert!(
            slow_moves >= 20,
            "{kind}: the slow bot thought {slow_moves} times, {} ms in all: not past its 1.2 s lease",
            slow_moves * 100
        );
        for r in &records {
            // A process's group is dealt a seed per rotation (played whole on
            // one kernel), each from the group's first deal.
            let p = r.pairing.unwrap();
            assert_eq!(
                r.seed,
                engine::rotation_seed(engine::group_seed(5, p.group), p.rotation as u64),
                "{kind}: group {} was recorded from a second deal",
                p.group
            );
            assert!(r.faults.is_empty(), "{kind}: {:?}", r.faults);
        }
        server.stop().await;
    }
}

/// A gRPC bot that remembers every game it is told about: at turn 2 of Spartan it
/// learns both armies' first rolls; at turn 1 of a later game, if its own first
/// roll is one an opponent rolled before, it predicts this opponent's roll as its
/// own roll of that game (in a mirrored group the seats swap dice), and counts the
/// predictions that come true.
#[derive(Default)]
struct Correlations {
    /// (own first roll, the opponent's) of every game seen to turn 2.
    games: Vec<(String, String)>,
    predictions: u32,
    hits: u32,
    sessions: u32,
}

struct Correlator {
    seen: std::sync::Arc<std::sync::Mutex<Correlations>>,
    own_first: Option<String>,
    prediction: Option<String>,
}

fn roll_key(dice: &serde_json::Value) -> String {
    let mut faces: Vec<u64> = dice
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    faces.sort_unstable();
    faces.iter().map(u64::to_string).collect()
}

impl bots::Bot for Correlator {
    fn name(&self) -> String {
        "correlator".into()
    }

    fn new_game(&mut self, _game: &str, _seats: usize, _seat: usize, _options: &[String]) {
        self.own_first = None;
        self.prediction = None;
        self.seen.lock().unwrap().sessions += 1;
    }

    fn choose(&mut self, view: &bots::View<'_>) -> String {
        let obs = view.observation;
        if obs["phase"] == "reroll1" {
            let mut seen = self.seen.lock().unwrap();
            match obs["turn"].as_u64() {
                Some(1) => {
                    let mine = roll_key(&obs["your_dice"]);
                    self.prediction = seen
                        .games
                        .iter()
                        .find(|(_, theirs)| *theirs == mine)
                        .map(|(theirs_then, _)| theirs_then.clone());
                    self.own_first = Some(mine);
                }
                Some(2) => {
                    let theirs = roll_key(&obs["last_reveal"]["dice"][1 - view.seat]);
                    if let Some(p) = self.prediction.take() {
                        seen.predictions += 1;
                        seen.hits += u32::from(p == theirs);
                    }
                    if let Some(mine) = self.own_first.take() {
                        seen.games.push((mine, theirs));
                    }
                }
                _ => {}
            }
        }
        view.legal[0].to_owned()
    }
}

/// A gRPC bot is one server, so it saw both games of every mirrored group and
/// knew the opponent's dice in the second (20/20 in `tournament`, 10/10 on a
/// ladder). Groups with a gRPC bot are now dealt independent seeds: dealt
/// mirrored (a lease played by hand, as before) the correlator predicts the other
/// army's first roll in most second games; through the server and a worker,
/// `ladder tournament`, `ladder sprt` and `referee match`, it predicts none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_bot_that_correlates_the_games_of_a_group_learns_nothing() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Correlations::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("grpc://{}", listener.local_addr().unwrap());
    let make: bots::grpc::BotFactory = {
        let seen = seen.clone();
        std::sync::Arc::new(move || {
            Box::new(Correlator {
                seen: seen.clone(),
                own_first: None,
                prediction: None,
            })
        })
    };
    tokio::spawn(bots::grpc::serve_on(listener, make, std::future::pending()));
    let reset = || std::mem::take(&mut *seen.lock().unwrap());

    // The control: ten groups dealt mirrored, played by hand.
    for group in 0..10u64 {
        let lease = LeaseReply {
            has_work: true,
            game: "spartan".into(),
            seed: engine::group_seed(3, group),
            group_no: group,
            entrants: vec![
                Entrant {
                    bot: "correlator".into(),
                    spec: url.clone(),
                    env: vec![],
                    artifact_sha256: String::new(),
                },
                Entrant {
                    bot: "first".into(),
                    spec: "builtin:first".into(),
                    env: vec![],
                    artifact_sha256: String::new(),
                },
            ],
            time: "movetime=2000".parse().unwrap(),
            ..Default::default()
        };
        play_by_hand(&lease).await;
    }
    let mirrored = reset();
    assert_eq!(mirrored.sessions, 20);
    assert!(
        mirrored.hits >= 8,
        "mirrored, the correlator should know most second games' dice: {} of {} predictions",
        mirrored.hits,
        mirrored.predictions
    );

    // Through the service and a worker.
    for store in test_stores("correlate").await {
        let kind = store.kind;
        let server = start(&store.url, Duration::from_secs(60)).await;
        let mut a = worker::connect(&server.url, ADMIN, None).await.unwrap();
        for (name, spec) in [("correlator", url.as_str()), ("first", "builtin:first")] {
            a.register_bot(RegisterBotRequest {
                name: name.into(),
                game: "spartan".into(),
                spec: spec.into(),
                env: vec![],
            })
            .await
            .unwrap();
        }
        a.open_competition(OpenCompetitionRequest {
            name: "correlate".into(),
            game: "spartan".into(),
            seed: Some(3),
            max_games: 20,
            movetime_ms: 2000,
            ..Default::default()
        })
        .await
        .unwrap();
        let reported = worker::run(until_idle(&server.url, "w1", 1), std::future::pending())
            .await
            .unwrap();
        assert_eq!(reported, 10, "{kind}");
        let records = all_records(&mut a, "correlate").await;
        let mut seeds: Vec<u64> = records.iter().map(|r| r.seed).collect();
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), 20, "{kind}: every game its own seed");
        let served = reset();
        assert_eq!(served.sessions, 20, "{kind}");
        assert_eq!(
            served.hits, 0,
            "{kind}: the correlator knew the other army's roll in {} of {} predictions",
            served.hits, served.predictions
        );
        server.stop().await;
    }

    // Through `ladder tournament` (its own runtime, on a thread of its own).
    let tournament = {
        let url = url.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let store = rt.block_on(Store::open("sqlite::memory:")).unwrap();
            let cfg = ladder::local::tournament::TournamentConfig {
                name: "t".into(),
                game: "spartan".into(),
                options: vec![],
                seats: None,
                bots: vec![
                    ("correlator".into(), referee::BotSpec::parse(&url).unwrap()),
                    ("first".into(), referee::BotSpec::parse("builtin:first").unwrap()),
                ],
                format: ladder::local::tournament::Format::RoundRobin,
                games: 20,
                concurrency: 2,
                seed: Some(3),
                time: "movetime=2000".parse().unwrap(),
                independent_seeds: false,
                trusted_bots: false,
                log_dir: None,
                fresh_bots: false,
                sandbox: Default::default(),
                stop: None,
            };
            ladder::local::tournament::run(&rt, &store, &cfg, |_, _| {}).unwrap()
        })
    };
    let report = tokio::task::spawn_blocking(move || tournament.join().unwrap())
        .await
        .unwrap();
    assert_eq!(report.played, 20);
    let local = reset();
    assert_eq!(local.sessions, 20);
    assert_eq!(
        local.hits, 0,
        "tournament: the correlator knew the other army's roll in {} of {} predictions",
        local.hits, local.predictions
    );

    // Through `ladder sprt`: ten pairs (the two bots play alike, so it decides
    // nothing before its limit).
    let sprt = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            let cfg = ladder::local::sprt::SprtConfig {
                game: "spartan".into(),
                options: vec![],
                bots: vec![
                    ("correlator".into(), referee::BotSpec::parse(&url).unwrap()),
                    ("first".into(), referee::BotSpec::parse("builtin:first").unwrap()),
                ],
                test: rating::sprt::Sprt::new(rating::sprt::EloModel::Normalized, 0.0, 10.0, 0.05, 0.05)
                    .unwrap(),
                max_games: 20,
                concurrency: 2,
                seed: 3,
                limits: referee::Limits::default(),
                log_dir: None,
                fresh_bots: false,
                independent_seeds: false,
                trusted_bots: false,
                stop: None,
            };
            ladder::local::sprt::run(&cfg, |_, _, _| {}).unwrap()
        })
    };
    sprt.await.unwrap();
    let paired = reset();
    assert_eq!(paired.sessions, 20);
    assert_eq!(
        paired.hits, 0,
        "sprt: the correlator knew the other army's roll in {} of {} predictions",
        paired.hits, paired.predictions
    );

    // Through the `referee match` program.
    let referee = astragal_tests::binary("referee");
    let spec = url.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(referee)
            .args(["match", "--game", "spartan", "--games", "20", "--seed", "3"])
            .args(["--bot", &spec, "--bot", "builtin:first"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let matched = reset();
    assert_eq!(matched.sessions, 20);
    assert_eq!(
        matched.hits, 0,
        "match: the correlator knew the other army's roll in {} of {} predictions",
        matched.hits, matched.predictions
    );
}
