//! Utara: dice on a grid "sky"; a path starts from a North, East, South or West die
//! and turns at every directional die it hits, collecting dice as it goes.
//! See `docs/rules/utara.md`.
//!
//! Cells are named `a1`…: file letter (west to east) then rank (south to north).
//! Move notation: `c5` starts a path with the directional die on c5;
//! `block:c5` places a block; `east` / `west` choose a High Sun's direction;
//! `stop` ends a turn after a Half Moon.

use crate::game::{Game, Nature, Outcome, ParseMoveError, PlayError, Presentation};
use crate::json::{Object, array, square};
use crate::notation::{Fields, ParsePositionError, invalid, parse_natural, write_join};
use crate::options::{OptionError, OptionKind, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{MAX_SEATS, Seat, SeatSet};
use crate::square::Square;
use serde::Serialize;
use std::fmt;

const MAX_FILES: usize = 26;
const MAX_RANKS: usize = 60;
const EMPTY: u8 = 0;
const BLOCK: u8 = 0xFF;

/// The six faces of an Utara die, in face-code order 1..=6.
pub const FACES: [char; 6] = ['N', 'E', 'S', 'W', 'O', 'C'];
const NORTH: u8 = 1;
const EAST: u8 = 2;
const SOUTH: u8 = 3;
const WEST: u8 = 4;
const SUN: u8 = 5;
const MOON: u8 = 6;

fn is_directional(face: u8) -> bool {
    (NORTH..=WEST).contains(&face)
}

fn die_code(face: u8, owner: usize) -> u8 {
    face | ((owner as u8) << 3)
}

fn face_of(code: u8) -> u8 {
    code & 7
}

fn owner_of(code: u8) -> usize {
    usize::from(code >> 3)
}

/// How a Moon acts when a path hits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MoonStyle {
    /// Collected; the path goes on as if nothing was hit.
    Full,
    /// The path and the turn end; the Moon stays.
    Dark,
    /// The path ends, the Moon stays; the player may start another path or stop.
    Half,
}

/// How a Sun acts when a path hits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SunStyle {
    /// Collected; the path goes on as if nothing was hit.
    Basic,
    /// Acts as an East die.
    Rising,
    /// Acts as a West die.
    Setting,
    /// The player chooses East or West.
    High,
}

/// Options of `utara`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UtaraOptions {
    /// Sky width (files).
    pub width: u8,
    /// Sky height (ranks).
    pub height: u8,
    /// Dice each player brings.
    pub dice: u8,
    /// Moon style.
    pub moon: MoonStyle,
    /// Sun style.
    pub sun: SunStyle,
    /// Each player places a block before each roll.
    pub blocks: bool,
    /// Days and Tides score 5 each.
    pub advanced: bool,
    /// Rounds to play.
    pub rounds: u8,
    /// Dice left on the sky are rolled again after every turn.
    pub stormy: bool,
    /// Turns after which the game stops (the round so far is scored).
    pub max_turns: u32,
}

impl UtaraOptions {
    /// The rulings' defaults for `seats` players.
    pub fn for_seats(seats: usize) -> UtaraOptions {
        let dice = 10u8;
        let side = default_side(usize::from(dice) * seats);
        UtaraOptions {
            width: side,
            height: side,
            dice,
            moon: MoonStyle::Full,
            sun: SunStyle::Basic,
            blocks: false,
            advanced: false,
            rounds: seats as u8,
            stormy: false,
            max_turns: 10_000,
        }
    }
}

/// Side of the default square sky: about a quarter of the cells hold a die.
fn default_side(total_dice: usize) -> u8 {
    let mut side = 1;
    while side * side < 4 * total_dice {
        side += 1;
    }
    side as u8
}

const SPECS: &[OptionSpec] = &[
    OptionSpec {
        name: "sky",
        default: "",
        kind: OptionKind::Text("WxH, e.g. 9x9 (default: square, side ceil(sqrt(4 x all dice)))"),
        help: "sky size in cells, width x height (width at most 26)",
    },
    OptionSpec {
        name: "dice",
        default: "10",
        kind: OptionKind::Int { min: 1, max: 25 },
        help: "dice each player brings",
    },
    OptionSpec {
        name: "moon",
        default: "full",
        kind: OptionKind::Choice(&["full", "dark", "half"]),
        help: "full: collected, path goes on; dark: path and turn end; half: path ends, player may start another",
    },
    OptionSpec {
        name: "sun",
        default: "basic",
        kind: OptionKind::Choice(&["basic", "rising", "setting", "high"]),
        help: "basic: collected, path goes on; rising/setting: acts as East/West; high: player chooses East or West",
    },
    OptionSpec {
        name: "blocks",
        default: "false",
        kind: OptionKind::Bool,
        help: "each player places a block before each roll; a path that hits one ends the turn",
    },
    OptionSpec {
        name: "scoring",
        default: "basic",
        kind: OptionKind::Choice(&["basic", "advanced"]),
        help: "advanced: +5 per Day (N,E,S,W; Suns wild) and per Tide (three alike; Moons wild)",
    },
    OptionSpec {
        name: "rounds",
        default: "",
        kind: OptionKind::Int { min: 1, max: 20 },
        help: "rounds to play (default: one per player)",
    },
    OptionSpec {
        name: "stormy",
        default: "false",
        kind: OptionKind::Bool,
        help: "after every turn the dice left on the sky are rolled again",
    },
    OptionSpec {
        name: "max_turns",
        default: "10000",
        kind: OptionKind::Int {
            min: 1,
            max: 1_000_000,
        },
        help: "turns after which the game stops and the round so far is scored",
    },
];

