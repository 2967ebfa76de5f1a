//! What only a seat's author (and the host) may read of a game, kept apart from
//! its public record: the end of the bot's stderr, its `info` lines and its faults
//! in full.

use super::*;

/// One seat's private log of one game, as kept (JSON in `seat_logs.log`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SeatLogEntry {
    /// The end of what the bot wrote to stderr.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Bytes of stderr before `stderr` that were not kept.
    #[serde(default)]
    pub stderr_dropped: u64,
    /// Its `info` lines, each with the index of the move it came with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<(u32, String)>,
    /// Its faults in full, where they said more than the record shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
}

impl SeatLogEntry {
    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.stderr.is_empty() && self.stderr_dropped == 0 && self.info.is_empty() && self.faults.is_empty()
    }
}

/// A seat's private log with the game it belongs to, to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSeatLog {
    /// The seat.
    pub seat: usize,
    /// Its bot.
    pub bot: BotId,
    /// What it said.
    pub entry: SeatLogEntry,
}

/// A game's private logs as read back.
#[derive(Debug, Clone)]
pub struct GameLogs {
    /// Its bots by seat.
    pub bots: Vec<BotId>,
    /// The seats that had something to say, in seat order.
    pub seats: Vec<NewSeatLog>,
}

impl Logs<'_> {
    /// Stores the private logs of `games` (each once: a game reported twice keeps
    /// its first).
    pub(super) async fn insert_seat_logs(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        games: &[&NewGame],
    ) -> Result<()> {
        let rows: Vec<(&NewGame, &NewSeatLog, String)> = games
            .iter()
            .flat_map(|g| g.logs.iter().map(move |l| (*g, l)))
            .map(|(g, l)| {
                let json = serde_json::to_string(&l.entry).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                Ok((g, l, json))
            })
            .collect::<Result<_>>()?;
        for chunk in rows.chunks(100) {
            let mut sql = Sql::new("INSERT INTO seat_logs (group_id, rotation, seat, bot_id, log) VALUES ");
            sql.rows(chunk.iter(), |row, (g, l, json)| {
                row.bind(g.group_id)
                    .bind(g.rotation)
                    .bind(l.seat as i64)
                    .bind(l.bot)
                    .bind(json.as_str());
            });
            sql.push(" ON CONFLICT (group_id, rotation, seat) DO NOTHING");
            sql.query()?.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// A game's private logs: its bots by seat and every seat's log that was kept
    /// (`None`: no such game).
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn game_logs(self, game_id: GameId) -> Result<Option<GameLogs>> {
        let Some(game) = self.store.games().results_by_id(&[game_id]).await?.pop() else {
            return Ok(None);
        };
        let rows = sqlx::query(
            "SELECT seat, bot_id, log FROM seat_logs WHERE group_id = $1 AND rotation = $2 ORDER BY seat",
        )
        .bind(game.group_id)
        .bind(game.rotation)
        .fetch_all(&self.store.pool)
        .await?;
        let mut seats = Vec::with_capacity(rows.len());
        for row in rows {
            let seat: i64 = row.try_get(0)?;
            let json: String = row.try_get(2)?;
            seats.push(NewSeatLog {
                seat: seat as usize,
                bot: row.try_get(1)?,
                entry: serde_json::from_str(&json)
                    .map_err(|e| StoreError::Corrupt(format!("game {game_id}'s log of seat {seat}: {e}")))?,
            });
        }
        Ok(Some(GameLogs {
            bots: game.bots.iter().map(|&b| BotId(b)).collect(),
            seats,
        }))
    }
}
