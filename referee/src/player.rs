//! A seat's player: a protocol session (text over a transport, or gRPC), a built-in
//! bot, or a person; one interface. Each kind takes from the game what it reads.

use crate::clock::Limits;
use crate::fault::{Fault, FaultKind};
use crate::session::{
    Ask, Asked, GameOver, GrpcAsked, GrpcSession, Hello, Reply, Table, TextSession, check_options,
};
use crate::setup::SeatSetup;
use crate::spec::BotSpec;
use crate::transport::StderrTo;
use crate::transport::pipe::ChildProcess;
use bots::{Bot, View};
use std::time::{Duration, Instant};

enum Kind {
    Text(Box<TextSession>),
    Grpc(Box<GrpcSession>),
    Builtin(Box<dyn Bot>),
    Human(Box<crate::human::HumanSeat>),
}

/// One seat's player.
pub struct Player {
    /// What it said about itself.
    pub hello: Hello,
    /// The spec it was started from.
    pub spec: BotSpec,
    /// Its name if it announces none ([`SeatSetup::unannounced_name`]).
    unannounced_name: String,
    kind: Kind,
}

impl std::fmt::Debug for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Player({})", self.spec)
    }
}

/// A request in flight.
#[derive(Debug)]
pub enum Pending {
    /// Sent over a text session; the answer is read from it.
    Text(Asked),
    /// Sent over gRPC; the answer comes from the call.
    Grpc(GrpcAsked),
    /// Answered already (in-process bots, people), or failed to send.
    Done(Result<Reply, Fault>),
}

impl Player {
    /// Starts a player: spawns and shakes hands with a process, connects to a gRPC
    /// bot, or builds a built-in bot; then sets `options` (each must be one the bot
    /// declared).
    ///
    /// # Errors
    /// A [`Fault`] naming what went wrong (spawn, handshake, a refused option).
    pub fn start(seat: &SeatSetup, limits: &Limits, stderr_to: StderrTo) -> Result<Player, Fault> {
        let (spec, options) = (&seat.spec, &seat.options);
        let (hello, kind) = match spec {
            BotSpec::Builtin { name, options: own } => {
                let all: Vec<(String, String)> = own.iter().chain(options).cloned().collect();
                let bot = bots::builtin(name, &all).map_err(|e| Fault::new(FaultKind::Spawn, e))?;
                let hello = Hello {
                    name: Some(bot.name()),
                    author: Some("astragal".into()),
                    options: bot.options(),
                };
                (hello, Kind::Builtin(bot))
            }
            BotSpec::Human => {
                let hello = Hello {
                    name: Some("human".into()),
                    ..Hello::default()
                };
                (hello, Kind::Human(Box::default()))
            }
            BotSpec::Grpc { url } => {
                let secret = seat
                    .env
                    .iter()
                    .find(|(k, _)| k == crate::session::BOT_SECRET_ENV)
                    .map(|(_, v)| v.as_str());
                let mut session = GrpcSession::open_with(url, limits, secret, seat.dial)?;
                check_options(session.hello(), options)?;
                for (name, value) in options {
                    session.set_option(name, value);
                }
                (session.hello().clone(), Kind::Grpc(Box::new(session)))
            }
            BotSpec::Process { command } => {
                let process = ChildProcess::spawn_in(
                    command,
                    &seat.env,
                    &limits.sandbox,
                    seat.home.as_ref(),
                    stderr_to,
                )?;
                let mut session = TextSession::open(Box::new(process), limits)?;
                check_options(session.hello(), options)?;
                for (name, value) in options {
                    session.set_option(name, value);
                }
                (session.hello().clone(), Kind::Text(Box::new(session)))
            }
        };
        Ok(Player {
            hello,
            spec: spec.clone(),
            unannounced_name: seat.unannounced_name(),
            kind,
        })
    }

    /// The name to show: announced name, else the seat's public name or the spec's
    /// short name.
    pub fn name(&self) -> String {
        self.hello
            .name
            .clone()
            .unwrap_or_else(|| self.unannounced_name.clone())
    }

    /// Whether this player thinks somewhere else (a process, a server) while the
    /// referee goes on, rather than answering on the referee's thread.
    pub fn thinks_elsewhere(&self) -> bool {
        matches!(self.kind, Kind::Text(_) | Kind::Grpc(_))
    }

    /// Tells the player a game starts, and checks it is responsive.
    ///
    /// # Errors
    /// [`FaultKind::Stall`] without an answer in time, or any read fault.
    pub fn new_game(&mut self, table: &Table<'_>, ping: Duration) -> Result<(), Fault> {
        match &mut self.kind {
            Kind::Text(session) => session.new_game(table, ping),
            Kind::Grpc(session) => session.new_game(table, ping),
            Kind::Builtin(bot) => {
                bot.new_game(table.game, table.seats, table.seat, table.options);
                bot.salt_game(table.bot_salt);
                Ok(())
            }
            Kind::Human(person) => {
                person.new_game(table);
                Ok(())
            }
        }
    }

