//! Games read back: results, records, faults, rating history and activity.

use super::*;

/// The columns of a game a result is read from (its seats are read apart).
const GAME_HEAD: &str = "id, competition_id, group_id, rotation, termination";

/// A game's seats as read: `(game, bot, place)`, by game and seat.
type SeatRows = Vec<(i64, i64, u32)>;

impl Store {
    /// Rows of [`GAME_HEAD`] with their seats (sorted by game, then seat) as
    /// results, in the rows' order. Read by position: the full read of a
    /// competition goes through here at every refit.
    fn assemble(heads: &[AnyRow], seats: &SeatRows) -> Result<Vec<ResultRow>> {
        let mut out = Vec::with_capacity(heads.len());
        for row in heads {
            let id: i64 = row.try_get(0)?;
            let Text(termination) = row.try_get::<Text<Termination>, _>(4)?;
            let first = seats.partition_point(|s| s.0 < id);
            let mine = seats[first..].iter().take_while(|s| s.0 == id);
            let (bots, ranks): (Vec<i64>, Vec<u32>) = mine.map(|s| (s.1, s.2)).unzip();
            if bots.is_empty() {
                return Err(StoreError::Corrupt(format!("game {id} has no seats")));
            }
            out.push(ResultRow {
                game: rating::GameResult {
                    id,
                    group_id: row.try_get(2)?,
                    rotation: row.try_get(3)?,
                    bots,
                    ranks,
                    forfeit: termination == Termination::Forfeit,
                },
                termination,
            });
        }
        Ok(out)
    }

    /// Seat rows of `(game, bot, place)`, as `game_seats` returns them.
    fn seat_rows(rows: &[AnyRow], into: &mut SeatRows) -> Result<()> {
        into.reserve(rows.len());
        for row in rows {
            let place: i64 = row.try_get(2)?;
            let place =
                u32::try_from(place).map_err(|_| StoreError::Corrupt(format!("a seat's place {place}")))?;
            into.push((row.try_get(0)?, row.try_get(1)?, place));
        }
        Ok(())
    }

    /// The results of games read as [`GAME_HEAD`] rows, their seats asked by
    /// competition and key (`game_seats`' own order: an index range each).
    async fn results_of(&self, conn: &mut sqlx::AnyConnection, heads: &[AnyRow]) -> Result<Vec<ResultRow>> {
        let mut by_competition: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
        for row in heads {
            by_competition
                .entry(row.try_get(1)?)
                .or_default()
                .push(row.try_get(0)?);
        }
        let mut seats = SeatRows::new();
        for (competition, ids) in by_competition {
            for chunk in ids.chunks(100) {
                let mut sql =
                    Sql::new("SELECT game_id, bot_id, place FROM game_seats WHERE competition_id = ");
                sql.bind(competition)
                    .push(" AND game_id IN ")
                    .list(chunk.iter().copied())
                    .push(" ORDER BY game_id, seat");
                Self::seat_rows(&sql.query()?.fetch_all(&mut *conn).await?, &mut seats)?;
            }
        }
        // Stable: a game's seats stay in seat order.
        seats.sort_by_key(|s| s.0);
        Self::assemble(heads, &seats)
    }

