//! The trait every game implements, and the types it speaks in.

use crate::notation::ParsePositionError;
use crate::options::{OptionError, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{Seat, SeatSet};
use serde::{Deserialize, Serialize};
use std::fmt::{Debug, Display};
use std::ops::RangeInclusive;

/// What kind of game a game is, in the terms of game theory (as OpenSpiel's game
/// type says it): what the referee, the bots and the tests may rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Nature {
    /// Dice decide something: the seed changes the game.
    pub chance: bool,
    /// Several seats can be asked at once, each deciding without seeing the others'
    /// choice (`to_act` may hold more than one seat).
    pub simultaneous: bool,
    /// A seat can hold something the others do not see (beyond the dice to come):
    /// its public position differs from the full one.
    pub hidden_information: bool,
}

/// How a game is shown to a person playing it in a terminal (`referee play --bot
/// human`): the game's own words, kept beside its rules so that a new game brings
/// them with it.
#[derive(Debug, Clone, Copy)]
pub struct Presentation {
    /// What the letters and marks of its board mean, and how moves are written.
    pub legend: &'static str,
    /// The unit of its scores, after the numbers (` HP`); empty when plain points.
    pub score_unit: &'static str,
    /// How a seat is drawn on the board, when the board draws seats apart
    /// (`upper-case letters`); `None`: the board names seats by number.
    pub seat_mark: fn(Seat) -> Option<String>,
    /// The events a person would miss on the board between two observations of
    /// seat `me` (a piece sent back, hit points lost), as sentences.
    pub events_in_words: fn(me: Seat, old: &serde_json::Value, new: &serde_json::Value) -> Vec<String>,
    /// Its board in the game viewer: JavaScript that sets `DRAW[id]` to a function
    /// of a frame and a seat giving SVG text (`engine/src/games/draw/<id>.js`);
    /// empty, the viewer shows observations as text.
    pub drawing: &'static str,
}

impl Presentation {
    /// Says nothing of seats or events: for a game whose board says it all.
    pub fn no_seat_mark(_: Seat) -> Option<String> {
        None
    }

    /// No events in words.
    pub fn no_events(_: Seat, _: &serde_json::Value, _: &serde_json::Value) -> Vec<String> {
        Vec::new()
    }

    /// Seat 0 in upper-case letters, seat 1 in lower case (a two-seat board that
    /// tells pieces apart by case).
    pub fn letter_case(seat: Seat) -> Option<String> {
        Some(
            if seat == 0 {
                "upper-case letters"
            } else {
                "lower-case letters"
            }
            .to_owned(),
        )
    }

    /// How another seat is named in an event: `your` for `me`, else `seat N's`.
    pub fn whose(me: Seat, seat: Seat) -> String {
        if seat == me {
            "your".to_owned()
        } else {
            format!("seat {seat}'s")
        }
    }
}

/// A move text that is not a move of this game at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse move {text:?}: {why}")]
pub struct ParseMoveError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl ParseMoveError {
    /// A parse error for `text`.
    pub fn new(text: &str, why: impl Display) -> ParseMoveError {
        ParseMoveError {
            text: text.to_owned(),
            why: why.to_string(),
        }
    }
}

/// A well-formed move that cannot be played now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlayError {
    /// The game has ended.
    #[error("the game is over")]
    GameOver,
    /// The seat does not exist.
    #[error("there is no seat {0}")]
    NoSuchSeat(Seat),
    /// Another seat must decide now (or this seat already decided this step).
    #[error("seat {seat} is not to act (to act: {to_act:?})")]
    NotToAct {
        /// The seat that tried to move.
        seat: Seat,
        /// Who must decide.
        to_act: SeatSet,
    },
    /// The move breaks a rule.
    #[error("illegal move {mv:?} for seat {seat}: {why}")]
    Illegal {
        /// The seat that tried to move.
        seat: Seat,
        /// The move, in notation.
        mv: String,
        /// Which rule it breaks.
        why: &'static str,
    },
}

