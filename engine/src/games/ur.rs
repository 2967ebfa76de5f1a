//! The Game of Ur, as read from the Babylonian tablet by I. Finkel (`rules=tablet`,
//! the default), and the common modern "Royal Game of Ur" (`rules=finkel`).
//!
//! Houses are numbered along each player's route: 1–4 are the player's own, 5–12
//! are shared with the opponent (house `h` of one player is house `h` of the other),
//! 13–14 are the player's own again. In a piece list, 0 means "not on the board yet"
//! and 15 means "borne off". Rosettes are houses 4, 8 and 14.
//!
//! Move notation:
//! - tablet: `gamble`, or `<bird>:<house>` where the bird is `swallow`, `storm`,
//!   `raven`, `rooster` or `eagle` and the house is where it lands (`off` = 15);
//!   a launch names the entry house, e.g. `swallow:3`, `eagle:10`;
//! - finkel: `<from>-<to>`, e.g. `0-3` (enter a piece on house 3), `12-off`.
//!
//! See `docs/rules/ur.md` for the rules in full.

use crate::game::{Game, Nature, Outcome, ParseMoveError, PlayError, Presentation};
use crate::notation::{Fields, ParsePositionError, invalid, join};
use crate::options::{OptionError, OptionKind, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{Seat, SeatSet};
use serde::Serialize;
use std::fmt;

/// Names of the five birds, in piece order.
pub const BIRDS: [&str; 5] = ["swallow", "storm", "raven", "rooster", "eagle"];
/// The roll that launches each bird.
pub const LAUNCH_ROLL: [u8; 5] = [2, 5, 6, 7, 10];
/// The house each bird enters on (the Swallow chooses 1, 2 or 3).
pub const ENTRY_HOUSE: [u8; 5] = [0, 5, 6, 7, 10];
/// Counters a bird collects on a rosette, and pays for each rosette it passes.
pub const ROSETTE_VALUE: [i64; 5] = [3, 4, 4, 4, 5];
/// The house number of a piece that has been borne off.
pub const OFF: u8 = 15;
const MAX_PIECES: usize = 7;
/// Counters in play under tablet rules: 25 each, 10 of them in the pool at the start.
const TOTAL_COUNTERS: i64 = 50;

fn is_rosette(house: u8) -> bool {
    matches!(house, 4 | 8 | 14)
}

fn is_shared(house: u8) -> bool {
    (5..=12).contains(&house)
}

/// The tablet's conversion of a primary roll after a "yes".
pub fn convert(primary: u8) -> u8 {
    match primary {
        1 => 5,
        2 => 6,
        3 => 7,
        _ => 10,
    }
}

/// Which rules are played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rules {
    /// Five birds, astragals, counters and the pool.
    Tablet,
    /// Seven pieces, four binary dice, extra roll on rosettes.
    Finkel,
}

/// How the 1–4 astragal falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Astragal {
    /// Each face 1/4.
    Uniform,
    /// A real bone: 0.1 / 0.4 / 0.4 / 0.1 for 1 / 2 / 3 / 4.
    Bone,
}

/// Options of `ur`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrOptions {
    /// Rule set.
    pub rules: Rules,
    /// The primary astragal's odds (tablet rules).
    pub astragal: Astragal,
    /// Turns after which the game stops and is decided by score.
    pub max_turns: u32,
}

impl Default for UrOptions {
    fn default() -> Self {
        UrOptions {
            rules: Rules::Tablet,
            astragal: Astragal::Uniform,
            max_turns: 1000,
        }
    }
}

const SPECS: &[OptionSpec] = &[
    OptionSpec {
        name: "rules",
        default: "tablet",
        kind: OptionKind::Choice(&["tablet", "finkel"]),
        help: "tablet: Finkel's reading of the Babylonian tablet (birds, astragals, counters); finkel: the common Royal Game of Ur",
    },
    OptionSpec {
        name: "astragal",
        default: "uniform",
        kind: OptionKind::Choice(&["uniform", "bone"]),
        help: "odds of the 1-4 astragal: uniform, or bone (0.1/0.4/0.4/0.1)",
    },
    OptionSpec {
        name: "max_turns",
        default: "1000",
        kind: OptionKind::Int {
            min: 1,
            max: 1_000_000,
        },
        help: "turns after which the game ends; more counters (finkel: more pieces off) wins",
    },
];

