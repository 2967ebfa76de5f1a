//! The text protocol's steps over any line transport.

use super::{Ask, GameOver, Hello, Reply, Table, as_handshake, timeout, version_fault};
use crate::clock::Limits;
use crate::fault::{Fault, FaultKind, last_chars};
use crate::transport::{LineTransport, Received, SendError};
use proto::{FromBot, MAX_BOT_LINE, PROTOCOL_VERSION, ToBot};
use std::time::{Duration, Instant};

/// How many lines a bot may send while answering one request (a flood beyond is a
/// fault): enough for any honest stream of `info`, small enough that a flooding
/// bot is stopped after a bounded amount of work.
pub const MAX_LINES_PER_REQUEST: usize = 1000;
/// How many `info` lines of one reply are kept in the record.
pub const INFO_LINES_KEPT: usize = 64;
/// How many bytes of each kept `info` line are kept (the end of the line).
pub const INFO_CHARS_KEPT: usize = 200;
/// How much one read takes at most.
const READ_CHUNK: usize = 64 * 1024;

/// A request sent and not yet answered.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    /// Its id.
    pub id: u64,
    /// When it was flushed (the clock starts).
    pub start: Instant,
    /// When the answer is due.
    pub deadline: Instant,
    /// Lines the bot may still send before its answer.
    lines_left: usize,
}

/// A bot's text-protocol session over one transport.
pub struct TextSession {
    transport: Box<dyn LineTransport>,
    hello: Hello,
    /// Read buffer, zeroed once: bytes `start..end` are read and not yet split into
    /// lines. Room for the longest allowed line plus one read.
    inbox: Box<[u8]>,
    start: usize,
    end: usize,
    /// The transport said no more will come (after the bytes in `inbox`).
    closed: bool,
    /// Lines queued to go out with the next message, in one write.
    outbox: String,
    /// Info lines seen while waiting for the current reply.
    info: Vec<String>,
    /// Replies to requests other than the one awaited, discarded this game.
    late_replies: u64,
    /// Replies that were sent before their request (already there when it went
    /// out), discarded this game.
    early_replies: u64,
    /// The line being read when the last request went out: it was begun before the
    /// request, so it cannot be the answer to it.
    stale_line: bool,
    /// The last request id of this game.
    last_id: u64,
    /// Time to deliver a message that needs no answer.
    notice: Duration,
}

impl std::fmt::Debug for TextSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TextSession({})", self.transport.label())
    }
}

