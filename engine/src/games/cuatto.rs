//! Cuatto: a race for 2–6 teams on a track of 12–24 positions, two dice a turn,
//! blocks of two, hits, pins, strong checkers and bridges. See `docs/rules/cuatto.md`.
//!
//! A checker's spot is written `0` (the start, basic setup), `b1`…`b6` (its team's
//! bridge, full setup; `b6` is next to position 1), `1`…`length` (the board) or
//! `off` (exited). A pin is suffixed `p` and a strong checker `s`.
//! Move notation: `<die>:<spot>[p|s]` moves that checker with that die, e.g. `5:0`,
//! `3:b6`, `4:12p`.

use crate::game::{Game, Nature, Outcome, ParseMoveError, PlayError, Presentation};
use crate::json::{Object, array};
use crate::notation::{Fields, ParsePositionError, invalid, parse_list, write_join};
use crate::options::{OptionError, OptionKind, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{MAX_SEATS, Seat, SeatSet};
use serde::Serialize;
use std::fmt;

const CHECKERS: usize = 6;
const BRIDGE: u8 = 6;
const MAX_LENGTH: usize = 24;

/// The kind of a checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// An ordinary checker.
    Regular,
    /// Holds other teams' checkers on its position in place.
    Pin,
    /// Ignores blocks and hits everything where it lands.
    Strong,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Regular => "",
            Kind::Pin => "p",
            Kind::Strong => "s",
        }
    }
}

/// Where a checker is, independent of the setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Spot {
    /// Off the board before position 1 (basic setup).
    Start,
    /// A slot of the team's bridge, 1–6 (full setup).
    Bridge(u8),
    /// A board position, 1..=length.
    Board(u8),
    /// Exited.
    Off,
}

impl Spot {
    /// Appends the spot's name to `out`.
    pub fn push_to(self, out: &mut String) {
        match self {
            Spot::Start => out.push('0'),
            Spot::Bridge(s) => {
                out.push('b');
                crate::json::int(out, s);
            }
            Spot::Board(k) => crate::json::int(out, k),
            Spot::Off => out.push_str("off"),
        }
    }
}

impl fmt::Display for Spot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(4);
        self.push_to(&mut out);
        f.write_str(&out)
    }
}

fn parse_spot_kind(text: &str) -> Option<(Spot, Kind)> {
    let (body, kind) = if let Some(b) = text.strip_suffix('p') {
        (b, Kind::Pin)
    } else if let Some(b) = text.strip_suffix('s') {
        (b, Kind::Strong)
    } else {
        (text, Kind::Regular)
    };
    let spot = match body {
        "0" => Spot::Start,
        "off" => Spot::Off,
        _ => match body.strip_prefix('b') {
            Some(s) => Spot::Bridge(s.parse().ok().filter(|s| (1..=BRIDGE).contains(s))?),
            None => Spot::Board(body.parse().ok().filter(|k| (1..=MAX_LENGTH as u8).contains(k))?),
        },
    };
    Some((spot, kind))
}

/// Starting setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Setup {
    /// Six regular checkers per team, all at the start.
    Basic,
    /// Four regular, one pin, one strong per team, on the team's bridge.
    Full,
}

/// Options of `cuatto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuattoOptions {
    /// Board positions.
    pub length: u8,
    /// Starting setup.
    pub setup: Setup,
    /// A double gives four sub-moves.
    pub doubles: bool,
    /// Only the exact roll exits.
    pub exact_exit: bool,
    /// Turns after which unfinished teams are ranked by pips left.
    pub max_turns: u32,
}

impl Default for CuattoOptions {
    fn default() -> Self {
        CuattoOptions {
            length: 18,
            setup: Setup::Basic,
            doubles: false,
            exact_exit: false,
            max_turns: 2000,
        }
    }
}

const SPECS: &[OptionSpec] = &[
    OptionSpec {
        name: "length",
        default: "18",
        kind: OptionKind::Int {
            min: 12,
            max: MAX_LENGTH as i64,
        },
        help: "board positions",
    },
    OptionSpec {
        name: "setup",
        default: "basic",
        kind: OptionKind::Choice(&["basic", "full"]),
        help: "basic: 6 regular checkers from the start; full: 4 regular + pin + strong on bridges",
    },
    OptionSpec {
        name: "doubles",
        default: "false",
        kind: OptionKind::Bool,
        help: "a double gives four sub-moves",
    },
    OptionSpec {
        name: "exact_exit",
        default: "false",
        kind: OptionKind::Bool,
        help: "only the exact roll takes a checker off the board",
    },
    OptionSpec {
        name: "max_turns",
        default: "2000",
        kind: OptionKind::Int {
            min: 1,
            max: 1_000_000,
        },
        help: "turns after which unfinished teams are ranked by pips left",
    },
];

