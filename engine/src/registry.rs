//! Every game by id, behind one object-safe interface.

use crate::game::{Game, MoveError, Outcome, ParseMoveError, PlayError, SetupError};
use crate::games::{cuatto, spartan, uptick, ur, utara};
use crate::options::{OptionError, OptionSpec, OptionValues};
use crate::rng::GameRng;
use crate::seat::{Seat, SeatSet};
use std::fmt::Debug;
use std::ops::RangeInclusive;

/// What the registry knows about a game without creating one.
#[derive(Debug, Clone)]
pub struct GameInfo {
    /// The id (`ur`).
    pub id: &'static str,
    /// The name for people.
    pub name: &'static str,
    /// Seats the game takes.
    pub seats: RangeInclusive<usize>,
    /// Seats when none are asked for.
    pub default_seats: usize,
    /// Its options (besides `players`, which every game accepts).
    pub options: &'static [OptionSpec],
    /// What kind of game it is.
    pub nature: crate::game::Nature,
    /// How it is shown to a person.
    pub presentation: crate::game::Presentation,
}

/// Code that runs on a game type chosen by id at run time (see [`with_game`]).
pub trait GameVisitor {
    /// What the visit returns.
    type Output;
    /// Called with the game's type.
    fn visit<G: Game>(self) -> Self::Output;
}

/// Every registered game id, in a fixed order.
pub const GAME_IDS: [&str; 5] = ["utara", "ur", "uptick", "cuatto", "spartan"];

/// Runs `visitor` on the game type with this id, monomorphised (no dynamic calls).
///
/// # Errors
/// [`SetupError::UnknownGame`].
pub fn with_game<V: GameVisitor>(id: &str, visitor: V) -> Result<V::Output, SetupError> {
    Ok(match id {
        "utara" => visitor.visit::<utara::Utara>(),
        "ur" => visitor.visit::<ur::Ur>(),
        "uptick" => visitor.visit::<uptick::Uptick>(),
        "cuatto" => visitor.visit::<cuatto::Cuatto>(),
        "spartan" => visitor.visit::<spartan::Spartan>(),

        _ => {
            return Err(SetupError::UnknownGame {
                id: id.to_owned(),
                known: GAME_IDS.join(", "),
            });
        }
    })
}

struct InfoOf;
impl GameVisitor for InfoOf {
    type Output = GameInfo;
    fn visit<G: Game>(self) -> GameInfo {
        info_of::<G>()
    }
}

fn info_of<G: Game>() -> GameInfo {
    GameInfo {
        id: G::ID,
        name: G::NAME,
        seats: G::SEATS,
        default_seats: G::DEFAULT_SEATS,
        options: G::option_specs(),
        nature: G::NATURE,
        presentation: G::PRESENTATION,
    }
}

/// The description of a game.
///
/// # Errors
/// [`SetupError::UnknownGame`].
pub fn game_info(id: &str) -> Result<GameInfo, SetupError> {
    with_game(id, InfoOf)
}

/// All games, in [`GAME_IDS`] order.
pub fn games() -> Vec<GameInfo> {
    GAME_IDS.iter().filter_map(|id| game_info(id).ok()).collect()
}

