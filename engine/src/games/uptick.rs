//! Uptick: two players place and move dice on a square board; a die rises by one
//! after every move, dice freeze next to higher opposing dice, and captured pips
//! score. See `docs/rules/uptick.md`.
//!
//! Cells are named like chess squares: file letter `a`.. then rank `1`.. (`d4`).
//! Move notation: place a die of value `v` on a cell as `d4=3`; move a die as
//! `c3-f6` (`c3xf6` is read the same). Seat 0 moves first.

use crate::game::{Game, Nature, Outcome, ParseMoveError, PlayError, Presentation};
use crate::json::{Object, array};
use crate::notation::{Fields, ParsePositionError, invalid, parse_natural};
use crate::options::{OptionError, OptionKind, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{Seat, SeatSet};
pub use crate::square::Square;
use serde::Serialize;
use std::fmt;

const MAX_SIZE: usize = 16;
const PADDED: usize = (MAX_SIZE + 2) * (MAX_SIZE + 2);
const DIRECTIONS: [(i8, i8); 8] = [
    (0, 1),
    (1, 1),
    (1, 0),
    (1, -1),
    (0, -1),
    (-1, -1),
    (-1, 0),
    (-1, 1),
];

/// Options of `uptick`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UptickOptions {
    /// Side of the square board.
    pub size: u8,
    /// Dice each player starts with in reserve.
    pub reserve: u8,
    /// Moves after which the game is decided by score.
    pub max_turns: u32,
}

impl Default for UptickOptions {
    fn default() -> Self {
        UptickOptions {
            size: 8,
            reserve: 8,
            max_turns: 1000,
        }
    }
}

const SPECS: &[OptionSpec] = &[
    OptionSpec {
        name: "size",
        default: "8",
        kind: OptionKind::Int {
            min: 3,
            max: MAX_SIZE as i64,
        },
        help: "side of the square board (cells a1 to h8 at 8)",
    },
    OptionSpec {
        name: "reserve",
        default: "8",
        kind: OptionKind::Int { min: 1, max: 64 },
        help: "dice each player holds in reserve at the start",
    },
    OptionSpec {
        name: "max_turns",
        default: "1000",
        kind: OptionKind::Int {
            min: 1,
            max: 1_000_000,
        },
        help: "moves after which the game ends on score (equal scores draw)",
    },
];

/// A move of `uptick`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UptickMove {
    /// Place a reserve die showing `value` on an empty cell.
    Place {
        /// Target cell.
        cell: Square,
        /// Value 1–6.
        value: u8,
    },
    /// Move a die in a straight line.
    Step {
        /// Starting cell.
        from: Square,
        /// Landing cell.
        to: Square,
    },
}

impl UptickMove {
    /// Appends the notation to `out` (see [`Game::write_move`]).
    pub fn push_to(self, out: &mut String) {
        match self {
            UptickMove::Place { cell, value } => {
                cell.push_to(out);
                out.push('=');
                out.push(char::from(b'0' + value));
            }
            UptickMove::Step { from, to } => {
                from.push_to(out);
                out.push('-');
                to.push_to(out);
            }
        }
    }
}

impl UptickMove {
    /// The most bytes [`UptickMove::put_ascii`] writes (`p16-p16` on the largest board).
    const MAX_LEN: usize = 7;

    /// Writes the notation into `buf` at `at` and returns where it ends.
    fn put_ascii(self, buf: &mut [u8], at: usize) -> usize {
        match self {
            UptickMove::Place { cell, value } => {
                let at = cell.put_ascii(buf, at);
                buf[at] = b'=';
                buf[at + 1] = b'0' + value;
                at + 2
            }
            UptickMove::Step { from, to } => {
                let at = from.put_ascii(buf, at);
                buf[at] = b'-';
                to.put_ascii(buf, at + 1)
            }
        }
    }
}

impl fmt::Display for UptickMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(8);
        self.push_to(&mut out);
        f.write_str(&out)
    }
}

/// A die on the board: owner and value, or empty, or the border around the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Cell(u8);

