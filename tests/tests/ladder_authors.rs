//! Authors through the ladder's gRPC API, on SQLite and (with ASTRAGAL_PG_URL) on
//! PostgreSQL: what an author's token opens (their own uploads and bots) and
//! what it does not (anyone else's bot, the admin's calls, the workers' calls,
//! the host's reads), revoked tokens, caps, and hostile uploads that store
//! nothing.

use astragal_tests::test_stores;
use ladder::app::{self, UploadConfig};
use ladder::store::Store;
use ladder::worker::{self, Client};
use proto::ladder::*;
use tonic::Code;

const ADMIN: &str = "admin-token-authors";
const WORKER: &str = "worker-token-authors";
const ALICE: &str = "author-token-alice-1";
const BOB: &str = "author-token-bob-22";

use astragal_tests::in_process::{InProcessServer as Server, config};

/// A server on `db` with worker `w1` and authors alice (2 bots) and bob.
async fn serve(db: &str, uploads: UploadConfig) -> Server {
    let store = Store::open(db).await.expect("store opens");
    store
        .workers()
        .add_worker("w1", &app::token_hash(WORKER))
        .await
        .unwrap();
    store
        .authors()
        .add_author("alice", &app::token_hash(ALICE), 2)
        .await
        .unwrap();
    store
        .authors()
        .add_author("bob", &app::token_hash(BOB), 3)
        .await
        .unwrap();
    Server::start(store, config(ADMIN, uploads), false).await
}

/// A bot's folder with this manifest and a one-line program, packed as
/// `ladder submit` packs it.
fn bot_folder(manifest: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("astragal.toml"), manifest).unwrap();
    std::fs::write(dir.path().join("bot.py"), "print('hello')\n").unwrap();
    ladder::submission::pack_folder(dir.path()).unwrap()
}

fn manifest(name: &str) -> String {
    format!("name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n")
}

async fn submit(c: &mut Client, bytes: Vec<u8>) -> Result<SubmitReply, tonic::Status> {
    let chunks: Vec<UploadChunk> = bytes
        .chunks(100_000)
        .map(|d| UploadChunk { data: d.to_vec() })
        .collect();
    c.submit(tokio_stream::iter(chunks))
        .await
        .map(tonic::Response::into_inner)
}

fn status_of(b: &BotInfo) -> BotStatus {
    BotStatus::try_from(b.status).unwrap()
}

/// Asserts `call` was refused with `code`, saying `what`.
fn refused<T: std::fmt::Debug>(call: Result<T, tonic::Status>, code: Code, what: &str) {
    match call {
        Ok(v) => panic!("{what}: answered {v:?}"),
        Err(s) => assert_eq!(s.code(), code, "{what}: {}", s.message()),
    }
}

