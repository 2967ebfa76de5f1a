//! Plays many games on a few threads: what `referee match`, `ladder tournament` and
//! `ladder sprt` share.
//!
//! Each thread takes the next job, plays it with bot processes kept between its
//! games (a [`BotPool`] per thread and rotation: a process plays one game at a
//! time, and never two games of one mirrored group), and sends
//! the record back; the caller's thread hands the records to a sink in batches of
//! whatever has arrived (one database transaction per batch, say). When the sink
//! says stop, no new game starts and the games in flight are finished and dropped.

use crate::clock::Limits;
use crate::game::{GameSetup, LogPlace, SeatSetup, play_game_in};
use crate::pool::BotPool;
use crate::record::GameRecord;
use engine::SetupError;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

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
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<R>();
    std::thread::scope(|scope| {
        for _ in 0..options.threads.max(1) {
            let (tx, next, stop, job, then) = (tx.clone(), &next, &stop, &job, &then);
            scope.spawn(move || {
                let mut pools: Vec<BotPool> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let Some(j) = job(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    // A pool per rotation: no process plays two games of one
                    // mirrored group (the second would replay dice it has seen).
                    let rotation = j.setup.pairing.map_or(0, |p| p.rotation);
                    while pools.len() <= rotation {
                        pools.push(BotPool::new(options.keep_bots));
                    }
                    let result = play_game_in(&j.setup, &j.seats, limits, &j.logs, &mut pools[rotation]);
                    if tx.send(then(Finished { tag: j.tag, result })).is_err() {
                        return;
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
                stop.store(true, Ordering::Relaxed);
                // Let the threads finish their games and leave.
                while rx.recv().is_ok() {}
                break;
            }
        }
    });
}

/// How to run the games.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// Games at once (threads).
    pub threads: usize,
    /// Keep bot processes between games (else one process per game).
    pub keep_bots: bool,
    /// At most this many records per call of the sink.
    pub batch: usize,
}

/// Plays job 0, 1, 2, … (`job(k)` gives job `k`, `None` after the last) on
/// `options.threads` threads, and calls `sink` on this thread with the finished
/// games, in batches of whatever has arrived, until the jobs run out or the sink
/// says [`ControlFlow::Break`].
pub fn run_games<T: Send>(
    options: RunOptions,
    limits: &Limits,
    job: impl Fn(u64) -> Option<GameJob<T>> + Sync,
    sink: impl FnMut(Vec<Finished<T>>) -> ControlFlow<()>,
) {
    run_games_then(options, limits, job, |finished| finished, sink);
}
