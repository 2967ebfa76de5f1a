//! An author's caps hold when a hostile author sends their requests all at once,
//! on SQLite and (with ASTRAGAL_PG_URL) PostgreSQL: challenge games a day, bots,
//! versions a day and bytes kept. Before, each cap was a count and an insert in
//! a READ COMMITTED transaction with no lock: 20 challenges of 100 games sent at
//! once against a cap of 200 games a day were granted 7 (708 games).

use astragal_tests::test_stores;
use ladder::app::{self, UploadConfig};
use ladder::store::{BotStatus, PrepResult, Store, UploadQuota};
use ladder::worker::{self, Client};
use proto::ladder::*;
use tonic::Code;

const ADMIN: &str = "admin-token-quotas";
const ALICE: &str = "author-token-alice-quotas";
const BOB: &str = "author-token-bob-quotas";

/// How many calls go at once.
const AT_ONCE: usize = 40;

/// No floor to speak of, for the uploads sent at once: forty on one connection
/// share its flow-control window, and on a busy machine one waited longer than
/// the default grace for its first bytes and was cut as too slow (seen in CI).
/// These tests are of the caps; the floor has its own
/// (`an_upload_slower_than_the_floor_is_cut_saying_so`).
const PATIENT: app::UploadFloor = app::UploadFloor {
    bytes_per_s: 1,
    grace: std::time::Duration::from_secs(3600),
};

use astragal_tests::in_process::{InProcessServer as Server, config};

/// A server on `db` with author alice (at most `max_bots` bots), every upload
/// received and checked at once (none waits for a turn: all reach the store
/// together).
async fn serve(db: &str, max_bots: i64, uploads: UploadConfig) -> Server {
    let store = Store::open(db).await.expect("store opens");
    store
        .authors()
        .add_author("alice", &app::token_hash(ALICE), max_bots)
        .await
        .unwrap();
    let uploads = UploadConfig {
        at_once: AT_ONCE,
        arriving_per_author: AT_ONCE,
        ..uploads
    };
    Server::start(store, config(ADMIN, uploads), false).await
}

/// A bot folder named `name`, with `filler` bytes of noise (which gzip cannot
/// shrink) drawn from `seed`, packed as `ladder submit` packs it.
fn folder(name: &str, filler: usize, seed: u64) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("astragal.toml"),
        format!("name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("bot.py"), format!("print({seed})\n")).unwrap();
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let noise: Vec<u8> = (0..filler)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::write(dir.path().join("noise.bin"), noise).unwrap();
    ladder::submission::pack_folder(dir.path()).unwrap()
}

async fn submit(mut c: Client, bytes: Vec<u8>) -> Result<SubmitReply, tonic::Status> {
    let chunks: Vec<UploadChunk> = bytes
        .chunks(100_000)
        .map(|d| UploadChunk { data: d.to_vec() })
        .collect();
    c.submit(tokio_stream::iter(chunks))
        .await
        .map(tonic::Response::into_inner)
}

/// Runs every call at once (each its own task, started before any is awaited)
/// and splits what came back: the answers granted, and the refusals' messages,
/// each checked to be `FailedPrecondition` saying `why`.
async fn at_once<T, F>(calls: Vec<F>, why: &str) -> (Vec<T>, Vec<String>)
where
    T: Send + 'static,
    F: Future<Output = Result<T, tonic::Status>> + Send + 'static,
{
    let tasks: Vec<_> = calls.into_iter().map(tokio::spawn).collect();
    let (mut granted, mut refused) = (Vec::new(), Vec::new());
    for t in tasks {
        match t.await.unwrap() {
            Ok(v) => granted.push(v),
            Err(s) => {
                assert_eq!(s.code(), Code::FailedPrecondition, "{}", s.message());
                assert!(s.message().contains(why), "{}", s.message());
                refused.push(s.message().to_owned());
            }
        }
    }
    (granted, refused)
}

/// Alice's bot `name` uploaded, built and checked (by hand, as a worker would
/// report it): active. Again, a new version of it (another `seed`).
async fn active_bot(store: &Store, name: &str, seed: u64) {
    let alice = store.authors().author("alice").await.unwrap().unwrap();
    let bytes = folder(name, 0, seed);
    let sub = ladder::submission::Submission::check(
        &bytes,
        &ladder::submission::ArchiveLimits::default(),
        &ladder::submission::all_runtimes(),
    )
    .unwrap();
    let bot = store
        .authors()
        .submit(&alice, &sub, &UploadQuota::UNLIMITED)
        .await
        .unwrap()
        .remove(0);
    let worker = format!("w-{name}-{seed}");
    let w = store
        .workers()
        .add_worker(&worker, &app::token_hash(&worker))
        .await
        .unwrap();
    store
        .preps()
        .lease_prep(w.id, &["python3".to_owned()], "prep", 60_000, 60_000)
        .await
        .unwrap()
        .unwrap();
    let passed = PrepResult::Passed {
        artifact: sub.artifact.sha256.clone(),
        build_log: String::new(),
        report: "ok".into(),
    };
    let (bot, _) = store
        .preps()
        .finish_prep(w.id, bot.id, "prep", &passed)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bot.status, BotStatus::Active);
}

