//! Chance as explicit outcomes: a game whose dice are given from outside, one
//! uniform draw at a time, as OpenSpiel's chance nodes and tree searches want them.
//!
//! Every game draws its chance from its [`GameRng`] as dice, coins and uniform
//! integers, each uniform over a range it names at the time of the draw. So a step
//! (the setup, or a seat's move) is played with a scripted generator
//! ([`GameRng::scripted`]) holding the outcomes chosen so far; when the step asks
//! for one more draw, the step waits at a chance node whose outcomes are that
//! draw's range, each equally likely. The probabilities are exact for every game
//! and the games know nothing of it; a step is played again for each of its draws,
//! which costs little beside a search.
//!
//! Given the draws the seeded generator would have made, a game plays exactly as
//! it does from its seed (tested in `tests` below).

use crate::game::{Game, PlayError};
use crate::rng::GameRng;
use crate::seat::{Seat, SeatSet};

/// The step that waits for chance.
#[derive(Debug, Clone, PartialEq)]
enum Step<G: Game> {
    /// Setting up a new game.
    Setup { options: G::Options, seats: usize },
    /// A seat's move.
    Move { seat: Seat, mv: G::Move },
}

/// A game whose chance is decided by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplicitChance<G: Game> {
    /// The state after the last finished step.
    state: G,
    /// The step that waits for chance, the outcomes chosen for it and the range of
    /// the next draw.
    pending: Option<(Step<G>, Vec<u32>, u32)>,
}

/// Why a chance outcome was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChanceError {
    /// No step waits for chance.
    #[error("no chance to decide now: a seat is to act or the game is over")]
    NotChance,
    /// The outcome is outside the draw's range.
    #[error("chance outcome {outcome} is outside 0..{range}")]
    OutOfRange {
        /// The outcome given.
        outcome: u32,
        /// The draw's range.
        range: u32,
    },
}

/// A state's generator, scripted with `values`, keeping its stream for draws past
/// them (which only a step that asks for more makes; that result is thrown away).
fn script<G: Game>(state: &mut G, values: &[u32]) {
    if let Some(rng) = state.rng_mut() {
        let stream = std::mem::replace(rng, GameRng::from_seed(0));
        *rng = GameRng::scripted(values, stream);
    }
}

fn wanted<G: Game>(state: &mut G) -> Option<u32> {
    state.rng_mut().and_then(|rng| rng.wanted())
}

impl<G: Game> ExplicitChance<G> {
    /// A new game; when its setup throws dice, it starts at a chance node.
    pub fn new(options: &G::Options, seats: usize) -> ExplicitChance<G> {
        let step = Step::Setup {
            options: options.clone(),
            seats,
        };
        let (state, range) = Self::run(None, &step, &[]);
        ExplicitChance {
            state,
            pending: range.map(|n| (step, Vec::new(), n)),
        }
    }

    /// A game from a finished state (read from a position, say): its next steps'
    /// chance is given from outside.
    pub fn from_state(state: G) -> ExplicitChance<G> {
        ExplicitChance { state, pending: None }
    }

    /// Plays `step` from `before` with the chance `values`: the state and, when the
    /// step wants more chance than given, the next draw's range.
    fn run(before: Option<&G>, step: &Step<G>, values: &[u32]) -> (G, Option<u32>) {
        match (step, before) {
            (Step::Setup { options, seats }, _) => {
                let mut state = G::new(options, *seats, GameRng::scripted(values, GameRng::from_seed(0)));
                let range = wanted(&mut state);
                (state, range)
            }
            (Step::Move { seat, mv }, Some(before)) => {
                let mut state = before.clone();
                script(&mut state, values);
                // The move was legal when it was first played, and chance only
                // decides what follows it.
                let _ = state.play(*seat, mv);
                let range = wanted(&mut state);
                (state, range)
            }
            (Step::Move { .. }, None) => unreachable!("a move is played from a state"),
        }
    }

    /// The range of the draw that waits, when the game is at a chance node: its
    /// outcomes are `0..range`, each with probability `1 / range`.
    pub fn chance_range(&self) -> Option<u32> {
        self.pending.as_ref().map(|(_, _, n)| *n)
    }

    /// The outcomes chosen so far for the step that waits.
    pub fn chance_so_far(&self) -> &[u32] {
        self.pending.as_ref().map_or(&[], |(_, v, _)| v)
    }

    /// Who must decide: nobody while chance is to decide.
    pub fn to_act(&self) -> SeatSet {
        if self.pending.is_some() {
            SeatSet::EMPTY
        } else {
            self.state.to_act()
        }
    }

    /// The state after the last finished step (before the step that waits for
    /// chance, if one does).
    pub fn state(&self) -> &G {
        &self.state
    }

