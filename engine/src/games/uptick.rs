//! Uptick: two players place and move dice on a square board; a die rises by one
//! after every move, dice freeze next to higher opposing dice, and captured pips
//! score. See `docs/rules/uptick.md`.
//!
//! Cells are named like chess squares: file letter `a`.. then rank `1`.. (`d4`).
//! Move notation: place a die of value `v` on a cell as `d4=3`; move a die as
//! `c3-f6` (`c3xf6` is read the same). Seat 0 moves first.

use crate::game::{Game, Outcome, ParseMoveError, PlayError};
use crate::notation::{Fields, ParsePositionError, invalid};
use crate::options::{OptionError, OptionKind, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{Seat, SeatSet};
pub use crate::square::Square;
use serde::Serialize;
use std::fmt;

const MAX_SIZE: usize = 16;
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

impl fmt::Display for UptickMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            UptickMove::Place { cell, value } => write!(f, "{cell}={value}"),
            UptickMove::Step { from, to } => write!(f, "{from}-{to}"),
        }
    }
}

/// A die on the board: owner and value, or empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Cell(u8);

impl Cell {
    const EMPTY: Cell = Cell(0);
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

/// A state of `uptick`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uptick {
    options: UptickOptions,
    cells: [Cell; MAX_SIZE * MAX_SIZE],
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

    /// The name of a cell index (`d4`).
    pub fn cell_name(&self, cell: u8) -> String {
        cell_name(self.options.size, cell)
    }

    /// The cell index of a square, if it is on the board.
    fn index(&self, sq: Square) -> Option<usize> {
        let n = self.size();
        (usize::from(sq.file) < n && usize::from(sq.rank) < n)
            .then(|| usize::from(sq.rank) * n + usize::from(sq.file))
    }

