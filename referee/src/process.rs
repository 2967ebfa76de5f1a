//! A bot running as a child process, spoken to over stdin/stdout.
//!
//! One owner per child (in the manner of fishnet): the child runs in its own process
//! group and is killed with its whole group when dropped or shut down, and always
//! reaped; stdout is read in lines of bounded length, where end-of-stream is a
//! fault; stderr is drained by a small thread into a capped tail (and an optional
//! capped log file) so a chatty bot can never block; every write is flushed; every
//! wait has a deadline.
//!
//! The I/O is synchronous on purpose: each game runs on its own thread, and a
//! blocking `poll(2)` then `read` is the cheapest way for that thread to wait for a
//! reply (a measured 2x cheaper than an async runtime's wake-ups, see `referee
//! bench`). Writes are non-blocking with a deadline, so a bot that stops reading its
//! input cannot stall the referee either.

use crate::fault::{Fault, FaultKind};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use proto::{FromBot, MAX_BOT_LINE, ToBot};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How much of a bot's stderr is kept in memory for error messages.
pub const STDERR_TAIL: usize = 4 * 1024;
/// How much of a bot's stderr goes to its log file, per game.
pub const STDERR_LOG_CAP: u64 = 1024 * 1024;
/// How many lines a bot may send while answering one request.
pub const MAX_LINES_PER_REQUEST: usize = 1000;
/// How long a wait polls without sleeping before it sleeps in `poll(2)`. A fast
/// bot's reply usually comes within this, and waking a sleeping thread (on a
/// virtual machine, an idle core) costs more than the spin: measured, it doubles
/// the decisions per second with a fast bot. A slow bot costs at most this much CPU
/// per request.
pub const SPIN_BEFORE_SLEEP: Duration = Duration::from_micros(50);
/// How much one read takes at most.
const READ_CHUNK: usize = 64 * 1024;

/// A bot process.
#[derive(Debug)]
pub struct ProcessBot {
    command: String,
    child: Child,
    pgid: Option<i32>,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    /// Read buffer, zeroed once: bytes `start..end` are read and not yet split into
    /// lines. Room for the longest allowed line plus one read.
    buf: Box<[u8]>,
    /// Where the next line starts.
    start: usize,
    /// Where the read bytes end.
    end: usize,
    /// The stream ended (or broke) after the bytes in `buf`.
    eof: bool,
    /// Lines queued to go out with the next message, in one write.
    queued: String,
    stderr: Arc<Mutex<StderrSink>>,
    /// Says when the stderr thread has written everything.
    stderr_done: std::sync::mpsc::Receiver<()>,
    /// Info lines seen while waiting.
    pub info: Vec<String>,
    /// Late replies to older requests, discarded.
    pub late_replies: u64,
}

fn spawn_fault(command: &str, why: impl std::fmt::Display) -> Fault {
    Fault::new(FaultKind::Spawn, format!("cannot start {command:?}: {why}"))
}

/// Milliseconds left until `deadline`, for `poll`.
fn poll_timeout(deadline: Instant) -> PollTimeout {
    let left = deadline.saturating_duration_since(Instant::now());
    // Round up, so a wait never ends just before its deadline.
    PollTimeout::try_from(left + Duration::from_micros(999)).unwrap_or(PollTimeout::MAX)
}

