//! What the host needs of the store to run a ladder for months: its queues for
//! the metrics, whether it is ready, what retention frees, and an online backup.

use super::*;
use crate::metrics::Queues;

/// Why a store is not ready to serve.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    /// The database does not answer.
    #[error("the database does not answer: {0}")]
    Unanswered(StoreError),
    /// Its schema is not this program's (older: migrate; newer: a newer program).
    #[error("the database's schema is at migration {have}; this program's is {want}")]
    Schema {
        /// The database's migration.
        have: i64,
        /// This program's.
        want: i64,
    },
}

/// What [`Store::collect_garbage`] removes: everything older than its cutoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Seats' private logs of games recorded before this moment (ms) go;
    /// `None` keeps them for ever.
    pub logs_before_ms: Option<i64>,
    /// The files of versions created before this moment (ms) that no game
    /// needs to be replayed go: versions out of play for good (superseded,
    /// removed, build-failed, rejected) that never entered a competition, and
    /// files no version names; `None` keeps them for ever.
    pub files_before_ms: Option<i64>,
    /// Sessions of the pages that ended before this moment (ms) go.
    pub sessions_before_ms: i64,
}

/// What retention removed, or would remove.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Collected {
    /// Seats' private logs.
    pub logs: i64,
    /// Their bytes.
    pub log_bytes: i64,
    /// Versions whose files went.
    pub versions: i64,
    /// Files (uploads and built folders) removed, by hash.
    pub files: Vec<String>,
    /// Of those, the ones whose bytes are in the object store (the server
    /// removes them there).
    pub files_elsewhere: Vec<String>,
    /// Their bytes.
    pub file_bytes: i64,
    /// Sessions of the pages.
    pub sessions: i64,
}

/// The versions out of play for good whose files may go: they never entered a
/// competition (a build or check that failed, or replaced before it was
/// checked), so no game was played with them. (A version that entered and
/// played nothing keeps its files: the scan that would tell is the one the
/// seats' table has no index for.)
fn spent_versions() -> &'static str {
    sql_text!(
        "FROM bots b WHERE b.author_id IS NOT NULL AND b.status IN (",
        BotStatus::Superseded,
        ", ",
        BotStatus::Removed,
        ", ",
        BotStatus::BuildFailed,
        ", ",
        BotStatus::Rejected,
        ") AND b.created_ms < $1
     AND (b.source_sha256 IS NOT NULL OR b.artifact_sha256 IS NOT NULL)
     AND NOT EXISTS (SELECT 1 FROM entrants e WHERE e.bot_id = b.id)"
    )
}

/// Files no version names (those of spent versions once they are let go).
const UNNAMED_FILES: &str = "FROM artifacts WHERE artifacts.created_ms < $1
     AND NOT EXISTS (SELECT 1 FROM bots b WHERE b.source_sha256 = artifacts.sha256 OR b.artifact_sha256 = artifacts.sha256)";

