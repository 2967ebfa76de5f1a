//! What carries a text-protocol session: bytes out with a deadline, bytes in with a
//! deadline. Lines, their length limit and every protocol step live in
//! [`crate::session::TextSession`], once, whatever the transport.
//!
//! - [`pipe`]: a child process's stdin/stdout (the usual bot).
//! - [`memory`]: channels in this process (tests of the session, no process).
//!
//! A new transport (a TCP socket, a WebSocket) is one more module implementing
//! [`LineTransport`], plus the `--bot` scheme that opens it (`spec.rs`, `player.rs`).

pub mod memory;
pub mod pipe;

use crate::fault::FaultKind;
use std::os::fd::BorrowedFd;
use std::time::Instant;

/// What a read from a transport gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// This many bytes were put at the start of the buffer.
    Bytes(usize),
    /// Nothing arrived before the deadline.
    Nothing,
    /// The other end closed its output (or the transport broke): nothing more will come.
    Closed,
}

/// Why bytes could not be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The other end does not take them before the deadline (it does not read).
    Timeout,
    /// The other end is gone; the text says how, as far as the transport knows.
    Closed(String),
}

/// Why the other end of a transport went away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departure {
    /// [`FaultKind::Crash`], or [`FaultKind::Memory`] when the kernel killed it at
    /// its memory limit.
    pub kind: FaultKind,
    /// How it ended, for anyone: ` (exit status 1)`, the limit it met; empty if
    /// nothing is known.
    pub how: String,
    /// Its last words on stderr, for its owner only (`; stderr ends: …`); empty if
    /// none.
    pub last_words: String,
}

/// A byte stream to and from one bot. Implementations never block past a deadline.
pub trait LineTransport: Send {
    /// Writes all of `data` before `deadline`.
    ///
    /// # Errors
    /// [`SendError::Timeout`] if the other end does not take it in time,
    /// [`SendError::Closed`] if it is gone.
    fn send(&mut self, data: &[u8], deadline: Instant) -> Result<(), SendError>;

    /// Writes `data` only if all of it goes at once without waiting (so no line is
    /// ever split); returns whether it went. Used to send events ahead of a request.
    fn try_send_whole(&mut self, data: &[u8]) -> bool;

    /// Reads what has arrived into `buf`, waiting until `deadline` for something
    /// (a deadline already passed reads without waiting).
    fn receive(&mut self, buf: &mut [u8], deadline: Instant) -> Received;

    /// A descriptor that is readable when [`LineTransport::receive`] has something,
    /// so that several transports can be waited on with one `poll`. `None` for
    /// transports without one; they are polled in turn.
    fn readable_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }

    /// Closes the direction towards the bot (after `quit`).
    fn close_output(&mut self);

    /// Whether the other end has gone (exited, or closed its side).
    fn has_ended(&mut self) -> bool;

    /// What the transport knows about why the other end went away.
    fn departure(&mut self) -> Departure {
        Departure {
            kind: FaultKind::Crash,
            how: String::new(),
            last_words: String::new(),
        }
    }

    /// Waits until the other end has gone or `deadline` passes; whether it has gone.
    fn wait_gone(&mut self, deadline: Instant) -> bool;

    /// A name for logs (the command line, the address).
    fn label(&self) -> &str;

    /// Whether this is a bot process the referee started (the only kind kept
    /// between games by a [`crate::BotPool`]).
    fn is_process(&self) -> bool {
        false
    }

    /// CPU time the bot's whole process tree has used, where the machine counts it.
    fn cpu_used(&self) -> Option<std::time::Duration> {
        None
    }

    /// Freezes the bot's whole process tree (it is not to act: it gets no CPU
    /// until [`LineTransport::resume`]); returns whether this call froze it
    /// (false: already frozen, or the machine cannot freeze). Nothing for
    /// transports without a process.
    fn pause(&mut self) -> bool {
        false
    }

    /// Waits until every process of a frozen tree has stopped, or `until`;
    /// false only if it is frozen and has not stopped by then.
    fn wait_paused(&mut self, _until: Instant) -> bool {
        true
    }

    /// Thaws a frozen tree (before anything is asked of it).
    fn resume(&mut self) {}

    /// Sends what the bot writes to stderr from now on to `to` (a kept process gets
    /// each game's log and tail); nothing for transports without a stderr.
    fn set_stderr_log(&mut self, _to: StderrTo) {}

    /// Keeps now what the bot wrote to stderr so far in its log and tail;
    /// nothing for transports without a stderr.
    fn settle_stderr(&self) {}
}

/// How long a wait on one transport polls without sleeping before it sleeps.
/// A fast bot's reply usually comes within this, and waking a sleeping thread (on a
/// virtual machine, an idle core) costs more than the spin: measured, it doubles
/// the decisions per second with a fast bot. A slow bot costs at most this much CPU
/// per request.
pub const SPIN_BEFORE_SLEEP: std::time::Duration = std::time::Duration::from_micros(50);

