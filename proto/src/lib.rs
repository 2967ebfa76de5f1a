//! The astragal bot protocol.
//!
//! One set of messages ([`ToBot`], [`FromBot`]) with one state machine, carried by
//! two encodings: the line-based text protocol of [`text`] (bots over stdin/stdout,
//! in the manner of UCI) and, later, gRPC. `docs/protocol.md` is the reference for
//! bot authors.

mod convert;
pub mod text;

/// The gRPC encoding: messages and the `Bot` service, generated from
/// `proto/astragal/v1/bot.proto`.
pub mod grpc {
    #![allow(missing_docs, clippy::all, clippy::pedantic, unused_qualifications)]
    tonic::include_proto!("astragal.v1");
}

/// The ladder service (competitions, standings, records, worker leases), generated
/// from `proto/astragal/ladder/v1/ladder.proto`.
pub mod ladder {
    #![allow(missing_docs, clippy::all, clippy::pedantic, unused_qualifications)]
    tonic::include_proto!("astragal.ladder.v1");
}

pub use text::{FromBot, GoRef, OptionDecl, OptionType, ParseError, ToBot};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest line a bot may send, newline excluded. Longer lines are a fault.
pub const MAX_BOT_LINE: usize = 64 * 1024;
