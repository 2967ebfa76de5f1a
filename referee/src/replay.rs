//! Re-running recorded games: every move must be legal where it was played, and the
//! game must reach the recorded final position and outcome.

use crate::game::{GameSetup, create_game};
use crate::record::{GameRecord, final_outcome};

/// The first difference between a record and the game recomputed from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The game cannot be set up from the record.
    #[error("cannot set up the game: {0}")]
    Setup(String),
    /// A recorded move is refused.
    #[error("move {index} ({mv:?} by seat {seat}) is refused: {why}")]
    Move {
        /// Its index in the record.
        index: usize,
        /// The seat.
        seat: usize,
        /// The move.
        mv: String,
        /// Why.
        why: String,
    },
    /// The recomputed final position differs.
    #[error("final position differs:\n  recorded: {recorded}\n  replayed: {replayed}")]
    Position {
        /// In the record.
        recorded: String,
        /// Recomputed.
        replayed: String,
    },
    /// The recomputed outcome differs.
    #[error("outcome differs: recorded {recorded}, replayed {replayed}")]
    Outcome {
        /// In the record (JSON).
        recorded: String,
        /// Recomputed (JSON).
        replayed: String,
    },
}

/// Replays a record; `on_move` sees the game after each move (for `show`).
///
/// # Errors
/// The first difference found.
pub fn replay_with(
    rec: &GameRecord,
    mut on_move: impl FnMut(usize, &dyn engine::AnyGame),
) -> Result<(), ReplayError> {
    let setup = GameSetup {
        game: rec.game.clone(),
        options: rec.options.clone(),
        seed: rec.seed,
        position: rec.start_position.clone(),
        pairing: rec.pairing,
    };
    let mut game = create_game(&setup, rec.seats.len()).map_err(|e| ReplayError::Setup(e.to_string()))?;
    for (index, m) in rec.moves.iter().enumerate() {
        game.play(m.seat, &m.mv).map_err(|e| ReplayError::Move {
            index,
            seat: m.seat,
            mv: m.mv.clone(),
            why: e.to_string(),
        })?;
        on_move(index, game.as_ref());
    }
    let replayed = game.position();
    if replayed != rec.final_position {
        return Err(ReplayError::Position {
            recorded: rec.final_position.clone(),
            replayed,
        });
    }
    let (outcome, termination) = final_outcome(rec.seats.len(), game.outcome().as_ref(), &rec.faults);
    if outcome != rec.outcome || termination != rec.termination {
        let json = |o: &engine::Outcome, t| format!("{} ({t})", serde_json::to_string(o).unwrap_or_default());
        return Err(ReplayError::Outcome {
            recorded: json(&rec.outcome, rec.termination),
            replayed: json(&outcome, termination),
        });
    }
    Ok(())
}

/// Replays a record.
///
/// # Errors
/// The first difference found.
pub fn replay(rec: &GameRecord) -> Result<(), ReplayError> {
    replay_with(rec, |_, _| {})
}

/// The game drawn move by move, as text.
pub fn show(rec: &GameRecord) -> String {
    let mut out = String::new();
    let names: Vec<String> = rec
        .seats
        .iter()
        .enumerate()
        .map(|(i, s)| format!("seat {i}: {} ({})", s.name, s.spec))
        .collect();
    out.push_str(&format!(
        "{} seed {} options {}\n{}\n",
        rec.game,
        rec.seed,
        rec.options.join(" "),
        names.join("\n")
    ));
    let setup = GameSetup {
        game: rec.game.clone(),
        options: rec.options.clone(),
        seed: rec.seed,
        position: rec.start_position.clone(),
        pairing: None,
    };
    if let Ok(g) = create_game(&setup, rec.seats.len()) {
        out.push_str(&format!("\nstart\n{}", g.render()));
    }
    let result = replay_with(rec, |i, g| {
        let m = &rec.moves[i];
        let tag = if m.fallback {
            " (fallback for a faulted seat)"
        } else {
            ""
        };
        out.push_str(&format!(
            "\n{}. seat {} plays {} in {} ms{tag}\n{}",
            i + 1,
            m.seat,
            m.mv,
            m.ms,
            g.render()
        ));
    });
    for f in &rec.faults {
        out.push_str(&format!(
            "\nfault: seat {} {} after {} moves: {}\n",
            f.seat, f.kind, f.at_move, f.detail
        ));
    }
    out.push_str(&format!(
        "\nresult ({}): places {:?}, scores {:?}\n",
        rec.termination, rec.outcome.ranks, rec.outcome.scores
    ));
    if let Err(e) = result {
        out.push_str(&format!("REPLAY DIFFERS: {e}\n"));
    }
    out
}
