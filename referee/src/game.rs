//! Runs one game between players and writes its record.

use crate::clock::{Limits, SeatClock, TimeControl};
use crate::fault::{Fault, FaultKind};
use crate::player::{Legal, MoveRequest, Observation, Pending, Player, Reply, collect};
use crate::record::{FaultRecord, GameRecord, MoveRecord, Pairing, RECORD_SCHEMA, SeatRecord, final_outcome};
use crate::spec::BotSpec;
use engine::{AnyGame, SetupError};
use proto::ToBot;
use std::path::PathBuf;
use std::time::Instant;

/// Which game to play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameSetup {
    /// Game id.
    pub game: String,
    /// Options, `key=value` each.
    pub options: Vec<String>,
    /// Seed.
    pub seed: u64,
    /// A starting position in the game's notation.
    pub position: Option<String>,
    /// Place in a mirrored match.
    pub pairing: Option<Pairing>,
}

/// Who plays a seat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatSetup {
    /// How to reach the bot.
    pub spec: BotSpec,
    /// Bot options to set.
    pub options: Vec<(String, String)>,
}

impl SeatSetup {
    /// A seat with no options.
    pub fn new(spec: BotSpec) -> SeatSetup {
        SeatSetup {
            spec,
            options: Vec::new(),
        }
    }
}

/// Where to put each bot's stderr log, if anywhere: `dir/<tag>-seat<N>.stderr.log`.
#[derive(Debug, Clone, Default)]
pub struct LogPlace {
    /// Directory.
    pub dir: Option<PathBuf>,
    /// File name prefix for this game.
    pub tag: String,
}

/// Bot processes kept from one game to the next, as fastchess and cutechess keep
/// engines: a process that ends a game without a fault plays its entrant's next
/// game on the same thread, told `newgame` and checked with `isready` as a new one
/// would be, instead of a new process being spawned and shaken hands with (which
/// costs more than a whole fast game). Only processes are kept: built-in bots and
/// gRPC connections cost nothing to start, and people are never pooled. Dropping
/// the pool quits and reaps what it holds.
#[derive(Debug)]
pub struct BotPool {
    keep: bool,
    grace: std::time::Duration,
    idle: Vec<(SeatSetup, Player)>,
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
        }
    }

    /// Bot processes waiting for a game.
    pub fn idle(&self) -> usize {
        self.idle.len()
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
        let players = self.idle.drain(..).map(|(_, p)| p).collect();
        Player::shutdown_all(players, self.grace);
    }
}

