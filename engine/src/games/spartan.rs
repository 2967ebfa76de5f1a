//! Spartan Yahtzee: two armies of ten dice, rolled in secret at the same time,
//! rerolled twice in secret, then revealed together. See `docs/rules/spartan.md`.
//!
//! Dice are interchangeable apart from the face they show, so a hand is a count per
//! face, and a decision names the faces to roll again: `stand` (roll nothing) or
//! `reroll:<faces>` with the faces as digits in increasing order, e.g. `reroll:236`.
//! Plague dice (1s) are locked and never named.

use crate::game::{Game, Nature, Outcome, ParseMoveError, PlayError, Presentation};
use crate::json::{Object, array};
use crate::notation::{Fields, ParsePositionError, invalid};
use crate::options::{OptionError, OptionKind, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{Seat, SeatSet};
use serde::Serialize;
use std::fmt;

/// Dice per army.
pub const DICE: u8 = 10;
/// Starting hit points.
pub const START_HP: i64 = 10;
/// Sudden-death rolls before the game is a draw.
pub const SUDDEN_DEATH_CAP: u32 = 100;

/// Counts per face; index 0 is unused, 1..=6 are the faces.
type Faces = [u8; 7];

/// Options of `spartan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpartanOptions {
    /// Turns after which more HP wins (equal: draw).
    pub max_turns: u32,
}

impl Default for SpartanOptions {
    fn default() -> Self {
        SpartanOptions { max_turns: 200 }
    }
}

const SPECS: &[OptionSpec] = &[OptionSpec {
    name: "max_turns",
    default: "200",
    kind: OptionKind::Int {
        min: 1,
        max: 1_000_000,
    },
    help: "turns after which the game ends; more HP wins, equal HP draws",
}];

/// A decision: how many dice of each face (2..=6) to roll again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpartanMove {
    /// Dice to reroll per face; `reroll[1]` is always 0.
    pub reroll: Faces,
}

impl SpartanMove {
    /// Roll nothing.
    pub const STAND: SpartanMove = SpartanMove { reroll: [0; 7] };

    /// Number of dice rolled again.
    pub fn count(&self) -> u8 {
        self.reroll.iter().sum()
    }
}

impl SpartanMove {
    /// Appends the notation to `out` (see [`Game::write_move`]).
    pub fn push_to(&self, out: &mut String) {
        if self.count() == 0 {
            out.push_str("stand");
        } else {
            out.push_str("reroll:");
            push_faces(&self.reroll, out);
        }
    }
}

impl fmt::Display for SpartanMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(16);
        self.push_to(&mut out);
        f.write_str(&out)
    }
}

fn faces_text(faces: &Faces) -> String {
    let mut s = String::new();
    push_faces(faces, &mut s);
    s
}

/// Appends faces as digits in order (`-` for none).
fn push_faces(faces: &Faces, out: &mut String) {
    let start = out.len();
    for (face, &n) in faces.iter().enumerate().skip(1) {
        for _ in 0..n {
            out.push(char::from(b'0' + face as u8));
        }
    }
    if out.len() == start {
        out.push('-');
    }
}

fn parse_faces(text: &str) -> Option<Faces> {
    let mut faces = [0u8; 7];
    if text == "-" {
        return Some(faces);
    }
    let mut total = 0u8;
    for c in text.chars() {
        let face = c.to_digit(10).filter(|d| (1..=6).contains(d))?;
        // An army has ten dice: more faces than that are no roll of it.
        total += 1;
        if total > DICE {
            return None;
        }
        faces[face as usize] += 1;
    }
    Some(faces)
}

fn faces_list(faces: &Faces) -> Vec<u8> {
    let mut v = Vec::with_capacity(usize::from(faces.iter().sum::<u8>()));
    for (face, &n) in faces.iter().enumerate().skip(1) {
        v.extend(std::iter::repeat_n(face as u8, usize::from(n)));
    }
    v
}

/// Faces as a JSON list in increasing order (what [`faces_list`] serializes to).
fn write_faces_json(faces: &Faces, out: &mut String) {
    let each = faces
        .iter()
        .enumerate()
        .skip(1)
        .flat_map(|(face, &n)| std::iter::repeat_n(face as u8, usize::from(n)));
    array(out, each, |out, face| out.push(char::from(b'0' + face)));
}

fn warriors(f: &Faces) -> i64 {
    i64::from(f[2] + f[3])
}

fn defence(f: &Faces) -> i64 {
    i64::from(f[4]) + 2 * i64::from(f[5])
}