fn set(name: &str, status: BotStatus) -> SetBotStatusRequest {
    SetBotStatusRequest {
        name: name.into(),
        status: status.into(),
        reason: String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authors_token_opens_their_own_bots_and_nothing_else() {
    for store in test_stores("authors_matrix").await {
        let server = serve(&store.url, UploadConfig::default()).await;
        let mut admin = worker::connect(&server.url, ADMIN, None).await.unwrap();
        let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let mut bob = worker::connect(&server.url, BOB, None).await.unwrap();
        let mut w1 = worker::connect(&server.url, WORKER, None).await.unwrap();

        // Alice uploads a bot: a new version, building, hers.
        let reply = submit(&mut alice, bot_folder(&manifest("lucky"))).await.unwrap();
        assert_eq!(reply.bots.len(), 1);
        let lucky = &reply.bots[0];
        assert_eq!(
            (lucky.name.as_str(), lucky.game.as_str(), lucky.version),
            ("lucky", "ur", 1)
        );
        assert_eq!(
            (status_of(lucky), lucky.author.as_str()),
            (BotStatus::Building, "alice")
        );
        assert_eq!(reply.source_sha256.len(), 64);
        let mine = alice.my_bots(MyBotsRequest {}).await.unwrap().into_inner().bots;
        assert_eq!(
            mine.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            ["lucky"]
        );
        assert!(
            bob.my_bots(MyBotsRequest {})
                .await
                .unwrap()
                .into_inner()
                .bots
                .is_empty()
        );

        // Bob can neither take her name nor touch her bot.
        let taken = submit(&mut bob, bot_folder(&manifest("lucky"))).await;
        refused(
            taken.clone(),
            Code::FailedPrecondition,
            "bob uploads alice's name",
        );
        assert!(taken.unwrap_err().message().contains("another author"));
        refused(
            bob.set_my_bot_status(set("lucky", BotStatus::Disabled)).await,
            Code::PermissionDenied,
            "bob disables alice's bot",
        );
        // Nor can anyone enable a version that has not passed its build and check.
        refused(
            alice.set_my_bot_status(set("lucky", BotStatus::Active)).await,
            Code::FailedPrecondition,
            "alice enables her building bot",
        );
        let admin_enables = admin.set_bot_status(set("lucky", BotStatus::Active)).await;
        assert!(
            admin_enables
                .as_ref()
                .is_err_and(|s| s.message().contains("build and check")),
            "{admin_enables:?}"
        );
        refused(
            admin
                .update_bot(RegisterBotRequest {
                    name: "lucky".into(),
                    game: String::new(),
                    spec: "./other".into(),
                    env: vec![],
                })
                .await,
            Code::AlreadyExists,
            "the admin replaces an author's upload",
        );

        // An author's token opens none of the admin's calls...
        let bot = || RegisterBotRequest {
            name: "x".into(),
            game: "ur".into(),
            spec: "builtin:random".into(),
            env: vec![],
        };
        for (what, call) in [
            ("register-bot", alice.register_bot(bot()).await.map(|_| ())),
            ("update-bot", alice.update_bot(bot()).await.map(|_| ())),
            ("list-bots", alice.list_bots(ListBotsRequest {}).await.map(|_| ())),
            (
                "set-bot-status",
                alice
                    .set_bot_status(set("lucky", BotStatus::Disabled))
                    .await
                    .map(|_| ()),
            ),
            (
                "add-worker",
                alice
                    .add_worker(AddWorkerRequest { name: "w9".into() })
                    .await
                    .map(|_| ()),
            ),
            (
                "list-workers",
                alice.list_workers(ListWorkersRequest {}).await.map(|_| ()),
            ),
            (
                "revoke-worker",
                alice
                    .revoke_worker(WorkerRequest { name: "w1".into() })
                    .await
                    .map(|_| ()),
            ),
            (
                "void-worker",
                alice
                    .void_worker(WorkerRequest { name: "w1".into() })
                    .await
                    .map(|_| ()),
            ),
            (
                "add-author",
                alice
                    .add_author(AddAuthorRequest {
                        name: "mallory".into(),
                        max_bots: 100,
                    })
                    .await
                    .map(|_| ()),
            ),
            (
                "revoke-author",
                alice
                    .revoke_author(AuthorRequest { name: "bob".into() })
                    .await
                    .map(|_| ()),
            ),
            (
                "open",
                alice
                    .open_competition(OpenCompetitionRequest {
                        name: "mine".into(),
                        game: "ur".into(),
                        ..Default::default()
                    })
                    .await
                    .map(|_| ()),
            ),
            (
                "close",
                alice
                    .close_competition(CloseCompetitionRequest { name: "c".into() })
                    .await
                    .map(|_| ()),
            ),
            // ... nor the host's reads ...
            (
                "list",
                alice
                    .list_competitions(ListCompetitionsRequest {})
                    .await
                    .map(|_| ()),
            ),
            (
                "standings",
                alice
                    .standings(StandingsRequest {
                        competition: "c".into(),
                    })
                    .await
                    .map(|_| ()),
            ),
            (
                "records",
                alice
                    .game_records(GameRecordsRequest {
                        competition: "c".into(),
                        ..Default::default()
                    })
                    .await
                    .map(|_| ()),
            ),
            // ... nor a worker's.
            ("lease", alice.lease(LeaseRequest::default()).await.map(|_| ())),
            (
                "lease-groups",
                alice
                    .lease_groups(LeaseGroupsRequest::default())
                    .await
                    .map(|_| ()),
            ),
            ("report", alice.report(ReportRequest::default()).await.map(|_| ())),
            (
                "report-groups",
                alice
                    .report_groups(ReportGroupsRequest::default())
                    .await
                    .map(|_| ()),
            ),
            (
                "renew",
                alice
                    .renew_leases(RenewLeasesRequest::default())
                    .await
                    .map(|_| ()),
            ),
        ] {
            refused(call, Code::PermissionDenied, &format!("an author calls {what}"));
        }
        // And the author's calls are an author's only: not a worker's, not the admin's.
        for (who, c) in [("worker", &mut w1), ("admin", &mut admin)] {
            refused(
                submit(c, bot_folder(&manifest("sneaky"))).await,
                Code::PermissionDenied,
                &format!("{who} submits"),
            );
            refused(
                c.my_bots(MyBotsRequest {}).await,
                Code::PermissionDenied,
                &format!("{who} reads my-bots"),
            );
            refused(
                c.set_my_bot_status(set("lucky", BotStatus::Disabled)).await,
                Code::PermissionDenied,
                &format!("{who} sets an author's status"),
            );
        }

        // A cap of two bots: a second name, then a third is refused; a new
        // version of one she has is not a new bot.
        submit(&mut alice, bot_folder(&manifest("second"))).await.unwrap();
        let third = submit(&mut alice, bot_folder(&manifest("third"))).await;
        assert!(
            third.as_ref().is_err_and(|s| s.code() == Code::FailedPrecondition
                && s.message().contains("the most this ladder gives you (2)")
                && s.message().contains("ladder admin set-author NAME --max-bots N")),
            "{third:?}"
        );
        // The host raises her cap (an author only asks; a cap of 0 or of no
        // author is refused), and the third goes up.
        for (name, max_bots, code) in [("alice", 0, Code::InvalidArgument), ("nobody", 3, Code::NotFound)] {
            refused(
                admin
                    .set_author(SetAuthorRequest {
                        name: name.into(),
                        max_bots,
                    })
                    .await,
                code,
                &format!("set-author {name} --max-bots {max_bots}"),
            );
        }
        refused(
            alice
                .set_author(SetAuthorRequest {
                    name: "alice".into(),
                    max_bots: 9,
                })
                .await,
            Code::PermissionDenied,
            "an author raises her own cap",
        );
        let raised = admin
            .set_author(SetAuthorRequest {
                name: "alice".into(),
                max_bots: 3,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!((raised.name.as_str(), raised.max_bots), ("alice", 3));
        submit(&mut alice, bot_folder(&manifest("third"))).await.unwrap();
        let v2 = submit(
            &mut alice,
            bot_folder(&manifest("lucky").replace("bot.py", "bot.py --v2")),
        )
        .await
        .unwrap();
        assert_eq!((v2.bots[0].name.as_str(), v2.bots[0].version), ("lucky@2", 2));
        assert_eq!(v2.bots[0].previous, "lucky");
        // A manifest of two games: a bot per game, each of its own name.
        let two = manifest("pair").replace("[\"ur\"]", "[\"ur\", \"cuatto\"]");
        let pair = submit(&mut bob, bot_folder(&two)).await.unwrap();
        let names: Vec<(&str, &str)> = pair
            .bots
            .iter()
            .map(|b| (b.name.as_str(), b.game.as_str()))
            .collect();
        assert_eq!(names, [("pair-ur", "ur"), ("pair-cuatto", "cuatto")]);

        // The admin sees every author's bots, and whose they are.
        let all = admin
            .list_bots(ListBotsRequest {})
            .await
            .unwrap()
            .into_inner()
            .bots;
        let lucky2 = all.iter().find(|b| b.name == "lucky@2").unwrap();
        assert_eq!(lucky2.author, "alice");

        // A revoked author: every call refused at once (this server forgets the
        // token); her bots stay.
        admin
            .revoke_author(AuthorRequest { name: "alice".into() })
            .await
            .unwrap();
        refused(
            alice.my_bots(MyBotsRequest {}).await,
            Code::Unauthenticated,
            "a revoked author reads her bots",
        );
        refused(
            submit(&mut alice, bot_folder(&manifest("lucky"))).await,
            Code::Unauthenticated,
            "a revoked author submits",
        );
        let all = admin
            .list_bots(ListBotsRequest {})
            .await
            .unwrap()
            .into_inner()
            .bots;
        assert!(all.iter().any(|b| b.name == "lucky@2"));
        server.stop().await;
    }
}

/// One entry of a raw archive, written without the tar crate's path checks.
fn raw_tar(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_cksum();
        out.append(&h, *data).unwrap();
    }
    out.into_inner().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_upload_says_why_and_keeps_nothing() {
    for store in test_stores("authors_refused").await {
        let small = UploadConfig {
            limits: ladder::submission::ArchiveLimits {
                packed_bytes: 200_000,
                ..Default::default()
            },
            runtimes: vec!["python3".into()],
            ..UploadConfig::default()
        };
        let server = serve(&store.url, small).await;
        let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let good = manifest("lucky");
        let noise: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "escaping path",
                raw_tar(&[
                    ("astragal.toml", good.as_bytes()),
                    ("../../etc/cron.d/x", b"* * * * * root sh"),
                ]),
                "`..` in a path",
            ),
            (
                "absolute path",
                raw_tar(&[
                    ("astragal.toml", good.as_bytes()),
                    ("/root/.ssh/authorized_keys", b"ssh-ed25519"),
                ]),
                "an absolute path",
            ),
            (
                "over the host's packed limit",
                raw_tar(&[("astragal.toml", good.as_bytes()), ("noise", &noise)]),
                "at most 200000 bytes packed",
            ),
            (
                "a runtime this host does not offer",
                bot_folder(&good.replace("python3\"\nrun", "node\"\nrun")),
                "this ladder offers python3",
            ),
            (
                "a run line that names the host's /proc and sockets",
                bot_folder(&good.replace("python3 bot.py", "python3 bot.py /proc /run/postgresql")),
                "\"/proc\" names a path outside the bot's folder",
            ),
            (
                "a link that leaves once the single top folder is taken away",
                {
                    let mut out = tar::Builder::new(Vec::new());
                    let mut dir = tar::Header::new_gnu();
                    dir.set_entry_type(tar::EntryType::Directory);
                    dir.set_mode(0o755);
                    dir.set_size(0);
                    out.append_data(&mut dir, "top", std::io::empty()).unwrap();
                    let mut file = tar::Header::new_gnu();
                    file.set_mode(0o644);
                    file.set_size(good.len() as u64);
                    out.append_data(&mut file, "top/astragal.toml", good.as_bytes())
                        .unwrap();
                    let mut up = tar::Header::new_gnu();
                    up.set_entry_type(tar::EntryType::Symlink);
                    up.set_mode(0o777);
                    up.set_size(0);
                    out.append_link(&mut up, "top/up", "..").unwrap();
                    out.into_inner().unwrap()
                },
                "leads out",
            ),
            ("no manifest", raw_tar(&[("bot.py", b"")]), "no `astragal.toml`"),
            (
                "not an archive",
                b"PK\x03\x04 a zip".to_vec(),
                "not a tar archive",
            ),
        ];
        for (what, bytes, says) in cases {
            let got = submit(&mut alice, bytes).await;
            match got {
                Err(s) => {
                    assert_eq!(s.code(), Code::InvalidArgument, "{what}: {}", s.message());
                    assert!(s.message().contains(says), "{what}: {}", s.message());
                }
                Ok(r) => panic!("{what}: taken as {r:?}"),
            }
        }
        assert!(
            alice
                .my_bots(MyBotsRequest {})
                .await
                .unwrap()
                .into_inner()
                .bots
                .is_empty()
        );
        let store_now = Store::open(&store.url).await.unwrap();
        assert!(
            store_now.bots().all().await.unwrap().is_empty(),
            "a refused upload left a bot"
        );
        // And the same folder, well formed, is taken.
        submit(&mut alice, bot_folder(&good)).await.unwrap();
        server.stop().await;
    }
}

/// A worker's cache of uploaded bots: a hit costs no transfer, and an artifact
/// whose bytes are not what its hash names (tampered with in the store, or cut
/// short) is refused and never unpacked, so never run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_or_truncated_artifact_is_never_unpacked_and_a_cache_hit_is_free() {
    use ladder::worker::artifacts::ArtifactCache;
    for store in test_stores("authors_tamper").await {
        let server = serve(&store.url, UploadConfig::default()).await;
        let mut bob = worker::connect(&server.url, BOB, None).await.unwrap();
        let mut w1 = worker::Api::connect(&server.url, WORKER, None).await.unwrap();
        let mut shas = Vec::new();
        for name in ["one", "two", "three"] {
            shas.push(
                submit(&mut bob, bot_folder(&manifest(name)))
                    .await
                    .unwrap()
                    .source_sha256,
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::open(&dir.path().join("cache"), 1 << 30).unwrap();
        let pinned = cache.folder(&mut w1, &shas[0]).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(pinned.dir.join("bot.py")).unwrap(),
            "print('hello')\n"
        );
        assert_eq!(cache.fetched(), 1);
        let again = cache.folder(&mut w1, &shas[0]).await.unwrap();
        assert_eq!(
            (again.dir.clone(), cache.fetched()),
            (pinned.dir.clone(), 1),
            "a hit fetched again"
        );

        // The store's bytes changed under their name, then cut short.
        let db = Store::open(&store.url).await.unwrap();
        let mut bytes = db.artifacts().artifact(&shas[1]).await.unwrap().unwrap();
        let last = bytes.len() - 10;
        bytes[last] ^= 0x55;
        sqlx::any::install_default_drivers();
        let raw = sqlx::AnyPool::connect(&store.url).await.unwrap();
        let replace = |sha: String, content: Vec<u8>| {
            let raw = raw.clone();
            async move {
                sqlx::query("UPDATE artifacts SET content = $1 WHERE sha256 = $2")
                    .bind(content)
                    .bind(sha)
                    .execute(&raw)
                    .await
                    .unwrap();
            }
        };
        replace(shas[1].clone(), bytes).await;
        let whole = db.artifacts().artifact(&shas[2]).await.unwrap().unwrap();
        replace(shas[2].clone(), whole[..whole.len() / 2].to_vec()).await;
        for sha in &shas[1..] {
            let err = cache.folder(&mut w1, sha).await.unwrap_err().to_string();
            assert!(
                err.contains("tampered with or cut short") && err.contains(sha.as_str()),
                "{err}"
            );
            assert!(
                !dir.path().join("cache").join(sha).exists(),
                "a refused artifact was unpacked"
            );
        }
        assert_eq!(cache.fetched(), 1);
        // An artifact that is not a hash at all never reaches the server or the disk.
        let err = cache.folder(&mut w1, "../../etc").await.unwrap_err().to_string();
        assert!(err.contains("not a SHA-256"), "{err}");
        server.stop().await;
    }
}

/// With `--artifacts DIR` the files go to the object store and the database
/// keeps their names: a worker fetches them through the server all the same,
/// and bytes changed in the object store are refused by their hash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_kept_in_an_object_store_are_fetched_and_checked_the_same() {
    use ladder::app::objects::ObjectArtifacts;
    use ladder::worker::artifacts::ArtifactCache;
    for store in test_stores("authors_objects").await {
        let dir = tempfile::tempdir().unwrap();
        let objects = dir.path().join("objects");
        let uploads = UploadConfig {
            objects: Some(std::sync::Arc::new(
                ObjectArtifacts::open(&objects.to_string_lossy()).unwrap(),
            )),
            ..UploadConfig::default()
        };
        let server = serve(&store.url, uploads).await;
        let mut bob = worker::connect(&server.url, BOB, None).await.unwrap();
        let mut w1 = worker::Api::connect(&server.url, WORKER, None).await.unwrap();
        let one = submit(&mut bob, bot_folder(&manifest("one")))
            .await
            .unwrap()
            .source_sha256;
        let two = submit(
            &mut bob,
            bot_folder(&manifest("two").replace("bot.py", "bot.py --two")),
        )
        .await
        .unwrap()
        .source_sha256;
        let db = Store::open(&store.url).await.unwrap();
        assert_eq!(
            db.artifacts().artifact_row(&one).await.unwrap(),
            Some(None),
            "the bytes went to the database"
        );
        assert!(objects.join(&one).is_file() && objects.join(&two).is_file());
        let cache = ArtifactCache::open(&dir.path().join("cache"), 1 << 30).unwrap();
        let pinned = cache.folder(&mut w1, &one).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(pinned.dir.join("bot.py")).unwrap(),
            "print('hello')\n"
        );
        let mut bytes = std::fs::read(objects.join(&two)).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        std::fs::write(objects.join(&two), bytes).unwrap();
        let err = cache.folder(&mut w1, &two).await.unwrap_err().to_string();
        assert!(err.contains("tampered with or cut short"), "{err}");
        server.stop().await;
    }
}
