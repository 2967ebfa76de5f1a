//! Random playouts: the benchmark's workload and the generic tests' driver.

use crate::game::Game;
use crate::rng::GameRng;

/// Counts from one or more playouts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlayoutStats {
    /// Games played to the end.
    pub games: u64,
    /// Decisions made (one per move played by one seat).
    pub decisions: u64,
}

/// Plays `game` to the end with uniformly random legal moves drawn from `chooser`.
/// `moves` is a scratch buffer, reused to keep the loop allocation-free.
///
/// # Panics
/// If a move the game listed as legal is refused, or a seat to act has no move:
/// both are engine bugs, and this is what the tests look for.
pub fn random_playout<G: Game>(game: &mut G, chooser: &mut GameRng, moves: &mut Vec<G::Move>) -> u64 {
    let mut decisions = 0;
    loop {
        let to_act = game.to_act();
        if to_act.is_empty() {
            return decisions;
        }
        for seat in to_act.iter() {
            moves.clear();
            game.legal_moves(seat, moves);
            assert!(
                !moves.is_empty(),
                "seat {seat} to act with no legal move in {}",
                game.position()
            );
            let mv = &moves[chooser.below(moves.len() as u32) as usize];
            if let Err(e) = game.play(seat, mv) {
                panic!("legal move {mv} refused: {e} in {}", game.position());
            }
            decisions += 1;
        }
    }
}