impl TextSession {
    /// Shakes hands over `transport` (`astragal`, then `id`/`option` lines until
    /// `astragalok`), within `limits.handshake`.
    ///
    /// # Errors
    /// A [`FaultKind::Handshake`] fault saying what went wrong.
    pub fn open(transport: Box<dyn LineTransport>, limits: &Limits) -> Result<TextSession, Fault> {
        let mut session = TextSession {
            transport,
            hello: Hello::default(),
            inbox: vec![0u8; MAX_BOT_LINE + 1 + READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            closed: false,
            outbox: String::new(),
            info: Vec::new(),
            late_replies: 0,
            early_replies: 0,
            stale_line: false,
            last_id: 0,
            notice: limits.notice,
        };
        session.hello = session.handshake(limits.handshake)?;
        Ok(session)
    }

    fn handshake(&mut self, limit: Duration) -> Result<Hello, Fault> {
        let deadline = Instant::now() + limit;
        self.queue(&ToBot::Hello {
            version: PROTOCOL_VERSION,
        });
        self.flush(deadline).map_err(as_handshake)?;
        let mut hello = Hello::default();
        let mut lines = MAX_LINES_PER_REQUEST;
        loop {
            match self.next_message(deadline, &mut lines) {
                Ok(Some(FromBot::Id { name, author })) => {
                    hello.name = name.or(hello.name);
                    hello.author = author.or(hello.author);
                }
                Ok(Some(FromBot::Option(decl))) => hello.options.push(decl),
                Ok(Some(FromBot::HelloOk { version })) if version == PROTOCOL_VERSION => return Ok(hello),
                Ok(Some(FromBot::HelloOk { version })) => return Err(version_fault(version)),
                Ok(Some(other)) => {
                    return Err(Fault::new(
                        FaultKind::Handshake,
                        format!("unexpected {other} during the handshake"),
                    ));
                }
                Ok(None) => {
                    return Err(Fault::new(
                        FaultKind::Handshake,
                        format!("no astragalok within {} ms", limit.as_millis()),
                    ));
                }
                Err(f) => return Err(as_handshake(f)),
            }
        }
    }

    /// What the bot said in its handshake.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The transport's name for logs (a command line).
    pub fn label(&self) -> &str {
        self.transport.label()
    }

    /// Queues a `setoption`, sent with the next message.
    pub fn set_option(&mut self, name: &str, value: &str) {
        self.queue(&ToBot::SetOption {
            name: name.to_owned(),
            value: value.to_owned(),
        });
    }

    /// Starts a game: `newgame`, then the ready check (`isready`/`readyok`) within
    /// `ping`. Ids, late replies and info start afresh.
    ///
    /// # Errors
    /// [`FaultKind::Stall`] without `readyok` in time, or any read fault.
    pub fn new_game(&mut self, table: &Table<'_>, ping: Duration) -> Result<(), Fault> {
        (self.last_id, self.late_replies, self.early_replies) = (0, 0, 0);
        self.info.clear();
        self.queue(&ToBot::NewGame {
            game: table.game.to_owned(),
            seats: table.seats,
            seat: table.seat,
            options: table.options.to_vec(),
            salt: Some(table.bot_salt),
        });
        self.ping(ping)
    }

    /// `isready`, answered by `readyok` within `limit`. A move that arrives first is
    /// an old answer: discarded and counted.
    ///
    /// # Errors
    /// [`FaultKind::Stall`] without an answer in time, [`FaultKind::Malformed`] for
    /// anything else, or any read fault.
    pub fn ping(&mut self, limit: Duration) -> Result<(), Fault> {
        let deadline = Instant::now() + limit;
        self.queue(&ToBot::IsReady);
        self.flush(deadline)?;
        let mut lines = MAX_LINES_PER_REQUEST;
        loop {
            match self.next_message(deadline, &mut lines)? {
                Some(FromBot::ReadyOk) => return Ok(()),
                Some(FromBot::Move { .. }) => self.late_replies += 1,
                Some(other) => {
                    return Err(Fault::new(
                        FaultKind::Malformed,
                        format!("{other} in answer to isready"),
                    ));
                }
                None => return Err(Fault::new(FaultKind::Stall, "no answer before the deadline")),
            }
        }
    }

    /// Queues a `played` event, to go out with the next message (or before it, with
    /// [`TextSession::flush_events`]).
    pub fn queue_played(&mut self, seat: usize, mv: &str) {
        let start = self.outbox.len();
        proto::text::write_played(&mut self.outbox, seat, mv);
        self.end_line(start);
    }

    /// Sends the queued events now if the transport takes them whole without
    /// waiting; else they go with the next message. Never waits, never splits a line.
    pub fn flush_events(&mut self) {
        if !self.outbox.is_empty() && self.transport.try_send_whole(self.outbox.as_bytes()) {
            self.outbox.clear();
        }
    }

    /// Sends a `go` for `ask` (the legal moves and the observation written straight
    /// from the game into the outgoing buffer) and starts the seat's clock.
    ///
    /// # Errors
    /// A fault if the request cannot be delivered by its deadline.
    pub fn ask(&mut self, ask: &Ask<'_>) -> Result<Asked, Fault> {
        self.discard_unsolicited()?;
        self.info.clear();
        self.last_id += 1;
        let id = self.last_id;
        let start = self.outbox.len();
        let out = &mut self.outbox;
        proto::text::write_go_head(
            out,
            id,
            ask.seat,
            ask.clock.time_ms,
            ask.clock.inc_ms,
            ask.clock.movetime_ms,
        );
        out.push_str(" legal=");
        if ask.game.write_legal_moves(ask.seat, out) == 0 {
            out.push('-');
        }
        out.push_str(" obs=");
        ask.game.write_observation_json(ask.seat, out);
        self.end_line(start);
        self.flush(ask.deadline)?;
        Ok(Asked {
            id,
            start: Instant::now(),
            deadline: ask.deadline,
            lines_left: MAX_LINES_PER_REQUEST,
        })
    }

    /// Before a request goes out: whatever the bot has sent by now was written
    /// before it, so no move in it answers the request. Such moves are discarded and
    /// counted (a bot cannot answer a request it has not read, nor take 0 ms); a line
    /// the bot is still writing is marked, and discarded too if it is a move.
    fn discard_unsolicited(&mut self) -> Result<(), Fault> {
        let mut lines = MAX_LINES_PER_REQUEST;
        loop {
            while let Some(msg) = self.take_message(&mut lines)? {
                match msg {
                    FromBot::Move { .. } => self.early_replies += 1,
                    FromBot::ReadyOk => {}
                    other => {
                        return Err(Fault::new(
                            FaultKind::Malformed,
                            format!("{other} while no request was open"),
                        ));
                    }
                }
            }
            // A passed deadline: take what is there, never wait. Usually nothing
            // is, and this costs one read that finds the pipe empty.
            if self.closed || !self.receive(Instant::now()) {
                break;
            }
        }
        self.stale_line = self.start < self.end;
        Ok(())
    }

    /// The answer to `asked` if it has already been read (no I/O); late replies
    /// are counted and dropped, `info` lines kept.
    ///
    /// # Errors
    /// A line too long, a flood, the end of output, or a line that is not a move.
    pub fn reply_ready(&mut self, asked: &mut Asked) -> Result<Option<Reply>, Fault> {
        loop {
            match self.take_message(&mut asked.lines_left)? {
                None => return Ok(None),
                Some(FromBot::Move { id, mv }) if id == asked.id => {
                    // Frozen from its reply (its elapsed time is taken first):
                    // the tree stops while the referee works, and is thawed
                    // with its next request.
                    let elapsed = asked.start.elapsed();
                    self.transport.pause();
                    return Ok(Some(Reply {
                        mv,
                        elapsed,
                        info: std::mem::take(&mut self.info),
                    }));
                }
                Some(FromBot::Move { id, .. }) if id >= asked.id => {
                    // Begun before the request went out, or for one not yet sent.
                    self.early_replies += 1;
                }
                Some(FromBot::Move { id, mv }) => {
                    self.late_replies += 1;
                    tracing::warn!(
                        bot = self.label(),
                        id,
                        mv,
                        expected = asked.id,
                        "late reply discarded"
                    );
                }
                Some(FromBot::ReadyOk) => {}
                Some(other) => {
                    return Err(Fault::new(
                        FaultKind::Malformed,
                        format!("{other} while a move was expected"),
                    ));
                }
            }
        }
    }

    /// Waits for the answer to `asked` until its deadline.
    ///
    /// # Errors
    /// [`FaultKind::Timeout`] at the deadline, or anything
    /// [`TextSession::reply_ready`] refuses.
    pub fn await_reply(&mut self, asked: &mut Asked) -> Result<Reply, Fault> {
        loop {
            if let Some(reply) = self.reply_ready(asked)? {
                return Ok(reply);
            }
            if !self.receive(asked.deadline) {
                return Err(timeout(asked.start));
            }
        }
    }

    /// Reads what the transport has, waiting until `deadline` (a passed deadline
    /// reads without waiting). Returns false if nothing came; the end of output is
    /// noted (the next read of a message reports it).
    pub fn receive(&mut self, deadline: Instant) -> bool {
        if self.closed {
            return true;
        }
        if self.start > 0 {
            self.inbox.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        // The unfinished line is at most MAX_BOT_LINE bytes (else it is refused), so a
        // full chunk always fits.
        let room = (self.inbox.len() - self.end).min(READ_CHUNK);
        loop {
            match self
                .transport
                .receive(&mut self.inbox[self.end..self.end + room], deadline)
            {
                Received::Bytes(0) if Instant::now() < deadline => {}
                Received::Bytes(n) => {
                    self.end += n;
                    return n > 0;
                }
                Received::Nothing => return false,
                Received::Closed => {
                    self.closed = true;
                    return true;
                }
            }
        }
    }

    /// The descriptor to wait on with others, if the transport has one.
    pub fn readable_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.transport.readable_fd()
    }

    /// Tells the bot the game is over (with the events it has not had). A bot that
    /// does not take it within the notice time is not waited for.
    pub fn game_over(&mut self, over: &GameOver) {
        self.queue(&ToBot::GameOver {
            ranks: over.ranks.clone(),
            scores: over.scores.clone(),
            reason: over.reason.clone(),
            detail: over.detail.clone(),
        });
        let _ = self.flush(Instant::now() + self.notice);
    }

    /// Sends `quit` and closes the bot's input.
    pub fn quit(&mut self) {
        self.queue(&ToBot::Quit);
        let _ = self.flush(Instant::now() + self.notice);
        self.transport.close_output();
    }

    /// Waits until the bot has gone or `deadline` passes; whether it has gone.
    pub fn wait_gone(&mut self, deadline: Instant) -> bool {
        self.transport.wait_gone(deadline)
    }

    /// Whether the bot has gone (exited, or closed its output).
    pub fn has_ended(&mut self) -> bool {
        self.closed || self.transport.has_ended()
    }

    /// Replies to other requests discarded this game.
    pub fn late_replies(&self) -> u64 {
        self.late_replies
    }

    /// Replies sent before their request, discarded this game.
    pub fn early_replies(&self) -> u64 {
        self.early_replies
    }

    /// Whether the transport is a bot process the referee started.
    pub fn is_process(&self) -> bool {
        self.transport.is_process()
    }

    /// CPU time the bot's process tree has used, where the machine counts it.
    pub fn cpu_used(&self) -> Option<Duration> {
        self.transport.cpu_used()
    }

    /// Freezes the bot's whole tree until something is next asked of it (it is
    /// not to act); whether this call froze it.
    pub fn pause(&mut self) -> bool {
        self.transport.pause()
    }

    /// After [`TextSession::pause`]: waits until the tree has stopped, or `until`.
    pub fn wait_paused(&mut self, until: Instant) -> bool {
        self.transport.wait_paused(until)
    }

    /// Thaws the bot now (it is to act next), ahead of its request.
    pub fn resume(&mut self) {
        self.transport.resume();
    }

    /// Keeps now what the bot wrote to stderr so far.
    pub fn settle_stderr(&self) {
        self.transport.settle_stderr();
    }

    /// Sends the bot's stderr to `to` from now on (a kept process, per game).
    pub fn set_stderr_log(&mut self, to: crate::transport::StderrTo) {
        self.transport.set_stderr_log(to);
    }

    fn queue(&mut self, msg: &ToBot) {
        use std::fmt::Write as _;
        let start = self.outbox.len();
        let _ = write!(self.outbox, "{msg}");
        self.end_line(start);
    }

    /// Ends the line that starts at `start` of the outbox.
    fn end_line(&mut self, start: usize) {
        tracing::trace!(target: "referee::wire", bot = %self.transport.label(), "> {}", &self.outbox[start..]);
        self.outbox.push('\n');
    }

    /// Writes what is queued before `deadline`, then thaws the bot: whatever is
    /// written now asks something of it (a move, a ready check, its end).
    /// Thawed after the write, a bot asleep in its read wakes once, with its
    /// request there (a transport thaws it sooner if its input is full).
    fn flush(&mut self, deadline: Instant) -> Result<(), Fault> {
        let result = self.transport.send(self.outbox.as_bytes(), deadline);
        self.transport.resume();
        self.outbox.clear();
        result.map_err(|e| match e {
            SendError::Timeout => Fault::new(FaultKind::Stall, "the bot does not read its input"),
            SendError::Closed(what) => self.crash(&what),
        })
    }

    fn crash(&mut self, what: &str) -> Fault {
        let gone = self.transport.departure();
        Fault::with_private(gone.kind, format!("{what}{}", gone.how), gone.last_words)
    }

    /// The length of the complete line at the start of what was read, if any.
    fn buffered_line(&self) -> Result<Option<usize>, Fault> {
        let pending = &self.inbox[self.start..self.end];
        match memchr::memchr(b'\n', pending) {
            Some(i) if i <= MAX_BOT_LINE => Ok(Some(i)),
            Some(_) => Err(too_long()),
            None if pending.len() > MAX_BOT_LINE => Err(too_long()),
            None => Ok(None),
        }
    }

    /// The next message already read, if any, skipping (and keeping) `info` lines
    /// and empty lines.
    fn take_message(&mut self, lines_left: &mut usize) -> Result<Option<FromBot>, Fault> {
        loop {
            let Some(len) = self.buffered_line()? else {
                if self.closed {
                    // A last line without a newline is not a message.
                    return Err(self.crash("the bot closed its output"));
                }
                return Ok(None);
            };
            if *lines_left == 0 {
                return Err(Fault::new(
                    FaultKind::Flood,
                    format!("more than {MAX_LINES_PER_REQUEST} lines for one request"),
                ));
            }
            *lines_left -= 1;
            // Read where it lies (no copy unless it is not UTF-8).
            let line = String::from_utf8_lossy(&self.inbox[self.start..self.start + len]);
            tracing::trace!(target: "referee::wire", bot = %self.transport.label(), "< {line}");
            let parsed = FromBot::parse(&line).map_err(|e| match e {
                proto::ParseError::Empty => None,
                e => Some(Fault::new(
                    FaultKind::Malformed,
                    format!("{e} in line {:?}", last_chars(&line, 120)),
                )),
            });
            self.start += len + 1;
            if self.start == self.end {
                (self.start, self.end) = (0, 0);
            }
            // Only a move can be an early answer; the flag is for the first line.
            let stale = std::mem::take(&mut self.stale_line);
            if stale && matches!(parsed, Ok(FromBot::Move { .. })) {
                self.early_replies += 1;
                continue;
            }
            match parsed {
                Ok(FromBot::Info(text)) => {
                    if self.info.len() < INFO_LINES_KEPT {
                        self.info.push(last_chars(&text, INFO_CHARS_KEPT).to_owned());
                    }
                }
                Ok(msg) => return Ok(Some(msg)),
                Err(None) => {}
                Err(Some(fault)) => return Err(fault),
            }
        }
    }

    /// The next message before `deadline`; `None` if none came.
    fn next_message(&mut self, deadline: Instant, lines_left: &mut usize) -> Result<Option<FromBot>, Fault> {
        loop {
            if let Some(msg) = self.take_message(lines_left)? {
                return Ok(Some(msg));
            }
            if !self.receive(deadline) {
                return Ok(None);
            }
        }
    }
}

fn too_long() -> Fault {
    Fault::new(
        FaultKind::LineTooLong,
        format!("a line longer than {MAX_BOT_LINE} bytes"),
    )
}

#[cfg(test)]
mod tests;
