//! One game state of any game, behind an object-safe trait: the typed engine
//! underneath, so moves are checked and numbered without going through text.

use crate::encode::Encode;
use engine::{ExplicitChance, Game, GameRng, Outcome, Seat, SetupError};
use std::fmt::Write as _;

/// Why a call on a state was refused; each becomes a Python exception.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// A game could not be set up.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A move was not read or not legal.
    #[error("{0}")]
    Move(String),
    /// Chance was given when it was not to decide, or out of range.
    #[error("{0}")]
    Chance(String),
}

/// How the dice of a state are decided.
#[derive(Debug, Clone)]
enum Dice<G: Game> {
    /// By the state's own seeded generator, inside each move.
    Seeded(G),
    /// By the caller, one draw at a time.
    Explicit(ExplicitChance<G>),
}

/// A state of game `G` with its options.
#[derive(Debug, Clone)]
pub struct Typed<G: Encode> {
    dice: Dice<G>,
    options: G::Options,
    canonical: Vec<String>,
    /// The legal moves of `moves_of`, sorted by number; `None` once the state
    /// has changed. Kept so that asking for the moves and then playing one
    /// lists them once.
    moves: Vec<G::Move>,
    moves_of: Option<Seat>,
    /// Whether `moves` is sorted yet: a mask or a move by number needs no order.
    moves_sorted: bool,
    /// The seat's move whose dice wait (explicit chance): with the state before
    /// it and the draws given so far, it is what a pickle needs to rebuild a
    /// state at a chance node. `None` at the setup's chance node.
    pending_move: Option<(Seat, G::Move)>,
}

/// Everything that makes a state, as plain values: what a pickle holds.
pub struct Saved {
    /// The state after the last finished step, with its dice to come; `None`
    /// while the setup itself waits for chance.
    pub position: Option<String>,
    /// The move whose dice wait, in notation, and its seat.
    pub pending_move: Option<(Seat, String)>,
    /// The draws given so far to the step that waits.
    pub chance_so_far: Vec<u32>,
}

/// What Python can do with a state of any game.
pub trait AnyState: Send + Sync {
    fn id(&self) -> &'static str;
    fn seats(&self) -> usize;
    fn options(&self) -> &[String];
    fn explicit_chance(&self) -> bool;
    fn to_act(&self) -> Vec<Seat>;
    fn is_over(&self) -> bool;
    fn chance_range(&self) -> Option<u32>;
    fn chance_so_far(&self) -> Vec<u32>;
    fn apply_chance(&mut self, outcome: u32) -> Result<(), Refused>;
    fn legal_moves(&mut self, seat: Seat) -> Vec<String>;
    fn legal_actions(&mut self, seat: Seat) -> Vec<usize>;
    fn action_count(&self) -> usize;
    fn max_chance(&self) -> u32;
    fn action_of(&self, text: &str) -> Result<usize, Refused>;
    fn move_of_action(&mut self, seat: Seat, action: usize) -> Result<String, Refused>;
    fn play_text(&mut self, seat: Seat, text: &str) -> Result<(), Refused>;
    fn play_index(&mut self, seat: Seat, index: usize) -> Result<(), Refused>;
    fn play_action(&mut self, seat: Seat, action: usize) -> Result<(), Refused>;
    fn random_playout(&mut self, seed: u64) -> usize;
    fn observation_json(&self, seat: Seat) -> String;
    fn position(&self) -> String;
    fn public_position(&self, seat: Seat) -> String;
    fn render(&self) -> String;
    fn render_for(&self, seat: Seat) -> String;
    fn outcome(&self) -> Option<Outcome>;
    fn determinize(&self, seat: Seat, seed: u64) -> Result<Box<dyn AnyState>, Refused>;
    fn clone_box(&self) -> Box<dyn AnyState>;
    fn save(&self) -> Saved;
    fn encoded_size(&self) -> usize;
    /// Writes `seat`'s encoded observation into `out` (zeroed, `encoded_size` long).
    fn encode_into(&self, seat: Seat, out: &mut [f32]);
    /// Sets `out[a] = 1` for each legal action `a` of `seat` (none when it is not
    /// to act); `out` is zeroed and `action_count` long.
    fn mask_into(&mut self, seat: Seat, out: &mut [i8]);
}