/// Any reason a move given as text is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    /// Not a move of this game.
    #[error(transparent)]
    Parse(#[from] ParseMoveError),
    /// A move, but not one that can be played now.
    #[error(transparent)]
    Play(#[from] PlayError),
}

/// Why a game could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// No game has this id.
    #[error("unknown game {id:?} (known: {known})")]
    UnknownGame {
        /// The id given.
        id: String,
        /// The known ids.
        known: String,
    },
    /// An option was refused.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// The number of seats is outside the game's range.
    #[error("game {game} is for {min} to {max} seats, not {given}")]
    Seats {
        /// The game id.
        game: &'static str,
        /// Fewest seats.
        min: usize,
        /// Most seats.
        max: usize,
        /// Seats asked for.
        given: usize,
    },
    /// The position text was refused.
    #[error(transparent)]
    Position(#[from] ParsePositionError),
}

/// How a finished game ranks the seats.
///
/// `ranks[s]` is seat `s`'s place, 1 for the best; tied seats share a place and the
/// next place is skipped (1, 1, 3). `scores[s]` is the game's own score (counters,
/// points, pips, HP).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Place of each seat, 1 = first.
    pub ranks: Vec<u8>,
    /// Score of each seat.
    pub scores: Vec<i64>,
    /// Whether the game ended by its length cap rather than by its own rules.
    pub capped: bool,
}

impl Outcome {
    /// Ranks seats by a key, higher first; equal keys tie.
    ///
    /// ```
    /// use engine::Outcome;
    /// let o = Outcome::by_key(&[3, 7, 3], vec![3, 7, 3], false);
    /// assert_eq!(o.ranks, vec![2, 1, 2]);
    /// ```
    pub fn by_key<K: Ord>(keys: &[K], scores: Vec<i64>, capped: bool) -> Outcome {
        let ranks = keys
            .iter()
            .map(|k| 1 + keys.iter().filter(|other| *other > k).count() as u8)
            .collect();
        Outcome {
            ranks,
            scores,
            capped,
        }
    }

    /// The seats ranked first.
    pub fn winners(&self) -> impl Iterator<Item = Seat> + '_ {
        self.ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| **r == 1)
            .map(|(s, _)| s)
    }

    /// Whether every seat shares first place.
    pub fn is_draw(&self) -> bool {
        self.ranks.iter().all(|r| *r == 1)
    }
}

