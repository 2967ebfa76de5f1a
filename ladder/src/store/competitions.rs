//! Competitions and their entrants.

use super::*;

impl Competitions<'_> {
    const COMPETITION_COLUMNS: &'static str =
        "id, name, game, options, seats, format, seed, max_games, time, status, config, seeding";

    /// Creates an open competition.
    ///
    /// # Errors
    /// The name is taken.
    pub async fn create_competition(self, c: &NewCompetition) -> Result<CompetitionRow> {
        self.insert_competition(c, false).await
    }

    /// Opens a competition with every registered bot of its game as an entrant, in
    /// one transaction: the scheduler never sees it without its entrants (it once
    /// did, on PostgreSQL, and gave every group to the first pair it saw).
    ///
    /// # Errors
    /// A competition of that name exists; the database.
    pub async fn open_competition(self, c: &NewCompetition) -> Result<CompetitionRow> {
        self.insert_competition(c, true).await
    }

    async fn insert_competition(self, c: &NewCompetition, enter_bots: bool) -> Result<CompetitionRow> {
        let mut tx = self.store.write_tx().await?;
        let id = self.insert_competition_row(&mut tx, c).await?;
        if enter_bots {
            Self::enter_registered(&mut tx, id).await?;
        }
        tx.commit().await?;
        self.competition(&c.name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("competition {:?} vanished", c.name)))
    }

    /// Enters every bot of competition `id`'s game in it; uploaded versions enter
    /// once they pass their build and check.
    pub(super) async fn enter_registered(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        id: CompetitionId,
    ) -> Result<()> {
        sqlx::query(sql_text!(
            "INSERT INTO entrants (competition_id, bot_id)
             SELECT c.id, b.id FROM competitions c JOIN bots b ON b.game = c.game WHERE c.id = $1
             AND b.status NOT IN (",
            BotStatus::Building,
            ", ",
            BotStatus::BuildFailed,
            ", ",
            BotStatus::Rejected,
            ")"
        ))
        .bind(id)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// Inserts competition `c`, open, in `tx` (its format as `c` says); its key.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] for a taken name; the database.
    pub(super) async fn insert_competition_row(
        self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        c: &NewCompetition,
    ) -> Result<CompetitionId> {
        let inserted = sqlx::query(
            sql_text!("INSERT INTO competitions (name, game, options, seats, format, seed, max_games, time, status, config, created_ms, seeding)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ", CompetitionStatus::Open, ", $9, $10, $11) ON CONFLICT (name) DO NOTHING RETURNING id"),
        )
        .bind(&c.name)
        .bind(&c.game)
        .bind(serde_json::to_string(&c.options).unwrap_or_default())
        .bind(c.seats)
        .bind(c.format)
        .bind(c.seed)
        .bind(c.max_games)
        .bind(Text(c.time))
        .bind(&c.config)
        .bind(self.store.now_ms())
        .bind(c.seeding.as_str())
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = inserted else {
            return Err(StoreError::Conflict(format!(
                "competition {:?} already exists",
                c.name
            )));
        };
        Ok(row.try_get(0)?)
    }

    /// A competition by name.
    ///
    /// # Errors
    /// The database.
    pub async fn competition(self, name: &str) -> Result<Option<CompetitionRow>> {
        let sql = format!(
            "SELECT {} FROM competitions WHERE name = $1",
            Self::COMPETITION_COLUMNS
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(&self.store.pool)
            .await?;
        Ok(row.as_ref().map(CompetitionRow::from_row).transpose()?)
    }

    /// A competition by key.
    ///
    /// # Errors
    /// The database.
    pub async fn competition_by_id(self, id: CompetitionId) -> Result<Option<CompetitionRow>> {
        let sql = format!(
            "SELECT {} FROM competitions WHERE id = $1",
            Self::COMPETITION_COLUMNS
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.store.pool)
            .await?;
        Ok(row.as_ref().map(CompetitionRow::from_row).transpose()?)
    }

    /// Every competition, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn all(self) -> Result<Vec<CompetitionRow>> {
        let sql = format!(
            "SELECT {} FROM competitions ORDER BY id",
            Self::COMPETITION_COLUMNS
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(&self.store.pool)
            .await?;
        Ok(rows
            .iter()
            .map(CompetitionRow::from_row)
            .collect::<std::result::Result<_, _>>()?)
    }

    /// Opens or closes a competition.
    ///
    /// # Errors
    /// No such competition.
    pub async fn set_status(self, name: &str, open: bool) -> Result<()> {
        let r = sqlx::query("UPDATE competitions SET status = $1 WHERE name = $2")
            .bind(
                if open {
                    CompetitionStatus::Open
                } else {
                    CompetitionStatus::Closed
                }
                .as_str(),
            )
            .bind(name)
            .execute(&self.store.pool)
            .await?;
        if r.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("no competition named {name:?}")));
        }
        Ok(())
    }

    /// Enters a bot in a competition (again is fine).
    ///
    /// # Errors
    /// The database.
    pub async fn add_entrant(self, competition_id: CompetitionId, bot_id: BotId) -> Result<()> {
        sqlx::query("INSERT INTO entrants (competition_id, bot_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(competition_id)
            .bind(bot_id)
            .execute(&self.store.pool)
            .await?;
        Ok(())
    }

    /// A competition's bots, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn entrants(self, competition_id: CompetitionId) -> Result<Vec<BotRow>> {
        let columns: Vec<String> = Bots::BOT_COLUMNS.split(", ").map(|c| format!("b.{c}")).collect();
        let sql = format!(
            "SELECT {} FROM bots b JOIN entrants e ON e.bot_id = b.id WHERE e.competition_id = $1 ORDER BY b.id",
            columns.join(", ")
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(competition_id)
            .fetch_all(&self.store.pool)
            .await?;
        Ok(rows
            .iter()
            .map(BotRow::from_row)
            .collect::<std::result::Result<_, _>>()?)
    }
}
