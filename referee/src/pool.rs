//! Bot processes kept from one game to the next.

use crate::clock::Limits;
use crate::fault::Fault;
use crate::player::Player;
use crate::session::Table;
use crate::setup::SeatSetup;
use crate::transport::StderrTo;
use std::time::Duration;

/// Bot processes kept from one game to the next, as fastchess and cutechess keep
/// engines: a process that ends a game without a fault plays its entrant's next
/// game on the same thread, told `newgame` and checked with `isready` as a new one
/// would be, instead of a new process being spawned and shaken hands with (which
/// costs more than a whole fast game). Only processes are kept: built-in bots start
/// afresh for every game (so a game with them depends only on its seed), gRPC
/// servers keep their own sessions, and people are never pooled. Dropping the pool
/// quits and reaps what it holds. A kept process waits frozen (where the machine
/// freezes), so it spends no CPU between its games. Between two rotations of a
/// mirrored group of trusted bots its owner calls [`BotPool::quit_all`], so that
/// no process of one rotation plays the next; groups dealt a seed per rotation
/// keep their processes throughout.
#[derive(Debug)]
pub struct BotPool {
    keep: bool,
    /// The quit grace of the last game that gave a process back.
    grace: Duration,
    idle: Vec<(SeatSetup, Player)>,
    /// How long each process started since [`BotPool::started`] was last
    /// asked took from its start to its `newgame` answered.
    starts: Vec<Duration>,
}

impl BotPool {
    /// A pool that keeps nothing: every game starts its bots and quits them at its
    /// end.
    pub fn fresh() -> BotPool {
        BotPool::new(false)
    }

    /// A pool that keeps every bot process that ends a game cleanly.
    pub fn reusing() -> BotPool {
        BotPool::new(true)
    }

    /// [`BotPool::reusing`] if `keep`, else [`BotPool::fresh`].
    pub fn new(keep: bool) -> BotPool {
        BotPool {
            keep,
            grace: Limits::default().quit_grace,
            idle: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// How long each bot process started since the last call took from its
    /// start (its sandbox's included) to its first game's handshake; kept
    /// processes are not counted again.
    pub fn started(&mut self) -> std::vec::Drain<'_, Duration> {
        self.starts.drain(..)
    }

    /// Bot processes waiting for a game.
    pub fn idle(&self) -> usize {
        self.idle.len()
    }

    /// A player for `setup`, told `newgame` and checked: a process kept in the pool
    /// if it has one for this seat setup, else a new one. A kept process that cannot
    /// start another game (one that left after its last game, say) is replaced, not
    /// blamed. On failure, the name to record and the fault.
    pub(crate) fn ready_player(
        &mut self,
        setup: &SeatSetup,
        table: &Table<'_>,
        limits: &Limits,
        log: StderrTo,
    ) -> Result<Player, (String, Fault)> {
        if let Some(mut kept) = self.take(setup) {
            // Its CPU-time limit is per process, a backstop for one game: a process
            // that has used half of it starts afresh rather than die mid-game.
            let budget = Duration::from_secs(limits.sandbox.cpu_seconds / 2);
            if kept.cpu_used().is_some_and(|used| used >= budget) {
                tracing::debug!(bot = %setup.spec, "a kept bot used half its CPU-time limit; starting a new one");
                kept.shutdown(limits.quit_grace);
                return self.ready_player(setup, table, limits, log);
            }
            kept.prepare_next_game(log.clone());
            match kept.new_game(table, limits.ping) {
                Ok(()) => return Ok(kept),
                Err(f) => {
                    tracing::debug!(bot = %setup.spec, fault = %f, "a kept bot could not start another game; starting a new one");
                    kept.shutdown(limits.quit_grace);
                }
            }
        }
        let started = std::time::Instant::now();
        let mut player = Player::start(setup, limits, log).map_err(|f| (setup.unannounced_name(), f))?;
        match player.new_game(table, limits.ping) {
            Ok(()) => {
                // Bounded by its owner's reads (a worker reads it every game).
                if self.starts.len() < 1024 {
                    self.starts.push(started.elapsed());
                }
                Ok(player)
            }
            Err(f) => {
                let name = player.name();
                player.shutdown(limits.quit_grace);
                Err((name, f))
            }
        }
    }

    /// Takes back the players of a finished game: keeps each clean process if this
    /// pool keeps any, frozen until its next game, and quits the rest at once (one
    /// grace period for all).
    pub(crate) fn give_back(&mut self, players: Vec<(SeatSetup, Player, bool)>, limits: &Limits) {
        let mut quitting = Vec::new();
        for (setup, mut player, clean) in players {
            if self.keep && clean && player.is_keepable() {
                player.pause();
                self.grace = limits.quit_grace;
                self.idle.push((setup, player));
            } else {
                quitting.push(player);
            }
        }
        Player::shutdown_all(&mut quitting, limits.quit_grace);
    }

    /// Quits every kept player, and returns once each has exited with everything
    /// it started: between two rotations of a mirrored group, so that no process
    /// of one lives on into the other.
    pub fn quit_all(&mut self) {
        self.retain(|_| false);
    }

    /// Quits the kept players whose seat setup `wanted` refuses (a worker keeps
    /// only the bots of the group it plays next).
    pub fn retain(&mut self, wanted: impl Fn(&SeatSetup) -> bool) {
        let (keep, quit): (Vec<_>, Vec<_>) = self.idle.drain(..).partition(|(s, _)| wanted(s));
        self.idle = keep;
        let mut quitting = quit.into_iter().map(|(_, p)| p).collect();
        Player::shutdown_all(&mut quitting, self.grace);
    }

    /// A kept player started from exactly this seat setup, if any is still
    /// running (a bot that left after its game is reaped, not blamed).
    fn take(&mut self, seat: &SeatSetup) -> Option<Player> {
        while let Some(i) = self.idle.iter().position(|(s, _)| s == seat) {
            let (_, mut player) = self.idle.swap_remove(i);
            if !player.has_ended() {
                return Some(player);
            }
        }
        None
    }
}

impl Drop for BotPool {
    fn drop(&mut self) {
        let mut players = self.idle.drain(..).map(|(_, p)| p).collect();
        Player::shutdown_all(&mut players, self.grace);
    }
}