/// What must happen next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Tablet: the primary roll is known; play it or gamble.
    Primary(u8),
    /// Tablet: the gamble said yes; the converted roll must be played.
    Converted(u8),
    /// Finkel: the dice show this (1–4); a piece must move.
    Roll(u8),
    /// The game has ended.
    Over,
}

/// A move of `ur`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrMove {
    /// Tablet: throw the yes/no astragal instead of playing the primary roll.
    Gamble,
    /// Tablet: move (or launch) a bird to a house (15 = off).
    Bird {
        /// Index into [`BIRDS`].
        bird: u8,
        /// Landing house.
        to: u8,
    },
    /// Finkel: move the piece on house `from` (0 = enter a new piece) to `to`.
    Step {
        /// Starting house.
        from: u8,
        /// Landing house (15 = off).
        to: u8,
    },
}

fn house_text(h: u8) -> String {
    if h == OFF { "off".to_owned() } else { h.to_string() }
}

impl fmt::Display for UrMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            UrMove::Gamble => f.write_str("gamble"),
            UrMove::Bird { bird, to } => write!(f, "{}:{}", BIRDS[bird as usize], house_text(to)),
            UrMove::Step { from, to } => write!(f, "{from}-{}", house_text(to)),
        }
    }
}

fn parse_house(text: &str, whole: &str) -> Result<u8, ParseMoveError> {
    if text == "off" {
        return Ok(OFF);
    }
    match text.parse::<u8>() {
        Ok(h) if h <= OFF => Ok(h),
        _ => Err(ParseMoveError::new(whole, "a house is 0 to 14, or off")),
    }
}

/// A state of `ur`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ur {
    options: UrOptions,
    pieces: [[u8; MAX_PIECES]; 2],
    counters: [i64; 2],
    pool: i64,
    to_move: u8,
    phase: Phase,
    turn: u32,
    rng: GameRng,
}

/// What a seat sees of `ur`: everything (no hidden information), but the RNG.
#[derive(Debug, Clone, Serialize)]
pub struct UrObservation {
    /// The observing seat.
    pub seat: Seat,
    /// `tablet` or `finkel`.
    pub rules: Rules,
    /// Whose turn it is.
    pub to_move: Seat,
    /// `primary`, `converted`, `roll` or `over`.
    pub phase: &'static str,
    /// The roll to be played (0 when over).
    pub roll: u8,
    /// Each seat's pieces as houses (0 = not yet on the board, 15 = borne off);
    /// in tablet rules in bird order: swallow, storm, raven, rooster, eagle.
    pub pieces: [Vec<u8>; 2],
    /// Counters held (tablet rules).
    pub counters: [i64; 2],
    /// Counters in the pool (tablet rules).
    pub pool: i64,
    /// The current turn, counted from 1.
    pub turn: u32,
}

impl Ur {
    fn n_pieces(&self) -> usize {
        match self.options.rules {
            Rules::Tablet => 5,
            Rules::Finkel => 7,
        }
    }

    fn own(&self, p: usize) -> &[u8] {
        &self.pieces[p][..self.n_pieces()]
    }

    /// The options of this game.
    pub fn options(&self) -> &UrOptions {
        &self.options
    }

    /// What must happen next.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Counters held by each seat, and the pool.
    pub fn counters(&self) -> ([i64; 2], i64) {
        (self.counters, self.pool)
    }

    /// The current turn, counted from 1.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// Houses of `seat`'s pieces.
    pub fn pieces(&self, seat: Seat) -> &[u8] {
        self.own(seat)
    }

    fn primary_roll(&mut self) -> u8 {
        match self.options.astragal {
            Astragal::Uniform => self.rng.die(4),
            Astragal::Bone => match self.rng.below(10) {
                0 => 1,
                1..=4 => 2,
                5..=8 => 3,
                _ => 4,
            },
        }
    }

    fn throw_for_start(&mut self) -> u8 {
        let primary = self.primary_roll();
        if self.rng.coin() {
            convert(primary)
        } else {
            primary
        }
    }

    /// Whether seat `p` may land on house `to` (1–14): not on its own piece, not on
    /// an occupied rosette.
    fn can_land(&self, p: usize, to: u8) -> bool {
        if self.own(p).contains(&to) {
            return false;
        }
        !(is_rosette(to) && is_shared(to) && self.own(1 - p).contains(&to))
    }

