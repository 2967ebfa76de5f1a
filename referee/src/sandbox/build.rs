//! A command run to its end in a bot's folder, contained like a bot: an
//! uploaded bot's build. Its output (stdout and stderr together) is kept up to
//! a cap, its tail when longer; past its time it is killed, its whole tree.
//!
//! Isolated, a build writes only in a bounded area of its own inside its
//! sandbox, and what it made comes out as a tar stream on a pipe of its own
//! (`Home`'s build script), handed to the caller's reader as it arrives: the
//! host's disk never holds it, and the reader stops at its own limits.

use super::{Home, Sandbox, prepare_in};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How a command run to its end went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// It exited with status 0 in time.
    pub success: bool,
    /// It was killed at its time limit.
    pub timed_out: bool,
    /// How it ended, in words (`exit status 2`, `killed after 600 s`).
    pub ended: String,
    /// What it wrote, the tail when longer than the cap (said at the top).
    pub output: String,
}

/// What a build's folder reader made of the stream, and how the build ended.
#[derive(Debug)]
pub struct Built<T> {
    /// How the build ended.
    pub finished: Finished,
    /// What the reader returned: `None` where the build did not pack its
    /// folder into a stream (level `none`, whose folder is the host's).
    pub folder: Option<T>,
}

/// How often a running command is looked at.
const POLL: Duration = Duration::from_millis(20);

/// How much of the packed folder is read away after the caller's reader has
/// stopped: more than the padding GNU tar writes after an archive's end (its
/// records are 10 KiB), far less than a folder the reader refused.
pub const PACKING_TRAILER_BYTES: u64 = 64 << 10;

/// Runs `command` in `home` under `sandbox` until it exits or `limit` passes,
/// keeping at most `cap` bytes of its output.
///
/// # Errors
/// It cannot be started (its program is missing, the sandbox cannot be had).
pub fn run_to_end(
    command: &str,
    sandbox: &Sandbox,
    home: &Home,
    limit: Duration,
    cap: usize,
) -> Result<Finished, String> {
    build(
        command,
        sandbox,
        home,
        limit,
        cap,
        |mut r: std::io::PipeReader| std::io::copy(&mut r, &mut std::io::sink()),
    )
    .map(|b| b.finished)
}

/// [`run_to_end`] for a build whose folder is read by `read_folder` as it
/// arrives (isolated: the built folder as a plain tar). A reader may stop where
/// the archive ends: up to [`PACKING_TRAILER_BYTES`] after it are read away, so
/// the packing ends cleanly. If it stops further back, the stream ends early and
/// the build fails. A build that is still running when the reader returns is
/// left to end by itself or at its limit.
///
/// # Errors
/// As [`run_to_end`].
pub fn build<T: Send + 'static>(
    command: &str,
    sandbox: &Sandbox,
    home: &Home,
    limit: Duration,
    cap: usize,
    read_folder: impl FnOnce(std::io::PipeReader) -> T + Send + 'static,
) -> Result<Built<T>, String> {
    let mut prepared = prepare_in(command, &[], sandbox, Some(home))?;
    prepared.install_child_setup();
    let (mut reader, writer) = std::io::pipe().map_err(|e| format!("no pipe: {e}"))?;
    let packs = sandbox.level == super::Level::Isolated && home.writable;
    let (folder_reader, stdout) = if packs {
        let (r, w) = std::io::pipe().map_err(|e| format!("no pipe: {e}"))?;
        (Some(r), w)
    } else {
        (None, writer.try_clone().map_err(|e| format!("no pipe: {e}"))?)
    };
    let mut child = {
        let mut cmd = prepared.command;
        cmd.stdin(Stdio::null())
            .stdout(stdout)
            .stderr(writer)
            .process_group(0);
        // The command (and its copies of the pipe's writing end) goes when this
        // block ends: the reader sees the end once the tree has exited.
        cmd.spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?
    };
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let folder = folder_reader
        .map(|r| {
            // A reader stops where its archive ends, but tar writes whole
            // records: what follows the end (under one record) is read away
            // here, so tar does not die of a broken pipe on its last write.
            // A reader that stopped further back still cuts the stream.
            let rest = r.try_clone().map_err(|e| format!("no pipe: {e}"))?;
            Ok::<_, String>(std::thread::spawn(move || {
                let read = read_folder(r);
                let _ = std::io::copy(&mut rest.take(PACKING_TRAILER_BYTES), &mut std::io::sink());
                read
            }))
        })
        .transpose()?;
    let read = std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut dropped = 0usize;
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > 2 * cap.max(1) {
                let cut = kept.len() - cap;
                dropped += cut;
                kept.drain(..cut);
            }
        }
        if kept.len() > cap {
            dropped += kept.len() - cap;
            kept.drain(..kept.len() - cap);
        }
        (kept, dropped)
    });
    let started = Instant::now();
    let kill_tree = || {
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        if let Some(cg) = &prepared.cgroup {
            cg.kill_all(Duration::from_secs(2));
        }
    };
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (Some(status), false),
            Ok(None) if started.elapsed() >= limit => {
                kill_tree();
                break (child.wait().ok(), true);
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => return Err(format!("cannot wait for {command:?}: {e}")),
        }
    };
    // What it left running dies with it, so the output ends.
    kill_tree();
    let (kept, dropped) = read.join().unwrap_or_default();
    let folder = match folder {
        Some(t) => Some(
            t.join()
                .map_err(|_| "the built folder's reader failed".to_owned())?,
        ),
        None => None,
    };
    let mut output = String::new();
    if dropped > 0 {
        output.push_str(&format!("[the first {dropped} bytes of output are cut]\n"));
    }
    output.push_str(&String::from_utf8_lossy(&kept));
    let success = !timed_out && status.is_some_and(|s| s.success());
    let ended = if timed_out {
        format!("killed after {} s, its time limit", limit.as_secs())
    } else {
        status.map_or_else(|| "its end was not seen".to_owned(), |s| s.to_string())
    };
    drop(prepared.scratch);
    Ok(Built {
        finished: Finished {
            success,
            timed_out,
            ended,
            output,
        },
        folder,
    })
}
