//! `astragal_engine._astragal`: the engine's games for Python (the package `astragal_engine`
//! wraps it; see `python/README.md`).
//!
//! One class, `State`, holds a state of any game over the typed engine, so a move
//! is checked, numbered and played without text unless the caller uses text.
#![allow(unsafe_code)] // PyO3's macros expand to the FFI glue Python calls through.

mod actions;
mod batch;
mod encode;
mod state;

use engine::games::{cuatto::Cuatto, spartan::Spartan, uptick::Uptick, ur::Ur, utara::Utara};
use engine::{GAME_IDS, Seat, SetupError};
use numpy::PyArray1;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use state::{AnyState, Refused, Saved, Typed};

create_exception!(
    _astragal,
    AstragalError,
    PyValueError,
    "Any input the engine refuses."
);
create_exception!(
    _astragal,
    SetupFailed,
    AstragalError,
    "A game that cannot be set up: unknown id, bad options or seats, a position that does not parse."
);
create_exception!(
    _astragal,
    MoveRefused,
    AstragalError,
    "A move that does not parse, is not legal, or a seat that is not to act."
);
create_exception!(
    _astragal,
    ChanceRefused,
    AstragalError,
    "A chance outcome given when chance is not to decide, or out of its range."
);

fn refused(e: Refused) -> PyErr {
    match e {
        Refused::Setup(e) => SetupFailed::new_err(e.to_string()),
        Refused::Move(e) => MoveRefused::new_err(e),
        Refused::Chance(e) => ChanceRefused::new_err(e),
    }
}

fn typed<G: encode::Encode>(
    options: &[String],
    seats: Option<usize>,
    seed: u64,
    position: Option<&str>,
    explicit: bool,
) -> Result<Box<dyn AnyState>, SetupError> {
    Ok(Box::new(Typed::<G>::setup(
        options, seats, seed, position, explicit,
    )?))
}

fn setup(
    game: &str,
    options: &[String],
    seats: Option<usize>,
    seed: u64,
    position: Option<&str>,
    explicit: bool,
) -> Result<Box<dyn AnyState>, SetupError> {
    let make = match game {
        "ur" => typed::<Ur>,
        "utara" => typed::<Utara>,
        "uptick" => typed::<Uptick>,
        "cuatto" => typed::<Cuatto>,
        "spartan" => typed::<Spartan>,
        _ => {
            return Err(SetupError::UnknownGame {
                id: game.to_owned(),
                known: GAME_IDS.join(", "),
            });
        }
    };
    make(options, seats, seed, position, explicit)
}

fn chance_mode(chance: &str) -> PyResult<bool> {
    match chance {
        "seeded" => Ok(false),
        "explicit" => Ok(true),
        other => Err(SetupFailed::new_err(format!(
            "chance={other:?}: expected \"seeded\" (the state's own dice, from its seed) or \"explicit\" (you give each draw)"
        ))),
    }
}

/// A non-negative whole number given from Python, as `what` names it: a bool, a
/// negative number or another type is a `ValueError` (`err`) naming the problem,
/// not PyO3's `OverflowError` or `TypeError`.
fn whole(value: &Bound<'_, PyAny>, what: &str, err: fn(String) -> PyErr) -> PyResult<u64> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(err(format!("{what} is a whole number, not a bool")));
    }
    // numpy's integers come as their `__index__`.
    let Ok(index) = value.call_method0("__index__") else {
        return Err(err(format!(
            "{what} is a whole number, not {}",
            value.get_type().name()?
        )));
    };
    match index.extract::<i128>() {
        Ok(i) if i < 0 => Err(err(format!("{what} {i} is negative"))),
        Ok(i) => u64::try_from(i).map_err(|_| err(format!("{what} {i} is too large"))),
        Err(_) => Err(err(format!("{what} is too large"))),
    }
}

fn move_err(why: String) -> PyErr {
    MoveRefused::new_err(why)
}

fn chance_err(why: String) -> PyErr {
    ChanceRefused::new_err(why)
}

fn setup_err(why: String) -> PyErr {
    SetupFailed::new_err(why)
}

