//! Re-running recorded games: every move must be legal where it was played, and the
//! game must reach the recorded final position and outcome.

use crate::game::{GameSetup, create_game};
use crate::record::{GameRecord, final_outcome};
use crate::text::escaped;

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
    /// A recorded fault that the game contradicts.
    #[error("fault {index} (seat {seat}, {kind}, after {at_move} moves) cannot be: {why}")]
    Fault {
        /// Its index among the record's faults.
        index: usize,
        /// The seat charged.
        seat: usize,
        /// Its kind.
        kind: crate::fault::FaultKind,
        /// Moves recorded before it.
        at_move: usize,
        /// What the game says.
        why: String,
    },
    /// The record ends where the game could not have: unfinished, with no fault.
    #[error("the game is not over after its {moves} moves (to act: {to_act}) and no fault ends it")]
    Unfinished {
        /// Moves recorded.
        moves: usize,
        /// Who was to act.
        to_act: String,
    },
    /// The recomputed outcome differs.
    #[error("outcome differs: recorded {recorded}, replayed {replayed}")]
    Outcome {
        /// In the record (JSON).
        recorded: String,
        /// Recomputed (JSON).
        replayed: String,
    },
    /// A record of an older engine that does not replay here, where the game
    /// has changed since.
    #[error(
        "this record was made by engine {made_by}, and engine {current} changed this game: {changes}. Replay it with astragal engine {needs}. (First difference here: {first})"
    )]
    EngineVersion {
        /// The record's `engine`.
        made_by: String,
        /// This engine's version.
        current: &'static str,
        /// The engine version the record needs.
        needs: String,
        /// What changed, since which version.
        changes: String,
        /// The difference found on this engine.
        first: Box<ReplayError>,
    },
}

/// Replays a record; `on_move` sees the game after each move (for `show`).
///
/// Faults are checked against the game, as the referee charges them: the seat
/// exists; a fault charged in setup is at move 0 (and of a kind setup can give);
/// any other was charged to a seat that was to act at that moment; each seat faults
/// once; a two-seat game ends at its first fault; with more seats a faulted seat's
/// later moves are the referee's fallbacks (its first legal move) and nobody else's
/// are; a game that is not over carries a fault; and the outcome follows.
///
/// # Errors
/// The first difference found.
pub fn replay_with(
    rec: &GameRecord,
    on_move: impl FnMut(usize, &dyn engine::AnyGame),
) -> Result<(), ReplayError> {
    replay_on_this_engine(rec, on_move).map_err(|first| {
        let changes = engine::versions::changes_since(&rec.engine, &rec.game, &rec.options);
        match changes.first() {
            Some(oldest) if rec.engine != engine::ENGINE_VERSION => ReplayError::EngineVersion {
                made_by: rec.engine.clone(),
                current: engine::ENGINE_VERSION,
                needs: engine::versions::version_before(oldest),
                changes: changes
                    .iter()
                    .map(|c| format!("since {}, {}", c.since, c.what))
                    .collect::<Vec<_>>()
                    .join("; "),
                first: Box::new(first),
            },
            _ => first,
        }
    })
}

/// [`replay_with`] by this engine's rules, whatever engine made the record.
fn replay_on_this_engine(
    rec: &GameRecord,
    mut on_move: impl FnMut(usize, &dyn engine::AnyGame),
) -> Result<(), ReplayError> {
    let mut game = start_of(rec)?;
    let seats = rec.seats.len();
    check_fault_list(rec)?;
    let mut faulted = vec![false; seats];
    let mut next_fault = 0;
    for index in 0..=rec.moves.len() {
        // The faults charged before move `index`.
        while let Some(f) = rec.faults.get(next_fault).filter(|f| f.at_move == index) {
            let to_act = game.to_act();
            if !f.is_setup() && !to_act.contains(f.seat) {
                return Err(fault_error(
                    rec,
                    next_fault,
                    format!("seat {} was not to act then (to act: {to_act:?})", f.seat),
                ));
            }
            faulted[f.seat] = true;
            next_fault += 1;
        }
        let Some(m) = rec.moves.get(index) else { break };
        let refused = |why: String| ReplayError::Move {
            index,
            seat: m.seat,
            mv: m.mv.clone(),
            why,
        };
        if m.seat >= seats {
            return Err(refused(format!("the game has {seats} seats")));
        }
        if seats == 2 && faulted.iter().any(|&f| f) {
            return Err(refused("a two-seat game ends at its first fault".into()));
        }
        if m.fallback != faulted[m.seat] {
            return Err(refused(if m.fallback {
                "a fallback move for a seat that has not faulted".into()
            } else {
                "a move of its own by a seat that has faulted".into()
            }));
        }
        if m.fallback && game.legal_moves(m.seat).first() != Some(&m.mv) {
            return Err(refused("a fallback is the seat's first legal move".into()));
        }
        game.play(m.seat, &m.mv).map_err(|e| refused(e.to_string()))?;
        on_move(index, game.as_ref());
    }
    let to_act = game.to_act();
    if !to_act.is_empty() && rec.faults.is_empty() {
        return Err(ReplayError::Unfinished {
            moves: rec.moves.len(),
            to_act: format!("{to_act:?}"),
        });
    }
    if !to_act.is_empty() && seats > 2 {
        // With more seats the referee plays a faulted seat's moves to the end.
        return Err(ReplayError::Unfinished {
            moves: rec.moves.len(),
            to_act: format!("{to_act:?}"),
        });
    }
    let replayed = game.position();
    if replayed != rec.final_position {
        return Err(ReplayError::Position {
            recorded: rec.final_position.clone(),
            replayed,
        });
    }
    let (outcome, termination) = final_outcome(seats, game.outcome().as_ref(), &rec.faults);
    if outcome != rec.outcome || termination != rec.termination {
        let json = |o: &engine::Outcome, t| format!("{} ({t})", serde_json::to_string(o).unwrap_or_default());
        return Err(ReplayError::Outcome {
            recorded: json(&rec.outcome, rec.termination),
            replayed: json(&outcome, termination),
        });
    }
    Ok(())
}

