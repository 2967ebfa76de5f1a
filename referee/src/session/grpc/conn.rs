//! Who drives a gRPC seat's connection. The connection lives on a
//! single-threaded runtime of its own, so the thread that waits for a call can
//! drive it with no hand-over between threads. Beside it runs the session's
//! keeper thread, which drives the connection in two cases: a call handed to it
//! (a step asks several seats, and each must be sent at once), and a connection
//! nobody has driven for a while (so the server's pings, flow control and
//! goodbyes are answered while other seats think).

use super::Call;
use crate::fault::{Fault, FaultKind};
use crate::session::Reply;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant};

/// A call handed to the keeper and where its answer goes.
type Job = (Call, mpsc::Sender<Result<Reply, Fault>>);

/// A session's connection: its runtime, and who drives it.
pub(super) struct Conn {
    runtime: tokio::runtime::Runtime,
    slot: Mutex<Slot>,
    /// Wakes the keeper: a job, or the session's end.
    bell: Condvar,
    /// Ends the keeper's hold on an idle connection.
    release: tokio::sync::Notify,
    /// Idle this long, the connection is kept.
    keep_after: Duration,
    /// Whether the keeper thread started.
    keeper: AtomicBool,
}

struct Slot {
    now: Use,
    job: Option<Job>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Nobody drives it; since when.
    Idle(Instant),
    /// A call drives it.
    Busy,
    /// The keeper drives it until released.
    Kept,
    /// The session is gone; the keeper ends once its job is done.
    Closed,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Conn({:?})", self.lock().now)
    }
}

impl Conn {
    /// A connection's runtime and its keeper, keeping the connection once it has
    /// been idle for `keep_after`.
    ///
    /// # Errors
    /// [`FaultKind::Spawn`] if no runtime can be made.
    pub(super) fn open(keep_after: Duration) -> Result<Arc<Conn>, Fault> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                Fault::with_private(FaultKind::Spawn, "cannot start a gRPC runtime", format!(": {e}"))
            })?;
        let conn = Arc::new(Conn {
            runtime,
            slot: Mutex::new(Slot {
                now: Use::Idle(Instant::now()),
                job: None,
            }),
            bell: Condvar::new(),
            release: tokio::sync::Notify::new(),
            keep_after,
            keeper: AtomicBool::new(false),
        });
        let keeper = Arc::clone(&conn);
        match std::thread::Builder::new()
            .name("referee-grpc".into())
            .spawn(move || keeper.keep())
        {
            Ok(_) => conn.keeper.store(true, Ordering::Release),
            // Calls still work, driven by whoever waits for them.
            Err(e) => tracing::warn!("no keeper thread for a gRPC connection: {e}"),
        }
        Ok(conn)
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets who drives the connection, letting go of the keeper's hold.
    fn set(&self, slot: &mut Slot, to: Use) {
        if std::mem::replace(&mut slot.now, to) == Use::Kept {
            self.release.notify_one();
        }
    }

    /// Runs `f` to its end on this thread, driving the connection meanwhile.
    pub(super) fn drive<F: Future>(&self, f: F) -> F::Output {
        self.set(&mut self.lock(), Use::Busy);
        let out = self.runtime.block_on(f);
        let mut slot = self.lock();
        if slot.now == Use::Busy {
            slot.now = Use::Idle(Instant::now());
        }
        out
    }

    /// Hands `call` to the keeper, which sends it at once and sends its answer
    /// down `answer`. Without a keeper, gives them back.
    pub(super) fn hand(&self, call: Call, answer: mpsc::Sender<Result<Reply, Fault>>) -> Result<(), Job> {
        if !self.keeper.load(Ordering::Acquire) {
            return Err((call, answer));
        }
        let mut slot = self.lock();
        slot.job = Some((call, answer));
        self.set(&mut slot, Use::Busy);
        drop(slot);
        self.bell.notify_all();
        Ok(())
    }

    /// The keeper thread: drives the calls handed to it, and keeps the
    /// connection once it has been idle for `keep_after`, until a call (or the
    /// session's end) releases it.
    fn keep(&self) {
        let mut slot = self.lock();
        loop {
            if let Some((call, answer)) = slot.job.take() {
                drop(slot);
                let out = self.runtime.block_on(call);
                slot = self.lock();
                if slot.now == Use::Busy {
                    slot.now = Use::Idle(Instant::now());
                }
                let _ = answer.send(out);
                continue;
            }
            match slot.now {
                Use::Closed => return,
                Use::Idle(since) if since.elapsed() >= self.keep_after => {
                    slot.now = Use::Kept;
                    drop(slot);
                    self.runtime.block_on(self.release.notified());
                    slot = self.lock();
                }
                Use::Idle(since) => {
                    let left = self.keep_after.saturating_sub(since.elapsed());
                    slot = self.wait(slot, left);
                }
                // A call drives it: look again when it may have gone idle.
                Use::Busy | Use::Kept => {
                    slot = self.wait(slot, self.keep_after.max(Duration::from_millis(10)));
                }
            }
        }
    }

    fn wait<'a>(&self, slot: MutexGuard<'a, Slot>, at_most: Duration) -> MutexGuard<'a, Slot> {
        self.bell
            .wait_timeout(slot, at_most.max(Duration::from_millis(1)))
            .map(|(s, _)| s)
            .unwrap_or_else(|e| e.into_inner().0)
    }

    /// Ends the keeper once its job, if any, is done (the session is dropped).
    pub(super) fn close(&self) {
        self.set(&mut self.lock(), Use::Closed);
        self.bell.notify_all();
    }
}