    /// Calls `f` with each legal move of the side to move for roll `v`, in order;
    /// stops early when `f` returns false.
    fn each_move(&self, v: u8, mut f: impl FnMut(UrMove) -> bool) {
        let p = self.to_move as usize;
        match self.options.rules {
            Rules::Tablet => {
                for (i, &h) in self.own(p).iter().enumerate() {
                    let bird = i as u8;
                    if h == 0 {
                        if LAUNCH_ROLL[i] != v {
                            continue;
                        }
                        let targets: &[u8] = if i == 0 { &[1, 2, 3] } else { &ENTRY_HOUSE[i..=i] };
                        for &to in targets {
                            if self.can_land(p, to) && !f(UrMove::Bird { bird, to }) {
                                return;
                            }
                        }
                    } else if h < OFF {
                        let to = h + v;
                        if (to == OFF || (to < OFF && self.can_land(p, to))) && !f(UrMove::Bird { bird, to })
                        {
                            return;
                        }
                    }
                }
            }
            Rules::Finkel => {
                let mut last = u8::MAX;
                let mut froms = [0u8; MAX_PIECES];
                froms.copy_from_slice(&self.pieces[p]);
                froms.sort_unstable();
                for from in froms {
                    if from == last || from == OFF {
                        continue;
                    }
                    last = from;
                    let to = from + v;
                    if (to == OFF || (to < OFF && self.can_land(p, to))) && !f(UrMove::Step { from, to }) {
                        return;
                    }
                }
            }
        }
    }

    fn has_move(&self, v: u8) -> bool {
        let mut any = false;
        self.each_move(v, |_| {
            any = true;
            false
        });
        any
    }

    fn is_move_legal(&self, v: u8, mv: UrMove) -> bool {
        let mut found = false;
        self.each_move(v, |m| {
            found = m == mv;
            !found
        });
        found
    }

    /// Starts turns from `player` until one holds a decision or the game ends.
    /// With `extra_roll` the first roll continues `player`'s turn (a Finkel
    /// rosette): a turn is all of a player's consecutive rolls, so it neither
    /// counts as a new turn nor meets the cap.
    fn start_turn(&mut self, mut player: u8, mut extra_roll: bool) {
        loop {
            if !extra_roll {
                if self.turn >= self.options.max_turns {
                    self.phase = Phase::Over;
                    return;
                }
                self.turn += 1;
            }
            extra_roll = false;
            self.to_move = player;
            match self.options.rules {
                Rules::Tablet => {
                    let r = self.primary_roll();
                    if self.has_move(r) {
                        self.phase = Phase::Primary(r);
                        return;
                    }
                    // No move with the primary roll: the gamble is forced.
                    if self.rng.coin() && self.has_move(convert(r)) {
                        self.phase = Phase::Converted(convert(r));
                        return;
                    }
                }
                Rules::Finkel => {
                    let r = self.rng.below(16).count_ones() as u8;
                    if r > 0 && self.has_move(r) {
                        self.phase = Phase::Roll(r);
                        return;
                    }
                }
            }
            player ^= 1;
        }
    }

    fn finished(&self, p: usize) -> bool {
        self.own(p).iter().all(|&h| h == OFF)
    }

    fn apply_move(&mut self, mv: UrMove) {
        let p = self.to_move as usize;
        let (idx, from, to) = match mv {
            UrMove::Bird { bird, to } => (bird as usize, self.pieces[p][bird as usize], to),
            UrMove::Step { from, to } => {
                let idx = self.pieces[p].iter().position(|&h| h == from).unwrap_or(0);
                (idx, from, to)
            }
            UrMove::Gamble => unreachable!("gamble is handled by play"),
        };
        if is_shared(to) {
            for h in &mut self.pieces[1 - p] {
                if *h == to {
                    *h = 0;
                }
            }
        }
        self.pieces[p][idx] = to;
        let mut again = false;
        match self.options.rules {
            Rules::Tablet => {
                // Launches exchange nothing; moves collect on a rosette or pay for
                // every rosette passed over.
                if from != 0 {
                    let value = ROSETTE_VALUE[idx];
                    if is_rosette(to) {
                        let gain = value.min(self.pool);
                        self.pool -= gain;
                        self.counters[p] += gain;
                    } else {
                        let passed = [4u8, 8, 14].iter().filter(|&&r| from < r && r < to).count() as i64;
                        let pay = (value * passed).min(self.counters[p]);
                        self.counters[p] -= pay;
                        self.pool += pay;
                    }
                }
            }
            Rules::Finkel => {
                // Finkel pieces are interchangeable: keep both lists sorted so equal
                // positions are equal states.
                self.pieces[0].sort_unstable();
                self.pieces[1].sort_unstable();
                again = is_rosette(to);
            }
        }
        if self.finished(p) {
            if self.options.rules == Rules::Tablet {
                self.counters[p] += self.pool;
                self.pool = 0;
            }
            self.phase = Phase::Over;
        } else {
            self.start_turn(if again { p as u8 } else { 1 - p as u8 }, again);
        }
    }

