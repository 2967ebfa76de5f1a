//! What a misbehaving bot can do wrong, each ending its seat's game.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The kind of a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The program could not be started.
    Spawn,
    /// The handshake failed (no `astragalok` in time, or a different protocol version).
    Handshake,
    /// No `readyok` to an `isready` in time.
    Stall,
    /// No move before the deadline.
    Timeout,
    /// The program exited or closed its output.
    Crash,
    /// The kernel killed the program at its memory limit (the detail says the limit).
    Memory,
    /// A line that is not a protocol message, or a message out of place.
    Malformed,
    /// A move that does not parse or is not legal now.
    Illegal,
    /// A line longer than the limit.
    LineTooLong,
    /// Too many lines for one request.
    Flood,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FaultKind {
    /// Its name, as records and reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Spawn => "spawn",
            FaultKind::Handshake => "handshake",
            FaultKind::Stall => "stall",
            FaultKind::Timeout => "timeout",
            FaultKind::Crash => "crash",
            FaultKind::Memory => "memory",
            FaultKind::Malformed => "malformed",
            FaultKind::Illegal => "illegal",
            FaultKind::LineTooLong => "line_too_long",
            FaultKind::Flood => "flood",
        }
    }

    /// Every kind, in the order declared.
    pub const ALL: [FaultKind; 10] = [
        FaultKind::Spawn,
        FaultKind::Handshake,
        FaultKind::Stall,
        FaultKind::Timeout,
        FaultKind::Crash,
        FaultKind::Memory,
        FaultKind::Malformed,
        FaultKind::Illegal,
        FaultKind::LineTooLong,
        FaultKind::Flood,
    ];
}

impl std::str::FromStr for FaultKind {
    type Err = String;

    /// The word `Display` writes.
    fn from_str(text: &str) -> Result<FaultKind, String> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.to_string() == text)
            .ok_or_else(|| format!("{text:?} is not a fault kind"))
    }
}

/// A fault with what the referee saw.
///
/// Its text has two parts. `detail` names nothing of the host or of the bot's
/// insides, so anyone may read it: the other seats (in `gameover`), the public
/// pages of a ladder. `private` continues it with what only the bot's owner and
/// the host may read: the command line that did not start and where it was looked
/// for, a gRPC bot's address, the bot's last words on stderr. A seat shown by a
/// public name ([`crate::setup::SeatSetup::shown_as`]) records `detail` alone; any
/// other seat records both (its owner ran it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {detail}{private}")]
pub struct Fault {
    /// What kind.
    pub kind: FaultKind,
    /// What happened, for anyone.
    pub detail: String,
    /// What continues `detail` for the bot's owner and the host only (empty, or
    /// starting with its own separator).
    pub private: String,
}

/// How the detail of a `spawn` fault begins when the host, not the bot, failed
/// (this process out of descriptors or processes, a limit it may not set, its
/// sandbox missing): a worker that sees one in a game it played stops and
/// reports nothing of the group, so no bot is charged with its host's failure.
pub const HOST_FAILURE: &str = "the host could not start";

/// Whether a `spawn` fault's `detail` says the host failed ([`HOST_FAILURE`]).
/// Only a referee's own records can be told apart this way: a worker's reports
/// are checked by replay, and a detail is what a worker says.
pub fn is_host_failure(kind: FaultKind, detail: &str) -> bool {
    kind == FaultKind::Spawn && detail.starts_with(HOST_FAILURE)
}

impl Fault {
    /// A fault of `kind`.
    pub fn new(kind: FaultKind, detail: impl Into<String>) -> Fault {
        Fault {
            kind,
            detail: detail.into(),
            private: String::new(),
        }
    }

    /// A fault of `kind` whose `detail` continues with `private` ([`Fault`]).
    pub fn with_private(kind: FaultKind, detail: impl Into<String>, private: impl Into<String>) -> Fault {
        Fault {
            kind,
            detail: detail.into(),
            private: private.into(),
        }
    }

    /// The fault as anyone may read it: `detail` alone.
    #[must_use]
    pub fn without_private(self) -> Fault {
        Fault {
            private: String::new(),
            ..self
        }
    }

    /// The whole text: `detail`, then `private`.
    pub fn full_detail(&self) -> String {
        format!("{}{}", self.detail, self.private)
    }
}

/// The last `n` bytes of `s` (at a character boundary): the end of what a bot
/// said, for a fault's detail.
pub fn last_chars(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_kind_reads_back_its_word() {
        for kind in FaultKind::ALL {
            // A new kind stops this match compiling: give it its place in ALL.
            let place = match kind {
                FaultKind::Spawn => 0,
                FaultKind::Handshake => 1,
                FaultKind::Stall => 2,
                FaultKind::Timeout => 3,
                FaultKind::Crash => 4,
                FaultKind::Memory => 5,
                FaultKind::Malformed => 6,
                FaultKind::Illegal => 7,
                FaultKind::LineTooLong => 8,
                FaultKind::Flood => 9,
            };
            assert_eq!(FaultKind::ALL[place], kind);
            assert_eq!(kind.to_string().parse::<FaultKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""), "the record's word is the same");
        }
        let unique: std::collections::HashSet<_> = FaultKind::ALL.into_iter().collect();
        assert_eq!(unique.len(), FaultKind::ALL.len());
        assert!(
            "Timeout"
                .parse::<FaultKind>()
                .unwrap_err()
                .contains("\"Timeout\"")
        );
    }
}