fn seat_arg(value: &Bound<'_, PyAny>) -> PyResult<Seat> {
    Ok(usize::try_from(whole(value, "seat", move_err)?).unwrap_or(usize::MAX))
}

fn action_arg(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(usize::try_from(whole(value, "action", move_err)?).unwrap_or(usize::MAX))
}

fn seed_arg(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    whole(value, "seed", setup_err)
}

/// An encoded observation and its action mask.
type EncodedWithMask<'py> = (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<i8>>);

/// A state of one of the five games.
#[pyclass(module = "astragal_engine._astragal", name = "State")]
struct State {
    inner: Box<dyn AnyState>,
}

impl State {
    fn check_seat(&self, seat: Seat) -> PyResult<Seat> {
        state::check_seat(self.inner.id(), self.inner.seats(), seat).map_err(refused)?;
        Ok(seat)
    }

    /// The seat named, or the one seat to act.
    fn seat_or_to_act(&self, seat: Option<&Bound<'_, PyAny>>) -> PyResult<Seat> {
        if let Some(seat) = seat {
            return self.check_seat(seat_arg(seat)?);
        }
        match self.inner.to_act().as_slice() {
            [one] => Ok(*one),
            [] if self.inner.chance_range().is_some() => Err(MoveRefused::new_err(
                "chance is to decide, not a seat: see chance_outcomes() and apply_chance()",
            )),
            [] => Err(MoveRefused::new_err("the game is over: no seat is to act")),
            several => Err(MoveRefused::new_err(format!(
                "seats {several:?} decide at once: name the seat"
            ))),
        }
    }
}

