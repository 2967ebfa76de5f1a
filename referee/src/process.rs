//! A bot running as a child process, spoken to over stdin/stdout.
//!
//! One owner per child (in the manner of fishnet): the child runs in its own process
//! group and is killed with its whole group when dropped or shut down; a reader task
//! turns stdout into lines with a bounded length, where end-of-stream is a fault; a
//! second task drains stderr into a capped tail (and an optional capped log file) so
//! a chatty bot can never block; every write is flushed; every wait has a deadline.

use crate::fault::{Fault, FaultKind};
use proto::{FromBot, MAX_BOT_LINE, ToBot};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

/// How much of a bot's stderr is kept in memory for error messages.
pub const STDERR_TAIL: usize = 4 * 1024;
/// How much of a bot's stderr goes to its log file, per game.
pub const STDERR_LOG_CAP: u64 = 1024 * 1024;
/// How many lines a bot may send while answering one request.
pub const MAX_LINES_PER_REQUEST: usize = 1000;

/// What reading stdout gave.
#[derive(Debug)]
enum Line {
    Text(String),
    TooLong,
    Eof,
}

/// A bot process.
#[derive(Debug)]
pub struct ProcessBot {
    command: String,
    child: Child,
    pgid: Option<i32>,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Bytes of a line not yet complete (kept across cancelled reads).
    partial: Vec<u8>,
    /// Lines queued to go out with the next message, in one write.
    queued: String,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    /// Info lines and discarded late replies seen while waiting.
    pub info: Vec<String>,
    /// Late replies to older requests, discarded.
    pub late_replies: u64,
}