/// The rules of one game, as a state that moves forward by seats' decisions.
///
/// A state owns its [`GameRng`]: every roll happens inside [`Game::new`] or
/// [`Game::play`], so the game id, options, seed and moves determine the game.
/// When several seats must decide at once (as in Spartan Yahtzee), each plays its
/// move separately; the state keeps those moves secret until all have decided.
pub trait Game: Clone + Debug + PartialEq + Send + Sync + 'static {
    /// A move. Its `Display` is the move notation, which [`Game::parse_move`] reads.
    type Move: Clone + Debug + Display + PartialEq + Send + Sync;
    /// Typed options.
    type Options: Clone + Debug + PartialEq + Send + Sync;
    /// What one seat may see.
    type Observation: Serialize + 'static;

    /// The game id used everywhere (`ur`, `uptick`, ...).
    const ID: &'static str;
    /// The game's name for people.
    const NAME: &'static str;
    /// How many seats the game takes.
    const SEATS: RangeInclusive<usize>;
    /// Seats when none are asked for.
    const DEFAULT_SEATS: usize;
    /// What kind of game it is (chance, simultaneous moves, hidden information).
    const NATURE: Nature;
    /// How it is shown to a person in a terminal.
    const PRESENTATION: Presentation;

    /// The options this game understands, with defaults.
    fn option_specs() -> &'static [OptionSpec];

    /// Reads typed options from checked values.
    ///
    /// # Errors
    /// A value that the kind check let through but the game refuses.
    fn options(values: &OptionValues, seats: usize) -> Result<Self::Options, OptionError>;

    /// A new game; all setup chance is drawn from `rng`.
    fn new(options: &Self::Options, seats: usize, rng: GameRng) -> Self;

    /// The number of seats a position text describes, where the notation says it
    /// (Utara's `totals`, Cuatto's `teamN` fields): read before the options, whose
    /// defaults depend on it. `None` when the text does not say.
    fn seats_in_position(_text: &str) -> Option<usize> {
        None
    }

    /// Reads a position written by [`Game::position`], or by
    /// [`Game::position_without_rng`] (then `rng` is used for the chance to come),
    /// and only as the engine writes it: the state read must write back as the
    /// very same text. Every reader of positions (the referee's `--position`,
    /// the Python package, the bots) comes here.
    ///
    /// # Errors
    /// Those of [`Game::read_position`], and
    /// [`ParsePositionError::NotCanonical`] for another spelling of a state.
    fn from_position(options: &Self::Options, text: &str, rng: GameRng) -> Result<Self, ParsePositionError> {
        let state = Self::read_position(options, text, rng)?;
        let with_rng = text.split_whitespace().any(|field| field.starts_with("rng="));
        let canonical = if with_rng {
            state.position()
        } else {
            state.position_without_rng()
        };
        match crate::notation::canonical_difference(text, &canonical) {
            None => Ok(state),
            Some(refusal) => Err(refusal),
        }
    }

    /// The game's own reader of position fields, behind [`Game::from_position`]
    /// (which adds the check that the text is canonical): it refuses every state
    /// no game could reach. When the text has no `rng` field, `rng` is used for
    /// the chance to come.
    ///
    /// # Errors
    /// Unknown, missing or invalid fields, or fields that contradict each other.
    fn read_position(options: &Self::Options, text: &str, rng: GameRng) -> Result<Self, ParsePositionError>;

    /// The whole state as one line of `key=value` fields, including the RNG state.
    fn position(&self) -> String;

    /// Number of seats in this game.
    fn seats(&self) -> usize;

    /// Who must decide now; empty when the game is over.
    fn to_act(&self) -> SeatSet;

    /// Appends the legal moves of `seat` to `out`, in a stable order. Nothing is
    /// appended for a seat that is not to act.
    fn legal_moves(&self, seat: Seat, out: &mut Vec<Self::Move>);

    /// Plays `seat`'s move.
    ///
    /// # Errors
    /// The game is over, the seat is not to act, or the move is illegal; the state
    /// is then unchanged.
    fn play(&mut self, seat: Seat, mv: &Self::Move) -> Result<(), PlayError>;

    /// Appends `mv` in this game's notation to `out`: the same text as its
    /// `Display`, which games write without the formatting machinery because the
    /// referee writes every legal move of every request.
    fn write_move(mv: &Self::Move, out: &mut String) {
        use std::fmt::Write as _;
        let _ = write!(out, "{mv}");
    }

    /// Appends `moves` to `out`, each as [`Game::write_move`] writes it, separated
    /// by commas: the legal-move list of a request. Games whose lists run to
    /// hundreds of moves write them faster than one move at a time.
    fn write_move_list(moves: &[Self::Move], out: &mut String) {
        for (i, m) in moves.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            Self::write_move(m, out);
        }
    }

    /// Reads a move the way a person may type it: the game's notation, and where a
    /// game allows it other spellings of the same move (Uptick's `c3xf6`, spaces
    /// around the text). The human seat reads with this; everything else uses
    /// [`Game::parse_move`].
    ///
    /// # Errors
    /// The text is not a move of this game.
    fn read_move(&self, text: &str) -> Result<Self::Move, ParseMoveError>;

    /// Reads a move in this game's notation: exactly the text [`Game::write_move`]
    /// writes for it, so records, logs and comparisons never see two spellings of
    /// one move (no signs, leading zeros, padding or aliases).
    ///
    /// # Errors
    /// The text is not a move of this game, or not written as the game writes it.
    fn parse_move(&self, text: &str) -> Result<Self::Move, ParseMoveError> {
        let mv = self.read_move(text)?;
        if !is_written_as::<Self>(&mv, text) {
            let mut canonical = String::new();
            Self::write_move(&mv, &mut canonical);
            return Err(ParseMoveError::new(
                text,
                format_args!("not in canonical notation (write {canonical:?})"),
            ));
        }
        Ok(mv)
    }

    /// Everything `seat` may know, and nothing more.
    fn observation(&self, seat: Seat) -> Self::Observation;

    /// Appends [`Game::observation`] as compact JSON to `out`: exactly the text
    /// `serde_json` writes for it. Games write it directly from the state (see
    /// [`crate::json`]); the referee does this once per request.
    fn write_observation(&self, seat: Seat, out: &mut String) {
        match serde_json::to_string(&self.observation(seat)) {
            Ok(text) => out.push_str(&text),
            Err(_) => out.push_str("null"),
        }
    }

    /// The outcome, once the game is over.
    fn outcome(&self) -> Option<Outcome>;

    /// Whether the other seats may be told this move as soon as it is played.
    /// Secret simultaneous decisions (Spartan Yahtzee's rerolls) are not; what
    /// they lead to shows in later observations.
    fn is_move_public(&self, _seat: Seat, _mv: &Self::Move) -> bool {
        true
    }

    /// A full state consistent with what `seat` observes, with the hidden parts and
    /// all future chance drawn afresh from `rng`: what a search bot may sample.
    fn determinize(&self, seat: Seat, rng: &mut GameRng) -> Self;

    /// The state's source of chance, for games that have one: how
    /// [`crate::chance::ExplicitChance`] gives a step its dice from outside.
    fn rng_mut(&mut self) -> Option<&mut GameRng> {
        None
    }

    /// The position as `seat` may know it: [`Game::position`] without the RNG state
    /// (the dice to come) and with other seats' secrets replaced by placeholders.
    /// [`Game::from_position`] on it, then [`Game::determinize`] for `seat`, gives a
    /// state that looks to `seat` exactly like this one. Sent to bots inside every
    /// observation, so a search bot needs no parser of its own.
    fn public_position(&self, _seat: Seat) -> String {
        self.position_without_rng()
    }

    /// [`Game::position`] without its `rng` field. Games with an RNG write this
    /// directly, so public positions (one per request the referee sends) never
    /// format the RNG state only to cut it off.
    fn position_without_rng(&self) -> String {
        strip_rng(&self.position())
    }

    /// The position drawn as text for people: the whole state.
    fn render(&self) -> String;

    /// The position drawn for the person at `seat`: only what that seat may know
    /// (for a game without hidden information, the whole state). A test checks it
    /// is the same for every state the seat cannot tell apart.
    fn render_for(&self, _seat: Seat) -> String {
        self.render()
    }
}

/// Whether `text` is exactly how the game writes `mv`, compared as it is written
/// (no allocation: this runs for every move the referee receives).
fn is_written_as<G: Game>(mv: &G::Move, text: &str) -> bool {
    struct Matcher<'a> {
        rest: &'a str,
        same: bool,
    }
    impl std::fmt::Write for Matcher<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            match self.rest.strip_prefix(s) {
                Some(rest) if self.same => self.rest = rest,
                _ => self.same = false,
            }
            Ok(())
        }
    }
    let mut m = Matcher {
        rest: text,
        same: true,
    };
    let _ = std::fmt::write(&mut m, format_args!("{mv}"));
    m.same && m.rest.is_empty()
}

/// A position without its `rng=` field.
pub fn strip_rng(position: &str) -> String {
    // Every game writes `rng` last: cut it off without splitting (this runs for
    // every request the referee sends).
    if let Some(at) = position.rfind(" rng=")
        && !position[at + 1..].contains(' ')
    {
        return position[..at].to_owned();
    }
    position
        .split(' ')
        .filter(|field| !field.starts_with("rng="))
        .collect::<Vec<_>>()
        .join(" ")
}