#[pymethods]
impl State {
    /// The game id.
    #[getter]
    fn game(&self) -> &'static str {
        self.inner.id()
    }

    /// The number of seats.
    #[getter]
    fn seats(&self) -> usize {
        self.inner.seats()
    }

    /// Every option as `key=value`, canonical and sorted.
    #[getter]
    fn options(&self) -> Vec<String> {
        self.inner.options().to_vec()
    }

    /// Whether the caller gives the dice (`chance="explicit"`).
    #[getter]
    fn explicit_chance(&self) -> bool {
        self.inner.explicit_chance()
    }

    /// The seats that must decide now: empty at a chance node and at the end.
    #[getter]
    fn to_act(&self) -> Vec<Seat> {
        self.inner.to_act()
    }

    /// OpenSpiel's current player, in one call: the one seat to act, or -1 at a
    /// chance node, -2 when several seats decide at once, -4 at the end (its
    /// `PlayerId`s).
    #[getter]
    fn current_player(&self) -> i64 {
        if self.inner.chance_range().is_some() {
            return -1;
        }
        match self.inner.to_act().as_slice() {
            [] => -4,
            [one] => *one as i64,
            _ => -2,
        }
    }

    /// The legal actions of `player` as OpenSpiel asks for them: empty, not an
    /// error, for a player (or a negative player id) that is not to act.
    fn legal_actions_of(&mut self, player: i64) -> Vec<usize> {
        match usize::try_from(player) {
            Ok(seat) if self.inner.to_act().contains(&seat) => self.inner.legal_actions(seat),
            _ => Vec::new(),
        }
    }

    /// Whether the game has ended.
    #[getter]
    fn is_over(&self) -> bool {
        self.inner.is_over()
    }

    /// Whether chance is to decide (only with `chance="explicit"`).
    #[getter]
    fn is_chance(&self) -> bool {
        self.inner.chance_range().is_some()
    }

    /// The range of the draw that waits (its outcomes are `0..range`, equally
    /// likely), or `None` when chance is not to decide.
    #[getter]
    fn chance_range(&self) -> Option<u32> {
        self.inner.chance_range()
    }

    /// The outcomes given so far to the step that waits for chance.
    #[getter]
    fn pending_chance(&self) -> Vec<u32> {
        self.inner.chance_so_far()
    }

    /// The outcomes of the draw that waits and their probabilities: `(k, 1/n)` for
    /// `k` in `0..n`; empty when chance is not to decide.
    fn chance_outcomes(&self) -> Vec<(u32, f64)> {
        match self.inner.chance_range() {
            Some(n) => (0..n).map(|k| (k, 1.0 / f64::from(n))).collect(),
            None => Vec::new(),
        }
    }

    /// Decides the draw that waits.
    fn apply_chance(&mut self, outcome: &Bound<'_, PyAny>) -> PyResult<()> {
        let outcome = whole(outcome, "chance outcome", chance_err)?;
        let outcome = u32::try_from(outcome)
            .map_err(|_| ChanceRefused::new_err(format!("chance outcome {outcome} is too large")))?;
        self.inner.apply_chance(outcome).map_err(refused)
    }

    /// The legal moves of `seat` (default: the one seat to act), in notation,
    /// sorted by action number.
    #[pyo3(signature = (seat=None))]
    fn legal_moves(&mut self, seat: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
        let seat = self.seat_or_to_act(seat)?;
        Ok(self.inner.legal_moves(seat))
    }

    /// The legal moves of `seat` as action numbers, ascending.
    #[pyo3(signature = (seat=None))]
    fn legal_actions(&mut self, seat: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<usize>> {
        let seat = self.seat_or_to_act(seat)?;
        Ok(self.inner.legal_actions(seat))
    }

    /// How many action numbers this game and options use.
    #[getter]
    fn action_count(&self) -> usize {
        self.inner.action_count()
    }

    /// The widest draw of chance (0 for a game without chance).
    #[getter]
    fn max_chance_outcomes(&self) -> u32 {
        self.inner.max_chance()
    }

    /// The action number of a move written in notation.
    fn action_of(&self, text: &str) -> PyResult<usize> {
        self.inner.action_of(text).map_err(refused)
    }

    /// The notation of a legal action of `seat`.
    #[pyo3(signature = (action, seat=None))]
    fn move_of_action(
        &mut self,
        action: &Bound<'_, PyAny>,
        seat: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let action = action_arg(action)?;
        let seat = self.seat_or_to_act(seat)?;
        self.inner.move_of_action(seat, action).map_err(refused)
    }

    /// Plays a move of `seat` (default: the one seat to act), given as its notation
    /// (`str`) or as an index into `legal_moves(seat)` (`int`).
    #[pyo3(signature = (move_, seat=None))]
    fn play(&mut self, move_: &Bound<'_, PyAny>, seat: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let seat = self.seat_or_to_act(seat)?;
        if let Ok(text) = move_.extract::<String>() {
            return self.inner.play_text(seat, &text).map_err(refused);
        }
        if move_.is_instance_of::<pyo3::types::PyBool>() {
            return Err(MoveRefused::new_err(
                "a move is a str (its notation) or an int (an index), not a bool",
            ));
        }
        match move_.extract::<i64>() {
            Ok(i) if i >= 0 => self.inner.play_index(seat, i as usize).map_err(refused),
            Ok(i) => Err(MoveRefused::new_err(format!("move index {i} is negative"))),
            Err(_) => Err(MoveRefused::new_err(format!(
                "a move is a str (its notation) or an int (an index into legal_moves), not {}",
                move_.get_type().name()?
            ))),
        }
    }

    /// Plays the move of `seat` with this action number.
    #[pyo3(signature = (action, seat=None))]
    fn play_action(&mut self, action: &Bound<'_, PyAny>, seat: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let action = action_arg(action)?;
        let seat = self.seat_or_to_act(seat)?;
        self.inner.play_action(seat, action).map_err(refused)
    }

    /// OpenSpiel's `apply_action` in one call: decides the draw that waits
    /// (returning -1), or plays the action of the one seat to act (returning that
    /// seat). The OpenSpiel wrapper's step, where every call from Python counts.
    fn apply_at_node(&mut self, action: &Bound<'_, PyAny>) -> PyResult<i64> {
        if self.inner.chance_range().is_some() {
            self.apply_chance(action)?;
            return Ok(-1);
        }
        let action = action_arg(action)?;
        let seat = self.seat_or_to_act(None)?;
        self.inner.play_action(seat, action).map_err(refused)?;
        Ok(seat as i64)
    }

    /// OpenSpiel's `apply_actions` for a step where several seats decide at once:
    /// `actions[seat]` for each seat to act, played in seat order, all or none (a
    /// refused action leaves the state as it was).
    fn play_together(&mut self, actions: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let before = self.inner.clone_box();
        let played = (|| {
            for seat in self.inner.to_act() {
                let Some(action) = actions.get(seat) else {
                    return Err(MoveRefused::new_err(format!(
                        "{} actions given; seat {seat} is to act too",
                        actions.len()
                    )));
                };
                let action = action_arg(action)?;
                self.inner.play_action(seat, action).map_err(refused)?;
            }
            Ok(())
        })();
        if played.is_err() {
            self.inner = before;
        }
        played
    }

    /// Plays uniformly random moves (and chance, if explicit) to the end, inside
    /// the engine; returns the number of moves played.
    fn random_playout(&mut self, seed: &Bound<'_, PyAny>) -> PyResult<usize> {
        Ok(self.inner.random_playout(seed_arg(seed)?))
    }

    /// How many numbers `encode` gives for this game, options and seats.
    #[getter]
    fn observation_size(&self) -> usize {
        self.inner.encoded_size()
    }

    /// What `seat` may see as numbers: a `float32` numpy array of
    /// `observation_size` entries in `[0, 1]`, written by the engine (the layouts
    /// are in the README, and `astragal_engine.encoding` names every entry).
    fn encode<'py>(&self, py: Python<'py>, seat: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let seat = self.check_seat(seat_arg(seat)?)?;
        let mut out = vec![0.0; self.inner.encoded_size()];
        self.inner.encode_into(seat, &mut out);
        Ok(PyArray1::from_vec(py, out))
    }

    /// `seat`'s legal actions as an `int8` numpy array of `action_count` entries,
    /// 1 for each legal action (all 0 when the seat is not to act).
    fn action_mask<'py>(
        &mut self,
        py: Python<'py>,
        seat: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<i8>>> {
        let seat = self.check_seat(seat_arg(seat)?)?;
        let mut out = vec![0; self.inner.action_count()];
        self.inner.mask_into(seat, &mut out);
        Ok(PyArray1::from_vec(py, out))
    }

    /// `(encode(seat), action_mask(seat))` in one call: what a masked
    /// environment observes each step.
    fn encode_with_mask<'py>(
        &mut self,
        py: Python<'py>,
        seat: &Bound<'py, PyAny>,
    ) -> PyResult<EncodedWithMask<'py>> {
        Ok((self.encode(py, seat)?, self.action_mask(py, seat)?))
    }

    /// What `seat` may see, as the JSON text the protocol sends.
    fn observation_json(&self, seat: &Bound<'_, PyAny>) -> PyResult<String> {
        let seat = self.check_seat(seat_arg(seat)?)?;
        Ok(self.inner.observation_json(seat))
    }

    /// What `seat` may see, as Python objects: the observation the protocol
    /// sends, parsed.
    fn observation<'py>(&self, py: Python<'py>, seat: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let text = self.observation_json(seat)?;
        py.import("json")?.call_method1("loads", (text,))
    }

    /// The whole state in position notation, with the dice to come.
    fn position(&self) -> String {
        self.inner.position()
    }

    /// The position as `seat` may know it (no dice to come, no others' secrets).
    fn public_position(&self, seat: &Bound<'_, PyAny>) -> PyResult<String> {
        let seat = self.check_seat(seat_arg(seat)?)?;
        Ok(self.inner.public_position(seat))
    }

    /// The board as text: everything, or only what `seat` may see.
    #[pyo3(signature = (seat=None))]
    fn render(&self, seat: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
        match seat {
            None => Ok(self.inner.render()),
            Some(seat) => Ok(self.inner.render_for(self.check_seat(seat_arg(seat)?)?)),
        }
    }

    /// `{"ranks": [...], "scores": [...], "capped": bool}` once the game is over,
    /// else `None`. Rank 1 is first; tied seats share a rank.
    fn outcome<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(outcome) = self.inner.outcome() else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        // As a list of ints (PyO3 would make a `Vec<u8>` bytes).
        d.set_item(
            "ranks",
            outcome.ranks.iter().map(|&r| u32::from(r)).collect::<Vec<_>>(),
        )?;
        d.set_item("scores", outcome.scores)?;
        d.set_item("capped", outcome.capped)?;
        Ok(Some(d))
    }

    /// A state that looks to `seat` exactly like this one, with hidden parts and
    /// the dice to come drawn from `seed`: what a search may sample.
    fn determinize(&self, seat: &Bound<'_, PyAny>, seed: &Bound<'_, PyAny>) -> PyResult<State> {
        let seat = self.check_seat(seat_arg(seat)?)?;
        let inner = self.inner.determinize(seat, seed_arg(seed)?).map_err(refused)?;
        Ok(State { inner })
    }

    /// An independent copy, dice to come included: a search that plays ahead on
    /// a clone of a seeded state sees the very dice the game will throw. Sample
    /// with `determinize(seat, seed)` to look ahead fairly.
    fn clone(&self) -> State {
        State {
            inner: self.inner.clone_box(),
        }
    }

    fn __copy__(&self) -> State {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> State {
        self.clone()
    }

    fn __eq__(&self, other: &State) -> bool {
        let (mine, theirs) = (self.inner.save(), other.inner.save());
        self.inner.id() == other.inner.id()
            && self.inner.options() == other.inner.options()
            && self.inner.explicit_chance() == other.inner.explicit_chance()
            && mine.position == theirs.position
            && mine.pending_move == theirs.pending_move
            && mine.chance_so_far == theirs.chance_so_far
            && self.inner.chance_range() == other.inner.chance_range()
    }

    /// Pickles as the game, options, seats and the state's position with its
    /// dice to come (and at a chance node the step that waits and the draws
    /// given), rebuilt by `_restore_state`.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let restore = py
            .import("astragal_engine._astragal")?
            .getattr("_restore_state")?;
        let saved = self.inner.save();
        let args = (
            self.inner.id(),
            self.inner.options().to_vec(),
            self.inner.seats(),
            self.inner.explicit_chance(),
            saved.position,
            saved.pending_move,
            saved.chance_so_far,
        )
            .into_pyobject(py)?;
        Ok((restore, args))
    }

    fn __str__(&self) -> String {
        self.inner.render()
    }

    fn __repr__(&self) -> String {
        format!(
            "<astragal_engine.State {} {}>",
            self.inner.id(),
            self.inner.position()
        )
    }
}

