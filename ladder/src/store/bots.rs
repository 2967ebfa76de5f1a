//! Bots: registration, status, new versions, and the run of failed starts that suspends one.

use super::*;

impl Bots<'_> {
    pub(super) const BOT_COLUMNS: &'static str = "id, name, game, spec, env, status, status_reason, start_failures, version, previous_id, status_by, author_id, artifact_sha256";

    /// Registers a bot, or returns the one of that name if it is the same.
    ///
    /// # Errors
    /// The name is taken by a bot with another game, spec or environment.
    pub async fn register_bot(
        self,
        name: &str,
        game: &str,
        spec: &str,
        env: &[(String, String)],
    ) -> Result<BotRow> {
        let env_json = serde_json::to_string(env).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO bots (name, game, spec, env, created_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(game)
        .bind(spec)
        .bind(&env_json)
        .bind(self.store.now_ms())
        .execute(&self.store.pool)
        .await?;
        let bot = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {name:?} vanished")))?;
        if bot.game != game || bot.spec != spec || bot.env != env {
            return Err(StoreError::Conflict(format!(
                "bot name {name:?} is taken (game {}, spec {:?}, {} environment variables)",
                bot.game,
                bot.spec,
                bot.env.len()
            )));
        }
        Ok(bot)
    }

    /// A bot by name.
    ///
    /// # Errors
    /// The database.
    pub async fn bot(self, name: &str) -> Result<Option<BotRow>> {
        // `name@1` is version 1, whose name is written without it (a name
        // itself never holds `@`).
        let name = name.strip_suffix("@1").unwrap_or(name);
        let sql = format!("SELECT {} FROM bots WHERE name = $1", Self::BOT_COLUMNS);
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(&self.store.pool)
            .await?;
        Ok(row.as_ref().map(BotRow::from_row).transpose()?)
    }

    /// The versions that replaced the bots with keys `ids` (`ladder admin
    /// update`, or an author's new version): those whose previous version is
    /// one of them.
    ///
    /// # Errors
    /// The database.
    pub async fn replacements(self, ids: &[BotId]) -> Result<Vec<BotRow>> {
        self.bots_whose("previous_id", ids).await
    }

    /// The bots with keys `ids` (in key order; a key named twice gives one row).
    ///
    /// # Errors
    /// The database.
    pub async fn bots_by_id(self, ids: &[BotId]) -> Result<Vec<BotRow>> {
        self.bots_whose("id", ids).await
    }

    /// The bots whose `column` (a column of bot keys, named by this file) is
    /// one of `ids`, in key order.
    async fn bots_whose(self, column: &str, ids: &[BotId]) -> Result<Vec<BotRow>> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut conn = self.store.pool.acquire().await?;
        let select = format!("SELECT {} FROM bots WHERE {column} IN ", Self::BOT_COLUMNS);
        let rows = Groups::rows_with_ids(&mut conn, &select, &ids, " ORDER BY id").await?;
        Ok(rows
            .iter()
            .map(BotRow::from_row)
            .collect::<std::result::Result<_, _>>()?)
    }

    /// Every bot, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn all(self) -> Result<Vec<BotRow>> {
        let sql = format!("SELECT {} FROM bots ORDER BY id", Self::BOT_COLUMNS);
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(&self.store.pool)
            .await?;
        Ok(rows
            .iter()
            .map(BotRow::from_row)
            .collect::<std::result::Result<_, _>>()?)
    }

    /// Sets a bot's status, as the admin. Taking it out of play withdraws the
    /// groups it was scheduled in that no worker holds yet; putting it back
    /// clears its run of start failures. Returns the bot and how many groups
    /// were withdrawn.
    ///
    /// # Errors
    /// No such bot ([`StoreError::NotFound`]), a superseded or removed bot put
    /// back, or an uploaded one that has not passed its build and check
    /// ([`StoreError::Conflict`]), or the database.
    pub async fn set_bot_status(self, name: &str, status: BotStatus, reason: &str) -> Result<(BotRow, u64)> {
        self.set_bot_status_by(name, status, reason, StatusBy::Admin)
            .await
    }

    /// [`Bots::set_bot_status`], recording who set it.
    ///
    /// # Errors
    /// As [`Bots::set_bot_status`].
    pub async fn set_bot_status_by(
        self,
        name: &str,
        status: BotStatus,
        reason: &str,
        by: StatusBy,
    ) -> Result<(BotRow, u64)> {
        let bot = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no bot named {name:?}")))?;
        if matches!(bot.status, BotStatus::Superseded | BotStatus::Removed) && status != BotStatus::Removed {
            return Err(StoreError::Conflict(format!(
                "bot {name:?} is {} ({}); it cannot be {}",
                bot.status,
                bot.status_reason,
                match status {
                    BotStatus::Active => "enabled",
                    _ => "changed",
                }
            )));
        }
        // An uploaded bot plays only the folder its build and check made: one
        // without it (building, failed, rejected) has nothing a worker may run.
        let unproven = bot.author_id.is_some()
            && (bot.artifact_sha256.is_none()
                || matches!(
                    bot.status,
                    BotStatus::Building | BotStatus::BuildFailed | BotStatus::Rejected
                ));
        if status == BotStatus::Active && unproven {
            return Err(StoreError::Conflict(format!(
                "bot {name:?} is {} ({}): it plays only once its build and check have passed",
                bot.status, bot.status_reason
            )));
        }
        let mut tx = self.store.write_tx().await?;
        // An uploaded bot's status changes in turn with its author's uploads: the
        // host's disable comes before an upload (which is then refused) or after
        // it, never between the upload's check and its insert.
        if let Some(author) = bot.author_id {
            self.store.lock_author(&mut tx, author).await?;
        }
        sqlx::query(sql_text!(
            "UPDATE bots SET status = $2, status_reason = $3, status_by = $4,
             start_failures = CASE WHEN $2 = ",
            BotStatus::Active,
            " THEN 0 ELSE start_failures END WHERE id = $1"
        ))
        .bind(bot.id)
        .bind(status)
        .bind(reason)
        .bind(by)
        .execute(&mut *tx)
        .await?;
        let withdrawn = if status == BotStatus::Active {
            // Its run is over, and with it the run's witnesses: none of them may
            // count towards a run that starts later.
            sqlx::query("DELETE FROM start_failure_witnesses WHERE bot_id = $1")
                .bind(bot.id)
                .execute(&mut *tx)
                .await?;
            0
        } else {
            Self::withdraw_groups_of(&mut tx, bot.id).await?
        };
        tx.commit().await?;
        let bot = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {name:?} vanished")))?;
        Ok((bot, withdrawn))
    }

    /// Withdraws the scheduled (not leased) groups a bot sits in.
    pub(super) async fn withdraw_groups_of(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        bot_id: BotId,
    ) -> Result<u64> {
        Ok(sqlx::query(
            // A season's finals are never withdrawn: an entry is fixed at the
            // deadline, whatever its author uploads or disables after it, and a
            // withdrawn group would leave the committed schedule incomplete.
            sql_text!(
                "UPDATE match_groups SET status = ",
                GroupStatus::Withdrawn,
                "
             WHERE status = ",
                GroupStatus::Scheduled,
                "
             AND EXISTS (SELECT 1 FROM group_seats s WHERE s.group_id = match_groups.id AND s.bot_id = $1)
             AND competition_id NOT IN (SELECT finals_id FROM seasons WHERE finals_id IS NOT NULL)"
            ),
        )
        .bind(bot_id)
        .execute(&mut **tx)
        .await?
        .rows_affected())
    }

    /// Replaces a bot with a new version: a new row `BASE@N` (its own rating) with
    /// the new spec and environment, linked to the old one, which is superseded
    /// (its games and rating stay; its scheduled groups are withdrawn).
    ///
    /// # Errors
    /// No such bot, a superseded or removed one, an author's upload, or the database.
    pub async fn update_bot(self, name: &str, spec: &str, env: &[(String, String)]) -> Result<BotRow> {
        let old = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no bot named {name:?}")))?;
        if matches!(old.status, BotStatus::Superseded | BotStatus::Removed) {
            return Err(StoreError::Conflict(format!(
                "bot {name:?} is {} ({}): update its newest version",
                old.status, old.status_reason
            )));
        }
        if old.author_id.is_some() {
            return Err(StoreError::Conflict(format!(
                "bot {name:?} was uploaded by its author, who uploads its new versions (ladder submit)"
            )));
        }
        let base = name.split_once('@').map_or(name, |(b, _)| b);
        let version = old.version + 1;
        let new_name = format!("{base}@{version}");
        let env_json = serde_json::to_string(env).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut tx = self.store.write_tx().await?;
        sqlx::query(
            "INSERT INTO bots (name, game, spec, env, created_ms, version, previous_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&new_name)
        .bind(&old.game)
        .bind(spec)
        .bind(&env_json)
        .bind(self.store.now_ms())
        .bind(version)
        .bind(old.id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(sql_text!(
            "UPDATE bots SET status = ",
            BotStatus::Superseded,
            ", status_reason = $2 WHERE id = $1"
        ))
        .bind(old.id)
        .bind(format!("replaced by {new_name}"))
        .execute(&mut *tx)
        .await?;
        Self::withdraw_groups_of(&mut tx, old.id).await?;
        tx.commit().await?;
        self.bot(&new_name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {new_name:?} vanished")))
    }

    /// Counts reported games against bots' runs of games in a row in which they
    /// could not start or shake hands (see [`StartRun`]), as reported by worker
    /// `witness`. A bot whose run reaches `limit` (0: never), seen by enough
    /// workers ([`Bots::witnesses_needed`]), is suspended with `reason(bot, run)`,
    /// and its scheduled groups withdrawn. Returns the bots suspended now, as
    /// they were.
    pub(super) async fn count_start_failures(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        runs: &[(BotId, StartRun)],
        witness: WorkerId,
        limit: i64,
        reason: impl Fn(BotId, i64) -> String,
    ) -> Result<Vec<BotRow>> {
        // Started, and no failure since: one statement for all, which writes
        // nothing in the usual case (no run to clear). A bot's witnesses add up
        // to its run, so only the bots whose run was cleared have any to drop.
        let cleared: Vec<BotId> = runs
            .iter()
            .filter(|(_, run)| *run == StartRun::Restarted(0))
            .map(|(id, _)| *id)
            .collect();
        for chunk in cleared.chunks(500) {
            let mut sql = Sql::new("UPDATE bots SET start_failures = 0 WHERE start_failures <> 0 AND id IN ");
            sql.list(chunk.iter().copied()).push(" RETURNING id");
            let had_runs: Vec<BotId> = sql
                .query()?
                .fetch_all(&mut **tx)
                .await?
                .iter()
                .map(|row| row.try_get(0))
                .collect::<std::result::Result<_, _>>()?;
            if !had_runs.is_empty() {
                let mut sql = Sql::new("DELETE FROM start_failure_witnesses WHERE bot_id IN ");
                sql.list(had_runs);
                sql.query()?.execute(&mut **tx).await?;
            }
        }
        let mut suspended = Vec::new();
        let mut needed = None;
        for &(bot_id, run) in runs {
            let (sql, n) = match run {
                StartRun::Restarted(0) | StartRun::Continued(0) => continue,
                StartRun::Restarted(n) => {
                    sqlx::query("DELETE FROM start_failure_witnesses WHERE bot_id = $1")
                        .bind(bot_id)
                        .execute(&mut **tx)
                        .await?;
                    ("UPDATE bots SET start_failures = $2 WHERE id = $1", n)
                }
                StartRun::Continued(n) => (
                    "UPDATE bots SET start_failures = start_failures + $2 WHERE id = $1",
                    n,
                ),
            };
            sqlx::query(sql).bind(bot_id).bind(n).execute(&mut **tx).await?;
            sqlx::query(
                "INSERT INTO start_failure_witnesses (bot_id, worker_id, failures) VALUES ($1, $2, $3)
                 ON CONFLICT (bot_id, worker_id) DO UPDATE SET failures = start_failure_witnesses.failures + $3",
            )
            .bind(bot_id)
            .bind(witness)
            .bind(n)
            .execute(&mut **tx)
            .await?;
            if limit <= 0 {
                continue;
            }
            let needed = match needed {
                Some(k) => k,
                None => *needed.insert(Self::witnesses_needed(tx).await?),
            };
            let sql = format!(
                "SELECT {} FROM bots WHERE id = $1 AND status = {} AND start_failures >= $2
                 AND (SELECT COUNT(*) FROM start_failure_witnesses w WHERE w.bot_id = bots.id) >= $3",
                Self::BOT_COLUMNS,
                BotStatus::Active.quoted()
            );
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(bot_id)
                .bind(limit)
                .bind(needed)
                .fetch_optional(&mut **tx)
                .await?;
            if let Some(row) = row {
                let bot = BotRow::from_row(&row)?;
                sqlx::query(sql_text!(
                    "UPDATE bots SET status = ",
                    BotStatus::Suspended,
                    ", status_reason = $2, status_by = ",
                    StatusBy::Server,
                    " WHERE id = $1"
                ))
                .bind(bot_id)
                .bind(reason(bot_id, bot.start_failures))
                .execute(&mut **tx)
                .await?;
                Self::withdraw_groups_of(tx, bot_id).await?;
                suspended.push(bot);
            }
        }
        Ok(suspended)
    }

    /// How many workers must have seen a run of failed starts before it suspends
    /// a bot: two, so that no single worker can suspend one by forging spawn
    /// faults (replay cannot tell a forged one from a real one); one where the
    /// ladder has a single worker that is not revoked, which is then trusted with
    /// everything anyway.
    pub(super) async fn witnesses_needed(tx: &mut sqlx::Transaction<'static, sqlx::Any>) -> Result<i64> {
        let workers: i64 = sqlx::query("SELECT COUNT(*) FROM workers WHERE revoked_ms IS NULL")
            .fetch_one(&mut **tx)
            .await?
            .try_get(0)?;
        Ok(workers.clamp(1, 2))
    }
}