/// One checker: its track coordinate and kind.
///
/// The track coordinate `t` counts along the team's route: basic setup 0 = start,
/// full setup 1..=6 = bridge slots; then the board (`t - offset` = position); then
/// `exit` = off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
struct Checker {
    t: u8,
    kind: u8,
}

fn kind_of(k: u8) -> Kind {
    match k {
        1 => Kind::Pin,
        2 => Kind::Strong,
        _ => Kind::Regular,
    }
}

fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::Regular => 0,
        Kind::Pin => 1,
        Kind::Strong => 2,
    }
}

/// A sub-move: use `die` to move a checker of `kind` standing on `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CuattoMove {
    /// Die value 1–6.
    pub die: u8,
    /// Where the checker stands.
    pub from: Spot,
    /// Which kind of checker.
    pub kind: Kind,
}

impl CuattoMove {
    /// Appends the notation to `out` (see [`Game::write_move`]).
    pub fn push_to(self, out: &mut String) {
        crate::json::int(out, self.die);
        out.push(':');
        self.from.push_to(out);
        out.push_str(self.kind.suffix());
    }
}

impl fmt::Display for CuattoMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(8);
        self.push_to(&mut out);
        f.write_str(&out)
    }
}

/// Who stands where, for landing and pin checks.
struct Occupancy {
    /// counts[position][team]
    counts: [[u8; MAX_SEATS]; MAX_LENGTH + 1],
    /// bit mask of teams with a pin on a position
    pins: [u8; MAX_LENGTH + 1],
}

/// A state of `cuatto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cuatto {
    options: CuattoOptions,
    seats: u8,
    teams: [[Checker; CHECKERS]; MAX_SEATS],
    dice: [u8; 4],
    n_dice: u8,
    to_move: u8,
    finished: [u8; MAX_SEATS],
    n_finished: u8,
    turn: u32,
    over: bool,
    rng: GameRng,
}

/// What a seat sees of `cuatto`: everything (no hidden information).
#[derive(Debug, Clone, Serialize)]
pub struct CuattoObservation {
    /// The observing seat.
    pub seat: Seat,
    /// Board positions.
    pub length: u8,
    /// `basic` or `full`.
    pub setup: Setup,
    /// Each team's checkers as spots (`0`, `b1`..`b6`, `1`..`length`, `off`), with
    /// `p` for a pin and `s` for a strong checker.
    pub teams: Vec<Vec<String>>,
    /// Pips each team still has to travel.
    pub pips: Vec<i64>,
    /// Dice still to be used this turn.
    pub dice: Vec<u8>,
    /// Whose turn it is.
    pub to_move: Seat,
    /// Teams that have finished, in order.
    pub finished: Vec<Seat>,
    /// Turn, from 1.
    pub turn: u32,
}

impl Cuatto {
    fn offset(&self) -> u8 {
        match self.options.setup {
            Setup::Basic => 0,
            Setup::Full => BRIDGE,
        }
    }

    fn exit_t(&self) -> u8 {
        self.offset() + self.options.length + 1
    }

    fn spot(&self, t: u8) -> Spot {
        let off = self.offset();
        if t >= self.exit_t() {
            Spot::Off
        } else if t > off {
            Spot::Board(t - off)
        } else if self.options.setup == Setup::Full {
            Spot::Bridge(t)
        } else {
            Spot::Start
        }
    }

    fn track(&self, spot: Spot) -> Option<u8> {
        match (spot, self.options.setup) {
            (Spot::Start, Setup::Basic) => Some(0),
            (Spot::Bridge(s), Setup::Full) => Some(s),
            (Spot::Board(k), _) if k <= self.options.length => Some(self.offset() + k),
            (Spot::Off, _) => Some(self.exit_t()),
            _ => None,
        }
    }