/// A new game. `options` are `key=value` texts; `seed` decides every die.
#[pyfunction]
#[pyo3(signature = (game, options, seats, seed, chance))]
fn new_state(
    game: &str,
    options: Vec<String>,
    seats: Option<usize>,
    seed: u64,
    chance: &str,
) -> PyResult<State> {
    let explicit = chance_mode(chance)?;
    let inner = setup(game, &options, seats, seed, None, explicit)
        .map_err(|e| SetupFailed::new_err(e.to_string()))?;
    Ok(State { inner })
}

/// A game from position notation; the dice to come come from its `rng` field, or
/// from `seed` when it has none.
#[pyfunction]
#[pyo3(signature = (game, position, options, seats, seed, chance))]
fn state_from_position(
    game: &str,
    position: &str,
    options: Vec<String>,
    seats: Option<usize>,
    seed: u64,
    chance: &str,
) -> PyResult<State> {
    let explicit = chance_mode(chance)?;
    let inner = setup(game, &options, seats, seed, Some(position), explicit)
        .map_err(|e| SetupFailed::new_err(e.to_string()))?;
    Ok(State { inner })
}

/// A state from what `State.__reduce__` saved (what unpickling calls).
#[pyfunction]
#[pyo3(signature = (game, options, seats, explicit, position, pending_move, chance_so_far))]
fn _restore_state(
    game: &str,
    options: Vec<String>,
    seats: usize,
    explicit: bool,
    position: Option<String>,
    pending_move: Option<(Seat, String)>,
    chance_so_far: Vec<u32>,
) -> PyResult<State> {
    let saved = Saved {
        position,
        pending_move,
        chance_so_far,
    };
    let inner = restore(game, &options, seats, explicit, &saved).map_err(refused)?;
    Ok(State { inner })
}

