//! Games read back: results, records, faults, rating history and activity.

use super::*;

/// The columns of a game a result is read from (its bots are its group's seats).
pub(super) const GAME_HEAD: &str = "id, competition_id, group_id, rotation, termination, places";

/// Groups' seats as read, by group key: each group's bots in seat order.
#[derive(Default)]
struct GroupSeats {
    /// Group keys, ascending.
    groups: Vec<i64>,
    /// Where each group's bots start in `bots` (one more entry: the end).
    starts: Vec<usize>,
    bots: Vec<i64>,
}

impl GroupSeats {
    /// From rows of `(group_id, bot_id)` ordered by group, then seat.
    fn read(rows: &[AnyRow]) -> Result<GroupSeats> {
        let mut seats = GroupSeats {
            groups: Vec::new(),
            starts: Vec::new(),
            bots: Vec::with_capacity(rows.len()),
        };
        for row in rows {
            let group: i64 = row.try_get(0)?;
            if seats.groups.last() != Some(&group) {
                seats.groups.push(group);
                seats.starts.push(seats.bots.len());
            }
            seats.bots.push(row.try_get(1)?);
        }
        seats.starts.push(seats.bots.len());
        Ok(seats)
    }

    /// A group's bots in seat order.
    fn of(&self, group: i64) -> Option<&[i64]> {
        let k = self.groups.binary_search(&group).ok()?;
        Some(&self.bots[self.starts[k]..self.starts[k + 1]])
    }
}