impl<G: Encode> Typed<G> {
    /// A new game, or one from a position; `explicit` leaves its chance to the caller.
    pub fn setup(
        options: &[String],
        seats: Option<usize>,
        seed: u64,
        position: Option<&str>,
        explicit: bool,
    ) -> Result<Typed<G>, SetupError> {
        let setup = engine::registry::setup::<G, String>(options, seats, position, seed)?;
        let dice = match (setup.from_position, explicit) {
            (Some(game), false) => Dice::Seeded(game),
            (Some(game), true) => Dice::Explicit(ExplicitChance::from_state(game)),
            (None, false) => Dice::Seeded(G::new(&setup.options, setup.seats, GameRng::from_seed(seed))),
            (None, true) => Dice::Explicit(ExplicitChance::new(&setup.options, setup.seats)),
        };
        Ok(Typed {
            dice,
            options: setup.options,
            canonical: setup.values.canonical(),
            moves: Vec::new(),
            moves_of: None,
            moves_sorted: false,
            pending_move: None,
        })
    }

    /// A seeded state of `game` (a batch's game, say).
    pub fn from_game(game: G, options: G::Options, canonical: Vec<String>) -> Typed<G> {
        Typed {
            dice: Dice::Seeded(game),
            options,
            canonical,
            moves: Vec::new(),
            moves_of: None,
            moves_sorted: false,
            pending_move: None,
        }
    }

    /// A state rebuilt from what [`AnyState::save`] gave.
    pub fn restore(
        options: &[String],
        seats: usize,
        explicit: bool,
        saved: &Saved,
    ) -> Result<Typed<G>, Refused> {
        if !explicit && (saved.pending_move.is_some() || !saved.chance_so_far.is_empty()) {
            return Err(Refused::Chance(
                "a state with seeded dice has no chance waiting".into(),
            ));
        }
        let position = saved.position.as_deref();
        if position.is_none() && saved.pending_move.is_some() {
            return Err(Refused::Chance(
                "a move waiting for chance needs the position before it".into(),
            ));
        }
        let mut state = Typed::<G>::setup(options, Some(seats), 0, position, explicit)?;
        if let Some((seat, text)) = &saved.pending_move {
            state.check_seat(*seat)?;
            let mv = state
                .game()
                .parse_move(text)
                .map_err(|e| Refused::Move(e.to_string()))?;
            state.check_to_act(*seat)?;
            state.play_move(*seat, &mv)?;
        }
        for &outcome in &saved.chance_so_far {
            state.apply_chance(outcome)?;
        }
        Ok(state)
    }

    /// Refuses a move of a seat that is not to decide now, saying who is.
    fn check_to_act(&self, seat: Seat) -> Result<(), Refused> {
        self.check_seat(seat)?;
        if self.chance_range().is_some() {
            return Err(Refused::Move(format!(
                "seat {seat} is not to act: chance is to decide (see chance_outcomes() and apply_chance())"
            )));
        }
        let to_act = self.to_act();
        if to_act.contains(&seat) {
            return Ok(());
        }
        if to_act.is_empty() {
            return Err(Refused::Move(format!(
                "seat {seat} is not to act: the game is over"
            )));
        }
        Err(Refused::Move(format!(
            "seat {seat} is not to act (to act: {to_act:?})"
        )))
    }

    fn game(&self) -> &G {
        match &self.dice {
            Dice::Seeded(g) => g,
            Dice::Explicit(e) => e.state(),
        }
    }

    /// Fills `self.moves` with `seat`'s legal moves, sorted by number.
    fn fill_moves(&mut self, seat: Seat) {
        self.list_moves(seat);
        if !self.moves_sorted {
            let options = &self.options;
            self.moves.sort_by_cached_key(|m| G::action_of(options, m));
            self.moves_sorted = true;
        }
    }

    /// Fills `self.moves` with `seat`'s legal moves in the game's order.
    fn list_moves(&mut self, seat: Seat) {
        if self.moves_of == Some(seat) {
            return;
        }
        self.moves_of = Some(seat);
        self.moves_sorted = false;
        self.moves.clear();
        if self.chance_range().is_some() {
            return;
        }
        let game = match &self.dice {
            Dice::Seeded(g) => g,
            Dice::Explicit(e) => e.state(),
        };
        game.legal_moves(seat, &mut self.moves);
    }

    /// The listed move numbered `action` (the list is sorted by number).
    fn find_action(&self, action: usize) -> Option<&G::Move> {
        let options = &self.options;
        let i = self
            .moves
            .binary_search_by_key(&action, |m| G::action_of(options, m))
            .ok()?;
        self.moves.get(i)
    }