/// What the last reveal showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reveal {
    dice: [Faces; 2],
    /// Who used the Mercenary and what it rolled.
    mercenary: Option<(u8, u8)>,
}

impl Reveal {
    fn attack(&self, p: usize) -> i64 {
        warriors(&self.dice[p])
            + self
                .mercenary
                .filter(|m| usize::from(m.0) == p)
                .map_or(0, |m| i64::from(m.1))
    }
    fn damage(&self, p: usize) -> i64 {
        (self.attack(1 - p) - defence(&self.dice[p])).max(0)
    }
}

/// The result of a sudden death.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SuddenDeath {
    winner: Option<u8>,
    rolls: u32,
}

/// A state of `spartan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spartan {
    options: SpartanOptions,
    hp: [i64; 2],
    /// The dice each army rolled this turn (hidden from the other seat).
    dice: [Faces; 2],
    resting: [u8; 2],
    grave: [u8; 2],
    mercenary: Option<u8>,
    /// 1 or 2: which reroll is being decided; 0 when over.
    reroll: u8,
    acting: SeatSet,
    pending: [Option<SpartanMove>; 2],
    turn: u32,
    last: Option<Reveal>,
    sudden: Option<SuddenDeath>,
    rng: GameRng,
}

/// The last reveal as both seats saw it.
#[derive(Debug, Clone, Serialize)]
pub struct RevealView {
    /// Each army's dice, faces in increasing order.
    pub dice: [Vec<u8>; 2],
    /// Who used the Mercenary, and its roll.
    pub mercenary: Option<MercenaryRoll>,
    /// Each army's attack.
    pub attack: [i64; 2],
    /// Each army's defence.
    pub defence: [i64; 2],
    /// HP each army lost.
    pub damage: [i64; 2],
}

/// The Mercenary's roll in a reveal.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MercenaryRoll {
    /// Who held it.
    pub seat: Seat,
    /// Its d4.
    pub roll: u8,
}

/// What a seat sees of `spartan`: its own dice, never the other army's before the reveal.
#[derive(Debug, Clone, Serialize)]
pub struct SpartanObservation {
    /// The observing seat.
    pub seat: Seat,
    /// Turn, from 1.
    pub turn: u32,
    /// `reroll1`, `reroll2` or `over`.
    pub phase: &'static str,
    /// Hit points.
    pub hp: [i64; 2],
    /// Who holds the Mercenary this turn (none: it is in the centre).
    pub mercenary: Option<Seat>,
    /// This seat's dice as rolled so far this turn.
    pub your_dice: Vec<u8>,
    /// Whether this seat has already decided this step.
    pub you_decided: bool,
    /// Dice each army rolls this turn.
    pub in_hand: [u8; 2],
    /// Defenders resting this turn.
    pub resting: [u8; 2],
    /// Dice in each army's graveyard.
    pub graveyard: [u8; 2],
    /// The previous turn's reveal.
    pub last_reveal: Option<RevealView>,
    /// The winner of the sudden death; `null` when none was played or it was a draw
    /// (tell them apart by `sudden_death_rolls`).
    pub sudden_death_winner: Option<Seat>,
    /// Rolls of the sudden death (0: none was played).
    pub sudden_death_rolls: u32,
}

