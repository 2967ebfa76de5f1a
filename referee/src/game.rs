//! Runs one game between players and writes its record.

use crate::clock::{Limits, SeatClock, TimeControl};
use crate::fault::{Fault, FaultKind, last_chars};
use crate::player::{Pending, Player, collect};
pub use crate::pool::BotPool;
use crate::record::{
    FAULT_DETAIL_KEPT, FaultRecord, GameRecord, MoveRecord, RECORD_SCHEMA, SeatPrivateLog, SeatRecord,
    final_outcome,
};
use crate::session::{Ask, ClockFields, GameOver, Reply, Table};
use crate::session::{INFO_CHARS_KEPT, INFO_LINES_KEPT};
pub use crate::setup::{GameSetup, LogPlace, SeatSetup, create_game};
use crate::text::{capped, json_len};
use engine::{AnyGame, SeatSet, SetupError};
use std::time::{Duration, Instant};

/// Plays one game to its end and returns its record. Bot faults end in the record,
/// never in an error: a two-seat game ends at the first fault (the faulted seat
/// loses); with more seats the faulted seat is ranked last and the referee plays its
/// first legal move for it from then on. Runs on the calling thread; every bot is
/// started for this game and quit at its end.
///
/// # Errors
/// Only a setup the game refuses.
pub fn play_game(
    setup: &GameSetup,
    seats: &[SeatSetup],
    limits: &Limits,
    logs: &LogPlace,
) -> Result<GameRecord, SetupError> {
    play_game_in(setup, seats, limits, logs, &mut BotPool::fresh())
}

/// [`play_game`], taking bot processes from `pool` where it has them and giving
/// back every process that ends the game without a fault.
///
/// # Errors
/// Only a setup the game refuses.
pub fn play_game_in(
    setup: &GameSetup,
    seats: &[SeatSetup],
    limits: &Limits,
    logs: &LogPlace,
    pool: &mut BotPool,
) -> Result<GameRecord, SetupError> {
    play_game_logged(setup, seats, limits, logs, pool).map(|(rec, _)| rec)
}

/// [`play_game_in`], and what each seat's author may read of the game and no one
/// else: the end of its stderr (with [`LogPlace::author_tail`]) and the private
/// part of its faults, by seat.
///
/// # Errors
/// Only a setup the game refuses.
pub fn play_game_logged(
    setup: &GameSetup,
    seats: &[SeatSetup],
    limits: &Limits,
    logs: &LogPlace,
    pool: &mut BotPool,
) -> Result<(GameRecord, Vec<SeatPrivateLog>), SetupError> {
    let mut game = create_game(setup, seats.len())?;
    let options = game.options().to_vec();
    let mut run = GameRun::seat_players(game.as_ref(), &options, setup, seats, limits, logs, pool);
    let in_play = GamesInPlay::enter();
    let play_start = Instant::now();
    loop {
        let to_act = game.to_act();
        if to_act.is_empty() || run.stopped() {
            break;
        }
        run.hand_cpu(to_act);
        let answers = run.ask(game.as_ref(), &options, to_act, limits);
        let Some(public) = run.apply(game.as_mut(), to_act, answers, limits) else {
            break;
        };
        run.tell(&public);
        // Wake the seats that decide next with what they were just told, rather than
        // with their request: a sleeping bot's core can take longer to wake than the
        // request takes to write, and this way both happen at once. Only while a core
        // is to spare: when every core is busy, the extra wake-up is pure cost.
        if in_play.core_to_spare() {
            run.send_events_early(game.to_act());
        }
    }
    let play_us = play_start.elapsed().as_micros() as u64;
    Ok(run.finish(setup, seats, game.as_ref(), options, play_us, limits, pool))
}

/// One game in play: its players and what has happened so far.
struct GameRun {
    players: Vec<Option<Player>>,
    /// The name each seat's record shows.
    names: Vec<String>,
    faults: Vec<FaultRecord>,
    clocks: Vec<SeatClock>,
    /// Each seat's time control: its own, else the game's.
    tcs: Vec<TimeControl>,
    moves: Vec<MoveRecord>,
    /// Bytes of `info` each seat may still have kept in this game's record.
    info_left: Vec<usize>,
    /// Each seat's public name, if it is shown by one: its faults are recorded
    /// without their private part.
    shown_as: Vec<Option<String>>,
    /// What `gameover` tells every seat of the first fault: its public part only,
    /// whoever owns the bots.
    first_fault: Option<String>,
    /// The end of each seat's stderr in this game, where its author gets it.
    tails: Vec<Option<crate::transport::SharedTail>>,
    /// The private part of each seat's faults, for its author.
    private_faults: Vec<Vec<String>>,
}

