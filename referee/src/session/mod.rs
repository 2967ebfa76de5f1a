//! One bot's protocol session, whatever carries it.
//!
//! The protocol's states are the same for every transport (`docs/protocol.md`):
//!
//! ```text
//! open ── handshake ──> ready ── newgame + ready check ──> in game
//!   in game ── ask (id n) ──> awaiting n ── reply n ──> in game
//!   in game ── gameover ──> ready (a kept process plays its next game) ── quit
//! ```
//!
//! - [`TextSession`] runs them over any [`crate::transport::LineTransport`]: the
//!   text protocol's lines, their length and flood limits, `info`, ids and late
//!   replies exist there once.
//! - [`GrpcSession`] runs the same states, ids, deadlines and faults over unary gRPC
//!   calls (one call per exchange).
//!
//! Request ids count from 1 in each game, per session: a seat's ids say nothing
//! about what was asked of the other seats.

mod grpc;
mod text;

pub use grpc::{BOT_SECRET_ENV, GrpcAsked, GrpcSession, SecretHeader};
pub use text::{Asked, INFO_CHARS_KEPT, INFO_LINES_KEPT, MAX_LINES_PER_REQUEST, TextSession};

use crate::fault::{Fault, FaultKind};
use engine::AnyGame;
use proto::OptionDecl;
use std::time::{Duration, Instant};

/// What a bot said in its handshake.
#[derive(Debug, Clone, Default)]
pub struct Hello {
    /// Its name.
    pub name: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Options it declared.
    pub options: Vec<OptionDecl>,
}

/// A seat's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The move text, not yet checked against the rules.
    pub mv: String,
    /// Time from the flushed request to the reply.
    pub elapsed: Duration,
    /// Info lines sent meanwhile.
    pub info: Vec<String>,
}

/// Where a bot sits in the game that starts: what `newgame` tells it.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    /// Game id.
    pub game: &'a str,
    /// Seats in the game.
    pub seats: usize,
    /// The bot's seat.
    pub seat: usize,
    /// The game's canonical options.
    pub options: &'a [String],
    /// The salt of an in-process bot's randomness this game (see
    /// `bots::Bot::salt_game`); never sent outside the referee.
    pub bot_salt: u64,
}

/// The time fields of a request: a clock, or a time per move.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockFields {
    /// Clock left (clock controls only).
    pub time_ms: Option<u64>,
    /// Increment (clock controls only).
    pub inc_ms: Option<u64>,
    /// Time for this move (move-time controls only).
    pub movetime_ms: Option<u64>,
}

/// A decision to ask of one seat. Each kind of player takes from the game what it
/// reads (text, a list, a JSON value, a drawing), so the game loop never asks how a
/// player reads.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    /// The game, as it stands.
    pub game: &'a dyn AnyGame,
    /// The game's canonical options.
    pub options: &'a [String],
    /// The deciding seat.
    pub seat: usize,
    /// Its clock.
    pub clock: ClockFields,
    /// When the answer is due (the move's time plus the margin).
    pub deadline: Instant,
}

/// How a game ended, as `gameover` tells it.
#[derive(Debug, Clone)]
pub struct GameOver {
    /// Place per seat.
    pub ranks: Vec<u8>,
    /// Score per seat.
    pub scores: Vec<i64>,
    /// How it ended (the record's termination).
    pub reason: String,
    /// The first fault, if any.
    pub detail: Option<String>,
}

/// Every option to set must be one the bot declared, with a value it takes.
///
/// # Errors
/// A [`FaultKind::Handshake`] naming the option.
pub fn check_options(hello: &Hello, options: &[(String, String)]) -> Result<(), Fault> {
    for (name, value) in options {
        let decl = hello.options.iter().find(|d| &d.name == name).ok_or_else(|| {
            Fault::new(
                FaultKind::Handshake,
                format!("the bot declares no option {name:?}"),
            )
        })?;
        decl.check(value)
            .map_err(|e| Fault::new(FaultKind::Handshake, e))?;
    }
    Ok(())
}

/// The fault of a seat that did not answer a request sent at `start`.
pub(crate) fn timeout(start: Instant) -> Fault {
    Fault::new(
        FaultKind::Timeout,
        format!("no move within {} ms", start.elapsed().as_millis()),
    )
}

/// A fault during the handshake is reported as a handshake fault, keeping the cause.
pub(crate) fn as_handshake(f: Fault) -> Fault {
    if f.kind == FaultKind::Handshake {
        return f;
    }
    Fault::with_private(
        FaultKind::Handshake,
        format!("{}: {}", f.kind, f.detail),
        f.private,
    )
}

/// The handshake's "wrong version" fault.
pub(crate) fn version_fault(version: u32) -> Fault {
    Fault::new(
        FaultKind::Handshake,
        format!(
            "the bot speaks protocol version {version}, the referee {}",
            proto::PROTOCOL_VERSION
        ),
    )
}
