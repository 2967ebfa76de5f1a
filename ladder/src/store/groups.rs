//! Mirrored groups: scheduling them, leasing them to workers, and storing a
//! reported group exactly once.

use super::*;

/// The columns of [`GroupRow`] kept in `match_groups` (its seats are in `group_seats`).
const GROUP_COLUMNS: &str = "id, competition_id, group_no, seed, status";

/// A group's columns with each of its seats' bots, a row per seat: what
/// [`Groups::groups_joined`] reads, from `match_groups g JOIN group_seats s`.
const GROUP_SEAT_COLUMNS: &str = "g.id, g.competition_id, g.group_no, g.seed, g.status, s.bot_id";

impl Groups<'_> {
    /// Groups from rows of [`GROUP_SEAT_COLUMNS`], a group's seats in a row and
    /// in seat order.
    pub(super) fn groups_joined(rows: &[AnyRow]) -> Result<Vec<GroupRow>> {
        let mut groups: Vec<GroupRow> = Vec::new();
        for row in rows {
            let id: GroupId = row.try_get(0)?;
            let bot: BotId = row.try_get(5)?;
            match groups.last_mut() {
                Some(g) if g.id == id => g.bots.push(bot),
                _ => {
                    let mut g = GroupRow::from_row(row)?;
                    g.bots.push(bot);
                    groups.push(g);
                }
            }
        }
        Ok(groups)
    }

    /// Groups read from `match_groups` rows, with their seats.
    pub(super) async fn groups_from(
        conn: &mut sqlx::AnyConnection,
        rows: &[AnyRow],
    ) -> Result<Vec<GroupRow>> {
        let mut groups = rows
            .iter()
            .map(GroupRow::from_row)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let ids: Vec<GroupId> = groups.iter().map(|g| g.id).collect();
        let mut seats: std::collections::HashMap<GroupId, Vec<BotId>> = std::collections::HashMap::new();
        for chunk in ids.chunks(100) {
            let mut sql = Sql::new("SELECT group_id, bot_id FROM group_seats WHERE group_id IN ");
            sql.list(chunk.iter().copied()).push(" ORDER BY group_id, seat");
            for row in sql.query()?.fetch_all(&mut *conn).await? {
                seats.entry(row.try_get(0)?).or_default().push(row.try_get(1)?);
            }
        }
        for g in &mut groups {
            g.bots = seats
                .remove(&g.id)
                .ok_or_else(|| StoreError::Corrupt(format!("group {} has no seats", g.id)))?;
        }
        Ok(groups)
    }

    /// Stores the seats of groups just inserted.
    pub(super) async fn insert_group_seats(
        conn: &mut sqlx::AnyConnection,
        groups: &[(GroupId, &[BotId])],
    ) -> Result<()> {
        let seats: Vec<(GroupId, i64, BotId)> = groups
            .iter()
            .flat_map(|(id, bots)| {
                bots.iter()
                    .enumerate()
                    .map(move |(seat, bot)| (*id, seat as i64, *bot))
            })
            .collect();
        for chunk in seats.chunks(300) {
            let mut sql = Sql::new("INSERT INTO group_seats (group_id, seat, bot_id) VALUES ");
            sql.rows(chunk, |row, &(group, seat, bot)| {
                row.bind(group).bind(seat).bind(bot);
            });
            sql.query()?.execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// Schedules groups `(group_no, bots)`; a group number already present is kept
    /// as it is. Group g's seed is `engine::group_seed(competition seed, g)`.
    ///
    /// # Errors
    /// The database.
    pub async fn schedule_groups(self, c: &CompetitionRow, groups: &[(i64, Vec<BotId>)]) -> Result<()> {
        let mut tx = self.store.write_tx().await?;
        let now = self.store.now_ms();
        for (no, bots) in groups {
            let stored = sqlx::query(sql_text!(
                "INSERT INTO match_groups (competition_id, group_no, seed, status, created_ms)
                 VALUES ($1, $2, $3, ",
                GroupStatus::Scheduled,
                ", $4) ON CONFLICT (competition_id, group_no) DO NOTHING
                 RETURNING id"
            ))
            .bind(c.id)
            .bind(*no)
            .bind(engine::group_seed(c.seed as u64, *no as u64) as i64)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = stored {
                Self::insert_group_seats(&mut tx, &[(row.try_get(0)?, bots)]).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Groups of a competition, by number.
    ///
    /// # Errors
    /// The database.
    pub async fn of_competition(self, competition_id: CompetitionId) -> Result<Vec<GroupRow>> {
        let sql = format!(
            "SELECT {GROUP_SEAT_COLUMNS} FROM match_groups g JOIN group_seats s ON s.group_id = g.id
             WHERE g.competition_id = $1 ORDER BY g.group_no, s.seat"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(competition_id)
            .fetch_all(&self.store.pool)
            .await?;
        Self::groups_joined(&rows)
    }

    /// A group by key.
    ///
    /// # Errors
    /// The database.
    pub async fn group(self, id: GroupId) -> Result<Option<GroupRow>> {
        Ok(self.groups_by_id(&[id]).await?.pop())
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
        self,
        ask: &LeaseAsk<'_>,
        now: i64,
        expires_ms: i64,
        limit: i64,
        held_max: i64,
    ) -> Result<Vec<GroupRow>> {
        let worker = ask.worker;
        let held: i64 = sqlx::query(sql_text!(
            "SELECT COUNT(*) FROM match_groups WHERE status = ",
            GroupStatus::Leased,
            " AND lease_worker = $1 AND lease_expires_ms >= $2"
        ))
        .bind(worker)
        .bind(now)
        .fetch_one(&self.store.pool)
        .await?
        .try_get(0)?;
        let limit = limit.min(held_max - held);
        if limit <= 0 {
            return Ok(Vec::new());
        }
        // PostgreSQL: several servers lease at once; SKIP LOCKED hands each its own
        // rows. `OF g`: locking the competition's row too would make every other
        // lease of that competition skip, and find nothing, until this one commits.
        let lock = match self.store.dialect {
            Dialect::Postgres => "FOR UPDATE OF g SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        // The store keeps the lease token's hash only.
        let token = &token_hash(ask.token);
        let hashed = LeaseAsk { token, ..*ask };
        let fits = runtime_filter(ask.runtimes);
        let mut groups = self.lease_expired(&hashed, now, expires_ms, limit, lock).await?;
        // Challenges first, as many as the host's share gives this lease: an
        // author's challenge does not wait behind every ladder group already
        // scheduled.
        let challenges = ask.challenges_first.min(limit - groups.len() as i64);
        if challenges > 0 {
            let only = format!("{fits} AND g.competition_id IN (SELECT competition_id FROM challenges)");
            groups.extend(
                self.lease_scheduled(&hashed, expires_ms, challenges, &only, lock)
                    .await?,
            );
        }
        let want = limit - groups.len() as i64;
        if want > 0 {
            groups.extend(
                self.lease_scheduled(&hashed, expires_ms, want, &fits, lock)
                    .await?,
            );
        }
        if !groups.is_empty() {
            sqlx::query("UPDATE workers SET groups_leased = groups_leased + $1 WHERE name = $2")
                .bind(groups.len() as i64)
                .bind(worker)
                .execute(&self.store.pool)
                .await?;
        }
        groups.sort_by_key(|g| g.id);
        Ok(groups)
    }

    /// Leases up to `want` scheduled groups of open competitions that meet
    /// `filter` (SQL on `g`, the group, and `c`, its competition), the oldest
    /// first; see [`Groups::lease_many`].
    async fn lease_scheduled(
        self,
        ask: &LeaseAsk<'_>,
        expires_ms: i64,
        want: i64,
        filter: &str,
        lock: &str,
    ) -> Result<Vec<GroupRow>> {
        let (token, worker) = (ask.token, ask.worker);
        // Scheduled groups through their partial index (migration 0005): a
        // lease never walks past the thousands of groups other workers hold.
        let pick = format!(
            "SELECT g.id AS picked_id FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE g.status = {scheduled} AND c.status = {open}{filter}
             ORDER BY g.id LIMIT $4 {lock}",
            scheduled = GroupStatus::Scheduled.quoted(),
            open = CompetitionStatus::Open.quoted(),
        );
        let sql = match self.store.dialect {
            // The groups are picked once, in a materialized step: as a
            // subquery of the UPDATE, PostgreSQL may evaluate `LIMIT` again
            // when a row changed under it (its recheck of concurrent
            // updates), and a lease that asked for one got hundreds. It also
            // reads the leased groups' seats in the same statement (a round
            // trip fewer on the busiest call).
            Dialect::Postgres => format!(
                "WITH picked AS MATERIALIZED ({pick}),
                 g AS (UPDATE match_groups SET status = {leased}, lease_token = $1, lease_worker = $2,
                       lease_expires_ms = $3 FROM picked WHERE match_groups.id = picked.picked_id
                       RETURNING {GROUP_COLUMNS})
                 SELECT {GROUP_SEAT_COLUMNS} FROM g JOIN group_seats s ON s.group_id = g.id ORDER BY g.id, s.seat",
                leased = GroupStatus::Leased.quoted(),
            ),
            // One writer at a time, in process: the seats are read after.
            Dialect::Sqlite => format!(
                "UPDATE match_groups SET status = {leased}, lease_token = $1, lease_worker = $2, lease_expires_ms = $3
                 WHERE id IN ({pick}) RETURNING {GROUP_COLUMNS}",
                leased = GroupStatus::Leased.quoted(),
            ),
        };
        let mut conn = self.store.pool.acquire().await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(token)
            .bind(worker)
            .bind(expires_ms)
            .bind(want)
            .fetch_all(&mut *conn)
            .await?;
        Ok(match self.store.dialect {
            Dialect::Postgres => Self::groups_joined(&rows)?,
            Dialect::Sqlite => Self::groups_from(&mut conn, &rows).await?,
        })
    }

    /// Groups whose lease expired (the oldest first, through their own partial
    /// index), leased again with new seeds; see [`Groups::lease_many`].
    async fn lease_expired(
        self,
        ask: &LeaseAsk<'_>,
        now: i64,
        expires_ms: i64,
        limit: i64,
        lock: &str,
    ) -> Result<Vec<GroupRow>> {
        let (worker, token) = (ask.worker, ask.token);
        let fits = runtime_filter(ask.runtimes);
        let lease_ms = expires_ms - now;
        let mut tx = self.store.write_tx().await?;
        let sql = format!(
            "SELECT g.id, g.lease_worker FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE g.status = {leased} AND g.lease_expires_ms < $1 AND c.status = {open}
             AND (g.lease_worker <> $2 OR g.lease_expires_ms < $3){fits}
             ORDER BY g.lease_expires_ms LIMIT $4 {lock}",
            leased = GroupStatus::Leased.quoted(),
            open = CompetitionStatus::Open.quoted(),
        );
        let expired: Vec<(GroupId, Option<String>)> = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(now)
            .bind(worker)
            .bind(now - lease_ms)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_>>()?;
        // Each lease that ran out counts against the worker that held it.
        let mut lost: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
        for name in expired.iter().filter_map(|(_, w)| w.as_deref()) {
            *lost.entry(name).or_default() += 1;
        }
        for (name, n) in lost {
            sqlx::query("UPDATE workers SET leases_expired = leases_expired + $1 WHERE name = $2")
                .bind(n)
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
        let mut rows = Vec::with_capacity(expired.len());
        for (id, _) in expired {
            let seed = Seasons::deal_again(&mut tx, id).await?;
            let sql = format!(
                "UPDATE match_groups SET status = {leased}, lease_token = $1, lease_worker = $2,
                 lease_expires_ms = $3, seed = $4 WHERE id = $5 RETURNING {GROUP_COLUMNS}",
                leased = GroupStatus::Leased.quoted(),
            );
            rows.push(
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(token)
                    .bind(worker)
                    .bind(expires_ms)
                    .bind(seed as i64)
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await?,
            );
        }
        let groups = Self::groups_from(&mut tx, &rows).await?;
        tx.commit().await?;
        Ok(groups)
    }

    /// Groups of a competition with a key above `after`, by key: what the
    /// scheduler has not seen yet (its own and other servers').
    ///
    /// # Errors
    /// The database.
    pub async fn groups_after(self, competition_id: CompetitionId, after: GroupId) -> Result<Vec<GroupRow>> {
        // The groups, then their seats by key. Not a join: PostgreSQL plans a
        // prepared `id > $2` for a third of the table, and joined that way it
        // scanned every seat of every group at each look of the scheduler.
        let sql = format!(
            "SELECT {GROUP_COLUMNS} FROM match_groups WHERE competition_id = $1 AND id > $2 ORDER BY id"
        );
        let mut conn = self.store.pool.acquire().await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(competition_id)
            .bind(after)
            .fetch_all(&mut *conn)
            .await?;
        Self::groups_from(&mut conn, &rows).await
    }

    /// Schedules groups with the next free numbers, in one transaction; returns
    /// those stored (a number another server took meanwhile is skipped: its
    /// group is that server's).
    ///
    /// # Errors
    /// The database.
    pub async fn schedule_many(self, c: &CompetitionRow, groups: &[Vec<BotId>]) -> Result<Vec<GroupRow>> {
        let mut tx = self.store.write_tx().await?;
        // A bot taken out of play since the groups were picked is left out. On
        // PostgreSQL the rows are share-locked, so a status change waits for this
        // transaction and then withdraws what it stored.
        let mut ids: Vec<BotId> = groups.iter().flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let mut inactive = std::collections::HashSet::new();
        for chunk in ids.chunks(500) {
            let mut sql = Sql::new("SELECT id, status FROM bots WHERE id IN ");
            sql.list(chunk.iter().copied()).push(match self.store.dialect {
                Dialect::Postgres => " FOR SHARE",
                Dialect::Sqlite => "",
            });
            for row in sql.query()?.fetch_all(&mut *tx).await? {
                if row.try_get::<BotStatus, _>(1)? != BotStatus::Active {
                    inactive.insert(row.try_get::<BotId, _>(0)?);
                }
            }
        }
        let groups: Vec<&Vec<BotId>> = groups
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
        let now = self.store.now_ms();
        let mut stored = Vec::with_capacity(groups.len());
        // Numbers are dense from 0, so a cap on the number is a cap on the count,
        // whichever server got there first.
        // Withdrawn groups hold numbers but no games: the cap moves past them.
        let last = if c.max_games > 0 {
            let withdrawn: i64 = sqlx::query(sql_text!(
                "SELECT COUNT(*) FROM match_groups WHERE competition_id = $1 AND status = ",
                GroupStatus::Withdrawn
            ))
            .bind(c.id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            (c.max_games + c.seats - 1) / c.seats + withdrawn
        } else {
            i64::MAX
        };
        let numbered: Vec<(i64, &Vec<BotId>)> = groups
            .iter()
            .enumerate()
            .map(|(k, bots)| (first + k as i64, *bots))
            .take_while(|(no, _)| *no < last)
            .collect();
        // Many rows a statement: a batch of the background scheduler is hundreds.
        for chunk in numbered.chunks(100) {
            let mut sql = Sql::new(
                "INSERT INTO match_groups (competition_id, group_no, seed, status, created_ms) VALUES ",
            );
            sql.rows(chunk, |row, &(no, _)| {
                row.bind(c.id)
                    .bind(no)
                    .bind(engine::group_seed(c.seed as u64, no as u64) as i64)
                    .bind(GroupStatus::Scheduled)
                    .bind(now);
            });
            sql.push(" ON CONFLICT (competition_id, group_no) DO NOTHING RETURNING ")
                .push(GROUP_COLUMNS);
            let mut new = Vec::with_capacity(chunk.len());
            for row in sql.query()?.fetch_all(&mut *tx).await? {
                let mut group = GroupRow::from_row(&row)?;
                // A number another server took is not returned: its seats are that server's.
                if let Some((_, bots)) = chunk.iter().find(|(no, _)| *no == group.group_no) {
                    group.bots = bots.to_vec();
                    new.push(group);
                }
            }
            let seats: Vec<(GroupId, &[BotId])> = new.iter().map(|g| (g.id, g.bots.as_slice())).collect();
            Self::insert_group_seats(&mut tx, &seats).await?;
            stored.extend(new);
        }
        stored.sort_by_key(|g| g.id);
        tx.commit().await?;
        Ok(stored)
    }

    /// Groups by key (those that exist).
    ///
    /// # Errors
    /// The database.
    pub async fn groups_by_id(self, ids: &[GroupId]) -> Result<Vec<GroupRow>> {
        // The groups, then their seats: each a lookup by key in one table. Joined,
        // PostgreSQL planned a scan of every seat while the tables were young
        // (before their first ANALYZE), which cost each report batch 12 ms at
        // 40,000 groups.
        let mut conn = self.store.pool.acquire().await?;
        let rows = Self::rows_with_ids(
            &mut conn,
            &format!("SELECT {GROUP_COLUMNS} FROM match_groups WHERE id IN "),
            ids,
            " ORDER BY id",
        )
        .await?;
        Self::groups_from(&mut conn, &rows).await
    }

    /// The rows `select` (ending in `IN `) then `rest` finds for `ids`, asked 100 at a time.
    pub(super) async fn rows_with_ids<Id>(
        conn: &mut sqlx::AnyConnection,
        select: &str,
        ids: &[Id],
        rest: &str,
    ) -> Result<Vec<AnyRow>>
    where
        Id: Copy + for<'q> sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let mut sql = Sql::new(select);
            sql.list(chunk.iter().copied()).push(rest);
            out.extend(sql.query()?.fetch_all(&mut *conn).await?);
        }
        Ok(out)
    }

    /// Sets the period and the last moment of the new leases of `ids` under
    /// `token`: each runs out at `expires_ms` unless renewed, and at
    /// `deadline_ms` whatever its renewals.
    ///
    /// # Errors
    /// The database.
    pub async fn start_leases(
        self,
        token: &str,
        ids: &[GroupId],
        expires_ms: i64,
        deadline_ms: i64,
    ) -> Result<()> {
        let token = token_hash(token);
        for chunk in ids.chunks(100) {
            let mut sql = Sql::new("UPDATE match_groups SET lease_expires_ms = ");
            sql.bind(expires_ms)
                .push(", lease_deadline_ms = ")
                .bind(deadline_ms)
                .push(sql_text!(
                    " WHERE status = ",
                    GroupStatus::Leased,
                    " AND lease_token = "
                ))
                .bind(token.as_str())
                .push(" AND id IN ")
                .list(chunk.iter().copied());
            sql.query()?.execute(&self.store.pool).await?;
        }
        Ok(())
    }

    /// Renews `worker`'s leases of `ids` under `token` that have not run out by
    /// `now`, to `expires_ms` but never past the lease's last moment
    /// ([`Groups::start_leases`]); returns the groups renewed. A lease that ran out
    /// is not brought back: its group may have gone to another worker with a new
    /// seed.
    ///
    /// # Errors
    /// The database.
    pub async fn renew_leases(
        self,
        worker: &str,
        token: &str,
        ids: &[GroupId],
        now: i64,
        expires_ms: i64,
    ) -> Result<Vec<GroupId>> {
        let token = token_hash(token);
        let mut renewed = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let mut sql = Sql::new(
                "UPDATE match_groups SET lease_expires_ms = CASE WHEN lease_deadline_ms IS NOT NULL AND lease_deadline_ms < ",
            );
            sql.bind(expires_ms)
                .push(" THEN lease_deadline_ms ELSE ")
                .bind(expires_ms)
                .push(sql_text!(
                    " END WHERE status = ",
                    GroupStatus::Leased,
                    " AND lease_worker = "
                ))
                .bind(worker)
                .push(" AND lease_token = ")
                .bind(token.as_str())
                .push(" AND lease_expires_ms >= ")
                .bind(now)
                .push(" AND id IN ")
                .list(chunk.iter().copied())
                .push(" RETURNING id");
            for row in sql.query()?.fetch_all(&self.store.pool).await? {
                renewed.push(row.try_get(0)?);
            }
        }
        Ok(renewed)
    }

    /// Takes back `worker`'s leases of `ids` under `token` (expired or not, as
    /// long as no other worker took the group since): each group is scheduled
    /// again at once with a new seed from the operating system's random source,
    /// since the worker giving it back may have seen the old seed's dice, and
    /// is not counted as a lease that ran out. Returns the groups taken back.
    ///
    /// # Errors
    /// The database.
    pub async fn return_leases(self, worker: &str, token: &str, ids: &[GroupId]) -> Result<Vec<GroupId>> {
        let token = token_hash(token);
        let mut tx = self.store.write_tx().await?;
        let mut returned = Vec::with_capacity(ids.len());
        for &id in ids {
            let row = sqlx::query(sql_text!(
                "UPDATE match_groups SET status = ",
                GroupStatus::Scheduled,
                ", lease_token = NULL, lease_worker = NULL,
                 lease_expires_ms = NULL, lease_deadline_ms = NULL
                 WHERE id = $1 AND status = ",
                GroupStatus::Leased,
                " AND lease_worker = $2 AND lease_token = $3 RETURNING id"
            ))
            .bind(id)
            .bind(worker)
            .bind(token.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = row {
                let seed = Seasons::deal_again(&mut tx, id).await?;
                sqlx::query("UPDATE match_groups SET seed = $1 WHERE id = $2")
                    .bind(seed as i64)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                returned.push(row.try_get(0)?);
            }
        }
        tx.commit().await?;
        Ok(returned)
    }

    /// Who holds each of `ids` now: `(lease token's hash, worker name)` of the
    /// groups leased at this moment (expired or not); the others are not in the map.
    ///
    /// # Errors
    /// The database.
    pub async fn lease_holders(
        self,
        ids: &[GroupId],
    ) -> Result<std::collections::HashMap<GroupId, (String, String)>> {
        let mut conn = self.store.pool.acquire().await?;
        let rows = Self::rows_with_ids(
            &mut conn,
            sql_text!(
                "SELECT id, lease_token, lease_worker FROM match_groups WHERE status = ",
                GroupStatus::Leased,
                " AND id IN "
            ),
            ids,
            "",
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

    /// Stores games (one already stored is skipped); returns how many were new.
    pub(super) async fn insert_games(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        games: &[&NewGame],
        now: i64,
    ) -> Result<u64> {
        let mut places = Vec::with_capacity(games.len());
        for g in games {
            let packed = (g.bots.len() == g.ranks.len())
                .then(|| Places::pack(&g.ranks))
                .flatten()
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "a game of group {}: {} bots and places {:?} (1 to {} seats, places 1 to 15)",
                        g.group_id,
                        g.bots.len(),
                        g.ranks,
                        Places::MAX_SEATS
                    ))
                })?;
            places.push(packed);
        }
        // Many rows a statement (a statement per game is most of a report's cost
        // in SQLite); 100 rows of 7 values stay far below both databases' limits.
        let mut inserted = 0;
        for (chunk, places) in games.chunks(100).zip(places.chunks(100)) {
            let mut sql = Sql::new(
                "INSERT INTO games (competition_id, group_id, rotation, termination, places, record, recorded_ms) VALUES ",
            );
            sql.rows(chunk.iter().zip(places), |row, (g, &packed)| {
                row.bind(g.competition_id)
                    .bind(g.group_id)
                    .bind(g.rotation)
                    .bind(Text(g.termination))
                    .bind(packed)
                    .bind(g.record.as_str())
                    .bind(now);
            });
            sql.push(" ON CONFLICT (group_id, rotation) DO NOTHING");
            inserted += sql.query()?.execute(&mut **tx).await?.rows_affected();
        }
        for g in games.iter().filter(|g| !g.faults.is_empty()) {
            Self::insert_faults(tx, g).await?;
        }
        if games.iter().any(|g| !g.logs.is_empty()) {
            Logs::insert_seat_logs(tx, games).await?;
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
            let mut sql = Sql::new(
                "INSERT INTO faults (game_id, competition_id, bot_id, seat, kind, count, detail, at_move) VALUES ",
            );
            sql.rows(chunk, |row, f| {
                row.bind(game_id)
                    .bind(g.competition_id)
                    .bind(g.bots[f.seat])
                    .bind(f.seat as i64)
                    .bind(Text(f.kind))
                    .bind(f.count as i64)
                    .bind(f.detail.as_str())
                    .bind(f.at_move as i64);
            });
            sql.query()?.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Stores games in one transaction (a game already stored is skipped) and marks
    /// each group done once all `seats` rotations are in. Returns how many were new.
    ///
    /// # Errors
    /// The database; nothing of the batch is stored then.
    pub async fn record_games(self, games: &[NewGame], seats: i64) -> Result<u64> {
        let mut tx = self.store.write_tx().await?;
        let refs: Vec<&NewGame> = games.iter().collect();
        let inserted = Self::insert_games(&mut tx, &refs, self.store.now_ms()).await?;
        let mut groups: Vec<GroupId> = games.iter().map(|g| g.group_id).collect();
        groups.sort_unstable();
        groups.dedup();
        let mut finished = Vec::new();
        for id in groups {
            let done = sqlx::query(sql_text!(
                "UPDATE match_groups SET status = ",
                GroupStatus::Done,
                "
                 WHERE id = $1 AND status <> ",
                GroupStatus::Done,
                " AND (SELECT COUNT(*) FROM games WHERE group_id = $1) >= $2"
            ))
            .bind(id)
            .bind(seats)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if done > 0 {
                finished.push(id);
            }
        }
        // A group's games may come in several batches: its shape is read back
        // once it is whole.
        self.store
            .shapes()
            .tally_stored_groups(&mut tx, &finished, 1)
            .await?;
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
        self,
        reports: &[LeaseReport<'_>],
        worker_id: Option<WorkerId>,
        suspend_after: i64,
    ) -> Result<(Vec<Result<Completion>>, Vec<BotRow>)> {
        let mut tx = self.store.write_tx().await?;
        let now = self.store.now_ms();
        // Done, by its lease, each group the lease still holds: one statement per
        // lease token (a batch's reports share one), in key order, so that two
        // reports of the same groups lock their rows in the same order.
        // Only by the worker that holds the lease: a lease token another worker
        // learnt (or a revoked worker's) stores nothing.
        let mut taken = std::collections::HashSet::new();
        let mut tokens: Vec<(String, Vec<GroupId>)> = Vec::new();
        for r in reports {
            let hash = token_hash(r.token);
            match tokens.iter_mut().find(|(t, _)| *t == hash) {
                Some((_, ids)) => ids.push(r.group_id),
                None => tokens.push((hash, vec![r.group_id])),
            }
        }
        for (hash, ids) in &mut tokens {
            ids.sort_unstable();
            ids.dedup();
            for chunk in ids.chunks(100) {
                let mut sql = Sql::new(sql_text!(
                    "UPDATE match_groups SET status = ",
                    GroupStatus::Done,
                    ", reported_by = "
                ));
                sql.bind(worker_id)
                    .push(sql_text!(
                        " WHERE status <> ",
                        GroupStatus::Done,
                        " AND lease_token = "
                    ))
                    .bind(hash.as_str())
                    .push(" AND (")
                    .bind(worker_id)
                    .push(" IS NULL OR lease_worker = (SELECT name FROM workers WHERE id = ")
                    .bind(worker_id)
                    .push(")) AND id IN ")
                    .list(chunk.iter().copied())
                    .push(" RETURNING id");
                for row in sql.query()?.fetch_all(&mut *tx).await? {
                    taken.insert(row.try_get::<GroupId, _>(0)?);
                }
            }
        }
        // Why the others were not taken: done already, the lease lost, or no such group.
        let others: Vec<GroupId> = reports
            .iter()
            .map(|r| r.group_id)
            .filter(|id| !taken.contains(id))
            .collect();
        let mut status = std::collections::HashMap::new();
        for row in Self::rows_with_ids(
            &mut tx,
            "SELECT id, status FROM match_groups WHERE id IN ",
            &others,
            "",
        )
        .await?
        {
            status.insert(row.try_get::<GroupId, _>(0)?, row.try_get::<GroupStatus, _>(1)?);
        }
        let mut out = Vec::with_capacity(reports.len());
        let mut games = Vec::new();
        for r in reports {
            // A group reported twice in one call is recorded from its first report.
            if taken.remove(&r.group_id) {
                games.extend(r.games.iter());
                out.push(Ok(Completion::Recorded));
                continue;
            }
            out.push(match status.get(&r.group_id) {
                None if reports[..out.len()].iter().any(|e| e.group_id == r.group_id) => {
                    Ok(Completion::AlreadyDone)
                }
                None => Err(StoreError::NotFound(format!("no group {}", r.group_id))),
                Some(GroupStatus::Done) => Ok(Completion::AlreadyDone),
                Some(_) => Ok(Completion::LeaseLost),
            });
        }
        Self::insert_games(&mut tx, &games, now).await?;
        // Each group taken is reported whole.
        Shapes::tally_new_games(&mut tx, &games).await?;
        let mut runs: Vec<(BotId, StartRun)> = Vec::new();
        let mut last_failure: std::collections::HashMap<BotId, FaultKind> = std::collections::HashMap::new();
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
                if let Some(f) = seat.failure {
                    last_failure.insert(seat.bot, f);
                }
            }
        }
        // A local run's reports (no worker) are witnessed as worker 0.
        let witness = worker_id.unwrap_or_default();
        let suspended = Bots::count_start_failures(&mut tx, &runs, witness, suspend_after, |bot, run| {
            let last = last_failure.get(&bot).copied();
            let what = match last {
                Some(FaultKind::Spawn | FaultKind::Handshake) => "could not start or shake hands",
                Some(FaultKind::Crash | FaultKind::Memory) => "crashed",
                Some(FaultKind::Stall) => "stopped answering",
                _ => "broke the protocol",
            };
            let last = last.map_or(String::new(), |k| k.to_string());
            format!("{what}: faulted in {run} reported games in a row (last fault: {last})")
        })
        .await?;
        tx.commit().await?;
        Ok((out, suspended))
    }
}

/// Who asks for a lease, and what they can play.
#[derive(Debug, Clone, Copy)]
pub struct LeaseAsk<'a> {
    /// The worker's name.
    pub worker: &'a str,
    /// The lease's token (the store keeps its hash).
    pub token: &'a str,
    /// The runtimes of authors' uploaded bots the worker offers: a group with an
    /// uploaded bot of another is not leased to it.
    pub runtimes: &'a [String],
    /// How many of the lease may be challenge groups leased ahead of the
    /// ladder's groups already waiting (the host's share, see
    /// `server::UploadConfig::challenge_share`); the rest go in the order
    /// they were scheduled.
    pub challenges_first: i64,
}

impl<'a> LeaseAsk<'a> {
    /// A worker that plays the host's own bots only, every group in the order
    /// it was scheduled.
    pub fn new(worker: &'a str, token: &'a str) -> LeaseAsk<'a> {
        LeaseAsk {
            worker,
            token,
            runtimes: &[],
            challenges_first: 0,
        }
    }
}

/// The condition that leaves out groups with an authors' uploaded bot of a
/// runtime the worker does not offer; nothing when it offers them all. The
/// names are the ladder's own words (`RUNTIMES`), never the caller's text.
fn runtime_filter(offered: &[String]) -> String {
    let lacking: Vec<String> = crate::submission::RUNTIMES
        .iter()
        .map(|r| r.name)
        .filter(|name| !offered.iter().any(|o| o == name))
        .map(|name| format!("'{name}'"))
        .collect();
    if lacking.is_empty() {
        return String::new();
    }
    format!(
        " AND NOT EXISTS (SELECT 1 FROM group_seats s JOIN bots b ON b.id = s.bot_id
           WHERE s.group_id = g.id AND b.runtime IN ({}))",
        lacking.join(", ")
    )
}