fn restore_typed<G: encode::Encode>(
    options: &[String],
    seats: usize,
    explicit: bool,
    saved: &Saved,
) -> Result<Box<dyn AnyState>, Refused> {
    Ok(Box::new(Typed::<G>::restore(options, seats, explicit, saved)?))
}

fn restore(
    game: &str,
    options: &[String],
    seats: usize,
    explicit: bool,
    saved: &Saved,
) -> Result<Box<dyn AnyState>, Refused> {
    let make = match game {
        "ur" => restore_typed::<Ur>,
        "utara" => restore_typed::<Utara>,
        "uptick" => restore_typed::<Uptick>,
        "cuatto" => restore_typed::<Cuatto>,
        "spartan" => restore_typed::<Spartan>,
        _ => {
            return Err(Refused::Setup(SetupError::UnknownGame {
                id: game.to_owned(),
                known: GAME_IDS.join(", "),
            }));
        }
    };
    make(options, seats, explicit, saved)
}

fn batch_typed<G: encode::Encode>(
    options: &[String],
    seats: Option<usize>,
    n: usize,
    every_seat: bool,
) -> Result<Box<dyn batch::AnyBatch>, SetupError> {
    Ok(Box::new(batch::Batch::<G>::new(options, seats, n, every_seat)?))
}

