//! A transport over channels inside this process: the referee's end is a
//! [`MemoryTransport`], the bot's end a [`MemoryPeer`]. The session's tests use it to
//! play every protocol step without spawning a process; it is also the smallest
//! example of a [`LineTransport`].

use super::{LineTransport, Received, SendError};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::time::Instant;

/// The referee's end.
#[derive(Debug)]
pub struct MemoryTransport {
    to_bot: Option<Sender<Vec<u8>>>,
    from_bot: Receiver<Vec<u8>>,
    /// Bytes received but not yet handed out (a chunk larger than the reader's buffer).
    held: Vec<u8>,
    closed: bool,
}

/// The bot's end: what the referee sent, and a way to answer.
#[derive(Debug)]
pub struct MemoryPeer {
    from_referee: Receiver<Vec<u8>>,
    to_referee: Option<Sender<Vec<u8>>>,
    /// Bytes received from the referee not yet split into lines.
    pending: Vec<u8>,
}

/// A connected pair.
pub fn pair() -> (MemoryTransport, MemoryPeer) {
    let (to_bot, from_referee) = channel();
    let (to_referee, from_bot) = channel();
    (
        MemoryTransport {
            to_bot: Some(to_bot),
            from_bot,
            held: Vec::new(),
            closed: false,
        },
        MemoryPeer {
            from_referee,
            to_referee: Some(to_referee),
            pending: Vec::new(),
        },
    )
}

impl MemoryPeer {
    /// Sends raw bytes to the referee (lines need their own newlines).
    pub fn send_raw(&self, bytes: &[u8]) {
        if let Some(tx) = &self.to_referee {
            let _ = tx.send(bytes.to_vec());
        }
    }

    /// Sends one line (a newline is added).
    pub fn say(&self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    /// Closes the bot's output, as a bot that exits does.
    pub fn close(&mut self) {
        self.to_referee = None;
    }

    /// The next line the referee sent, waiting up to `deadline`.
    pub fn next_line(&mut self, deadline: Instant) -> Option<String> {
        loop {
            if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=i).collect();
                return Some(String::from_utf8_lossy(&line[..i]).into_owned());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_referee.recv_timeout(left) {
                Ok(bytes) => self.pending.extend_from_slice(&bytes),
                Err(_) => return None,
            }
        }
    }

    /// Every line the referee has sent so far, without waiting.
    pub fn lines_so_far(&mut self) -> Vec<String> {
        while let Ok(bytes) = self.from_referee.try_recv() {
            self.pending.extend_from_slice(&bytes);
        }
        let mut lines = Vec::new();
        while let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=i).collect();
            lines.push(String::from_utf8_lossy(&line[..i]).into_owned());
        }
        lines
    }
}

impl MemoryTransport {
    fn hand_out(&mut self, buf: &mut [u8]) -> Received {
        let n = self.held.len().min(buf.len());
        buf[..n].copy_from_slice(&self.held[..n]);
        self.held.drain(..n);
        Received::Bytes(n)
    }
}

impl LineTransport for MemoryTransport {
    fn send(&mut self, data: &[u8], _deadline: Instant) -> Result<(), SendError> {
        match &self.to_bot {
            Some(tx) if tx.send(data.to_vec()).is_ok() => Ok(()),
            _ => Err(SendError::Closed("the bot's end is gone".into())),
        }
    }

    fn try_send_whole(&mut self, data: &[u8]) -> bool {
        self.send(data, Instant::now()).is_ok()
    }

    fn receive(&mut self, buf: &mut [u8], deadline: Instant) -> Received {
        if !self.held.is_empty() {
            return self.hand_out(buf);
        }
        let got = if Instant::now() >= deadline {
            self.from_bot
                .try_recv()
                .map_err(|e| e == TryRecvError::Disconnected)
        } else {
            let left = deadline.saturating_duration_since(Instant::now());
            self.from_bot
                .recv_timeout(left)
                .map_err(|e| e == RecvTimeoutError::Disconnected)
        };
        match got {
            Ok(bytes) => {
                self.held = bytes;
                self.hand_out(buf)
            }
            Err(true) => {
                self.closed = true;
                Received::Closed
            }
            Err(false) => Received::Nothing,
        }
    }

    fn close_output(&mut self) {
        self.to_bot = None;
    }

    fn has_ended(&mut self) -> bool {
        self.closed
    }

    fn wait_gone(&mut self, _deadline: Instant) -> bool {
        self.closed
    }

    fn label(&self) -> &str {
        "memory"
    }
}
