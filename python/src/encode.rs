//! Observations as numbers, written straight from each game's typed observation
//! into a `f32` slice (no JSON on the way): one flat vector per game, options and
//! seat count, each entry in `[0, 1]`, seen from the observing seat. The layouts
//! are those of `astragal_engine/encoding.py` (its docstrings say them entry by
//! entry; the suite checks that both give the same numbers).

use crate::actions::Actions;
use engine::Seat;
use engine::games::cuatto::{Cuatto, Kind, Spot};
use engine::games::spartan::Spartan;
use engine::games::uptick::Uptick;
use engine::games::ur::{Rules, Ur};
use engine::games::utara::Utara;

/// A game whose observations have a fixed numeric encoding.
pub trait Encode: Actions {
    /// Entries in the encoding for these options and seats.
    fn encoded_size(options: &Self::Options, seats: usize) -> usize;
    /// Writes `seat`'s observation into `out` (`encoded_size` long, zeroed).
    fn encode(&self, options: &Self::Options, seat: Seat, out: &mut [f32]);
}

/// Seats from `seat`'s point of view: itself, then the next in turn order.
fn ego(seat: Seat, seats: usize) -> impl Iterator<Item = (usize, Seat)> {
    (0..seats).map(move |k| (k, (seat + k) % seats))
}

