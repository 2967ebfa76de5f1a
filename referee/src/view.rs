//! The game viewer: a recorded game as one self-contained HTML page (no network:
//! the drawing code and every state are inside it), watched move by move.
//! `referee view` writes it; `ladder serve` serves it at `/games/{id}`.
//!
//! Every state is computed here by replaying the record, so the page never
//! judges a rule: it draws what the engine says (each seat's observation, and the
//! full state as the engine renders it).

use crate::record::GameRecord;
use crate::replay::{ReplayError, replay_with, start_of};

/// One state of a game: before the first move, then after each.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Frame {
    /// Moves played so far.
    pub ply: usize,
    /// The move that led here (none for the start).
    pub played: Option<FramedMove>,
    /// The whole state as the engine draws it.
    pub full: String,
    /// Each seat's observation (what it was told), by seat.
    pub observations: Vec<serde_json::Value>,
    /// Seats to act next.
    pub to_act: Vec<usize>,
}

/// A move as the viewer lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FramedMove {
    /// Who played it.
    pub seat: usize,
    /// Its text.
    #[serde(rename = "move")]
    pub mv: String,
    /// Thinking time (ms).
    pub ms: u64,
    /// The bot's `info` lines with it.
    pub info: Vec<String>,
    /// Played by the referee for a faulted seat.
    pub fallback: bool,
    /// Faults charged just before it, as `seat N kind: detail`.
    pub faults: Vec<String>,
}

/// Every state of a recorded game, by replaying it.
///
/// # Errors
/// The record does not replay (the same errors as `referee replay`).
pub fn frames(rec: &GameRecord) -> Result<Vec<Frame>, ReplayError> {
    let start = start_of(rec)?;
    let seats = rec.seats.len();
    let frame = |ply: usize, played: Option<FramedMove>, g: &dyn engine::AnyGame| Frame {
        ply,
        played,
        full: g.render(),
        observations: (0..seats).map(|s| g.observation(s)).collect(),
        to_act: (0..seats).filter(|&s| g.to_act().contains(s)).collect(),
    };
    let mut out = vec![frame(0, None, start.as_ref())];
    replay_with(rec, |i, g| {
        let m = &rec.moves[i];
        let faults = rec
            .faults
            .iter()
            .filter(|f| f.at_move == i)
            .map(|f| format!("seat {} {}: {}", f.seat, f.kind, f.detail))
            .collect();
        let played = FramedMove {
            seat: m.seat,
            mv: m.mv.clone(),
            ms: m.ms,
            info: m.info.clone(),
            fallback: m.fallback,
            faults,
        };
        out.push(frame(i + 1, Some(played), g));
    })?;
    Ok(out)
}

/// What the page shows above the board.
#[derive(Debug, Clone, serde::Serialize)]
struct Header<'a> {
    title: &'a str,
    game: &'a str,
    options: &'a [String],
    /// A string: 64 bits do not fit a JavaScript number (11436449778045374795
    /// would show as …375000, another game).
    seed: String,
    seats: Vec<String>,
    /// A seat's view hides the other seats' moves (a game with hidden information:
    /// Spartan's rerolls are secret).
    moves_hidden: bool,
    ranks: Vec<u8>,
    scores: Vec<i64>,
    termination: String,
    /// Faults charged after the last move (the game's end).
    end_faults: Vec<String>,
}

const PAGE: &str = include_str!("view.html");

/// The viewer page for a record, self-contained.
///
/// # Errors
/// The record does not replay.
pub fn html(rec: &GameRecord, title: &str) -> Result<String, ReplayError> {
    let mut frames = frames(rec)?;
    // What bots wrote is shown as written: a bidi override in an `info` line
    // cannot reorder it, nor a line separator hide a line (each shows as
    // `\u{202e}`, `\u{2028}`).
    let shown = |s: &str| crate::text::escaped_lines(s).into_owned();
    for played in frames.iter_mut().filter_map(|f| f.played.as_mut()) {
        for line in played.info.iter_mut().chain(played.faults.iter_mut()) {
            *line = shown(line);
        }
    }
    let title = &shown(title);
    let header = Header {
        title,
        game: &rec.game,
        options: &rec.options,
        seed: rec.seed.to_string(),
        seats: rec
            .seats
            .iter()
            .map(|s| shown(s.entrant.as_deref().unwrap_or(&s.name)))
            .collect(),
        moves_hidden: engine::game_info(&rec.game).is_ok_and(|i| i.nature.hidden_information),
        ranks: rec.outcome.ranks.clone(),
        scores: rec.outcome.scores.clone(),
        termination: rec.termination.to_string(),
        end_faults: rec
            .faults
            .iter()
            .filter(|f| f.at_move >= rec.moves.len())
            .map(|f| shown(&format!("seat {} {}: {}", f.seat, f.kind, f.detail)))
            .collect(),
    };
    let data = serde_json::json!({ "header": header, "frames": frames });
    // The game's drawing goes in first: it is the project's own text, and the
    // title and data after it may hold anything a bot wrote.
    let drawing = engine::game_info(&rec.game).map_or("", |i| i.presentation.drawing);
    Ok(PAGE
        .replacen("{{DRAWING}}", drawing, 1)
        .replace("{{TITLE}}", crate::text::html_escaped(title).as_ref())
        .replace("{{DATA}}", &script_safe(&data.to_string())))
}

/// JSON inside a `<script>` element: `<` never appears raw, so no text a bot
/// wrote (an `info` line of `</script>`) can end the element.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_text_cannot_close_its_element() {
        let s = script_safe(r#"{"info":"</script><script>alert(1)</script>"}"#);
        assert!(!s.contains('<'), "{s}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["info"], "</script><script>alert(1)</script>");
    }
}
