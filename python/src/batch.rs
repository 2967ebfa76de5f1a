//! Many games of one kind stepped together in Rust, one call for all of them:
//! what a vectorized environment needs. Each game plays its own seeded dice; a
//! game that ends is replaced at once by a new one (its seed drawn from the
//! batch's seed), and the step reports the ended game's rewards beside the new
//! game's first observation.

use crate::encode::Encode;
use crate::state::{AnyState, Typed};
use engine::{GameRng, Outcome, Seat, SetupError};

/// What one call writes, flat: `rows` observations (one per game, or one per game
/// and seat), their masks, and per game its rewards per seat and how it ended.
#[derive(Default)]
pub struct Outputs {
    pub observations: Vec<f32>,
    pub masks: Vec<i8>,
    pub rewards: Vec<f32>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
    /// Per game the seat observed (one seat per game), or per game and seat
    /// whether it is to act (every seat).
    pub to_act: Vec<i64>,
}

/// A batch of any game.
pub trait AnyBatch: Send + Sync {
    fn num_envs(&self) -> usize;
    fn seats(&self) -> usize;
    fn observation_size(&self) -> usize;
    fn action_count(&self) -> usize;
    /// Whether every seat is observed and acts (parallel), or the one seat to act.
    fn every_seat(&self) -> bool;
    /// New games for every slot, their seeds drawn from `seed`.
    fn reset(&mut self, seed: u64, out: &mut Outputs);
    /// Plays `actions` (one per game, or one per game and seat) and observes.
    fn step(&mut self, actions: &[i64], out: &mut Outputs) -> Result<(), String>;
    /// The seed of each slot's current game.
    fn seeds(&self) -> Vec<u64>;
    /// A copy of slot `i`'s game as a state.
    fn state(&self, i: usize) -> Box<dyn AnyState>;
    /// A uniformly random legal action per row (0 for a seat not to act), from
    /// the batch's own generator: random play, or a baseline, without a numpy
    /// pass over every mask.
    fn sample_actions(&mut self) -> Vec<i64>;
}

pub struct Batch<G: Encode> {
    options: G::Options,
    canonical: Vec<String>,
    seats: usize,
    every_seat: bool,
    games: Vec<G>,
    seeds: Vec<u64>,
    /// Where new games' seeds come from.
    stream: GameRng,
    /// Where `sample_actions` draws from.
    sampler: GameRng,
    /// Per game and observed seat, its legal moves when last observed.
    moves: Vec<Vec<G::Move>>,
    /// The same moves' action numbers, in the same order: what an action is
    /// looked up in, without numbering every move again.
    acts: Vec<Vec<u32>>,
    obs_size: usize,
    actions: usize,
}

/// Each seat's reward: (seats beaten − seats that beat it) / (seats − 1).
fn write_rewards(outcome: &Outcome, out: &mut [f32]) {
    let n = outcome.ranks.len();
    let scale = (n.max(2) - 1) as f32;
    for (seat, r) in outcome.ranks.iter().enumerate() {
        let beat = outcome.ranks.iter().filter(|o| *o > r).count() as f32;
        let beaten = outcome.ranks.iter().filter(|o| *o < r).count() as f32;
        out[seat] = (beat - beaten) / scale;
    }
}

impl<G: Encode> Batch<G> {
    pub fn new(
        options: &[String],
        seats: Option<usize>,
        n: usize,
        every_seat: bool,
    ) -> Result<Self, SetupError> {
        let setup = engine::registry::setup::<G, String>(options, seats, None, 0)?;
        let obs_size = G::encoded_size(&setup.options, setup.seats);
        let actions = G::action_count(&setup.options);
        let rows = if every_seat { n * setup.seats } else { n };
        Ok(Batch {
            canonical: setup.values.canonical(),
            seats: setup.seats,
            every_seat,
            games: Vec::with_capacity(n),
            seeds: vec![0; n],
            stream: GameRng::from_seed(0),
            sampler: GameRng::from_seed(1),
            moves: (0..rows).map(|_| Vec::new()).collect(),
            acts: (0..rows).map(|_| Vec::new()).collect(),
            obs_size,
            actions,
            options: setup.options,
        })
    }

    fn rows_per_game(&self) -> usize {
        if self.every_seat { self.seats } else { 1 }
    }

    fn new_game(&mut self, i: usize) -> G {
        let seed = self.stream.next_u64();
        self.seeds[i] = seed;
        G::new(&self.options, self.seats, GameRng::from_seed(seed))
    }

    fn prepare(&self, out: &mut Outputs) {
        let n = self.games.len();
        let rows = n * self.rows_per_game();
        // Observations and masks are zeroed row by row as `observe` writes them
        // (rows in order): a row is then still in cache when written, where
        // zeroing them all first (a megabyte of Uptick masks) left it cold.
        out.observations.clear();
        out.observations.reserve(rows * self.obs_size);
        out.masks.clear();
        out.masks.reserve(rows * self.actions);
        out.rewards.clear();
        out.rewards.resize(n * self.seats, 0.0);
        out.terminated.clear();
        out.terminated.resize(n, false);
        out.truncated.clear();
        out.truncated.resize(n, false);
        out.to_act.clear();
        out.to_act.resize(rows, 0);
    }