    /// Starts a request: a process bot is sent it and thinks while others are
    /// asked; a gRPC bot's call is sent when waited for, or at once by
    /// [`GrpcAsked::start_elsewhere`]; an in-process bot or a person answers now.
    pub fn ask(&mut self, ask: &Ask<'_>) -> Pending {
        match &mut self.kind {
            Kind::Text(session) => match session.ask(ask) {
                Ok(asked) => Pending::Text(asked),
                Err(f) => Pending::Done(Err(f)),
            },
            Kind::Grpc(session) => Pending::Grpc(session.ask(ask)),
            Kind::Builtin(bot) => {
                let start = Instant::now();
                let observation = if bot.reads_observations() {
                    ask.game.observation(ask.seat)
                } else {
                    serde_json::Value::Null
                };
                let legal = ask.game.legal_moves(ask.seat);
                let legal: Vec<&str> = legal.iter().map(String::as_str).collect();
                let info = ask.game.info();
                let view = View {
                    game: info.id,
                    seat: ask.seat,
                    seats: ask.game.seats(),
                    options: ask.options,
                    observation: &observation,
                    legal: &legal,
                    time_ms: ask.clock.time_ms,
                    movetime_ms: ask.clock.movetime_ms,
                };
                let mv = bot.choose(&view);
                Pending::Done(Ok(Reply {
                    mv,
                    elapsed: start.elapsed(),
                    info: Vec::new(),
                }))
            }
            Kind::Human(person) => {
                let start = Instant::now();
                Pending::Done(person.ask(ask).map(|mv| Reply {
                    mv,
                    elapsed: start.elapsed(),
                    info: Vec::new(),
                }))
            }
        }
    }

    /// Tells the player another seat's public move. It goes out with the player's
    /// next message (or before it, with [`Player::flush_events`]).
    pub fn played(&mut self, seat: usize, mv: &str) {
        match &mut self.kind {
            Kind::Text(session) => session.queue_played(seat, mv),
            Kind::Grpc(session) => session.queue_played(seat, mv),
            Kind::Human(person) => person.played(seat, mv),
            Kind::Builtin(_) => {}
        }
    }

    /// Sends the events queued for a text session now, if its transport takes them
    /// without waiting; other players are told with their next message anyway.
    pub fn flush_events(&mut self) {
        if let Kind::Text(session) = &mut self.kind {
            session.flush_events();
        }
    }

    /// Tells the player the game is over. A bot that cannot hear it any more is not
    /// the referee's problem now.
    pub fn game_over(&mut self, over: &GameOver) {
        match &mut self.kind {
            Kind::Text(session) => session.game_over(over),
            Kind::Grpc(session) => session.game_over(over),
            Kind::Human(person) => person.game_over(over),
            Kind::Builtin(_) => {}
        }
    }

    /// Whether a [`crate::BotPool`] keeps this player between games: a bot process
    /// (starting one costs more than a fast game). Built-in bots start afresh for
    /// every game, so a game with them depends only on its seed and their options;
    /// gRPC servers keep their own sessions; people are never kept.
    pub fn is_keepable(&self) -> bool {
        matches!(&self.kind, Kind::Text(session) if session.is_process())
    }

    /// CPU time a bot process's whole tree has used, where the machine counts it.
    pub fn cpu_used(&self) -> Option<Duration> {
        match &self.kind {
            Kind::Text(session) => session.cpu_used(),
            _ => None,
        }
    }

    /// Freezes a bot process's whole tree: it is not to act, and gets no CPU
    /// until something is next asked of it. Returns whether this call froze it.
    pub fn pause(&mut self) -> bool {
        match &mut self.kind {
            Kind::Text(session) => session.pause(),
            _ => false,
        }
    }

    /// Waits until a frozen tree has stopped, or `until`; false only if it is
    /// frozen and has not stopped by then.
    pub fn wait_paused(&mut self, until: Instant) -> bool {
        match &mut self.kind {
            Kind::Text(session) => session.wait_paused(until),
            _ => true,
        }
    }

    /// Thaws a bot process that is to act next.
    pub fn resume(&mut self) {
        if let Kind::Text(session) = &mut self.kind {
            session.resume();
        }
    }

    /// Whether a session's bot has gone (exited, or closed its output).
    pub fn has_ended(&mut self) -> bool {
        match &mut self.kind {
            Kind::Text(session) => session.has_ended(),
            _ => false,
        }
    }

    /// Keeps now what a process wrote to stderr so far, so that what it wrote
    /// during a game ends in that game's log and tail.
    pub fn settle_stderr(&self) {
        if let Kind::Text(session) = &self.kind {
            session.settle_stderr();
        }
    }

    /// Readies a kept process for its next game: its stderr goes to that game's log.
    pub fn prepare_next_game(&mut self, stderr_to: StderrTo) {
        if let Kind::Text(session) = &mut self.kind {
            session.set_stderr_log(stderr_to);
        }
    }

