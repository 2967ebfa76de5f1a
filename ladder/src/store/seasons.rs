//! Seasons: a ladder's deadline and finals ([`crate::season`]). Each change of
//! phase is one transaction that first moves the phase on from the one it
//! expects, so two servers moving the same season on cannot both do it.

use super::*;
use crate::season::FinalsPlan;
use crate::season::seal::MasterSeed;
use std::collections::HashMap;

/// A season as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SeasonRow {
    /// Its ladder competition.
    pub competition_id: CompetitionId,
    pub deadline_ms: i64,
    pub plan: FinalsPlan,
    pub phase: Phase,
    /// The finals' competition, once they started.
    pub finals_id: Option<CompetitionId>,
    /// Secret until the phase is closed: its `Debug` does not show it, so a
    /// row logged whole leaks nothing.
    pub master_seed: Option<MasterSeed>,
    pub commitment: Option<String>,
    pub entries_digest: Option<String>,
    /// The final standings as published (JSON of [`crate::season::FinalStandings`]).
    pub final_standings: Option<String>,
}

/// A version that could be an entry at the freeze.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub bot: BotId,
    /// None: a bot the host registered.
    pub author: Option<AuthorId>,
}

/// A finals group to store: its number, its bots in seat order, its seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeededGroup {
    pub group_no: i64,
    pub bots: Vec<BotId>,
    pub seed: u64,
}

/// A finals game as read back for the public record and the standings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalsGameRow {
    pub group_no: i64,
    pub deal: i64,
    /// The group's seed at its last deal (the one its games played).
    pub group_seed: i64,
    pub rotation: i64,
    pub record: String,
}

const SEASON_COLUMNS: &str = "competition_id, deadline_ms, finals_top, finals_groups, finals_until_separated, \
     finals_max_games, phase, finals_id, master_seed, commitment, entries_digest, final_standings";

fn season_row(r: &AnyRow) -> Result<SeasonRow> {
    let count = |i: usize| -> Result<u32> {
        let v: i64 = r.try_get(i)?;
        u32::try_from(v).map_err(|_| StoreError::Corrupt(format!("a season's finals plan holds {v}")))
    };
    Ok(SeasonRow {
        competition_id: r.try_get(0)?,
        deadline_ms: r.try_get(1)?,
        plan: FinalsPlan {
            top: count(2)?,
            groups: count(3)?,
            until_separated: r.try_get::<i64, _>(4)? != 0,
            max_games: r.try_get::<i64, _>(5)?.max(0) as u64,
        },
        phase: r.try_get(6)?,
        finals_id: r.try_get(7)?,
        master_seed: r
            .try_get::<Option<String>, _>(8)?
            .map(|hex| MasterSeed::from_hex(&hex))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("a season's master seed: {e}")))?,
        commitment: r.try_get(9)?,
        entries_digest: r.try_get(10)?,
        final_standings: r.try_get(11)?,
    })
}