/// Creates the game a setup describes, for `seats` seats.
///
/// # Errors
/// Unknown game, bad options or position, or a seat count the game does not take.
pub fn create_game(setup: &GameSetup, seats: usize) -> Result<Box<dyn AnyGame>, SetupError> {
    match &setup.position {
        None => engine::new_game(&setup.game, &setup.options, Some(seats), setup.seed),
        Some(pos) => {
            let game = engine::game_from_position(&setup.game, &setup.options, pos, setup.seed)?;
            if game.seats() != seats {
                let info = game.info();
                return Err(SetupError::Seats {
                    game: info.id,
                    min: game.seats(),
                    max: game.seats(),
                    given: seats,
                });
            }
            Ok(game)
        }
    }
}

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
    let mut game = create_game(setup, seats.len())?;
    let n = seats.len();
    let options = game.options().to_vec();
    let shared_options: std::sync::Arc<[String]> = options.clone().into();
    let info = game.info();
    let mut faults: Vec<FaultRecord> = Vec::new();

    let mut names = Vec::with_capacity(n);
    let mut players: Vec<Option<Player>> = Vec::with_capacity(n);
    for (seat, s) in seats.iter().enumerate() {
        let log = logs
            .dir
            .as_ref()
            .map(|d| d.join(format!("{}seat{seat}.stderr.log", logs.tag)));
        let table = TableSeat {
            game: info.id,
            seats: n,
            seat,
            options: &options,
        };
        match ready_player(pool, s, &table, limits, log) {
            Ok(p) => {
                names.push(p.name());
                players.push(Some(p));
            }
            Err((name, f)) => {
                names.push(name);
                faults.push(FaultRecord::new(seat, &f, 0));
                players.push(None);
            }
        }
    }

    let in_play = GamesInPlay::enter();
    let play_start = Instant::now();
    let mut clocks = vec![SeatClock::new(&limits.tc); n];
    let mut moves: Vec<MoveRecord> = Vec::new();
    let mut next_id = 0u64;
    let mut spare = RequestBuffers::default();
    let mut played_line = String::new();
    'game: loop {
        let to_act = game.to_act();
        if to_act.is_empty() || (n == 2 && !faults.is_empty()) {
            break;
        }
        // Ask every seat that must decide: process bots first, so they think while
        // in-process bots and people answer; then wait for all of them at once.
        let mut answers: Vec<Option<Result<Reply, Fault>>> = (0..n).map(|_| None).collect();
        let mut pending = Vec::new();
        let mut remote = Vec::new();
        for process_pass in [true, false] {
            for seat in to_act.iter() {
                let Some(p) = players[seat].as_mut() else { continue };
                if p.reads_text() != process_pass {
                    continue;
                }
                next_id += 1;
                let req = request(
                    game.as_ref(),
                    info.id,
                    &shared_options,
                    n,
                    seat,
                    next_id,
                    &clocks[seat],
                    limits,
                    p,
                    &mut spare,
                );
                let deadline = Instant::now() + clocks[seat].allowance(&limits.tc) + limits.margin;
                let pending_now = p.begin(&req, deadline);
                spare.recover(req);
                match pending_now {
                    Pending::Waiting { id, start, deadline } => pending.push((seat, id, start, deadline)),
                    Pending::Remote { rx, deadline } => remote.push((seat, rx, deadline)),
                    Pending::Done(r) => answers[seat] = Some(r),
                }
            }
        }
        for (&(seat, ..), r) in pending.iter().zip(collect(&mut players, &pending)) {
            answers[seat] = Some(r);
        }
        // Remote calls ran meanwhile and timed themselves.
        for (seat, rx, deadline) in remote {
            answers[seat] = Some(crate::remote::wait(&rx, deadline));
        }
        // Play the answers in seat order, so the result never depends on who was quicker.
        let mut public = Vec::new();
        for seat in to_act.iter() {
            let played = match answers[seat].take() {
                None => false, // a seat that faulted earlier
                Some(Ok(reply)) => match game.play(seat, &reply.mv) {
                    Ok(is_public) => {
                        clocks[seat].charge(&limits.tc, reply.elapsed);
                        moves.push(MoveRecord {
                            seat,
                            mv: reply.mv.clone(),
                            ms: reply.elapsed.as_millis() as u64,
                            fallback: false,
                            info: reply.info,
                        });
                        if is_public {
                            public.push((seat, reply.mv));
                        }
                        true
                    }
                    Err(e) => {
                        let f = Fault::new(FaultKind::Illegal, e.to_string());
                        faults.push(FaultRecord::new(seat, &f, moves.len()));
                        retire(&mut players[seat], limits);
                        false
                    }
                },
                Some(Err(f)) => {
                    faults.push(FaultRecord::new(seat, &f, moves.len()));
                    retire(&mut players[seat], limits);
                    false
                }
            };
            if !played {
                if n == 2 {
                    break 'game;
                }
                // The documented fallback for a faulted seat: its first legal move.
                let Some(mv) = game.legal_moves(seat).into_iter().next() else {
                    break 'game;
                };
                if game.play(seat, &mv).is_err() {
                    break 'game;
                }
                moves.push(MoveRecord {
                    seat,
                    mv,
                    ms: 0,
                    fallback: true,
                    info: Vec::new(),
                });
            }
        }
        for (seat, mv) in public {
            played_line.clear();
            proto::text::write_played(&mut played_line, seat, &mv);
            for (other, p) in players.iter_mut().enumerate() {
                if other != seat
                    && let Some(p) = p.as_mut()
                {
                    p.notify_line(&played_line);
                }
            }
        }
        // Wake the seats that decide next with what they were just told, rather than
        // with their request: a sleeping bot's core can take longer to wake than the
        // request takes to write, and this way both happen at once. Only while a core
        // is to spare: when every core is busy, the extra wake-up is pure cost.
        if in_play.core_to_spare() {
            for seat in game.to_act().iter() {
                if let Some(p) = players[seat].as_mut() {
                    p.flush_events();
                }
            }
        }
    }

    let play_us = play_start.elapsed().as_micros() as u64;
    let (outcome, termination) = final_outcome(n, game.outcome().as_ref(), &faults);
    let detail = faults
        .first()
        .map(|f| format!("seat {} {}: {}", f.seat, f.kind, f.detail));
    let over = ToBot::GameOver {
        ranks: outcome.ranks.clone(),
        scores: outcome.scores.clone(),
        reason: termination.to_string(),
        detail,
    };
    let mut late = vec![0u64; n];
    for (seat, p) in players.iter_mut().enumerate() {
        if let Some(p) = p.as_mut() {
            p.notify(&over);
            late[seat] = p.late_replies();
        }
    }
    // Keep the processes that played cleanly, if the pool keeps any; quit the rest
    // at once, then reap: one grace period, not one per seat.
    let mut quitting = Vec::new();
    for (seat, p) in players.into_iter().enumerate() {
        let Some(p) = p else { continue };
        if pool.keep && p.is_process() && !faults.iter().any(|f| f.seat == seat) {
            pool.grace = limits.quit_grace;
            pool.idle.push((seats[seat].clone(), p));
        } else {
            quitting.push(p);
        }
    }
    Player::shutdown_all(quitting, limits.quit_grace);
    Ok(GameRecord {
        schema: RECORD_SCHEMA,
        engine: engine::ENGINE_VERSION.to_owned(),
        game: info.id.to_owned(),
        options,
        seed: setup.seed,
        start_position: setup.position.clone(),
        seats: seats
            .iter()
            .zip(names)
            .zip(late)
            .map(|((s, name), late_replies)| SeatRecord {
                name,
                spec: s.spec.to_string(),
                entrant: None,
                late_replies,
            })
            .collect(),
        pairing: setup.pairing,
        moves,
        faults,
        termination,
        outcome,
        final_position: game.position(),
        play_us,
    })
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

