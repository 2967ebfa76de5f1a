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
//! that a process of it in another rotation could use: two rotations of a group
//! never run at the same time, and every process that played one rotation has
//! exited before the next starts (two live processes of a bot can always signal
//! each other, through file locks on files every sandbox shares if nothing else).
//! Processes are kept within a wave (a rotation of several groups, so still never in
//! two rotations of one group), and from a wave's last rotation into the next
//! wave's first ([`BotPool`]). Between waves, the machine's rotation gate waits for
//! a moment when no bot process lives anywhere on the machine
//! ([`BotPool::next_rotation`]): so not even a process of another thread or
//! another program carries a rotation's dice into the next.

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
                    let mut groups: Vec<std::vec::IntoIter<GameJob<T>>> = Vec::new();
                    while groups.len() < GROUPS_PER_WAVE {
                        let group = claim_group(next, job);
                        if group.is_empty() {
                            break;
                        }
                        groups.push(group.into_iter());
                    }
                    if groups.is_empty() {
                        return;
                    }
                    for wave in 0.. {
                        if wave > 0 {
                            if groups.iter().all(|g| g.len() == 0) {
                                break;
                            }
                            // Nothing of one rotation, on this machine, lives on
                            // into the next: where a seat is a process at all.
                            let processes = groups.iter().any(|g| {
                                g.as_slice()
                                    .iter()
                                    .any(|j| j.seats.iter().any(SeatSetup::is_process))
                            });
                            if !processes {
                                pool.quit_all();
                            } else if let Err(e) = pool.next_rotation() {
                                tracing::error!("not playing the next rotation: {e}");
                                return;
                            }
                        }
                        for j in groups.iter_mut().filter_map(Iterator::next) {
                            if stopped() || !play(j, &mut pool) {
                                return;
                            }
                        }
                        if wave == 0 {
                            // Until another thread or program waits to turn the
                            // gate, more groups' first rotations rather than
                            // waiting for it idle at the turn.
                            while groups.len() < MAX_GROUPS_PER_WAVE && !stopped() && !pool.turn_waiting() {
                                let mut group = claim_group(next, job).into_iter();
                                let Some(first) = group.next() else { break };
                                if !play(first, &mut pool) {
                                    return;
                                }
                                groups.push(group);
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
/// then (every process quit) the second of each, and so on. A bot's processes are
/// started about once per wave rather than once per group, and still no process
/// lives from one rotation of a group into another.
const GROUPS_PER_WAVE: usize = 8;

/// Most groups a wave grows to while no turn of the machine's rotation gate is
/// waiting: a thread that finished its wave before the others plays more first
/// rotations instead of waiting for them at the turn (which must wait for every
/// bot process on the machine). Measured in docs/ladder.md, "What this costs".
const MAX_GROUPS_PER_WAVE: usize = 64;

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