/// Days in a collection: sets of N, E, S, W where a Sun may stand in for a missing
/// direction and every set holds at least one real directional die.
pub fn days(counts: &[u16; 7]) -> u32 {
    let suns = u32::from(counts[usize::from(SUN)]);
    let dirs = [NORTH, EAST, SOUTH, WEST].map(|d| u32::from(counts[usize::from(d)]));
    let mut k = 0;
    loop {
        let next = k + 1;
        let real: u32 = dirs.iter().map(|&c| c.min(next)).sum();
        // `real >= next` lets every Day hold a real die (spread the reals over the Days).
        if 4 * next - real > suns || real < next {
            return k;
        }
        k = next;
    }
}

/// Tides in a collection: three of one direction, where a Moon may stand in and
/// every set holds at least one real die of its direction. The cost in Moons of the
/// t-th Tide of a direction never falls as t grows, so taking the cheapest Tide
/// each time is optimal.
pub fn tides(counts: &[u16; 7]) -> u32 {
    let mut moons = u32::from(counts[usize::from(MOON)]);
    let dirs = [NORTH, EAST, SOUTH, WEST].map(|d| u32::from(counts[usize::from(d)]));
    let mut made = [0u32; 4];
    let cost = |c: u32, t: u32| (3 * t).saturating_sub(c);
    loop {
        let best = (0..4)
            .filter(|&i| made[i] < dirs[i])
            .map(|i| (cost(dirs[i], made[i] + 1) - cost(dirs[i], made[i]), i))
            .min();
        match best {
            Some((extra, i)) if extra <= moons => {
                moons -= extra;
                made[i] += 1;
            }
            _ => return made.iter().sum(),
        }
    }
}

/// Points for a collection (counts per face, index 1..=6).
pub fn score(counts: &[u16; 7], advanced: bool) -> i64 {
    let dice: i64 = counts.iter().map(|&c| i64::from(c)).sum();
    if advanced {
        dice + 5 * i64::from(days(counts)) + 5 * i64::from(tides(counts))
    } else {
        dice
    }
}

/// What must happen next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Players place blocks; `placed` so far this round.
    Block { placed: u8 },
    /// The player to move starts a path.
    Start,
    /// A High Sun on this cell waits for East or West.
    Sun { cell: u16 },
    /// After a Half Moon: start another path or stop.
    Continue,
    /// The game has ended.
    Over,
}

/// A move of `utara`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UtaraMove {
    /// Start a path with the directional die on this cell.
    Start(Square),
    /// Place a block on this empty cell.
    Block(Square),
    /// A High Sun goes East.
    East,
    /// A High Sun goes West.
    West,
    /// End the turn after a Half Moon.
    Stop,
}

impl UtaraMove {
    /// Appends the notation to `out` (see [`Game::write_move`]).
    pub fn push_to(self, out: &mut String) {
        match self {
            UtaraMove::Start(sq) => sq.push_to(out),
            UtaraMove::Block(sq) => {
                out.push_str("block:");
                sq.push_to(out);
            }
            UtaraMove::East => out.push_str("east"),
            UtaraMove::West => out.push_str("west"),
            UtaraMove::Stop => out.push_str("stop"),
        }
    }
}

impl fmt::Display for UtaraMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(12);
        self.push_to(&mut out);
        f.write_str(&out)
    }
}

/// How a path ended.
enum PathEnd {
    /// The turn is over (left the sky, a block, a Dark Moon).
    TurnOver,
    /// A Half Moon: the player may go on.
    HalfMoon,
    /// A High Sun waits for a direction.
    SunChoice(usize),
}

/// A state of `utara`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Utara {
    options: UtaraOptions,
    seats: u8,
    sky: Vec<u8>,
    /// Dice on the sky per face (index 1..=6), kept in step with `sky`.
    on_sky: [u16; 7],
    collected: [[u16; 7]; MAX_SEATS],
    totals: [i64; MAX_SEATS],
    round: u8,
    starter: u8,
    to_move: u8,
    phase: Phase,
    turn: u32,
    rng: GameRng,
}

/// One die on the sky as a seat sees it.
#[derive(Debug, Clone, Serialize)]
pub struct SkyDie {
    /// Cell name.
    pub cell: String,
    /// `N`, `E`, `S`, `W`, `O` (Sun) or `C` (Moon).
    pub face: char,
    /// The seat that brought it (colour only: it never matters for scoring).
    pub owner: Seat,
}

/// What a seat sees of `utara`: everything (no hidden information).
#[derive(Debug, Clone, Serialize)]
pub struct UtaraObservation {
    /// The observing seat.
    pub seat: Seat,
    /// Sky width and height.
    pub sky: [u8; 2],
    /// Dice on the sky.
    pub dice: Vec<SkyDie>,
    /// Cells holding blocks.
    pub blocks: Vec<String>,
    /// `block`, `start`, `sun`, `continue` or `over`.
    pub phase: &'static str,
    /// The cell of the High Sun waiting for a direction.
    pub sun_cell: Option<String>,
    /// Whose turn it is.
    pub to_move: Seat,
    /// Round, from 1, and rounds in all.
    pub round: [u8; 2],
    /// Faces each seat collected this round, as letters.
    pub collected: Vec<String>,
    /// This round's points so far per seat (with the chosen scoring).
    pub round_points: Vec<i64>,
    /// Points of earlier rounds per seat.
    pub totals: Vec<i64>,
    /// Turns played.
    pub turn: u32,
}

impl Utara {
    /// An empty sky before round 1.
    fn blank(options: &UtaraOptions, seats: usize, rng: GameRng) -> Utara {
        Utara {
            options: options.clone(),
            seats: seats as u8,
            sky: vec![EMPTY; usize::from(options.width) * usize::from(options.height)],
            on_sky: [0; 7],
            collected: [[0; 7]; MAX_SEATS],
            totals: [0; MAX_SEATS],
            round: 1,
            starter: 0,
            to_move: 0,
            phase: Phase::Start,
            turn: 0,
            rng,
        }
    }

    fn w(&self) -> usize {
        usize::from(self.options.width)
    }
    fn h(&self) -> usize {
        usize::from(self.options.height)
    }
    fn cells(&self) -> usize {
        self.w() * self.h()
    }
    fn directional_left(&self) -> bool {
        self.on_sky[1..=4].iter().any(|&n| n > 0)
    }

