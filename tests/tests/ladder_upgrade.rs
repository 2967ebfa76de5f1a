//! A database made by an older astragal opens with every game kept. The fixtures
//! in `tests/data/schema9/` were made by `ladder tournament` at schema version 9
//! (before seats were rows): a SQLite file, and the same kind of tournament on
//! PostgreSQL as a `pg_dump --data-only` (see `tests/data/schema9/README.md`).

use ladder::store::{Dialect, Store, migrations};
use sqlx::Row;
use std::collections::BTreeMap;

/// The schema version the fixtures were made at.
const FIXTURE_VERSION: i64 = 9;

/// What the old schema said of each game and group: `bots`, `ranks` as lists.
#[derive(Debug, Default, PartialEq)]
struct Seats {
    games: BTreeMap<i64, (i64, Vec<i64>, Vec<u32>)>,
    groups: BTreeMap<i64, Vec<i64>>,
}

fn ids<T: std::str::FromStr>(text: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    text.split(',').map(|s| s.parse().unwrap()).collect()
}

/// The seats as the old columns hold them, read before the store migrates.
async fn old_seats(pool: &sqlx::AnyPool) -> Seats {
    let mut seats = Seats::default();
    for row in sqlx::query("SELECT id, competition_id, bots, ranks FROM games")
        .fetch_all(pool)
        .await
        .unwrap()
    {
        let bots: String = row.try_get(2).unwrap();
        let ranks: String = row.try_get(3).unwrap();
        seats.games.insert(
            row.try_get(0).unwrap(),
            (row.try_get(1).unwrap(), ids(&bots), ids(&ranks)),
        );
    }
    for row in sqlx::query("SELECT id, bots FROM match_groups")
        .fetch_all(pool)
        .await
        .unwrap()
    {
        let bots: String = row.try_get(1).unwrap();
        seats.groups.insert(row.try_get(0).unwrap(), ids(&bots));
    }
    seats
}

/// The seats as the migrated store reads them.
async fn new_seats(store: &Store) -> Seats {
    let mut seats = Seats::default();
    for c in store.competitions().await.unwrap() {
        for r in store.results(c.id).await.unwrap() {
            seats
                .games
                .insert(r.id, (c.id.0, r.bots.clone(), r.ranks.clone()));
        }
        for g in store.groups(c.id).await.unwrap() {
            seats.groups.insert(g.id.0, g.bots.iter().map(|b| b.0).collect());
        }
    }
    seats
}

/// Builds the store at `url` as schema version 9 left it, with the fixture's rows.
async fn old_database(url: &str, kind: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/schema9");
    if kind == "sqlite" {
        let path = url.strip_prefix("sqlite:").unwrap();
        std::fs::copy(data.join("tournament.sqlite"), path).unwrap();
        return sqlx::any::AnyPoolOptions::new()
            .max_connections(1)
            .connect(url)
            .await
            .unwrap();
    }
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    let old: Vec<_> = migrations(Dialect::Postgres)
        .iter()
        .filter(|m| m.version <= FIXTURE_VERSION)
        .cloned()
        .collect();
    sqlx::migrate::Migrator::with_migrations(old)
        .run(&pool)
        .await
        .unwrap();
    let dump = std::fs::read_to_string(data.join("tournament.pg.sql")).unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(dump))
        .execute(&pool)
        .await
        .unwrap();
    pool
}

#[tokio::test]
async fn a_database_made_at_schema_9_opens_with_every_game_and_seat() {
    for store in astragal_tests::test_stores("upgrade").await {
        let pool = old_database(&store.url, store.kind).await;
        let version: i64 = sqlx::query("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(&pool)
            .await
            .unwrap()
            .try_get(0)
            .unwrap();
        assert_eq!(version, FIXTURE_VERSION, "{}", store.kind);
        let before = old_seats(&pool).await;
        pool.close().await;
        assert!(
            before.games.len() >= 30,
            "{}: {} games",
            store.kind,
            before.games.len()
        );
        // Some game has a seat that did not come first, in both competitions.
        assert!(
            before.games.values().any(|(_, _, ranks)| ranks.len() == 3),
            "{}: the fixture has three-seat games",
            store.kind
        );

        let opened = Store::open(&store.url).await.unwrap();
        let newest = migrations(opened.dialect())
            .iter()
            .map(|m| m.version)
            .max()
            .unwrap();
        assert_eq!(opened.schema_version().await.unwrap(), newest);
        let after = new_seats(&opened).await;
        assert_eq!(
            after, before,
            "{}: every game and group, seat by seat",
            store.kind
        );

        // New groups go in beside the old ones, their seats read back as given.
        let c = &opened.competitions().await.unwrap()[0];
        let entrants: Vec<ladder::store::BotId> = opened
            .entrants(c.id)
            .await
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect();
        let seats = vec![entrants[1], entrants[0]];
        let had = opened.groups(c.id).await.unwrap().len();
        opened.schedule_groups(c, &[(1000, seats.clone())]).await.unwrap();
        let groups = opened.groups(c.id).await.unwrap();
        let added = groups.iter().find(|g| g.group_no == 1000).unwrap();
        assert_eq!(added.bots, seats, "{}", store.kind);
        assert_eq!(groups.len(), had + 1, "{}", store.kind);
        drop(opened);
    }
}