impl ProcessBot {
    /// Starts `command` (split as a shell would, without a shell). Its stderr goes to
    /// `stderr_log` (capped) if given.
    ///
    /// # Errors
    /// [`FaultKind::Spawn`] if the command is empty or cannot be run.
    pub fn spawn(command: &str, stderr_log: Option<PathBuf>) -> Result<ProcessBot, Fault> {
        let words = shlex::split(command)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| spawn_fault(command, "bad quoting"))?;
        let (program, args) = words
            .split_first()
            .ok_or_else(|| spawn_fault(command, "empty command"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| spawn_fault(command, e))?;
        let pgid = Some(child.id() as i32);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| spawn_fault(command, "no stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| spawn_fault(command, "no stderr"))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| spawn_fault(command, "no stdin"))?;
        // Non-blocking writes: a bot that does not read cannot block the referee.
        // Non-blocking reads: a wait that saw a spurious wake-up reads nothing.
        let flags = nix::fcntl::OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(stdin.as_fd(), nix::fcntl::FcntlArg::F_SETFL(flags))
            .map_err(|e| spawn_fault(command, e))?;
        nix::fcntl::fcntl(stdout.as_fd(), nix::fcntl::FcntlArg::F_SETFL(flags))
            .map_err(|e| spawn_fault(command, e))?;
        let sink = Arc::new(Mutex::new(StderrSink::default()));
        sink.lock()
            .map_err(|_| spawn_fault(command, "stderr sink poisoned"))?
            .open_log(stderr_log);
        let thread_sink = sink.clone();
        let (done_tx, stderr_done) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("bot-stderr".into())
            .spawn(move || {
                drain_stderr(stderr, &thread_sink);
                let _ = done_tx.send(());
            })
            .map_err(|e| spawn_fault(command, e))?;
        Ok(ProcessBot {
            command: command.to_owned(),
            child,
            pgid,
            stdin: Some(stdin),
            stdout,
            buf: vec![0u8; MAX_BOT_LINE + 1 + READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            queued: String::new(),
            stderr: sink,
            stderr_done,
            info: Vec::new(),
            late_replies: 0,
        })
    }

    /// The command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The end of what the bot wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().map(|s| s.tail.clone()).unwrap_or_default();
        String::from_utf8_lossy(&tail).into_owned()
    }

    /// Sends what the bot writes to stderr from now on to `log` (capped anew), or
    /// nowhere: a process kept for the next game gets that game's log. Lines the
    /// bot wrote just before may still land in the old log or the new one.
    pub fn set_stderr_log(&mut self, log: Option<PathBuf>) {
        if let Ok(mut sink) = self.stderr.lock() {
            sink.open_log(log);
        }
    }

    /// Queues a message to go out with the next one sent (one write, one wake-up
    /// of the bot, and the order kept).
    pub fn queue(&mut self, msg: &ToBot) {
        self.queue_line(&msg.to_string());
    }

    /// Queues one line of text (without its newline).
    pub fn queue_line(&mut self, line: &str) {
        self.queue_with(|out| out.push_str(line));
    }

    /// Queues one line that `write` appends to the queue (without its newline):
    /// a request is written once, straight into the buffer that goes to the pipe.
    pub fn queue_with(&mut self, write: impl FnOnce(&mut String)) {
        let start = self.queued.len();
        write(&mut self.queued);
        tracing::trace!(target: "referee::wire", bot = %self.command, "> {}", &self.queued[start..]);
        self.queued.push('\n');
    }

    /// Writes the queue now if the pipe takes all of it at once, else leaves it for
    /// the next message: never waits and never splits a line (a write of at most
    /// `PIPE_BUF` bytes to a non-blocking pipe is all or nothing). A bot whose input
    /// is full or closed hears about it at the next message, which waits.
    pub fn try_flush_queue(&mut self) {
        if self.queued.is_empty() || self.queued.len() > nix::libc::PIPE_BUF {
            return;
        }
        let Some(stdin) = self.stdin.as_mut() else { return };
        loop {
            match stdin.write(self.queued.as_bytes()) {
                Ok(n) if n >= self.queued.len() => self.queued.clear(),
                // Not for a write this short; kept whole if it ever happens.
                Ok(n) => {
                    self.queued = String::from_utf8_lossy(&self.queued.as_bytes()[n..]).into_owned();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {}
            }
            return;
        }
    }

    /// Sends the queued messages and this one, within `limit`.
    ///
    /// # Errors
    /// See [`ProcessBot::flush_queue`].
    pub fn send(&mut self, msg: &ToBot, limit: Duration) -> Result<(), Fault> {
        self.queue(msg);
        self.flush_queue(Instant::now() + limit)
    }

    /// Writes what is queued before `deadline`.
    ///
    /// # Errors
    /// [`FaultKind::Crash`] if the bot's input is closed, [`FaultKind::Stall`] if it
    /// does not read its input before the deadline.
    pub fn flush_queue(&mut self, deadline: Instant) -> Result<(), Fault> {
        // Taken out for the writes, then put back emptied: the buffer is reused.
        let mut data = std::mem::take(&mut self.queued);
        let result = self.write_all_by(data.as_bytes(), deadline);
        data.clear();
        self.queued = data;
        result
    }

    fn write_all_by(&mut self, data: &[u8], deadline: Instant) -> Result<(), Fault> {
        let mut rest = data;
        while !rest.is_empty() {
            let Some(stdin) = self.stdin.as_mut() else {
                return Err(Fault::new(FaultKind::Crash, "the bot's input is already closed"));
            };
            match stdin.write(rest) {
                Ok(0) => return Err(self.crash_fault("the bot closed its input")),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLOUT)];
                    match poll(&mut fds, poll_timeout(deadline)) {
                        Ok(0) if Instant::now() >= deadline => {
                            return Err(Fault::new(FaultKind::Stall, "the bot does not read its input"));
                        }
                        Ok(_) => {}
                        Err(nix::errno::Errno::EINTR) => {}
                        Err(e) => return Err(self.crash_fault(&format!("cannot wait to write: {e}"))),
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.crash_fault(&format!("cannot write to the bot: {e}"))),
            }
        }
        Ok(())
    }

