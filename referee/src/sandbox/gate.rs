//! The rotation gate: one per machine, between every bot process and the next
//! rotation of any mirrored group.
//!
//! Two rotations of a mirrored group deal the same dice, and two live processes on
//! one machine can always signal each other (file locks on files every sandbox
//! shows, CPU load), whoever's bots they are and whichever runs started them. So a
//! group's next rotation starts only after a moment when no bot process at all
//! lived on the machine: then nothing that saw one rotation, nor anything it could
//! have told, is alive to play or whisper in the next.
//!
//! Every bot process (and every build) holds a [`Pass`], a shared `flock` on the
//! gate file, from before it is started until it has been reaped with everything
//! it started. [`RotationGate::turn`] takes the gate exclusively for an instant,
//! which it can only do at such a moment. A turnstile lock in front of the gate
//! keeps new passes from being handed out while a turn waits, so a turn waits at
//! most for the processes already running, never for ever.
//!
//! A holder of passes never waits for a new one: a [`crate::BotPool`] reuses the
//! pass of its live processes, and asks the gate only when it has none. So no
//! thread waits at the turnstile while it keeps the gate shut.
//!
//! The gate is machine-wide and for every user: every program that starts bots
//! (`referee`, `ladder worker`, `ladder tournament`, …) uses the same two files,
//! under `/run/lock` where the machine has it, else `/tmp`
//! (`ASTRAGAL_ROTATION_GATE` names another place, for programs in containers
//! that share a kernel but not those folders).

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg, OFlag};
use nix::sys::stat::Mode;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};

/// The environment variable that moves the gate's files: their common stem.
pub const GATE_ENV: &str = "ASTRAGAL_ROTATION_GATE";

/// The machine's gate (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotationGate {
    gate: PathBuf,
    turnstile: PathBuf,
}

/// A share of the gate: while any clone of it lives, no turn of the gate can
/// complete. Held by every bot process and build until it is reaped.
#[derive(Debug, Clone)]
pub struct Pass(#[allow(dead_code)] Arc<Flock<File>>);

/// Sees whether a [`Pass`] is still held by anyone, without holding it.
#[derive(Debug, Default)]
pub struct WeakPass(Weak<Flock<File>>);

impl Pass {
    /// A handle that sees whether the pass is still held by anyone.
    pub fn downgrade(&self) -> WeakPass {
        WeakPass(Arc::downgrade(&self.0))
    }
}

impl WeakPass {
    /// The pass, if anyone still holds it.
    pub fn upgrade(&self) -> Option<Pass> {
        self.0.upgrade().map(Pass)
    }
}

/// The gate cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Its files cannot be opened or locked.
    #[error("the rotation gate {path}: {why}")]
    Lock {
        /// The file.
        path: PathBuf,
        /// What the system said.
        why: Errno,
    },
    /// The caller still holds a pass, and would wait for itself.
    #[error("a bot process of this thread is still alive at a turn of the rotation gate")]
    HeldByCaller,
}

impl RotationGate {
    /// The machine's gate: at `$ASTRAGAL_ROTATION_GATE` if set, else under
    /// `/run/lock` if the machine has it, else under `/tmp`.
    pub fn machine() -> &'static RotationGate {
        static GATE: OnceLock<RotationGate> = OnceLock::new();
        GATE.get_or_init(|| {
            let stem = match std::env::var_os(GATE_ENV) {
                Some(s) if !s.is_empty() => PathBuf::from(s),
                _ if Path::new("/run/lock").is_dir() => PathBuf::from("/run/lock/astragal-rotation"),
                _ => PathBuf::from("/tmp/astragal-rotation"),
            };
            RotationGate::at(&stem)
        })
    }

    /// A gate whose files are `STEM.gate` and `STEM.turnstile`.
    pub fn at(stem: &Path) -> RotationGate {
        let with = |ext: &str| {
            let mut s = stem.as_os_str().to_owned();
            s.push(ext);
            PathBuf::from(s)
        };
        RotationGate {
            gate: with(".gate"),
            turnstile: with(".turnstile"),
        }
    }

    /// A pass: waits while a turn is waiting (behind the turnstile), never for
    /// other passes.
    ///
    /// # Errors
    /// The gate's files cannot be opened or locked.
    pub fn enter(&self) -> Result<Pass, GateError> {
        // Shared: passes handed out at once do not hold each other up, nor look
        // like a waiting turn to [`RotationGate::turn_waiting`].
        drop(lock(&self.turnstile, FlockArg::LockShared)?);
        Ok(Pass(Arc::new(lock(&self.gate, FlockArg::LockShared)?)))
    }

    /// Whether a turn is waiting: a holder of a pass that could let go of it now
    /// should, soon.
    pub fn turn_waiting(&self) -> bool {
        matches!(
            lock(&self.turnstile, FlockArg::LockSharedNonblock),
            Err(GateError::Lock {
                why: Errno::EWOULDBLOCK,
                ..
            })
        )
    }

    /// Waits for a moment when no pass is held on the machine (every bot process
    /// started before this call has been reaped), holding back new passes
    /// meanwhile. The caller must hold no pass itself, or it waits for ever.
    ///
    /// # Errors
    /// The gate's files cannot be opened or locked.
    pub fn turn(&self) -> Result<(), GateError> {
        let turnstile = lock(&self.turnstile, FlockArg::LockExclusive)?;
        drop(lock(&self.gate, FlockArg::LockExclusive)?);
        drop(turnstile);
        Ok(())
    }
}

