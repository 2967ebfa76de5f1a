//! Which worker call is served next. A database serves a few transactions at
//! once well and hundreds badly, so the worker calls a server serves at once are
//! capped. Reports are always let in (their games are played); a lease past the
//! cap waits in line, first come first served, for at most a poll's length.
//!
//! A worker keeps its place in line across polls: a lease that waited its whole
//! poll is answered "ask again", and when the worker asks again within
//! [`PLACE_KEPT`] it waits from where it stood. So with ten thousand workers
//! and work for a few hundred a second, every worker is served in turn, rather
//! than the fleet asking again at random and some workers never being picked
//! (as when busy leases were told to come back after a jittered wait: at
//! 10,000 workers half of them got nothing in two minutes, and the refused
//! asks cost more than the work).
//!
//! A worker has one call in line at a time: its further leases wait behind that
//! one, and each enters the line at the back when the one before it was let in.
//! Otherwise a worker that opened many lease calls at once would have them all
//! stand at its one place and take that many turns before the workers after it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Longest a lease waits in line before it is answered "ask again" (a long
/// poll): well under the gRPC port's idle limit, and short enough that a worker
/// stopping is never held long.
pub const LEASE_POLL: Duration = Duration::from_secs(20);

/// How long a worker that asked keeps its place in line without asking again.
pub const PLACE_KEPT: Duration = Duration::from_secs(60);

/// The line: worker calls being served, and leases waiting.
#[derive(Clone)]
pub struct Admission {
    state: Arc<Mutex<State>>,
}

struct State {
    /// Calls served at once before leases wait.
    max: usize,
    /// Calls being served now (reports may take it past `max`).
    busy: usize,
    /// The next place in line.
    next_place: u64,
    /// Workers in line (by id): their place and when they last asked.
    places: HashMap<i64, (u64, Instant)>,
    /// Calls waiting now, by place and then by arrival (one worker may have
    /// several calls waiting), each with its worker and where to send its slot.
    waiting: BTreeMap<(u64, u64), (i64, oneshot::Sender<Slot>)>,
    next_call: u64,
    /// Workers with a lease asking now (by id): the turn their calls take one
    /// at a time into the line, shared by those calls.
    turns: HashMap<i64, Arc<tokio::sync::Mutex<()>>>,
    /// When places not asked for within [`PLACE_KEPT`] were last dropped.
    swept: Instant,
    /// The server is stopping: no lease waits.
    closed: bool,
}

/// A call being served; the next in line is let in when it is dropped.
pub struct Slot {
    state: Option<Arc<Mutex<State>>>,
}

/// A lease waited its whole poll in line without being let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StillInLine;

