//! A bot running as a child process, spoken to over its stdin/stdout.
//!
//! One owner per child (in the manner of fishnet): the child is started contained
//! (see [`crate::sandbox`]), runs in its own process group and is killed with its
//! whole tree (its cgroup or pid namespace, else its group) when dropped, and always
//! reaped; stderr
//! is drained by a small thread into a capped tail (and an optional capped log file)
//! so a chatty bot can never block; every wait has a deadline.
//!
//! The I/O is synchronous on purpose: each game runs on its own thread, and a
//! blocking `poll(2)` then `read` is the cheapest way for that thread to wait for a
//! reply (a measured 2x cheaper than an async runtime's wake-ups, see `referee
//! bench`). Writes are non-blocking with a deadline, so a bot that stops reading its
//! input cannot stall the referee either.

use super::{
    Departure, LineTransport, Received, SendError, SharedTail, StderrTo, poll_timeout, wait_readable,
};
use crate::fault::{Fault, FaultKind, last_chars};
use crate::sandbox::{self, Level, Sandbox};
use nix::poll::{PollFd, PollFlags, poll};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How much of a bot's stderr is kept in memory for error messages.
pub const STDERR_TAIL: usize = 4 * 1024;
/// How much of a bot's stderr goes to its log file, per game.
pub const STDERR_LOG_CAP: u64 = 1024 * 1024;
/// How long dropping a process waits for its stderr thread to write the last
/// words to the log. Bounded because a grandchild that left the process group
/// could hold the pipe open for ever.
pub const STDERR_FLUSH_WAIT: Duration = Duration::from_millis(500);
/// How long a crash fault waits for the exit status and the last stderr lines, so
/// that the fault can say how the bot ended.
const DEPARTURE_WAIT: Duration = Duration::from_millis(50);

/// A bot process: the child, its pipes, its stderr drain.
#[derive(Debug)]
pub struct ChildProcess {
    command: String,
    child: Child,
    pgid: i32,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    /// The stdout pipe reported end of stream.
    closed: bool,
    stderr: Arc<Mutex<StderrSink>>,
    /// Its stderr pipe, to ask how many bytes wait unread in it.
    stderr_pipe: std::os::fd::OwnedFd,
    /// Says when the stderr thread has written everything.
    stderr_done: std::sync::mpsc::Receiver<()>,
    /// How it is contained: for fault details.
    sandbox: Sandbox,
    /// Its control group, if the machine gives one: dropped after the child.
    cgroup: Option<sandbox::BotCgroup>,
    /// Its host scratch directory (level `none`): removed after the child.
    _scratch: Option<sandbox::ScratchDir>,
    /// The user id it runs as (isolated, as root): free again after the child.
    _uid: Option<sandbox::SandboxUid>,
    /// Its tree is frozen (it is not to act): thawed before anything is asked of it.
    paused: bool,
    /// Since it was last frozen, every process of the tree has been seen stopped.
    seen_frozen: bool,
}

/// The command and why it failed are private: they are the host's command line and
/// its paths.
fn spawn_fault(command: &str, why: impl std::fmt::Display) -> Fault {
    Fault::with_private(FaultKind::Spawn, "cannot start", format!(" {command:?}: {why}"))
}

/// A start that failed for a reason of this process's, not the bot's: out of
/// descriptors or processes, a limit it may not set, no memory to fork.
fn host_spawn_fault(command: &str, e: &std::io::Error) -> Option<Fault> {
    use nix::libc;
    let host = matches!(
        e.raw_os_error(),
        Some(libc::EPERM | libc::EMFILE | libc::ENFILE | libc::EAGAIN | libc::ENOMEM)
    );
    host.then(|| {
        Fault::with_private(
            FaultKind::Spawn,
            format!("{} a bot: {e}", crate::fault::HOST_FAILURE),
            format!(" (it was starting {command:?})"),
        )
    })
}

impl ChildProcess {
    /// Starts `command` (split as a shell would, without a shell) contained by
    /// `sandbox`, with `env` on top of the bot's fixed environment, in its own
    /// process group. Its stderr goes where `stderr_to` says (each capped).
    ///
    /// # Errors
    /// [`FaultKind::Spawn`] if the command is empty, cannot be found or run, or the
    /// sandbox cannot be had.
    pub fn spawn(
        command: &str,
        env: &[(String, String)],
        sandbox: &Sandbox,
        stderr_to: StderrTo,
    ) -> Result<ChildProcess, Fault> {
        ChildProcess::spawn_in(command, env, sandbox, None, stderr_to)
    }

