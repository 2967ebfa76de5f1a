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
    for c in store.competitions().all().await.unwrap() {
        for r in store.games().results(c.id).await.unwrap() {
            seats
                .games
                .insert(r.id, (c.id.0, r.bots.clone(), r.ranks.clone()));
        }
        for g in store.groups().of_competition(c.id).await.unwrap() {
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
    let pool = database_at(url, kind, FIXTURE_VERSION).await;
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
        let version = migrated_to(&pool).await;
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
        let c = &opened.competitions().all().await.unwrap()[0];
        let entrants: Vec<ladder::store::BotId> = opened
            .competitions()
            .entrants(c.id)
            .await
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect();
        let seats = vec![entrants[1], entrants[0]];
        let had = opened.groups().of_competition(c.id).await.unwrap().len();
        opened
            .groups()
            .schedule_groups(c, &[(1000, seats.clone())])
            .await
            .unwrap();
        let groups = opened.groups().of_competition(c.id).await.unwrap();
        let added = groups.iter().find(|g| g.group_no == 1000).unwrap();
        assert_eq!(added.bots, seats, "{}", store.kind);
        assert_eq!(groups.len(), had + 1, "{}", store.kind);
        drop(opened);
    }
}

/// The newest migration the store behind `pool` has taken.
async fn migrated_to(pool: &sqlx::AnyPool) -> i64 {
    sqlx::query("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await
        .unwrap()
        .try_get(0)
        .unwrap()
}

/// A pool on the store at `url` migrated to `version` only: the schema the
/// code before that version's successor made.
async fn database_at(url: &str, kind: &str, version: i64) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let url = if kind == "sqlite" {
        format!("{url}?mode=rwc")
    } else {
        url.to_owned()
    };
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let dialect = if kind == "sqlite" {
        Dialect::Sqlite
    } else {
        Dialect::Postgres
    };
    let old: Vec<_> = migrations(dialect)
        .iter()
        .filter(|m| m.version <= version)
        .cloned()
        .collect();
    sqlx::migrate::Migrator::with_migrations(old)
        .run(&pool)
        .await
        .unwrap();
    pool
}

