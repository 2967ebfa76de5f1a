//! Each game's moves as numbers: a fixed action space per game and options, as
//! PettingZoo's `Discrete` spaces and OpenSpiel's distinct actions need. A legal
//! move list is sorted by these numbers; the tables are in the package's README.

use engine::Game;
use engine::games::cuatto::{Cuatto, CuattoMove, Kind, Spot};
use engine::games::spartan::{Spartan, SpartanMove};
use engine::games::uptick::{Uptick, UptickMove};
use engine::games::ur::{BIRDS, OFF, Ur, UrMove};
use engine::games::utara::{Utara, UtaraMove};
use std::sync::OnceLock;

/// A game's moves as numbers `0..action_count`, one number per move.
pub trait Actions: Game {
    /// How many numbers the game with these options uses.
    fn action_count(options: &Self::Options) -> usize;
    /// The number of a move.
    fn action_of(options: &Self::Options, mv: &Self::Move) -> usize;
    /// The widest range of one draw of chance (0 for a game without chance).
    fn max_chance(options: &Self::Options) -> u32;
}

const HOUSES: usize = OFF as usize + 1;

impl Actions for Ur {
    fn action_count(_: &Self::Options) -> usize {
        1 + BIRDS.len() * HOUSES + HOUSES * HOUSES
    }
    fn action_of(_: &Self::Options, mv: &UrMove) -> usize {
        match *mv {
            UrMove::Gamble => 0,
            UrMove::Bird { bird, to } => 1 + usize::from(bird) * HOUSES + usize::from(to),
            UrMove::Step { from, to } => {
                1 + BIRDS.len() * HOUSES + usize::from(from) * HOUSES + usize::from(to)
            }
        }
    }
    fn max_chance(_: &Self::Options) -> u32 {
        // Four two-sided astragals are one draw of 16.
        16
    }
}

impl Actions for Utara {
    fn action_count(o: &Self::Options) -> usize {
        2 * usize::from(o.width) * usize::from(o.height) + 3
    }
    fn action_of(o: &Self::Options, mv: &UtaraMove) -> usize {
        let cells = usize::from(o.width) * usize::from(o.height);
        let cell = |sq: engine::Square| usize::from(sq.rank) * usize::from(o.width) + usize::from(sq.file);
        match *mv {
            UtaraMove::Start(sq) => cell(sq),
            UtaraMove::Block(sq) => cells + cell(sq),
            UtaraMove::East => 2 * cells,
            UtaraMove::West => 2 * cells + 1,
            UtaraMove::Stop => 2 * cells + 2,
        }
    }
    fn max_chance(o: &Self::Options) -> u32 {
        // A sky cell, or a die.
        (u32::from(o.width) * u32::from(o.height)).max(6)
    }
}

impl Actions for Uptick {
    fn action_count(o: &Self::Options) -> usize {
        let cells = usize::from(o.size) * usize::from(o.size);
        6 * cells + cells * cells
    }
    fn action_of(o: &Self::Options, mv: &UptickMove) -> usize {
        let cells = usize::from(o.size) * usize::from(o.size);
        let cell = |sq: engine::Square| usize::from(sq.rank) * usize::from(o.size) + usize::from(sq.file);
        match *mv {
            UptickMove::Place { cell: sq, value } => cell(sq) * 6 + usize::from(value - 1),
            UptickMove::Step { from, to } => 6 * cells + cell(from) * cells + cell(to),
        }
    }
    fn max_chance(_: &Self::Options) -> u32 {
        0
    }
}

fn cuatto_spots(length: u8) -> usize {
    // Start, the bridge's six slots, the board, off.
    usize::from(length) + 8
}

impl Actions for Cuatto {
    fn action_count(o: &Self::Options) -> usize {
        6 * cuatto_spots(o.length) * 3
    }
    fn action_of(o: &Self::Options, mv: &CuattoMove) -> usize {
        let spot = match mv.from {
            Spot::Start => 0,
            Spot::Bridge(b) => usize::from(b),
            Spot::Board(p) => 6 + usize::from(p),
            Spot::Off => 7 + usize::from(o.length),
        };
        let kind = match mv.kind {
            Kind::Regular => 0,
            Kind::Pin => 1,
            Kind::Strong => 2,
        };
        ((usize::from(mv.die) - 1) * cuatto_spots(o.length) + spot) * 3 + kind
    }
    fn max_chance(_: &Self::Options) -> u32 {
        6
    }
}

/// Spartan's rerolls, counts of faces two to six with at most ten dice in all,
/// numbered in order of their counts read as digits: 3003 numbers, not 11⁵.
fn spartan_numbers() -> &'static [u16] {
    static TABLE: OnceLock<Vec<u16>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let dice = usize::from(engine::games::spartan::DICE);
        let base = dice + 1;
        let mut table = vec![u16::MAX; base.pow(5)];
        let mut next = 0u16;
        for (key, slot) in table.iter_mut().enumerate() {
            let mut rest = key;
            let mut sum = 0;
            for _ in 0..5 {
                sum += rest % base;
                rest /= base;
            }
            if sum <= dice {
                *slot = next;
                next += 1;
            }
        }
        table
    })
}

fn spartan_key(mv: &SpartanMove) -> usize {
    let base = usize::from(engine::games::spartan::DICE) + 1;
    (2..=6)
        .rev()
        .fold(0, |key, face| key * base + usize::from(mv.reroll[face]))
}

impl Actions for Spartan {
    fn action_count(_: &Self::Options) -> usize {
        static COUNT: OnceLock<usize> = OnceLock::new();
        *COUNT.get_or_init(|| spartan_numbers().iter().filter(|n| **n != u16::MAX).count())
    }
    fn action_of(_: &Self::Options, mv: &SpartanMove) -> usize {
        usize::from(spartan_numbers()[spartan_key(mv)])
    }
    fn max_chance(_: &Self::Options) -> u32 {
        6
    }
}
