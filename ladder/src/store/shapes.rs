//! Finished groups counted by the shape of their results (`fit_tally`): what a
//! refit reads instead of every game.
//!
//! A report adds its finished groups' shapes in its own transaction, a voided
//! worker takes its groups' shapes back in its, and the games of groups not yet
//! finished are read as games. So the standings from [`Tallied`] are those of
//! every game recorded (to rounding), while a refit reads as many rows as the
//! competition has distinct shapes plus its games in flight: about four rows per
//! pair of bots for two-seat mirrored games, whatever the number of games.

use super::*;
use rating::shape::GroupShape;
use rating::standings::{Counts, Standings};
use std::collections::HashMap;

/// A competition's results as a refit reads them: finished groups by shape,
/// with how many, and the games of unfinished groups one by one.
#[derive(Debug, Default)]
pub struct Tallied {
    /// Finished groups' shapes and counts.
    pub shapes: Vec<(GroupShape, u64)>,
    /// Games of groups not finished.
    pub unfinished: Vec<ResultRow>,
    /// Rows of `fit_tally` read (more than the shapes until they are folded).
    pub rows_read: usize,
}

impl Tallied {
    /// The standings of `bots` (id, name) in `seats`-seat games.
    ///
    /// # Errors
    /// A shape or game naming a bot not in `bots`, one the fit refuses, or an
    /// anchor that is not an entrant.
    pub fn standings(
        &self,
        bots: &[(i64, String)],
        seats: usize,
        anchor: Option<(&str, f64)>,
    ) -> std::result::Result<Standings, rating::standings::StandingsError> {
        let mut counts = Counts::new(bots, seats);
        for (shape, n) in &self.shapes {
            counts.add_groups(shape, *n)?;
        }
        for r in &self.unfinished {
            counts.add_game(r)?;
        }
        counts.standings(anchor)
    }

    /// Wins, draws and losses of each bot against each other, keyed (bot, opponent).
    pub fn against(&self) -> HashMap<(BotId, BotId), [u64; 3]> {
        let mut out: HashMap<(BotId, BotId), [u64; 3]> = HashMap::new();
        let mut count = |seats: &mut dyn Iterator<Item = (i64, u32)>, times: u64| {
            let seats: Vec<(i64, u32)> = seats.collect();
            for &(bot, place) in &seats {
                for &(other, theirs) in seats.iter().filter(|s| s.0 != bot) {
                    let k = match place.cmp(&theirs) {
                        std::cmp::Ordering::Less => 0,
                        std::cmp::Ordering::Equal => 1,
                        std::cmp::Ordering::Greater => 2,
                    };
                    out.entry((BotId(bot), BotId(other))).or_default()[k] += times;
                }
            }
        };
        for (shape, n) in &self.shapes {
            for g in &shape.games {
                count(&mut g.seats.iter().copied(), *n);
            }
        }
        for r in &self.unfinished {
            count(&mut r.bots.iter().copied().zip(r.ranks.iter().copied()), 1);
        }
        out
    }
}

/// A game as a shape counts it: bots and places by seat, and whether a fault ended it.
type ShapedGame<'a> = (&'a [i64], &'a [u32], bool);