/// Where a player sits: what `newgame` tells it.
struct TableSeat<'a> {
    game: &'static str,
    seats: usize,
    seat: usize,
    options: &'a [String],
}

/// A player told `newgame` and checked with `isready`: a process kept in `pool`
/// if it has one for this seat setup, else a new one. A kept process that cannot
/// start another game (one that left after its last game, say) is replaced, not
/// blamed. On failure, the name to record and the fault.
fn ready_player(
    pool: &mut BotPool,
    setup: &SeatSetup,
    at: &TableSeat<'_>,
    limits: &Limits,
    log: Option<PathBuf>,
) -> Result<Player, (String, Fault)> {
    if let Some(mut kept) = pool.take(setup) {
        kept.prepare_next_game(log.clone());
        match kept.new_game(at.game, at.seats, at.seat, at.options, limits.ping) {
            Ok(()) => return Ok(kept),
            Err(f) => {
                tracing::debug!(bot = %setup.spec, fault = %f, "a kept bot could not start another game; starting a new one");
                kept.shutdown(limits.quit_grace);
            }
        }
    }
    let mut player = Player::start(&setup.spec, &setup.options, limits.handshake, log)
        .map_err(|f| (setup.spec.short_name(), f))?;
    match player.new_game(at.game, at.seats, at.seat, at.options, limits.ping) {
        Ok(()) => Ok(player),
        Err(f) => {
            let name = player.name();
            player.shutdown(limits.quit_grace);
            Err((name, f))
        }
    }
}

/// The text buffers of the last request, reused by the next: a request's move list
/// and observation run to a kilobyte or more, and grew from nothing every time.
#[derive(Default)]
struct RequestBuffers {
    legal: String,
    observation: String,
}

impl RequestBuffers {
    /// Takes back the buffers a request was written in.
    fn recover(&mut self, req: MoveRequest) {
        if let Legal::Text(text) = req.legal {
            self.legal = text;
        }
        if let Observation::Text(text) = req.observation {
            self.observation = text;
        }
    }
}

/// What `seat` is told when it must decide.
#[allow(clippy::too_many_arguments)]
fn request(
    game: &dyn AnyGame,
    id_text: &'static str,
    options: &std::sync::Arc<[String]>,
    seats: usize,
    seat: usize,
    id: u64,
    clock: &SeatClock,
    limits: &Limits,
    player: &Player,
    spare: &mut RequestBuffers,
) -> MoveRequest {
    MoveRequest {
        id,
        game: id_text,
        options: options.clone(),
        seats,
        seat,
        legal: if player.reads_joined_moves() {
            let mut text = std::mem::take(&mut spare.legal);
            text.clear();
            game.write_legal_moves(seat, &mut text);
            Legal::Text(text)
        } else {
            Legal::List(game.legal_moves(seat))
        },
        observation: if player.reads_text() {
            let mut text = std::mem::take(&mut spare.observation);
            text.clear();
            game.write_observation_json(seat, &mut text);
            Observation::Text(text)
        } else if player.reads_observations() {
            Observation::Value(game.observation(seat))
        } else {
            Observation::Value(serde_json::Value::Null)
        },
        time_ms: clock.remaining(&limits.tc).map(|d| d.as_millis() as u64),
        inc_ms: match limits.tc {
            TimeControl::Clock { inc, .. } => Some(inc.as_millis() as u64),
            TimeControl::MoveTime(_) => None,
        },
        movetime_ms: match limits.tc {
            TimeControl::MoveTime(t) => Some(t.as_millis() as u64),
            TimeControl::Clock { .. } => None,
        },
        render: matches!(player.spec, BotSpec::Human).then(|| game.render()),
    }
}

fn retire(slot: &mut Option<Player>, limits: &Limits) {
    if let Some(p) = slot.take() {
        p.shutdown(limits.quit_grace);
    }
}