    /// Replies discarded this game: late ones (to earlier requests) and early ones
    /// (sent before their request).
    pub fn discarded_replies(&self) -> (u64, u64) {
        match &self.kind {
            Kind::Text(session) => (session.late_replies(), session.early_replies()),
            _ => (0, 0),
        }
    }

    /// Ends the player: `quit`, then kill and reap a process that lingers. Returns
    /// whether it left by itself within `grace`.
    pub fn shutdown(self, grace: Duration) -> bool {
        let mut players = vec![self];
        Player::shutdown_all(&mut players, grace)
    }

    /// Shuts several players down at once: `quit` to all, one shared grace period,
    /// then (on drop) kill and reap whoever lingers. Returns whether all left by
    /// themselves.
    pub fn shutdown_all(players: &mut Vec<Player>, grace: Duration) -> bool {
        for p in players.iter_mut() {
            if let Kind::Text(session) = &mut p.kind {
                session.quit();
            }
        }
        let deadline = Instant::now() + grace;
        let mut all_left = true;
        for p in players.iter_mut() {
            if let Kind::Text(session) = &mut p.kind {
                all_left &= session.wait_gone(deadline);
            }
        }
        players.clear();
        all_left
    }

    fn text_session(&mut self) -> Option<&mut TextSession> {
        match &mut self.kind {
            Kind::Text(session) => Some(session),
            _ => None,
        }
    }
}

/// Waits for the replies of several text-session seats at once, so each reply is
/// timed when it arrives: one `poll` over their descriptors when every transport
/// has one, else each transport in turn. `asked` holds (seat, request); the
/// answers come back in the same order.
pub fn collect(players: &mut [Option<Player>], asked: &mut [(usize, Asked)]) -> Vec<Result<Reply, Fault>> {
    let no_session = || Err(Fault::new(FaultKind::Crash, "no session for this seat"));
    // One seat asked, as in most turns: wait on it alone.
    if let [(seat, asked)] = asked {
        let reply = match players[*seat].as_mut().and_then(Player::text_session) {
            Some(session) => session.await_reply(asked),
            None => no_session(),
        };
        return vec![reply];
    }
    let mut answers: Vec<Option<Result<Reply, Fault>>> = asked.iter().map(|_| None).collect();
    loop {
        // Answers already read, and deadlines passed.
        let now = Instant::now();
        for (i, (seat, request)) in asked.iter_mut().enumerate() {
            if answers[i].is_some() {
                continue;
            }
            let Some(session) = players[*seat].as_mut().and_then(Player::text_session) else {
                answers[i] = Some(no_session());
                continue;
            };
            match session.reply_ready(request) {
                Ok(Some(reply)) => answers[i] = Some(Ok(reply)),
                Ok(None) if now >= request.deadline => {
                    answers[i] = Some(Err(crate::session::timeout(request.start)))
                }
                Ok(None) => {}
                Err(f) => answers[i] = Some(Err(f)),
            }
        }
        let open: Vec<usize> = (0..asked.len()).filter(|&i| answers[i].is_none()).collect();
        if open.is_empty() {
            return answers
                .into_iter()
                .map(|a| a.unwrap_or_else(no_session))
                .collect();
        }
        let deadline = open.iter().map(|&i| asked[i].1.deadline).min().unwrap_or(now);
        let seats: Vec<usize> = open.iter().map(|&i| asked[i].0).collect();
        match wait_any(players, &seats, deadline) {
            Ok(()) => {}
            Err(e) => {
                for &i in &open {
                    answers[i] = Some(Err(Fault::new(
                        FaultKind::Crash,
                        format!("cannot wait for the bot: {e}"),
                    )));
                }
            }
        }
    }
}

/// Waits until one of the seats' sessions has something to read, or `deadline`,
/// and reads what came.
fn wait_any(
    players: &mut [Option<Player>],
    seats: &[usize],
    deadline: Instant,
) -> Result<(), nix::errno::Errno> {
    let polled = {
        let fds: Option<Vec<_>> = seats
            .iter()
            .map(|&s| {
                players[s]
                    .as_ref()
                    .and_then(|p| match &p.kind {
                        Kind::Text(session) => Some(session),
                        _ => None,
                    })
                    .and_then(|session| session.readable_fd())
            })
            .collect();
        match fds {
            Some(fds) => Some(crate::transport::wait_readable(&fds, deadline)?),
            None => None,
        }
    };
    match polled {
        // Every transport has a descriptor: read those that are readable.
        Some(ready) => {
            for k in ready {
                if let Some(session) = players[seats[k]].as_mut().and_then(Player::text_session) {
                    session.receive(Instant::now());
                }
            }
        }
        // Some have none: give each a short turn.
        None => {
            let slice = Duration::from_millis(1) / seats.len().max(1) as u32;
            for &s in seats {
                if let Some(session) = players[s].as_mut().and_then(Player::text_session) {
                    session.receive((Instant::now() + slice).min(deadline));
                }
            }
        }
    }
    Ok(())
}