impl Store {
    /// The queues and activity the metrics show, read now.
    ///
    /// # Errors
    /// The database.
    pub async fn queues(&self, now: i64) -> Result<Queues> {
        let at_now = |sql: &'static str| async move {
            let v: i64 = sqlx::query(sql)
                .bind(now)
                .fetch_one(&self.pool)
                .await?
                .try_get(0)?;
            Ok::<i64, StoreError>(v)
        };
        let one = |sql: &'static str| async move {
            let v: i64 = sqlx::query(sql).fetch_one(&self.pool).await?.try_get(0)?;
            Ok::<i64, StoreError>(v)
        };
        Ok(Queues {
            groups_waiting: one(
                sql_text!("SELECT COUNT(*) FROM match_groups g JOIN competitions c ON c.id = g.competition_id
                 WHERE g.status = ", GroupStatus::Scheduled, " AND c.status = ", CompetitionStatus::Open),
            )
            .await?,
            challenge_groups_waiting: one(
                sql_text!("SELECT COUNT(*) FROM match_groups g JOIN challenges ch ON ch.competition_id = g.competition_id
                 WHERE g.status = ", GroupStatus::Scheduled),
            )
            .await?,
            groups_leased: at_now(
                sql_text!("SELECT COUNT(*) FROM match_groups WHERE status = ", GroupStatus::Leased, " AND lease_expires_ms >= $1"),
            )
                .await?,
            builds_waiting: one(sql_text!("SELECT COUNT(*) FROM bots WHERE status = ", BotStatus::Building)).await?,
            workers_active: at_now(
                sql_text!("SELECT COUNT(DISTINCT lease_worker) FROM match_groups WHERE status = ", GroupStatus::Leased, " AND lease_expires_ms >= $1"),
            )
            .await?,
            leases_expired: one("SELECT CAST(COALESCE(SUM(leases_expired), 0) AS BIGINT) FROM workers")
                .await?,
        })
    }

    /// The pool's connections now.
    pub fn pool_stats(&self) -> PoolStats {
        PoolStats {
            open: self.pool.size(),
            idle: self.pool.num_idle(),
            max: self.max_connections(),
        }
    }

    /// Whether the database answers and its schema is the one this program
    /// expects: `Err` says which is not so.
    ///
    /// # Errors
    /// The database does not answer, or its schema is older or newer.
    pub async fn ready(&self) -> std::result::Result<(), NotReady> {
        let have = self.schema_version().await.map_err(NotReady::Unanswered)?;
        let want = migrations(self.dialect)
            .iter()
            .map(|m| m.version)
            .max()
            .unwrap_or(0);
        if have == want {
            Ok(())
        } else {
            Err(NotReady::Schema { have, want })
        }
    }

    /// Removes (or, `dry_run`, counts) what `keep` lets go: private logs,
    /// spent versions' files, ended sessions. Games, their public records and
    /// every file a game needs to be replayed are never touched.
    ///
    /// # Errors
    /// The database.
    pub async fn collect_garbage(&self, keep: &Retention, dry_run: bool) -> Result<Collected> {
        let mut out = Collected::default();
        let mut tx = self.write_tx().await?;
        if let Some(before) = keep.logs_before_ms {
            // A group is reported whole: its games share one moment.
            let which =
                "FROM seat_logs WHERE group_id IN (SELECT group_id FROM games WHERE recorded_ms < $1)";
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*), CAST(COALESCE(SUM(LENGTH(log)), 0) AS BIGINT) {which}"
            )))
            .bind(before)
            .fetch_one(&mut *tx)
            .await?;
            out.logs = row.try_get(0)?;
            out.log_bytes = row.try_get(1)?;
            if !dry_run && out.logs > 0 {
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE {which}")))
                    .bind(before)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        if let Some(before) = keep.files_before_ms {
            out.versions = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*) {}",
                spent_versions()
            )))
            .bind(before)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            // Which files would no longer be named: those named by spent
            // versions and by no other, and those named by none already.
            let files_sql = if dry_run {
                format!(
                    "SELECT a.sha256, a.size, CAST(CASE WHEN a.content IS NULL THEN 1 ELSE 0 END AS BIGINT) FROM artifacts a
                     WHERE a.created_ms < $1 AND NOT EXISTS (SELECT 1 FROM bots b WHERE
                       (b.source_sha256 = a.sha256 OR b.artifact_sha256 = a.sha256)
                       AND b.id NOT IN (SELECT b.id {}))",
                    spent_versions()
                )
            } else {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "UPDATE bots SET source_sha256 = NULL, artifact_sha256 = NULL
                     WHERE id IN (SELECT b.id {})",
                    spent_versions()
                )))
                .bind(before)
                .execute(&mut *tx)
                .await?;
                format!(
                    "SELECT artifacts.sha256, artifacts.size,
                     CAST(CASE WHEN artifacts.content IS NULL THEN 1 ELSE 0 END AS BIGINT) {UNNAMED_FILES}"
                )
            };
            for row in sqlx::query(sqlx::AssertSqlSafe(files_sql))
                .bind(before)
                .fetch_all(&mut *tx)
                .await?
            {
                let sha: String = row.try_get(0)?;
                out.file_bytes += row.try_get::<i64, _>(1)?;
                if row.try_get::<i64, _>(2)? == 1 {
                    out.files_elsewhere.push(sha.clone());
                }
                out.files.push(sha);
            }
            if !dry_run && !out.files.is_empty() {
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE {UNNAMED_FILES}")))
                    .bind(before)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let which = "FROM web_sessions WHERE expires_ms < $1";
        out.sessions = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) {which}")))
            .bind(keep.sessions_before_ms)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        if !dry_run && out.sessions > 0 {
            sqlx::query(sqlx::AssertSqlSafe(format!("DELETE {which}")))
                .bind(keep.sessions_before_ms)
                .execute(&mut *tx)
                .await?;
        }
        if dry_run {
            tx.rollback().await?;
        } else {
            tx.commit().await?;
        }
        Ok(out)
    }
}

/// Writes a consistent copy of the SQLite store at `url` (as [`Store::open`]
/// takes it) to the new file `to`, while a server may be serving from it:
/// SQLite's `VACUUM INTO`, one read transaction (writers go on; the copy is the
/// store as of its start). Nothing is migrated or written in the store. A
/// PostgreSQL store is backed up with `pg_dump` (docs/hosting.md, "Backups").
///
/// # Errors
/// A PostgreSQL or memory URL, `to` existing already, or the database.
pub async fn backup_sqlite(url: &str, to: &std::path::Path) -> Result<()> {
    let Some(path) = sqlite_files(url).into_iter().next() else {
        return Err(StoreError::Conflict(
            "only a SQLite file is backed up this way; back up PostgreSQL with pg_dump (docs/hosting.md, Backups)"
                .into(),
        ));
    };
    if !path.is_file() {
        return Err(StoreError::Conflict(format!(
            "no SQLite store at {}",
            path.display()
        )));
    }
    if to.exists() {
        return Err(StoreError::Conflict(format!(
            "{} exists: a backup is never written over a file",
            to.display()
        )));
    }
    let target = to
        .to_str()
        .ok_or_else(|| StoreError::Conflict(format!("{} is not UTF-8", to.display())))?;
    use sqlx::Connection as _;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(false)
        .busy_timeout(std::time::Duration::from_secs(10));
    // The copy holds what the store holds (token hashes, private logs): made
    // first as an empty file only its owner reads, as the store is, which
    // `VACUUM INTO` then fills.
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(to)
            .map_err(|e| StoreError::Conflict(format!("cannot make {}: {e}", to.display())))?;
    }
    let copied = async {
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
        sqlx::query("VACUUM INTO $1")
            .bind(target)
            .execute(&mut conn)
            .await?;
        conn.close().await
    }
    .await;
    if let Err(e) = copied {
        // Nothing half-made is left to be taken for a backup.
        let _ = std::fs::remove_file(to);
        return Err(e.into());
    }
    Ok(())
}

/// The store's pool of connections at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Connections open.
    pub open: u32,
    /// Of those, idle.
    pub idle: usize,
    /// The most it opens.
    pub max: u32,
}