fn spawn_fault(command: &str, why: impl std::fmt::Display) -> Fault {
    Fault::new(FaultKind::Spawn, format!("cannot start {command:?}: {why}"))
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
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| spawn_fault(command, e))?;
        let pgid = child.id().map(|id| id as i32);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| spawn_fault(command, "no stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| spawn_fault(command, "no stderr"))?;
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(drain_stderr(stderr, stderr_tail.clone(), stderr_log));
        Ok(ProcessBot {
            command: command.to_owned(),
            stdin: child.stdin.take(),
            child,
            pgid,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            partial: Vec::new(),
            queued: String::new(),
            stderr_tail,
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
        let tail = self.stderr_tail.lock().map(|t| t.clone()).unwrap_or_default();
        String::from_utf8_lossy(&tail).into_owned()
    }

    /// Queues a message to go out with the next one sent (one write, one wake-up
    /// of the bot, and the order kept).
    pub fn queue(&mut self, msg: &ToBot) {
        let line = msg.to_string();
        tracing::trace!(target: "referee::wire", bot = %self.command, "> {line}");
        self.queued.push_str(&line);
        self.queued.push('\n');
    }

    /// Sends the queued messages and this one, and flushes.
    ///
    /// # Errors
    /// [`FaultKind::Crash`] if the bot's stdin is closed.
    pub async fn send(&mut self, msg: &ToBot) -> Result<(), Fault> {
        self.queue(msg);
        let line = std::mem::take(&mut self.queued);
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Fault::new(FaultKind::Crash, "stdin already closed"))?;
        let res = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        }
        .await;
        match res {
            Ok(()) => Ok(()),
            Err(e) => Err(self.crash_fault(&format!("cannot write to the bot: {e}")).await),
        }
    }

    async fn crash_fault(&mut self, what: &str) -> Fault {
        // Give the exit status a moment to be known.
        let status = tokio::time::timeout(Duration::from_millis(50), self.child.wait()).await;
        let status = match status {
            Ok(Ok(s)) => format!(" ({s})"),
            _ => String::new(),
        };
        let tail = self.stderr_tail();
        let tail = tail.trim();
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr ends: {}", last_chars(tail, 300))
        };
        Fault::new(FaultKind::Crash, format!("{what}{status}{tail}"))
    }

    /// The next message from the bot before `deadline`. `info` lines are collected
    /// and skipped; `lines_left` counts every line read (flood protection).
    ///
    /// # Errors
    /// A timeout (`on_timeout`), end of output, an over-long line, a flood, or a line
    /// that is not a bot message.
    pub async fn next_message(
        &mut self,
        deadline: Instant,
        on_timeout: FaultKind,
        lines_left: &mut usize,
    ) -> Result<FromBot, Fault> {
        loop {
            let line = match timeout_at(deadline, self.read_line()).await {
                Err(_) => return Err(Fault::new(on_timeout, "no answer before the deadline")),
                Ok(Line::Eof) => {
                    return Err(self.crash_fault("the bot closed its output").await);
                }
                Ok(Line::TooLong) => {
                    return Err(Fault::new(
                        FaultKind::LineTooLong,
                        format!("a line longer than {MAX_BOT_LINE} bytes"),
                    ));
                }
                Ok(Line::Text(line)) => line,
            };
            tracing::trace!(target: "referee::wire", bot = %self.command, "< {line}");
            if *lines_left == 0 {
                return Err(Fault::new(
                    FaultKind::Flood,
                    format!("more than {MAX_LINES_PER_REQUEST} lines for one request"),
                ));
            }
            *lines_left -= 1;
            match FromBot::parse(&line) {
                Ok(FromBot::Info(text)) => {
                    if self.info.len() < 64 {
                        self.info.push(last_chars(&text, 200).to_owned());
                    }
                }
                Ok(msg) => return Ok(msg),
                Err(proto::ParseError::Empty) => {}
                Err(e) => {
                    return Err(Fault::new(
                        FaultKind::Malformed,
                        format!("{e} in line {:?}", last_chars(&line, 120)),
                    ));
                }
            }
        }
    }

    /// Reads one line, at most [`MAX_BOT_LINE`] bytes. Cancel-safe: bytes taken from
    /// the pipe are kept in `partial` before every await, so a deadline that
    /// interrupts the read loses nothing.
    async fn read_line(&mut self) -> Line {
        loop {
            let buf = match self.stdout.fill_buf().await {
                Ok(buf) if !buf.is_empty() => buf,
                // A last line without a newline is not a message.
                _ => return Line::Eof,
            };
            let (used, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.partial.extend_from_slice(&buf[..i]);
                    (i + 1, true)
                }
                None => {
                    self.partial.extend_from_slice(buf);
                    (buf.len(), false)
                }
            };
            self.stdout.consume(used);
            if self.partial.len() > MAX_BOT_LINE {
                return Line::TooLong;
            }
            if done {
                let text = String::from_utf8_lossy(&self.partial).into_owned();
                self.partial.clear();
                return Line::Text(text);
            }
        }
    }

    /// Asks `quit`, waits `grace` for the bot to exit, then kills its whole process
    /// group, and reaps it. Never leaves a zombie. Returns whether the bot exited by
    /// itself within the grace time.
    pub async fn shutdown(mut self, grace: Duration) -> bool {
        let _ = self.send(&ToBot::Quit).await;
        drop(self.stdin.take());
        let exited = tokio::time::timeout(grace, self.child.wait()).await.is_ok();
        self.kill_group();
        if !exited {
            let _ = self.child.kill().await;
        }
        let _ = self.child.wait().await;
        exited
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
        // kill_on_drop takes the child; the group may hold more.
        self.kill_group();
    }
}

fn last_chars(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

async fn drain_stderr(
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<Vec<u8>>>,
    log: Option<PathBuf>,
) {
    let mut file = match log {
        Some(path) => tokio::fs::File::create(path).await.ok(),
        None => None,
    };
    let mut written = 0u64;
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Ok(mut t) = tail.lock() {
            t.extend_from_slice(&buf[..n]);
            if t.len() > STDERR_TAIL {
                let cut = t.len() - STDERR_TAIL;
                t.drain(..cut);
            }
        }
        if let Some(f) = file.as_mut() {
            let room = STDERR_LOG_CAP.saturating_sub(written) as usize;
            if room > 0 {
                let take = n.min(room);
                if f.write_all(&buf[..take]).await.is_ok() {
                    written += take as u64;
                }
                if take < n {
                    let _ = f.write_all(b"\n[stderr log capped]\n").await;
                }
            }
        }
    }
    if let Some(mut f) = file {
        let _ = f.flush().await;
    }
}
