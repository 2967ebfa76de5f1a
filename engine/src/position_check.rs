//! What every accepted position must satisfy, checked by the randomized position
//! test (`engine/tests/positions.rs`) and the position fuzz targets (`engine/fuzz`):
//! a position the notation accepts round-trips, gives every seat to act a legal
//! move, and plays to its end within a bounded number of moves.

use crate::registry::{AnyGame, game_from_position};
use crate::rng::GameRng;

/// The most moves any accepted position may take to reach its end, whatever is
/// played: above every game's cap (Uptick's `max_turns` of 1,000,000 moves is the
/// longest) so that only a position that never ends trips it.
pub const MAX_PLIES: u64 = 1_100_000;

/// A broken promise of an accepted position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The position text as given.
    pub position: String,
    /// What went wrong.
    pub what: String,
}

/// Sets up `position` for game `id` with `options` and, if it is accepted, checks
/// it: its position text reads back as the same state, it is over exactly when
/// nobody is to act, every seat to act has a legal move, and random legal moves
/// (chosen from `seed`) bring it to an end within `max_plies`.
///
/// Returns `Ok(false)` for a refused position, `Ok(true)` for an accepted one
/// that keeps every promise.
///
/// # Errors
/// The first promise the accepted position breaks.
pub fn check_position(
    id: &str,
    options: &[&str],
    position: &str,
    seed: u64,
    max_plies: u64,
) -> Result<bool, Violation> {
    let Ok(mut game) = game_from_position(id, options, position, seed) else {
        return Ok(false);
    };
    let fail = |what: String| Violation {
        position: position.to_owned(),
        what,
    };
    let mut chooser = GameRng::from_seed(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut plies = 0u64;
    loop {
        check_state(id, options, game.as_ref()).map_err(&fail)?;
        if game.outcome().is_some() {
            return Ok(true);
        }
        if plies >= max_plies {
            return Err(fail(format!("still not over after {plies} moves")));
        }
        for seat in game.to_act().iter() {
            let moves = game.legal_moves(seat);
            let mv = &moves[chooser.below(moves.len() as u32) as usize];
            game.play(seat, mv)
                .map_err(|e| fail(format!("legal move {mv:?} of seat {seat} refused: {e}")))?;
            if game.outcome().is_some() {
                break;
            }
        }
        plies += 1;
    }
}

/// The promises of one state (see [`check_position`]).
fn check_state(id: &str, options: &[&str], game: &dyn AnyGame) -> Result<(), String> {
    let text = game.position();
    let again = game_from_position(id, options, &text, 0)
        .map_err(|e| format!("its own position {text:?} is refused: {e}"))?;
    if again.position() != text {
        return Err(format!(
            "position {text:?} reads back as a different state {:?}",
            again.position()
        ));
    }
    let to_act = game.to_act();
    match (game.outcome(), to_act.is_empty()) {
        (Some(_), false) => return Err(format!("over, yet {to_act:?} are to act in {text:?}")),
        (None, true) => return Err(format!("not over, yet nobody is to act in {text:?}")),
        _ => {}
    }
    for seat in to_act.iter() {
        if seat >= game.seats() {
            return Err(format!(
                "seat {seat} is to act in a {}-seat game: {text:?}",
                game.seats()
            ));
        }
        if game.legal_moves(seat).is_empty() {
            return Err(format!("seat {seat} is to act with no legal move in {text:?}"));
        }
    }
    Ok(())
}