    /// [`ChildProcess::spawn`] in the bot's own folder ([`sandbox::Home`]).
    ///
    /// # Errors
    /// As [`ChildProcess::spawn`].
    pub fn spawn_in(
        command: &str,
        env: &[(String, String)],
        sandbox: &Sandbox,
        home: Option<&sandbox::Home>,
        stderr_to: StderrTo,
    ) -> Result<ChildProcess, Fault> {
        let mut prepared =
            sandbox::prepare_in(command, env, sandbox, home).map_err(|e| spawn_fault(command, e))?;
        prepared.install_child_setup();
        let mut child = prepared
            .command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| host_spawn_fault(command, &e).unwrap_or_else(|| spawn_fault(command, e)))?;
        let pgid = child.id() as i32;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| spawn_fault(command, "no stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| spawn_fault(command, "no stderr"))?;
        let stderr_pipe = stderr
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| spawn_fault(command, e))?;
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
        // And stderr: the thread that keeps it reads under the sink's lock after a
        // wake-up, and a game's end may have taken those bytes meanwhile
        // ([`keep_unread`]); a blocking read there would hold the lock until the
        // bot wrote again.
        nix::fcntl::fcntl(stderr.as_fd(), nix::fcntl::FcntlArg::F_SETFL(flags))
            .map_err(|e| spawn_fault(command, e))?;
        let sink = Arc::new(Mutex::new(StderrSink::default()));
        sink.lock()
            .map_err(|_| spawn_fault(command, "stderr sink poisoned"))?
            .open_log(stderr_to);
        let thread_sink = sink.clone();
        let (done_tx, stderr_done) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("bot-stderr".into())
            .spawn(move || {
                drain_stderr(stderr, &thread_sink);
                let _ = done_tx.send(());
            })
            .map_err(|e| spawn_fault(command, e))?;
        Ok(ChildProcess {
            command: command.to_owned(),
            child,
            pgid,
            stdin: Some(stdin),
            stdout,
            closed: false,
            stderr: sink,
            stderr_pipe,
            stderr_done,
            sandbox: sandbox.clone(),
            cgroup: prepared.cgroup,
            _scratch: prepared.scratch,
            _uid: prepared.uid,
            paused: false,
            seen_frozen: false,
        })
    }

    /// The end of what the bot wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().map(|s| s.tail.clone()).unwrap_or_default();
        String::from_utf8_lossy(&tail).into_owned()
    }

    /// How the bot ended, in words: a signal that a limit sends is named with the
    /// limit. Under isolation the status is bubblewrap's, which reports a bot killed
    /// by signal N as exit status 128 + N.
    fn describe_exit(&self, status: ExitStatus) -> String {
        use std::os::unix::process::ExitStatusExt;
        let signal = status.signal().or_else(|| {
            let code = status.code()?;
            (self.sandbox.level == Level::Isolated && code > 128 && code < 128 + 65).then_some(code - 128)
        });
        match signal {
            Some(nix::libc::SIGXCPU) => {
                format!("killed at its CPU-time limit of {} s", self.sandbox.cpu_seconds)
            }
            Some(nix::libc::SIGXFSZ) => format!(
                "killed for writing past its file-size limit of {} MiB",
                self.sandbox.file_size / sandbox::MIB
            ),
            Some(n) => match nix::sys::signal::Signal::try_from(n) {
                Ok(sig) => format!("killed by {sig}"),
                Err(_) => format!("killed by signal {n}"),
            },
            None => status.to_string(),
        }
    }

    fn kill_group(&self) {
        // The group outlives a bot that forked (shell wrappers, helpers).
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

impl LineTransport for ChildProcess {
    fn send(&mut self, data: &[u8], deadline: Instant) -> Result<(), SendError> {
        let mut rest = data;
        while !rest.is_empty() {
            let Some(stdin) = self.stdin.as_mut() else {
                return Err(SendError::Closed("the bot's input is already closed".into()));
            };
            match stdin.write(rest) {
                Ok(0) => return Err(SendError::Closed("the bot closed its input".into())),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == ErrorKind::WouldBlock && self.paused => {
                    // A full pipe: the bot must read it, so it runs now.
                    self.resume();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLOUT)];
                    match poll(&mut fds, poll_timeout(deadline)) {
                        Ok(0) if Instant::now() >= deadline => return Err(SendError::Timeout),
                        Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                        Err(e) => return Err(SendError::Closed(format!("cannot wait to write: {e}"))),
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(SendError::Closed(format!("cannot write to the bot: {e}"))),
            }
        }
        Ok(())
    }

    /// A write of at most `PIPE_BUF` bytes to a non-blocking pipe is all or nothing,
    /// so a line is never split; a longer queue waits for the next message.
    fn try_send_whole(&mut self, data: &[u8]) -> bool {
        if data.len() > nix::libc::PIPE_BUF {
            return false;
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        loop {
            match stdin.write(data) {
                Ok(n) => return n == data.len(),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    fn receive(&mut self, buf: &mut [u8], deadline: Instant) -> Received {
        // Wait first, then read: a reply is rarely there already, and a read that
        // finds nothing would cost a system call per request. A deadline already
        // passed (another wait said the pipe is readable) reads at once.
        let mut wait = Instant::now() < deadline;
        loop {
            if wait {
                match wait_readable(&[self.stdout.as_fd()], deadline) {
                    Ok(ready) if ready.is_empty() => return Received::Nothing,
                    Ok(_) => {}
                    Err(_) => {
                        self.closed = true;
                        return Received::Closed;
                    }
                }
            }
            match self.stdout.read(buf) {
                Ok(0) => {
                    self.closed = true;
                    return Received::Closed;
                }
                Ok(n) => return Received::Bytes(n),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    // A spurious wake-up: wait again while there is time.
                    if Instant::now() >= deadline {
                        return Received::Nothing;
                    }
                    wait = true;
                }
                Err(_) => {
                    self.closed = true;
                    return Received::Closed;
                }
            }
        }
    }

    fn readable_fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.stdout.as_fd())
    }

    fn close_output(&mut self) {
        drop(self.stdin.take());
    }

    fn has_ended(&mut self) -> bool {
        self.closed || !matches!(self.child.try_wait(), Ok(None))
    }

    fn departure(&mut self) -> Departure {
        // How it ended, if it has by now.
        let mut how = Vec::new();
        let until = Instant::now() + DEPARTURE_WAIT;
        while Instant::now() < until {
            if let Ok(Some(s)) = self.child.try_wait() {
                how.push(self.describe_exit(s));
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Let the stderr thread catch the last words.
        std::thread::sleep(Duration::from_millis(5));
        let kind = if self
            .cgroup
            .as_ref()
            .is_some_and(sandbox::BotCgroup::memory_killed)
        {
            how.insert(
                0,
                format!(
                    "killed at its memory limit of {} MiB",
                    self.sandbox.memory / sandbox::MIB
                ),
            );
            FaultKind::Memory
        } else {
            FaultKind::Crash
        };
        let how = if how.is_empty() {
            String::new()
        } else {
            format!(" ({})", how.join("; "))
        };
        let tail = self.stderr_tail();
        let tail = tail.trim();
        let last_words = if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr ends: {}", last_chars(tail, 300))
        };
        Departure {
            kind,
            how,
            last_words,
        }
    }

    fn wait_gone(&mut self, deadline: Instant) -> bool {
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

    fn label(&self) -> &str {
        &self.command
    }

    fn is_process(&self) -> bool {
        true
    }

    fn cpu_used(&self) -> Option<Duration> {
        self.cgroup.as_ref()?.cpu_used()
    }

    fn pause(&mut self) -> bool {
        if self.paused {
            return false;
        }
        self.paused = self.cgroup.as_ref().is_some_and(|c| c.set_frozen(true));
        self.seen_frozen = false;
        self.paused
    }

    fn wait_paused(&mut self, until: Instant) -> bool {
        if !self.paused || self.seen_frozen {
            return true;
        }
        self.seen_frozen = self.cgroup.as_ref().is_some_and(|c| c.wait_frozen(until));
        self.seen_frozen
    }

    fn resume(&mut self) {
        if self.paused {
            self.paused = false;
            if let Some(c) = &self.cgroup {
                c.set_frozen(false);
            }
        }
    }

    fn settle_stderr(&self) {
        ChildProcess::settle_stderr(self);
    }

    fn set_stderr_log(&mut self, to: StderrTo) {
        if let Ok(mut sink) = self.stderr.lock() {
            // What the bot wrote before its last game ended is that game's, even
            // if the thread that keeps stderr has not read it yet (a busy
            // machine): before, a kept process's first line of one game could
            // land in the next game's log.
            keep_unread(self.stderr_pipe.as_fd(), &mut sink);
            sink.open_log(to);
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.resume();
        self.kill_group();
        let _ = self.child.kill();
        // Everything it started, wherever it went (its cgroup, if any, is removed
        // when the field drops after this).
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all(Duration::from_millis(200));
        }
        let _ = self.child.wait(); // reap: no zombies
        // Let the log be complete when the game is over.
        let _ = self.stderr_done.recv_timeout(STDERR_FLUSH_WAIT);
    }
}

/// Where a bot's stderr goes: a capped tail in memory (for fault details), and the
/// current game's capped log file and author's tail, if any.
#[derive(Debug, Default)]
struct StderrSink {
    tail: Vec<u8>,
    game_tail: Option<SharedTail>,
    file: Option<std::fs::File>,
    /// Bytes written to `file`.
    written: u64,
    /// Whether `file` already says the rest was dropped.
    marked: bool,
}

impl StderrSink {
    fn open_log(&mut self, to: StderrTo) {
        self.file = to.file.and_then(|p| std::fs::File::create(p).ok());
        self.game_tail = to.tail;
        (self.written, self.marked) = (0, false);
    }

    fn take(&mut self, bytes: &[u8]) {
        if let Some(mut t) = self.game_tail.as_ref().and_then(|t| t.lock().ok()) {
            t.take(bytes);
        }
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
        // Waits for bytes without the lock, then reads and keeps them under it:
        // whoever holds the lock finds every byte either still in the pipe or
        // kept, never read and not yet kept. The read never blocks (the pipe is
        // non-blocking): a game's end may have taken the bytes that woke it.
        let mut fds = [PollFd::new(stderr.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
            Ok(_) => {}
        }
        let Ok(mut sink) = sink.lock() else { break };
        let n = match stderr.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::WouldBlock => continue,
            Err(_) => break,
            Ok(n) => n,
        };
        sink.take(&buf[..n]);
    }
}

/// Moves what waits unread in the stderr pipe `fd` into `sink` now. The caller
/// holds the sink's lock, under which alone the stderr thread reads: so every
/// byte counted is there to read, and the reads never block.
fn keep_unread(fd: BorrowedFd<'_>, sink: &mut StderrSink) {
    let mut left = unread(fd).unwrap_or(0);
    let mut buf = [0u8; 8192];
    while left > 0 {
        let want = left.min(buf.len());
        match nix::unistd::read(fd, &mut buf[..want]) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                sink.take(&buf[..n]);
                left -= n;
            }
        }
    }
}

// FIONREAD: how many bytes wait unread in a pipe.
nix::ioctl_read_bad!(unread_bytes, nix::libc::FIONREAD, nix::libc::c_int);

/// How many bytes wait unread in the pipe `fd` (`None` if the kernel will not say).
#[allow(unsafe_code)]
fn unread(fd: BorrowedFd<'_>) -> Option<usize> {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through a pointer to a live one, on an fd
    // this borrow keeps open.
    unsafe { unread_bytes(fd.as_raw_fd(), &mut n) }.ok()?;
    usize::try_from(n).ok()
}

impl ChildProcess {
    /// Keeps every byte the bot has written to stderr so far, without waiting
    /// for the thread that keeps it: so a game's log and tail end where its game
    /// did, however busy the machine (whatever the bot wrote before its last
    /// reply was in the pipe by the time the reply came).
    pub fn settle_stderr(&self) {
        if let Ok(mut sink) = self.stderr.lock() {
            keep_unread(self.stderr_pipe.as_fd(), &mut sink);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What waits in the pipe when a kept process's game ends goes to that
    /// game's log, though the stderr thread has not read it yet (here it never
    /// runs: the test holds the sink, as a busy machine's scheduler might).
    #[test]
    fn stderr_unread_at_a_games_end_is_that_games() {
        let dir = std::env::temp_dir().join(format!("astragal-keep-unread-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (first, second) = (dir.join("g0.log"), dir.join("g1.log"));
        let (read, write) = nix::unistd::pipe().unwrap();
        let mut write = std::fs::File::from(write);
        let mut sink = StderrSink::default();
        sink.open_log(StderrTo::file(first.clone()));
        write.write_all(b"first game's line\n").unwrap();
        keep_unread(read.as_fd(), &mut sink);
        sink.open_log(StderrTo::file(second.clone()));
        write.write_all(b"second game's line\n").unwrap();
        keep_unread(read.as_fd(), &mut sink);
        drop(sink);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "first game's line\n");
        assert_eq!(std::fs::read_to_string(&second).unwrap(), "second game's line\n");
        // Nothing is left to read twice, and an empty pipe is not waited on.
        assert_eq!(unread(read.as_fd()), Some(0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A game's end that takes the bytes which woke the stderr thread leaves
    /// that thread nothing to read: it goes back to waiting and lets go of the
    /// sink, and the next game's end is not held up (before the pipe was made
    /// non-blocking, the thread's read held the sink until the bot wrote again:
    /// a worker's game waited for ever).
    #[test]
    fn a_games_end_that_takes_the_stderr_threads_bytes_never_stalls_the_next() {
        let mut bot = ChildProcess::spawn(
            "sh -c 'read w; echo first >&2; echo ready; read x; echo ready; read y'",
            &[],
            &Sandbox::default(),
            StderrTo::default(),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let line = |bot: &mut ChildProcess| {
            let (mut got, mut buf) = (Vec::new(), [0u8; 64]);
            while !got.ends_with(b"\n") {
                match bot.receive(&mut buf, deadline) {
                    Received::Bytes(n) => got.extend_from_slice(&buf[..n]),
                    other => panic!("no line: {other:?}"),
                }
            }
        };
        {
            // The stderr thread wakes for "first" and waits for the sink; the
            // game's end takes "first" under it.
            let held = bot.stderr.clone();
            let mut sink = held.lock().unwrap();
            bot.send(b"write\n", deadline).unwrap();
            line(&mut bot);
            keep_unread(bot.stderr_pipe.as_fd(), &mut sink);
            assert_eq!(sink.tail, b"first\n");
        }
        // The bot is silent now; these return.
        bot.settle_stderr();
        bot.send(b"go\n", deadline).unwrap();
        line(&mut bot);
        bot.settle_stderr();
        assert_eq!(bot.stderr_tail(), "first\n");
    }

    /// Events written ahead of a request never wait and never split a line: into a
    /// bot that is not reading yet, lines go in whole until its pipe is full, the
    /// rest stays queued whole, and every byte arrives once the bot reads.
    #[test]
    fn early_events_never_wait_split_or_lose_a_line() {
        // Reads nothing for a moment, then counts well-formed lines and bytes.
        let counter =
            "awk '/^info [0-9]+ x+$/ { ok++ } { n++; bytes += length($0) + 1 } END { print ok, n, bytes }'";
        let mut bot = ChildProcess::spawn(
            &format!("sh -c \"sleep 0.3; exec {counter}\""),
            &[],
            &Sandbox::default(),
            StderrTo::default(),
        )
        .unwrap();
        let line_of = |i: usize| format!("info {i:04} {}\n", "x".repeat(990));
        let (lines, mut most_queued) = (200, 0);
        // The session's queue: lines wait in it until the pipe takes all of it at once.
        let mut queued = String::new();
        for i in 0..lines {
            queued.push_str(&line_of(i));
            if bot.try_send_whole(queued.as_bytes()) {
                queued.clear();
            }
            most_queued = most_queued.max(queued.len());
        }
        // The pipe (64 KiB) filled long before 200 kB, and the queue kept the rest.
        assert!(most_queued > 100 * 1000, "the pipe never filled: {most_queued}");
        assert!(queued.ends_with(&line_of(lines - 1)));
        bot.send(queued.as_bytes(), Instant::now() + Duration::from_secs(10))
            .unwrap();
        bot.close_output();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while !got.ends_with(b"\n") {
            match bot.receive(&mut buf, deadline) {
                Received::Bytes(n) => got.extend_from_slice(&buf[..n]),
                other => panic!("no count: {other:?}"),
            }
        }
        assert_eq!(
            String::from_utf8_lossy(&got).trim_end(),
            format!("{lines} {lines} {}", lines * line_of(0).len())
        );
        assert!(bot.wait_gone(Instant::now() + Duration::from_secs(5)));
    }
}