/// Many games of one kind stepped together in Rust (see `astragal_engine.vector`).
#[pyclass(module = "astragal_engine._astragal", name = "Batch")]
struct Batch {
    inner: Box<dyn batch::AnyBatch>,
    out: batch::Outputs,
}

/// What a batch's `reset` and `step` return: observations, masks, rewards,
/// terminated, truncated, to-act, as flat numpy arrays.
type BatchArrays<'py> = (
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<i8>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
);

impl Batch {
    fn arrays<'py>(&mut self, py: Python<'py>) -> BatchArrays<'py> {
        let out = std::mem::take(&mut self.out);
        (
            PyArray1::from_vec(py, out.observations),
            PyArray1::from_vec(py, out.masks),
            PyArray1::from_vec(py, out.rewards),
            PyArray1::from_vec(py, out.terminated),
            PyArray1::from_vec(py, out.truncated),
            PyArray1::from_vec(py, out.to_act),
        )
    }
}

#[pymethods]
impl Batch {
    /// `n` games of `game`; `every_seat`: every seat observes and acts each step
    /// (parallel), else the one seat to act.
    #[new]
    #[pyo3(signature = (game, options, seats, n, every_seat))]
    fn new(
        game: &str,
        options: Vec<String>,
        seats: Option<usize>,
        n: usize,
        every_seat: bool,
    ) -> PyResult<Batch> {
        if n == 0 {
            return Err(SetupFailed::new_err("a batch needs at least one game (n=0)"));
        }
        let make = match game {
            "ur" => batch_typed::<Ur>,
            "utara" => batch_typed::<Utara>,
            "uptick" => batch_typed::<Uptick>,
            "cuatto" => batch_typed::<Cuatto>,
            "spartan" => batch_typed::<Spartan>,
            _ => {
                return Err(SetupFailed::new_err(
                    SetupError::UnknownGame {
                        id: game.to_owned(),
                        known: GAME_IDS.join(", "),
                    }
                    .to_string(),
                ));
            }
        };
        let inner = make(&options, seats, n, every_seat).map_err(|e| SetupFailed::new_err(e.to_string()))?;
        Ok(Batch {
            inner,
            out: batch::Outputs::default(),
        })
    }