    fn put(&mut self, cell: usize, code: u8) {
        self.sky[cell] = code;
        if code != BLOCK && code != EMPTY {
            self.on_sky[usize::from(face_of(code))] += 1;
        }
    }

    fn take(&mut self, cell: usize) -> u8 {
        let code = self.sky[cell];
        self.sky[cell] = EMPTY;
        if code != BLOCK && code != EMPTY {
            self.on_sky[usize::from(face_of(code))] -= 1;
        }
        code
    }

    fn collect(&mut self, cell: usize) {
        let code = self.take(cell);
        self.collected[usize::from(self.to_move)][usize::from(face_of(code))] += 1;
    }

    fn random_empty_cell(&mut self) -> usize {
        loop {
            let cell = self.rng.below(self.cells() as u32) as usize;
            if self.sky[cell] == EMPTY {
                return cell;
            }
        }
    }

    /// Rolls `owners` onto the sky (each a die of that owner) with random faces and
    /// cells, again while no directional die shows (the mulligan, unless `stormy`).
    fn roll(&mut self, owners: &[u8], mulligan: bool) {
        loop {
            for &owner in owners {
                let face = self.rng.die(6);
                let cell = self.random_empty_cell();
                self.put(cell, die_code(face, usize::from(owner)));
            }
            if !mulligan || self.directional_left() {
                return;
            }
            for cell in 0..self.cells() {
                if self.sky[cell] != BLOCK {
                    self.take(cell);
                }
            }
        }
    }

    fn roll_round(&mut self) {
        let owners: Vec<u8> = (0..self.seats)
            .flat_map(|p| std::iter::repeat_n(p, usize::from(self.options.dice)))
            .collect();
        self.roll(&owners, true);
    }

    fn start_round(&mut self) {
        self.sky.iter_mut().for_each(|c| *c = EMPTY);
        self.on_sky = [0; 7];
        self.to_move = self.starter;
        if self.options.blocks {
            self.phase = Phase::Block { placed: 0 };
        } else {
            self.roll_round();
            self.phase = Phase::Start;
        }
    }

    /// The first die or block on the line from `cell` in direction `dir`.
    fn scan(&self, cell: usize, dir: u8) -> Option<usize> {
        let (w, h) = (self.w() as i32, self.h() as i32);
        let (mut x, mut y) = ((cell % self.w()) as i32, (cell / self.w()) as i32);
        let (dx, dy) = match dir {
            NORTH => (0, 1),
            EAST => (1, 0),
            SOUTH => (0, -1),
            _ => (-1, 0),
        };
        loop {
            x += dx;
            y += dy;
            if x < 0 || y < 0 || x >= w || y >= h {
                return None;
            }
            let c = (y * w + x) as usize;
            if self.sky[c] != EMPTY {
                return Some(c);
            }
        }
    }

    fn run_path(&mut self, mut cell: usize, mut dir: u8) -> PathEnd {
        loop {
            let Some(hit) = self.scan(cell, dir) else {
                self.collect(cell); // it leaves the sky
                return PathEnd::TurnOver;
            };
            let code = self.sky[hit];
            if code == BLOCK {
                self.collect(cell);
                return PathEnd::TurnOver;
            }
            match face_of(code) {
                MOON => match self.options.moon {
                    MoonStyle::Full => self.collect(hit),
                    MoonStyle::Dark => {
                        self.collect(cell);
                        return PathEnd::TurnOver;
                    }
                    MoonStyle::Half => {
                        self.collect(cell);
                        return PathEnd::HalfMoon;
                    }
                },
                SUN => match self.options.sun {
                    SunStyle::Basic => self.collect(hit),
                    SunStyle::Rising | SunStyle::Setting => {
                        self.collect(cell);
                        cell = hit;
                        dir = if self.options.sun == SunStyle::Rising {
                            EAST
                        } else {
                            WEST
                        };
                    }
                    SunStyle::High => {
                        self.collect(cell);
                        return PathEnd::SunChoice(hit);
                    }
                },
                face => {
                    self.collect(cell);
                    cell = hit;
                    dir = face;
                }
            }
        }
    }

    fn after_path(&mut self, end: PathEnd) {
        match end {
            PathEnd::SunChoice(cell) => self.phase = Phase::Sun { cell: cell as u16 },
            PathEnd::HalfMoon if self.directional_left() => self.phase = Phase::Continue,
            _ => self.end_turn(),
        }
    }

    fn end_turn(&mut self) {
        self.turn += 1;
        if self.options.stormy && self.directional_left() {
            let mut owners = Vec::new();
            for cell in 0..self.cells() {
                let code = self.sky[cell];
                if code != BLOCK && code != EMPTY {
                    owners.push(owner_of(code) as u8);
                    self.take(cell);
                }
            }
            self.roll(&owners, false);
        }
        if !self.directional_left() {
            self.end_round();
        } else if self.turn >= self.options.max_turns {
            self.end_round_capped();
        } else {
            self.to_move = (self.to_move + 1) % self.seats;
            self.phase = Phase::Start;
        }
    }

    fn round_points(&self, p: usize) -> i64 {
        score(&self.collected[p], self.options.advanced)
    }

    fn end_round(&mut self) {
        let n = usize::from(self.seats);
        let points: Vec<i64> = (0..n).map(|p| self.round_points(p)).collect();
        for (p, pts) in points.iter().enumerate() {
            self.totals[p] += pts;
        }
        self.collected = [[0; 7]; MAX_SEATS];
        if self.round >= self.options.rounds {
            self.phase = Phase::Over;
            return;
        }
        // The lowest scorer of the round starts the next one (ties: lowest seat).
        let low = *points.iter().min().unwrap_or(&0);
        self.starter = points.iter().position(|&p| p == low).unwrap_or(0) as u8;
        self.round += 1;
        if self.turn >= self.options.max_turns {
            self.phase = Phase::Over;
        } else {
            self.start_round();
        }
    }