impl GameRun {
    /// Seats the players: each told `newgame` and checked, taken from `pool` where
    /// it has a kept process. A seat that cannot start is charged a fault at move 0.
    fn seat_players(
        game: &dyn AnyGame,
        options: &[String],
        game_setup: &GameSetup,
        seats: &[SeatSetup],
        limits: &Limits,
        logs: &LogPlace,
        pool: &mut BotPool,
    ) -> GameRun {
        let n = seats.len();
        let rotation = game_setup.pairing.map_or(0, |p| p.rotation);
        let mut run = GameRun {
            players: Vec::with_capacity(n),
            names: Vec::with_capacity(n),
            faults: Vec::new(),
            clocks: seats
                .iter()
                .map(|s| SeatClock::new(&s.tc.unwrap_or(limits.tc)))
                .collect(),
            tcs: seats.iter().map(|s| s.tc.unwrap_or(limits.tc)).collect(),
            moves: Vec::new(),
            info_left: vec![INFO_BYTES_PER_GAME; n],
            shown_as: seats.iter().map(|s| s.shown_as.clone()).collect(),
            first_fault: None,
            tails: Vec::with_capacity(n),
            private_faults: vec![Vec::new(); n],
        };
        for (seat, setup) in seats.iter().enumerate() {
            let table = Table {
                game: game.info().id,
                seats: n,
                seat,
                options,
                bot_salt: bot_salt(game_setup.seed, rotation, n, seat),
            };
            let stderr_to = logs.stderr_to(seat);
            run.tails.push(stderr_to.tail.clone());
            match pool.ready_player(setup, &table, limits, stderr_to) {
                Ok(p) => {
                    run.names.push(capped(&p.name(), NAME_KEPT));
                    run.players.push(Some(p));
                }
                Err((name, f)) => {
                    run.names.push(capped(&name, NAME_KEPT));
                    run.charge(seat, f, None);
                    run.players.push(None);
                }
            }
        }
        run
    }

    /// Records a fault of `seat`, at a move or (`None`) in setup.
    fn charge(&mut self, seat: usize, fault: Fault, at_move: Option<usize>) {
        let fault = if let Some(bot) = &self.shown_as[seat] {
            // The host's own log and the bot's author keep what the record does not.
            if !fault.private.is_empty() {
                self.private_faults[seat].push(capped(
                    &format!("{}: {}{}", fault.kind, fault.detail, fault.private),
                    FAULT_DETAIL_KEPT,
                ));
                if fault.kind == FaultKind::Spawn {
                    tracing::warn!(seat, bot, "{fault}");
                } else {
                    tracing::info!(seat, bot, "{fault}");
                }
            }
            fault.without_private()
        } else {
            fault
        };
        self.first_fault.get_or_insert_with(|| {
            capped(
                &format!("seat {seat} {}: {}", fault.kind, fault.detail),
                FAULT_DETAIL_KEPT,
            )
        });
        self.faults.push(match at_move {
            Some(at) => FaultRecord::new(seat, &fault, at),
            None => FaultRecord::in_setup(seat, &fault),
        });
    }

    /// Before anyone is asked: every bot process not to act is frozen, its whole
    /// tree, and seen to have stopped (so a seat that answered cannot think, or
    /// run helpers, on its opponent's time). A text session freezes its bot as
    /// soon as it replies, so the tree stops while the referee works, and thaws
    /// it after writing its next request (one wake-up, with the request there).
    /// A seat already in the state it needs costs nothing.
    fn hand_cpu(&mut self, to_act: SeatSet) {
        let until = Instant::now() + FREEZE_WAIT;
        for (seat, p) in self.players.iter_mut().enumerate() {
            if let Some(p) = p.as_mut()
                && !to_act.contains(seat)
            {
                p.pause();
            }
        }
        for (seat, p) in self.players.iter_mut().enumerate() {
            if let Some(p) = p.as_mut()
                && !to_act.contains(seat)
                && !p.wait_paused(until)
            {
                tracing::warn!(
                    seat,
                    "a bot's processes were not all frozen within {FREEZE_WAIT:?}"
                );
            }
        }
    }

