//! Vacuuming and analyzing the tables reports churn, on PostgreSQL, whether or
//! not the host runs autovacuum.
//!
//! A lease walks the partial indexes of scheduled and leased groups from their
//! oldest end. Each group a lease or report moves on leaves a dead entry there
//! until a vacuum, so without one every lease walks every group ever played, and
//! the planner, without statistics, picks bitmap scans of the whole competition:
//! at 10 workers on a PostgreSQL with autovacuum off a lease took 36 ms after
//! 50,000 groups, and games/s fell from 3,600 to 2,100 within a minute.
//! Autovacuum at its defaults looks once a minute and waits for a fifth of a
//! table to be dead, which at a thousand groups a second is too late as well.

use super::*;

/// The tables the hot path changes, vacuumed and analyzed in one statement:
/// `match_groups` (every lease and report updates its rows), `fit_tally` (a refit
/// folds its rows), `bots` (reports count start failures); and the insert-only
/// `games` and `group_seats`, whose visibility map lets their index-only scans
/// skip the table and whose statistics keep their plans on the indexes.
/// `TRUNCATE false`: giving empty end pages back takes a lock that stops every
/// read and write of the table; with it, two servers' reports at 10,000 workers
/// had p99 3.7 s, without it 0.6 s.
const UPKEEP: &str =
    "VACUUM (ANALYZE, SKIP_LOCKED, TRUNCATE false) match_groups, group_seats, games, fit_tally, bots";

impl Store {
    /// Vacuums and analyzes the tables reports churn (see [`UPKEEP`]): PostgreSQL
    /// only, and `false` on SQLite, which keeps neither dead index entries nor
    /// stale plans of this kind. A table another vacuum holds is skipped this time.
    ///
    /// # Errors
    /// The database.
    pub async fn upkeep(&self) -> Result<bool> {
        match self.dialect {
            Dialect::Sqlite => Ok(false),
            Dialect::Postgres => {
                // The simple protocol: VACUUM runs outside any transaction block.
                sqlx::raw_sql(UPKEEP).execute(&self.pool).await?;
                Ok(true)
            }
        }
    }

    /// A number that moves whenever rows of the [`UPKEEP`] tables are written
    /// (PostgreSQL's own counts, as its statistics have them): an idle ladder
    /// skips its upkeep. 0 on SQLite.
    ///
    /// # Errors
    /// The database.
    pub async fn churn_mark(&self) -> Result<i64> {
        match self.dialect {
            Dialect::Sqlite => Ok(0),
            Dialect::Postgres => Ok(sqlx::query(
                "SELECT COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0)::BIGINT FROM pg_stat_user_tables
                 WHERE relname IN ('match_groups', 'group_seats', 'games', 'fit_tally', 'bots')",
            )
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?),
        }
    }
}