impl Spartan {
    /// The phase as written in positions and observations.
    fn phase_name(&self) -> &'static str {
        match self.reroll {
            1 => "reroll1",
            2 => "reroll2",
            _ => "over",
        }
    }

    fn in_hand(&self, p: usize) -> u8 {
        DICE - self.resting[p] - self.grave[p]
    }

    fn roll_into(&mut self, faces: &mut Faces, n: u8) {
        for _ in 0..n {
            faces[usize::from(self.rng.die(6))] += 1;
        }
    }

    fn start_turn(&mut self) {
        if self.turn >= self.options.max_turns {
            self.reroll = 0;
            self.acting = SeatSet::EMPTY;
            return;
        }
        self.turn += 1;
        for p in 0..2 {
            let mut faces = [0; 7];
            let n = self.in_hand(p);
            self.roll_into(&mut faces, n);
            self.dice[p] = faces;
        }
        self.reroll = 1;
        self.pending = [None, None];
        // Both armies are asked at every step, even one whose only move is to
        // stand: whether a seat is asked must not tell the other its dice.
        self.acting = SeatSet::first_n(2);
    }

    /// Applies both pending rerolls (seat 0's first, so the order of answers never
    /// matters) and moves to the next step.
    fn resolve_step(&mut self) {
        for p in 0..2 {
            if let Some(mv) = self.pending[p].take() {
                let mut faces = self.dice[p];
                for f in 2..=6 {
                    faces[f] -= mv.reroll[f];
                }
                self.roll_into(&mut faces, mv.count());
                self.dice[p] = faces;
            }
        }
        if self.reroll == 1 {
            self.reroll = 2;
            self.acting = SeatSet::first_n(2);
            return;
        }
        if !self.reveal() {
            self.start_turn();
        }
    }

    /// Resolves the turn; returns true if the game is over.
    fn reveal(&mut self) -> bool {
        let mercenary = self.mercenary.map(|holder| (holder, self.rng.die(4)));
        let reveal = Reveal {
            dice: self.dice,
            mercenary,
        };
        let damage = [reveal.damage(0), reveal.damage(1)];
        for p in 0..2 {
            self.hp[p] = (self.hp[p] - damage[p]).max(0);
            let d = self.dice[p];
            self.grave[p] += d[1];
            let revived = self.grave[p].min(2 * d[6]);
            self.grave[p] -= revived;
            self.resting[p] = d[4] + d[5];
        }
        if mercenary.is_some() {
            self.mercenary = None;
        }
        if self.mercenary.is_none() {
            let (w0, w1) = (warriors(&self.dice[0]), warriors(&self.dice[1]));
            self.mercenary = match w0.cmp(&w1) {
                std::cmp::Ordering::Greater => Some(0),
                std::cmp::Ordering::Less => Some(1),
                std::cmp::Ordering::Equal => None,
            };
        }
        self.last = Some(reveal);
        self.dice = [[0; 7]; 2];
        self.acting = SeatSet::EMPTY;
        self.pending = [None, None];
        if self.hp == [0, 0] {
            self.sudden_death();
        }
        if self.hp.contains(&0) {
            self.reroll = 0;
            return true;
        }
        false
    }

    fn sudden_death(&mut self) {
        self.hp = [1, 1];
        for rolls in 1..=SUDDEN_DEATH_CAP {
            let mut w = [0i64; 2];
            for wp in &mut w {
                let mut faces = [0; 7];
                self.roll_into(&mut faces, DICE);
                *wp = warriors(&faces);
            }
            if w[0] != w[1] {
                let winner = u8::from(w[1] > w[0]);
                self.hp[1 - usize::from(winner)] = 0;
                self.sudden = Some(SuddenDeath {
                    winner: Some(winner),
                    rolls,
                });
                return;
            }
        }
        self.sudden = Some(SuddenDeath {
            winner: None,
            rolls: SUDDEN_DEATH_CAP,
        });
        self.hp = [0, 0];
    }

    fn check(&self, seat: Seat, mv: &SpartanMove) -> Result<(), &'static str> {
        if mv.reroll[1] > 0 || mv.reroll[0] > 0 {
            return Err("plague dice are locked and cannot be rerolled");
        }
        if (2..=6).any(|f| mv.reroll[f] > self.dice[seat][f]) {
            return Err("you do not hold those dice");
        }
        Ok(())
    }

    /// What the turn and the last reveal say of the rest of a position read:
    /// turn 1 before its reveal is the start of the game, and after a reveal the
    /// resting dice, the graveyard, the Mercenary and the hit points are what
    /// that reveal left.
    fn check_history(&self, f: &Fields<'_>) -> Result<(), ParsePositionError> {
        let reveal_text = f.raw("reveal")?;
        let before_first_reveal = self.turn == 1 && self.reroll != 0;
        let Some(last) = self.last else {
            if before_first_reveal {
                let start = self.hp == [START_HP; 2]
                    && self.resting == [0; 2]
                    && self.grave == [0; 2]
                    && self.mercenary.is_none();
                if !start {
                    return Err(ParsePositionError::Inconsistent(
                        "turn 1 before its reveal is the start: hp=10,10, resting=0,0, grave=0,0 and merc=- (the Mercenary in the centre)".into(),
                    ));
                }
                return Ok(());
            }
            return Err(invalid(
                "reveal",
                reveal_text,
                "every turn ends with a reveal: only turn 1, before it ends, has none (reveal=-)",
            ));
        };
        if before_first_reveal {
            return Err(invalid(
                "reveal",
                reveal_text,
                "turn 1 comes before any reveal: reveal=-",
            ));
        }
        // The reveal of turn 1: ten dice each, none resting or buried before it,
        // the Mercenary in the centre, 10 HP each.
        let of_first_turn = self.turn == 1 || (self.turn == 2 && self.reroll != 0);
        if of_first_turn
            && (last.mercenary.is_some() || last.dice.iter().any(|d| d.iter().sum::<u8>() != DICE))
        {
            return Err(invalid(
                "reveal",
                reveal_text,
                "the reveal of turn 1 shows ten dice each and no Mercenary (it starts in the centre)",
            ));
        }
        for p in 0..2 {
            let d = &last.dice[p];
            if self.resting[p] != d[4] + d[5] {
                return Err(invalid(
                    "resting",
                    f.raw("resting")?,
                    format!(
                        "the defenders (4s and 5s) of the last reveal rest: seat {p} showed {}",
                        d[4] + d[5]
                    ),
                ));
            }
            // Before the reveal the graveyard held 0 to (the dice not rolled)
            // dice; the reveal buries the Plague dice and each Necromancer
            // brings back up to two.
            let rolled = i64::from(d.iter().sum::<u8>());
            let before_most = if of_first_turn {
                0
            } else {
                i64::from(DICE) - rolled
            };
            let (plague, revived) = (i64::from(d[1]), 2 * i64::from(d[6]));
            let least = (plague - revived).max(0);
            let most = (before_most + plague - revived).max(0);
            if !(least..=most).contains(&i64::from(self.grave[p])) {
                return Err(invalid(
                    "grave",
                    f.raw("grave")?,
                    format!("after the last reveal seat {p}'s graveyard holds {least} to {most} dice"),
                ));
            }
            let damage = last.damage(p);
            if self.sudden.is_some() {
                if damage == 0 {
                    return Err(invalid(
                        "sudden",
                        f.raw("sudden")?,
                        format!(
                            "a sudden death follows a reveal that takes both armies to 0 HP, and seat {p} lost none"
                        ),
                    ));
                }
            } else {
                let hp_most = if self.hp[p] == 0 { 0 } else { START_HP - damage };
                let hp_exact = of_first_turn && self.hp[p] != (START_HP - damage).max(0);
                if self.hp[p] > hp_most || hp_exact {
                    return Err(invalid(
                        "hp",
                        f.raw("hp")?,
                        format!("seat {p} lost {damage} HP in the last reveal, from at most {START_HP}"),
                    ));
                }
            }
        }
        let (w0, w1) = (warriors(&last.dice[0]), warriors(&last.dice[1]));
        let holder = match w0.cmp(&w1) {
            std::cmp::Ordering::Greater => Some(0),
            std::cmp::Ordering::Less => Some(1),
            std::cmp::Ordering::Equal => None,
        };
        if self.mercenary != holder {
            return Err(invalid(
                "merc",
                f.raw("merc")?,
                format!(
                    "after a reveal the Mercenary goes to the army with more Warriors in it, or to the centre on a tie: merc={}",
                    holder.map_or("-".to_owned(), |h| h.to_string())
                ),
            ));
        }
        Ok(())
    }

    fn reveal_view(r: &Reveal) -> RevealView {
        RevealView {
            dice: [faces_list(&r.dice[0]), faces_list(&r.dice[1])],
            mercenary: r.mercenary.map(|(s, roll)| MercenaryRoll {
                seat: usize::from(s),
                roll,
            }),
            attack: [r.attack(0), r.attack(1)],
            defence: [defence(&r.dice[0]), defence(&r.dice[1])],
            damage: [r.damage(0), r.damage(1)],
        }
    }
}