    /// Whether the game stops before its end: a two-seat game stops at its first
    /// fault.
    fn stopped(&self) -> bool {
        self.players.len() == 2 && !self.faults.is_empty()
    }

    /// Asks every seat that must decide, and collects the answers (`None` for a seat
    /// that faulted earlier). Bots that think elsewhere are asked first, so they
    /// think while in-process bots and people answer; then all are awaited at once.
    fn ask(
        &mut self,
        game: &dyn AnyGame,
        options: &[String],
        to_act: SeatSet,
        limits: &Limits,
    ) -> Vec<Option<Result<Reply, Fault>>> {
        let mut answers: Vec<Option<Result<Reply, Fault>>> = (0..self.players.len()).map(|_| None).collect();
        let mut text = Vec::new();
        let mut grpc = Vec::new();
        // A gRPC call is driven by this thread when it is the step's only request;
        // beside others it is handed at once to its session's keeper thread.
        let several = to_act.iter().filter(|&s| self.players[s].is_some()).count() > 1;
        for elsewhere in [true, false] {
            for seat in to_act.iter() {
                let Some(p) = self.players[seat].as_mut() else {
                    continue;
                };
                if p.thinks_elsewhere() != elsewhere {
                    continue;
                }
                let clock = &self.clocks[seat];
                let ask = Ask {
                    game,
                    options,
                    seat,
                    clock: clock_fields(clock, &self.tcs[seat]),
                    deadline: Instant::now() + clock.allowance(&self.tcs[seat]) + limits.margin,
                };
                match p.ask(&ask) {
                    Pending::Text(asked) => text.push((seat, asked)),
                    Pending::Grpc(mut asked) => {
                        if several {
                            asked.start_elsewhere();
                        }
                        grpc.push((seat, asked));
                    }
                    Pending::Done(r) => answers[seat] = Some(r),
                }
            }
        }
        let replies = collect(&mut self.players, &mut text);
        for ((seat, _), r) in text.iter().zip(replies) {
            answers[*seat] = Some(r);
        }
        // Calls started elsewhere ran meanwhile and timed themselves.
        for (seat, asked) in grpc {
            answers[seat] = Some(asked.wait());
        }
        answers
    }

    /// Plays the answers in seat order, so the result never depends on who was
    /// quicker; a seat that fails goes to the fault policy. Returns the public moves
    /// to tell, or `None` when the game stops.
    fn apply(
        &mut self,
        game: &mut dyn AnyGame,
        to_act: SeatSet,
        mut answers: Vec<Option<Result<Reply, Fault>>>,
        limits: &Limits,
    ) -> Option<Vec<(usize, String)>> {
        let mut public = Vec::new();
        for seat in to_act.iter() {
            let fault = match answers[seat].take() {
                None => None, // a seat that faulted earlier
                Some(Ok(reply)) => match game.play(seat, &reply.mv) {
                    Ok(is_public) => {
                        self.clocks[seat].charge(&self.tcs[seat], reply.elapsed);
                        self.moves.push(MoveRecord {
                            seat,
                            mv: reply.mv.clone(),
                            ms: reply.elapsed.as_millis() as u64,
                            us: reply.elapsed.as_micros() as u64,
                            fallback: false,
                            info: keep_info(reply.info, &mut self.info_left[seat]),
                        });
                        if is_public {
                            public.push((seat, reply.mv));
                        }
                        continue;
                    }
                    Err(e) => Some(Fault::new(FaultKind::Illegal, e.to_string())),
                },
                Some(Err(f)) => Some(f),
            };
            if !self.fault_policy(game, seat, fault, limits) {
                return None;
            }
        }
        Some(public)
    }

