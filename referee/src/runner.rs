//! Plays many games on a few threads: what `referee match`, `ladder tournament` and
//! `ladder sprt` share.
//!
//! Each thread takes the next few mirrored groups (the jobs of one
//! `pairing.group` come one after another) and plays them in waves, rotation by
//! rotation, sending each record back; the caller's thread hands the records to a sink in
//! batches of whatever has arrived (one database transaction per batch, say). When
//! the sink says stop, no new game starts and the games in flight are finished and
//! dropped.
//!
//! Mirrored games deal the same dice, so a bot must learn nothing in one rotation
//! that a process of it in another rotation could use. On one machine that cannot
//! be promised of programs one did not write: a kernel keeps state that outlives a
//! process (its page cache, say), so whatever saw one rotation can leave word for
//! the next. So the callers deal each rotation its own seed unless the bots are
//! trusted (`--sandbox none`, or `--trusted-bots`), and then mirrored groups are
//! played in waves: the first rotation of each of a few groups, every process
//! quit, then the second of each, and so on, so at least no process of the run
//! lives from one rotation of a group into another. Groups dealt a seed per
//! rotation keep their processes throughout ([`BotPool`]).

use crate::clock::Limits;
use crate::game::{GameSetup, LogPlace, SeatSetup, play_game_in};
use crate::pool::BotPool;
use crate::record::GameRecord;
use engine::SetupError;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

/// One game to play, and what the sink needs to know about it.
#[derive(Debug, Clone)]
pub struct GameJob<T> {
    /// The game.
    pub setup: GameSetup,
    /// Who plays each seat.
    pub seats: Vec<SeatSetup>,
    /// Where the bots' stderr logs go.
    pub logs: LogPlace,
    /// The caller's own tag (group and rotation, ids to store).
    pub tag: T,
}

/// A played game (or a setup the game refused), with its job's tag.
#[derive(Debug)]
pub struct Finished<T> {
    /// The job's tag.
    pub tag: T,
    /// The record.
    pub result: Result<GameRecord, SetupError>,
}

/// [`run_games`] with `then` run on each game's own thread before its result goes
/// to the sink: work per record that would otherwise queue up on the sink's one
/// thread (serializing records for the database, say).
pub fn run_games_then<T: Send, R: Send>(
    options: RunOptions,
    limits: &Limits,
    job: impl Fn(u64) -> Option<GameJob<T>> + Sync,
    then: impl Fn(Finished<T>) -> R + Sync,
    mut sink: impl FnMut(Vec<R>) -> ControlFlow<()>,
) {
    let next = Mutex::new(0u64);
    // The sink's break; with the caller's own flag, what stops new games.
    let halt = AtomicBool::new(false);
    let outside = options.stop.clone();
    let stopped =
        || halt.load(Ordering::Relaxed) || outside.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
    let (tx, rx) = mpsc::channel::<R>();
    std::thread::scope(|scope| {
        for _ in 0..options.threads.max(1) {
            let (tx, next, stopped, job, then) = (tx.clone(), &next, &stopped, &job, &then);
            let keep_bots = options.keep_bots;
            scope.spawn(move || {
                let mut pool = BotPool::new(keep_bots);
                let play = |j: GameJob<T>, pool: &mut BotPool| {
                    let result = play_game_in(&j.setup, &j.seats, limits, &j.logs, pool);
                    tx.send(then(Finished { tag: j.tag, result })).is_ok()
                };
                while !stopped() {
                    // Each group's games left, and whether no process may play
                    // two of them.
                    let mut groups: Vec<(bool, std::vec::IntoIter<GameJob<T>>)> = Vec::new();
                    while groups.len() < GROUPS_PER_WAVE {
                        let group = claim_group(next, job);
                        if group.is_empty() {
                            break;
                        }
                        groups.push((mirrored_with_processes(&group), group.into_iter()));
                    }
                    if groups.is_empty() {
                        return;
                    }
                    for wave in 0.. {
                        if groups.iter().all(|(_, g)| g.len() == 0) {
                            break;
                        }
                        // No process of this run lives from one rotation of a
                        // mirrored group into the next.
                        if wave > 0 && groups.iter().any(|(apart, g)| *apart && g.len() > 0) {
                            pool.quit_all();
                        }
                        for j in groups.iter_mut().filter_map(|(_, g)| g.next()) {
                            if stopped() || !play(j, &mut pool) {
                                return;
                            }
                        }
                    }
                }
            });
        }
        drop(tx);
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            while batch.len() < options.batch.max(1) {
                match rx.try_recv() {
                    Ok(x) => batch.push(x),
                    Err(_) => break,
                }
            }
            if sink(batch).is_break() {
                halt.store(true, Ordering::Relaxed);
                // Let the threads finish their games and leave.
                while rx.recv().is_ok() {}
                break;
            }
        }
    });
}

/// Groups a thread claims at a time and plays in waves: the first game of each,
/// then the second of each, and so on. Between the waves of mirrored groups a
/// bot's processes are quit, so they are started about once per wave rather than
/// once per group.
const GROUPS_PER_WAVE: usize = 8;

/// Whether a group's games deal the same dice (one seed) and seat a process:
/// then no process may play two of them.
fn mirrored_with_processes<T>(group: &[GameJob<T>]) -> bool {
    let Some(first) = group.first() else {
        return false;
    };
    group.len() > 1
        && group.iter().all(|j| j.setup.seed == first.setup.seed)
        && group.iter().any(|j| j.seats.iter().any(SeatSetup::is_process))
}

/// The next jobs from `next` on that form one mirrored group (one job, if it has
/// no pairing), in order; empty when the jobs have run out.
fn claim_group<T>(next: &Mutex<u64>, job: &impl Fn(u64) -> Option<GameJob<T>>) -> Vec<GameJob<T>> {
    let mut k = next.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(first) = job(*k) else {
        return Vec::new();
    };
    *k += 1;
    let group = first.setup.pairing.map(|p| p.group);
    let mut games = vec![first];
    if group.is_some() {
        // A job of another group is made again by whoever claims it next.
        while let Some(j) = job(*k).filter(|j| j.setup.pairing.map(|p| p.group) == group) {
            games.push(j);
            *k += 1;
        }
    }
    games
}

/// How to run the games.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Set (by a Ctrl-C handler, say) to start no new game: the games under way
    /// finish and go to the sink.
    pub stop: Option<Arc<AtomicBool>>,
    /// Games at once (threads).
    pub threads: usize,
    /// Keep bot processes between games (else one process per game).
    pub keep_bots: bool,
    /// At most this many records per call of the sink.
    pub batch: usize,
}

/// Plays job 0, 1, 2, … (`job(k)` gives job `k`, `None` after the last; the jobs
/// of a mirrored group come one after another, in rotation order) on
/// `options.threads` threads, a few groups at a time per thread in waves, and calls `sink` on
/// this thread with the finished games, in batches of whatever has arrived, until
/// the jobs run out or the sink says [`ControlFlow::Break`].
pub fn run_games<T: Send>(
    options: RunOptions,
    limits: &Limits,
    job: impl Fn(u64) -> Option<GameJob<T>> + Sync,
    sink: impl FnMut(Vec<Finished<T>>) -> ControlFlow<()>,
) {
    run_games_then(options, limits, job, |finished| finished, sink);
}
