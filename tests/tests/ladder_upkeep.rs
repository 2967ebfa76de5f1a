//! The store's own upkeep vacuums and analyzes the tables reports churn on
//! PostgreSQL (the lease path walks dead index entries and plans without
//! statistics otherwise, when the host runs no autovacuum), and is a no-op on
//! SQLite.

use astragal_tests::test_stores;
use ladder::store::{BotId, CompetitionFormat, LeaseAsk, NewCompetition, Seeding, Store, token_hash};

/// The churned tables PostgreSQL has no vacuum and analysis of (by anyone).
async fn unkept(url: &str) -> Vec<String> {
    use sqlx::{Connection, Row};
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    let rows = sqlx::query(
        "SELECT relname::TEXT FROM pg_stat_user_tables
         WHERE relname IN ('match_groups', 'group_seats', 'games', 'fit_tally', 'bots') AND (COALESCE(last_vacuum, last_autovacuum) IS NULL
            OR COALESCE(last_analyze, last_autoanalyze) IS NULL)
         ORDER BY relname",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// How many groups the store holds leased.
async fn groups_leased(url: &str) -> i64 {
    use sqlx::Row;
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(url)
        .await
        .unwrap();
    sqlx::query("SELECT COUNT(*) FROM match_groups WHERE status = 'leased'")
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .get(0)
}

/// Four built-in bots entered in an open two-seat Ur ladder.
async fn four_bots_in_a_competition(store: &Store) -> (ladder::store::CompetitionRow, Vec<BotId>) {
    let mut bots: Vec<BotId> = Vec::new();
    for i in 0..4 {
        bots.push(
            store
                .bots()
                .register_bot(&format!("b{i}"), "ur", "builtin:random", &[])
                .await
                .unwrap()
                .id,
        );
    }
    let c = store
        .competitions()
        .create_competition(&NewCompetition {
            name: "c".into(),
            game: "ur".into(),
            options: vec![],
            seats: 2,
            format: CompetitionFormat::Ladder,
            seed: 1,
            max_games: 0,
            time: referee::TimeControl::move_time(100).expect("in range"),
            config: String::new(),
            seeding: Seeding::Mirrored,
        })
        .await
        .unwrap();
    for &b in &bots {
        store.competitions().add_entrant(c.id, b).await.unwrap();
    }
    (c, bots)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upkeep_vacuums_and_analyzes_every_churned_table_on_postgres() {
    for t in test_stores("upkeep").await {
        let store = Store::open(&t.url).await.unwrap();
        let (c, bots) = four_bots_in_a_competition(&store).await;
        store.workers().add_worker("w", &token_hash("w")).await.unwrap();
        let picks: Vec<Vec<BotId>> = (0..200).map(|i| vec![bots[i % 4], bots[(i + 1) % 4]]).collect();
        store.groups().schedule_many(&c, &picks).await.unwrap();
        // Leasing rewrites every scheduled row: dead tuples and dead index entries.
        let now = store.now_ms();
        let leased = store
            .groups()
            .lease_many(&LeaseAsk::new("w", "lease"), now, now + 60_000, 64, 1000)
            .await
            .unwrap();
        assert_eq!(leased.len(), 64, "{}", t.kind);

        if t.kind == "sqlite" {
            assert!(!store.upkeep().await.unwrap(), "SQLite needs no upkeep");
            continue;
        }
        let before = unkept(&t.url).await;
        assert!(
            before.contains(&"match_groups".to_owned()),
            "a fresh database, not vacuumed yet: {before:?}"
        );
        assert!(store.upkeep().await.unwrap());
        assert_eq!(
            unkept(&t.url).await,
            Vec::<String>::new(),
            "after upkeep every churned table is vacuumed and analyzed"
        );
    }
}

/// A lease holds at most what the worker asked for, however many groups wait
/// (before: a worker that asked for one was handed 256 of 512 on PostgreSQL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_holds_no_more_than_the_worker_asked_for() {
    for t in test_stores("lease_asked").await {
        let store = Store::open(&t.url).await.unwrap();
        let (c, bots) = four_bots_in_a_competition(&store).await;
        let picks: Vec<Vec<BotId>> = (0..500).map(|i| vec![bots[i % 4], bots[(i + 1) % 4]]).collect();
        store.groups().schedule_many(&c, &picks).await.unwrap();
        let mut held = 0;
        for (n, want) in [1, 1, 3, 1, 64, 2].into_iter().enumerate() {
            let now = store.now_ms();
            let leased = store
                .groups()
                .lease_many(
                    &LeaseAsk::new("w", &format!("lease-{n}")),
                    now,
                    now + 60_000,
                    want,
                    1000,
                )
                .await
                .unwrap();
            assert_eq!(leased.len() as i64, want, "{}: asked for {want}", t.kind);
            held += want;
        }
        let leased = groups_leased(&t.url).await;
        assert_eq!(leased, held, "{}: groups leased in the store", t.kind);

        // And while others lease and the scheduler adds groups, at once.
        let store = std::sync::Arc::new(store);
        let mut tasks = Vec::new();
        for w in 0..6 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut got = 0i64;
                for n in 0..25 {
                    let want = 1 + (n % 2);
                    let now = store.now_ms();
                    let leased = store
                        .groups()
                        .lease_many(
                            &LeaseAsk::new(&format!("w{w}"), &format!("l{w}-{n}")),
                            now,
                            now + 60_000,
                            want,
                            10_000,
                        )
                        .await
                        .unwrap();
                    assert!(
                        leased.len() as i64 <= want,
                        "asked for {want}, got {}",
                        leased.len()
                    );
                    got += leased.len() as i64;
                }
                got
            }));
        }
        let adder = {
            let (store, c, bots) = (store.clone(), c.clone(), bots.clone());
            tokio::spawn(async move {
                for _ in 0..10 {
                    let picks: Vec<Vec<BotId>> =
                        (0..20).map(|i| vec![bots[i % 4], bots[(i + 2) % 4]]).collect();
                    store.groups().schedule_many(&c, &picks).await.unwrap();
                }
            })
        };
        let mut got = held;
        for task in tasks {
            got += task.await.unwrap();
        }
        adder.await.unwrap();
        let leased = groups_leased(&t.url).await;
        assert_eq!(
            leased, got,
            "{}: every group leased was handed to the one who asked",
            t.kind
        );
    }
}