fn flag(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

fn capped(x: f32) -> f32 {
    x.min(1.0)
}

fn clamped(x: f32) -> f32 {
    x.clamp(0.0, 1.0)
}

const UR_PHASES: [&str; 4] = ["primary", "converted", "roll", "over"];

impl Encode for Ur {
    fn encoded_size(_: &Self::Options, _: usize) -> usize {
        4 + 11 + 1 + 1 + 2 * 16 + 2 + 1 + 1
    }
    fn encode(&self, _: &Self::Options, seat: Seat, v: &mut [f32]) {
        let o = engine::Game::observation(self, seat);
        let (roll, to_move, finkel, houses, counters, pool, turn) = (4, 15, 16, 17, 49, 51, 52);
        if let Some(p) = UR_PHASES.iter().position(|p| *p == o.phase) {
            v[p] = 1.0;
        }
        v[roll + usize::from(o.roll.min(10))] = 1.0;
        v[to_move] = flag(o.to_move == seat);
        v[finkel] = flag(o.rules == Rules::Finkel);
        for (k, s) in ego(seat, 2) {
            let pieces = &o.pieces[s];
            let share = 1.0 / pieces.len() as f32;
            for &house in pieces {
                v[houses + 16 * k + usize::from(house)] += share;
            }
            v[counters + k] = capped(o.counters[s] as f32 / 50.0);
        }
        v[pool] = capped(o.pool as f32 / 50.0);
        v[turn] = capped(o.turn as f32 / 500.0);
    }
}

const UTARA_PHASES: [&str; 5] = ["block", "start", "sun", "continue", "over"];

impl Encode for Utara {
    fn encoded_size(o: &Self::Options, seats: usize) -> usize {
        usize::from(o.width) * usize::from(o.height) * 10 + 5 + 1 + 1 + seats * 8
    }
    fn encode(&self, options: &Self::Options, seat: Seat, v: &mut [f32]) {
        // Without the cell names: the sky is read typed below.
        let o = self.observation_without_sky(seat);
        let cells = usize::from(options.width) * usize::from(options.height);
        let seats = o.totals.len();
        let (phase, to_move, round, per_seat) = (cells * 10, cells * 10 + 5, cells * 10 + 6, cells * 10 + 7);
        for (cell, content) in self.sky_contents() {
            let base = cell * 10;
            match content {
                Some((face, owner)) => {
                    v[base + face] = 1.0;
                    v[base + if owner == seat { 6 } else { 7 }] = 1.0;
                }
                None => v[base + 8] = 1.0,
            }
        }
        if let Some(cell) = self.sun_cell_index() {
            v[cell * 10 + 9] = 1.0;
        }
        if let Some(p) = UTARA_PHASES.iter().position(|p| *p == o.phase) {
            v[phase + p] = 1.0;
        }
        v[to_move] = flag(o.to_move == seat);
        v[round] = f32::from(o.round[0]) / f32::from(o.round[1].max(1));
        let per_cell = 1.0 / cells as f32;
        for (k, s) in ego(seat, seats) {
            let base = per_seat + 8 * k;
            for (f, &count) in self.collected_faces(s).iter().enumerate() {
                // Added one face at a time, as the Python encoder does, so that
                // both give the very same numbers.
                for _ in 0..count {
                    v[base + f] += per_cell;
                }
            }
            v[base + 6] = clamped(o.round_points[s] as f32 / 100.0);
            v[base + 7] = clamped(o.totals[s] as f32 / 100.0);
        }
    }
}

impl Encode for Uptick {
    fn encoded_size(o: &Self::Options, _: usize) -> usize {
        usize::from(o.size) * usize::from(o.size) * 4 + 9
    }
    fn encode(&self, options: &Self::Options, seat: Seat, v: &mut [f32]) {
        // Without the dice's cell names: they are read typed below.
        let o = self.observation_without_dice(seat);
        let side = usize::from(options.size);
        let cells = side * side;
        let reserve = f32::from(options.reserve.max(1));
        let (reserves, captured, to_move, last, turn, over) = (
            cells * 4,
            cells * 4 + 2,
            cells * 4 + 4,
            cells * 4 + 5,
            cells * 4 + 7,
            cells * 4 + 8,
        );
        for (sq, owner, value, frozen) in self.board_dice() {
            let base = (usize::from(sq.rank) * side + usize::from(sq.file)) * 4;
            let mine = owner == seat;
            v[base + if mine { 0 } else { 1 }] = f32::from(value) / 6.0;
            v[base + if mine { 2 } else { 3 }] = flag(frozen);
        }
        for (k, s) in ego(seat, 2) {
            v[reserves + k] = capped(f32::from(o.reserve[s]) / reserve);
            v[captured + k] = capped(o.captured[s] as f32 / (6.0 * reserve));
        }
        v[to_move] = flag(o.to_move == seat);
        if let Some(mover) = o.last_mover {
            v[last + if mover == seat { 0 } else { 1 }] = 1.0;
        }
        v[turn] = capped(o.turn as f32 / 1000.0);
        v[over] = flag(o.over);
    }
}

impl Encode for Cuatto {
    fn encoded_size(o: &Self::Options, seats: usize) -> usize {
        seats * (usize::from(o.length) + 8) * 3 + seats + 6 + 1 + seats + 1
    }
    fn encode(&self, options: &Self::Options, seat: Seat, v: &mut [f32]) {
        // Without the checkers' spot names: they are read typed below.
        let o = self.observation_without_teams(seat);
        let length = usize::from(options.length);
        let spots = length + 8;
        let seats = o.pips.len();
        let pips = seats * spots * 3;
        let dice = pips + seats;
        let to_move = dice + 6;
        let finished = to_move + 1;
        let turn = finished + seats;
        for (k, team) in ego(seat, seats) {
            let count = self.checkers_of(team).count();
            let share = 1.0 / count.max(1) as f32;
            for (spot, kind) in self.checkers_of(team) {
                let spot = match spot {
                    Spot::Start => 0,
                    Spot::Bridge(b) => usize::from(b),
                    Spot::Board(p) => 6 + usize::from(p),
                    Spot::Off => 7 + length,
                };
                let kind = match kind {
                    Kind::Regular => 0,
                    Kind::Pin => 1,
                    Kind::Strong => 2,
                };
                v[(k * spots + spot) * 3 + kind] += share;
            }
            let most = (count * (length + 1)).max(1);
            v[pips + k] = capped(o.pips[team] as f32 / most as f32);
            v[finished + k] = flag(o.finished.contains(&team));
        }
        for &die in &o.dice {
            v[dice + usize::from(die) - 1] += 0.25;
        }
        v[to_move] = flag(o.to_move == seat);
        v[turn] = capped(o.turn as f32 / 500.0);
    }
}

const SPARTAN_PHASES: [&str; 3] = ["reroll1", "reroll2", "over"];

impl Encode for Spartan {
    fn encoded_size(_: &Self::Options, _: usize) -> usize {
        25
    }
    fn encode(&self, _: &Self::Options, seat: Seat, v: &mut [f32]) {
        let o = engine::Game::observation(self, seat);
        let (hp, mercenary, dice, decided, in_hand, resting, graveyard, turn, sudden, rolls) =
            (3, 5, 8, 14, 15, 17, 19, 21, 22, 24);
        if let Some(p) = SPARTAN_PHASES.iter().position(|p| *p == o.phase) {
            v[p] = 1.0;
        }
        for (k, s) in ego(seat, 2) {
            v[hp + k] = clamped(o.hp[s] as f32 / 10.0);
            v[in_hand + k] = f32::from(o.in_hand[s]) / 10.0;
            v[resting + k] = f32::from(o.resting[s]) / 10.0;
            v[graveyard + k] = f32::from(o.graveyard[s]) / 10.0;
        }
        v[mercenary
            + match o.mercenary {
                None => 2,
                Some(s) if s == seat => 0,
                Some(_) => 1,
            }] = 1.0;
        for &face in &o.your_dice {
            v[dice + usize::from(face) - 1] += 0.1;
        }
        v[decided] = flag(o.you_decided);
        v[turn] = capped(o.turn as f32 / 200.0);
        if let Some(winner) = o.sudden_death_winner {
            v[sudden + if winner == seat { 0 } else { 1 }] = 1.0;
        }
        v[rolls] = capped(o.sudden_death_rolls as f32 / 100.0);
    }
}