    fn end_round_capped(&mut self) {
        for p in 0..usize::from(self.seats) {
            self.totals[p] += self.round_points(p);
        }
        self.collected = [[0; 7]; MAX_SEATS];
        self.phase = Phase::Over;
    }

    fn sq(&self, cell: usize) -> Square {
        Square::from_index(self.w(), cell)
    }

    fn each_move(&self, mut f: impl FnMut(UtaraMove)) {
        match self.phase {
            Phase::Block { .. } => {
                for cell in 0..self.cells() {
                    if self.sky[cell] == EMPTY {
                        f(UtaraMove::Block(self.sq(cell)));
                    }
                }
            }
            Phase::Start | Phase::Continue => {
                for cell in 0..self.cells() {
                    let code = self.sky[cell];
                    if code != BLOCK && is_directional(face_of(code)) {
                        f(UtaraMove::Start(self.sq(cell)));
                    }
                }
                if self.phase == Phase::Continue {
                    f(UtaraMove::Stop);
                }
            }
            Phase::Sun { .. } => {
                f(UtaraMove::East);
                f(UtaraMove::West);
            }
            Phase::Over => {}
        }
    }

    /// [`Game::observation`] without its strings: no dice, blocks or sun cell,
    /// nothing collected. Numeric encodings read those typed, from
    /// [`Utara::sky_contents`], [`Utara::sun_cell_index`] and
    /// [`Utara::collected_faces`].
    pub fn observation_without_sky(&self, seat: Seat) -> UtaraObservation {
        let n = usize::from(self.seats);
        UtaraObservation {
            seat,
            sky: [self.options.width, self.options.height],
            dice: Vec::new(),
            blocks: Vec::new(),
            phase: match self.phase {
                Phase::Block { .. } => "block",
                Phase::Start => "start",
                Phase::Sun { .. } => "sun",
                Phase::Continue => "continue",
                Phase::Over => "over",
            },
            sun_cell: None,
            to_move: usize::from(self.to_move),
            round: [self.round, self.options.rounds],
            collected: Vec::new(),
            round_points: (0..n).map(|p| self.round_points(p)).collect(),
            totals: self.totals[..n].to_vec(),
            turn: self.turn,
        }
    }

    /// Each sky cell that is not empty, in cell order (row by row from a1), typed:
    /// `Some((face, owner))` for a die (its face's index in [`FACES`]), `None`
    /// for a block.
    pub fn sky_contents(&self) -> impl Iterator<Item = (usize, Option<(usize, Seat)>)> + '_ {
        self.sky
            .iter()
            .enumerate()
            .filter(|&(_, &code)| code != EMPTY)
            .map(|(cell, &code)| {
                (
                    cell,
                    (code != BLOCK).then(|| (usize::from(face_of(code)) - 1, owner_of(code))),
                )
            })
    }

    /// The cell (row by row from a1) of the High Sun waiting for a direction.
    pub fn sun_cell_index(&self) -> Option<usize> {
        match self.phase {
            Phase::Sun { cell } => Some(usize::from(cell)),
            _ => None,
        }
    }

    /// How many of each face (in [`FACES`] order) seat `p` collected this round.
    pub fn collected_faces(&self, p: usize) -> [u16; 6] {
        let c = &self.collected[p];
        [c[1], c[2], c[3], c[4], c[5], c[6]]
    }

    fn collected_text(&self, p: usize) -> String {
        let mut s = String::new();
        self.write_collected(p, &mut s);
        s
    }

    /// Seat `p`'s faces this round as letters.
    fn write_collected(&self, p: usize, out: &mut String) {
        for (i, &n) in self.collected[p].iter().enumerate().skip(1) {
            for _ in 0..n {
                out.push(FACES[i - 1]);
            }
        }
    }

    /// The sky in the position notation: ranks from the top, `/` between them.
    fn write_sky(&self, out: &mut String) {
        let (w, h) = (self.w(), self.h());
        for y in (0..h).rev() {
            let mut empty = 0usize;
            for x in 0..w {
                let code = self.sky[y * w + x];
                if code == EMPTY {
                    empty += 1;
                    continue;
                }
                if empty > 0 {
                    crate::json::int(out, empty);
                    empty = 0;
                }
                if code == BLOCK {
                    out.push('#');
                } else {
                    out.push(FACES[usize::from(face_of(code)) - 1]);
                    out.push(char::from(b'0' + owner_of(code) as u8));
                }
            }
            if empty > 0 {
                crate::json::int(out, empty);
            }
            if y > 0 {
                out.push('/');
            }
        }
    }

    fn parse_sky(&mut self, text: &str) -> Result<(), ParsePositionError> {
        let (w, h) = (self.w(), self.h());
        let rows: Vec<&str> = text.split('/').collect();
        if rows.len() != h {
            return Err(invalid(
                "sky",
                text,
                format!("expected {h} ranks separated by '/'"),
            ));
        }
        for (i, row) in rows.iter().enumerate() {
            let y = h - 1 - i;
            let mut x = 0usize;
            let mut chars = row.chars().peekable();
            while let Some(c) = chars.next() {
                let bad = |why: String| invalid("sky", row, why);
                if c.is_ascii_digit() {
                    let mut digits = String::from(c);
                    while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                        digits.push(d);
                        chars.next();
                    }
                    let run: usize = parse_natural(&digits).map_err(|e| bad(format!("{digits:?}: {e}")))?;
                    if run == 0 {
                        return Err(bad("a run of empty cells is at least 1".into()));
                    }
                    x = x
                        .checked_add(run)
                        .filter(|&x| x <= w)
                        .ok_or_else(|| bad(format!("rank longer than {w} cells")))?;
                    continue;
                }
                if x >= w {
                    return Err(bad(format!("rank longer than {w} cells")));
                }
                let code = if c == '#' {
                    BLOCK
                } else {
                    let face = FACES.iter().position(|&f| f == c).ok_or_else(|| {
                        bad(format!(
                            "{c:?} is not a face (N E S W O=Sun C=Moon), '#' or a count"
                        ))
                    })?;
                    let owner = chars
                        .next()
                        .and_then(|d| d.to_digit(10))
                        .filter(|&d| (d as usize) < usize::from(self.seats))
                        .ok_or_else(|| bad(format!("die {c} needs its owner's seat digit")))?;
                    die_code(face as u8 + 1, owner as usize)
                };
                self.put(y * w + x, code);
                x += 1;
            }
            if x != w {
                return Err(invalid("sky", row, format!("rank of {x} cells, expected {w}")));
            }
        }
        Ok(())
    }
}