/// A lease lives no longer than its cap, however often its worker renews it
/// (before: a worker renewed one group 60 times over 60 s without playing or
/// reporting, and held the group, and its seed, as long as it liked). Past the
/// cap the group goes to another worker with a new seed, and the lapse counts
/// against the worker that held it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lives_no_longer_than_its_cap_and_its_lapse_counts_against_its_worker() {
    for t in test_stores("lease_life").await {
        let store = Store::open(&t.url).await.unwrap();
        let (c, bots) = four_bots_in_a_competition(&store).await;
        let w1 = store.workers().add_worker("w1", "hash-1").await.unwrap();
        let w2 = store.workers().add_worker("w2", "hash-2").await.unwrap();
        store
            .groups()
            .schedule_many(&c, &[vec![bots[0], bots[1]]])
            .await
            .unwrap();
        let t0 = store.now_ms();
        let got = store
            .groups()
            .lease_many(&LeaseAsk::new("w1", "token-1"), t0, t0 + 1_000, 1, 10)
            .await
            .unwrap();
        let (id, seed) = (got[0].id, got[0].seed);
        store
            .groups()
            .start_leases("token-1", &[id], t0 + 1_000, t0 + 3_000)
            .await
            .unwrap();
        // Renewals within its life hold it, the last only up to the cap.
        for at in [900, 1_800, 2_700] {
            let renewed = store
                .groups()
                .renew_leases("w1", "token-1", &[id], t0 + at, t0 + at + 1_000)
                .await
                .unwrap();
            assert_eq!(renewed, vec![id], "{}: renewed at +{at} ms", t.kind);
        }
        let renewed = store
            .groups()
            .renew_leases("w1", "token-1", &[id], t0 + 3_001, t0 + 4_001)
            .await
            .unwrap();
        assert!(renewed.is_empty(), "{}: renewed past its cap", t.kind);
        // Another worker gets it, with a new seed.
        let again = store
            .groups()
            .lease_many(&LeaseAsk::new("w2", "token-2"), t0 + 3_001, t0 + 4_001, 1, 10)
            .await
            .unwrap();
        assert_eq!(again.len(), 1, "{}", t.kind);
        assert_eq!(again[0].id, id, "{}", t.kind);
        assert_ne!(
            again[0].seed, seed,
            "{}: a lapsed lease's seed was dealt again",
            t.kind
        );
        let counts = store.workers().lease_counts().await.unwrap();
        assert_eq!(
            counts[&w1.id],
            (1, 1),
            "{}: w1 leased one and let it lapse",
            t.kind
        );
        assert_eq!(counts[&w2.id], (1, 0), "{}", t.kind);
    }
}

/// A worker gives back only its own leases: another worker naming them, with
/// the holder's lease token or its own, takes nothing back, and the holder
/// still holds them (and reports them) afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cannot_give_back_another_workers_leases() {
    for t in test_stores("return_theirs").await {
        let store = Store::open(&t.url).await.unwrap();
        let (c, bots) = four_bots_in_a_competition(&store).await;
        store
            .workers()
            .add_worker("alice", &token_hash("alice"))
            .await
            .unwrap();
        store
            .workers()
            .add_worker("mallory", &token_hash("mallory"))
            .await
            .unwrap();
        let picks: Vec<Vec<BotId>> = (0..8).map(|i| vec![bots[i % 4], bots[(i + 1) % 4]]).collect();
        store.groups().schedule_many(&c, &picks).await.unwrap();
        let now = store.now_ms();
        let held = store
            .groups()
            .lease_many(&LeaseAsk::new("alice", "alice-lease"), now, now + 60_000, 4, 1000)
            .await
            .unwrap();
        let ids: Vec<_> = held.iter().map(|g| g.id).collect();
        assert_eq!(ids.len(), 4, "{}", t.kind);
        for (worker, token) in [
            ("mallory", "alice-lease"),
            ("mallory", "mallory-lease"),
            ("alice", "wrong"),
        ] {
            let taken = store.groups().return_leases(worker, token, &ids).await.unwrap();
            assert!(
                taken.is_empty(),
                "{}: {worker} with {token} took back {taken:?}",
                t.kind
            );
        }
        assert_eq!(
            groups_leased(&t.url).await,
            4,
            "{}: alice still holds hers",
            t.kind
        );
        let seeds = |gs: &[ladder::store::GroupRow]| gs.iter().map(|g| (g.id, g.seed)).collect::<Vec<_>>();
        let still = store.groups().groups_by_id(&ids).await.unwrap();
        assert_eq!(seeds(&still), seeds(&held), "{}: nothing was dealt again", t.kind);
        // Hers to give back.
        let taken = store
            .groups()
            .return_leases("alice", "alice-lease", &ids)
            .await
            .unwrap();
        assert_eq!(taken, ids, "{}", t.kind);
        assert_eq!(groups_leased(&t.url).await, 0, "{}", t.kind);
    }
}