fn locked(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // Nothing panics while holding it; a poisoned line is still a line.
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Admission {
    /// A line that serves `max` calls at once (at least one).
    pub fn new(max: usize) -> Admission {
        Admission {
            state: Arc::new(Mutex::new(State {
                max: max.max(1),
                busy: 0,
                next_place: 0,
                places: HashMap::new(),
                waiting: BTreeMap::new(),
                next_call: 0,
                turns: HashMap::new(),
                swept: Instant::now(),
                closed: false,
            })),
        }
    }

    /// A report (or a renewal): let in at once, whatever the load.
    pub fn enter_now(&self) -> Slot {
        locked(&self.state).busy += 1;
        Slot {
            state: Some(self.state.clone()),
        }
    }

    /// A lease by `worker`: let in when a call ends and it is first in line,
    /// or [`StillInLine`] after `poll` (keeping its place). Also returns how
    /// long it waited.
    ///
    /// # Errors
    /// [`StillInLine`]: not let in within `poll`.
    pub async fn enter_in_turn(&self, worker: i64, poll: Duration) -> Result<(Slot, Duration), StillInLine> {
        let asked = Instant::now();
        let turn = WorkerTurn::take(&self.state, worker);
        let Ok(_mine) = tokio::time::timeout(poll, turn.lock.lock()).await else {
            return Err(StillInLine);
        };
        let poll = poll.saturating_sub(asked.elapsed());
        let (key, mut rx) = {
            let mut s = locked(&self.state);
            if s.closed {
                return Err(StillInLine);
            }
            if asked.duration_since(s.swept) >= PLACE_KEPT {
                s.places
                    .retain(|_, (_, seen)| asked.duration_since(*seen) < PLACE_KEPT);
                s.swept = asked;
            }
            let next = s.next_place;
            let place = match s.places.get_mut(&worker) {
                Some((place, seen)) => {
                    *seen = asked;
                    *place
                }
                None => {
                    s.next_place += 1;
                    s.places.insert(worker, (next, asked));
                    next
                }
            };
            let first = s.waiting.keys().next().is_none_or(|&(p, _)| p > place);
            if s.busy < s.max && first {
                s.busy += 1;
                s.places.remove(&worker);
                return Ok((
                    Slot {
                        state: Some(self.state.clone()),
                    },
                    Duration::ZERO,
                ));
            }
            let key = (place, s.next_call);
            s.next_call += 1;
            let (tx, rx) = oneshot::channel();
            s.waiting.insert(key, (worker, tx));
            (key, rx)
        };
        // Leaves the line if this call is dropped while it waits.
        let in_line = InLine {
            state: &self.state,
            key,
        };
        let slot = match tokio::time::timeout(poll, &mut rx).await {
            Ok(Ok(slot)) => Some(slot),
            // The line is gone (the server is stopping): nothing to wait for.
            Ok(Err(_)) => None,
            Err(_) => {
                let mut s = locked(&self.state);
                if s.waiting.remove(&key).is_some() {
                    // Its place is kept from now, for its next ask.
                    if let Some((_, seen)) = s.places.get_mut(&worker) {
                        *seen = Instant::now();
                    }
                    None
                } else {
                    drop(s);
                    // Let in just as the poll ran out: the slot is in the channel.
                    rx.try_recv().ok()
                }
            }
        };
        drop(in_line);
        slot.map(|s| (s, asked.elapsed())).ok_or(StillInLine)
    }

    /// The server is stopping: every lease waiting is answered "ask again" at
    /// once (a stopping server waits for the calls it serves, and a line of
    /// long polls would hold it for a whole poll), and no lease waits from now.
    pub fn close(&self) {
        let mut s = locked(&self.state);
        s.closed = true;
        s.waiting.clear();
    }

    /// Calls being served now and leases waiting: for the logs and tests.
    pub fn load(&self) -> (usize, usize) {
        let s = locked(&self.state);
        (s.busy, s.waiting.len())
    }
}

/// A worker's turn to stand in line, shared by its calls asking now; the last
/// of them takes it out of [`State::turns`] when dropped.
struct WorkerTurn<'a> {
    state: &'a Arc<Mutex<State>>,
    worker: i64,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl<'a> WorkerTurn<'a> {
    fn take(state: &'a Arc<Mutex<State>>, worker: i64) -> WorkerTurn<'a> {
        let lock = locked(state).turns.entry(worker).or_default().clone();
        WorkerTurn { state, worker, lock }
    }
}

impl Drop for WorkerTurn<'_> {
    fn drop(&mut self) {
        let mut s = locked(self.state);
        // Its calls clone it under the line's lock only: two holders are the
        // map and this one, the last call.
        if Arc::strong_count(&self.lock) == 2 {
            s.turns.remove(&self.worker);
        }
    }
}

/// A lease waiting in line; takes itself out when dropped.
struct InLine<'a> {
    state: &'a Arc<Mutex<State>>,
    key: (u64, u64),
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        locked(self.state).waiting.remove(&self.key);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        let mut s = locked(&state);
        s.busy = s.busy.saturating_sub(1);
        // The freed place goes to the first in line still waiting for it.
        while s.busy < s.max {
            let Some(((place, _), (worker, tx))) = s.waiting.pop_first() else {
                break;
            };
            let slot = Slot {
                state: Some(state.clone()),
            };
            match tx.send(slot) {
                Ok(()) => {
                    s.busy += 1;
                    // Let in: its worker's next lease goes to the back.
                    if s.places.get(&worker).is_some_and(|&(p, _)| p == place) {
                        s.places.remove(&worker);
                    }
                }
                // It stopped waiting: the slot was never its, and must not
                // come back here while the line is held.
                Err(mut unsent) => unsent.state = None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leases asked in turn while the one call served is held: let in one at
    /// a time as each before it ends, in the order asked (not by worker id).
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn leases_are_let_in_first_come_first_served() {
        let line = Admission::new(1);
        let held = line.enter_now();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for w in [7_i64, 3, 9, 1, 5] {
            tasks.push(let_in_in_order(&line, &order, w));
            // Each in line before the next asks.
            until_waiting(&line, tasks.len()).await;
        }
        assert_eq!(line.load(), (1, 5));
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*locked_vec(&order), vec![7, 3, 9, 1, 5]);
        assert_eq!(line.load(), (0, 0));
    }

    /// A lease by `w`, asked now: whether it was let in.
    fn ask(line: &Admission, w: i64) -> tokio::task::JoinHandle<bool> {
        let line = line.clone();
        tokio::spawn(async move { line.enter_in_turn(w, LEASE_POLL).await.is_ok() })
    }

    /// A lease by `w`, asked now, that must be let in: it writes `w` to `order`
    /// and ends its call at once, so the next is let in only after it.
    fn let_in_in_order(
        line: &Admission,
        order: &Arc<Mutex<Vec<i64>>>,
        w: i64,
    ) -> tokio::task::JoinHandle<()> {
        let (line, order) = (line.clone(), order.clone());
        tokio::spawn(async move {
            let (slot, _) = line.enter_in_turn(w, LEASE_POLL).await.expect("let in");
            locked_vec(&order).push(w);
            drop(slot);
        })
    }

    /// Yields until `n` leases wait in line.
    async fn until_waiting(line: &Admission, n: usize) {
        while line.load().1 < n {
            tokio::task::yield_now().await;
        }
    }

    fn locked_vec(v: &Mutex<Vec<i64>>) -> MutexGuard<'_, Vec<i64>> {
        v.lock().unwrap()
    }

    /// A lease that waited its whole poll keeps its place: asking again, it is
    /// let in before a worker that came after it.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_lease_that_waited_its_poll_keeps_its_place() {
        let line = Admission::new(1);
        let held = line.enter_now();
        assert_eq!(line.enter_in_turn(1, LEASE_POLL).await.err(), Some(StillInLine));
        assert_eq!(line.load(), (1, 0), "it left the line's waiting calls");
        // Worker 2 comes and waits; worker 1 asks again after it.
        let order = Arc::new(Mutex::new(Vec::new()));
        let ask = |w: i64| {
            let (line, order) = (line.clone(), order.clone());
            tokio::spawn(async move {
                let entered = line.enter_in_turn(w, LEASE_POLL).await.is_ok();
                locked_vec(&order).push(w);
                entered
            })
        };
        let second = ask(2);
        until_waiting(&line, 1).await;
        let first = ask(1);
        until_waiting(&line, 2).await;
        drop(held);
        assert!(first.await.unwrap() && second.await.unwrap());
        assert_eq!(
            *locked_vec(&order),
            vec![1, 2],
            "worker 1 first, from its old place"
        );
        assert_eq!(line.load(), (0, 0));
        // Let in, it has no place left: past PLACE_KEPT, none of the others either.
        tokio::time::advance(PLACE_KEPT).await;
        let _ = line
            .enter_in_turn(3, LEASE_POLL)
            .await
            .expect("a free line lets in at once");
        assert!(locked(&line.state).places.is_empty());
    }

    /// Reports are let in past the cap; leases wait until the calls served
    /// are under it again.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn reports_are_never_held_and_leases_wait_for_them() {
        let line = Admission::new(1);
        let a = line.enter_now();
        let b = line.enter_now();
        assert_eq!(line.load(), (2, 0));
        let lease = {
            let line = line.clone();
            tokio::spawn(async move { line.enter_in_turn(4, LEASE_POLL).await.map(|(_, waited)| waited) })
        };
        until_waiting(&line, 1).await;
        drop(a);
        // Still one report served: the lease keeps waiting.
        tokio::task::yield_now().await;
        assert_eq!(line.load(), (1, 1));
        tokio::time::advance(Duration::from_secs(3)).await;
        drop(b);
        let waited = lease.await.unwrap().expect("let in once the reports ended");
        assert!(waited >= Duration::from_secs(3), "{waited:?}");
        assert_eq!(line.load(), (0, 0));
    }

    /// A stopping server answers its waiting leases at once, and lets no
    /// lease wait after.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn closing_the_line_answers_every_waiting_lease_at_once() {
        let line = Admission::new(1);
        let held = line.enter_now();
        let waiting = {
            let line = line.clone();
            tokio::spawn(async move {
                let asked = Instant::now();
                (line.enter_in_turn(1, LEASE_POLL).await.err(), asked.elapsed())
            })
        };
        until_waiting(&line, 1).await;
        line.close();
        assert_eq!(waiting.await.unwrap(), (Some(StillInLine), Duration::ZERO));
        assert_eq!(line.enter_in_turn(2, LEASE_POLL).await.err(), Some(StillInLine));
        drop(held);
        assert_eq!(line.load(), (0, 0));
    }

    /// A lease whose caller goes away while it waits gives up its turn: the
    /// slot goes to the next, and none is lost.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_lease_dropped_while_waiting_loses_no_slot() {
        let line = Admission::new(1);
        let held = line.enter_now();
        let gone = ask(&line, 1);
        let next = ask(&line, 2);
        until_waiting(&line, 2).await;
        gone.abort();
        assert!(gone.await.is_err(), "aborted");
        assert_eq!(line.load(), (1, 1));
        drop(held);
        assert!(next.await.unwrap());
        assert_eq!(line.load(), (0, 0));
        // And a lease let in whose caller went away before it ran: the slot
        // it was sent comes back.
        let held = line.enter_now();
        let never_ran = ask(&line, 3);
        until_waiting(&line, 1).await;
        drop(held);
        assert_eq!(line.load(), (1, 0), "sent its slot");
        never_ran.abort();
        assert!(never_ran.await.is_err(), "aborted before it ran again");
        assert_eq!(line.load(), (0, 0));
    }

    /// Yields until `n` leases are asking, in line or behind their worker's
    /// call in line.
    async fn until_asking(line: &Admission, n: usize) {
        let asking = || {
            let s = locked(&line.state);
            s.turns.values().map(|t| Arc::strong_count(t) - 1).sum::<usize>()
        };
        while asking() < n {
            tokio::task::yield_now().await;
        }
    }

    /// The attack: a worker opens five lease calls at once, ahead of two
    /// others. Its calls stand in line one at a time, each at the back when the
    /// one before it was let in, so it gets one turn before the others, not five.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_worker_with_many_calls_at_once_takes_one_turn_at_a_time() {
        let line = Admission::new(1);
        let held = line.enter_now();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for w in [1_i64, 1, 1, 1, 1, 2, 3] {
            tasks.push(let_in_in_order(&line, &order, w));
            until_asking(&line, tasks.len()).await;
        }
        assert_eq!(
            line.load(),
            (1, 3),
            "one call of worker 1 in line, and workers 2 and 3"
        );
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*locked_vec(&order), vec![1, 2, 3, 1, 1, 1, 1]);
        assert_eq!(line.load(), (0, 0));
        assert!(locked(&line.state).turns.is_empty(), "no turn left behind");
    }

    /// A call waiting behind its worker's call in line is answered "ask again"
    /// when its poll runs out, like one in line.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_call_behind_its_workers_call_in_line_ends_with_its_poll() {
        let line = Admission::new(1);
        let held = line.enter_now();
        let first = ask(&line, 1);
        until_asking(&line, 1).await;
        let behind = line.enter_in_turn(1, LEASE_POLL / 2).await;
        assert_eq!(behind.err(), Some(StillInLine));
        drop(held);
        assert!(first.await.unwrap());
        assert!(locked(&line.state).turns.is_empty());
    }
}