    /// A seat that did not play: its fault is recorded and its player retired. Two
    /// seats: the game stops (returns false). Three or more: the referee plays the
    /// seat's first legal move (recorded as a fallback) and the game goes on.
    fn fault_policy(
        &mut self,
        game: &mut dyn AnyGame,
        seat: usize,
        fault: Option<Fault>,
        limits: &Limits,
    ) -> bool {
        if let Some(f) = fault {
            self.charge(seat, f, Some(self.moves.len()));
            if let Some(p) = self.players[seat].take() {
                p.shutdown(limits.quit_grace);
            }
        }
        if self.players.len() == 2 {
            return false;
        }
        let Some(mv) = game.legal_moves(seat).into_iter().next() else {
            return false;
        };
        if game.play(seat, &mv).is_err() {
            return false;
        }
        self.moves.push(MoveRecord {
            seat,
            mv,
            ms: 0,
            us: 0,
            fallback: true,
            info: Vec::new(),
        });
        true
    }

    /// Tells every other seat the public moves just played.
    fn tell(&mut self, public: &[(usize, String)]) {
        for (seat, mv) in public {
            for (other, p) in self.players.iter_mut().enumerate() {
                if other != *seat
                    && let Some(p) = p.as_mut()
                {
                    p.played(*seat, mv);
                }
            }
        }
    }

    /// Sends the queued events of the seats that decide next now.
    fn send_events_early(&mut self, next: SeatSet) {
        for seat in next.iter() {
            if let Some(p) = self.players[seat].as_mut() {
                p.flush_events();
            }
        }
    }

    /// Ends the game: the outcome (faults included), `gameover` to every player,
    /// the clean processes back to the pool, and the record.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        self,
        setup: &GameSetup,
        seats: &[SeatSetup],
        game: &dyn AnyGame,
        options: Vec<String>,
        play_us: u64,
        limits: &Limits,
        pool: &mut BotPool,
    ) -> (GameRecord, Vec<SeatPrivateLog>) {
        let n = seats.len();
        let (outcome, termination) = final_outcome(n, game.outcome().as_ref(), &self.faults);
        let over = GameOver {
            ranks: outcome.ranks.clone(),
            scores: outcome.scores.clone(),
            reason: termination.to_string(),
            detail: self.first_fault.clone(),
        };
        let mut late = vec![(0u64, 0u64); n];
        let mut back = Vec::new();
        for (seat, p) in self.players.into_iter().enumerate() {
            let Some(mut p) = p else { continue };
            p.settle_stderr();
            p.game_over(&over);
            late[seat] = p.discarded_replies();
            let clean = !self.faults.iter().any(|f| f.seat == seat);
            back.push((seats[seat].clone(), p, clean));
        }
        pool.give_back(back, limits);
        let private = self
            .private_faults
            .into_iter()
            .enumerate()
            .map(|(seat, faults)| {
                let (stderr, stderr_dropped) = self
                    .tails
                    .get(seat)
                    .and_then(Option::as_ref)
                    .and_then(|t| t.lock().ok().map(|t| t.text()))
                    .unwrap_or_default();
                SeatPrivateLog {
                    stderr,
                    stderr_dropped,
                    faults,
                }
            })
            .collect();
        let record = GameRecord {
            schema: RECORD_SCHEMA,
            engine: engine::ENGINE_VERSION.to_owned(),
            game: game.info().id.to_owned(),
            options,
            seed: setup.seed,
            start_position: setup.position.clone(),
            seats: seats
                .iter()
                .zip(self.names)
                .zip(late)
                .map(|((s, name), (late_replies, early_replies))| SeatRecord {
                    name,
                    spec: if s.shown_as.is_some() {
                        String::new()
                    } else {
                        s.spec.to_string()
                    },
                    entrant: s.shown_as.clone(),
                    artifact: s.artifact.clone(),
                    late_replies,
                    early_replies,
                })
                .collect(),
            pairing: setup.pairing,
            moves: self.moves,
            faults: self.faults,
            termination,
            outcome,
            final_position: game.position(),
            play_us,
        };
        (record, private)
    }
}

/// How long freezing a seat's processes may take before its opponent is asked
/// anyway: a tree stops within microseconds, each process at its next entry to
/// the kernel or the interrupt sent to its core.
const FREEZE_WAIT: Duration = Duration::from_millis(20);

/// Longest bot name kept in a record, in bytes (a bot names itself).
pub const NAME_KEPT: usize = 64;