/// 40 challenges of 10 games sent at once, against a cap of 200 games a day:
/// exactly 20 are opened (200 games), the other 20 refused saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn challenges_sent_at_once_are_granted_exactly_the_daily_cap() {
    for db in test_stores("quota_challenges").await {
        let uploads = UploadConfig {
            challenge_games_per_day: 200,
            ..UploadConfig::default()
        };
        let server = serve(&db.url, 3, uploads).await;
        active_bot(&server.store, "mine", 1).await;
        server
            .store
            .bots()
            .register_bot("rnd", "ur", "builtin:random", &[])
            .await
            .unwrap();
        let alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let calls: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                let mut c = alice.clone();
                async move {
                    c.challenge(ChallengeRequest {
                        bot: "mine".into(),
                        opponent: "rnd".into(),
                        games: 10,
                    })
                    .await
                    .map(tonic::Response::into_inner)
                }
            })
            .collect();
        let (granted, refused) = at_once(calls, "at most 200 challenge games a day").await;
        let author = server.store.authors().author("alice").await.unwrap().unwrap();
        let kept: i64 = server
            .store
            .challenges()
            .challenges_of(author.id)
            .await
            .unwrap()
            .iter()
            .map(|c| c.games)
            .sum();
        eprintln!(
            "{}: {AT_ONCE} challenges of 10 games at once, cap 200: {} granted, {kept} games kept",
            db.kind,
            granted.len()
        );
        assert_eq!((granted.len(), refused.len(), kept), (20, 20, 200), "{}", db.kind);
        server.stop().await;
    }
}

/// 40 uploads of new bots sent at once by an author who may have 3: exactly 3
/// bots are stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uploads_sent_at_once_are_granted_exactly_the_cap_of_bots() {
    for db in test_stores("quota_bots").await {
        let uploads = UploadConfig {
            floor: PATIENT,
            ..UploadConfig::default()
        };
        let server = serve(&db.url, 3, uploads).await;
        let alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let calls: Vec<_> = (0..AT_ONCE)
            .map(|k| submit(alice.clone(), folder(&format!("b{k}"), 0, k as u64)))
            .collect();
        let (granted, _) = at_once(calls, "the most this ladder gives you (3)").await;
        let author = server.store.authors().author("alice").await.unwrap().unwrap();
        let kept = server
            .store
            .authors()
            .bots_of_author(author.id)
            .await
            .unwrap()
            .len();
        eprintln!(
            "{}: {AT_ONCE} new bots at once, cap 3: {} granted, {kept} kept",
            db.kind,
            granted.len()
        );
        assert_eq!((granted.len(), kept), (3, 3), "{}", db.kind);
        server.stop().await;
    }
}

/// 40 new versions of one bot sent at once, against a cap of 5 versions a day:
/// exactly 5 are stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn versions_sent_at_once_are_granted_exactly_the_daily_cap() {
    for db in test_stores("quota_versions").await {
        let uploads = UploadConfig {
            versions_per_day: 5,
            floor: PATIENT,
            ..UploadConfig::default()
        };
        let server = serve(&db.url, 3, uploads).await;
        let alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let calls: Vec<_> = (0..AT_ONCE)
            .map(|k| submit(alice.clone(), folder("lucky", 0, k as u64)))
            .collect();
        let (granted, _) = at_once(calls, "at most 5 new versions a day").await;
        let author = server.store.authors().author("alice").await.unwrap().unwrap();
        let mut kept: Vec<String> = server
            .store
            .authors()
            .bots_of_author(author.id)
            .await
            .unwrap()
            .into_iter()
            .map(|b| b.name)
            .collect();
        kept.sort();
        eprintln!(
            "{}: {AT_ONCE} versions at once, cap 5 a day: {} granted, kept {kept:?}",
            db.kind,
            granted.len()
        );
        assert_eq!(granted.len(), 5, "{}", db.kind);
        assert_eq!(kept, ["lucky", "lucky@2", "lucky@3", "lucky@4", "lucky@5"]);
        server.stop().await;
    }
}