    fn scores(&self) -> [i64; 2] {
        match self.options.rules {
            Rules::Tablet => self.counters,
            Rules::Finkel => [0, 1].map(|p| self.own(p).iter().filter(|&&h| h == OFF).count() as i64),
        }
    }
}

impl Game for Ur {
    type Move = UrMove;
    type Options = UrOptions;
    type Observation = UrObservation;

    const ID: &'static str = "ur";
    const NAME: &'static str = "Game of Ur (Babylonian tablet rules)";
    const SEATS: std::ops::RangeInclusive<usize> = 2..=2;
    const DEFAULT_SEATS: usize = 2;
    const NATURE: Nature = Nature {
        chance: true,
        simultaneous: false,
        hidden_information: false,
    };
    const PRESENTATION: Presentation = Presentation {
        legend: "Board: [*] a rosette, [.] an empty house. Seat 0's pieces are upper case, seat 1's lower case.\n\
                 Tablet rules: S swallow, T storm, R raven, O rooster, E eagle (moves: bird:house, e.g. swallow:4).\n\
                 Finkel rules: X a piece (moves: from-to). Houses 1-4 and 13-14 are your own row, 5-12 the shared row.\n\
                 `gamble` stakes counters on another throw (tablet rules).",
        score_unit: " (counters, or pieces home)",
        seat_mark: Presentation::letter_case,
        events_in_words: ur_events,
        drawing: include_str!("draw/ur.js"),
    };

