//! Workers: their tokens (stored as hashes), and voiding what one reported.

use super::*;

/// Groups a voided worker's reports are taken back from: all but a closed
/// season's finals (SQL on `match_groups`).
fn open_to_void() -> &'static str {
    sql_text!(
        "competition_id NOT IN (SELECT finals_id FROM seasons WHERE phase = ",
        Phase::Closed,
        " AND finals_id IS NOT NULL)"
    )
}

use rating::audit::ReportedGame;

impl Workers<'_> {
    /// Adds a worker known by the SHA-256 of its token.
    ///
    /// # Errors
    /// The name is taken, or the database.
    pub async fn add_worker(self, name: &str, token_hash: &str) -> Result<WorkerRow> {
        let inserted = sqlx::query(
            "INSERT INTO workers (name, token_hash, created_ms) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(token_hash)
        .bind(self.store.now_ms())
        .execute(&self.store.pool)
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "a worker named {name:?} exists (revoke it and add another name)"
            )));
        }
        self.worker(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("worker {name:?} vanished")))
    }

    /// The SHA-256 of every worker's and author's token, revoked ones too: what no
    /// page may show.
    ///
    /// # Errors
    /// The database.
    pub async fn token_hashes(self) -> Result<std::collections::HashSet<String>> {
        let rows = sqlx::query("SELECT token_hash FROM workers UNION ALL SELECT token_hash FROM authors")
            .fetch_all(&self.store.pool)
            .await?;
        rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
    }

    /// A worker by name.
    ///
    /// # Errors
    /// The database.
    pub async fn worker(self, name: &str) -> Result<Option<WorkerRow>> {
        Ok(
            sqlx::query_as("SELECT id, name, revoked_ms FROM workers WHERE name = $1")
                .bind(name)
                .fetch_optional(&self.store.pool)
                .await?,
        )
    }

    /// The worker whose token has this SHA-256, if it is not revoked.
    ///
    /// # Errors
    /// The database.
    pub async fn worker_by_token_hash(self, token_hash: &str) -> Result<Option<WorkerRow>> {
        Ok(sqlx::query_as(
            "SELECT id, name, revoked_ms FROM workers WHERE token_hash = $1 AND revoked_ms IS NULL",
        )
        .bind(token_hash)
        .fetch_optional(&self.store.pool)
        .await?)
    }

    /// What moves whenever a worker's token is revoked: how many are, and when
    /// the last was. A server that keeps tokens it has checked reads this to
    /// learn of revocations through other servers.
    ///
    /// # Errors
    /// The database.
    pub async fn revocation_mark(self) -> Result<(i64, i64)> {
        let row = sqlx::query("SELECT COUNT(revoked_ms), COALESCE(MAX(revoked_ms), 0) FROM workers")
            .fetch_one(&self.store.pool)
            .await?;
        Ok((row.try_get(0)?, row.try_get(1)?))
    }

    /// Every worker, by name.
    ///
    /// # Errors
    /// The database.
    pub async fn all(self) -> Result<Vec<WorkerRow>> {
        Ok(
            sqlx::query_as("SELECT id, name, revoked_ms FROM workers ORDER BY name")
                .fetch_all(&self.store.pool)
                .await?,
        )
    }

    /// Every worker's leases: groups leased to it, and leases that ran out in
    /// its hands, by worker id.
    ///
    /// # Errors
    /// The database.
    pub async fn lease_counts(self) -> Result<std::collections::HashMap<WorkerId, (i64, i64)>> {
        let rows = sqlx::query("SELECT id, groups_leased, leases_expired FROM workers")
            .fetch_all(&self.store.pool)
            .await?;
        rows.iter()
            .map(|r| Ok((WorkerId(r.try_get(0)?), (r.try_get(1)?, r.try_get(2)?))))
            .collect()
    }

    /// Revokes a worker's token: its calls are refused from now on.
    ///
    /// # Errors
    /// No such worker, or the database.
    pub async fn revoke_worker(self, name: &str) -> Result<WorkerRow> {
        let done = sqlx::query("UPDATE workers SET revoked_ms = $2 WHERE name = $1 AND revoked_ms IS NULL")
            .bind(name)
            .bind(self.store.now_ms())
            .execute(&self.store.pool)
            .await?;
        match self.worker(name).await? {
            Some(w) => Ok(w),
            None if done.rows_affected() == 0 => Err(StoreError::NotFound(format!("no worker {name:?}"))),
            None => Err(StoreError::NotFound(format!("worker {name:?} vanished"))),
        }
    }

    /// Every stored game of a group a worker reported, with its fault kinds
    /// (its rows in `faults`): what the worker audit reads.
    ///
    /// # Errors
    /// The database.
    pub async fn reported_games(self) -> Result<Vec<ReportedGame<FaultKind>>> {
        let rows = sqlx::query(
            "SELECT g.id, m.reported_by, g.group_id, f.kind FROM games g
             JOIN match_groups m ON m.id = g.group_id LEFT JOIN faults f ON f.game_id = g.id
             WHERE m.reported_by IS NOT NULL ORDER BY g.id",
        )
        .fetch_all(&self.store.pool)
        .await?;
        let mut games: Vec<ReportedGame<FaultKind>> = Vec::new();
        let mut last = None;
        for row in &rows {
            let game: i64 = row.try_get(0)?;
            if last != Some(game) {
                last = Some(game);
                games.push(ReportedGame {
                    worker: row.try_get(1)?,
                    group: row.try_get(2)?,
                    kinds: Vec::new(),
                });
            }
            if let Some(Text(kind)) = row.try_get::<Option<Text<FaultKind>>, _>(3)?
                && let Some(game) = games.last_mut()
            {
                game.kinds.push(kind);
            }
        }
        Ok(games)
    }

    /// Revokes a worker and removes every game of the groups it reported, which are
    /// scheduled again (other workers play them), and undoes what its reports
    /// caused: bots it helped suspend are active again, and its failed starts
    /// leave their runs. Returns `(groups, games)` voided.
    ///
    /// # Errors
    /// No such worker, or the database (then nothing changes).
    pub async fn void_worker(self, name: &str) -> Result<(u64, u64)> {
        let mut tx = self.store.write_tx().await?;
        let row = sqlx::query("SELECT id FROM workers WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no worker {name:?}")))?;
        let id: i64 = row.try_get(0)?;
        sqlx::query("UPDATE workers SET revoked_ms = $2 WHERE id = $1 AND revoked_ms IS NULL")
            .bind(id)
            .bind(self.store.now_ms())
            .execute(&mut *tx)
            .await?;
        // The groups it reported: each played again below, and those finished
        // taken out of the tally first, while their games are still there.
        let mut voided: Vec<i64> = Vec::new();
        let mut finished: Vec<GroupId> = Vec::new();
        // A closed season's finals are final: their record is published and
        // verified by entrants; a voided worker's part in them stays.
        for row in sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id, status FROM match_groups WHERE reported_by = $1 AND {}",
            open_to_void()
        )))
        .bind(id)
        .fetch_all(&mut *tx)
        .await?
        {
            let group: i64 = row.try_get(0)?;
            if row.try_get::<GroupStatus, _>(1)? == GroupStatus::Done {
                finished.push(GroupId(group));
            }
            voided.push(group);
        }
        self.store
            .shapes()
            .tally_stored_groups(&mut tx, &finished, -1)
            .await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM faults WHERE game_id IN (SELECT g.id FROM games g
                 JOIN match_groups m ON m.id = g.group_id WHERE m.reported_by = $1 AND m.{})",
            open_to_void()
        )))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let games = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM games WHERE group_id IN (SELECT id FROM match_groups WHERE reported_by = $1 AND {})",
            open_to_void()
        )))
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        // Played again, each with a new seed: the voided games made the old one
        // public (a seed leaves the server once). A finals group's is its next
        // derived one, so the finals stay checkable.
        for group in &voided {
            let seed = Seasons::deal_again(&mut tx, GroupId(*group)).await?;
            sqlx::query(sql_text!(
                "UPDATE match_groups SET status = ",
                GroupStatus::Scheduled,
                ", lease_token = NULL, lease_worker = NULL,
                 lease_expires_ms = NULL, reported_by = NULL, seed = $2 WHERE id = $1"
            ))
            .bind(group)
            .bind(seed as i64)
            .execute(&mut *tx)
            .await?;
        }
        let groups = voided.len() as u64;
        // Its part of every run of failed starts goes, and a bot it helped suspend
        // is put back in play (a run the other workers still see suspends it again
        // at their next report).
        sqlx::query(sql_text!(
            "UPDATE bots SET status = ",
            BotStatus::Active,
            ", status_reason = '' WHERE status = ",
            BotStatus::Suspended,
            "
             AND id IN (SELECT bot_id FROM start_failure_witnesses WHERE worker_id = $1)"
        ))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE bots SET start_failures = (SELECT CASE WHEN bots.start_failures > w.failures
             THEN bots.start_failures - w.failures ELSE 0 END FROM start_failure_witnesses w
             WHERE w.bot_id = bots.id AND w.worker_id = $1)
             WHERE id IN (SELECT bot_id FROM start_failure_witnesses WHERE worker_id = $1)",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM start_failure_witnesses WHERE worker_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((groups, games))
    }
}