    /// The results of the games `select` (of [`GAME_HEAD`] from `games`) finds with `bind`.
    async fn results_where(&self, select: &str, bind: &[i64]) -> Result<Vec<ResultRow>> {
        let mut conn = self.pool.acquire().await?;
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
    pub async fn stored_rotations(&self, competition_id: CompetitionId) -> Result<Vec<(GroupId, i64)>> {
        let rows = sqlx::query("SELECT group_id, rotation FROM games WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// Every result of a competition, in recording order.
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results(&self, competition_id: CompetitionId) -> Result<Vec<ResultRow>> {
        // Two range reads, each in its index's order, merged here: a join would
        // seek the seats once per game.
        let mut conn = self.pool.acquire().await?;
        let sql = format!("SELECT {GAME_HEAD} FROM games WHERE competition_id = $1 ORDER BY id");
        let heads = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(competition_id)
            .fetch_all(&mut *conn)
            .await?;
        let rows = sqlx::query(
            "SELECT game_id, bot_id, place FROM game_seats WHERE competition_id = $1 ORDER BY game_id, seat",
        )
        .bind(competition_id)
        .fetch_all(&mut *conn)
        .await?;
        let mut seats = SeatRows::with_capacity(rows.len());
        Self::seat_rows(&rows, &mut seats)?;
        Self::assemble(&heads, &seats)
    }

    /// Game records of a competition after game key `after`, oldest first, at most `limit`.
    ///
    /// # Errors
    /// The database.
    pub async fn records(
        &self,
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
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// The newest results of a competition, newest first.
    ///
    /// # Errors
    /// The database.
    pub async fn recent(&self, competition_id: CompetitionId, limit: i64) -> Result<Vec<ResultRow>> {
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
    pub async fn group_count(&self, competition_id: CompetitionId) -> Result<i64> {
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
    pub async fn groups_ready(&self) -> Result<i64> {
        Ok(sqlx::query(
            "SELECT COUNT(*) FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE g.status = 'scheduled' AND c.status = 'open'",
        )
        .fetch_one(&self.pool)
        .await?
        .try_get(0)?)
    }

    /// Groups of open competitions leased to a worker and not yet done.
    ///
    /// # Errors
    /// The database.
    pub async fn groups_in_progress(&self) -> Result<i64> {
        Ok(sqlx::query(
            "SELECT COUNT(*) FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE c.status = 'open' AND g.status = 'leased'",
        )
        .fetch_one(&self.pool)
        .await?
        .try_get(0)?)
    }

    /// Runs a `SELECT COUNT(*) ... WHERE ... = $1`.
    pub(super) async fn count(&self, sql: &'static str, id: i64) -> Result<i64> {
        Ok(sqlx::query(sql)
            .bind(id)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?)
    }

    /// One stored record: its competition and JSON.
    ///
    /// # Errors
    /// The database.
    pub async fn record(&self, game_id: GameId) -> Result<Option<(CompetitionId, String)>> {
        let row = sqlx::query("SELECT competition_id, record FROM games WHERE id = $1")
            .bind(game_id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
    }

    /// The key of a competition's newest game (`GameId(0)` with none, below
    /// every key): one probe of the index, where a count walks every game.
    ///
    /// # Errors
    /// The database.
    pub async fn newest_game(&self, competition_id: CompetitionId) -> Result<GameId> {
        let newest: Option<GameId> = sqlx::query("SELECT MAX(id) FROM games WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        Ok(newest.unwrap_or_default())
    }

    /// Games stored for a competition.
    ///
    /// # Errors
    /// The database.
    pub async fn game_count(&self, competition_id: CompetitionId) -> Result<i64> {
        self.count(
            "SELECT COUNT(*) FROM games WHERE competition_id = $1",
            competition_id.0,
        )
        .await
    }

    /// Results of the games `ids`, in key order.
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results_by_id(&self, ids: &[GameId]) -> Result<Vec<ResultRow>> {
        let mut conn = self.pool.acquire().await?;
        let heads = Self::rows_with_ids(
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
        &self,
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

    /// A bot's faults in a competition, by kind.
    ///
    /// # Errors
    /// The database.
    pub async fn fault_tally(&self, competition_id: CompetitionId, bot_id: BotId) -> Result<Vec<FaultTally>> {
        let rows = sqlx::query(
            "SELECT kind, CAST(SUM(count) AS BIGINT) AS faults, COUNT(*) AS games FROM faults WHERE bot_id = $1 AND competition_id = $2
             GROUP BY kind ORDER BY kind",
        )
        .bind(bot_id)
        .bind(competition_id)
        .fetch_all(&self.pool)
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
        &self,
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
        .fetch_all(&self.pool)
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
        &self,
        competition_id: CompetitionId,
        points: &[RatingPoint],
    ) -> Result<()> {
        let mut tx = self.write_tx().await?;
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
    pub async fn last_rating_point(&self, competition_id: CompetitionId) -> Result<Option<(i64, i64)>> {
        let row = sqlx::query("SELECT MAX(games), MAX(at_ms) FROM rating_points WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_one(&self.pool)
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
        &self,
        competition_id: CompetitionId,
        bot_id: BotId,
    ) -> Result<Vec<RatingPoint>> {
        let rows = sqlx::query(
            "SELECT bot_id, games, at_ms, elo, ci95 FROM rating_points WHERE competition_id = $1 AND bot_id = $2
             ORDER BY games",
        )
        .bind(competition_id)
        .bind(bot_id)
        .fetch_all(&self.pool)
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
    pub async fn activity(&self, competition_id: CompetitionId) -> Result<Activity> {
        let now = now_ms();
        let games_last_hour: i64 =
            sqlx::query("SELECT COUNT(*) FROM games WHERE competition_id = $1 AND recorded_ms >= $2")
                .bind(competition_id)
                .bind(now - 3_600_000)
                .fetch_one(&self.pool)
                .await?
                .try_get(0)?;
        // Through the partial indexes of leased and of scheduled groups: few rows.
        let row = sqlx::query(
            "SELECT COUNT(DISTINCT lease_worker), COUNT(*) FROM match_groups
             WHERE status = 'leased' AND lease_expires_ms > $2 AND competition_id = $1",
        )
        .bind(competition_id)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        let (workers_active, groups_playing): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        let groups_waiting: i64 = sqlx::query(
            "SELECT COUNT(*) FROM match_groups WHERE status = 'scheduled' AND competition_id = $1",
        )
        .bind(competition_id)
        .fetch_one(&self.pool)
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
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