    fn option_specs() -> &'static [OptionSpec] {
        SPECS
    }

    fn options(values: &OptionValues, _seats: usize) -> Result<UrOptions, OptionError> {
        Ok(UrOptions {
            rules: if values.text("rules") == "finkel" {
                Rules::Finkel
            } else {
                Rules::Tablet
            },
            astragal: if values.text("astragal") == "bone" {
                Astragal::Bone
            } else {
                Astragal::Uniform
            },
            max_turns: values.int("max_turns") as u32,
        })
    }

    fn new(options: &UrOptions, _seats: usize, rng: GameRng) -> Ur {
        let mut game = Ur {
            options: options.clone(),
            pieces: [[0; MAX_PIECES]; 2],
            counters: [15, 15],
            pool: 20,
            to_move: 0,
            phase: Phase::Over,
            turn: 0,
            rng,
        };
        let first = match options.rules {
            Rules::Tablet => loop {
                let (a, b) = (game.throw_for_start(), game.throw_for_start());
                if a != b {
                    break u8::from(b > a);
                }
            },
            Rules::Finkel => {
                game.counters = [0, 0];
                game.pool = 0;
                u8::from(game.rng.coin())
            }
        };
        game.start_turn(first, false);
        game
    }

    fn read_position(options: &UrOptions, text: &str, rng: GameRng) -> Result<Ur, ParsePositionError> {
        let f = Fields::parse(
            text,
            &[
                "to_move", "phase", "roll", "seat0", "seat1", "counters", "pool", "turn", "rng",
            ],
        )?;
        let mut game = Ur {
            options: options.clone(),
            pieces: [[0; MAX_PIECES]; 2],
            counters: [0, 0],
            pool: f.get("pool")?,
            to_move: f.get("to_move")?,
            phase: Phase::Over,
            turn: f.get("turn")?,
            rng: match f.opt("rng") {
                Some(r) => r.parse().map_err(|e| invalid("rng", r, e))?,
                None => rng,
            },
        };
        if game.to_move > 1 {
            return Err(invalid("to_move", f.raw("to_move")?, "a seat is 0 or 1"));
        }
        let n = game.n_pieces();
        for (p, key) in ["seat0", "seat1"].into_iter().enumerate() {
            let houses: Vec<u8> = f.list(key)?;
            if houses.len() != n {
                return Err(invalid(key, f.raw(key)?, format!("expected {n} pieces")));
            }
            if houses.iter().any(|&h| h > OFF) {
                return Err(invalid(key, f.raw(key)?, "a house is 0 to 15"));
            }
            game.pieces[p][..n].copy_from_slice(&houses);
            if options.rules == Rules::Finkel {
                game.pieces[p][..n].sort_unstable();
            }
            let on_board: Vec<u8> = houses.iter().copied().filter(|h| (1..OFF).contains(h)).collect();
            let mut sorted = on_board.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != on_board.len() {
                return Err(invalid(key, f.raw(key)?, "two own pieces on one house"));
            }
        }
        // Unused slots (tablet has 5 pieces) stay 0 on both sides.
        for h in 5..=12 {
            if game.own(0).contains(&h) && game.own(1).contains(&h) {
                return Err(ParsePositionError::Inconsistent(format!(
                    "both seats on shared house {h}"
                )));
            }
        }
        let counters: Vec<i64> = f.list("counters")?;
        if counters.len() != 2 || counters.iter().any(|&c| c < 0) || game.pool < 0 {
            return Err(invalid(
                "counters",
                f.raw("counters")?,
                "two counts, none negative, and pool >= 0",
            ));
        }
        // Counters only change hands: 25 each at the start, 10 of them into the pool.
        let (total, want) = match options.rules {
            Rules::Tablet => (
                counters[0]
                    .checked_add(counters[1])
                    .and_then(|c| c.checked_add(game.pool)),
                TOTAL_COUNTERS,
            ),
            Rules::Finkel => (Some(counters[0] | counters[1] | game.pool), 0),
        };
        if total != Some(want) {
            return Err(ParsePositionError::Inconsistent(format!(
                "counters {},{} and pool {} must add up to {want} under rules={}",
                counters[0],
                counters[1],
                game.pool,
                if options.rules == Rules::Tablet {
                    "tablet"
                } else {
                    "finkel"
                }
            )));
        }
        if !(1..=options.max_turns).contains(&game.turn) {
            return Err(invalid(
                "turn",
                f.raw("turn")?,
                format!("turns count from 1 to max_turns ({})", options.max_turns),
            ));
        }
        game.counters = [counters[0], counters[1]];
        let phase = f.raw("phase")?;
        let roll_text = f.raw("roll")?;
        let roll = if phase == "over" {
            0
        } else {
            roll_text.parse().map_err(|e| invalid("roll", roll_text, e))?
        };
        game.phase = match (options.rules, phase) {
            (_, "over") => Phase::Over,
            (Rules::Tablet, "primary") if (1..=4).contains(&roll) => Phase::Primary(roll),
            (Rules::Tablet, "converted") if [5, 6, 7, 10].contains(&roll) => Phase::Converted(roll),
            (Rules::Finkel, "roll") if (1..=4).contains(&roll) => Phase::Roll(roll),
            _ => {
                return Err(invalid(
                    "phase",
                    &format!("{phase} roll={roll_text}"),
                    "tablet: primary 1-4 or converted 5/6/7/10; finkel: roll 1-4; or over",
                ));
            }
        };
        let finished = game.finished(0) || game.finished(1);
        if game.finished(0) && game.finished(1) {
            return Err(ParsePositionError::Inconsistent(
                "both seats have borne off every piece, but the game ends when the first does".into(),
            ));
        }
        if finished && game.pool != 0 {
            return Err(ParsePositionError::Inconsistent(format!(
                "a seat has borne off every piece, so it took the pool, yet pool={}",
                game.pool
            )));
        }
        match game.phase {
            Phase::Over if !finished && game.turn < options.max_turns => {
                return Err(ParsePositionError::Inconsistent(
                    "phase=over but nobody has borne off every piece and the turn cap is not reached".into(),
                ));
            }
            Phase::Primary(_) if finished => {
                return Err(ParsePositionError::Inconsistent(
                    "a seat has borne off every piece but the game goes on".into(),
                ));
            }
            // A primary roll without a move is never offered: the gamble is thrown
            // at once, so only `gamble` would be legal.
            Phase::Primary(v) if !game.has_move(v) => {
                return Err(ParsePositionError::Inconsistent(format!(
                    "the primary roll {v} has no move, so the gamble would have been thrown at once"
                )));
            }
            Phase::Converted(v) | Phase::Roll(v) if finished || !game.has_move(v) => {
                return Err(ParsePositionError::Inconsistent(format!(
                    "the side to move has no move for roll {v}"
                )));
            }
            _ => {}
        }
        Ok(game)
    }

    fn position(&self) -> String {
        format!("{} rng={}", self.position_without_rng(), self.rng.to_text())
    }

    fn position_without_rng(&self) -> String {
        let (phase, roll) = match self.phase {
            Phase::Primary(r) => ("primary", r.to_string()),
            Phase::Converted(r) => ("converted", r.to_string()),
            Phase::Roll(r) => ("roll", r.to_string()),
            Phase::Over => ("over", "-".to_owned()),
        };
        format!(
            "to_move={} phase={phase} roll={roll} seat0={} seat1={} counters={},{} pool={} turn={}",
            self.to_move,
            join(self.own(0)),
            join(self.own(1)),
            self.counters[0],
            self.counters[1],
            self.pool,
            self.turn,
        )
    }

    fn seats(&self) -> usize {
        2
    }

    fn to_act(&self) -> SeatSet {
        match self.phase {
            Phase::Over => SeatSet::EMPTY,
            _ => SeatSet::single(self.to_move as Seat),
        }
    }

    fn legal_moves(&self, seat: Seat, out: &mut Vec<UrMove>) {
        if seat != self.to_move as Seat {
            return;
        }
        match self.phase {
            Phase::Primary(v) => {
                self.each_move(v, |m| {
                    out.push(m);
                    true
                });
                out.push(UrMove::Gamble);
            }
            Phase::Converted(v) | Phase::Roll(v) => self.each_move(v, |m| {
                out.push(m);
                true
            }),
            Phase::Over => {}
        }
    }

    fn play(&mut self, seat: Seat, mv: &UrMove) -> Result<(), PlayError> {
        if self.phase == Phase::Over {
            return Err(PlayError::GameOver);
        }
        if seat > 1 {
            return Err(PlayError::NoSuchSeat(seat));
        }
        if seat != self.to_move as Seat {
            return Err(PlayError::NotToAct {
                seat,
                to_act: self.to_act(),
            });
        }
        let illegal = |why| PlayError::Illegal {
            seat,
            mv: mv.to_string(),
            why,
        };
        match (self.phase, *mv) {
            (Phase::Primary(r), UrMove::Gamble) => {
                let c = convert(r);
                if self.rng.coin() && self.has_move(c) {
                    self.phase = Phase::Converted(c);
                } else {
                    self.start_turn(1 - self.to_move, false);
                }
                Ok(())
            }
            (_, UrMove::Gamble) => Err(illegal("the gamble is only open before playing the primary roll")),
            (Phase::Roll(_), UrMove::Bird { .. }) => Err(illegal("finkel rules move pieces as from-to")),
            (Phase::Primary(_) | Phase::Converted(_), UrMove::Step { .. }) => {
                Err(illegal("tablet rules move birds as bird:house"))
            }
            (Phase::Primary(v) | Phase::Converted(v) | Phase::Roll(v), m) => {
                if self.is_move_legal(v, m) {
                    self.apply_move(m);
                    Ok(())
                } else {
                    Err(illegal(self.why_illegal(v, m)))
                }
            }
            (Phase::Over, _) => Err(PlayError::GameOver),
        }
    }

    fn read_move(&self, text: &str) -> Result<UrMove, ParseMoveError> {
        let t = text.trim();
        if t == "gamble" {
            return Ok(UrMove::Gamble);
        }
        if let Some((bird, to)) = t.split_once(':') {
            let bird = BIRDS.iter().position(|b| *b == bird).ok_or_else(|| {
                ParseMoveError::new(text, format!("no bird {bird:?} (birds: {})", BIRDS.join(", ")))
            })?;
            let to = parse_house(to, text)?;
            return Ok(UrMove::Bird { bird: bird as u8, to });
        }
        if let Some((from, to)) = t.split_once('-') {
            let from = parse_house(from, text)?;
            let to = parse_house(to, text)?;
            if from >= OFF {
                return Err(ParseMoveError::new(text, "a piece borne off cannot move"));
            }
            return Ok(UrMove::Step { from, to });
        }
        Err(ParseMoveError::new(
            text,
            "expected gamble, <bird>:<house> or <from>-<to>",
        ))
    }

    fn observation(&self, seat: Seat) -> UrObservation {
        let (phase, roll) = match self.phase {
            Phase::Primary(r) => ("primary", r),
            Phase::Converted(r) => ("converted", r),
            Phase::Roll(r) => ("roll", r),
            Phase::Over => ("over", 0),
        };
        UrObservation {
            seat,
            rules: self.options.rules,
            to_move: self.to_move as Seat,
            phase,
            roll,
            pieces: [self.own(0).to_vec(), self.own(1).to_vec()],
            counters: self.counters,
            pool: self.pool,
            turn: self.turn,
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        if self.phase != Phase::Over {
            return None;
        }
        let scores = self.scores();
        for p in 0..2 {
            if self.finished(p) {
                let mut ranks = vec![2, 2];
                ranks[p] = 1;
                return Some(Outcome {
                    ranks,
                    scores: scores.to_vec(),
                    capped: false,
                });
            }
        }
        Some(Outcome::by_key(&scores, scores.to_vec(), true))
    }

    fn rng_mut(&mut self) -> Option<&mut GameRng> {
        Some(&mut self.rng)
    }

    fn determinize(&self, _seat: Seat, rng: &mut GameRng) -> Ur {
        // Nothing is hidden; only the future rolls are re-drawn.
        let mut copy = self.clone();
        copy.rng = GameRng::from_rng(rng);
        copy
    }

    fn render(&self) -> String {
        render_board(self)
    }
}