impl Games<'_> {
    /// Rows of [`GAME_HEAD`] as results, in the rows' order, each game's bots
    /// its group's seats turned by its rotation. Read by position: the full
    /// read of a competition goes through here at every refit.
    fn assemble(heads: &[AnyRow], seats: &GroupSeats) -> Result<Vec<ResultRow>> {
        let mut out = Vec::with_capacity(heads.len());
        for row in heads {
            let id: i64 = row.try_get(0)?;
            let group_id: i64 = row.try_get(2)?;
            let rotation: i64 = row.try_get(3)?;
            let Text(termination) = row.try_get::<Text<Termination>, _>(4)?;
            let packed: i64 = row.try_get(5)?;
            let ranks = Places::unpack(packed)
                .ok_or_else(|| StoreError::Corrupt(format!("game {id}: places {packed:#x} do not unpack")))?;
            let group = seats.of(group_id).ok_or_else(|| {
                StoreError::Corrupt(format!("game {id}: its group {group_id} has no seats"))
            })?;
            if ranks.len() != group.len() || !(0..group.len() as i64).contains(&rotation) {
                return Err(StoreError::Corrupt(format!(
                    "game {id}: {} places and rotation {rotation} for a group of {} seats",
                    ranks.len(),
                    group.len()
                )));
            }
            out.push(ResultRow {
                game: rating::GameResult {
                    id,
                    group_id,
                    rotation,
                    bots: referee::seating::seated(group, rotation as usize),
                    ranks,
                    forfeit: termination == Termination::Forfeit,
                },
                termination,
            });
        }
        Ok(out)
    }

    /// The results of games read as [`GAME_HEAD`] rows, their groups' seats
    /// asked by group key (`group_seats`' own order).
    pub(super) async fn results_of(
        self,
        conn: &mut sqlx::AnyConnection,
        heads: &[AnyRow],
    ) -> Result<Vec<ResultRow>> {
        let mut groups = heads
            .iter()
            .map(|row| row.try_get::<i64, _>(2))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        groups.sort_unstable();
        groups.dedup();
        let rows = Groups::rows_with_ids(
            conn,
            "SELECT group_id, bot_id FROM group_seats WHERE group_id IN ",
            &groups,
            " ORDER BY group_id, seat",
        )
        .await?;
        Self::assemble(heads, &GroupSeats::read(&rows)?)
    }

    /// The results of the games `select` (of [`GAME_HEAD`] from `games`) finds with `bind`.
    async fn results_where(self, select: &str, bind: &[i64]) -> Result<Vec<ResultRow>> {
        let mut conn = self.store.pool.acquire().await?;
        let mut q = sqlx::query(sqlx::AssertSqlSafe(select.to_owned()));
        for value in bind {
            q = q.bind(*value);
        }
        let heads = q.fetch_all(&mut *conn).await?;
        self.results_of(&mut conn, &heads).await
    }

    /// Rotations of a group already stored.
    ///
    /// # Errors
    /// The database.
    pub async fn stored_rotations(self, competition_id: CompetitionId) -> Result<Vec<(GroupId, i64)>> {
        let rows = sqlx::query("SELECT group_id, rotation FROM games WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_all(&self.store.pool)
            .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// Every result of a competition, in recording order.
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results(self, competition_id: CompetitionId) -> Result<Vec<ResultRow>> {
        // Two reads: the games in their index's order, and the seats of the
        // competition's groups (a group's seats are those of each of its games).
        let mut conn = self.store.pool.acquire().await?;
        let sql = format!("SELECT {GAME_HEAD} FROM games WHERE competition_id = $1 ORDER BY id");
        let heads = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(competition_id)
            .fetch_all(&mut *conn)
            .await?;
        let rows = sqlx::query(
            "SELECT s.group_id, s.bot_id FROM match_groups g JOIN group_seats s ON s.group_id = g.id
             WHERE g.competition_id = $1 ORDER BY s.group_id, s.seat",
        )
        .bind(competition_id)
        .fetch_all(&mut *conn)
        .await?;
        Self::assemble(&heads, &GroupSeats::read(&rows)?)
    }

    /// Game records of a competition after game key `after`, oldest first, at most `limit`.
    ///
    /// # Errors
    /// The database.
    pub async fn records(
        self,
        competition_id: CompetitionId,
        after: GameId,
        limit: i64,
    ) -> Result<Vec<(GameId, String)>> {
        let rows = sqlx::query(
            "SELECT id, record FROM games WHERE competition_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(competition_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.store.pool)
        .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// The newest results of a competition, newest first.
    ///
    /// # Errors
    /// The database.
    pub async fn recent(self, competition_id: CompetitionId, limit: i64) -> Result<Vec<ResultRow>> {
        self.results_where(
            &format!("SELECT {GAME_HEAD} FROM games WHERE competition_id = $1 ORDER BY id DESC LIMIT $2"),
            &[competition_id.0, limit],
        )
        .await
    }

    /// Groups scheduled for a competition, done or not.
    ///
    /// # Errors
    /// The database.
    pub async fn group_count(self, competition_id: CompetitionId) -> Result<i64> {
        self.count(
            "SELECT COUNT(*) FROM match_groups WHERE competition_id = $1",
            competition_id.0,
        )
        .await
    }

    /// Groups of open competitions scheduled and not yet leased.
    ///
    /// # Errors
    /// The database.
    pub async fn groups_ready(self) -> Result<i64> {
        Ok(sqlx::query(sql_text!(
            "SELECT COUNT(*) FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE g.status = ",
            GroupStatus::Scheduled,
            " AND c.status = ",
            CompetitionStatus::Open
        ))
        .fetch_one(&self.store.pool)
        .await?
        .try_get(0)?)
    }

    /// Groups of open competitions leased to a worker and not yet done.
    ///
    /// # Errors
    /// The database.
    pub async fn groups_in_progress(self) -> Result<i64> {
        Ok(sqlx::query(sql_text!(
            "SELECT COUNT(*) FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE c.status = ",
            CompetitionStatus::Open,
            " AND g.status = ",
            GroupStatus::Leased
        ))
        .fetch_one(&self.store.pool)
        .await?
        .try_get(0)?)
    }

    /// Runs a `SELECT COUNT(*) ... WHERE ... = $1`.
    pub(super) async fn count(self, sql: &'static str, id: i64) -> Result<i64> {
        Ok(sqlx::query(sql)
            .bind(id)
            .fetch_one(&self.store.pool)
            .await?
            .try_get(0)?)
    }

    /// One stored record: its competition and JSON.
    ///
    /// # Errors
    /// The database.
    pub async fn record(self, game_id: GameId) -> Result<Option<(CompetitionId, String)>> {
        let row = sqlx::query("SELECT competition_id, record FROM games WHERE id = $1")
            .bind(game_id)
            .fetch_optional(&self.store.pool)
            .await?;
        row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
    }

    /// The key of a competition's newest game (`GameId(0)` with none, below
    /// every key): one probe of the index, where a count walks every game.
    ///
    /// # Errors
    /// The database.
    pub async fn newest_game(self, competition_id: CompetitionId) -> Result<GameId> {
        let newest: Option<GameId> = sqlx::query("SELECT MAX(id) FROM games WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_one(&self.store.pool)
            .await?
            .try_get(0)?;
        Ok(newest.unwrap_or_default())
    }

    /// Results of the games `ids`, in key order.
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results_by_id(self, ids: &[GameId]) -> Result<Vec<ResultRow>> {
        let mut conn = self.store.pool.acquire().await?;
        let heads = Groups::rows_with_ids(
            &mut conn,
            &format!("SELECT {GAME_HEAD} FROM games WHERE id IN "),
            ids,
            "",
        )
        .await?;
        let mut out = self.results_of(&mut conn, &heads).await?;
        out.sort_unstable_by_key(|r| r.id);
        Ok(out)
    }

    /// A page of a competition's results, newest first: at most `limit` with keys
    /// below `before` (keyset pagination: one index range, however deep the page).
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results_before(
        self,
        competition_id: CompetitionId,
        before: GameId,
        limit: i64,
    ) -> Result<Vec<ResultRow>> {
        self.results_where(
            &format!(
                "SELECT {GAME_HEAD} FROM games WHERE competition_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3"
            ),
            &[competition_id.0, before.0, limit],
        )
        .await
    }

    /// A page of a bot's results in a competition, newest first: at most `limit`
    /// with keys below `before`. Walks the competition's games newest first
    /// and keeps those whose group seats the bot (a key lookup each), so a page
    /// costs its games times the share of games the bot plays, however many
    /// games there are.
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn bot_results_before(
        self,
        competition_id: CompetitionId,
        bot_id: BotId,
        before: GameId,
        limit: i64,
    ) -> Result<Vec<ResultRow>> {
        self.results_where(
            &format!(
                "SELECT {GAME_HEAD} FROM games WHERE competition_id = $1 AND id < $2
                 AND EXISTS (SELECT 1 FROM group_seats s WHERE s.group_id = games.group_id AND s.bot_id = $3)
                 ORDER BY id DESC LIMIT $4"
            ),
            &[competition_id.0, before.0, bot_id.0, limit],
        )
        .await
    }

    /// A bot's faults in a competition, by kind.
    ///
    /// # Errors
    /// The database.
    pub async fn fault_tally(self, competition_id: CompetitionId, bot_id: BotId) -> Result<Vec<FaultTally>> {
        let rows = sqlx::query(
            "SELECT kind, CAST(SUM(count) AS BIGINT) AS faults, COUNT(*) AS games FROM faults WHERE bot_id = $1 AND competition_id = $2
             GROUP BY kind ORDER BY kind",
        )
        .bind(bot_id)
        .bind(competition_id)
        .fetch_all(&self.store.pool)
        .await?;
        Ok(rows
            .iter()
            .map(FaultTally::from_row)
            .collect::<std::result::Result<_, _>>()?)
    }

    /// A bot's newest faults in a competition, newest first.
    ///
    /// # Errors
    /// The database.
    pub async fn recent_faults(
        self,
        competition_id: CompetitionId,
        bot_id: BotId,
        limit: i64,
    ) -> Result<Vec<FaultRow>> {
        let rows = sqlx::query(
            "SELECT game_id, kind, count, detail, at_move FROM faults WHERE bot_id = $1 AND competition_id = $2
             ORDER BY id DESC LIMIT $3",
        )
        .bind(bot_id)
        .bind(competition_id)
        .bind(limit)
        .fetch_all(&self.store.pool)
        .await?;
        Ok(rows
            .iter()
            .map(FaultRow::from_row)
            .collect::<std::result::Result<_, _>>()?)
    }

    /// Keeps a fit's ratings as one point of each bot's history (a point another
    /// server on the same store kept already is left as it is).
    ///
    /// # Errors
    /// The database.
    pub async fn add_rating_points(
        self,
        competition_id: CompetitionId,
        points: &[RatingPoint],
    ) -> Result<()> {
        let mut tx = self.store.write_tx().await?;
        for chunk in points.chunks(100) {
            let mut sql = Sql::new(
                "INSERT INTO rating_points (competition_id, bot_id, games, at_ms, elo, ci95) VALUES ",
            );
            sql.rows(chunk, |row, p| {
                row.bind(competition_id)
                    .bind(p.bot_id)
                    .bind(p.games)
                    .bind(p.at_ms)
                    .bind(p.elo)
                    .bind(p.ci95);
            });
            sql.push(" ON CONFLICT (competition_id, bot_id, games) DO NOTHING");
            sql.query()?.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The newest kept point of a competition: `(games, at_ms)`, if any.
    ///
    /// # Errors
    /// The database.
    pub async fn last_rating_point(self, competition_id: CompetitionId) -> Result<Option<(i64, i64)>> {
        let row = sqlx::query("SELECT MAX(games), MAX(at_ms) FROM rating_points WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_one(&self.store.pool)
            .await?;
        let games: Option<i64> = row.try_get(0)?;
        let at: Option<i64> = row.try_get(1)?;
        Ok(games.zip(at))
    }

    /// A bot's rating history in a competition, oldest first.
    ///
    /// # Errors
    /// The database.
    pub async fn rating_history(
        self,
        competition_id: CompetitionId,
        bot_id: BotId,
    ) -> Result<Vec<RatingPoint>> {
        let rows = sqlx::query(
            "SELECT bot_id, games, at_ms, elo, ci95 FROM rating_points WHERE competition_id = $1 AND bot_id = $2
             ORDER BY games",
        )
        .bind(competition_id)
        .bind(bot_id)
        .fetch_all(&self.store.pool)
        .await?;
        Ok(rows
            .iter()
            .map(RatingPoint::from_row)
            .collect::<std::result::Result<_, _>>()?)
    }

    /// How busy a competition is now.
    ///
    /// # Errors
    /// The database.
    pub async fn activity(self, competition_id: CompetitionId) -> Result<Activity> {
        let now = self.store.now_ms();
        // Counted up to one past the cap: past it the page says "or more", and a
        // busy hour costs no more than this many index entries.
        let games_last_hour: i64 = sqlx::query(
            "SELECT COUNT(*) FROM (SELECT 1 FROM games WHERE competition_id = $1 AND recorded_ms >= $2 LIMIT $3) t",
        )
        .bind(competition_id)
        .bind(now - 3_600_000)
        .bind(Activity::LAST_HOUR_CAP + 1)
        .fetch_one(&self.store.pool)
        .await?
        .try_get(0)?;
        // Through the index of a competition's unfinished groups: few rows. The
        // `<> 'done'` term is implied by the status asked for, and said so that
        // SQLite sees the partial index applies (else it walks every group of the
        // competition by its plain index).
        let row = sqlx::query(sql_text!(
            "SELECT COUNT(DISTINCT lease_worker), COUNT(*) FROM match_groups
             WHERE status = ",
            GroupStatus::Leased,
            " AND status <> ",
            GroupStatus::Done,
            " AND lease_expires_ms > $2 AND competition_id = $1"
        ))
        .bind(competition_id)
        .bind(now)
        .fetch_one(&self.store.pool)
        .await?;
        let (workers_active, groups_playing): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        let groups_waiting: i64 = sqlx::query(sql_text!(
            "SELECT COUNT(*) FROM match_groups WHERE status = ",
            GroupStatus::Scheduled,
            " AND status <> ",
            GroupStatus::Done,
            " AND competition_id = $1"
        ))
        .bind(competition_id)
        .fetch_one(&self.store.pool)
        .await?
        .try_get(0)?;
        Ok(Activity {
            games_last_hour,
            workers_active,
            groups_waiting,
            groups_playing,
        })
    }

    /// Closes the pool (waits for connections to finish).
    pub async fn close(self) {
        self.store.pool.close().await;
    }
}