impl Game for Spartan {
    type Move = SpartanMove;
    type Options = SpartanOptions;
    type Observation = SpartanObservation;

    const ID: &'static str = "spartan";
    const NAME: &'static str = "Spartan Yahtzee";
    const SEATS: std::ops::RangeInclusive<usize> = 2..=2;
    const DEFAULT_SEATS: usize = 2;
    const NATURE: Nature = Nature {
        chance: true,
        simultaneous: true,
        hidden_information: true,
    };
    const PRESENTATION: Presentation = Presentation {
        legend: "Dice faces: 1 plague, 2-3 warrior, 4 hoplite, 5 phalanx, 6 necromancer.\n\
                 Moves: stand, or reroll:FACES to reroll those dice (reroll:25 rerolls a 2 and a 5).",
        score_unit: " HP",
        seat_mark: Presentation::no_seat_mark,
        events_in_words: spartan_events,
        drawing: include_str!("draw/spartan.js"),
    };

    fn option_specs() -> &'static [OptionSpec] {
        SPECS
    }

    fn options(values: &OptionValues, _seats: usize) -> Result<SpartanOptions, OptionError> {
        Ok(SpartanOptions {
            max_turns: values.int("max_turns") as u32,
        })
    }

    fn new(options: &SpartanOptions, _seats: usize, rng: GameRng) -> Spartan {
        let mut g = Spartan {
            options: options.clone(),
            hp: [START_HP; 2],
            dice: [[0; 7]; 2],
            resting: [0; 2],
            grave: [0; 2],
            mercenary: None,
            reroll: 0,
            acting: SeatSet::EMPTY,
            pending: [None, None],
            turn: 0,
            last: None,
            sudden: None,
            rng,
        };
        g.start_turn();
        g
    }

    fn read_position(
        options: &SpartanOptions,
        text: &str,
        rng: GameRng,
    ) -> Result<Spartan, ParsePositionError> {
        let f = Fields::parse(
            text,
            &[
                "turn", "phase", "hp", "merc", "dice0", "dice1", "resting", "grave", "pending0", "pending1",
                "reveal", "sudden", "rng",
            ],
        )?;
        let pair = |key: &'static str, most: i64, why: &str| -> Result<[i64; 2], ParsePositionError> {
            let v: Vec<i64> = f.list(key)?;
            match v[..] {
                [a, b] if (0..=most).contains(&a) && (0..=most).contains(&b) => Ok([a, b]),
                _ => Err(invalid(
                    key,
                    f.raw(key)?,
                    format!("two counts, each 0 to {most}: {why}"),
                )),
            }
        };
        let hp = pair("hp", START_HP, "armies start at 10 HP and never gain any")?;
        let dice = i64::from(DICE);
        let resting = pair("resting", dice, "an army has ten dice")?;
        let grave = pair("grave", dice, "an army has ten dice")?;
        let mut g = Spartan {
            options: options.clone(),
            hp,
            dice: [[0; 7]; 2],
            resting: [resting[0] as u8, resting[1] as u8],
            grave: [grave[0] as u8, grave[1] as u8],
            mercenary: None,
            reroll: 0,
            acting: SeatSet::EMPTY,
            pending: [None, None],
            turn: f.get("turn")?,
            last: None,
            sudden: None,
            rng: match f.opt("rng") {
                Some(r) => r.parse().map_err(|e| invalid("rng", r, e))?,
                None => rng,
            },
        };
        let merc = f.raw("merc")?;
        g.mercenary = match merc {
            "-" => None,
            "0" => Some(0),
            "1" => Some(1),
            _ => return Err(invalid("merc", merc, "0, 1 or - (in the centre)")),
        };
        for p in 0..2 {
            if resting[p] + grave[p] > i64::from(DICE) {
                return Err(ParsePositionError::Inconsistent(format!(
                    "seat {p} has more than {DICE} dice"
                )));
            }
        }
        let phase = f.raw("phase")?;
        g.reroll = match phase {
            "reroll1" => 1,
            "reroll2" => 2,
            "over" => 0,
            _ => return Err(invalid("phase", phase, "reroll1, reroll2 or over")),
        };
        for (p, key) in ["dice0", "dice1"].into_iter().enumerate() {
            let raw = f.raw(key)?;
            g.dice[p] = parse_faces(raw).ok_or_else(|| invalid(key, raw, "faces 1-6 as digits, or -"))?;
            let n: u8 = g.dice[p].iter().sum();
            let want = if g.reroll == 0 { 0 } else { g.in_hand(p) };
            if n != want {
                return Err(invalid(
                    key,
                    raw,
                    format!("seat {p} rolls {want} dice this turn, not {n}"),
                ));
            }
        }
        for (p, key) in ["pending0", "pending1"].into_iter().enumerate() {
            let raw = f.raw(key)?;
            if raw != "-" {
                let mv = g.parse_move(raw).map_err(|e| invalid(key, raw, e))?;
                g.check(p, &mv).map_err(|e| invalid(key, raw, e))?;
                g.pending[p] = Some(mv);
            }
        }
        let reveal = f.raw("reveal")?;
        if reveal != "-" {
            let parts: Vec<&str> = reveal.split('/').collect();
            let bad = || {
                invalid(
                    "reveal",
                    reveal,
                    "<dice0>/<dice1>/<holder>:<d4> or <dice0>/<dice1>/-",
                )
            };
            if parts.len() != 3 {
                return Err(bad());
            }
            let d0 = parse_faces(parts[0]).ok_or_else(bad)?;
            let d1 = parse_faces(parts[1]).ok_or_else(bad)?;
            let mercenary = match parts[2] {
                "-" => None,
                m => {
                    let (s, r) = m.split_once(':').ok_or_else(bad)?;
                    let s: u8 = s.parse().ok().filter(|s| *s < 2).ok_or_else(bad)?;
                    let r: u8 = r.parse().ok().filter(|r| (1..=4).contains(r)).ok_or_else(bad)?;
                    Some((s, r))
                }
            };
            g.last = Some(Reveal {
                dice: [d0, d1],
                mercenary,
            });
        }
        let sudden = f.raw("sudden")?;
        if sudden != "-" {
            let bad = || invalid("sudden", sudden, "<winner seat or draw>:<rolls>");
            let (w, n) = sudden.split_once(':').ok_or_else(bad)?;
            let winner = match w {
                "draw" => None,
                "0" => Some(0),
                "1" => Some(1),
                _ => return Err(bad()),
            };
            g.sudden = Some(SuddenDeath {
                winner,
                rolls: n.parse().map_err(|_| bad())?,
            });
        }
        if !(1..=options.max_turns).contains(&g.turn) {
            return Err(invalid(
                "turn",
                f.raw("turn")?,
                format!("turns count from 1 to max_turns ({})", options.max_turns),
            ));
        }
        match (g.sudden, g.reroll, g.hp) {
            (Some(_), 1 | 2, _) => {
                return Err(invalid(
                    "sudden",
                    sudden,
                    "a sudden death ends the game: phase=over",
                ));
            }
            (
                Some(SuddenDeath {
                    winner: Some(w),
                    rolls,
                }),
                _,
                hp,
            ) if hp[usize::from(w)] != 1
                || hp[1 - usize::from(w)] != 0
                || !(1..=SUDDEN_DEATH_CAP).contains(&rolls) =>
            {
                return Err(invalid(
                    "sudden",
                    sudden,
                    format!(
                        "the winner of a sudden death has 1 HP, the loser 0, after 1 to {SUDDEN_DEATH_CAP} rolls"
                    ),
                ));
            }
            (Some(SuddenDeath { winner: None, rolls }), _, hp)
                if hp != [0, 0] || rolls != SUDDEN_DEATH_CAP =>
            {
                return Err(invalid(
                    "sudden",
                    sudden,
                    format!("a sudden death is drawn after {SUDDEN_DEATH_CAP} equal rolls, both at 0 HP"),
                ));
            }
            (None, 0, [0, 0]) => {
                return Err(ParsePositionError::Inconsistent(
                    "both armies at 0 HP, but no sudden death was fought (sudden=-)".into(),
                ));
            }
            _ => {}
        }
        g.check_history(&f)?;
        if g.reroll == 0 {
            if !g.hp.contains(&0) && g.turn < options.max_turns {
                return Err(ParsePositionError::Inconsistent(
                    "phase=over but both armies stand and the turn cap is not reached".into(),
                ));
            }
        } else {
            if g.hp.contains(&0) {
                return Err(ParsePositionError::Inconsistent(
                    "an army at 0 HP but the game goes on".into(),
                ));
            }
            g.acting = (0..2).filter(|&p| g.pending[p].is_none()).collect();
            if g.acting.is_empty() {
                return Err(ParsePositionError::Inconsistent(
                    "both armies have decided, so the step would have been resolved".into(),
                ));
            }
        }
        Ok(g)
    }

    fn position(&self) -> String {
        format!("{} rng={}", self.position_without_rng(), self.rng.to_text())
    }

    fn position_without_rng(&self) -> String {
        let phase = self.phase_name();
        let pending = |p: usize| self.pending[p].map_or("-".to_owned(), |m| m.to_string());
        let reveal = self.last.map_or("-".to_owned(), |r| {
            format!(
                "{}/{}/{}",
                faces_text(&r.dice[0]),
                faces_text(&r.dice[1]),
                r.mercenary
                    .map_or("-".to_owned(), |(s, roll)| format!("{s}:{roll}"))
            )
        });
        let sudden = self.sudden.map_or("-".to_owned(), |s| {
            format!(
                "{}:{}",
                s.winner.map_or("draw".to_owned(), |w| w.to_string()),
                s.rolls
            )
        });
        format!(
            "turn={} phase={phase} hp={},{} merc={} dice0={} dice1={} resting={},{} grave={},{} pending0={} pending1={} reveal={reveal} sudden={sudden}",
            self.turn,
            self.hp[0],
            self.hp[1],
            self.mercenary.map_or("-".to_owned(), |m| m.to_string()),
            faces_text(&self.dice[0]),
            faces_text(&self.dice[1]),
            self.resting[0],
            self.resting[1],
            self.grave[0],
            self.grave[1],
            pending(0),
            pending(1),
        )
    }

    fn seats(&self) -> usize {
        2
    }

    fn to_act(&self) -> SeatSet {
        self.acting
    }

    fn legal_moves(&self, seat: Seat, out: &mut Vec<SpartanMove>) {
        if !self.acting.contains(seat) {
            return;
        }
        let d = self.dice[seat];
        // Every multiset of non-plague faces, in increasing order of (k2, k3, k4, k5, k6).
        for k2 in 0..=d[2] {
            for k3 in 0..=d[3] {
                for k4 in 0..=d[4] {
                    for k5 in 0..=d[5] {
                        for k6 in 0..=d[6] {
                            out.push(SpartanMove {
                                reroll: [0, 0, k2, k3, k4, k5, k6],
                            });
                        }
                    }
                }
            }
        }
    }

    fn play(&mut self, seat: Seat, mv: &SpartanMove) -> Result<(), PlayError> {
        if self.reroll == 0 {
            return Err(PlayError::GameOver);
        }
        if seat > 1 {
            return Err(PlayError::NoSuchSeat(seat));
        }
        if !self.acting.contains(seat) {
            return Err(PlayError::NotToAct {
                seat,
                to_act: self.acting,
            });
        }
        self.check(seat, mv).map_err(|why| PlayError::Illegal {
            seat,
            mv: mv.to_string(),
            why,
        })?;
        self.pending[seat] = Some(*mv);
        self.acting = self.acting.without(seat);
        if self.acting.is_empty() {
            self.resolve_step();
        }
        Ok(())
    }

    fn write_move(mv: &SpartanMove, out: &mut String) {
        mv.push_to(out);
    }

    fn read_move(&self, text: &str) -> Result<SpartanMove, ParseMoveError> {
        let t = text.trim();
        if t == "stand" {
            return Ok(SpartanMove::STAND);
        }
        let faces = t
            .strip_prefix("reroll:")
            .ok_or_else(|| ParseMoveError::new(text, "expected stand or reroll:<faces>, e.g. reroll:236"))?;
        let reroll = parse_faces(faces)
            .filter(|_| !faces.is_empty() && faces != "-")
            .ok_or_else(|| ParseMoveError::new(text, "faces are digits 1-6, e.g. reroll:236"))?;
        Ok(SpartanMove { reroll })
    }

    fn observation(&self, seat: Seat) -> SpartanObservation {
        SpartanObservation {
            seat,
            turn: self.turn,
            phase: self.phase_name(),
            hp: self.hp,
            mercenary: self.mercenary.map(usize::from),
            your_dice: faces_list(&self.dice[seat.min(1)]),
            you_decided: self.pending[seat.min(1)].is_some(),
            in_hand: if self.reroll == 0 {
                [0, 0]
            } else {
                [self.in_hand(0), self.in_hand(1)]
            },
            resting: self.resting,
            graveyard: self.grave,
            last_reveal: self.last.as_ref().map(Spartan::reveal_view),
            sudden_death_winner: self.sudden.and_then(|s| s.winner.map(usize::from)),
            sudden_death_rolls: self.sudden.map_or(0, |s| s.rolls),
        }
    }

    fn write_observation(&self, seat: Seat, out: &mut String) {
        let mut o = Object::new(out);
        o.int("seat", seat)
            .int("turn", self.turn)
            .word("phase", self.phase_name())
            .ints("hp", self.hp)
            .opt_int("mercenary", self.mercenary);
        write_faces_json(&self.dice[seat.min(1)], o.key("your_dice"));
        o.bool("you_decided", self.pending[seat.min(1)].is_some()).ints(
            "in_hand",
            if self.reroll == 0 {
                [0, 0]
            } else {
                [self.in_hand(0), self.in_hand(1)]
            },
        );
        o.ints("resting", self.resting).ints("graveyard", self.grave);
        match &self.last {
            None => o.key("last_reveal").push_str("null"),
            Some(r) => {
                let mut reveal = Object::new(o.key("last_reveal"));
                let dice = reveal.key("dice");
                dice.push('[');
                write_faces_json(&r.dice[0], dice);
                dice.push(',');
                write_faces_json(&r.dice[1], dice);
                dice.push(']');
                match r.mercenary {
                    None => reveal.key("mercenary").push_str("null"),
                    Some((s, roll)) => {
                        let mut m = Object::new(reveal.key("mercenary"));
                        m.int("seat", s).int("roll", roll);
                        m.end();
                    }
                }
                reveal
                    .ints("attack", [r.attack(0), r.attack(1)])
                    .ints("defence", [defence(&r.dice[0]), defence(&r.dice[1])])
                    .ints("damage", [r.damage(0), r.damage(1)]);
                reveal.end();
            }
        }
        o.opt_int("sudden_death_winner", self.sudden.and_then(|s| s.winner))
            .int("sudden_death_rolls", self.sudden.map_or(0, |s| s.rolls));
        o.end();
    }

    fn outcome(&self) -> Option<Outcome> {
        if self.reroll != 0 {
            return None;
        }
        let scores = self.hp.to_vec();
        let capped = !self.hp.contains(&0);
        Some(Outcome::by_key(&self.hp, scores, capped))
    }

    fn is_move_public(&self, _seat: Seat, _mv: &SpartanMove) -> bool {
        false // rerolls are chosen in secret
    }

    fn rng_mut(&mut self) -> Option<&mut GameRng> {
        Some(&mut self.rng)
    }

    fn determinize(&self, seat: Seat, rng: &mut GameRng) -> Spartan {
        let mut g = self.clone();
        g.rng = GameRng::from_rng(rng);
        if g.reroll != 0 {
            // The other army's dice and its decision, if made, are unknown: draw the
            // dice afresh and let it decide again.
            let other = 1 - seat.min(1);
            let n = g.in_hand(other);
            let mut faces = [0; 7];
            g.roll_into(&mut faces, n);
            g.dice[other] = faces;
            g.pending[other] = None;
            g.acting = (0..2).filter(|&p| g.pending[p].is_none()).collect();
        }
        g
    }

    fn public_position(&self, seat: Seat) -> String {
        let mut g = self.clone();
        if g.reroll != 0 {
            // The other army's dice and decision are secret: placeholders (all twos),
            // undecided.
            let other = 1 - seat.min(1);
            let n = g.in_hand(other);
            g.dice[other] = [0; 7];
            g.dice[other][2] = n;
            g.pending[other] = None;
        }
        g.position_without_rng()
    }

    fn render(&self) -> String {
        self.render_view(None)
    }

    fn render_for(&self, seat: Seat) -> String {
        self.render_view(Some(seat))
    }
}