/// 40 uploads of 64 KiB of noise each sent at once, against a cap of 4.5 such
/// uploads' bytes: exactly 4 are stored, and what the store keeps for the
/// author stays under the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uploads_sent_at_once_never_pass_the_authors_bytes() {
    for db in test_stores("quota_bytes").await {
        const NOISE: usize = 64 << 10;
        let cap = (NOISE as u64) * 9 / 2;
        let uploads = UploadConfig {
            author_bytes: cap,
            versions_per_day: 1000,
            floor: PATIENT,
            ..UploadConfig::default()
        };
        let server = serve(&db.url, 3, uploads).await;
        let alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let calls: Vec<_> = (0..AT_ONCE)
            .map(|k| submit(alice.clone(), folder("heavy", NOISE, k as u64 + 1)))
            .collect();
        let (granted, _) = at_once(calls, "at most 294912 bytes of files").await;
        let mut kept = 0;
        for reply in &granted {
            let sha = &reply.source_sha256;
            let bytes = server.store.artifacts().artifact(sha).await.unwrap().unwrap();
            kept += bytes.len() as u64;
        }
        eprintln!(
            "{}: {AT_ONCE} uploads of 64 KiB at once, cap {cap} bytes: {} granted, {kept} bytes kept",
            db.kind,
            granted.len()
        );
        assert_eq!(granted.len(), 4, "{}", db.kind);
        assert!(kept <= cap, "{}: {kept} bytes kept", db.kind);
        server.stop().await;
    }
}

/// Builds are drawn round-robin across authors (issue 58): alice's five queued
/// versions never delay bob's first, uploaded after them. Before, the oldest
/// version went first, and bob's build waited for all five of alice's.
#[tokio::test]
async fn builds_are_drawn_round_robin_across_authors() {
    for db in test_stores("quota_builds").await {
        let store = Store::open(&db.url).await.expect("store opens");
        store
            .authors()
            .add_author("alice", &app::token_hash(ALICE), 10)
            .await
            .unwrap();
        store
            .authors()
            .add_author("bob", &app::token_hash(BOB), 10)
            .await
            .unwrap();
        let alice = store.authors().author("alice").await.unwrap().unwrap();
        let bob = store.authors().author("bob").await.unwrap().unwrap();
        let upload = |name: &str, seed: u64| {
            ladder::submission::Submission::check(
                &folder(name, 0, seed),
                &ladder::submission::ArchiveLimits::default(),
                &ladder::submission::all_runtimes(),
            )
            .unwrap()
        };
        for k in 0..5 {
            store
                .authors()
                .submit(&alice, &upload(&format!("alice{k}"), k), &UploadQuota::UNLIMITED)
                .await
                .unwrap();
        }
        store
            .authors()
            .submit(&bob, &upload("bob0", 9), &UploadQuota::UNLIMITED)
            .await
            .unwrap();
        let w = store
            .workers()
            .add_worker("w1", &app::token_hash("w1-token"))
            .await
            .unwrap();
        let mut order = Vec::new();
        for n in 0..6 {
            let job = store
                .preps()
                .lease_prep(
                    w.id,
                    &["python3".to_owned()],
                    &format!("prep-{n}"),
                    60_000,
                    60_000,
                )
                .await
                .unwrap()
                .expect("a version waits");
            order.push(job.name);
        }
        assert_eq!(
            order,
            ["alice0", "bob0", "alice1", "alice2", "alice3", "alice4"],
            "{}: the order builds were leased in",
            db.kind
        );
    }
}

async fn listed(c: &mut Client) -> Vec<ChallengeInfo> {
    c.my_challenges(MyChallengesRequest {})
        .await
        .unwrap()
        .into_inner()
        .challenges
}

/// A challenge whose bot got a new version plays no more, and says so wherever
/// it is listed (issue 58: it showed `0/10 games` for ever).
#[tokio::test]
async fn a_challenge_whose_bot_was_replaced_says_by_which_version() {
    for db in test_stores("quota_withdrawn").await {
        let server = serve(&db.url, 3, UploadConfig::default()).await;
        active_bot(&server.store, "mine", 1).await;
        server
            .store
            .bots()
            .register_bot("rnd", "ur", "builtin:random", &[])
            .await
            .unwrap();
        let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        alice
            .challenge(ChallengeRequest {
                bot: "mine".into(),
                opponent: "rnd".into(),
                games: 10,
            })
            .await
            .unwrap();
        let before = listed(&mut alice).await;
        assert_eq!(
            (before.len(), before[0].withdrawn.as_str()),
            (1, ""),
            "{}",
            db.kind
        );
        active_bot(&server.store, "mine", 2).await;
        active_bot(&server.store, "mine", 3).await;
        let after = listed(&mut alice).await;
        assert_eq!(
            after[0].withdrawn, "withdrawn: mine was replaced by mine@3",
            "{}: {after:?}",
            db.kind
        );
        // And one whose opponent the host took out of play.
        alice
            .challenge(ChallengeRequest {
                bot: "mine@3".into(),
                opponent: "rnd".into(),
                games: 10,
            })
            .await
            .unwrap();
        server
            .store
            .bots()
            .set_bot_status("rnd", BotStatus::Disabled, "")
            .await
            .unwrap();
        let now = listed(&mut alice).await;
        assert_eq!(
            (now[0].bot.as_str(), now[0].withdrawn.as_str()),
            ("mine@3", "withdrawn: rnd is disabled"),
            "{}: {now:?}",
            db.kind
        );
    }
}