    fn crash_fault(&mut self, what: &str) -> Fault {
        // The exit status, if the bot has exited by now.
        let mut status = String::new();
        for _ in 0..10 {
            if let Ok(Some(s)) = self.child.try_wait() {
                status = format!(" ({s})");
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Let the stderr thread catch the last words.
        std::thread::sleep(Duration::from_millis(5));
        let tail = self.stderr_tail();
        let tail = tail.trim();
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr ends: {}", last_chars(tail, 300))
        };
        Fault::new(FaultKind::Crash, format!("{what}{status}{tail}"))
    }

    /// The stdout pipe, for waiting on several bots at once.
    pub fn stdout_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.stdout.as_fd()
    }

    /// The length of the complete line at the start of what was read, if there is
    /// one (no I/O); [`ProcessBot::consume_line`] drops it after use.
    ///
    /// # Errors
    /// [`FaultKind::LineTooLong`] when the bytes after the last line exceed the limit.
    fn buffered_line(&self) -> Result<Option<usize>, Fault> {
        let pending = &self.buf[self.start..self.end];
        match pending.iter().position(|&b| b == b'\n') {
            Some(i) if i <= MAX_BOT_LINE => Ok(Some(i)),
            Some(_) => Err(Self::too_long()),
            None if pending.len() > MAX_BOT_LINE => Err(Self::too_long()),
            None => Ok(None),
        }
    }

    /// Drops a line of `len` bytes and its newline from what was read.
    fn consume_line(&mut self, len: usize) {
        self.start += len + 1;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
    }

    fn too_long() -> Fault {
        Fault::new(
            FaultKind::LineTooLong,
            format!("a line longer than {MAX_BOT_LINE} bytes"),
        )
    }