    fn occupancy(&self) -> Occupancy {
        let mut occ = Occupancy {
            counts: [[0; MAX_SEATS]; MAX_LENGTH + 1],
            pins: [0; MAX_LENGTH + 1],
        };
        let (off, exit) = (self.offset(), self.exit_t());
        for team in 0..usize::from(self.seats) {
            for c in &self.teams[team] {
                if c.t > off && c.t < exit {
                    let k = usize::from(c.t - off);
                    occ.counts[k][team] += 1;
                    if c.kind == 1 {
                        occ.pins[k] |= 1 << team;
                    }
                }
            }
        }
        occ
    }

    /// The track coordinate where this checker lands with `die`, if it may move.
    fn target(&self, occ: &Occupancy, team: usize, c: Checker, die: u8) -> Option<u8> {
        let (off, exit) = (self.offset(), self.exit_t());
        if c.t >= exit {
            return None;
        }
        if c.t > off && c.kind != 1 && occ.pins[usize::from(c.t - off)] & !(1 << team) != 0 {
            return None; // pinned by another team's pin
        }
        let target = c.t + die;
        if self.options.setup == Setup::Full && c.t <= BRIDGE {
            // On the bridge no slot may be passed or taken while occupied.
            let last = target.min(BRIDGE);
            if self.teams[team].iter().any(|o| o.t > c.t && o.t <= last) {
                return None;
            }
            if target <= BRIDGE {
                return Some(target);
            }
        }
        if target >= exit {
            return (!self.options.exact_exit || target == exit).then_some(exit);
        }
        let counts = &occ.counts[usize::from(target - off)];
        if c.kind == 2 {
            return (counts[team] < 4).then_some(target);
        }
        let total: u8 = counts.iter().sum();
        let blocked = counts.iter().enumerate().any(|(t, &n)| t != team && n >= 2);
        (total < 4 && !blocked).then_some(target)
    }