impl Spartan {
    /// The drawing for `viewer` (`None`: everything): the other army's dice in hand
    /// and whether it has decided stay hidden until the reveal.
    fn render_view(&self, viewer: Option<Seat>) -> String {
        let mut s = format!(
            "turn {}  {}\nHP {} / {}   mercenary: {}\n",
            self.turn,
            match self.reroll {
                1 => "first reroll",
                2 => "second reroll",
                _ => "game over",
            },
            self.hp[0],
            self.hp[1],
            self.mercenary
                .map_or("centre".to_owned(), |m| format!("seat {m}"))
        );
        for p in 0..2 {
            let hidden = viewer.is_some_and(|v| v != p) && self.reroll != 0;
            let dice = if hidden {
                format!("{} in hand, hidden", self.in_hand(p))
            } else {
                faces_text(&self.dice[p])
            };
            s.push_str(&format!(
                "seat {p}{}: dice {dice}  resting {}  graveyard {}{}\n",
                if viewer == Some(p) { " (you)" } else { "" },
                self.resting[p],
                self.grave[p],
                if self.pending[p].is_some() && !hidden {
                    "  (decided)"
                } else {
                    ""
                }
            ));
        }
        if let Some(r) = &self.last {
            let v = Spartan::reveal_view(r);
            s.push_str(&format!(
                "last reveal: {} vs {}  attack {}/{}  defence {}/{}  damage {}/{}\n",
                faces_text(&r.dice[0]),
                faces_text(&r.dice[1]),
                v.attack[0],
                v.attack[1],
                v.defence[0],
                v.defence[1],
                v.damage[0],
                v.damage[1]
            ));
        }
        s.push_str("faces: 1 plague, 2-3 warrior, 4 hoplite, 5 phalanx, 6 necromancer\n");
        s
    }
}

/// Hit points lost between two observations, in words.
fn spartan_events(me: Seat, old: &serde_json::Value, new: &serde_json::Value) -> Vec<String> {
    let hp = |v: &serde_json::Value, s: usize| v["hp"][s].as_i64().unwrap_or(0);
    (0..2)
        .filter_map(|s| {
            let lost = hp(old, s) - hp(new, s);
            (lost > 0).then(|| {
                let army = if s == me {
                    "your army".to_owned()
                } else {
                    format!("seat {s}'s army")
                };
                format!("{army} lost {lost} HP")
            })
        })
        .collect()
}