impl Cell {
    const EMPTY: Cell = Cell(0);
    /// The padding ring: never a die, never empty.
    const OFF: Cell = Cell(0xFF);
    fn is_die(self) -> bool {
        self.0 != 0 && self.0 != 0xFF
    }
    fn die(owner: usize, value: u8) -> Cell {
        Cell(((owner as u8) << 3) | value)
    }
    fn is_empty(self) -> bool {
        self.0 == 0
    }
    fn owner(self) -> usize {
        usize::from(self.0 >> 3)
    }
    fn value(self) -> u8 {
        self.0 & 7
    }
}

/// The cells holding one seat's dice, as a bit set over padded indices (derived
/// from `cells`; kept so the move generator visits the dice, not every cell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct CellSet([u64; PADDED.div_ceil(64)]);

impl CellSet {
    fn insert(&mut self, cell: usize) {
        self.0[cell / 64] |= 1 << (cell % 64);
    }
    fn remove(&mut self, cell: usize) {
        self.0[cell / 64] &= !(1 << (cell % 64));
    }
    fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Calls `f` with each cell in increasing order; stops when it returns false.
    fn each(&self, mut f: impl FnMut(usize) -> bool) {
        for (i, &word) in self.0.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                if !f(i * 64 + bits.trailing_zeros() as usize) {
                    return;
                }
                bits &= bits - 1;
            }
        }
    }
}

/// A state of `uptick`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uptick {
    options: UptickOptions,
    /// The board with a one-cell border of `Cell::OFF` ("mailbox"): neighbours and
    /// rays are fixed offsets, with no division and no bounds checks.
    cells: [Cell; PADDED],
    dice_of: [CellSet; 2],
    reserve: [u8; 2],
    captured: [i64; 2],
    to_move: u8,
    last_mover: Option<u8>,
    turn: u32,
    over: bool,
}

/// One die as a seat sees it.
#[derive(Debug, Clone, Serialize)]
pub struct DieView {
    /// Cell name, e.g. `d4`.
    pub cell: String,
    /// Owner.
    pub seat: Seat,
    /// Value 1–6.
    pub value: u8,
    /// Whether an adjacent opposing die of higher value freezes it.
    pub frozen: bool,
}

/// What a seat sees of `uptick`: everything (no hidden information).
#[derive(Debug, Clone, Serialize)]
pub struct UptickObservation {
    /// The observing seat.
    pub seat: Seat,
    /// Board side.
    pub size: u8,
    /// Dice on the board.
    pub dice: Vec<DieView>,
    /// Dice left in each seat's reserve.
    pub reserve: [u8; 2],
    /// Pips captured by each seat.
    pub captured: [i64; 2],
    /// Whose turn it is.
    pub to_move: Seat,
    /// The last seat to place or move (wins a tie).
    pub last_mover: Option<Seat>,
    /// Moves made so far.
    pub turn: u32,
    /// Whether the game is over.
    pub over: bool,
}

impl Uptick {
    fn size(&self) -> usize {
        usize::from(self.options.size)
    }

    /// [`Game::observation`] with `dice` left empty: the rest of it costs no
    /// strings, and numeric encodings read the dice typed, from
    /// [`Uptick::board_dice`].
    pub fn observation_without_dice(&self, seat: Seat) -> UptickObservation {
        UptickObservation {
            seat,
            size: self.options.size,
            dice: Vec::new(),
            reserve: self.reserve,
            captured: self.captured,
            to_move: usize::from(self.to_move),
            last_mover: self.last_mover.map(usize::from),
            turn: self.turn,
            over: self.over,
        }
    }