impl Ur {
    fn why_illegal(&self, v: u8, mv: UrMove) -> &'static str {
        let p = self.to_move as usize;
        let (from, to, launch_ok) = match mv {
            UrMove::Bird { bird, to } => {
                let i = bird as usize;
                if i >= self.n_pieces() {
                    return "no such bird";
                }
                let from = self.pieces[p][i];
                if from == 0 {
                    if LAUNCH_ROLL[i] != v {
                        return "this bird launches only on its own roll (swallow 2, storm 5, raven 6, rooster 7, eagle 10)";
                    }
                    let ok = if i == 0 {
                        (1..=3).contains(&to)
                    } else {
                        to == ENTRY_HOUSE[i]
                    };
                    if !ok {
                        return "a launch goes to the bird's entry house (swallow 1-3, storm 5, raven 6, rooster 7, eagle 10)";
                    }
                    (0, to, true)
                } else {
                    (from, to, false)
                }
            }
            UrMove::Step { from, to } => {
                if !self.own(p).contains(&from) {
                    return "no piece of yours on that house";
                }
                (from, to, false)
            }
            UrMove::Gamble => return "gamble is not open",
        };
        if from == OFF {
            return "a piece borne off cannot move";
        }
        if !launch_ok && from + v != to {
            return if from + v > OFF {
                "bearing off needs the exact roll"
            } else {
                "the piece must move exactly the roll"
            };
        }
        if self.own(p).contains(&to) {
            return "an own piece is on the landing house";
        }
        if is_rosette(to) {
            return "the rosette is occupied";
        }
        "not a legal move now"
    }
}