/// Resolves the number of seats and checks the options of game `G`.
///
/// `players=N` among the options is another way to give `seats`.
///
/// # Errors
/// Bad options, or a seat count outside the game's range.
pub fn resolve_setup<G: Game, S: AsRef<str>>(
    options: &[S],
    seats: Option<usize>,
) -> Result<(G::Options, OptionValues, usize), SetupError> {
    let mut players: Option<usize> = None;
    let mut rest: Vec<&str> = Vec::new();
    for pair in options {
        let pair = pair.as_ref().trim();
        if let Some(v) = pair.strip_prefix("players=") {
            let n = v.parse().map_err(|_| OptionError::BadValue {
                key: "players".into(),
                value: v.into(),
                expected: "a number of seats".into(),
            })?;
            if players.replace(n).is_some() {
                return Err(OptionError::Duplicate("players".into()).into());
            }
        } else {
            rest.push(pair);
        }
    }
    let n = match (seats, players) {
        (Some(a), Some(b)) if a != b => {
            return Err(OptionError::BadValue {
                key: "players".into(),
                value: b.to_string(),
                expected: format!("{a}, the number of seats"),
            }
            .into());
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => G::DEFAULT_SEATS,
    };
    if !G::SEATS.contains(&n) {
        return Err(SetupError::Seats {
            game: G::ID,
            min: *G::SEATS.start(),
            max: *G::SEATS.end(),
            given: n,
        });
    }
    let values = OptionValues::parse(G::ID, G::option_specs(), &rest)?;
    let typed = G::options(&values, n)?;
    Ok((typed, values, n))
}

/// A game of any kind, driven by text moves: what the referee and tools use.
pub trait AnyGame: Debug + Send + Sync {
    /// The game's description.
    fn info(&self) -> GameInfo;
    /// The options in canonical `key=value` form (what a record keeps).
    fn options(&self) -> &[String];
    /// Number of seats.
    fn seats(&self) -> usize;
    /// Who must decide now; empty when over.
    fn to_act(&self) -> SeatSet;
    /// Legal moves of `seat` in notation, in a stable order.
    fn legal_moves(&self, seat: Seat) -> Vec<String>;
    /// Appends the legal moves of `seat` to `out`, separated by commas (the form the
    /// protocol sends), without a string per move; returns how many.
    fn write_legal_moves(&self, seat: Seat, out: &mut String) -> usize;
    /// Plays a move given in notation, and says whether the other seats may be
    /// told it (see [`Game::is_move_public`]).
    ///
    /// # Errors
    /// [`MoveError::Parse`] when the text is not a move of this game,
    /// [`MoveError::Play`] when it cannot be played now. The state is unchanged.
    fn play(&mut self, seat: Seat, mv: &str) -> Result<bool, MoveError>;
    /// A move as a person may type it (see [`Game::read_move`]), written in the
    /// game's notation: what the human seat sends on.
    ///
    /// # Errors
    /// The text is not a move of this game.
    fn read_move(&self, text: &str) -> Result<String, ParseMoveError>;
    /// The observation of `seat` as JSON.
    fn observation(&self, seat: Seat) -> serde_json::Value;
    /// The observation of `seat` as compact JSON text, without building a
    /// [`serde_json::Value`] first (what the protocol sends).
    fn observation_json(&self, seat: Seat) -> String {
        let mut out = String::with_capacity(1024);
        self.write_observation_json(seat, &mut out);
        out
    }
    /// Appends [`AnyGame::observation_json`] to `out`.
    fn write_observation_json(&self, seat: Seat, out: &mut String);
    /// The outcome once over.
    fn outcome(&self) -> Option<Outcome>;
    /// The position notation, RNG included.
    fn position(&self) -> String;
    /// The position as `seat` may know it (see [`Game::public_position`]).
    fn public_position(&self, seat: Seat) -> String;
    /// The position drawn for people.
    fn render(&self) -> String;
    /// The position drawn for the person at `seat`: only what that seat may know.
    fn render_for(&self, seat: Seat) -> String;
    /// A copy.
    fn clone_box(&self) -> Box<dyn AnyGame>;
}

impl Clone for Box<dyn AnyGame> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

#[derive(Debug)]
struct Erased<G: Game> {
    game: G,
    options: Vec<String>,
    /// The legal-move buffer, kept between requests (an Uptick list is ~150 moves:
    /// a new vector grew through eight allocations each time).
    scratch: std::sync::Mutex<Vec<G::Move>>,
}

impl<G: Game> Erased<G> {
    fn new(game: G, options: Vec<String>) -> Erased<G> {
        Erased {
            game,
            options,
            scratch: std::sync::Mutex::new(Vec::new()),
        }
    }
}

impl<G: Game> Clone for Erased<G> {
    fn clone(&self) -> Self {
        Erased::new(self.game.clone(), self.options.clone())
    }
}

impl<G: Game> AnyGame for Erased<G> {
    fn info(&self) -> GameInfo {
        info_of::<G>()
    }
    fn options(&self) -> &[String] {
        &self.options
    }
    fn seats(&self) -> usize {
        self.game.seats()
    }
    fn to_act(&self) -> SeatSet {
        self.game.to_act()
    }
    fn legal_moves(&self, seat: Seat) -> Vec<String> {
        let mut moves = Vec::new();
        self.game.legal_moves(seat, &mut moves);
        moves
            .iter()
            .map(|m| {
                let mut text = String::with_capacity(8);
                G::write_move(m, &mut text);
                text
            })
            .collect()
    }
    fn write_legal_moves(&self, seat: Seat, out: &mut String) -> usize {
        // Take the buffer out (another thread holding the game would find it empty
        // and allocate, never wait), fill it, put it back.
        let mut moves = self
            .scratch
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        moves.clear();
        self.game.legal_moves(seat, &mut moves);
        G::write_move_list(&moves, out);
        let n = moves.len();
        if let Ok(mut slot) = self.scratch.lock() {
            *slot = moves;
        }
        n
    }
    fn play(&mut self, seat: Seat, text: &str) -> Result<bool, MoveError> {
        if seat >= self.game.seats() {
            return Err(PlayError::NoSuchSeat(seat).into());
        }
        let mv = self.game.parse_move(text)?;
        let public = self.game.is_move_public(seat, &mv);
        self.game.play(seat, &mv)?;
        Ok(public)
    }
    fn read_move(&self, text: &str) -> Result<String, ParseMoveError> {
        let mv = self.game.read_move(text)?;
        let mut out = String::new();
        G::write_move(&mv, &mut out);
        Ok(out)
    }
    fn write_observation_json(&self, seat: Seat, out: &mut String) {
        let start = out.len();
        self.game.write_observation(seat, out);
        // Every observation also carries the position as the seat may know it.
        if out.len() > start && out.ends_with('}') {
            out.pop();
            if !out[start..].ends_with('{') {
                out.push(',');
            }
            out.push_str("\"position\":");
            let position = self.game.public_position(seat);
            // Positions are plain ASCII words: no escaping needed, and this runs for
            // every request the referee sends.
            if position
                .bytes()
                .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
            {
                out.push('"');
                out.push_str(&position);
                out.push('"');
            } else {
                out.push_str(&serde_json::to_string(&position).unwrap_or_else(|_| "\"\"".to_owned()));
            }
            out.push('}');
        }
    }
    fn observation(&self, seat: Seat) -> serde_json::Value {
        let mut v = serde_json::to_value(self.game.observation(seat)).unwrap_or(serde_json::Value::Null);
        if let Some(map) = v.as_object_mut() {
            map.insert("position".into(), self.game.public_position(seat).into());
        }
        v
    }
    fn public_position(&self, seat: Seat) -> String {
        self.game.public_position(seat)
    }
    fn outcome(&self) -> Option<Outcome> {
        self.game.outcome()
    }
    fn position(&self) -> String {
        self.game.position()
    }
    fn render(&self) -> String {
        self.game.render()
    }
    fn render_for(&self, seat: Seat) -> String {
        self.game.render_for(seat)
    }
    fn clone_box(&self) -> Box<dyn AnyGame> {
        Box::new(self.clone())
    }
}

struct NewGame<'a, S> {
    options: &'a [S],
    seats: Option<usize>,
    seed: u64,
    position: Option<&'a str>,
}