    fn distinct_dice(&self) -> impl Iterator<Item = u8> + '_ {
        let dice = &self.dice[..usize::from(self.n_dice)];
        dice.iter()
            .enumerate()
            .filter(move |(i, d)| *i == 0 || dice[i - 1] != **d)
            .map(|(_, d)| *d)
    }

    fn each_move(&self, mut f: impl FnMut(CuattoMove) -> bool) {
        let team = usize::from(self.to_move);
        let occ = self.occupancy();
        for die in self.distinct_dice() {
            let mut prev: Option<Checker> = None;
            for &c in &self.teams[team] {
                if prev == Some(c) {
                    continue; // the same kind on the same spot moves the same way
                }
                prev = Some(c);
                if self.target(&occ, team, c, die).is_some()
                    && !f(CuattoMove {
                        die,
                        from: self.spot(c.t),
                        kind: kind_of(c.kind),
                    })
                {
                    return;
                }
            }
        }
    }

    fn has_move(&self) -> bool {
        let mut any = false;
        self.each_move(|_| {
            any = true;
            false
        });
        any
    }

    fn send_home(&mut self, team: usize, idx: usize) {
        let home = match self.options.setup {
            Setup::Basic => 0,
            // The lowest free slot of the team's own bridge.
            Setup::Full => (1..=BRIDGE)
                .find(|s| !self.teams[team].iter().any(|c| c.t == *s))
                .unwrap_or(1),
        };
        self.teams[team][idx].t = home;
    }

    fn team_finished(&self, team: usize) -> bool {
        let exit = self.exit_t();
        self.teams[team].iter().all(|c| c.t >= exit)
    }

    fn is_finished(&self, team: usize) -> bool {
        self.finished[..usize::from(self.n_finished)].contains(&(team as u8))
    }

    fn roll(&mut self) {
        let (a, b) = (self.rng.die(6), self.rng.die(6));
        if self.options.doubles && a == b {
            self.dice = [a; 4];
            self.n_dice = 4;
        } else {
            self.dice = [a.min(b), a.max(b), 0, 0];
            self.n_dice = 2;
        }
    }

    /// Hands the turn to the next unfinished team after `team` and rolls, passing
    /// teams that cannot move.
    fn next_turn(&mut self, mut team: usize) {
        loop {
            if usize::from(self.n_finished) + 1 >= usize::from(self.seats)
                || self.turn >= self.options.max_turns
            {
                self.over = true;
                self.n_dice = 0;
                self.dice = [0; 4];
                return;
            }
            loop {
                team = (team + 1) % usize::from(self.seats);
                if !self.is_finished(team) {
                    break;
                }
            }
            self.turn += 1;
            self.to_move = team as u8;
            self.roll();
            if self.has_move() {
                return;
            }
        }
    }

    /// A checker as the notation and observations write it: spot, then `p`/`s`.
    fn push_checker(&self, c: &Checker, out: &mut String) {
        self.spot(c.t).push_to(out);
        out.push_str(kind_of(c.kind).suffix());
    }

    /// Each checker of `team` as its spot and kind, in the observation's order:
    /// its `teams` entry typed, for numeric encodings, which need no names.
    pub fn checkers_of(&self, team: usize) -> impl Iterator<Item = (Spot, Kind)> + '_ {
        self.teams[team][..]
            .iter()
            .map(|c| (self.spot(c.t), kind_of(c.kind)))
    }

    /// [`Game::observation`] with `teams` left empty: the rest of it costs no
    /// strings, and numeric encodings read the checkers typed, from
    /// [`Cuatto::checkers_of`].
    pub fn observation_without_teams(&self, seat: Seat) -> CuattoObservation {
        let n = usize::from(self.seats);
        CuattoObservation {
            seat,
            length: self.options.length,
            setup: self.options.setup,
            teams: Vec::new(),
            pips: (0..n).map(|t| self.pips(t)).collect(),
            dice: self.dice[..usize::from(self.n_dice)].to_vec(),
            to_move: usize::from(self.to_move),
            finished: self.finished[..usize::from(self.n_finished)]
                .iter()
                .map(|&t| usize::from(t))
                .collect(),
            turn: self.turn,
        }
    }

    fn pips(&self, team: usize) -> i64 {
        let exit = self.exit_t();
        self.teams[team]
            .iter()
            .map(|c| i64::from(exit - c.t.min(exit)))
            .sum()
    }

    fn sort_team(&mut self, team: usize) {
        self.teams[team].sort_unstable();
    }

    fn start_spots(&self) -> [Checker; CHECKERS] {
        match self.options.setup {
            Setup::Basic => [Checker { t: 0, kind: 0 }; CHECKERS],
            // Regular checkers in front (slots 3-6), the pin on 2, the strong on 1.
            Setup::Full => [
                Checker { t: 1, kind: 2 },
                Checker { t: 2, kind: 1 },
                Checker { t: 3, kind: 0 },
                Checker { t: 4, kind: 0 },
                Checker { t: 5, kind: 0 },
                Checker { t: 6, kind: 0 },
            ],
        }
    }

    fn why_illegal(&self, mv: &CuattoMove) -> &'static str {
        if !self.dice[..usize::from(self.n_dice)].contains(&mv.die) {
            return "no die with that value is left this turn";
        }
        let team = usize::from(self.to_move);
        let Some(t) = self.track(mv.from) else {
            return "that spot does not exist in this setup";
        };
        if !self.teams[team].contains(&Checker {
            t,
            kind: kind_code(mv.kind),
        }) {
            return "no checker of that kind of yours on that spot";
        }
        if t >= self.exit_t() {
            return "the checker has already exited";
        }
        let occ = self.occupancy();
        let off = self.offset();
        if t > off && mv.kind != Kind::Pin && occ.pins[usize::from(t - off)] & !(1 << team) != 0 {
            return "the checker is pinned by another team's pin";
        }
        "the landing spot is full, blocked by another team, an occupied bridge slot, or past the exit without the exact roll"
    }
}

impl Game for Cuatto {
    type Move = CuattoMove;
    type Options = CuattoOptions;
    type Observation = CuattoObservation;

    const ID: &'static str = "cuatto";
    const NAME: &'static str = "Cuatto";
    const SEATS: std::ops::RangeInclusive<usize> = 2..=6;
    const DEFAULT_SEATS: usize = 4;
    const NATURE: Nature = Nature {
        chance: true,
        simultaneous: false,
        hidden_information: false,
    };
    const PRESENTATION: Presentation = Presentation {
        legend: "Track: each checker is its team's letter (A seat 0, B seat 1, …); Ap a pin, As a strong checker.\n\
                 Moves: die:spot moves the checker on that spot by that die (4:0 enters one, 4:10 moves from 10).",
        score_unit: "",
        seat_mark: |seat| Some(format!("team {}", char::from(b'A' + (seat % 26) as u8))),
        events_in_words: Presentation::no_events,
        drawing: include_str!("draw/cuatto.js"),
    };