    /// Observes game `i`: its row(s) of observations and masks, and the legal
    /// moves an action will be checked against.
    fn observe(&mut self, i: usize, out: &mut Outputs) {
        let game = &self.games[i];
        let to_act = game.to_act();
        let per = self.rows_per_game();
        for k in 0..per {
            let row = i * per + k;
            let seat: Seat = if self.every_seat {
                k
            } else {
                to_act.first().unwrap_or(0)
            };
            debug_assert_eq!(
                out.observations.len(),
                row * self.obs_size,
                "rows are observed in order"
            );
            out.observations.resize((row + 1) * self.obs_size, 0.0);
            let obs = &mut out.observations[row * self.obs_size..];
            game.encode(&self.options, seat, obs);
            let moves = &mut self.moves[row];
            let acts = &mut self.acts[row];
            moves.clear();
            acts.clear();
            if to_act.contains(seat) {
                game.legal_moves(seat, moves);
            }
            let options = &self.options;
            acts.extend(moves.iter().map(|m| G::action_of(options, m) as u32));
            out.masks.resize((row + 1) * self.actions, 0);
            let mask = &mut out.masks[row * self.actions..];
            for &a in acts.iter() {
                mask[a as usize] = 1;
            }
            out.to_act[row] = if self.every_seat {
                i64::from(to_act.contains(seat))
            } else {
                seat as i64
            };
        }
    }

    /// The index in `row`'s legal moves of `action`, or why it is refused.
    fn find(&self, i: usize, row: usize, seat: Seat, action: i64) -> Result<usize, String> {
        let found = u32::try_from(action)
            .ok()
            .and_then(|a| self.acts[row].iter().position(|&m| m == a));
        found.ok_or_else(|| {
            format!(
                "game {i}: action {action} is not a legal move of seat {seat} (see its action mask; {} legal)",
                self.moves[row].len()
            )
        })
    }
}

impl<G: Encode> AnyBatch for Batch<G> {
    fn num_envs(&self) -> usize {
        self.seeds.len()
    }
    fn seats(&self) -> usize {
        self.seats
    }
    fn observation_size(&self) -> usize {
        self.obs_size
    }
    fn action_count(&self) -> usize {
        self.actions
    }
    fn every_seat(&self) -> bool {
        self.every_seat
    }
    fn reset(&mut self, seed: u64, out: &mut Outputs) {
        self.stream = GameRng::from_seed(seed);
        self.sampler = GameRng::from_rng(&mut self.stream);
        let n = self.seeds.len();
        self.games.clear();
        for i in 0..n {
            let game = self.new_game(i);
            self.games.push(game);
        }
        self.prepare(out);
        for i in 0..n {
            self.observe(i, out);
        }
    }
    fn step(&mut self, actions: &[i64], out: &mut Outputs) -> Result<(), String> {
        let n = self.games.len();
        let per = self.rows_per_game();
        if actions.len() != n * per {
            return Err(format!(
                "{} actions for {n} games: expected {}",
                actions.len(),
                if self.every_seat {
                    format!("{} (one per game and seat)", n * per)
                } else {
                    format!("{n} (one per game)")
                }
            ));
        }
        // Every action is checked before any is played: a refused step changes nothing.
        let mut chosen = Vec::with_capacity(n * per);
        for i in 0..n {
            let to_act = self.games[i].to_act();
            for k in 0..per {
                let row = i * per + k;
                let seat = if self.every_seat {
                    k
                } else {
                    to_act.first().unwrap_or(0)
                };
                if to_act.contains(seat) {
                    chosen.push(Some((seat, self.find(i, row, seat, actions[row])?)));
                } else {
                    chosen.push(None);
                }
            }
        }
        self.prepare(out);
        for i in 0..n {
            for k in 0..per {
                if let Some((seat, j)) = chosen[i * per + k] {
                    let mv = self.moves[i * per + k][j].clone();
                    if let Err(e) = self.games[i].play(seat, &mv) {
                        return Err(format!("game {i}: {e}"));
                    }
                }
            }
            if self.games[i].to_act().is_empty() {
                if let Some(outcome) = self.games[i].outcome() {
                    write_rewards(&outcome, &mut out.rewards[i * self.seats..(i + 1) * self.seats]);
                    if outcome.capped {
                        out.truncated[i] = true;
                    } else {
                        out.terminated[i] = true;
                    }
                }
                self.games[i] = self.new_game(i);
            }
            self.observe(i, out);
        }
        Ok(())
    }
    fn seeds(&self) -> Vec<u64> {
        self.seeds.clone()
    }
    fn sample_actions(&mut self) -> Vec<i64> {
        let sampler = &mut self.sampler;
        self.acts
            .iter()
            .map(|acts| match acts.len() {
                0 => 0,
                n => i64::from(acts[sampler.below(n as u32) as usize]),
            })
            .collect()
    }
    fn state(&self, i: usize) -> Box<dyn AnyState> {
        Box::new(Typed::<G>::from_game(
            self.games[i].clone(),
            self.options.clone(),
            self.canonical.clone(),
        ))
    }
}