    #[getter]
    fn num_envs(&self) -> usize {
        self.inner.num_envs()
    }
    #[getter]
    fn seats(&self) -> usize {
        self.inner.seats()
    }
    #[getter]
    fn observation_size(&self) -> usize {
        self.inner.observation_size()
    }
    #[getter]
    fn action_count(&self) -> usize {
        self.inner.action_count()
    }
    #[getter]
    fn every_seat(&self) -> bool {
        self.inner.every_seat()
    }

    /// New games in every slot, their seeds drawn from `seed`.
    fn reset<'py>(&mut self, py: Python<'py>, seed: &Bound<'py, PyAny>) -> PyResult<BatchArrays<'py>> {
        let seed = seed_arg(seed)?;
        self.inner.reset(seed, &mut self.out);
        Ok(self.arrays(py))
    }

    /// Plays one action per game (or per game and seat, flat), then observes;
    /// an ended game is replaced by a new one in the same call.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: numpy::PyReadonlyArray1<'py, i64>,
    ) -> PyResult<BatchArrays<'py>> {
        let actions = actions
            .as_slice()
            .map_err(|e| MoveRefused::new_err(format!("actions: {e}")))?;
        self.inner
            .step(actions, &mut self.out)
            .map_err(MoveRefused::new_err)?;
        Ok(self.arrays(py))
    }

    /// A uniformly random legal action per row (0 where the seat is not to act),
    /// drawn in Rust from the batch's own generator (seeded by `reset`).
    fn sample_actions<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_vec(py, self.inner.sample_actions())
    }

    /// The seed of each slot's current game (`new_game(game, seed=...)` is it).
    #[getter]
    fn seeds(&self) -> Vec<u64> {
        self.inner.seeds()
    }

    /// A copy of slot `i`'s current game.
    fn state(&self, i: usize) -> PyResult<State> {
        if i >= self.inner.num_envs() {
            return Err(AstragalError::new_err(format!(
                "there is no game {i}: the batch has {}",
                self.inner.num_envs()
            )));
        }
        Ok(State {
            inner: self.inner.state(i),
        })
    }
}

/// The games, as dicts: id, name, seats, nature, options.
#[pyfunction]
fn game_infos<'py>(py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    engine::games()
        .into_iter()
        .map(|info| {
            let d = PyDict::new(py);
            d.set_item("id", info.id)?;
            d.set_item("name", info.name)?;
            d.set_item("min_seats", *info.seats.start())?;
            d.set_item("max_seats", *info.seats.end())?;
            d.set_item("default_seats", info.default_seats)?;
            d.set_item("chance", info.nature.chance)?;
            d.set_item("simultaneous", info.nature.simultaneous)?;
            d.set_item("hidden_information", info.nature.hidden_information)?;
            let options = info
                .options
                .iter()
                .map(|spec| {
                    let o = PyDict::new(py);
                    o.set_item("name", spec.name)?;
                    o.set_item("default", spec.default)?;
                    o.set_item("takes", spec.kind.to_string())?;
                    o.set_item("help", spec.help)?;
                    Ok(o)
                })
                .collect::<PyResult<Vec<_>>>()?;
            d.set_item("options", options)?;
            Ok(d)
        })
        .collect()
}

/// A seed from the operating system's random source.
#[pyfunction]
fn os_seed() -> PyResult<u64> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| AstragalError::new_err(format!("no OS randomness: {e}")))?;
    Ok(u64::from_le_bytes(bytes))
}

#[pymodule]
fn _astragal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<State>()?;
    m.add_class::<Batch>()?;
    m.add_function(wrap_pyfunction!(new_state, m)?)?;
    m.add_function(wrap_pyfunction!(state_from_position, m)?)?;
    m.add_function(wrap_pyfunction!(game_infos, m)?)?;
    m.add_function(wrap_pyfunction!(os_seed, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_state, m)?)?;
    m.add("ENGINE_VERSION", engine::ENGINE_VERSION)?;
    m.add("AstragalError", m.py().get_type::<AstragalError>())?;
    m.add("SetupFailed", m.py().get_type::<SetupFailed>())?;
    m.add("MoveRefused", m.py().get_type::<MoveRefused>())?;
    m.add("ChanceRefused", m.py().get_type::<ChanceRefused>())?;
    Ok(())
}