fn render_board(g: &Ur) -> String {
    let glyph = |house: u8, row_owner: Option<usize>| -> String {
        let mut cell = if is_rosette(house) {
            "*".to_owned()
        } else {
            ".".to_owned()
        };
        for p in 0..2 {
            if row_owner.is_some_and(|o| o != p) {
                continue;
            }
            if let Some(i) = g.own(p).iter().position(|&h| h == house) {
                let c = match g.options.rules {
                    Rules::Tablet => ['S', 'T', 'R', 'O', 'E'][i],
                    Rules::Finkel => 'X',
                };
                cell = if p == 0 {
                    c.to_string()
                } else {
                    c.to_ascii_lowercase().to_string()
                };
            }
        }
        format!("[{cell}]")
    };
    let own_row = |p: usize| -> String {
        let mut s = String::new();
        for h in [4, 3, 2, 1] {
            s.push_str(&glyph(h, Some(p)));
        }
        s.push_str("      ");
        for h in [14, 13] {
            s.push_str(&glyph(h, Some(p)));
        }
        s
    };
    let mut mid = String::new();
    for h in 5..=12 {
        mid.push_str(&glyph(h, None));
    }
    let waiting = |p: usize| g.own(p).iter().filter(|&&h| h == 0).count();
    let off = |p: usize| g.own(p).iter().filter(|&&h| h == OFF).count();
    let phase = match g.phase {
        Phase::Primary(r) => format!("seat {} to play primary roll {r} (or gamble)", g.to_move),
        Phase::Converted(r) => format!("seat {} to play converted roll {r}", g.to_move),
        Phase::Roll(r) => format!("seat {} to play roll {r}", g.to_move),
        Phase::Over => "game over".to_owned(),
    };
    format!(
        "seat 1 (lower case)  waiting {} off {}\n 4  3  2  1          14 13\n{}\n 5  6  7  8  9 10 11 12\n{}\n{}\n 4  3  2  1          14 13\nseat 0 (upper case)  waiting {} off {}\ncounters {} / {}  pool {}  turn {}  {}\n",
        waiting(1),
        off(1),
        own_row(1),
        mid,
        own_row(0),
        waiting(0),
        off(0),
        g.counters[0],
        g.counters[1],
        g.pool,
        g.turn,
        phase
    )
}