    /// The dice on the board as the observation lists them (square, owner, value,
    /// frozen), typed: for numeric encodings, which need no cell names.
    pub fn board_dice(&self) -> impl Iterator<Item = (Square, Seat, u8, bool)> + '_ {
        self.board_cells()
            .filter(|&(_, c)| self.cells[c].is_die())
            .map(|(sq, c)| {
                (
                    sq,
                    self.cells[c].owner(),
                    self.cells[c].value(),
                    self.is_frozen(c),
                )
            })
    }

    /// Writes a board cell, keeping the per-seat sets in step.
    fn set_cell(&mut self, cell: usize, value: Cell) {
        let old = self.cells[cell];
        if old.is_die() {
            self.dice_of[old.owner()].remove(cell);
        }
        if value.is_die() {
            self.dice_of[value.owner()].insert(cell);
        }
        self.cells[cell] = value;
    }

    fn stride(&self) -> usize {
        self.size() + 2
    }

    /// The padded index of file `x`, rank `y` (both from 0).
    fn at(&self, x: usize, y: usize) -> usize {
        (y + 1) * self.stride() + x + 1
    }

    /// The padded index of a square, if it is on the board.
    fn index(&self, sq: Square) -> Option<usize> {
        let n = self.size();
        (usize::from(sq.file) < n && usize::from(sq.rank) < n)
            .then(|| self.at(usize::from(sq.file), usize::from(sq.rank)))
    }

    /// Index offsets of the eight directions, in [`DIRECTIONS`] order.
    fn offsets(&self) -> [isize; 8] {
        let s = self.stride() as isize;
        DIRECTIONS.map(|(dx, dy)| isize::from(dy) * s + isize::from(dx))
    }

    fn neighbour_cells(&self, cell: usize) -> impl Iterator<Item = Cell> + '_ {
        self.offsets()
            .into_iter()
            .map(move |o| self.cells[cell.wrapping_add_signed(o)])
    }

    /// Whether the die on `cell` is frozen by a higher adjacent opposing die.
    fn is_frozen(&self, cell: usize) -> bool {
        let me = self.cells[cell];
        self.neighbour_cells(cell)
            .any(|o| o.is_die() && o.owner() != me.owner() && o.value() > me.value())
    }

    /// The highest value `p` may place on an empty cell without freezing a die.
    fn max_place_value(&self, p: usize, cell: usize) -> u8 {
        self.neighbour_cells(cell)
            .filter(|d| d.is_die() && d.owner() != p)
            .map(Cell::value)
            .min()
            .unwrap_or(6)
    }

    /// The highest value `p` may place on each cell (0: occupied), computed from the
    /// opposing dice rather than by looking around every empty cell.
    fn place_caps(&self, p: usize) -> [u8; PADDED] {
        let offsets = self.offsets();
        let mut caps = [6u8; PADDED];
        self.dice_of[p].each(|cell| {
            caps[cell] = 0;
            true
        });
        self.dice_of[1 - p].each(|cell| {
            caps[cell] = 0;
            let value = self.cells[cell].value();
            for o in offsets {
                let c = cell.wrapping_add_signed(o);
                caps[c] = caps[c].min(value);
            }
            true
        });
        caps
    }

    fn each_move(&self, p: usize, mut f: impl FnMut(UptickMove) -> bool) {
        let n = self.size();
        if self.reserve[p] > 0 {
            let caps = self.place_caps(p);
            for y in 0..n {
                for x in 0..n {
                    let cell = Square {
                        file: x as u8,
                        rank: y as u8,
                    };
                    for value in 1..=caps[self.at(x, y)] {
                        if !f(UptickMove::Place { cell, value }) {
                            return;
                        }
                    }
                }
            }
        }
        self.each_step(p, f);
    }

    /// Calls `f` with each die move of `p`; stops when `f` returns false.
    fn each_step(&self, p: usize, mut f: impl FnMut(UptickMove) -> bool) {
        let stride = self.stride();
        let offsets = self.offsets();
        self.dice_of[p].each(|from| {
            let die = self.cells[from];
            if die.value() >= 6 || self.is_frozen(from) {
                return true;
            }
            let (x, y) = ((from % stride - 1) as i8, (from / stride - 1) as i8);
            let a = Square {
                file: x as u8,
                rank: y as u8,
            };
            for (&o, &(dx, dy)) in offsets.iter().zip(&DIRECTIONS) {
                let mut to = from;
                for k in 1..=die.value() as i8 {
                    to = to.wrapping_add_signed(o);
                    let target = self.cells[to];
                    if target == Cell::OFF {
                        break;
                    }
                    let mine = target.is_die() && target.owner() == p;
                    if !mine {
                        let b = Square {
                            file: (x + k * dx) as u8,
                            rank: (y + k * dy) as u8,
                        };
                        if !f(UptickMove::Step { from: a, to: b }) {
                            return false;
                        }
                    }
                    if target.is_die() && !mine {
                        break; // an opposing die can be taken but not jumped
                    }
                }
            }
            true
        });
    }

    /// Whether `p` may move its die from `from` to `to`, checked along the line.
    fn is_step_legal(&self, p: usize, from: Square, to: Square) -> bool {
        let (Some(a), Some(b)) = (self.index(from), self.index(to)) else {
            return false;
        };
        let die = self.cells[a];
        if !die.is_die() || die.owner() != p || die.value() >= 6 || self.is_frozen(a) {
            return false;
        }
        let (dx, dy) = (
            i32::from(to.file) - i32::from(from.file),
            i32::from(to.rank) - i32::from(from.rank),
        );
        let k = dx.abs().max(dy.abs());
        if k == 0 || k > i32::from(die.value()) || !(dx == 0 || dy == 0 || dx.abs() == dy.abs()) {
            return false;
        }
        let step = dy.signum() as isize * self.stride() as isize + dx.signum() as isize;
        let mut between = (1..k as isize).map(|i| self.cells[a.wrapping_add_signed(i * step)]);
        let opposing_in_the_way = between.any(|c| c.is_die() && c.owner() != p);
        let own_on_target = self.cells[b].is_die() && self.cells[b].owner() == p;
        !opposing_in_the_way && !own_on_target
    }

    fn has_move(&self, p: usize) -> bool {
        let n = self.size();
        if self.reserve[p] > 0 && self.dice_of[0].len() + self.dice_of[1].len() < n * n {
            return true; // a 1 can always be placed on an empty cell
        }
        let mut any = false;
        self.each_move(p, |_| {
            any = true;
            false
        });
        any
    }

    fn why_illegal(&self, p: usize, mv: UptickMove) -> &'static str {
        match mv {
            UptickMove::Place { cell, value } => {
                let Some(cell) = self.index(cell) else {
                    return "the cell is off the board";
                };
                if self.reserve[p] == 0 {
                    "no die left in reserve"
                } else if !self.cells[cell].is_empty() {
                    "the cell is occupied"
                } else if !(1..=6).contains(&value) {
                    "a die shows 1 to 6"
                } else if value > self.max_place_value(p, cell) {
                    "a placed die may not freeze an opposing die (an adjacent opposing die has a lower value)"
                } else {
                    "not a legal placement"
                }
            }
            UptickMove::Step { from, to } => {
                let (Some(from), Some(to)) = (self.index(from), self.index(to)) else {
                    return "the cell is off the board";
                };
                let die = self.cells[from];
                if !die.is_die() || die.owner() != p {
                    "no die of yours on the starting cell"
                } else if die.value() >= 6 {
                    "a six never moves"
                } else if self.is_frozen(from) {
                    "the die is frozen by a higher adjacent opposing die"
                } else if self.cells[to].is_die() && self.cells[to].owner() == p {
                    "the landing cell holds your own die"
                } else {
                    "a die moves in a straight line up to its value, over own dice but not opposing ones"
                }
            }
        }
    }

    fn is_legal(&self, p: usize, mv: UptickMove) -> bool {
        match mv {
            // Checking a placement directly avoids listing every other placement.
            UptickMove::Place { cell, value } => self.index(cell).is_some_and(|cell| {
                self.reserve[p] > 0
                    && self.cells[cell].is_empty()
                    && (1..=self.max_place_value(p, cell)).contains(&value)
            }),
            UptickMove::Step { from, to } => self.is_step_legal(p, from, to),
        }
    }

    /// Refuses counts no game could reach: each seat's dice on the board, in
    /// reserve and lost to captures make up its `reserve` option, the dice lost
    /// show 1 to 6 pips each in the captor's score, and every die out of reserve
    /// took a move to place.
    fn check_counts(&self, reserve_text: &str, captured_text: &str) -> Result<(), ParsePositionError> {
        let start = u32::from(self.options.reserve);
        let mut placed = 0u32;
        for p in 0..2 {
            let on_board = self
                .board_cells()
                .filter(|&(_, c)| self.cells[c].is_die() && self.cells[c].owner() == p)
                .count() as u32;
            let held = u32::from(self.reserve[p]);
            let Some(lost) = start.checked_sub(held).and_then(|n| n.checked_sub(on_board)) else {
                return Err(ParsePositionError::Inconsistent(format!(
                    "seat {p} has {held} dice in reserve and {on_board} on the board, more than the {start} it starts with"
                )));
            };
            let pips = self.captured[1 - p];
            let lost = i64::from(lost);
            if !(lost..=6 * lost).contains(&pips) {
                return Err(invalid(
                    "captured",
                    captured_text,
                    format!(
                        "seat {} captured the {lost} dice seat {p} lost, so it holds {lost} to {} pips, not {pips}",
                        1 - p,
                        6 * lost
                    ),
                ));
            }
            placed += start - held;
        }
        if self.turn < placed {
            return Err(invalid(
                "reserve",
                reserve_text,
                format!(
                    "{placed} dice were placed, which takes {placed} moves, but turn={}",
                    self.turn
                ),
            ));
        }
        Ok(())
    }

    /// Hands the turn on after a move by `mover`, passing as the rules demand.
    fn advance(&mut self, mover: usize) {
        if self.turn >= self.options.max_turns {
            self.over = true;
            return;
        }
        let next = 1 - mover;
        if self.has_move(next) {
            self.to_move = next as u8;
        } else if self.has_move(mover) {
            self.to_move = mover as u8; // the other seat passes
        } else {
            self.over = true; // two passes in a row
        }
    }

    /// The padded indices of the board's cells, rank by rank from a1.
    fn board_cells(&self) -> impl Iterator<Item = (Square, usize)> + '_ {
        let n = self.size();
        (0..n).flat_map(move |y| {
            (0..n).map(move |x| {
                (
                    Square {
                        file: x as u8,
                        rank: y as u8,
                    },
                    self.at(x, y),
                )
            })
        })
    }
}