/// Most `info` a seat gets kept in one game's record, in bytes as JSON: with
/// [`crate::record::FAULT_DETAIL_KEPT`], [`NAME_KEPT`] and the moves themselves, what
/// keeps any game's record, and so any group's report to a ladder, small whatever a
/// bot sends (`docs/security.md` has the sum).
pub const INFO_BYTES_PER_GAME: usize = 16 * 1024;

/// The `info` lines of one reply that are kept: at most [`INFO_LINES_KEPT`], each
/// its last [`INFO_CHARS_KEPT`] bytes, while the seat's budget for the game lasts.
fn keep_info(lines: Vec<String>, left: &mut usize) -> Vec<String> {
    let mut kept = Vec::new();
    for line in lines.into_iter().take(INFO_LINES_KEPT) {
        let line = if line.len() > INFO_CHARS_KEPT {
            last_chars(&line, INFO_CHARS_KEPT).to_owned()
        } else {
            line
        };
        // The quotes and the comma around it in the record.
        let cost = json_len(&line) + 3;
        if cost > *left {
            break;
        }
        *left -= cost;
        kept.push(line);
    }
    kept
}

/// The time fields of a seat's request.
fn clock_fields(clock: &SeatClock, tc: &TimeControl) -> ClockFields {
    ClockFields {
        time_ms: clock.remaining(tc).map(|d| d.as_millis() as u64),
        inc_ms: match tc {
            TimeControl::Clock { inc, .. } => Some(inc.as_millis() as u64),
            TimeControl::MoveTime(_) => None,
        },
        movetime_ms: match tc {
            TimeControl::MoveTime(t) => Some(t.as_millis() as u64),
            TimeControl::Clock { .. } => None,
        },
    }
}

/// Games being played by this process right now, to tell whether a core is idle.
static GAMES_IN_PLAY: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One game counted in [`GAMES_IN_PLAY`] while this lives.
struct GamesInPlay;

impl GamesInPlay {
    fn enter() -> GamesInPlay {
        GAMES_IN_PLAY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        GamesInPlay
    }

    /// Whether this process plays fewer games than the machine has cores (each
    /// game keeps about one core busy: its thread, then its bot).
    fn core_to_spare(&self) -> bool {
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        GAMES_IN_PLAY.load(std::sync::atomic::Ordering::Relaxed) < cores
    }
}

impl Drop for GamesInPlay {
    fn drop(&mut self) {
        GAMES_IN_PLAY.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The salt of a bot's randomness at `seat` of rotation `rotation` (of a group of
/// `seats`-seat games) with `seed`: a one-way function of all three (word
/// `rotation × seats + seat` of a ChaCha stream keyed apart from the dice's), so
/// no two games of a mirrored group salt any seat alike (a salt seen in one
/// rotation says nothing of being in the other), a match replays the same, and
/// nothing about the dice can be read back from it. Rotation 0 salts as games
/// without a group do.
fn bot_salt(seed: u64, rotation: usize, seats: usize, seat: usize) -> u64 {
    const BOT_SALT_KEY: u64 = 0x6a09_e667_f3bc_c908; // keeps the stream apart from the dice's
    let mut rng = engine::GameRng::from_seed(seed ^ BOT_SALT_KEY);
    let mut salt = rng.next_u64();
    for _ in 0..rotation * seats + seat {
        salt = rng.next_u64();
    }
    salt
}

#[cfg(test)]
mod tests {
    use super::bot_salt;

    /// A kept process recognised a group it had seen by the salt, which was the
    /// same for a seat in every rotation: now no two games of a group salt any
    /// seat alike, and a game without a group salts as rotation 0.
    #[test]
    fn every_seat_of_every_rotation_of_a_group_has_its_own_salt() {
        for seats in 2..=4 {
            let mut seen = std::collections::HashSet::new();
            for rotation in 0..seats {
                for seat in 0..seats {
                    assert!(
                        seen.insert(bot_salt(42, rotation, seats, seat)),
                        "{seats} {rotation} {seat}"
                    );
                }
            }
        }
        assert_ne!(bot_salt(42, 0, 2, 0), bot_salt(43, 0, 2, 0));
        // Pinned: rotation 0 keeps the salts games have always had.
        assert_eq!(bot_salt(42, 0, 2, 1), bot_salt(42, 0, 3, 1));
    }
}