async fn exec(pool: &sqlx::AnyPool, sql: &str) -> Result<(), String> {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(pool)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Rows with every status each enum stores, as the code at schema 21 wrote
/// them: one competition per competition status, a group per group status, a
/// bot per bot status and per who set it.
async fn every_status(pool: &sqlx::AnyPool) {
    use ladder::store::{BotStatus, CompetitionStatus, GroupStatus, StatusBy};
    for (i, status) in CompetitionStatus::ALL.iter().enumerate() {
        exec(
            pool,
            &format!(
                "INSERT INTO competitions (name, game, options, seats, format, seed, max_games, time, status, config, created_ms)
                 VALUES ('c{i}', 'ur', '[]', 2, 'round-robin', 1, 0, '', '{status}', '{{}}', 0)"
            ),
        )
        .await
        .unwrap();
    }
    for (i, status) in GroupStatus::ALL.iter().enumerate() {
        exec(
            pool,
            &format!(
                "INSERT INTO match_groups (competition_id, group_no, seed, status, created_ms)
                 VALUES ((SELECT MIN(id) FROM competitions), {i}, {i}, '{status}', 0)"
            ),
        )
        .await
        .unwrap();
    }
    for (i, status) in BotStatus::ALL.iter().enumerate() {
        for (j, by) in StatusBy::ALL.iter().enumerate() {
            exec(
                pool,
                &format!(
                    "INSERT INTO bots (name, game, spec, created_ms, status, status_by)
                     VALUES ('b{i}_{j}', 'ur', 'builtin:first', 0, '{status}', '{by}')"
                ),
            )
            .await
            .unwrap();
        }
    }
}

async fn statuses(pool: &sqlx::AnyPool) -> Vec<String> {
    let mut all = Vec::new();
    for sql in [
        "SELECT name || ':' || status FROM competitions ORDER BY name",
        "SELECT CAST(group_no AS TEXT) || ':' || status FROM match_groups ORDER BY group_no",
        "SELECT name || ':' || status || ':' || status_by FROM bots ORDER BY name",
    ] {
        for row in sqlx::query(sql).fetch_all(pool).await.unwrap() {
            all.push(row.try_get::<String, _>(0).unwrap());
        }
    }
    all
}

/// Migration 0022 puts a CHECK on every status column (SQLite: triggers that
/// refuse as a CHECK does). On a database made at schema 21 with every status
/// the code writes, every row is kept; afterwards a word no enum stores is
/// refused on insert and on update, on both back ends.
#[tokio::test]
async fn every_status_column_refuses_a_word_its_enum_lacks_and_keeps_every_row() {
    for store in astragal_tests::test_stores("checks").await {
        let kind = store.kind;
        let pool = database_at(&store.url, kind, 21).await;
        every_status(&pool).await;
        let before = statuses(&pool).await;
        assert_eq!(before.len(), 2 + 4 + 8 * 3, "{kind}");
        pool.close().await;

        let opened = Store::open(&store.url).await.unwrap();
        assert!(opened.schema_version().await.unwrap() >= 22, "{kind}");
        drop(opened);
        let pool = database_at(&store.url, kind, 22).await;
        assert_eq!(statuses(&pool).await, before, "{kind}: every row as it was");
        for (sql, check) in [
            (
                "UPDATE competitions SET status = 'paused'",
                "competitions_status_known",
            ),
            (
                "UPDATE match_groups SET status = 'lost'",
                "match_groups_status_known",
            ),
            ("UPDATE bots SET status = 'retired'", "bots_status_known"),
            ("UPDATE bots SET status_by = 'nobody'", "bots_status_by_known"),
            (
                "INSERT INTO bots (name, game, spec, created_ms, status) VALUES ('x', 'ur', 'builtin:first', 0, 'Active')",
                "bots_status_known",
            ),
            (
                "INSERT INTO match_groups (competition_id, group_no, seed, status, created_ms)
                 VALUES ((SELECT MIN(id) FROM competitions), 99, 1, '', 0)",
                "match_groups_status_known",
            ),
        ] {
            let refused = exec(&pool, sql).await.expect_err(sql);
            assert!(refused.contains(check), "{kind}: {sql}: {refused}");
        }
        assert_eq!(statuses(&pool).await, before, "{kind}: nothing changed");
        pool.close().await;
    }
}

/// A database holding a status no enum stores (written by hand, say) does not
/// take migration 0022: opening it fails, saying so, and leaves it at schema 21
/// with its rows; mended, it migrates.
#[tokio::test]
async fn a_row_with_an_unknown_status_stops_the_migration_and_nothing_changes() {
    for store in astragal_tests::test_stores("badstatus").await {
        let kind = store.kind;
        let pool = database_at(&store.url, kind, 21).await;
        every_status(&pool).await;
        exec(&pool, "UPDATE bots SET status = 'retired' WHERE name = 'b0_0'")
            .await
            .unwrap();
        let before = statuses(&pool).await;
        pool.close().await;
        let Err(e) = Store::open(&store.url).await else {
            panic!("{kind}: the migration took a status no enum stores");
        };
        let e = e.to_string();
        assert!(e.contains("migrating the database"), "{kind}: {e}");
        assert!(e.contains("bots_status_known"), "{kind}: {e}");
        let pool = database_at(&store.url, kind, 21).await;
        let version = migrated_to(&pool).await;
        assert_eq!(version, 21, "{kind}");
        assert_eq!(statuses(&pool).await, before, "{kind}");
        // Nothing of the migration was left half done: with the row mended it
        // runs whole.
        exec(&pool, "UPDATE bots SET status = 'removed' WHERE name = 'b0_0'")
            .await
            .unwrap();
        pool.close().await;
        let opened = Store::open(&store.url).await.unwrap();
        assert!(opened.schema_version().await.unwrap() >= 22, "{kind}");
    }
}