    /// Plays a seat's move; if it throws dice, the game waits at a chance node.
    ///
    /// # Errors
    /// As [`Game::play`]; also [`PlayError::NotToAct`] while chance is to decide.
    pub fn play(&mut self, seat: Seat, mv: &G::Move) -> Result<(), PlayError> {
        if self.pending.is_some() {
            return Err(PlayError::NotToAct {
                seat,
                to_act: SeatSet::EMPTY,
            });
        }
        let mut next = self.state.clone();
        script(&mut next, &[]);
        next.play(seat, mv)?;
        match wanted(&mut next) {
            Some(n) => {
                self.pending = Some((Step::Move { seat, mv: mv.clone() }, Vec::new(), n));
            }
            None => self.state = next,
        }
        Ok(())
    }

    /// Decides the draw that waits.
    ///
    /// # Errors
    /// No draw waits, or `outcome` is outside its range.
    pub fn apply_chance(&mut self, outcome: u32) -> Result<(), ChanceError> {
        let Some((step, mut values, range)) = self.pending.take() else {
            return Err(ChanceError::NotChance);
        };
        if outcome >= range {
            self.pending = Some((step, values, range));
            return Err(ChanceError::OutOfRange { outcome, range });
        }
        values.push(outcome);
        let before = matches!(step, Step::Move { .. }).then_some(&self.state);
        let (state, next) = Self::run(before, &step, &values);
        match next {
            Some(n) => self.pending = Some((step, values, n)),
            None => self.state = state,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GAME_IDS;
    use crate::registry::{GameVisitor, with_game};

    /// Plays seeded games, learning the draws each step makes from the stream, and
    /// the same games with those draws given as explicit chance: every finished
    /// step gives the same state.
    struct SameAsSeeded;

    impl GameVisitor for SameAsSeeded {
        type Output = usize;

        fn visit<G: Game>(self) -> usize {
            let (options, _, _) = crate::registry::resolve_setup::<G, &str>(&[], None).unwrap();
            let mut chance_nodes = 0;
            for seed in 0..12u64 {
                let mut pick = GameRng::from_seed(1000 + seed);
                let mut seeded = G::new(
                    &options,
                    G::DEFAULT_SEATS,
                    GameRng::scripted(&[], GameRng::from_seed(seed)),
                );
                let plain = G::new(&options, G::DEFAULT_SEATS, GameRng::from_seed(seed));
                assert_eq!(seeded.position_without_rng(), plain.position_without_rng());
                let mut explicit = ExplicitChance::<G>::new(&options, G::DEFAULT_SEATS);
                let mut draws = seeded
                    .rng_mut()
                    .map(|r| r.drawn_past_script().to_vec())
                    .unwrap_or_default();
                let mut moves = Vec::new();
                for ply in 0.. {
                    for d in draws.drain(..) {
                        let range = explicit.chance_range().expect("a draw waits");
                        assert!(d < range, "{} draw {d} of {range}", G::ID);
                        explicit.apply_chance(d).unwrap();
                        chance_nodes += 1;
                    }
                    assert_eq!(explicit.chance_range(), None, "{} ply {ply}", G::ID);
                    assert_eq!(
                        explicit.state().position_without_rng(),
                        seeded.position_without_rng(),
                        "{} seed {seed} ply {ply}",
                        G::ID
                    );
                    assert_eq!(explicit.to_act(), seeded.to_act());
                    let Some(seat) = seeded.to_act().first() else {
                        break;
                    };
                    moves.clear();
                    seeded.legal_moves(seat, &mut moves);
                    let mv = moves[pick.below(moves.len() as u32) as usize].clone();
                    script(&mut seeded, &[]);
                    seeded.play(seat, &mv).unwrap();
                    draws = seeded
                        .rng_mut()
                        .map(|r| r.drawn_past_script().to_vec())
                        .unwrap_or_default();
                    explicit.play(seat, &mv).unwrap();
                    if !draws.is_empty() {
                        assert_eq!(explicit.to_act(), SeatSet::EMPTY);
                        assert!(explicit.play(seat, &mv).is_err(), "no move while chance waits");
                    }
                }
            }
            chance_nodes
        }
    }

    #[test]
    fn explicit_chance_given_the_seeded_draws_plays_the_seeded_game() {
        for id in GAME_IDS {
            let nodes = with_game(id, SameAsSeeded).unwrap();
            if crate::game_info(id).unwrap().nature.chance {
                assert!(nodes > 0, "{id} threw no dice");
            } else {
                assert_eq!(nodes, 0, "{id}");
            }
        }
    }

    #[test]
    fn an_outcome_out_of_range_is_refused_and_changes_nothing() {
        use crate::games::cuatto::{Cuatto, CuattoOptions};
        let mut game = ExplicitChance::<Cuatto>::new(&CuattoOptions::default(), 2);
        let range = game.chance_range().expect("the first roll waits");
        assert_eq!(range, 6);
        let before = game.clone();
        assert_eq!(
            game.apply_chance(6),
            Err(ChanceError::OutOfRange { outcome: 6, range: 6 })
        );
        assert_eq!(game, before);
        game.apply_chance(5).unwrap();
        game.apply_chance(0).unwrap();
        assert_eq!(game.chance_range(), None);
        assert_eq!(game.apply_chance(0), Err(ChanceError::NotChance));
    }
}