impl Utara {
    /// Refuses a parsed position no game with these options could reach: the
    /// phase against the options, the dice and blocks against the seats, the
    /// turn against the cap, the totals against what rounds can score.
    fn check_consistent(&self, f: &Fields<'_>) -> Result<(), ParsePositionError> {
        let inconsistent = |why: String| Err(ParsePositionError::Inconsistent(why));
        let o = &self.options;
        let n = usize::from(self.seats);
        match self.phase {
            Phase::Block { .. } if !o.blocks => return inconsistent("phase=block needs blocks=true".into()),
            Phase::Sun { .. } if o.sun != SunStyle::High => {
                return inconsistent("phase=sun (a High Sun waits) needs sun=high".into());
            }
            Phase::Continue if o.moon != MoonStyle::Half => {
                return inconsistent("phase=continue (after a Half Moon) needs moon=half".into());
            }
            _ => {}
        }
        let blocks = self.sky.iter().filter(|&&c| c == BLOCK).count();
        if !o.blocks && blocks > 0 {
            return inconsistent(format!("{blocks} blocks on the sky, but blocks=false"));
        }
        let playing = matches!(self.phase, Phase::Start | Phase::Continue | Phase::Sun { .. });
        // A sky may hold fewer dice and blocks than the round had (as if the rest
        // were collected by nobody): a test sets up a sparse sky without playing
        // to it. Never more.
        if blocks > n {
            return inconsistent(format!(
                "{blocks} blocks on the sky, but {n} seats place one each"
            ));
        }
        // Every die of the round is on the sky or collected (or, in a sparse sky, gone).
        let all_dice = n * usize::from(o.dice);
        let on_sky: usize = self.on_sky.iter().map(|&c| usize::from(c)).sum();
        let collected: usize = self.collected[..n]
            .iter()
            .flatten()
            .map(|&c| usize::from(c))
            .sum();
        for p in 0..n {
            let own = self
                .sky
                .iter()
                .filter(|&&c| c != BLOCK && c != EMPTY && owner_of(c) == p)
                .count();
            if own > usize::from(o.dice) {
                return inconsistent(format!(
                    "seat {p} has {own} dice on the sky but brings {}",
                    o.dice
                ));
            }
        }
        if on_sky + collected > all_dice {
            return inconsistent(format!(
                "{on_sky} dice on the sky and {collected} collected, but the round is played with {n} x {} = {all_dice}",
                o.dice
            ));
        }
        if !playing && collected > 0 {
            return inconsistent(
                "nothing is collected yet while blocks are placed, nor once the game is over".into(),
            );
        }
        if self.round == 1 && self.starter != 0 {
            return inconsistent("seat 0 starts round 1".into());
        }
        let over = self.phase == Phase::Over;
        let turn_ok = if over {
            self.turn <= o.max_turns && (self.round == o.rounds || self.turn == o.max_turns)
        } else {
            self.turn < o.max_turns
        };
        if !turn_ok {
            return Err(invalid(
                "turn",
                f.raw("turn")?,
                format!(
                    "a game goes on while turn < max_turns ({}) and ends after its last round ({}) or at the cap",
                    o.max_turns, o.rounds
                ),
            ));
        }
        // A round scores at most 4 points a die (1, and 5 for each quarter of a Day
        // and third of a Tide); finished rounds are the ones before this one (and
        // this one too once the game is over).
        let finished_rounds = i64::from(self.round) - i64::from(!over);
        let most = finished_rounds * 4 * all_dice as i64;
        if let Some(p) = (0..n).find(|&p| !(0..=most).contains(&self.totals[p])) {
            return Err(invalid(
                "totals",
                f.raw("totals")?,
                format!(
                    "seat {p}'s total {} is not 0 to {most}, what {finished_rounds} finished rounds can score",
                    self.totals[p]
                ),
            ));
        }
        // Under moon=half and moon=dark a Moon ends the path and stays on the sky.
        if o.moon != MoonStyle::Full && (0..n).any(|p| self.collected[p][usize::from(MOON)] > 0) {
            return Err(invalid(
                "collected",
                f.raw("collected")?,
                "a Moon is collected only under moon=full: under moon=half and moon=dark it stays on the sky",
            ));
        }
        // A round ends only as a turn ends: round R comes after R - 1 turns at
        // least (and a game is over only after one); at the start of a turn when
        // no turn of this round has ended yet, nothing of it is collected.
        let least_turns = (u32::from(self.round) - 1).max(u32::from(over));
        if self.turn < least_turns {
            return Err(invalid(
                "turn",
                f.raw("turn")?,
                format!(
                    "every round ends with a turn: round {} needs turn {least_turns} at least",
                    self.round
                ),
            ));
        }
        if self.phase == Phase::Start && self.turn == least_turns && collected > 0 {
            return inconsistent(format!(
                "turn={} is the first turn of round {}, yet dice of it are collected before it starts",
                self.turn, self.round
            ));
        }
        Ok(())
    }
}

fn parse_counts(text: &str) -> Option<[u16; 7]> {
    let mut counts = [0u16; 7];
    if text == "-" {
        return Some(counts);
    }
    for c in text.chars() {
        let count = &mut counts[FACES.iter().position(|&f| f == c)? + 1];
        *count = count.checked_add(1)?;
    }
    Some(counts)
}

