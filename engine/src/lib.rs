//! # astragal engine
//!
//! The rules of five dice games for agent tournaments: Utara (`utara`), the
//! Babylonian-tablet Game of Ur (`ur`), Uptick (`uptick`), Cuatto (`cuatto`) and
//! Spartan Yahtzee (`spartan`).
//!
//! The engine is pure: no I/O, no clocks, no global RNG. A state owns a ChaCha RNG
//! ([`GameRng`]) and all chance comes from it, so a game id, its options, a seed and
//! the moves played determine a game on every machine.
//!
//! Two ways in:
//! - the typed [`Game`] trait, for code that knows which game it plays (bots, the
//!   benchmark);
//! - the registry ([`new_game`], [`AnyGame`]), which runs any game by id with moves
//!   and options as text (the referee).
//!
//! ```
//! use engine::{Game, GameRng, games::ur::{Ur, UrOptions}};
//! let mut game = Ur::new(&UrOptions::default(), 2, GameRng::from_seed(1));
//! let seat = game.to_act().first().unwrap();
//! let mut moves = Vec::new();
//! game.legal_moves(seat, &mut moves);
//! game.play(seat, &moves[0]).unwrap();
//! // Any state round-trips through its position notation.
//! let again = Ur::from_position(&UrOptions::default(), &game.position(), GameRng::from_seed(0)).unwrap();
//! assert_eq!(again, game);
//! ```

pub mod chance;
pub mod game;
pub mod games;
pub mod json;
pub mod notation;
pub mod options;
pub mod playout;
pub mod position_check;
pub mod registry;
pub mod rng;
pub mod seat;
pub mod square;
pub mod versions;

pub use chance::{ChanceError, ExplicitChance};
pub use game::{Game, MoveError, Nature, Outcome, ParseMoveError, PlayError, Presentation, SetupError};
pub use notation::ParsePositionError;
pub use options::{OptionError, OptionKind, OptionSpec, OptionValues};
pub use registry::{
    AnyGame, GAME_IDS, GameInfo, GameVisitor, game_from_position, game_info, games, new_game, with_game,
};
pub use rng::{GameRng, group_seed, rotation_seed};
pub use seat::{MAX_SEATS, Seat, SeatSet};
pub use square::Square;

/// The engine version written into game records.
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");