impl<S: AsRef<str>> GameVisitor for NewGame<'_, S> {
    type Output = Result<Box<dyn AnyGame>, SetupError>;
    fn visit<G: Game>(self) -> Self::Output {
        let setup = setup::<G, S>(self.options, self.seats, self.position, self.seed)?;
        let game = match setup.from_position {
            Some(game) => game,
            None => G::new(&setup.options, setup.seats, GameRng::from_seed(self.seed)),
        };
        Ok(Box::new(Erased::new(game, setup.values.canonical())))
    }
}

/// A game's options and seats resolved, and its state when it starts from a
/// position (see [`setup`]).
#[derive(Debug)]
pub struct Setup<G: Game> {
    /// The typed options.
    pub options: G::Options,
    /// The checked options, for their canonical text.
    pub values: OptionValues,
    /// The number of seats.
    pub seats: usize,
    /// The state read from the position, when one was given.
    pub from_position: Option<G>,
}

/// Resolves a game's options and seats and, when `position` is given, reads it
/// (its chance to come from `seed` when it has no `rng` field): what every way of
/// starting a typed game shares. A new game is then `G::new` with the resolved
/// options and seats, and the caller's choice of chance.
///
/// # Errors
/// As [`resolve_setup`], plus a position that does not parse or has other seats
/// than `seats`.
pub fn setup<G: Game, S: AsRef<str>>(
    options: &[S],
    seats: Option<usize>,
    position: Option<&str>,
    seed: u64,
) -> Result<Setup<G>, SetupError> {
    // A position says how many seats it has: the options' defaults follow it (a
    // seat count given as well is checked against the game below).
    let in_position = position.and_then(G::seats_in_position);
    let (typed, values, n) = resolve_setup::<G, S>(options, seats.or(in_position))?;
    let from_position = match position {
        None => None,
        Some(text) => {
            let game = G::from_position(&typed, text, GameRng::from_seed(seed))?;
            if game.seats() != n && seats.is_some() {
                return Err(SetupError::Seats {
                    game: G::ID,
                    min: game.seats(),
                    max: game.seats(),
                    given: n,
                });
            }
            Some(game)
        }
    };
    Ok(Setup {
        options: typed,
        values,
        seats: n,
        from_position,
    })
}

/// Starts game `id` with options (`key=value` each), a seat count (the game's
/// default when `None`) and a seed.
///
/// ```
/// let mut game = engine::new_game("uptick", &["size=6"], None, 7).unwrap();
/// let seat = game.to_act().first().unwrap();
/// let first = game.legal_moves(seat)[0].clone();
/// game.play(seat, &first).unwrap();
/// assert!(game.play(seat, "nonsense").is_err());
/// ```
///
/// # Errors
/// An unknown game, bad options, or a seat count the game does not take.
pub fn new_game<S: AsRef<str>>(
    id: &str,
    options: &[S],
    seats: Option<usize>,
    seed: u64,
) -> Result<Box<dyn AnyGame>, SetupError> {
    with_game(
        id,
        NewGame {
            options,
            seats,
            seed,
            position: None,
        },
    )?
}

/// Sets up game `id` from a position text. If the text has no `rng` field, chance
/// to come is drawn from `seed`.
///
/// # Errors
/// As [`new_game`], plus a position that does not parse.
pub fn game_from_position<S: AsRef<str>>(
    id: &str,
    options: &[S],
    position: &str,
    seed: u64,
) -> Result<Box<dyn AnyGame>, SetupError> {
    with_game(
        id,
        NewGame {
            options,
            seats: None,
            seed,
            position: Some(position),
        },
    )?
}