/// Pieces captured between two observations, in words (a piece sent back from
/// the shared row is easy to miss on the board).
fn ur_events(me: Seat, old: &serde_json::Value, new: &serde_json::Value) -> Vec<String> {
    let tablet = new["rules"] == "tablet";
    let mut said = Vec::new();
    for s in 0..2 {
        let (Some(before), Some(after)) = (old["pieces"][s].as_array(), new["pieces"][s].as_array()) else {
            continue;
        };
        for (i, (b, a)) in before.iter().zip(after).enumerate() {
            let (b, a) = (b.as_u64().unwrap_or(0), a.as_u64().unwrap_or(0));
            if (5..=12).contains(&b) && a == 0 {
                let piece = if tablet {
                    ["swallow", "storm", "raven", "rooster", "eagle"]
                        .get(i)
                        .copied()
                        .unwrap_or("piece")
                } else {
                    "piece"
                };
                said.push(format!(
                    "{} {piece} on house {b} was captured and starts again",
                    Presentation::whose(me, s)
                ));
            }
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_primary_move_the_gamble_is_automatic() {
        // Seat 1 has every bird off the board: of the primary rolls only a 2 (the
        // swallow) can be played, so a 1, 3 or 4 throws the yes/no astragal at once.
        let (mut primary, mut converted) = (0, 0);
        for seed in 0..200 {
            let mut g = Ur::new(&UrOptions::default(), 2, GameRng::from_seed(seed));
            g.pieces = [[15, 15, 15, 15, 14, 0, 0], [0; MAX_PIECES]];
            g.turn = 1;
            g.start_turn(1, false);
            if g.turn != 2 || g.to_move != 1 {
                continue; // seat 1 passed
            }
            match g.phase {
                Phase::Primary(r) => {
                    assert_eq!(r, 2, "a primary roll is only offered when it can be played");
                    primary += 1;
                }
                Phase::Converted(c) => {
                    assert!([5, 7, 10].contains(&c), "converted {c} came from a 1, 3 or 4");
                    converted += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(
            primary > 20 && converted > 20,
            "primary={primary} converted={converted}"
        );
    }

    #[test]
    fn who_starts_follows_the_opening_throws() {
        // Re-throw as the rules say, from the same stream, and compare.
        let mut starts = [0; 2];
        for seed in 0..400 {
            let g = Ur::new(&UrOptions::default(), 2, GameRng::from_seed(seed));
            let mut rng = GameRng::from_seed(seed);
            let mut throw = || {
                let primary = rng.die(4);
                if rng.coin() { convert(primary) } else { primary }
            };
            let first = loop {
                let (a, b) = (throw(), throw());
                if a != b {
                    break usize::from(b > a);
                }
            };
            // The first turn may pass at once (no launch for the roll): only while
            // still on turn 1 does the side to move show who started.
            if g.turn == 1 {
                assert_eq!(g.to_move as usize, first, "seed {seed}");
                starts[first] += 1;
            }
        }
        assert!(starts[0] > 60 && starts[1] > 60, "{starts:?}");
    }

    #[test]
    fn bone_astragal_follows_its_odds() {
        let mut g = Ur::new(
            &UrOptions {
                astragal: Astragal::Bone,
                ..UrOptions::default()
            },
            2,
            GameRng::from_seed(9),
        );
        let mut counts = [0u32; 5];
        for _ in 0..10_000 {
            counts[usize::from(g.primary_roll())] += 1;
        }
        assert!(
            (800..1200).contains(&counts[1]) && (3600..4400).contains(&counts[2]),
            "{counts:?}"
        );
        assert!(
            (3600..4400).contains(&counts[3]) && (800..1200).contains(&counts[4]),
            "{counts:?}"
        );
    }
}
