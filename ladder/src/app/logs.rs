//! Who reads a game's private logs ([`crate::store::SeatLogEntry`]), and what they
//! see: an author their own seats, the host every seat; no one else anything. The
//! gRPC call and the author's pages both read through [`readable_logs`].

use super::redact::Redactor;
use crate::store::{AuthorId, BotId, GameId, SeatLogEntry, Store, StoreError};
use serde::Serialize;
use std::collections::HashMap;

/// Who asks for a game's private logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogReader {
    /// The host (the admin token): every seat.
    Host,
    /// An author: the seats of their own bots.
    Author(AuthorId),
}

/// One seat's private log as its reader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeatLogView {
    /// The seat.
    pub seat: usize,
    /// Its bot's name.
    pub bot: String,
    /// What it said, the host's tokens hidden.
    #[serde(flatten)]
    pub log: SeatLogEntry,
}

/// The seats of game `id` that `reader` may read, with their logs (a seat that
/// said nothing has an empty log); `None` when there is no such game or none of
/// its seats is the reader's. The host's own tokens are hidden even from the host's
/// pages, as on every page ([`Redactor`]).
///
/// # Errors
/// The database.
pub async fn readable_logs(
    store: &Store,
    reader: LogReader,
    id: GameId,
    redactor: &Redactor,
) -> Result<Option<Vec<SeatLogView>>, StoreError> {
    let Some(game) = store.logs().game_logs(id).await? else {
        return Ok(None);
    };
    let bots: HashMap<BotId, crate::store::BotRow> = store
        .bots()
        .bots_by_id(&game.bots)
        .await?
        .into_iter()
        .map(|b| (b.id, b))
        .collect();
    let mut logged: HashMap<usize, SeatLogEntry> =
        game.seats.into_iter().map(|l| (l.seat, l.entry)).collect();
    let mut out = Vec::new();
    for (seat, id) in game.bots.iter().enumerate() {
        let Some(bot) = bots.get(id) else { continue };
        let readable = match reader {
            LogReader::Host => true,
            LogReader::Author(a) => bot.author_id == Some(a),
        };
        if !readable {
            continue;
        }
        let mut log = logged.remove(&seat).unwrap_or_default();
        log.stderr = redactor.text(&log.stderr);
        for (_, line) in &mut log.info {
            *line = redactor.text(line);
        }
        for f in &mut log.faults {
            *f = redactor.text(f);
        }
        out.push(SeatLogView {
            seat,
            bot: bot.name.clone(),
            log,
        });
    }
    Ok((!out.is_empty()).then_some(out))
}