/// What can be checked of the faults without the game: seats, order, one fault a
/// seat, setup faults at move 0 and of a kind setup gives.
fn check_fault_list(rec: &GameRecord) -> Result<(), ReplayError> {
    let seats = rec.seats.len();
    let mut seen = vec![false; seats];
    for (i, f) in rec.faults.iter().enumerate() {
        let why = if f.seat >= seats {
            format!("the game has {seats} seats")
        } else if seen[f.seat] {
            "the seat has faulted already (a seat faults once)".into()
        } else if f.at_move > rec.moves.len() {
            format!("the record has {} moves", rec.moves.len())
        } else if i > 0 && f.at_move < rec.faults[i - 1].at_move {
            "faults are recorded in order, and the one before is later".into()
        } else if f.is_setup() && f.at_move != 0 {
            "a fault in setup comes before the first move".into()
        } else if f.setup && !f.kind.can_happen_in_setup() {
            format!("{} cannot happen before the first request", f.kind)
        } else {
            seen[f.seat] = true;
            continue;
        };
        return Err(fault_error(rec, i, why));
    }
    Ok(())
}

fn fault_error(rec: &GameRecord, index: usize, why: String) -> ReplayError {
    let f = &rec.faults[index];
    ReplayError::Fault {
        index,
        seat: f.seat,
        kind: f.kind,
        at_move: f.at_move,
        why,
    }
}

/// Replays a record.
///
/// # Errors
/// The first difference found.
pub fn replay(rec: &GameRecord) -> Result<(), ReplayError> {
    replay_with(rec, |_, _| {})
}

/// A recorded game as it stood before its first move.
///
/// # Errors
/// The record's game, options or start position are refused.
pub fn start_of(rec: &GameRecord) -> Result<Box<dyn engine::AnyGame>, ReplayError> {
    let setup = GameSetup {
        game: rec.game.clone(),
        options: rec.options.clone(),
        seed: rec.seed,
        position: rec.start_position.clone(),
        pairing: rec.pairing,
    };
    create_game(&setup, rec.seats.len()).map_err(|e| ReplayError::Setup(e.to_string()))
}

/// The game drawn move by move, as text.
pub fn show(rec: &GameRecord) -> String {
    let mut out = String::new();
    let names: Vec<String> = rec
        .seats
        .iter()
        .enumerate()
        .map(|(i, s)| format!("seat {i}: {} ({})", escaped(&s.name), escaped(&s.spec)))
        .collect();
    out.push_str(&format!(
        "{} seed {} options {}\n{}\n",
        escaped(&rec.game),
        rec.seed,
        escaped(&rec.options.join(" ")),
        names.join("\n")
    ));
    if let Ok(g) = start_of(rec) {
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
            "\n{}. seat {} plays {} in {} ms{tag}\n",
            i + 1,
            m.seat,
            escaped(&m.mv),
            m.ms,
        ));
        for line in &m.info {
            out.push_str(&format!("   info: {}\n", escaped(line)));
        }
        out.push_str(&g.render());
    });
    for f in &rec.faults {
        out.push_str(&format!(
            "\nfault: seat {} {} after {} moves: {}\n",
            f.seat,
            f.kind,
            f.at_move,
            escaped(&f.detail)
        ));
    }
    out.push_str(&format!(
        "\nresult ({}): places {:?}, scores {:?}\n",
        rec.termination, rec.outcome.ranks, rec.outcome.scores
    ));
    if let Err(e) = result {
        out.push_str(&format!("REPLAY DIFFERS: {}\n", escaped(&e.to_string())));
    }
    out
}

/// A record file checked line by line.
#[derive(Debug, Default)]
pub struct CheckedFile {
    /// The records that replay identically.
    pub good: Vec<GameRecord>,
    /// Each line that is not a record or does not replay: its number (from 1) and
    /// why, with control characters escaped.
    pub bad: Vec<(usize, String)>,
}

/// Reads a record file and replays every record in it: one bad line costs that line
/// only.
///
/// # Errors
/// The file cannot be read or is empty.
pub fn check_file(path: &std::path::Path) -> Result<CheckedFile, String> {
    let lines = crate::record::read_lines(path)?;
    let mut out = CheckedFile {
        good: Vec::with_capacity(lines.records.len()),
        bad: lines
            .bad
            .into_iter()
            .map(|(n, why)| (n, escaped(&why).into_owned()))
            .collect(),
    };
    for (n, rec) in lines.records {
        match replay(&rec) {
            Ok(()) => out.good.push(rec),
            Err(e) => out.bad.push((
                n,
                format!(
                    "{} seed {}: {}",
                    escaped(&rec.game),
                    rec.seed,
                    escaped(&e.to_string())
                ),
            )),
        }
    }
    out.bad.sort_by_key(|(n, _)| *n);
    Ok(out)
}