/// Opens `path` read-only (a `flock` needs no more, so a file one user made is a
/// lock for every user), making it if it is not there, and locks it.
fn lock(path: &Path, how: FlockArg) -> Result<Flock<File>, GateError> {
    let fail = |why| GateError::Lock {
        path: path.to_owned(),
        why,
    };
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = loop {
        match nix::fcntl::open(path, flags, Mode::empty()) {
            Ok(fd) => break fd,
            // Made with O_EXCL, then opened like any other: in a sticky folder, a
            // file another user made cannot be opened with O_CREAT.
            Err(Errno::ENOENT) => match nix::fcntl::open(
                path,
                flags | OFlag::O_CREAT | OFlag::O_EXCL,
                Mode::from_bits_truncate(0o644),
            ) {
                Ok(fd) => break fd,
                Err(Errno::EEXIST | Errno::EINTR) => {}
                Err(e) => return Err(fail(e)),
            },
            Err(Errno::EINTR) => {}
            Err(e) => return Err(fail(e)),
        }
    };
    let mut file = File::from(fd);
    loop {
        match Flock::lock(file, how) {
            Ok(locked) => return Ok(locked),
            Err((f, Errno::EINTR)) => file = f,
            Err((_, e)) => return Err(fail(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Waits until someone holds `path` exclusively (the turner, at its turnstile).
    fn until_held(path: &Path) {
        while let Ok(probe) = lock(path, FlockArg::LockExclusiveNonblock) {
            drop(probe);
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_turn_waits_for_every_pass_and_holds_back_new_ones() {
        let dir = tempfile::tempdir().unwrap();
        let gate = RotationGate::at(&dir.path().join("g"));
        let held = gate.enter().unwrap();
        let second = held.clone();
        let (turned_tx, turned) = mpsc::channel();
        let turner = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                gate.turn().unwrap();
                turned_tx.send(()).unwrap();
            })
        };
        until_held(&gate.turnstile);
        assert!(gate.turn_waiting());
        // A new pass is held back while the turn waits.
        let (entered_tx, entered) = mpsc::channel();
        let enterer = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let pass = gate.enter().unwrap();
                entered_tx.send(()).unwrap();
                pass
            })
        };
        // Neither can happen while a clone of the first pass lives (so no wait
        // here can end early by chance).
        assert_eq!(
            turned.recv_timeout(Duration::from_millis(200)),
            Err(mpsc::RecvTimeoutError::Timeout),
            "turned while a pass was held"
        );
        drop(held);
        assert!(
            turned.try_recv().is_err(),
            "turned while a clone of the pass was held"
        );
        assert!(entered.try_recv().is_err(), "a new pass went past a waiting turn");
        drop(second);
        turned.recv().unwrap();
        turner.join().unwrap();
        entered.recv().unwrap();
        drop(enterer.join().unwrap());
        assert!(!gate.turn_waiting());
        gate.turn().unwrap();
    }

    #[test]
    fn passes_do_not_wait_for_each_other_and_name_a_bad_place() {
        let dir = tempfile::tempdir().unwrap();
        let gate = RotationGate::at(&dir.path().join("g"));
        let passes: Vec<Pass> = (0..8).map(|_| gate.enter().unwrap()).collect();
        assert_eq!(passes.len(), 8);
        let bad = RotationGate::at(&dir.path().join("no-such-folder/g"));
        let e = bad.enter().unwrap_err().to_string();
        assert!(e.contains("no-such-folder/g.turnstile"), "{e}");
    }
}