fn parse_cell(size: u8, text: &str, whole: &str) -> Result<Square, ParseMoveError> {
    let n = usize::from(size);
    Square::parse(text, n, n).ok_or_else(|| {
        ParseMoveError::new(
            whole,
            format!(
                "{text:?} is not a cell of the {size}x{size} board (a1 to {})",
                Square::last(n, n)
            ),
        )
    })
}

impl Game for Uptick {
    type Move = UptickMove;
    type Options = UptickOptions;
    type Observation = UptickObservation;

    const ID: &'static str = "uptick";
    const NAME: &'static str = "Uptick";
    const SEATS: std::ops::RangeInclusive<usize> = 2..=2;
    const DEFAULT_SEATS: usize = 2;
    const NATURE: Nature = Nature {
        chance: false,
        simultaneous: false,
        hidden_information: false,
    };
    const PRESENTATION: Presentation = Presentation {
        legend: "Board: A2 is seat 0's die showing 2, b5 seat 1's showing 5; * marks a frozen die.\n\
                 Moves: cell=value places a die from your reserve (d4=3); from-to moves one (d4-d5), from-to\n\
                 onto a lower opposing die captures it.",
        score_unit: " pips",
        seat_mark: Presentation::letter_case,
        events_in_words: uptick_events,
        drawing: include_str!("draw/uptick.js"),
    };

