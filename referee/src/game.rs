//! Runs one game between players and writes its record.

use crate::clock::{Limits, SeatClock};
use crate::fault::{Fault, FaultKind};
use crate::player::{MoveRequest, Player};
use crate::record::{FaultRecord, GameRecord, MoveRecord, Pairing, RECORD_SCHEMA, SeatRecord, final_outcome};
use crate::spec::BotSpec;
use engine::{AnyGame, SetupError};
use futures::future::join_all;
use proto::ToBot;
use std::path::PathBuf;
use tokio::time::Instant;

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
/// first legal move for it from then on.
///
/// # Errors
/// Only a setup the game refuses.
pub async fn play_game(
    setup: &GameSetup,
    seats: &[SeatSetup],
    limits: &Limits,
    logs: &LogPlace,
) -> Result<GameRecord, SetupError> {
    let mut game = create_game(setup, seats.len())?;
    let n = seats.len();
    let options = game.options().to_vec();
    let info = game.info();
    let mut faults: Vec<FaultRecord> = Vec::new();

    let started = join_all(seats.iter().enumerate().map(|(i, s)| {
        let log = logs
            .dir
            .as_ref()
            .map(|d| d.join(format!("{}seat{i}.stderr.log", logs.tag)));
        Player::start(&s.spec, &s.options, limits.handshake, log)
    }))
    .await;
    let mut names = Vec::with_capacity(n);
    let mut players: Vec<Option<Player>> = Vec::with_capacity(n);
    for (seat, result) in started.into_iter().enumerate() {
        match result {
            Ok(p) => {
                names.push(p.name());
                players.push(Some(p));
            }
            Err(f) => {
                names.push(seats[seat].spec.short_name());
                faults.push(FaultRecord::new(seat, &f, 0));
                players.push(None);
            }
        }
    }
    let readiness = join_all(players.iter_mut().enumerate().map(|(seat, p)| {
        let options = &options;
        async move {
            match p {
                Some(p) => p.new_game(info.id, n, seat, options, limits.ping).await,
                None => Ok(()),
            }
        }
    }))
    .await;
    for (seat, r) in readiness.into_iter().enumerate() {
        if let Err(f) = r {
            retire(&mut players[seat], limits).await;
            faults.push(FaultRecord::new(seat, &f, 0));
        }
    }

    let play_start = Instant::now();
    let mut clocks = vec![SeatClock::new(&limits.tc); n];
    let mut moves: Vec<MoveRecord> = Vec::new();
    let mut next_id = 0u64;
    'game: loop {
        let to_act = game.to_act();
        if to_act.is_empty() || (n == 2 && !faults.is_empty()) {
            break;
        }
        // Ask every seat that must decide, all at once.
        let requests: Vec<(usize, MoveRequest, Instant)> = to_act
            .iter()
            .filter(|&s| players[s].is_some())
            .map(|seat| {
                next_id += 1;
                let clock = &clocks[seat];
                let human = matches!(players[seat].as_ref().map(|p| &p.spec), Some(BotSpec::Human));
                let req = MoveRequest {
                    id: next_id,
                    game: info.id.to_owned(),
                    options: options.clone(),
                    seats: n,
                    seat,
                    legal: game.legal_moves(seat),
                    observation: game.observation(seat),
                    time_ms: clock.remaining(&limits.tc).map(|d| d.as_millis() as u64),
                    inc_ms: match limits.tc {
                        crate::clock::TimeControl::Clock { inc, .. } => Some(inc.as_millis() as u64),
                        crate::clock::TimeControl::MoveTime(_) => None,
                    },
                    movetime_ms: match limits.tc {
                        crate::clock::TimeControl::MoveTime(t) => Some(t.as_millis() as u64),
                        crate::clock::TimeControl::Clock { .. } => None,
                    },
                    render: human.then(|| game.render()),
                };
                let deadline = Instant::now() + clock.allowance(&limits.tc) + limits.margin;
                (seat, req, deadline)
            })
            .collect();
        let mut answers: Vec<Option<Result<crate::player::Reply, Fault>>> = (0..n).map(|_| None).collect();
        {
            let mut asking = Vec::new();
            let mut rest: &mut [Option<Player>] = &mut players;
            let mut offset = 0;
            for (seat, req, deadline) in &requests {
                let (_, tail) = rest.split_at_mut(seat - offset);
                let (this, after) = tail.split_at_mut(1);
                rest = after;
                offset = seat + 1;
                if let Some(p) = this[0].as_mut() {
                    asking.push(async move { (*seat, p.request(req, *deadline).await) });
                }
            }
            for (seat, a) in join_all(asking).await {
                answers[seat] = Some(a);
            }
        }
        // Play the answers in seat order, so the result never depends on who was quicker.
        let mut public = Vec::new();
        for seat in to_act.iter() {
            let answer = answers[seat].take();
            let reply = match answer {
                None => None, // a seat that faulted earlier
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
                        Some(())
                    }
                    Err(e) => {
                        let f = Fault::new(FaultKind::Illegal, e.to_string());
                        faults.push(FaultRecord::new(seat, &f, moves.len()));
                        retire(&mut players[seat], limits).await;
                        None
                    }
                },
                Some(Err(f)) => {
                    faults.push(FaultRecord::new(seat, &f, moves.len()));
                    retire(&mut players[seat], limits).await;
                    None
                }
            };
            if reply.is_none() {
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
            for (other, p) in players.iter_mut().enumerate() {
                if other != seat {
                    if let Some(p) = p.as_mut() {
                        p.notify(&ToBot::Played { seat, mv: mv.clone() }).await;
                    }
                }
            }
        }
    }

    let play_ms = play_start.elapsed().as_millis() as u64;
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
            p.notify(&over).await;
            late[seat] = p.late_replies();
        }
    }
    join_all(
        players
            .into_iter()
            .flatten()
            .map(|p| p.shutdown(limits.quit_grace)),
    )
    .await;
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
                late_replies,
            })
            .collect(),
        pairing: setup.pairing,
        moves,
        faults,
        termination,
        outcome,
        final_position: game.position(),
        play_ms,
    })
}

async fn retire(slot: &mut Option<Player>, limits: &Limits) {
    if let Some(p) = slot.take() {
        p.shutdown(limits.quit_grace).await;
    }
}