    fn option_specs() -> &'static [OptionSpec] {
        SPECS
    }

    fn options(values: &OptionValues, _seats: usize) -> Result<CuattoOptions, OptionError> {
        Ok(CuattoOptions {
            length: values.int("length") as u8,
            setup: if values.text("setup") == "full" {
                Setup::Full
            } else {
                Setup::Basic
            },
            doubles: values.flag("doubles"),
            exact_exit: values.flag("exact_exit"),
            max_turns: values.int("max_turns") as u32,
        })
    }

    fn new(options: &CuattoOptions, seats: usize, rng: GameRng) -> Cuatto {
        let mut g = Cuatto {
            options: options.clone(),
            seats: seats as u8,
            teams: [[Checker::default(); CHECKERS]; MAX_SEATS],
            dice: [0; 4],
            n_dice: 0,
            to_move: 0,
            finished: [0; MAX_SEATS],
            n_finished: 0,
            turn: 0,
            over: false,
            rng,
        };
        let start = g.start_spots();
        for team in 0..seats {
            g.teams[team] = start;
        }
        // Seat 0 moves first: next_turn starts from the seat before it.
        g.next_turn(seats - 1);
        g
    }

    fn seats_in_position(text: &str) -> Option<usize> {
        let teams = text.split_whitespace().filter(|f| f.starts_with("team")).count();
        (teams > 0).then_some(teams)
    }

    fn read_position(
        options: &CuattoOptions,
        text: &str,
        rng: GameRng,
    ) -> Result<Cuatto, ParsePositionError> {
        let f = Fields::parse(
            text,
            &[
                "to_move", "dice", "finished", "turn", "team0", "team1", "team2", "team3", "team4", "team5",
                "rng",
            ],
        )?;
        let mut g = Cuatto::new(options, 2, GameRng::from_seed(0));
        g.rng = match f.opt("rng") {
            Some(r) => r.parse().map_err(|e| invalid("rng", r, e))?,
            None => rng,
        };
        g.over = false;
        const KEYS: [&str; MAX_SEATS] = ["team0", "team1", "team2", "team3", "team4", "team5"];
        let seats = KEYS.iter().take_while(|k| f.opt(k).is_some()).count();
        if !(2..=MAX_SEATS).contains(&seats) || KEYS[seats..].iter().any(|k| f.opt(k).is_some()) {
            return Err(ParsePositionError::Inconsistent(
                "give team0, team1, ... for 2 to 6 teams, in order".into(),
            ));
        }
        g.seats = seats as u8;
        let start_kinds = {
            let mut k: Vec<u8> = g.start_spots().iter().map(|c| c.kind).collect();
            k.sort_unstable();
            k
        };
        for (team, key) in KEYS.iter().enumerate().take(seats) {
            let raw = f.raw(key)?;
            let mut checkers = [Checker::default(); CHECKERS];
            let items: Vec<&str> = raw.split(',').collect();
            if items.len() != CHECKERS {
                return Err(invalid(key, raw, format!("expected {CHECKERS} checkers")));
            }
            for (i, item) in items.iter().enumerate() {
                let (spot, kind) = parse_spot_kind(item)
                    .ok_or_else(|| invalid(key, raw, format!("{item:?} is not a spot")))?;
                let t = g.track(spot).ok_or_else(|| {
                    invalid(key, raw, format!("{item}: no such spot with setup and length"))
                })?;
                checkers[i] = Checker {
                    t,
                    kind: kind_code(kind),
                };
            }
            let mut kinds: Vec<u8> = checkers.iter().map(|c| c.kind).collect();
            kinds.sort_unstable();
            if kinds != start_kinds {
                return Err(invalid(key, raw, "wrong kinds of checkers for the setup"));
            }
            checkers.sort_unstable();
            if options.setup == Setup::Full {
                let slots: Vec<u8> = checkers.iter().filter(|c| c.t <= BRIDGE).map(|c| c.t).collect();
                if slots.windows(2).any(|w| w[0] == w[1]) {
                    return Err(invalid(key, raw, "a bridge slot holds one checker"));
                }
            }
            g.teams[team] = checkers;
        }
        let occ = g.occupancy();
        for k in 1..=usize::from(options.length) {
            if occ.counts[k].iter().sum::<u8>() > 4 {
                return Err(ParsePositionError::Inconsistent(format!(
                    "position {k} holds more than 4 checkers"
                )));
            }
            // A strong checker landing hits every other team's checker there,
            // strong ones included: strong checkers of two teams never share one.
            let at = g.offset() + k as u8;
            let strong_teams: Vec<usize> = (0..seats)
                .filter(|&t| {
                    g.teams[t]
                        .iter()
                        .any(|c| c.t == at && kind_of(c.kind) == Kind::Strong)
                })
                .collect();
            if strong_teams.len() > 1 {
                return Err(ParsePositionError::Inconsistent(format!(
                    "teams {strong_teams:?} each have a strong checker on position {k}, but the second to land would have hit the first"
                )));
            }
            // A team's second checker on a position hits every other team's
            // checker there but strong ones: one team blocks a position at a time.
            let blockers: Vec<usize> = (0..seats).filter(|&t| occ.counts[k][t] >= 2).collect();
            if let [blocker] = blockers[..] {
                let exposed = (0..seats).filter(|&t| t != blocker).find(|&t| {
                    g.teams[t]
                        .iter()
                        .any(|c| c.t == g.offset() + k as u8 && kind_of(c.kind) != Kind::Strong)
                });
                if let Some(t) = exposed {
                    return Err(ParsePositionError::Inconsistent(format!(
                        "team {t} has a checker that is not strong on position {k}, where team {blocker} has two: it would have been hit"
                    )));
                }
            } else if blockers.len() > 1 {
                return Err(ParsePositionError::Inconsistent(format!(
                    "teams {blockers:?} each have two or more checkers on position {k}, but the second team to arrive would have hit the first"
                )));
            }
        }
        let finished: Vec<u8> = f.list("finished")?;
        if let Some(t) = (0..seats as u8).find(|t| finished.iter().filter(|&f| f == t).count() > 1) {
            return Err(invalid(
                "finished",
                f.raw("finished")?,
                format!("team {t} is listed twice"),
            ));
        }
        if finished.iter().any(|&t| usize::from(t) >= seats) {
            return Err(invalid("finished", f.raw("finished")?, "unknown team"));
        }
        for team in 0..seats {
            let listed = finished.contains(&(team as u8));
            if listed != g.team_finished(team) {
                return Err(invalid(
                    "finished",
                    f.raw("finished")?,
                    format!("team {team} finished or not"),
                ));
            }
        }
        g.n_finished = finished.len() as u8;
        g.finished[..finished.len()].copy_from_slice(&finished);
        g.turn = f.get("turn")?;
        g.to_move = f.get("to_move")?;
        if usize::from(g.to_move) >= seats {
            return Err(invalid("to_move", f.raw("to_move")?, "no such team"));
        }
        let dice: Vec<u8> = parse_list("dice", f.raw("dice")?)?;
        if dice.len() > 4 || dice.iter().any(|d| !(1..=6).contains(d)) {
            return Err(invalid("dice", f.raw("dice")?, "up to four dice, 1-6"));
        }
        let doubled = options.doubles && dice.len() > 2;
        if dice.len() > 2 && !(doubled && dice.iter().all(|&d| d == dice[0])) {
            return Err(invalid(
                "dice",
                f.raw("dice")?,
                "a turn rolls two dice; only doubles=true gives a double's four (all alike)",
            ));
        }
        let mut sorted = dice.clone();
        sorted.sort_unstable();
        g.n_dice = sorted.len() as u8;
        g.dice = [0; 4];
        g.dice[..sorted.len()].copy_from_slice(&sorted);
        // The last turn before the cap is still played: an empty `dice` says it is over.
        g.over = usize::from(g.n_finished) + 1 >= seats || (g.turn >= options.max_turns && g.n_dice == 0);
        if g.turn > options.max_turns {
            return Err(invalid(
                "turn",
                f.raw("turn")?,
                format!("past max_turns={}", options.max_turns),
            ));
        }
        if g.over && g.n_dice > 0 {
            return Err(invalid("dice", f.raw("dice")?, "the game is over: dice=-"));
        }
        if !g.over && g.turn == 0 {
            return Err(invalid("turn", f.raw("turn")?, "turns count from 1"));
        }
        if g.over {
            g.n_dice = 0;
        } else if g.is_finished(usize::from(g.to_move)) || !g.has_move() {
            return Err(ParsePositionError::Inconsistent(
                "the team to move has finished, or has no move with these dice (dice=- only when over)"
                    .into(),
            ));
        }
        Ok(g)
    }

    fn position(&self) -> String {
        format!("{} rng={}", self.position_without_rng(), self.rng.to_text())
    }

    fn position_without_rng(&self) -> String {
        let mut s = String::with_capacity(128);
        s.push_str("to_move=");
        crate::json::int(&mut s, self.to_move);
        s.push_str(" dice=");
        write_join(&mut s, &self.dice[..usize::from(self.n_dice)]);
        s.push_str(" finished=");
        write_join(&mut s, &self.finished[..usize::from(self.n_finished)]);
        s.push_str(" turn=");
        crate::json::int(&mut s, self.turn);
        for team in 0..usize::from(self.seats) {
            s.push_str(" team");
            crate::json::int(&mut s, team);
            s.push('=');
            // Every team has its checkers: the list is never empty.
            for (i, c) in self.teams[team].iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                self.push_checker(c, &mut s);
            }
        }
        s
    }

    fn seats(&self) -> usize {
        usize::from(self.seats)
    }

    fn to_act(&self) -> SeatSet {
        if self.over {
            SeatSet::EMPTY
        } else {
            SeatSet::single(usize::from(self.to_move))
        }
    }

    fn legal_moves(&self, seat: Seat, out: &mut Vec<CuattoMove>) {
        if self.over || seat != usize::from(self.to_move) {
            return;
        }
        self.each_move(|m| {
            out.push(m);
            true
        });
    }

    fn play(&mut self, seat: Seat, mv: &CuattoMove) -> Result<(), PlayError> {
        if self.over {
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
        let team = seat;
        let occ = self.occupancy();
        let found = self.track(mv.from).and_then(|t| {
            let c = Checker {
                t,
                kind: kind_code(mv.kind),
            };
            let idx = self.teams[team].iter().position(|x| *x == c)?;
            let has_die = self.dice[..usize::from(self.n_dice)].contains(&mv.die);
            let target = self.target(&occ, team, c, mv.die).filter(|_| has_die)?;
            Some((idx, target))
        });
        let Some((idx, target)) = found else {
            return Err(PlayError::Illegal {
                seat,
                mv: mv.to_string(),
                why: self.why_illegal(mv),
            });
        };
        self.teams[team][idx].t = target;
        let (off, exit) = (self.offset(), self.exit_t());
        if target > off && target < exit {
            let strong = mv.kind == Kind::Strong;
            let own = self.teams[team].iter().filter(|c| c.t == target).count();
            if strong || own >= 2 {
                // A strong checker hits everything of other teams; a block of two
                // hits all but strong checkers.
                for other in 0..usize::from(self.seats) {
                    if other == team {
                        continue;
                    }
                    let mut hit = false;
                    for i in 0..CHECKERS {
                        let c = self.teams[other][i];
                        if c.t == target && (strong || c.kind != 2) {
                            self.send_home(other, i);
                            hit = true;
                        }
                    }
                    if hit {
                        self.sort_team(other);
                    }
                }
            }
        }
        self.sort_team(team);
        // Use up the die (dice stay sorted).
        let n = usize::from(self.n_dice);
        let pos = self.dice[..n].iter().position(|&d| d == mv.die).unwrap_or(0);
        self.dice.copy_within(pos + 1..n, pos);
        self.n_dice -= 1;
        self.dice[usize::from(self.n_dice)] = 0;
        if self.team_finished(team) {
            self.finished[usize::from(self.n_finished)] = team as u8;
            self.n_finished += 1;
            self.next_turn(team);
        } else if self.n_dice == 0 || !self.has_move() {
            self.next_turn(team);
        }
        Ok(())
    }

    fn write_move(mv: &CuattoMove, out: &mut String) {
        mv.push_to(out);
    }

    fn read_move(&self, text: &str) -> Result<CuattoMove, ParseMoveError> {
        let t = text.trim();
        let bad = |why: &str| ParseMoveError::new(text, why);
        let (die, spot) = t
            .split_once(':')
            .ok_or_else(|| bad("expected <die>:<spot>, e.g. 5:0 or 3:b6"))?;
        let die: u8 = die
            .parse()
            .ok()
            .filter(|d| (1..=6).contains(d))
            .ok_or_else(|| bad("a die shows 1 to 6"))?;
        let (from, kind) = parse_spot_kind(spot)
            .ok_or_else(|| bad("a spot is 0, b1-b6, 1-24, with p (pin) or s (strong)"))?;
        if from == Spot::Off {
            return Err(bad("an exited checker cannot move"));
        }
        Ok(CuattoMove { die, from, kind })
    }

    fn observation(&self, seat: Seat) -> CuattoObservation {
        let n = usize::from(self.seats);
        let mut o = self.observation_without_teams(seat);
        o.teams = (0..n)
            .map(|team| {
                self.teams[team]
                    .iter()
                    .map(|c| format!("{}{}", self.spot(c.t), kind_of(c.kind).suffix()))
                    .collect()
            })
            .collect();
        o
    }

    fn write_observation(&self, seat: Seat, out: &mut String) {
        let n = usize::from(self.seats);
        let mut o = Object::new(out);
        o.int("seat", seat).int("length", self.options.length).word(
            "setup",
            match self.options.setup {
                Setup::Basic => "basic",
                Setup::Full => "full",
            },
        );
        array(o.key("teams"), &self.teams[..n], |out, team| {
            array(out, team, |out, c| {
                out.push('"');
                self.push_checker(c, out);
                out.push('"');
            });
        });
        o.ints("pips", (0..n).map(|t| self.pips(t)))
            .ints("dice", self.dice[..usize::from(self.n_dice)].iter().copied())
            .int("to_move", self.to_move)
            .ints(
                "finished",
                self.finished[..usize::from(self.n_finished)].iter().copied(),
            )
            .int("turn", self.turn);
        o.end();
    }

    fn outcome(&self) -> Option<Outcome> {
        if !self.over {
            return None;
        }
        let n = usize::from(self.seats);
        let scores: Vec<i64> = (0..n).map(|t| self.pips(t)).collect();
        let mut ranks = vec![0u8; n];
        for (place, &team) in self.finished[..usize::from(self.n_finished)].iter().enumerate() {
            ranks[usize::from(team)] = place as u8 + 1;
        }
        // The rest, by fewest pips left (one team when play ran its course).
        let rest: Vec<usize> = (0..n).filter(|&t| !self.is_finished(t)).collect();
        for &t in &rest {
            let better = rest.iter().filter(|&&o| scores[o] < scores[t]).count();
            ranks[t] = self.n_finished + 1 + better as u8;
        }
        let capped = usize::from(self.n_finished) + 1 < n;
        Some(Outcome {
            ranks,
            scores,
            capped,
        })
    }

    fn rng_mut(&mut self) -> Option<&mut GameRng> {
        Some(&mut self.rng)
    }

    fn determinize(&self, _seat: Seat, rng: &mut GameRng) -> Cuatto {
        let mut g = self.clone();
        g.rng = GameRng::from_rng(rng);
        g
    }

    fn render(&self) -> String {
        let n = usize::from(self.seats);
        let name = |team: usize, c: &Checker| {
            let letter = char::from(b'A' + team as u8);
            match c.kind {
                1 => format!("{letter}p"),
                2 => format!("{letter}s"),
                _ => letter.to_string(),
            }
        };
        let mut s = String::new();
        for k in (1..=self.options.length).rev() {
            let t = self.offset() + k;
            let here: Vec<String> = (0..n)
                .flat_map(|team| {
                    self.teams[team]
                        .iter()
                        .filter(|c| c.t == t)
                        .map(move |c| name(team, c))
                })
                .collect();
            s.push_str(&format!("{k:>3} | {}\n", here.join(" ")));
        }
        for team in 0..n {
            let waiting: Vec<String> = self.teams[team]
                .iter()
                .filter(|c| c.t <= self.offset())
                .map(|c| format!("{}{}", self.spot(c.t), kind_of(c.kind).suffix()))
                .collect();
            let off = self.teams[team].iter().filter(|c| c.t >= self.exit_t()).count();
            s.push_str(&format!(
                "team {} ({}): waiting [{}] off {off} pips {}\n",
                team,
                char::from(b'A' + team as u8),
                waiting.join(" "),
                self.pips(team)
            ));
        }
        if self.over {
            s.push_str("game over\n");
        } else {
            s.push_str(&format!(
                "team {} to move, dice {:?}, turn {}\n",
                self.to_move,
                &self.dice[..usize::from(self.n_dice)],
                self.turn
            ));
        }
        s
    }
}