    fn option_specs() -> &'static [OptionSpec] {
        SPECS
    }

    fn options(values: &OptionValues, _seats: usize) -> Result<UptickOptions, OptionError> {
        Ok(UptickOptions {
            size: values.int("size") as u8,
            reserve: values.int("reserve") as u8,
            max_turns: values.int("max_turns") as u32,
        })
    }

    fn new(options: &UptickOptions, _seats: usize, _rng: GameRng) -> Uptick {
        // Uptick has no chance: the RNG is not kept.
        let mut g = Uptick {
            options: options.clone(),
            cells: [Cell::EMPTY; PADDED],
            dice_of: [CellSet::default(); 2],
            reserve: [options.reserve; 2],
            captured: [0, 0],
            to_move: 0,
            last_mover: None,
            turn: 0,
            over: false,
        };
        let s = g.stride();
        for y in 0..s {
            for x in 0..s {
                if x == 0 || y == 0 || x == s - 1 || y == s - 1 {
                    g.cells[y * s + x] = Cell::OFF;
                }
            }
        }
        g
    }

    fn read_position(
        options: &UptickOptions,
        text: &str,
        _rng: GameRng,
    ) -> Result<Uptick, ParsePositionError> {
        let f = Fields::parse(text, &["board", "to_move", "reserve", "captured", "last", "turn"])?;
        let mut g = Uptick::new(options, 2, GameRng::from_seed(0));
        let n = g.size();
        let board = f.raw("board")?;
        let ranks: Vec<&str> = board.split('/').collect();
        if ranks.len() != n {
            return Err(invalid(
                "board",
                board,
                format!("expected {n} ranks separated by '/'"),
            ));
        }
        for (i, rank) in ranks.iter().enumerate() {
            let y = n - 1 - i; // the first rank written is the top one
            let mut x = 0;
            let mut digits = String::new();
            let flush = |digits: &mut String, x: &mut usize| -> Result<(), ParsePositionError> {
                if !digits.is_empty() {
                    let run: usize = parse_natural(digits).map_err(|e| invalid("board", rank, e))?;
                    if run == 0 {
                        return Err(invalid("board", rank, "a run of empty cells is at least 1"));
                    }
                    *x = x
                        .checked_add(run)
                        .filter(|&x| x <= n)
                        .ok_or_else(|| invalid("board", rank, format!("rank longer than {n} cells")))?;
                    digits.clear();
                }
                Ok(())
            };
            for c in rank.chars() {
                if c.is_ascii_digit() {
                    digits.push(c);
                    continue;
                }
                flush(&mut digits, &mut x)?;
                let cell = match c {
                    '.' => Cell::EMPTY,
                    'A'..='F' => Cell::die(0, c as u8 - b'A' + 1),
                    'a'..='f' => Cell::die(1, c as u8 - b'a' + 1),
                    _ => {
                        return Err(invalid(
                            "board",
                            rank,
                            format!("{c:?} is not '.', a digit, A-F or a-f"),
                        ));
                    }
                };
                if x >= n {
                    return Err(invalid("board", rank, format!("rank longer than {n} cells")));
                }
                let idx = g.at(x, y);
                g.set_cell(idx, cell);
                x += 1;
            }
            flush(&mut digits, &mut x)?;
            if x != n {
                return Err(invalid("board", rank, format!("rank of {x} cells, expected {n}")));
            }
        }
        g.to_move = f.get("to_move")?;
        if g.to_move > 1 {
            return Err(invalid("to_move", f.raw("to_move")?, "a seat is 0 or 1"));
        }
        let reserve: Vec<u8> = f.list("reserve")?;
        let captured: Vec<i64> = f.list("captured")?;
        if reserve.len() != 2 || captured.len() != 2 || captured.iter().any(|&c| c < 0) {
            return Err(invalid(
                "reserve",
                f.raw("reserve")?,
                "reserve and captured each hold two counts",
            ));
        }
        g.reserve = [reserve[0], reserve[1]];
        g.captured = [captured[0], captured[1]];
        let last = f.raw("last")?;
        g.last_mover = match last {
            "-" => None,
            "0" => Some(0),
            "1" => Some(1),
            _ => return Err(invalid("last", last, "0, 1 or -")),
        };
        g.turn = f.get("turn")?;
        if g.turn > options.max_turns {
            return Err(invalid(
                "turn",
                f.raw("turn")?,
                format!("the game stops after max_turns ({}) moves", options.max_turns),
            ));
        }
        g.check_counts(f.raw("reserve")?, f.raw("captured")?)?;
        if (g.turn == 0) != g.last_mover.is_none() {
            return Err(invalid(
                "last",
                last,
                format!("last is - exactly when no move was made, and turn={}", g.turn),
            ));
        }
        if g.turn == 0 && g.to_move != 0 {
            return Err(ParsePositionError::Inconsistent(
                "seat 0 makes the first move".into(),
            ));
        }
        g.over = g.turn >= options.max_turns || (!g.has_move(0) && !g.has_move(1));
        if !g.over && !g.has_move(usize::from(g.to_move)) {
            return Err(ParsePositionError::Inconsistent(format!(
                "seat {} is to move but has no legal move (it would have passed)",
                g.to_move
            )));
        }
        Ok(g)
    }

    fn position(&self) -> String {
        use crate::json::int;
        let n = self.size();
        // One buffer, no formatting machinery: every request carries the position.
        let mut s = String::with_capacity(n * n + 64);
        s.push_str("board=");
        for y in (0..n).rev() {
            let mut empty = 0;
            for x in 0..n {
                let c = self.cells[self.at(x, y)];
                if c.is_empty() {
                    empty += 1;
                    continue;
                }
                if empty > 0 {
                    int(&mut s, empty);
                    empty = 0;
                }
                let base = if c.owner() == 0 { b'A' } else { b'a' };
                s.push(char::from(base + c.value() - 1));
            }
            if empty > 0 {
                int(&mut s, empty);
            }
            if y > 0 {
                s.push('/');
            }
        }
        s.push_str(" to_move=");
        int(&mut s, self.to_move);
        s.push_str(" reserve=");
        int(&mut s, self.reserve[0]);
        s.push(',');
        int(&mut s, self.reserve[1]);
        s.push_str(" captured=");
        int(&mut s, self.captured[0]);
        s.push(',');
        int(&mut s, self.captured[1]);
        s.push_str(" last=");
        match self.last_mover {
            Some(seat) => int(&mut s, seat),
            None => s.push('-'),
        }
        s.push_str(" turn=");
        int(&mut s, self.turn);
        s
    }

    fn position_without_rng(&self) -> String {
        // Uptick has no dice to come: its position carries no `rng` to cut off.
        self.position()
    }

    fn seats(&self) -> usize {
        2
    }

    fn to_act(&self) -> SeatSet {
        if self.over {
            SeatSet::EMPTY
        } else {
            SeatSet::single(usize::from(self.to_move))
        }
    }

    fn legal_moves(&self, seat: Seat, out: &mut Vec<UptickMove>) {
        if self.over || seat != usize::from(self.to_move) {
            return;
        }
        // Placements are most of the list: reserve once and push directly (this is
        // the hot loop of every playout).
        if self.reserve[seat] > 0 {
            let caps = self.place_caps(seat);
            out.reserve(6 * self.size() * self.size());
            for (cell, idx) in self.board_cells() {
                out.extend((1..=caps[idx]).map(|value| UptickMove::Place { cell, value }));
            }
        }
        self.each_step(seat, |m| {
            out.push(m);
            true
        });
    }

    fn play(&mut self, seat: Seat, mv: &UptickMove) -> Result<(), PlayError> {
        if self.over {
            return Err(PlayError::GameOver);
        }
        if seat > 1 {
            return Err(PlayError::NoSuchSeat(seat));
        }
        if seat != usize::from(self.to_move) {
            return Err(PlayError::NotToAct {
                seat,
                to_act: self.to_act(),
            });
        }
        if !self.is_legal(seat, *mv) {
            return Err(PlayError::Illegal {
                seat,
                mv: mv.to_string(),
                why: self.why_illegal(seat, *mv),
            });
        }
        match *mv {
            UptickMove::Place { cell, value } => {
                let cell = self.index(cell).unwrap_or_default();
                self.set_cell(cell, Cell::die(seat, value));
                self.reserve[seat] -= 1;
            }
            UptickMove::Step { from, to } => {
                let (from, to) = (
                    self.index(from).unwrap_or_default(),
                    self.index(to).unwrap_or_default(),
                );
                let die = self.cells[from];
                let target = self.cells[to];
                if !target.is_empty() {
                    self.captured[seat] += i64::from(target.value());
                }
                self.set_cell(to, Cell::die(seat, die.value() + 1));
                self.set_cell(from, Cell::EMPTY);
            }
        }
        self.last_mover = Some(seat as u8);
        self.turn += 1;
        self.advance(seat);
        Ok(())
    }

    fn write_move(mv: &UptickMove, out: &mut String) {
        mv.push_to(out);
    }

    fn write_move_list(moves: &[UptickMove], out: &mut String) {
        // ~150 moves per request: written into a byte buffer sized for the longest
        // moves and checked as text once, rather than pushed a `char` at a time.
        let mut bytes = vec![0u8; moves.len() * (UptickMove::MAX_LEN + 1)];
        let mut at = 0;
        for (i, m) in moves.iter().enumerate() {
            if i > 0 {
                bytes[at] = b',';
                at += 1;
            }
            at = m.put_ascii(&mut bytes, at);
        }
        out.push_str(std::str::from_utf8(&bytes[..at]).unwrap_or_default());
    }

    fn read_move(&self, text: &str) -> Result<UptickMove, ParseMoveError> {
        let t = text.trim();
        let size = self.options.size;
        if let Some((cell, value)) = t.split_once('=') {
            let cell = parse_cell(size, cell, text)?;
            let value = match value.parse::<u8>() {
                Ok(v) if (1..=6).contains(&v) => v,
                _ => return Err(ParseMoveError::new(text, "a die shows 1 to 6")),
            };
            return Ok(UptickMove::Place { cell, value });
        }
        if let Some((from, to)) = t.split_once(['-', 'x']) {
            return Ok(UptickMove::Step {
                from: parse_cell(size, from, text)?,
                to: parse_cell(size, to, text)?,
            });
        }
        Err(ParseMoveError::new(
            text,
            "expected a placement like d4=3 or a move like c3-f6",
        ))
    }

    fn observation(&self, seat: Seat) -> UptickObservation {
        let mut o = self.observation_without_dice(seat);
        o.dice = self
            .board_dice()
            .map(|(sq, owner, value, frozen)| DieView {
                cell: sq.to_string(),
                seat: owner,
                value,
                frozen,
            })
            .collect();
        o
    }

    fn write_observation(&self, seat: Seat, out: &mut String) {
        let mut o = Object::new(out);
        o.int("seat", seat).int("size", self.options.size);
        let dice = self.board_cells().filter(|&(_, c)| self.cells[c].is_die());
        array(o.key("dice"), dice, |out, (sq, c)| {
            let mut die = Object::new(out);
            die.square("cell", sq)
                .int("seat", self.cells[c].owner())
                .int("value", self.cells[c].value())
                .bool("frozen", self.is_frozen(c));
            die.end();
        });
        o.ints("reserve", self.reserve)
            .ints("captured", self.captured)
            .int("to_move", self.to_move)
            .opt_int("last_mover", self.last_mover)
            .int("turn", self.turn)
            .bool("over", self.over);
        o.end();
    }

    fn outcome(&self) -> Option<Outcome> {
        if !self.over {
            return None;
        }
        let scores = self.captured.to_vec();
        // When the game's own end (neither seat can move) comes on the capped
        // move, the game's own end decides.
        let capped = self.turn >= self.options.max_turns && (self.has_move(0) || self.has_move(1));
        if scores[0] == scores[1]
            && !capped
            && let Some(last) = self.last_mover
        {
            let mut ranks = vec![2, 2];
            ranks[usize::from(last)] = 1;
            return Some(Outcome {
                ranks,
                scores,
                capped,
            });
        }
        Some(Outcome::by_key(&self.captured, scores, capped))
    }

    fn determinize(&self, _seat: Seat, _rng: &mut GameRng) -> Uptick {
        self.clone() // no chance and nothing hidden
    }

    fn render(&self) -> String {
        let n = self.size();
        let mut s = String::new();
        for y in (0..n).rev() {
            s.push_str(&format!("{:>2} ", y + 1));
            for x in 0..n {
                let c = self.cells[self.at(x, y)];
                if c.is_empty() {
                    s.push_str(" . ");
                } else {
                    let mark = if self.is_frozen(self.at(x, y)) { '*' } else { ' ' };
                    let who = if c.owner() == 0 { 'A' } else { 'b' };
                    s.push_str(&format!("{who}{}{mark}", c.value()));
                }
            }
            s.push('\n');
        }
        s.push_str("   ");
        for x in 0..n {
            s.push_str(&format!(" {} ", char::from(b'a' + x as u8)));
        }
        s.push_str(&format!(
            "\nA = seat 0, b = seat 1, * = frozen.  reserve {} / {}  captured {} / {}  {}\n",
            self.reserve[0],
            self.reserve[1],
            self.captured[0],
            self.captured[1],
            if self.over {
                "game over".to_owned()
            } else {
                format!("seat {} to move", self.to_move)
            }
        ));
        s
    }
}

/// Dice captured between two observations, in words.
fn uptick_events(me: Seat, old: &serde_json::Value, new: &serde_json::Value) -> Vec<String> {
    let captured = |v: &serde_json::Value, s: usize| v["captured"][s].as_i64().unwrap_or(0);
    (0..2)
        .filter_map(|s| {
            let pips = captured(new, s) - captured(old, s);
            (pips > 0).then(|| {
                let taker = if s == me {
                    "you".to_owned()
                } else {
                    format!("seat {s}")
                };
                format!("{taker} captured a die worth {pips} pips")
            })
        })
        .collect()
}