/// An upload that sends one byte and then nothing, until `hold` is dropped.
fn trickle(
    mut c: Client,
) -> (
    tokio::task::JoinHandle<Result<SubmitReply, tonic::Status>>,
    tokio::sync::mpsc::Sender<UploadChunk>,
) {
    let (hold, chunks) = tokio::sync::mpsc::channel(1);
    hold.try_send(UploadChunk { data: vec![0x1f] }).unwrap();
    let task = tokio::spawn(async move {
        c.submit(tokio_stream::wrappers::ReceiverStream::new(chunks))
            .await
            .map(tonic::Response::into_inner)
    });
    (task, hold)
}

/// Fair turns (issue 58): alice trickles two uploads at one byte and then
/// nothing, on a server that checks one upload at a time. Before, her two
/// uploads held every turn: bob's upload and a worker's built folder waited
/// 30 s and failed `UNAVAILABLE`. Now uploads arrive apart from the turns to
/// be checked, an author has at most two arriving (a third is refused at
/// once: `an_authors_third_upload_arriving_is_refused` in the service), and
/// workers' folders have turns of their own: bob's upload and the
/// worker's folder go through at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_author_holds_up_no_other_author_and_no_worker() {
    for db in test_stores("quota_trickle").await {
        let uploads = UploadConfig {
            at_once: 1,
            floor: app::UploadFloor {
                bytes_per_s: 1,
                grace: std::time::Duration::from_secs(600),
            },
            ..UploadConfig::default()
        };
        let store = Store::open(&db.url).await.expect("store opens");
        for (name, token) in [("alice", ALICE), ("bob", BOB)] {
            store
                .authors()
                .add_author(name, &app::token_hash(token), 3)
                .await
                .unwrap();
        }
        store
            .workers()
            .add_worker("w1", &app::token_hash("w1-token"))
            .await
            .unwrap();
        let server = Server::start(store, config(ADMIN, uploads), false).await;
        let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let trickles = [trickle(alice.clone()), trickle(alice.clone())];
        // A call after hers on the same connection: her uploads are under way.
        alice.my_bots(MyBotsRequest {}).await.unwrap();
        let bob = worker::connect(&server.url, BOB, None).await.unwrap();
        let sent = submit(bob, folder("bobs", 0, 5)).await;
        assert!(sent.is_ok(), "{}: bob's upload: {sent:?}", db.kind);
        let mut w = worker::connect(&server.url, "w1-token", None).await.unwrap();
        let built = folder("built", 0, 6);
        let chunks = vec![UploadChunk { data: built }];
        let stored = w.upload_artifact(tokio_stream::iter(chunks)).await;
        assert!(stored.is_ok(), "{}: the worker's folder: {stored:?}", db.kind);
        for (task, _) in &trickles {
            assert!(
                !task.is_finished(),
                "{}: her trickles are still arriving",
                db.kind
            );
        }
        for (task, hold) in trickles {
            drop(hold);
            let _ = task.await;
        }
        server.stop().await;
    }
}

/// An upload slower than the host's floor is cut, saying so (issue 58: one at
/// a byte a second held its turn for the whole 256 s).
#[tokio::test]
async fn an_upload_slower_than_the_floor_is_cut_saying_so() {
    for db in test_stores("quota_floor").await {
        let uploads = UploadConfig {
            floor: app::UploadFloor {
                bytes_per_s: 16 * 1024,
                grace: std::time::Duration::from_millis(200),
            },
            ..UploadConfig::default()
        };
        let server = serve(&db.url, 3, uploads).await;
        let alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let (task, _hold) = trickle(alice);
        let cut = task.await.unwrap().unwrap_err();
        assert_eq!(cut.code(), Code::InvalidArgument, "{}: {cut:?}", db.kind);
        assert!(
            cut.message().contains("slower than 16 KiB/s"),
            "{}: {}",
            db.kind,
            cut.message()
        );
        server.stop().await;
    }
}