    fn check_seat(&self, seat: Seat) -> Result<(), Refused> {
        check_seat(G::ID, self.game().seats(), seat)
    }

    fn play_move(&mut self, seat: Seat, mv: &G::Move) -> Result<(), Refused> {
        self.check_seat(seat)?;
        self.moves_of = None;
        let result = match &mut self.dice {
            Dice::Seeded(g) => g.play(seat, mv),
            Dice::Explicit(e) => {
                let played = e.play(seat, mv);
                if played.is_ok() && e.chance_range().is_some() {
                    self.pending_move = Some((seat, mv.clone()));
                }
                played
            }
        };
        result.map_err(|e| Refused::Move(e.to_string()))
    }
}

impl<G: Encode> AnyState for Typed<G> {
    fn id(&self) -> &'static str {
        G::ID
    }
    fn seats(&self) -> usize {
        self.game().seats()
    }
    fn options(&self) -> &[String] {
        &self.canonical
    }
    fn explicit_chance(&self) -> bool {
        matches!(self.dice, Dice::Explicit(_))
    }
    fn to_act(&self) -> Vec<Seat> {
        let set = match &self.dice {
            Dice::Seeded(g) => g.to_act(),
            Dice::Explicit(e) => e.to_act(),
        };
        set.iter().collect()
    }
    fn is_over(&self) -> bool {
        self.chance_range().is_none() && self.game().to_act().is_empty()
    }
    fn chance_range(&self) -> Option<u32> {
        match &self.dice {
            Dice::Seeded(_) => None,
            Dice::Explicit(e) => e.chance_range(),
        }
    }
    fn chance_so_far(&self) -> Vec<u32> {
        match &self.dice {
            Dice::Seeded(_) => Vec::new(),
            Dice::Explicit(e) => e.chance_so_far().to_vec(),
        }
    }
    fn apply_chance(&mut self, outcome: u32) -> Result<(), Refused> {
        match &mut self.dice {
            Dice::Seeded(_) => Err(Refused::Chance(
                "this state draws its own dice (made with chance=\"seeded\"); only a state made with chance=\"explicit\" takes chance from outside".into(),
            )),
            Dice::Explicit(e) => {
                self.moves_of = None;
                e.apply_chance(outcome).map_err(|e| Refused::Chance(e.to_string()))?;
                if e.chance_range().is_none() {
                    self.pending_move = None;
                }
                Ok(())
            }
        }
    }
    fn legal_moves(&mut self, seat: Seat) -> Vec<String> {
        self.fill_moves(seat);
        self.moves
            .iter()
            .map(|m| {
                let mut s = String::new();
                G::write_move(m, &mut s);
                s
            })
            .collect()
    }
    fn legal_actions(&mut self, seat: Seat) -> Vec<usize> {
        self.fill_moves(seat);
        self.moves
            .iter()
            .map(|m| G::action_of(&self.options, m))
            .collect()
    }
    fn action_count(&self) -> usize {
        G::action_count(&self.options)
    }
    fn max_chance(&self) -> u32 {
        G::max_chance(&self.options)
    }
    fn action_of(&self, text: &str) -> Result<usize, Refused> {
        let mv = self
            .game()
            .parse_move(text)
            .map_err(|e| Refused::Move(e.to_string()))?;
        Ok(G::action_of(&self.options, &mv))
    }
    fn move_of_action(&mut self, seat: Seat, action: usize) -> Result<String, Refused> {
        self.check_seat(seat)?;
        self.fill_moves(seat);
        let mv = self
            .find_action(action)
            .ok_or_else(|| not_legal_action::<G>(seat, action, self.moves.len()))?;
        let mut s = String::new();
        G::write_move(mv, &mut s);
        Ok(s)
    }
    fn play_text(&mut self, seat: Seat, text: &str) -> Result<(), Refused> {
        self.check_to_act(seat)?;
        let mv = self
            .game()
            .parse_move(text)
            .map_err(|e| Refused::Move(e.to_string()))?;
        self.play_move(seat, &mv)
    }
    fn play_index(&mut self, seat: Seat, index: usize) -> Result<(), Refused> {
        self.check_to_act(seat)?;
        self.fill_moves(seat);
        let Some(mv) = self.moves.get(index).cloned() else {
            return Err(Refused::Move(format!(
                "move index {index} is out of range: seat {seat} has {} legal moves",
                self.moves.len()
            )));
        };
        self.play_move(seat, &mv)
    }
    fn play_action(&mut self, seat: Seat, action: usize) -> Result<(), Refused> {
        self.check_to_act(seat)?;
        self.list_moves(seat);
        let options = &self.options;
        let Some(mv) = self
            .moves
            .iter()
            .find(|m| G::action_of(options, m) == action)
            .cloned()
        else {
            return Err(not_legal_action::<G>(seat, action, self.moves.len()));
        };
        self.play_move(seat, &mv)
    }
    fn random_playout(&mut self, seed: u64) -> usize {
        let mut rng = GameRng::from_seed(seed);
        let mut steps = 0;
        loop {
            if let Some(range) = self.chance_range() {
                let _ = self.apply_chance(rng.below(range));
                continue;
            }
            let Some(seat) = self.game().to_act().first() else {
                break;
            };
            self.moves_of = None;
            self.moves.clear();
            match &self.dice {
                Dice::Seeded(g) => g.legal_moves(seat, &mut self.moves),
                Dice::Explicit(e) => e.state().legal_moves(seat, &mut self.moves),
            }
            let mv = self.moves[rng.below(self.moves.len() as u32) as usize].clone();
            let _ = self.play_move(seat, &mv);
            steps += 1;
        }
        steps
    }
    fn observation_json(&self, seat: Seat) -> String {
        let mut out = String::new();
        self.game().write_observation(seat, &mut out);
        out
    }
    fn position(&self) -> String {
        self.game().position()
    }
    fn public_position(&self, seat: Seat) -> String {
        self.game().public_position(seat)
    }
    fn render(&self) -> String {
        self.game().render()
    }
    fn render_for(&self, seat: Seat) -> String {
        self.game().render_for(seat)
    }
    fn outcome(&self) -> Option<Outcome> {
        if self.chance_range().is_some() {
            return None;
        }
        self.game().outcome()
    }
    fn determinize(&self, seat: Seat, seed: u64) -> Result<Box<dyn AnyState>, Refused> {
        if self.chance_range().is_some() {
            return Err(Refused::Chance(
                "chance is to decide: give its outcome before sampling a state".into(),
            ));
        }
        let mut rng = GameRng::from_seed(seed);
        let sampled = self.game().determinize(seat, &mut rng);
        let dice = match &self.dice {
            Dice::Seeded(_) => Dice::Seeded(sampled),
            Dice::Explicit(_) => Dice::Explicit(ExplicitChance::from_state(sampled)),
        };
        Ok(Box::new(Typed {
            dice,
            options: self.options.clone(),
            canonical: self.canonical.clone(),
            moves: Vec::new(),
            moves_of: None,
            moves_sorted: false,
            pending_move: None,
        }))
    }
    fn clone_box(&self) -> Box<dyn AnyState> {
        Box::new(self.clone())
    }
    fn encoded_size(&self) -> usize {
        G::encoded_size(&self.options, self.seats())
    }
    fn encode_into(&self, seat: Seat, out: &mut [f32]) {
        self.game().encode(&self.options, seat, out);
    }
    fn mask_into(&mut self, seat: Seat, out: &mut [i8]) {
        if self.chance_range().is_some() {
            return;
        }
        self.list_moves(seat);
        for m in &self.moves {
            out[G::action_of(&self.options, m)] = 1;
        }
    }
    fn save(&self) -> Saved {
        let setup_waits = self.chance_range().is_some() && self.pending_move.is_none();
        Saved {
            position: (!setup_waits).then(|| self.game().position()),
            pending_move: self.pending_move.as_ref().map(|(seat, mv)| {
                let mut text = String::new();
                G::write_move(mv, &mut text);
                (*seat, text)
            }),
            chance_so_far: self.chance_so_far(),
        }
    }
}

/// Refuses a seat the game does not have.
pub fn check_seat(game: &str, seats: usize, seat: Seat) -> Result<(), Refused> {
    if seat >= seats {
        return Err(Refused::Move(format!(
            "there is no seat {seat}: {game} has seats 0 to {}",
            seats - 1
        )));
    }
    Ok(())
}

fn not_legal_action<G: Game>(seat: Seat, action: usize, legal: usize) -> Refused {
    let mut why = format!(
        "action {action} is not a legal move of seat {seat} in {} now",
        G::ID
    );
    let _ = write!(why, " ({legal} legal moves; see legal_actions)");
    Refused::Move(why)
}