    fn neighbours(&self, cell: usize) -> impl Iterator<Item = usize> + '_ {
        let n = self.size() as i32;
        let (x, y) = ((cell % self.size()) as i32, (cell / self.size()) as i32);
        DIRECTIONS.iter().filter_map(move |&(dx, dy)| {
            let (nx, ny) = (x + i32::from(dx), y + i32::from(dy));
            (nx >= 0 && ny >= 0 && nx < n && ny < n).then(|| (ny * n + nx) as usize)
        })
    }

    /// Whether the die on `cell` is frozen by a higher adjacent opposing die.
    fn is_frozen(&self, cell: usize) -> bool {
        let me = self.cells[cell];
        self.neighbours(cell).any(|c| {
            let other = self.cells[c];
            !other.is_empty() && other.owner() != me.owner() && other.value() > me.value()
        })
    }

    /// The highest value `p` may place on an empty cell without freezing a die.
    fn max_place_value(&self, p: usize, cell: usize) -> u8 {
        self.neighbours(cell)
            .map(|c| self.cells[c])
            .filter(|d| !d.is_empty() && d.owner() != p)
            .map(Cell::value)
            .min()
            .unwrap_or(6)
    }

    /// The highest value `p` may place on each cell (0: occupied), computed from the
    /// few opposing dice rather than by looking around every empty cell.
    fn place_caps(&self, p: usize) -> [u8; MAX_SIZE * MAX_SIZE] {
        let n = self.size();
        let mut caps = [6u8; MAX_SIZE * MAX_SIZE];
        for cell in 0..n * n {
            let die = self.cells[cell];
            if die.is_empty() {
                continue;
            }
            caps[cell] = 0;
            if die.owner() != p {
                for c in self.neighbours(cell) {
                    caps[c] = caps[c].min(die.value());
                }
            }
        }
        caps
    }

    fn each_move(&self, p: usize, mut f: impl FnMut(UptickMove) -> bool) {
        let n = self.size();
        if self.reserve[p] > 0 {
            let caps = self.place_caps(p);
            // Walk ranks and files rather than dividing each index by the size.
            for rank in 0..n {
                for file in 0..n {
                    let cap = caps[rank * n + file];
                    let cell = Square {
                        file: file as u8,
                        rank: rank as u8,
                    };
                    for value in 1..=cap {
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
        let n = self.size();
        for from in 0..n * n {
            let die = self.cells[from];
            if die.is_empty() || die.owner() != p || die.value() >= 6 || self.is_frozen(from) {
                continue;
            }
            let (x, y) = ((from % n) as i32, (from / n) as i32);
            for &(dx, dy) in &DIRECTIONS {
                for k in 1..=i32::from(die.value()) {
                    let (nx, ny) = (x + k * i32::from(dx), y + k * i32::from(dy));
                    if nx < 0 || ny < 0 || nx >= n as i32 || ny >= n as i32 {
                        break;
                    }
                    let to = (ny * n as i32 + nx) as usize;
                    let target = self.cells[to];
                    let (a, b) = (
                        Square {
                            file: x as u8,
                            rank: y as u8,
                        },
                        Square {
                            file: nx as u8,
                            rank: ny as u8,
                        },
                    );
                    if (target.is_empty() || target.owner() != p) && !f(UptickMove::Step { from: a, to: b }) {
                        return;
                    }
                    if !target.is_empty() && target.owner() != p {
                        break; // an opposing die can be taken but not jumped
                    }
                }
            }
        }
    }

    /// Whether `p` may move its die from `from` to `to`, checked along the line.
    fn is_step_legal(&self, p: usize, from: Square, to: Square) -> bool {
        let (Some(a), Some(b)) = (self.index(from), self.index(to)) else {
            return false;
        };
        let die = self.cells[a];
        if die.is_empty() || die.owner() != p || die.value() >= 6 || self.is_frozen(a) {
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
        let (sx, sy) = (dx.signum(), dy.signum());
        let n = self.size() as i32;
        let mut between = (1..k).map(|i| {
            let (x, y) = (i32::from(from.file) + i * sx, i32::from(from.rank) + i * sy);
            self.cells[(y * n + x) as usize]
        });
        let target = self.cells[b];
        !between.any(|c| !c.is_empty() && c.owner() != p) && (target.is_empty() || target.owner() != p)
    }

    fn has_move(&self, p: usize) -> bool {
        if self.reserve[p] > 0
            && self.cells[..self.size() * self.size()]
                .iter()
                .any(|c| c.is_empty())
        {
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
                if die.is_empty() || die.owner() != p {
                    "no die of yours on the starting cell"
                } else if die.value() >= 6 {
                    "a six never moves"
                } else if self.is_frozen(from) {
                    "the die is frozen by a higher adjacent opposing die"
                } else if !self.cells[to].is_empty() && self.cells[to].owner() == p {
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
}

fn cell_name(size: u8, cell: u8) -> String {
    Square::from_index(usize::from(size), usize::from(cell)).to_string()
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
        Uptick {
            options: options.clone(),
            cells: [Cell::EMPTY; MAX_SIZE * MAX_SIZE],
            reserve: [options.reserve; 2],
            captured: [0, 0],
            to_move: 0,
            last_mover: None,
            turn: 0,
            over: false,
        }
    }

    fn from_position(
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
                    *x += digits.parse::<usize>().map_err(|e| invalid("board", rank, e))?;
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
                g.cells[y * n + x] = cell;
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
        let n = self.size();
        let mut board = String::new();
        for y in (0..n).rev() {
            let mut empty = 0;
            for x in 0..n {
                let c = self.cells[y * n + x];
                if c.is_empty() {
                    empty += 1;
                    continue;
                }
                if empty > 0 {
                    board.push_str(&empty.to_string());
                    empty = 0;
                }
                let base = if c.owner() == 0 { b'A' } else { b'a' };
                board.push(char::from(base + c.value() - 1));
            }
            if empty > 0 {
                board.push_str(&empty.to_string());
            }
            if y > 0 {
                board.push('/');
            }
        }
        format!(
            "board={board} to_move={} reserve={},{} captured={},{} last={} turn={}",
            self.to_move,
            self.reserve[0],
            self.reserve[1],
            self.captured[0],
            self.captured[1],
            self.last_mover.map_or("-".to_owned(), |s| s.to_string()),
            self.turn
        )
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
        let n = self.size();
        if self.reserve[seat] > 0 {
            let caps = self.place_caps(seat);
            let total: usize = caps[..n * n].iter().map(|&c| usize::from(c)).sum();
            out.reserve(total + 8 * n);
            for rank in 0..n {
                for (file, &cap) in caps[rank * n..(rank + 1) * n].iter().enumerate() {
                    let cell = Square {
                        file: file as u8,
                        rank: rank as u8,
                    };
                    out.extend((1..=cap).map(|value| UptickMove::Place { cell, value }));
                }
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
                self.cells[cell] = Cell::die(seat, value);
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
                self.cells[to] = Cell::die(seat, die.value() + 1);
                self.cells[from] = Cell::EMPTY;
            }
        }
        self.last_mover = Some(seat as u8);
        self.turn += 1;
        self.advance(seat);
        Ok(())
    }

    fn parse_move(&self, text: &str) -> Result<UptickMove, ParseMoveError> {
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
        let n = self.size();
        let dice = (0..n * n)
            .filter(|&c| !self.cells[c].is_empty())
            .map(|c| DieView {
                cell: self.cell_name(c as u8),
                seat: self.cells[c].owner(),
                value: self.cells[c].value(),
                frozen: self.is_frozen(c),
            })
            .collect();
        UptickObservation {
            seat,
            size: self.options.size,
            dice,
            reserve: self.reserve,
            captured: self.captured,
            to_move: usize::from(self.to_move),
            last_mover: self.last_mover.map(usize::from),
            turn: self.turn,
            over: self.over,
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        if !self.over {
            return None;
        }
        let scores = self.captured.to_vec();
        let capped = self.turn >= self.options.max_turns;
        if scores[0] == scores[1] && !capped {
            if let Some(last) = self.last_mover {
                let mut ranks = vec![2, 2];
                ranks[usize::from(last)] = 1;
                return Some(Outcome {
                    ranks,
                    scores,
                    capped,
                });
            }
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
                let c = self.cells[y * n + x];
                if c.is_empty() {
                    s.push_str(" . ");
                } else {
                    let mark = if self.is_frozen(y * n + x) { '*' } else { ' ' };
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