    /// Reads what the pipe holds (call after `poll` said it is readable).
    fn fill(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        // The unfinished line is at most MAX_BOT_LINE bytes (else it is refused), so a
        // full chunk always fits.
        let room = (self.buf.len() - self.end).min(READ_CHUNK);
        let n = loop {
            match self.stdout.read(&mut self.buf[self.end..self.end + room]) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => break 0,
            }
        };
        self.end += n;
        if n == 0 {
            // A last line without a newline is not a message.
            self.eof = true;
        }
    }

    /// The next message already read, if any, skipping (and keeping) `info` lines.
    ///
    /// # Errors
    /// An over-long line, a flood, the end of output, or a line that is not a bot
    /// message.
    pub fn take_message(&mut self, lines_left: &mut usize) -> Result<Option<FromBot>, Fault> {
        loop {
            let Some(len) = self.buffered_line()? else {
                if self.eof {
                    return Err(self.crash_fault("the bot closed its output"));
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
            let line = String::from_utf8_lossy(&self.buf[self.start..self.start + len]);
            tracing::trace!(target: "referee::wire", bot = %self.command, "< {line}");
            let parsed = FromBot::parse(&line).map_err(|e| match e {
                proto::ParseError::Empty => None,
                e => Some(Fault::new(
                    FaultKind::Malformed,
                    format!("{e} in line {:?}", last_chars(&line, 120)),
                )),
            });
            self.consume_line(len);
            match parsed {
                Ok(FromBot::Info(text)) => {
                    if self.info.len() < 64 {
                        self.info.push(last_chars(&text, 200).to_owned());
                    }
                }
                Ok(msg) => return Ok(Some(msg)),
                Err(None) => {}
                Err(Some(fault)) => return Err(fault),
            }
        }
    }

    /// The next message from the bot before `deadline` (`on_timeout` names the fault
    /// if none comes).
    ///
    /// # Errors
    /// A timeout, or anything [`ProcessBot::take_message`] refuses.
    pub fn next_message(
        &mut self,
        deadline: Instant,
        on_timeout: FaultKind,
        lines_left: &mut usize,
    ) -> Result<FromBot, Fault> {
        loop {
            if let Some(msg) = self.take_message(lines_left)? {
                return Ok(msg);
            }
            if !wait_readable(&[self.stdout_fd()], deadline)?.contains(&0) {
                return Err(Fault::new(on_timeout, "no answer before the deadline"));
            }
            self.fill();
        }
    }

    /// Marks the pipe readable: reads once (used by multi-bot waits).
    pub fn on_readable(&mut self) {
        self.fill();
    }

    /// Whether the bot has exited or closed its output (a kept process that left
    /// after its game is not asked to play another).
    pub fn has_ended(&mut self) -> bool {
        self.eof || !matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `quit` and closes the bot's input.
    pub fn quit(&mut self) {
        let _ = self.send(&ToBot::Quit, Duration::from_millis(100));
        drop(self.stdin.take());
    }

    /// Waits until the bot has exited or `deadline` passes; whether it exited.
    pub fn wait_exit(&mut self, deadline: Instant) -> bool {
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Asks `quit`, waits `grace` for the bot to exit, then kills its whole process
    /// group, and reaps it (on drop). Never leaves a zombie. Returns whether the bot
    /// exited by itself within the grace time.
    pub fn shutdown(mut self, grace: Duration) -> bool {
        self.quit();
        self.wait_exit(Instant::now() + grace)
    }

    fn kill_group(&self) {
        if let Some(pgid) = self.pgid {
            // The group outlives a bot that forked (shell wrappers, helpers).
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for ProcessBot {
    fn drop(&mut self) {
        self.kill_group();
        let _ = self.child.kill();
        let _ = self.child.wait(); // reap: no zombies
        // Let the log be complete when the game is over (bounded: a grandchild that
        // left the process group could hold the pipe open).
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(500));
    }
}

/// Waits until one of `fds` is readable or `deadline` passes; returns the indices
/// of the readable ones (empty at the deadline).
///
/// # Errors
/// [`FaultKind::Crash`] if polling itself fails.
pub fn wait_readable(fds: &[std::os::fd::BorrowedFd<'_>], deadline: Instant) -> Result<Vec<usize>, Fault> {
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
            Err(e) => {
                return Err(Fault::new(
                    FaultKind::Crash,
                    format!("cannot wait for the bot: {e}"),
                ));
            }
        }
    }
}

fn last_chars(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Where a bot's stderr goes: a capped tail in memory, and the current game's
/// capped log file, if any.
#[derive(Debug, Default)]
struct StderrSink {
    tail: Vec<u8>,
    file: Option<std::fs::File>,
    /// Bytes written to `file`.
    written: u64,
    /// Whether `file` already says the rest was dropped.
    marked: bool,
}

impl StderrSink {
    fn open_log(&mut self, log: Option<PathBuf>) {
        self.file = log.and_then(|p| std::fs::File::create(p).ok());
        (self.written, self.marked) = (0, false);
    }

    fn take(&mut self, bytes: &[u8]) {
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > STDERR_TAIL {
            let cut = self.tail.len() - STDERR_TAIL;
            self.tail.drain(..cut);
        }
        if let Some(f) = self.file.as_mut() {
            let room = STDERR_LOG_CAP.saturating_sub(self.written) as usize;
            let take = bytes.len().min(room);
            if take > 0 && f.write_all(&bytes[..take]).is_ok() {
                self.written += take as u64;
            }
            if take < bytes.len() && !self.marked {
                // Say once that the rest was dropped.
                let _ = f.write_all(b"\n[stderr log capped]\n");
                self.marked = true;
            }
        }
    }
}

fn drain_stderr(mut stderr: std::process::ChildStderr, sink: &Mutex<StderrSink>) {
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match stderr.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
            Ok(n) => n,
        };
        if let Ok(mut sink) = sink.lock() {
            sink.take(&buf[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events written ahead of a request never wait and never split a line: into a
    /// bot that is not reading yet, lines go in whole until its pipe is full, the
    /// rest stays queued whole, and every byte arrives once the bot reads.
    #[test]
    fn early_events_never_wait_split_or_lose_a_line() {
        // Reads nothing for a moment, then counts well-formed lines and bytes.
        let counter =
            "awk '/^info [0-9]+ x+$/ { ok++ } { n++; bytes += length($0) + 1 } END { print ok, n, bytes }'";
        let mut bot = ProcessBot::spawn(&format!("sh -c \"sleep 0.3; exec {counter}\""), None).unwrap();
        let line_of = |i: usize| format!("info {i:04} {}", "x".repeat(990));
        let (lines, mut most_queued) = (200, 0);
        for i in 0..lines {
            bot.queue_line(&line_of(i));
            bot.try_flush_queue();
            most_queued = most_queued.max(bot.queued.len());
        }
        // The pipe (64 KiB) filled long before 200 kB, and the queue kept the rest.
        assert!(most_queued > 100 * 1000, "the pipe never filled: {most_queued}");
        assert!(bot.queued.ends_with(&format!("{}\n", line_of(lines - 1))));
        bot.flush_queue(Instant::now() + Duration::from_secs(10)).unwrap();
        drop(bot.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        let len = loop {
            if let Some(len) = bot.buffered_line().unwrap() {
                break len;
            }
            assert!(
                !wait_readable(&[bot.stdout_fd()], deadline).unwrap().is_empty(),
                "no count"
            );
            bot.fill();
        };
        let count = String::from_utf8_lossy(&bot.buf[bot.start..bot.start + len]).into_owned();
        assert_eq!(
            count,
            format!("{lines} {lines} {}", lines * (line_of(0).len() + 1))
        );
        bot.shutdown(Duration::from_millis(500));
    }
}
