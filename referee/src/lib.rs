//! # astragal referee
//!
//! Runs games of the astragal engine between bots — programs speaking the text
//! protocol over stdin/stdout, built-in bots, or people — under time controls, and
//! writes a record of every game that [`replay`] can check move by move.
//!
//! A misbehaving bot costs its own seat, never the referee: every wait has a
//! deadline, every line a length limit, and every child process is killed with its
//! process group and reaped.

pub mod check;
pub mod cli;
pub mod clock;
pub mod dial;
pub mod fault;
pub mod game;
pub mod human;
pub mod matchplay;
pub mod player;
pub mod pool;
pub mod progress;
pub mod record;
pub mod replay;
pub mod runner;
pub mod sandbox;
pub mod seating;
pub mod seed;
pub mod session;
pub mod setup;
pub mod spec;
pub mod text;
pub mod transport;
pub mod view;

pub use clock::{Limits, TimeControl};
pub use fault::{Fault, FaultKind};
pub use game::{GameSetup, LogPlace, SeatSetup, play_game, play_game_in, play_game_logged};
pub use pool::BotPool;
pub use record::{GameRecord, SeatPrivateLog, Termination};
pub use spec::BotSpec;