impl Seasons<'_> {
    /// Opens a competition that is a season: its ladder (every registered bot of
    /// its game entered, as [`Competitions::open_competition`] does) and its deadline
    /// and finals plan, in one transaction.
    ///
    /// # Errors
    /// The name is taken; the database.
    pub async fn open_season(
        self,
        c: &NewCompetition,
        deadline_ms: i64,
        plan: FinalsPlan,
    ) -> Result<CompetitionRow> {
        let mut tx = self.store.write_tx().await?;
        let id = self
            .store
            .competitions()
            .insert_competition_row(&mut tx, c)
            .await?;
        Competitions::enter_registered(&mut tx, id).await?;
        sqlx::query(
            "INSERT INTO seasons (competition_id, deadline_ms, finals_top, finals_groups, finals_until_separated,
                                  finals_max_games, phase)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(deadline_ms)
        .bind(i64::from(plan.top))
        .bind(i64::from(plan.groups))
        .bind(i64::from(plan.until_separated))
        .bind(plan.max_games as i64)
        .bind(Phase::Open)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.store
            .competitions()
            .competition(&c.name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("competition {:?} vanished", c.name)))
    }

    /// The season of competition `id` (its ladder), if it is one.
    ///
    /// # Errors
    /// The database.
    pub async fn season(self, id: CompetitionId) -> Result<Option<SeasonRow>> {
        let sql = format!("SELECT {SEASON_COLUMNS} FROM seasons WHERE competition_id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.store.pool)
            .await?;
        row.as_ref().map(season_row).transpose()
    }

    /// The season whose finals are competition `id`, if any.
    ///
    /// # Errors
    /// The database.
    pub async fn season_of_finals(self, id: CompetitionId) -> Result<Option<SeasonRow>> {
        let sql = format!("SELECT {SEASON_COLUMNS} FROM seasons WHERE finals_id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&self.store.pool)
            .await?;
        row.as_ref().map(season_row).transpose()
    }

    /// Seasons not yet closed.
    ///
    /// # Errors
    /// The database.
    pub async fn seasons_in_play(self) -> Result<Vec<SeasonRow>> {
        let sql = format!("SELECT {SEASON_COLUMNS} FROM seasons WHERE phase <> $1 ORDER BY competition_id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(Phase::Closed)
            .fetch_all(&self.store.pool)
            .await?;
        rows.iter().map(season_row).collect()
    }

    /// The ladders of seasons whose deadline has passed, by the store's clock.
    ///
    /// # Errors
    /// The database.
    pub async fn seasons_past_deadline(self) -> Result<std::collections::HashSet<CompetitionId>> {
        let rows = sqlx::query("SELECT competition_id FROM seasons WHERE deadline_ms <= $1")
            .bind(self.store.now_ms())
            .fetch_all(&self.store.pool)
            .await?;
        rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
    }

    /// Makes `bot` (an author's version) its author's entry in the season of
    /// competition `id`, before the deadline.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] past the deadline, or for a version not the
    /// author's, of another game, or out of play for good; the database.
    pub async fn choose_entry(self, id: CompetitionId, author: AuthorId, bot: &BotRow) -> Result<()> {
        let Some(season) = self.season(id).await? else {
            return Err(StoreError::NotFound("that competition is not a season".into()));
        };
        if season.phase != Phase::Open || self.store.now_ms() >= season.deadline_ms {
            return Err(StoreError::Conflict(format!(
                "the deadline ({}) has passed: entries are fixed",
                crate::season::utc(season.deadline_ms)
            )));
        }
        let game: String = sqlx::query("SELECT game FROM competitions WHERE id = $1")
            .bind(id)
            .fetch_one(&self.store.pool)
            .await?
            .try_get(0)?;
        if bot.author_id != Some(author) {
            return Err(StoreError::Conflict(format!("{} is not your bot", bot.name)));
        }
        if bot.game != game {
            return Err(StoreError::Conflict(format!(
                "{} plays {}, not {game}",
                bot.name, bot.game
            )));
        }
        if matches!(bot.status, BotStatus::BuildFailed | BotStatus::Rejected) {
            return Err(StoreError::Conflict(format!(
                "{} is {}: choose a version that passed its build and check",
                bot.name, bot.status
            )));
        }
        // One statement: stored only while the season is still open before its
        // deadline (a choice checked a moment before the freeze cannot land after
        // it), and two choices of one author at once end as the later one, never
        // as a clash on the key (before: a server error on PostgreSQL).
        let mut tx = self.store.write_tx().await?;
        let stored = sqlx::query(
            "INSERT INTO season_choices (competition_id, author_id, bot_id)
             SELECT $1, $2, $3 WHERE EXISTS
             (SELECT 1 FROM seasons WHERE competition_id = $1 AND phase = $4 AND deadline_ms > $5)
             ON CONFLICT (competition_id, author_id) DO UPDATE SET bot_id = excluded.bot_id",
        )
        .bind(id)
        .bind(author)
        .bind(bot.id)
        .bind(Phase::Open)
        .bind(self.store.now_ms())
        .execute(&mut *tx)
        .await?;
        if stored.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "the deadline ({}) has passed: entries are fixed",
                crate::season::utc(season.deadline_ms)
            )));
        }
        tx.commit().await?;
        Ok(())
    }

    /// Each author's chosen version in the season of competition `id`.
    ///
    /// # Errors
    /// The database.
    pub async fn entry_choices(self, id: CompetitionId) -> Result<HashMap<AuthorId, BotId>> {
        let rows = sqlx::query("SELECT author_id, bot_id FROM season_choices WHERE competition_id = $1")
            .bind(id)
            .fetch_all(&self.store.pool)
            .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// Versions that could be entries at the freeze of the season of `c`: the
    /// versions of its game uploaded by the deadline that passed their check and
    /// are in play or were superseded since (a newer upload does not take a
    /// chosen entry away), and its active host bots; and how many of its game's
    /// versions uploaded by the deadline are still being built or checked (the
    /// freeze waits for them).
    ///
    /// # Errors
    /// The database.
    pub async fn entry_candidates(
        self,
        c: &CompetitionRow,
        deadline_ms: i64,
    ) -> Result<(Vec<Candidate>, i64)> {
        // Counted first, then the candidates: a version that passes its check
        // between the two reads is a candidate, never missed by both.
        let building: i64 = sqlx::query(
            "SELECT COUNT(*) FROM bots WHERE game = $1 AND status = $2 AND created_ms <= $3 AND author_id IS NOT NULL",
        )
        .bind(&c.game)
        .bind(BotStatus::Building)
        .bind(deadline_ms)
        .fetch_one(&self.store.pool)
        .await?
        .try_get(0)?;
        // An author's version counts whatever its status since the deadline
        // (disabling one after it must not pick another entry), unless it never
        // passed its check or was removed; a host's bot, if in play.
        let rows = sqlx::query(
            "SELECT b.id, b.author_id FROM bots b WHERE b.game = $1 AND b.created_ms <= $3
             AND ((b.author_id IS NOT NULL AND b.status NOT IN ($5, $6, $7, $8))
                  OR (b.status = $2 AND b.id IN (SELECT bot_id FROM entrants WHERE competition_id = $4)))
             ORDER BY b.id",
        )
        .bind(&c.game)
        .bind(BotStatus::Active)
        .bind(deadline_ms)
        .bind(c.id)
        .bind(BotStatus::Building)
        .bind(BotStatus::BuildFailed)
        .bind(BotStatus::Rejected)
        .bind(BotStatus::Removed)
        .fetch_all(&self.store.pool)
        .await?;
        let candidates = rows
            .iter()
            .map(|r| {
                Ok(Candidate {
                    bot: r.try_get(0)?,
                    author: r.try_get(1)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok((candidates, building))
    }

    /// Fixes the entries of the season of competition `id` and stops its
    /// ladder. False if another server froze it first.
    ///
    /// # Errors
    /// The database.
    pub async fn freeze_season(self, id: CompetitionId, entries: &[BotId]) -> Result<bool> {
        let mut tx = self.store.write_tx().await?;
        let moved = sqlx::query(
            "UPDATE seasons SET phase = $1, frozen_ms = $2 WHERE competition_id = $3 AND phase = $4",
        )
        .bind(Phase::Frozen)
        .bind(self.store.now_ms())
        .bind(id)
        .bind(Phase::Open)
        .execute(&mut *tx)
        .await?;
        if moved.rows_affected() == 0 {
            return Ok(false);
        }
        for &bot in entries {
            sqlx::query("INSERT INTO season_entries (competition_id, bot_id, finalist) VALUES ($1, $2, 0)")
                .bind(id)
                .bind(bot)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("UPDATE competitions SET status = $1 WHERE id = $2")
            .bind(CompetitionStatus::Closed)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The entries fixed at the freeze: each bot and, for a finalist, its seed
    /// (1 = the ladder's best entry at the freeze); finalists first, in seed order.
    ///
    /// # Errors
    /// The database.
    pub async fn season_entries(self, id: CompetitionId) -> Result<Vec<(BotId, Option<u32>)>> {
        let rows = sqlx::query(
            "SELECT bot_id, finalist FROM season_entries WHERE competition_id = $1
             ORDER BY CASE WHEN finalist > 0 THEN finalist ELSE 1000000 END, bot_id",
        )
        .bind(id)
        .fetch_all(&self.store.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let seed: i64 = r.try_get(1)?;
                Ok((r.try_get(0)?, (seed > 0).then_some(seed as u32)))
            })
            .collect()
    }

    /// Starts the finals of the season of competition `id`: the finals'
    /// competition with the finalists alone, the commitment, and the first
    /// round's groups with their seeds. False if another server started them.
    ///
    /// # Errors
    /// The database.
    pub async fn start_finals(
        self,
        id: CompetitionId,
        finals: &NewCompetition,
        finalists: &[BotId],
        seal: &crate::season::seal::Seal,
        groups: &[SeededGroup],
    ) -> Result<bool> {
        let mut tx = self.store.write_tx().await?;
        // The phase moves first: a second server starting the same finals finds
        // it moved (PostgreSQL: waits on the row, then finds it) and does nothing.
        let moved = sqlx::query(
            "UPDATE seasons SET phase = $1, master_seed = $2, entries_digest = $3, commitment = $4
             WHERE competition_id = $5 AND phase = $6",
        )
        .bind(Phase::Finals)
        .bind(seal.master.to_hex())
        .bind(hex::encode(seal.digest))
        .bind(&seal.commitment)
        .bind(id)
        .bind(Phase::Frozen)
        .execute(&mut *tx)
        .await?;
        if moved.rows_affected() == 0 {
            return Ok(false);
        }
        let finals_id = self
            .store
            .competitions()
            .insert_competition_row(&mut tx, finals)
            .await?;
        sqlx::query("UPDATE seasons SET finals_id = $1 WHERE competition_id = $2")
            .bind(finals_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        for (seed, &bot) in finalists.iter().enumerate() {
            sqlx::query("INSERT INTO entrants (competition_id, bot_id) VALUES ($1, $2)")
                .bind(finals_id)
                .bind(bot)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE season_entries SET finalist = $1 WHERE competition_id = $2 AND bot_id = $3")
                .bind(seed as i64 + 1)
                .bind(id)
                .bind(bot)
                .execute(&mut *tx)
                .await?;
        }
        Self::insert_seeded_groups(&mut tx, finals_id, groups, self.store.now_ms()).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Adds a round of finals groups, only while the season is in its finals with
    /// exactly `had` groups, all played: a server that looked before another
    /// added the round adds nothing (false).
    ///
    /// # Errors
    /// The database.
    pub async fn add_finals_round(
        self,
        finals_id: CompetitionId,
        had: u64,
        groups: &[SeededGroup],
    ) -> Result<bool> {
        let mut tx = self.store.write_tx().await?;
        let row = sqlx::query(
            "SELECT (SELECT COUNT(*) FROM match_groups WHERE competition_id = $1),
                    (SELECT COUNT(*) FROM match_groups WHERE competition_id = $1 AND status <> $2),
                    (SELECT COUNT(*) FROM seasons WHERE finals_id = $1 AND phase = $3)",
        )
        .bind(finals_id)
        .bind(GroupStatus::Done)
        .bind(Phase::Finals)
        .fetch_one(&mut *tx)
        .await?;
        let (all, unplayed, in_finals): (i64, i64, i64) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        if all as u64 != had || unplayed > 0 || in_finals == 0 {
            return Ok(false);
        }
        Self::insert_seeded_groups(&mut tx, finals_id, groups, self.store.now_ms()).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn insert_seeded_groups(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        competition: CompetitionId,
        groups: &[SeededGroup],
        now: i64,
    ) -> Result<()> {
        for g in groups {
            let row = sqlx::query(
                "INSERT INTO match_groups (competition_id, group_no, seed, status, created_ms, deal)
                 VALUES ($1, $2, $3, $4, $5, 0) ON CONFLICT (competition_id, group_no) DO NOTHING RETURNING id",
            )
            .bind(competition)
            .bind(g.group_no)
            .bind(g.seed as i64)
            .bind(GroupStatus::Scheduled)
            .bind(now)
            .fetch_optional(&mut **tx)
            .await?;
            if let Some(row) = row {
                Groups::insert_group_seats(tx, &[(row.try_get(0)?, &g.bots)]).await?;
            }
        }
        Ok(())
    }

    /// Closes the season of competition `id` with its final standings (JSON):
    /// the master seed is public from now on. False if it was not in phase
    /// `from` (another server moved it) or a finals group is not played.
    ///
    /// # Errors
    /// The database.
    pub async fn close_season(
        self,
        id: CompetitionId,
        finals_id: Option<CompetitionId>,
        standings: &str,
        from: Phase,
    ) -> Result<bool> {
        let mut tx = self.store.write_tx().await?;
        // Only from the phase expected, and only once every finals group is in.
        let moved = sqlx::query(
            "UPDATE seasons SET phase = $1, closed_ms = $2, final_standings = $3 WHERE competition_id = $4 AND phase = $5
             AND NOT EXISTS (SELECT 1 FROM match_groups WHERE competition_id = seasons.finals_id AND status <> $6)",
        )
        .bind(Phase::Closed)
        .bind(self.store.now_ms())
        .bind(standings)
        .bind(id)
        .bind(from)
        .bind(GroupStatus::Done)
        .execute(&mut *tx)
        .await?;
        if moved.rows_affected() == 0 {
            return Ok(false);
        }
        for c in [Some(id), finals_id].into_iter().flatten() {
            sqlx::query("UPDATE competitions SET status = $1 WHERE id = $2")
                .bind(CompetitionStatus::Closed)
                .bind(c)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// A finals competition's games, by group and rotation, with each group's
    /// deal and seed.
    ///
    /// # Errors
    /// The database.
    pub async fn finals_games(self, finals_id: CompetitionId) -> Result<Vec<FinalsGameRow>> {
        let rows = sqlx::query(
            "SELECT g.group_no, g.deal, g.seed, x.rotation, x.record FROM games x
             JOIN match_groups g ON g.id = x.group_id WHERE x.competition_id = $1
             ORDER BY g.group_no, x.rotation",
        )
        .bind(finals_id)
        .fetch_all(&self.store.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(FinalsGameRow {
                    group_no: r.try_get(0)?,
                    deal: r.try_get(1)?,
                    group_seed: r.try_get(2)?,
                    rotation: r.try_get(3)?,
                    record: r.try_get(4)?,
                })
            })
            .collect()
    }

    /// The seed group `group` is dealt again with (a lease that ran out or was
    /// given back), counting the deal: a finals group's derives from its
    /// season's master seed, number and deal; any other's is fresh from the
    /// operating system.
    pub(super) async fn deal_again(tx: &mut sqlx::AnyConnection, group: GroupId) -> Result<u64> {
        let row = sqlx::query(
            "SELECT g.group_no, g.deal, s.master_seed, s.entries_digest FROM match_groups g
             LEFT JOIN seasons s ON s.finals_id = g.competition_id WHERE g.id = $1",
        )
        .bind(group)
        .fetch_one(&mut *tx)
        .await?;
        let (no, deal): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        let sealed: (Option<String>, Option<String>) = (row.try_get(2)?, row.try_get(3)?);
        let seed = match sealed {
            (Some(master), Some(digest)) => {
                let master = MasterSeed::from_hex(&master).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                let digest = crate::season::seal::digest_from_hex(&digest)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                crate::season::seal::group_seed(&master, &digest, no as u64, deal as u64 + 1)
            }
            _ => fresh_seed()?,
        };
        sqlx::query("UPDATE match_groups SET deal = deal + 1 WHERE id = $1")
            .bind(group)
            .execute(&mut *tx)
            .await?;
        Ok(seed)
    }
}