impl Game for Utara {
    type Move = UtaraMove;
    type Options = UtaraOptions;
    type Observation = UtaraObservation;

    const ID: &'static str = "utara";
    const NAME: &'static str = "Utara";
    const SEATS: std::ops::RangeInclusive<usize> = 2..=6;
    const DEFAULT_SEATS: usize = 2;
    const NATURE: Nature = Nature {
        chance: true,
        simultaneous: false,
        hidden_information: false,
    };
    const PRESENTATION: Presentation = Presentation {
        legend: "Sky: N E S W arrows (N is up), O the Sun, C the Moon, # a block. Moves: a cell to start\n\
                 sailing from, a direction at a High Sun, or whether to go on (see the rules page).",
        score_unit: " points",
        seat_mark: Presentation::no_seat_mark,
        events_in_words: Presentation::no_events,
        drawing: include_str!("draw/utara.js"),
    };

    fn option_specs() -> &'static [OptionSpec] {
        SPECS
    }

    fn options(values: &OptionValues, seats: usize) -> Result<UtaraOptions, OptionError> {
        let dice = values.int("dice") as u8;
        let side = default_side(usize::from(dice) * seats);
        let (width, height) = match values.text("sky") {
            "" => (side, side),
            text => {
                let parsed = text
                    .split_once('x')
                    .and_then(|(w, h)| Some((w.parse::<usize>().ok()?, h.parse::<usize>().ok()?)))
                    .filter(|&(w, h)| (1..=MAX_FILES).contains(&w) && (1..=MAX_RANKS).contains(&h));
                let (w, h) = parsed.ok_or_else(|| OptionError::BadValue {
                    key: "sky".into(),
                    value: text.into(),
                    expected: format!("WxH with W 1-{MAX_FILES} and H 1-{MAX_RANKS}"),
                })?;
                (w as u8, h as u8)
            }
        };
        let needed = usize::from(dice) * seats + if values.flag("blocks") { seats } else { 0 };
        if usize::from(width) * usize::from(height) < needed {
            return Err(OptionError::BadValue {
                key: "sky".into(),
                value: format!("{width}x{height}"),
                expected: format!("at least {needed} cells for {seats} x {dice} dice (and blocks)"),
            });
        }
        let moon = match values.text("moon") {
            "dark" => MoonStyle::Dark,
            "half" => MoonStyle::Half,
            _ => MoonStyle::Full,
        };
        let sun = match values.text("sun") {
            "rising" => SunStyle::Rising,
            "setting" => SunStyle::Setting,
            "high" => SunStyle::High,
            _ => SunStyle::Basic,
        };
        Ok(UtaraOptions {
            width,
            height,
            dice,
            moon,
            sun,
            blocks: values.flag("blocks"),
            advanced: values.text("scoring") == "advanced",
            rounds: if values.is_given("rounds") {
                values.int("rounds") as u8
            } else {
                seats as u8
            },
            stormy: values.flag("stormy"),
            max_turns: values.int("max_turns") as u32,
        })
    }

    fn new(options: &UtaraOptions, seats: usize, rng: GameRng) -> Utara {
        let mut g = Utara::blank(options, seats, rng);
        g.start_round();
        g
    }

    fn seats_in_position(text: &str) -> Option<usize> {
        let totals = text.split_whitespace().find_map(|f| f.strip_prefix("totals="))?;
        Some(totals.split(',').count())
    }

    fn read_position(options: &UtaraOptions, text: &str, rng: GameRng) -> Result<Utara, ParsePositionError> {
        let f = Fields::parse(
            text,
            &[
                "round",
                "starter",
                "to_move",
                "phase",
                "turn",
                "totals",
                "collected",
                "sky",
                "rng",
            ],
        )?;
        let totals: Vec<i64> = f.list("totals")?;
        let seats = totals.len();
        if !(2..=MAX_SEATS).contains(&seats) {
            return Err(invalid(
                "totals",
                f.raw("totals")?,
                "one total per seat, 2 to 6 seats",
            ));
        }
        let mut g = Utara::blank(
            options,
            seats,
            match f.opt("rng") {
                Some(r) => r.parse().map_err(|e| invalid("rng", r, e))?,
                None => rng,
            },
        );
        g.round = f.get("round")?;
        g.starter = f.get("starter")?;
        g.to_move = f.get("to_move")?;
        g.turn = f.get("turn")?;
        g.totals[..seats].copy_from_slice(&totals);
        if usize::from(g.starter) >= seats || usize::from(g.to_move) >= seats {
            return Err(ParsePositionError::Inconsistent(
                "starter and to_move must be seats".into(),
            ));
        }
        if g.round == 0 || g.round > options.rounds {
            return Err(invalid(
                "round",
                f.raw("round")?,
                format!("1 to {}", options.rounds),
            ));
        }
        let collected = f.raw("collected")?;
        let parts: Vec<&str> = collected.split(',').collect();
        if parts.len() != seats {
            return Err(invalid(
                "collected",
                collected,
                "one list of faces per seat (- for none)",
            ));
        }
        for (p, part) in parts.iter().enumerate() {
            g.collected[p] =
                parse_counts(part).ok_or_else(|| invalid("collected", collected, "faces are N E S W O C"))?;
        }
        g.parse_sky(f.raw("sky")?)?;
        let phase = f.raw("phase")?;
        g.phase = match phase.split_once(':') {
            None if phase == "start" => Phase::Start,
            None if phase == "continue" => Phase::Continue,
            None if phase == "over" => Phase::Over,
            Some(("block", n)) => Phase::Block {
                placed: n
                    .parse()
                    .ok()
                    .filter(|&n: &u8| n < g.seats)
                    .ok_or_else(|| invalid("phase", phase, "block:<blocks placed so far this round>"))?,
            },
            Some(("sun", cell)) => {
                let sq = Square::parse(cell, g.w(), g.h())
                    .ok_or_else(|| invalid("phase", phase, "no such cell"))?;
                let idx = sq.index(g.w(), g.h()).unwrap_or(0);
                if face_of(g.sky[idx]) != SUN || g.sky[idx] == BLOCK {
                    return Err(invalid("phase", phase, "no Sun on that cell"));
                }
                Phase::Sun { cell: idx as u16 }
            }
            _ => {
                return Err(invalid(
                    "phase",
                    phase,
                    "start, continue, over, block:<n> or sun:<cell>",
                ));
            }
        };
        g.check_consistent(&f)?;
        match g.phase {
            Phase::Start | Phase::Continue if !g.directional_left() => {
                return Err(ParsePositionError::Inconsistent(
                    "no directional die is left to start a path".into(),
                ));
            }
            Phase::Block { placed } => {
                let blocks = g.sky.iter().filter(|&&c| c == BLOCK).count();
                if blocks != usize::from(placed) || g.on_sky.iter().any(|&n| n > 0) {
                    return Err(ParsePositionError::Inconsistent(
                        "while blocks are placed the sky holds only the blocks placed so far".into(),
                    ));
                }
                if usize::from(g.to_move) != (usize::from(g.starter) + usize::from(placed)) % seats {
                    return Err(ParsePositionError::Inconsistent(
                        "blocks are placed in turn order from the starter".into(),
                    ));
                }
            }
            _ => {}
        }
        Ok(g)
    }

    fn position(&self) -> String {
        format!("{} rng={}", self.position_without_rng(), self.rng.to_text())
    }

    fn position_without_rng(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::with_capacity(160);
        let _ = write!(
            out,
            "round={} starter={} to_move={} phase=",
            self.round, self.starter, self.to_move
        );
        match self.phase {
            Phase::Block { placed } => {
                let _ = write!(out, "block:{placed}");
            }
            Phase::Start => out.push_str("start"),
            Phase::Sun { cell } => {
                let _ = write!(out, "sun:{}", self.sq(usize::from(cell)));
            }
            Phase::Continue => out.push_str("continue"),
            Phase::Over => out.push_str("over"),
        }
        let n = usize::from(self.seats);
        let _ = write!(out, " turn={} totals=", self.turn);
        write_join(&mut out, &self.totals[..n]);
        out.push_str(" collected=");
        for p in 0..n {
            if p > 0 {
                out.push(',');
            }
            let before = out.len();
            self.write_collected(p, &mut out);
            if out.len() == before {
                out.push('-');
            }
        }
        out.push_str(" sky=");
        self.write_sky(&mut out);
        out
    }

    fn seats(&self) -> usize {
        usize::from(self.seats)
    }

    fn to_act(&self) -> SeatSet {
        match self.phase {
            Phase::Over => SeatSet::EMPTY,
            _ => SeatSet::single(usize::from(self.to_move)),
        }
    }

    fn legal_moves(&self, seat: Seat, out: &mut Vec<UtaraMove>) {
        if self.phase != Phase::Over && seat == usize::from(self.to_move) {
            self.each_move(|m| out.push(m));
        }
    }

    fn play(&mut self, seat: Seat, mv: &UtaraMove) -> Result<(), PlayError> {
        if self.phase == Phase::Over {
            return Err(PlayError::GameOver);
        }
        if seat >= usize::from(self.seats) {
            return Err(PlayError::NoSuchSeat(seat));
        }
        if seat != usize::from(self.to_move) {
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
        let (w, h) = (self.w(), self.h());
        match (self.phase, *mv) {
            (Phase::Block { placed }, UtaraMove::Block(sq)) => {
                let cell = sq.index(w, h).ok_or(illegal("the cell is not on the sky"))?;
                if self.sky[cell] != EMPTY {
                    return Err(illegal("the cell already holds a block"));
                }
                self.put(cell, BLOCK);
                let placed = placed + 1;
                if placed == self.seats {
                    self.roll_round();
                    self.to_move = self.starter;
                    self.phase = Phase::Start;
                } else {
                    self.to_move = (self.starter + placed) % self.seats;
                    self.phase = Phase::Block { placed };
                }
            }
            (Phase::Start | Phase::Continue, UtaraMove::Start(sq)) => {
                let cell = sq.index(w, h).ok_or(illegal("the cell is not on the sky"))?;
                let code = self.sky[cell];
                if code == EMPTY || code == BLOCK || !is_directional(face_of(code)) {
                    return Err(illegal("a path starts from a North, East, South or West die"));
                }
                let end = self.run_path(cell, face_of(code));
                self.after_path(end);
            }
            (Phase::Continue, UtaraMove::Stop) => self.end_turn(),
            (Phase::Sun { cell }, UtaraMove::East | UtaraMove::West) => {
                let dir = if *mv == UtaraMove::East { EAST } else { WEST };
                let end = self.run_path(usize::from(cell), dir);
                self.after_path(end);
            }
            (Phase::Block { .. }, _) => return Err(illegal("blocks are being placed: play block:<cell>")),
            (Phase::Sun { .. }, _) => return Err(illegal("a High Sun waits: play east or west")),
            (Phase::Start, UtaraMove::Stop) => return Err(illegal("stop is only open after a Half Moon")),
            _ => return Err(illegal("not a move in this phase")),
        }
        Ok(())
    }

    fn write_move(mv: &UtaraMove, out: &mut String) {
        mv.push_to(out);
    }

    fn read_move(&self, text: &str) -> Result<UtaraMove, ParseMoveError> {
        let t = text.trim();
        let (w, h) = (self.w(), self.h());
        let cell = |s: &str| {
            Square::parse(s, w, h).ok_or_else(|| {
                ParseMoveError::new(
                    text,
                    format!("{s:?} is not a cell of the sky (a1 to {})", Square::last(w, h)),
                )
            })
        };
        match t {
            "east" => Ok(UtaraMove::East),
            "west" => Ok(UtaraMove::West),
            "stop" => Ok(UtaraMove::Stop),
            _ => match t.strip_prefix("block:") {
                Some(c) => Ok(UtaraMove::Block(cell(c)?)),
                None => Ok(UtaraMove::Start(cell(t)?)),
            },
        }
    }

    fn observation(&self, seat: Seat) -> UtaraObservation {
        let n = usize::from(self.seats);
        let mut o = self.observation_without_sky(seat);
        for (cell, &code) in self.sky.iter().enumerate() {
            if code == BLOCK {
                o.blocks.push(self.sq(cell).to_string());
            } else if code != EMPTY {
                o.dice.push(SkyDie {
                    cell: self.sq(cell).to_string(),
                    face: FACES[usize::from(face_of(code)) - 1],
                    owner: owner_of(code),
                });
            }
        }
        o.sun_cell = self.sun_cell_index().map(|cell| self.sq(cell).to_string());
        o.collected = (0..n).map(|p| self.collected_text(p)).collect();
        o
    }

    fn write_observation(&self, seat: Seat, out: &mut String) {
        let n = usize::from(self.seats);
        let mut o = Object::new(out);
        o.int("seat", seat)
            .ints("sky", [self.options.width, self.options.height]);
        let dice = self
            .sky
            .iter()
            .enumerate()
            .filter(|&(_, &code)| code != BLOCK && code != EMPTY);
        array(o.key("dice"), dice, |out, (cell, &code)| {
            let mut die = Object::new(out);
            die.square("cell", self.sq(cell))
                .word(
                    "face",
                    FACES[usize::from(face_of(code)) - 1].encode_utf8(&mut [0; 4]),
                )
                .int("owner", owner_of(code));
            die.end();
        });
        let blocks = (0..self.sky.len()).filter(|&cell| self.sky[cell] == BLOCK);
        array(o.key("blocks"), blocks, |out, cell| square(out, self.sq(cell)));
        o.word(
            "phase",
            match self.phase {
                Phase::Block { .. } => "block",
                Phase::Start => "start",
                Phase::Sun { .. } => "sun",
                Phase::Continue => "continue",
                Phase::Over => "over",
            },
        );
        match self.phase {
            Phase::Sun { cell } => o.square("sun_cell", self.sq(usize::from(cell))),
            _ => {
                o.key("sun_cell").push_str("null");
                &mut o
            }
        };
        o.int("to_move", self.to_move)
            .ints("round", [self.round, self.options.rounds]);
        array(o.key("collected"), 0..n, |out, p| {
            out.push('"');
            self.write_collected(p, out);
            out.push('"');
        });
        o.ints("round_points", (0..n).map(|p| self.round_points(p)))
            .ints("totals", self.totals[..n].iter().copied())
            .int("turn", self.turn);
        o.end();
    }

    fn outcome(&self) -> Option<Outcome> {
        if self.phase != Phase::Over {
            return None;
        }
        let totals = &self.totals[..usize::from(self.seats)];
        let capped = self.turn >= self.options.max_turns;
        Some(Outcome::by_key(totals, totals.to_vec(), capped))
    }

    fn rng_mut(&mut self) -> Option<&mut GameRng> {
        Some(&mut self.rng)
    }

    fn determinize(&self, _seat: Seat, rng: &mut GameRng) -> Utara {
        let mut g = self.clone();
        g.rng = GameRng::from_rng(rng);
        g
    }

    fn render(&self) -> String {
        let (w, h) = (self.w(), self.h());
        let mut s = String::new();
        for y in (0..h).rev() {
            s.push_str(&format!("{:>2} ", y + 1));
            for x in 0..w {
                let code = self.sky[y * w + x];
                s.push_str(&match code {
                    EMPTY => " .".to_owned(),
                    BLOCK => " #".to_owned(),
                    c => format!(" {}", FACES[usize::from(face_of(c)) - 1]),
                });
            }
            s.push('\n');
        }
        s.push_str("   ");
        for x in 0..w {
            s.push_str(&format!(" {}", char::from(b'a' + x as u8)));
        }
        s.push_str("\nN up; O = Sun, C = Moon, # = block\n");
        let obs = self.observation(0);
        for p in 0..usize::from(self.seats) {
            s.push_str(&format!(
                "seat {p}: collected [{}] round points {} total {}\n",
                obs.collected[p], obs.round_points[p], obs.totals[p]
            ));
        }
        s.push_str(&format!(
            "round {}/{}  turn {}  {}\n",
            self.round,
            self.options.rounds,
            self.turn,
            match self.phase {
                Phase::Block { .. } => format!("seat {} places a block", self.to_move),
                Phase::Start => format!("seat {} starts a path", self.to_move),
                Phase::Sun { cell } => format!(
                    "seat {}: the Sun on {} goes east or west?",
                    self.to_move,
                    self.sq(usize::from(cell))
                ),
                Phase::Continue => format!("seat {}: another path, or stop", self.to_move),
                Phase::Over => "game over".to_owned(),
            }
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mulligan_rolls_again_until_a_directional_die_shows() {
        // One die each: a sky of only Suns and Moons comes up one time in nine.
        let options = UtaraOptions {
            dice: 1,
            width: 3,
            height: 3,
            ..UtaraOptions::for_seats(2)
        };
        let mut without = 0;
        for seed in 0..300 {
            let g = Utara::new(&options, 2, GameRng::from_seed(seed));
            assert!(
                g.directional_left(),
                "seed {seed}: a round started with no directional die"
            );
            let mut raw = Utara::new(&options, 2, GameRng::from_seed(seed));
            raw.sky.iter_mut().for_each(|c| *c = EMPTY);
            raw.on_sky = [0; 7];
            raw.roll(&[0, 1], false);
            if !raw.directional_left() {
                without += 1;
            }
        }
        assert!(
            without > 10,
            "without the mulligan such skies happen ({without} of 300)"
        );
    }
}