/// Shapes of the whole groups among `games` (each game `(competition, group,
/// bots, places, forfeit)`), each with its competition, sorted so that equal
/// ones are neighbours; a group some of whose rotations are missing is left out.
fn shapes_of<'a>(
    games: impl IntoIterator<Item = (CompetitionId, GroupId, &'a [i64], &'a [u32], bool)>,
) -> Vec<(CompetitionId, GroupShape)> {
    let mut by_group: HashMap<GroupId, (CompetitionId, Vec<ShapedGame<'_>>)> = HashMap::new();
    for (c, g, bots, ranks, forfeit) in games {
        by_group
            .entry(g)
            .or_insert_with(|| (c, Vec::new()))
            .1
            .push((bots, ranks, forfeit));
    }
    let mut out: Vec<(CompetitionId, GroupShape)> = by_group
        .into_values()
        .filter(|(_, games)| games.first().is_some_and(|g| g.0.len() == games.len()))
        .map(|(c, games)| (c, GroupShape::of(games)))
        .collect();
    out.sort_unstable();
    out
}

impl Shapes<'_> {
    /// Adds `by` (+1 or -1) for each of `shapes` to the tally, one row per
    /// competition and shape.
    async fn add_to_tally(
        tx: &mut sqlx::AnyConnection,
        shapes: Vec<(CompetitionId, GroupShape)>,
        by: i64,
    ) -> Result<()> {
        let mut rows: Vec<(CompetitionId, String, i64, i64)> = Vec::with_capacity(shapes.len());
        for (c, shape) in shapes {
            let text = shape.to_string();
            let games = by * shape.games.len() as i64;
            match rows.last_mut() {
                Some(last) if last.0 == c && last.1 == text => {
                    last.2 += by;
                    last.3 += games;
                }
                _ => rows.push((c, text, by, games)),
            }
        }
        Self::insert_tally_rows(tx, &rows).await
    }

    /// Appends rows `(competition, shape, groups, games)` to the tally.
    async fn insert_tally_rows(
        conn: &mut sqlx::AnyConnection,
        rows: &[(CompetitionId, String, i64, i64)],
    ) -> Result<()> {
        for chunk in rows.chunks(100) {
            let mut sql =
                Sql::new("INSERT INTO fit_tally (competition_id, shape, group_count, game_count) VALUES ");
            sql.rows(chunk, |row, (c, shape, n, games)| {
                row.bind(*c).bind(shape.as_str()).bind(*n).bind(*games);
            });
            sql.query()?.execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// Tallies the groups of `games` that they finish (every rotation present):
    /// a report's groups, which are stored whole.
    pub(super) async fn tally_new_games(tx: &mut sqlx::AnyConnection, games: &[&NewGame]) -> Result<()> {
        let bots: Vec<Vec<i64>> = games
            .iter()
            .map(|g| g.bots.iter().map(|b| b.0).collect())
            .collect();
        let shapes = shapes_of(games.iter().zip(&bots).map(|(g, bots)| {
            (
                g.competition_id,
                g.group_id,
                &bots[..],
                &g.ranks[..],
                g.termination == Termination::Forfeit,
            )
        }));
        Self::add_to_tally(tx, shapes, 1).await
    }

    /// Adds (`by` 1) or takes back (`by` -1) the stored games of `groups`,
    /// each a finished group.
    pub(super) async fn tally_stored_groups(
        self,
        tx: &mut sqlx::AnyConnection,
        groups: &[GroupId],
        by: i64,
    ) -> Result<()> {
        if groups.is_empty() {
            return Ok(());
        }
        let select = format!("SELECT {} FROM games WHERE group_id IN ", games::GAME_HEAD);
        let heads = Groups::rows_with_ids(tx, &select, groups, "").await?;
        let results = self.store.games().results_of(tx, &heads).await?;
        let competitions = heads
            .iter()
            .map(|h| h.try_get::<CompetitionId, _>(1))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let shapes = shapes_of(
            results
                .iter()
                .zip(competitions)
                .map(|(r, c)| (c, GroupId(r.group_id), &r.bots[..], &r.ranks[..], r.forfeit)),
        );
        Self::add_to_tally(tx, shapes, by).await
    }

    /// Games recorded in a competition: its finished groups' from the tally
    /// and its unfinished groups' counted by key (rows as many as its shapes
    /// and its games in flight, not its games).
    ///
    /// # Errors
    /// The database.
    pub async fn game_count(self, competition_id: CompetitionId) -> Result<i64> {
        let mut tx = self.read_tx().await?;
        let tallied: i64 = sqlx::query(
            "SELECT COALESCE(CAST(SUM(game_count) AS BIGINT), 0) FROM fit_tally WHERE competition_id = $1",
        )
        .bind(competition_id)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        let open = Self::open_groups(&mut tx, competition_id).await?;
        let mut unfinished = 0i64;
        for row in Groups::rows_with_ids(
            &mut tx,
            "SELECT COUNT(*) FROM games WHERE group_id IN ",
            &open,
            "",
        )
        .await?
        {
            unfinished += row.try_get::<i64, _>(0)?;
        }
        tx.commit().await?;
        Ok(tallied + unfinished)
    }

    /// A competition's groups not finished, through their partial index. Their
    /// games are then read by key: as a join or a semi-join, PostgreSQL would
    /// hash every game of the competition (or compile the plan, for its cost).
    async fn open_groups(
        conn: &mut sqlx::AnyConnection,
        competition_id: CompetitionId,
    ) -> Result<Vec<GroupId>> {
        sqlx::query(sql_text!(
            "SELECT id FROM match_groups WHERE competition_id = $1 AND status <> ",
            GroupStatus::Done
        ))
        .bind(competition_id)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| Ok(r.try_get(0)?))
        .collect()
    }

    /// A read-only transaction that sees one moment (`REPEATABLE READ` on
    /// PostgreSQL; a SQLite read transaction does anyway).
    async fn read_tx(self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        let mut tx = self.store.pool.begin().await?;
        if self.store.dialect == Dialect::Postgres {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                .execute(&mut *tx)
                .await?;
        }
        Ok(tx)
    }

    /// A competition's results as a refit reads them, from one snapshot.
    ///
    /// # Errors
    /// The database, or a row that does not parse.
    pub async fn tallied(self, competition_id: CompetitionId) -> Result<Tallied> {
        // Both reads see the same moment: a group finishing between them would
        // count twice or not at all.
        let mut tx = self.read_tx().await?;
        let rows = sqlx::query(
            "SELECT shape, CAST(SUM(group_count) AS BIGINT), COUNT(*) FROM fit_tally WHERE competition_id = $1 GROUP BY shape",
        )
        .bind(competition_id)
        .fetch_all(&mut *tx)
        .await?;
        let mut out = Tallied::default();
        for row in &rows {
            let text: String = row.try_get(0)?;
            let n: i64 = row.try_get(1)?;
            let k: i64 = row.try_get(2)?;
            out.rows_read += k as usize;
            if n < 0 {
                return Err(StoreError::Corrupt(format!(
                    "competition {competition_id}: {n} groups of shape {text}"
                )));
            }
            if n > 0 {
                let shape = text.parse().map_err(|e| StoreError::Corrupt(format!("{e}")))?;
                out.shapes.push((shape, n as u64));
            }
        }
        let open = Self::open_groups(&mut tx, competition_id).await?;
        let select = format!("SELECT {} FROM games WHERE group_id IN ", games::GAME_HEAD);
        let heads = Groups::rows_with_ids(&mut tx, &select, &open, "").await?;
        out.unfinished = self.store.games().results_of(&mut tx, &heads).await?;
        out.unfinished.sort_unstable_by_key(|r| r.id);
        tx.commit().await?;
        if out.rows_read > 2 * out.shapes.len() + 256 {
            self.fold_tally(competition_id).await?;
        }
        Ok(out)
    }

    /// Folds a competition's tally rows into one per shape. Rows added while
    /// it runs are not seen by its delete and stay as they are.
    async fn fold_tally(self, competition_id: CompetitionId) -> Result<()> {
        let mut tx = self.store.write_tx().await?;
        let rows = sqlx::query(
            "DELETE FROM fit_tally WHERE competition_id = $1 RETURNING shape, group_count, game_count",
        )
        .bind(competition_id)
        .fetch_all(&mut *tx)
        .await?;
        let mut sums: std::collections::BTreeMap<String, (i64, i64)> = std::collections::BTreeMap::new();
        for row in &rows {
            let sum = sums.entry(row.try_get(0)?).or_default();
            sum.0 += row.try_get::<i64, _>(1)?;
            sum.1 += row.try_get::<i64, _>(2)?;
        }
        let rows: Vec<(CompetitionId, String, i64, i64)> = sums
            .into_iter()
            .filter(|(_, n)| n.0 != 0)
            .map(|(shape, (n, games))| (competition_id, shape, n, games))
            .collect();
        Self::insert_tally_rows(&mut tx, &rows).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Counts, once, the finished groups of competitions recorded before the
    /// tally (migration 0015 marks them). Run when the store opens; on
    /// PostgreSQL the tally is locked meanwhile, so a report of another server
    /// cannot be counted both by itself and here.
    pub(super) async fn tally_pending(self) -> Result<()> {
        let pending: Vec<CompetitionId> =
            sqlx::query("SELECT id FROM competitions WHERE tally_pending <> 0 ORDER BY id")
                .fetch_all(&self.store.pool)
                .await?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<std::result::Result<_, _>>()?;
        for c in pending {
            let mut tx = self.store.write_tx().await?;
            if self.store.dialect == Dialect::Postgres {
                sqlx::query("LOCK TABLE fit_tally IN EXCLUSIVE MODE")
                    .execute(&mut *tx)
                    .await?;
            }
            let still =
                sqlx::query("UPDATE competitions SET tally_pending = 0 WHERE id = $1 AND tally_pending <> 0")
                    .bind(c)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            if still == 0 {
                continue;
            }
            sqlx::query("DELETE FROM fit_tally WHERE competition_id = $1")
                .bind(c)
                .execute(&mut *tx)
                .await?;
            let done: Vec<GroupId> = sqlx::query(sql_text!(
                "SELECT id FROM match_groups WHERE competition_id = $1 AND status = ",
                GroupStatus::Done
            ))
            .bind(c)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<std::result::Result<_, _>>()?;
            for chunk in done.chunks(10_000) {
                self.tally_stored_groups(&mut tx, chunk, 1).await?;
            }
            tx.commit().await?;
            self.fold_tally(c).await?;
        }
        Ok(())
    }
}