/// Waits until one of `fds` is readable or `deadline` passes; returns the indices of
/// the readable ones (empty at the deadline). Spins (yielding) for
/// [`SPIN_BEFORE_SLEEP`] first.
///
/// # Errors
/// The error of `poll(2)` itself.
pub fn wait_readable(fds: &[BorrowedFd<'_>], deadline: Instant) -> Result<Vec<usize>, nix::errno::Errno> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut polls: Vec<PollFd<'_>> = fds.iter().map(|fd| PollFd::new(*fd, PollFlags::POLLIN)).collect();
    let ready = |polls: &[PollFd<'_>]| -> Vec<usize> {
        polls
            .iter()
            .enumerate()
            .filter(|(_, p)| p.revents().is_some_and(|r| !r.is_empty()))
            .map(|(i, _)| i)
            .collect()
    };
    let spin_until = Instant::now() + SPIN_BEFORE_SLEEP;
    while Instant::now() < spin_until.min(deadline) {
        if let Ok(n) = poll(&mut polls, PollTimeout::ZERO)
            && n > 0
        {
            return Ok(ready(&polls));
        }
        // Yield rather than spin: on a busy machine the bot may need this core.
        std::thread::yield_now();
    }
    loop {
        match poll(&mut polls, poll_timeout(deadline)) {
            Ok(0) => {
                if Instant::now() >= deadline {
                    return Ok(Vec::new());
                }
            }
            Ok(_) => return Ok(ready(&polls)),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Milliseconds left until `deadline`, for `poll`, rounded up so that a wait never
/// ends just before its deadline.
pub(crate) fn poll_timeout(deadline: Instant) -> nix::poll::PollTimeout {
    let left = deadline.saturating_duration_since(Instant::now());
    nix::poll::PollTimeout::try_from(left + std::time::Duration::from_micros(999))
        .unwrap_or(nix::poll::PollTimeout::MAX)
}

/// Where a bot's stderr goes for one game: a capped log file, a capped tail kept
/// for the bot's author, both or neither.
#[derive(Debug, Clone, Default)]
pub struct StderrTo {
    /// The game's log file (capped at [`pipe::STDERR_LOG_CAP`]).
    pub file: Option<std::path::PathBuf>,
    /// The end of the game's stderr, for the bot's author.
    pub tail: Option<SharedTail>,
}

impl StderrTo {
    /// To a log file only.
    pub fn file(path: std::path::PathBuf) -> StderrTo {
        StderrTo {
            file: Some(path),
            tail: None,
        }
    }
}

/// A [`StderrTail`] the stderr thread writes and the game reads.
pub type SharedTail = std::sync::Arc<std::sync::Mutex<StderrTail>>;

/// The last `cap` bytes a bot wrote to stderr in one game, and how many came before
/// them. Bounded whatever the bot writes: at most twice `cap` is held at once.
#[derive(Debug, Clone)]
pub struct StderrTail {
    bytes: Vec<u8>,
    cap: usize,
    dropped: u64,
}

impl StderrTail {
    /// An empty tail of at most `cap` bytes, to share with the stderr thread.
    pub fn shared(cap: usize) -> SharedTail {
        std::sync::Arc::new(std::sync::Mutex::new(StderrTail {
            bytes: Vec::new(),
            cap,
            dropped: 0,
        }))
    }

    /// Keeps the end of `more`.
    pub fn take(&mut self, more: &[u8]) {
        self.bytes.extend_from_slice(more);
        // Cut only when twice the cap is reached: one copy per `cap` bytes written.
        if self.bytes.len() > self.cap.saturating_mul(2) {
            let cut = self.bytes.len() - self.cap;
            self.bytes.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// The kept text (a character cut at the start becomes U+FFFD), and how many
    /// bytes before it were dropped.
    pub fn text(&self) -> (String, u64) {
        let cut = self.bytes.len().saturating_sub(self.cap);
        (
            String::from_utf8_lossy(&self.bytes[cut..]).into_owned(),
            self.dropped + cut as u64,
        )
    }
}

#[cfg(test)]
mod tail_tests {
    use super::StderrTail;

    /// A flood keeps its last `cap` bytes and counts the rest, however it arrives.
    #[test]
    fn a_tail_keeps_the_end_and_counts_what_it_dropped() {
        let tail = StderrTail::shared(10);
        let mut t = tail.lock().unwrap();
        t.take(b"0123");
        assert_eq!(t.text(), ("0123".to_owned(), 0));
        for chunk in [&b"456789abcdef"[..], b"ghij", b"k", b"lmnopqrstuvwxyz0123456789"] {
            t.take(chunk);
            assert!(t.bytes.len() <= 20, "held {} bytes", t.bytes.len());
        }
        let (text, dropped) = t.text();
        assert_eq!(text, "0123456789");
        assert_eq!(dropped, 36);
    }
}
