//! Mirrored groups: scheduling them, leasing them to workers, and storing a
//! reported group exactly once.

use super::*;

impl Store {
    pub(super) fn group_row(r: &AnyRow) -> Result<GroupRow> {
        let bots: String = r.try_get("bots")?;
        Ok(GroupRow {
            id: r.try_get("id")?,
            competition_id: r.try_get("competition_id")?,
            group_no: r.try_get("group_no")?,
            seed: r.try_get("seed")?,
            bots: split_ids(&bots)?,
            status: r.try_get::<String, _>("status")?.parse()?,
        })
    }

    /// Schedules groups `(group_no, bots)`; a group number already present is kept
    /// as it is. Group g's seed is `engine::group_seed(competition seed, g)`.
    ///
    /// # Errors
    /// The database.
    pub async fn schedule_groups(&self, c: &CompetitionRow, groups: &[(i64, Vec<i64>)]) -> Result<()> {
        let mut tx = self.write_tx().await?;
        let now = now_ms();
        for (no, bots) in groups {
            sqlx::query(
                "INSERT INTO match_groups (competition_id, group_no, seed, bots, status, created_ms)
                 VALUES ($1, $2, $3, $4, 'scheduled', $5) ON CONFLICT (competition_id, group_no) DO NOTHING",
            )
            .bind(c.id)
            .bind(*no)
            .bind(engine::group_seed(c.seed as u64, *no as u64) as i64)
            .bind(join_ids(bots))
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Groups of a competition, by number.
    ///
    /// # Errors
    /// The database.
    pub async fn groups(&self, competition_id: i64) -> Result<Vec<GroupRow>> {
        let rows = sqlx::query(
            "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups
             WHERE competition_id = $1 ORDER BY group_no",
        )
        .bind(competition_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::group_row).collect()
    }

    /// A group by key.
    ///
    /// # Errors
    /// The database.
    pub async fn group(&self, id: i64) -> Result<Option<GroupRow>> {
        let row = sqlx::query(
            "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::group_row).transpose()
    }

    /// Leases up to `limit` groups at once to `worker`, oldest first, all under
    /// `token`, while the worker holds fewer than `held_max` unexpired leases (a
    /// worker that loops on leases holds at most that many groups; the rest stay
    /// for the others).
    ///
    /// A group whose lease expired is leased again with a new seed from the
    /// operating system's random source (a seed leaves the server once: the
    /// worker that let it expire knew every die of it), and not to the worker
    /// that let it expire, unless it has waited a whole lease more (a ladder with
    /// one worker still finishes).
    ///
    /// # Errors
    /// The database.
    pub async fn lease_many(
        &self,
        worker: &str,
        token: &str,
        now: i64,
        expires_ms: i64,
        limit: i64,
        held_max: i64,
    ) -> Result<Vec<GroupRow>> {
        let held: i64 = sqlx::query(
            "SELECT COUNT(*) FROM match_groups WHERE status = 'leased' AND lease_worker = $1 AND lease_expires_ms >= $2",
        )
        .bind(worker)
        .bind(now)
        .fetch_one(&self.pool)
        .await?
        .try_get(0)?;
        let limit = limit.min(held_max - held);
        if limit <= 0 {
            return Ok(Vec::new());
        }
        // PostgreSQL: several servers lease at once; SKIP LOCKED hands each its own
        // rows. `OF g`: locking the competition's row too would make every other
        // lease of that competition skip, and find nothing, until this one commits.
        let lock = match self.dialect {
            Dialect::Postgres => "FOR UPDATE OF g SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        // The store keeps the lease token's hash only.
        let token = &token_hash(token);
        let mut groups = self
            .lease_expired(worker, token, now, expires_ms, limit, lock)
            .await?;
        let want = limit - groups.len() as i64;
        if want > 0 {
            // Scheduled groups through their partial index (migration 0005): a
            // lease never walks past the thousands of groups other workers hold.
            let sql = format!(
                "UPDATE match_groups SET status = 'leased', lease_token = $1, lease_worker = $2, lease_expires_ms = $3
                 WHERE id IN (
                    SELECT g.id FROM match_groups g JOIN competitions c ON c.id = g.competition_id
                    WHERE g.status = 'scheduled' AND c.status = 'open'
                    ORDER BY g.id LIMIT $4 {lock})
                 RETURNING id, competition_id, group_no, seed, bots, status"
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(token)
                .bind(worker)
                .bind(expires_ms)
                .bind(want)
                .fetch_all(&self.pool)
                .await?;
            for row in &rows {
                groups.push(Self::group_row(row)?);
            }
        }
        groups.sort_by_key(|g| g.id);
        Ok(groups)
    }

    /// Groups whose lease expired (the oldest first, through their own partial
    /// index), leased again with new seeds; see [`Store::lease_many`].
    async fn lease_expired(
        &self,
        worker: &str,
        token: &str,
        now: i64,
        expires_ms: i64,
        limit: i64,
        lock: &str,
    ) -> Result<Vec<GroupRow>> {
        let lease_ms = expires_ms - now;
        let mut tx = self.write_tx().await?;
        let sql = format!(
            "SELECT g.id FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE g.status = 'leased' AND g.lease_expires_ms < $1 AND c.status = 'open'
             AND (g.lease_worker <> $2 OR g.lease_expires_ms < $3)
             ORDER BY g.lease_expires_ms LIMIT $4 {lock}"
        );
        let ids: Vec<i64> = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(now)
            .bind(worker)
            .bind(now - lease_ms)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<std::result::Result<_, _>>()?;
        let mut groups = Vec::with_capacity(ids.len());
        for id in ids {
            let row = sqlx::query(
                "UPDATE match_groups SET status = 'leased', lease_token = $1, lease_worker = $2,
                 lease_expires_ms = $3, seed = $4 WHERE id = $5
                 RETURNING id, competition_id, group_no, seed, bots, status",
            )
            .bind(token)
            .bind(worker)
            .bind(expires_ms)
            .bind(fresh_seed()? as i64)
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
            groups.push(Self::group_row(&row)?);
        }
        tx.commit().await?;
        Ok(groups)
    }

    /// Groups of a competition with a key above `after`, by key: what the
    /// scheduler has not seen yet (its own and other servers').
    ///
    /// # Errors
    /// The database.
    pub async fn groups_after(&self, competition_id: i64, after: i64) -> Result<Vec<GroupRow>> {
        let rows = sqlx::query(
            "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups
             WHERE competition_id = $1 AND id > $2 ORDER BY id",
        )
        .bind(competition_id)
        .bind(after)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::group_row).collect()
    }

    /// Schedules groups with the next free numbers, in one transaction; returns
    /// those stored (a number another server took meanwhile is skipped: its
    /// group is that server's).
    ///
    /// # Errors
    /// The database.
    pub async fn schedule_many(&self, c: &CompetitionRow, groups: &[Vec<i64>]) -> Result<Vec<GroupRow>> {
        let mut tx = self.write_tx().await?;
        // A bot taken out of play since the groups were picked is left out. On
        // PostgreSQL the rows are share-locked, so a status change waits for this
        // transaction and then withdraws what it stored.
        let mut ids: Vec<i64> = groups.iter().flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let mut inactive = std::collections::HashSet::new();
        for chunk in ids.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|k| format!("${k}")).collect();
            let sql = format!(
                "SELECT id, status FROM bots WHERE id IN ({}) {}",
                marks.join(", "),
                match self.dialect {
                    Dialect::Postgres => "FOR SHARE",
                    Dialect::Sqlite => "",
                }
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for id in chunk {
                q = q.bind(*id);
            }
            for row in q.fetch_all(&mut *tx).await? {
                if row.try_get::<String, _>(1)? != BotStatus::Active.as_str() {
                    inactive.insert(row.try_get::<i64, _>(0)?);
                }
            }
        }
        let groups: Vec<&Vec<i64>> = groups
            .iter()
            .filter(|g| !g.iter().any(|id| inactive.contains(id)))
            .collect();
        let next: Option<i64> =
            sqlx::query("SELECT MAX(group_no) FROM match_groups WHERE competition_id = $1")
                .bind(c.id)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
        let first = next.map_or(0, |n| n + 1);
        let now = now_ms();
        let mut stored = Vec::with_capacity(groups.len());
        // Numbers are dense from 0, so a cap on the number is a cap on the count,
        // whichever server got there first.
        // Withdrawn groups hold numbers but no games: the cap moves past them.
        let last = if c.max_games > 0 {
            let withdrawn: i64 = sqlx::query(
                "SELECT COUNT(*) FROM match_groups WHERE competition_id = $1 AND status = 'withdrawn'",
            )
            .bind(c.id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            (c.max_games + c.seats - 1) / c.seats + withdrawn
        } else {
            i64::MAX
        };
        let numbered: Vec<(i64, &Vec<i64>)> = groups
            .iter()
            .enumerate()
            .map(|(k, bots)| (first + k as i64, *bots))
            .take_while(|(no, _)| *no < last)
            .collect();
        // Many rows a statement: a batch of the background scheduler is hundreds.
        for chunk in numbered.chunks(100) {
            let mut sql = format!(
                "INSERT INTO match_groups (competition_id, group_no, seed, bots, status, created_ms) VALUES {}",
                value_rows(chunk.len(), 6)
            );
            sql.push_str(
                " ON CONFLICT (competition_id, group_no) DO NOTHING
                 RETURNING id, competition_id, group_no, seed, bots, status",
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (no, bots) in chunk {
                q = q
                    .bind(c.id)
                    .bind(*no)
                    .bind(engine::group_seed(c.seed as u64, *no as u64) as i64)
                    .bind(join_ids(bots))
                    .bind("scheduled")
                    .bind(now);
            }
            for row in q.fetch_all(&mut *tx).await? {
                stored.push(Self::group_row(&row)?);
            }
        }
        stored.sort_by_key(|g| g.id);
        tx.commit().await?;
        Ok(stored)
    }

    /// Groups by key (those that exist).
    ///
    /// # Errors
    /// The database.
    pub async fn groups_by_id(&self, ids: &[i64]) -> Result<Vec<GroupRow>> {
        let rows = self
            .rows_with_ids(
                "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups WHERE id IN",
                ids,
            )
            .await?;
        rows.iter().map(Self::group_row).collect()
    }

    /// The rows `select` (ending in `IN`) finds for `ids`, asked 100 at a time.
    pub(super) async fn rows_with_ids(&self, select: &str, ids: &[i64]) -> Result<Vec<AnyRow>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let marks: Vec<String> = (1..=chunk.len()).map(|k| format!("${k}")).collect();
            let sql = format!("{select} ({})", marks.join(", "));
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for &id in chunk {
                q = q.bind(id);
            }
            out.extend(q.fetch_all(&self.pool).await?);
        }
        Ok(out)
    }

    /// Renews `worker`'s leases of `ids` under `token` that have not run out by
    /// `now`, to `expires_ms`; returns the groups renewed. A lease that ran out is
    /// not brought back: its group may have gone to another worker with a new seed.
    ///
    /// # Errors
    /// The database.
    pub async fn renew_leases(
        &self,
        worker: &str,
        token: &str,
        ids: &[i64],
        now: i64,
        expires_ms: i64,
    ) -> Result<Vec<i64>> {
        let token = token_hash(token);
        let mut renewed = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let marks: Vec<String> = (5..5 + chunk.len()).map(|k| format!("${k}")).collect();
            let sql = format!(
                "UPDATE match_groups SET lease_expires_ms = $1
                 WHERE status = 'leased' AND lease_worker = $2 AND lease_token = $3 AND lease_expires_ms >= $4
                 AND id IN ({}) RETURNING id",
                marks.join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(expires_ms)
                .bind(worker)
                .bind(&token)
                .bind(now);
            for &id in chunk {
                q = q.bind(id);
            }
            for row in q.fetch_all(&self.pool).await? {
                renewed.push(row.try_get(0)?);
            }
        }
        Ok(renewed)
    }

    /// Who holds each of `ids` now: `(lease token's hash, worker name)` of the
    /// groups leased at this moment (expired or not); the others are not in the map.
    ///
    /// # Errors
    /// The database.
    pub async fn lease_holders(
        &self,
        ids: &[i64],
    ) -> Result<std::collections::HashMap<i64, (String, String)>> {
        let rows = self
            .rows_with_ids(
                "SELECT id, lease_token, lease_worker FROM match_groups WHERE status = 'leased' AND id IN",
                ids,
            )
            .await?;
        let mut out = std::collections::HashMap::with_capacity(rows.len());
        for row in rows {
            let token: Option<String> = row.try_get(1)?;
            let worker: Option<String> = row.try_get(2)?;
            out.insert(
                row.try_get(0)?,
                (token.unwrap_or_default(), worker.unwrap_or_default()),
            );
        }
        Ok(out)
    }

    pub(super) async fn insert_games(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        games: &[&NewGame],
        now: i64,
    ) -> Result<u64> {
        // Many rows a statement (a statement per game is most of a report's cost
        // in SQLite); 100 rows of 9 values stay far below both databases' limits.
        let mut inserted = 0;
        for chunk in games.chunks(100) {
            let sql = format!(
                "INSERT INTO games (competition_id, group_id, rotation, bots, ranks, termination, record, recorded_ms, fault_kinds) VALUES {}",
                value_rows(chunk.len(), 9)
            );
            let sql = format!("{sql} ON CONFLICT (group_id, rotation) DO NOTHING");
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for g in chunk {
                q = q
                    .bind(g.competition_id)
                    .bind(g.group_id)
                    .bind(g.rotation)
                    .bind(join_ids(&g.bots))
                    .bind(join_ids(&g.ranks))
                    .bind(&g.termination)
                    .bind(&g.record)
                    .bind(now)
                    .bind(&g.fault_kinds);
            }
            inserted += q.execute(&mut **tx).await?.rows_affected();
        }
        for g in games.iter().filter(|g| !g.faults.is_empty()) {
            Self::insert_faults(tx, g).await?;
        }
        Ok(inserted)
    }

    /// A stored game's faults, once: a game already itemized (reported twice) is
    /// skipped. Faulted games are few, so two statements each is cheap.
    pub(super) async fn insert_faults(tx: &mut sqlx::Transaction<'_, sqlx::Any>, g: &NewGame) -> Result<()> {
        let row = sqlx::query(
            "SELECT id FROM games WHERE group_id = $1 AND rotation = $2
             AND NOT EXISTS (SELECT 1 FROM faults f WHERE f.game_id = games.id)",
        )
        .bind(g.group_id)
        .bind(g.rotation)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = row else { return Ok(()) };
        let game_id: i64 = row.try_get(0)?;
        let faults: Vec<&SeatFaults> = g.faults.iter().filter(|f| f.seat < g.bots.len()).collect();
        for chunk in faults.chunks(100) {
            let sql = format!(
                "INSERT INTO faults (game_id, competition_id, bot_id, seat, kind, count, detail, at_move) VALUES {}",
                value_rows(chunk.len(), 8)
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for f in chunk {
                q = q
                    .bind(game_id)
                    .bind(g.competition_id)
                    .bind(g.bots[f.seat])
                    .bind(f.seat as i64)
                    .bind(&f.kind)
                    .bind(f.count as i64)
                    .bind(&f.detail)
                    .bind(f.at_move as i64);
            }
            q.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Stores games in one transaction (a game already stored is skipped) and marks
    /// each group done once all `seats` rotations are in. Returns how many were new.
    ///
    /// # Errors
    /// The database; nothing of the batch is stored then.
    pub async fn record_games(&self, games: &[NewGame], seats: i64) -> Result<u64> {
        let mut tx = self.write_tx().await?;
        let refs: Vec<&NewGame> = games.iter().collect();
        let inserted = Self::insert_games(&mut tx, &refs, now_ms()).await?;
        let mut groups: Vec<i64> = games.iter().map(|g| g.group_id).collect();
        groups.sort_unstable();
        groups.dedup();
        for id in groups {
            sqlx::query(
                "UPDATE match_groups SET status = 'done'
                 WHERE id = $1 AND (SELECT COUNT(*) FROM games WHERE group_id = $1) >= $2",
            )
            .bind(id)
            .bind(seats)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(inserted)
    }

    /// Stores several leased groups' games in one transaction, each if its lease
    /// still holds it; one outcome per report, in order (a group that does not
    /// exist is [`StoreError::NotFound`] there, and the others still go in). The
    /// recorded groups' seats count towards each bot's run of games in a row in
    /// which it could not start; a run reaching `suspend_after` (0: never)
    /// suspends the bot. Returns the outcomes and the bots suspended now.
    ///
    /// # Errors
    /// The database; nothing is stored then.
    pub async fn complete_leases(
        &self,
        reports: &[LeaseReport<'_>],
        worker_id: Option<i64>,
        suspend_after: i64,
    ) -> Result<(Vec<Result<Completion>>, Vec<BotRow>)> {
        let mut tx = self.write_tx().await?;
        let now = now_ms();
        let mut out = Vec::with_capacity(reports.len());
        let mut games = Vec::new();
        for r in reports {
            // Done, by this lease, if it still holds the group: one statement in
            // the usual case (on PostgreSQL the row lock makes a second report of
            // the group wait, then find it done).
            // Only by the worker that holds the lease: a lease token another
            // worker learnt (or a revoked worker's) stores nothing.
            let taken = sqlx::query(
                "UPDATE match_groups SET status = 'done', reported_by = $2
                 WHERE id = $1 AND status <> 'done' AND lease_token = $3
                 AND ($2 IS NULL OR lease_worker = (SELECT name FROM workers WHERE id = $2))",
            )
            .bind(r.group_id)
            .bind(worker_id)
            .bind(token_hash(r.token))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if taken == 1 {
                games.extend(r.games.iter());
                out.push(Ok(Completion::Recorded));
                continue;
            }
            let row = sqlx::query("SELECT status FROM match_groups WHERE id = $1")
                .bind(r.group_id)
                .fetch_optional(&mut *tx)
                .await?;
            out.push(match row {
                None => Err(StoreError::NotFound(format!("no group {}", r.group_id))),
                Some(row) => match row.try_get::<String, _>(0)?.parse::<GroupStatus>()? {
                    GroupStatus::Done => Ok(Completion::AlreadyDone),
                    _ => Ok(Completion::LeaseLost),
                },
            });
        }
        Self::insert_games(&mut tx, &games, now).await?;
        let mut runs: Vec<(i64, StartRun)> = Vec::new();
        let mut last_failure: std::collections::HashMap<i64, &str> = std::collections::HashMap::new();
        for (r, _) in reports
            .iter()
            .zip(&out)
            .filter(|(_, o)| matches!(o, Ok(Completion::Recorded)))
        {
            for seat in r.starts.iter().filter(|s| s.failure.is_some() || s.moved) {
                let k = match runs.iter().position(|(id, _)| *id == seat.bot) {
                    Some(k) => k,
                    None => {
                        runs.push((seat.bot, StartRun::Continued(0)));
                        runs.len() - 1
                    }
                };
                runs[k].1 = runs[k].1.then(seat.failure.is_none());
                if let Some(f) = &seat.failure {
                    last_failure.insert(seat.bot, f);
                }
            }
        }
        let witness = worker_id.unwrap_or(0);
        let suspended = Self::count_start_failures(&mut tx, &runs, witness, suspend_after, |bot, run| {
            let last = last_failure.get(&bot).copied().unwrap_or("");
            let what = match last {
                "spawn" | "handshake" => "could not start or shake hands",
                "crash" | "memory" => "crashed",
                "stall" => "stopped answering",
                _ => "broke the protocol",
            };
            format!("{what}: faulted in {run} reported games in a row (last fault: {last})")
        })
        .await?;
        tx.commit().await?;
        Ok((out, suspended))
    }
}
