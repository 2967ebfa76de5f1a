//! A seat's player: a process, a built-in bot, or a person; one interface.

use crate::fault::{Fault, FaultKind};
use crate::process::{MAX_LINES_PER_REQUEST, ProcessBot};
use crate::remote::RemoteBot;
use crate::spec::BotSpec;
use bots::{Bot, View};
use proto::{FromBot, OptionDecl, PROTOCOL_VERSION, ToBot};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;
use std::time::Instant;

/// Everything a seat is told when it must decide.
#[derive(Debug, Clone)]
pub struct MoveRequest {
    /// Request id (echoed by the reply).
    pub id: u64,
    /// Game id.
    pub game: &'static str,
    /// The game's options (shared by every request of the game).
    pub options: std::sync::Arc<[String]>,
    /// Seats in the game.
    pub seats: usize,
    /// The deciding seat.
    pub seat: usize,
    /// Legal moves.
    pub legal: Legal,
    /// The seat's observation.
    pub observation: Observation,
    /// Clock left (clock controls only).
    pub time_ms: Option<u64>,
    /// Increment (clock controls only).
    pub inc_ms: Option<u64>,
    /// Time for this move (move-time controls only).
    pub movetime_ms: Option<u64>,
    /// The position drawn for people (asked only for human players).
    pub render: Option<String>,
}

/// The legal moves in the form their player reads them.
#[derive(Debug, Clone)]
pub enum Legal {
    /// Joined by commas, for bots over the protocol.
    Text(String),
    /// One by one, for bots in process and people.
    List(Vec<String>),
}

impl Legal {
    fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Legal::Text(t) => t.as_str().into(),
            Legal::List(l) => l.join(",").into(),
        }
    }

    /// The moves one by one.
    pub fn list(&self) -> Vec<&str> {
        match self {
            Legal::Text(t) => t.split(',').filter(|m| !m.is_empty()).collect(),
            Legal::List(l) => l.iter().map(String::as_str).collect(),
        }
    }
}

/// An observation in the form its player reads it.
#[derive(Debug, Clone)]
pub enum Observation {
    /// Compact JSON text, for bots over the protocol.
    Text(String),
    /// A JSON value, for bots in process.
    Value(serde_json::Value),
}

impl Observation {
    fn value(&self) -> serde_json::Value {
        match self {
            Observation::Value(v) => v.clone(),
            Observation::Text(t) => serde_json::from_str(t).unwrap_or(serde_json::Value::Null),
        }
    }

    fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Observation::Text(t) => t.as_str().into(),
            Observation::Value(v) => v.to_string().into(),
        }
    }
}

/// A seat's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The move text, not yet checked against the rules.
    pub mv: String,
    /// Time from the flushed request to the reply.
    pub elapsed: Duration,
    /// Info lines sent meanwhile.
    pub info: Vec<String>,
}

/// What a bot said in its handshake.
#[derive(Debug, Clone, Default)]
pub struct Hello {
    /// Its name.
    pub name: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Options it declared.
    pub options: Vec<OptionDecl>,
}

enum Kind {
    Process(Box<ProcessBot>),
    Remote(Box<RemoteBot>),
    Builtin(Box<dyn Bot>),
    Human,
}

/// One seat's player.
pub struct Player {
    /// What it said about itself.
    pub hello: Hello,
    /// The spec it was started from.
    pub spec: BotSpec,
    kind: Kind,
}

impl std::fmt::Debug for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Player({})", self.spec)
    }
}

/// A request in flight: a process bot is thinking, or a move is already known.
#[derive(Debug)]
pub enum Pending {
    /// Sent to a process bot at `start`, answer due by `deadline`.
    Waiting {
        /// The request id.
        id: u64,
        /// When the request was flushed.
        start: Instant,
        /// When the answer is due.
        deadline: Instant,
    },
    /// Sent to a bot over gRPC; the answer comes on `rx`.
    Remote {
        /// The answer.
        rx: std::sync::mpsc::Receiver<Result<Reply, Fault>>,
        /// When the answer is due.
        deadline: Instant,
    },
    /// Answered (in-process bots, people) or failed to send.
    Done(Result<Reply, Fault>),
}

impl Player {
    /// Starts a player: spawns and shakes hands with a process, or builds a built-in
    /// bot; then sets `options` (each must be one the bot declared).
    ///
    /// # Errors
    /// A [`Fault`] naming what went wrong (spawn, handshake, a refused option).
    pub fn start(
        spec: &BotSpec,
        options: &[(String, String)],
        handshake: Duration,
        stderr_log: Option<PathBuf>,
    ) -> Result<Player, Fault> {
        match spec {
            BotSpec::Builtin { name, options: own } => {
                let all: Vec<(String, String)> = own.iter().chain(options).cloned().collect();
                let bot = bots::builtin(name, &all).map_err(|e| Fault::new(FaultKind::Spawn, e))?;
                let hello = Hello {
                    name: Some(bot.name()),
                    author: Some("astragal".into()),
                    options: bot.options(),
                };
                Ok(Player {
                    hello,
                    spec: spec.clone(),
                    kind: Kind::Builtin(bot),
                })
            }
            BotSpec::Human => Ok(Player {
                hello: Hello {
                    name: Some("human".into()),
                    ..Hello::default()
                },
                spec: spec.clone(),
                kind: Kind::Human,
            }),
            BotSpec::Grpc { url } => {
                let http = url.replacen("grpc://", "http://", 1);
                let (mut bot, hello) = RemoteBot::connect(&http, handshake)?;
                check_options(&hello, options)?;
                for (name, value) in options {
                    bot.set_option(name, value);
                }
                Ok(Player {
                    hello,
                    spec: spec.clone(),
                    kind: Kind::Remote(Box::new(bot)),
                })
            }
            BotSpec::Process { command } => {
                let mut bot = ProcessBot::spawn(command, stderr_log)?;
                let hello = handshake_with(&mut bot, handshake)?;
                check_options(&hello, options)?;
                for (name, value) in options {
                    bot.queue(&ToBot::SetOption {
                        name: name.clone(),
                        value: value.clone(),
                    });
                }
                Ok(Player {
                    hello,
                    spec: spec.clone(),
                    kind: Kind::Process(Box::new(bot)),
                })
            }
        }
    }

    /// Whether this player reads observations as protocol text (else as a JSON value).
    pub fn reads_text(&self) -> bool {
        matches!(self.kind, Kind::Process(_) | Kind::Remote(_))
    }

    /// Whether this player looks at observations at all (an in-process bot that
    /// does not is spared building them).
    pub fn reads_observations(&self) -> bool {
        match &self.kind {
            Kind::Builtin(bot) => bot.reads_observations(),
            _ => true,
        }
    }

    /// Whether this player takes the legal moves as one comma-joined text.
    pub fn reads_joined_moves(&self) -> bool {
        matches!(self.kind, Kind::Process(_))
    }

    /// The name to show: announced name, else the spec's short name.
    pub fn name(&self) -> String {
        self.hello.name.clone().unwrap_or_else(|| self.spec.short_name())
    }

    /// Tells the player a game starts, and checks it is responsive (`isready`).
    ///
    /// # Errors
    /// [`FaultKind::Stall`] without `readyok` in time, or any read fault.
    pub fn new_game(
        &mut self,
        game: &str,
        seats: usize,
        seat: usize,
        options: &[String],
        ping: Duration,
    ) -> Result<(), Fault> {
        match &mut self.kind {
            Kind::Process(bot) => {
                bot.queue(&ToBot::NewGame {
                    game: game.to_owned(),
                    seats,
                    seat,
                    options: options.to_vec(),
                });
                ping_bot(bot, ping)
            }
            Kind::Remote(bot) => bot.new_game(game, seats, seat, options, ping),
            Kind::Builtin(bot) => {
                bot.new_game(game, seats, seat, options);
                Ok(())
            }
            Kind::Human => Ok(()),
        }
    }

    /// Starts a request: a process bot is sent `go` and thinks while others are
    /// asked; an in-process bot or a person answers now.
    pub fn begin(&mut self, req: &MoveRequest, deadline: Instant) -> Pending {
        match &mut self.kind {
            Kind::Process(bot) => {
                bot.info.clear();
                bot.queue_with(|out| {
                    proto::text::write_go(
                        out,
                        req.id,
                        req.seat,
                        req.time_ms,
                        req.inc_ms,
                        req.movetime_ms,
                        &req.legal.text(),
                        &req.observation.text(),
                    );
                });
                match bot.flush_queue(deadline) {
                    Ok(()) => Pending::Waiting {
                        id: req.id,
                        start: Instant::now(),
                        deadline,
                    },
                    Err(f) => Pending::Done(Err(f)),
                }
            }
            Kind::Remote(bot) => {
                let legal = req.legal.list().into_iter().map(str::to_owned).collect();
                let rx = bot.begin_go(
                    req.id,
                    req.seat,
                    req.time_ms,
                    req.inc_ms,
                    req.movetime_ms,
                    legal,
                    req.observation.text().into_owned(),
                    deadline,
                );
                Pending::Remote { rx, deadline }
            }
            Kind::Builtin(bot) => {
                let start = Instant::now();
                let observation = req.observation.value();
                let legal = req.legal.list();
                let mv = bot.choose(&view_of(req, &observation, &legal));
                Pending::Done(Ok(Reply {
                    mv,
                    elapsed: start.elapsed(),
                    info: Vec::new(),
                }))
            }
            Kind::Human => {
                let start = Instant::now();
                Pending::Done(ask_human(req).map(|mv| Reply {
                    mv,
                    elapsed: start.elapsed(),
                    info: Vec::new(),
                }))
            }
        }
    }

    /// Asks for a move and waits for it (one seat; see [`collect`] for several).
    ///
    /// # Errors
    /// Any fault of the seat while waiting.
    pub fn request(&mut self, req: &MoveRequest, deadline: Instant) -> Result<Reply, Fault> {
        match self.begin(req, deadline) {
            Pending::Done(r) => r,
            Pending::Remote { rx, deadline } => crate::remote::wait(&rx, deadline),
            Pending::Waiting { id, start, deadline } => match &mut self.kind {
                Kind::Process(bot) => wait_reply(bot, id, start, deadline),
                _ => Err(Fault::new(FaultKind::Crash, "a request without a process")),
            },
        }
    }

    /// Tells the player something that needs no answer. `played` is queued and goes
    /// out with the player's next message, or before it with
    /// [`Player::flush_events`]; anything else is sent now. A bot that cannot hear
    /// it any more is not the referee's problem now.
    pub fn notify(&mut self, msg: &ToBot) {
        match &mut self.kind {
            Kind::Process(bot) if matches!(msg, ToBot::Played { .. }) => bot.queue(msg),
            Kind::Process(bot) => {
                let _ = bot.send(msg, Duration::from_millis(200));
            }
            Kind::Remote(bot) => match msg {
                ToBot::Played { seat, mv } => bot.played(*seat, mv),
                ToBot::GameOver {
                    ranks,
                    scores,
                    reason,
                    detail,
                } => {
                    bot.game_over(ranks, scores, reason, detail.as_deref());
                }
                _ => {}
            },
            Kind::Human => {
                if let ToBot::GameOver {
                    ranks,
                    scores,
                    reason,
                    detail,
                } = msg
                {
                    eprintln!(
                        "game over ({reason}): places {ranks:?}, scores {scores:?} {}",
                        detail.clone().unwrap_or_default()
                    );
                }
            }
            Kind::Builtin(_) => {}
        }
    }

    /// Whether this player is a bot process (the only kind a [`crate::game::BotPool`]
    /// keeps between games).
    pub fn is_process(&self) -> bool {
        matches!(self.kind, Kind::Process(_))
    }

    /// Whether a process player has exited or closed its output.
    pub fn has_ended(&mut self) -> bool {
        match &mut self.kind {
            Kind::Process(bot) => bot.has_ended(),
            _ => false,
        }
    }

    /// Readies a kept process for its next game: late replies are counted per game
    /// again, and its stderr goes to that game's log.
    pub fn prepare_next_game(&mut self, stderr_log: Option<PathBuf>) {
        if let Kind::Process(bot) = &mut self.kind {
            bot.late_replies = 0;
            bot.info.clear();
            bot.set_stderr_log(stderr_log);
        }
    }

    /// Late replies discarded so far (process bots).
    pub fn late_replies(&self) -> u64 {
        match &self.kind {
            Kind::Process(bot) => bot.late_replies,
            _ => 0,
        }
    }

    /// Ends the player: `quit`, then kill and reap a process that lingers. Returns
    /// whether it left by itself within `grace`.
    pub fn shutdown(self, grace: Duration) -> bool {
        match self.kind {
            Kind::Process(bot) => bot.shutdown(grace),
            Kind::Remote(_) | Kind::Builtin(_) | Kind::Human => true,
        }
    }

    /// Queues a line already formatted (a `played` event told to several seats is
    /// formatted once).
    pub fn notify_line(&mut self, line: &str) {
        match &mut self.kind {
            Kind::Process(bot) => bot.queue_line(line),
            Kind::Remote(bot) => {
                if let Ok(ToBot::Played { seat, mv }) = ToBot::parse(line) {
                    bot.played(seat, &mv);
                }
            }
            _ => {}
        }
    }

    /// Sends the events queued for a process bot now, if its pipe takes them
    /// without waiting (see [`ProcessBot::try_flush_queue`]); other players are
    /// told at once anyway.
    pub fn flush_events(&mut self) {
        if let Kind::Process(bot) = &mut self.kind {
            bot.try_flush_queue();
        }
    }

    /// Shuts several players down at once: `quit` to all, one shared grace period,
    /// then kill and reap whoever lingers.
    pub fn shutdown_all(players: Vec<Player>, grace: Duration) {
        let mut players = players;
        for p in &mut players {
            if let Some(bot) = p.process() {
                bot.quit();
            }
        }
        let deadline = Instant::now() + grace;
        for p in &mut players {
            if let Some(bot) = p.process() {
                bot.wait_exit(deadline);
            }
        }
    }

    fn process(&mut self) -> Option<&mut ProcessBot> {
        match &mut self.kind {
            Kind::Process(bot) => Some(bot),
            _ => None,
        }
    }
}

/// Waits for the replies of several seats at once, with one `poll` over their pipes,
/// so each reply is timed when it arrives. `pending` holds (seat, request id, start,
/// deadline); the answers come back in the same order.
pub fn collect(
    players: &mut [Option<Player>],
    pending: &[(usize, u64, Instant, Instant)],
) -> Vec<Result<Reply, Fault>> {
    // One seat asked, as in most turns: wait on it alone.
    if let [(seat, id, start, deadline)] = *pending {
        let reply = match players[seat].as_mut().and_then(Player::process) {
            Some(bot) => wait_reply(bot, id, start, deadline),
            None => Err(Fault::new(FaultKind::Crash, "no process for this seat")),
        };
        return vec![reply];
    }
    let mut answers: Vec<Option<Result<Reply, Fault>>> = pending.iter().map(|_| None).collect();
    let mut lines: Vec<usize> = pending.iter().map(|_| MAX_LINES_PER_REQUEST).collect();
    loop {
        // Answers already read, and deadlines passed.
        let now = Instant::now();
        for (i, &(seat, id, start, deadline)) in pending.iter().enumerate() {
            if answers[i].is_some() {
                continue;
            }
            let Some(bot) = players[seat].as_mut().and_then(Player::process) else {
                answers[i] = Some(Err(Fault::new(FaultKind::Crash, "no process for this seat")));
                continue;
            };
            match reply_in_buffer(bot, id, start, &mut lines[i]) {
                Ok(Some(reply)) => answers[i] = Some(Ok(reply)),
                Ok(None) if now >= deadline => answers[i] = Some(Err(timeout(start))),
                Ok(None) => {}
                Err(f) => answers[i] = Some(Err(f)),
            }
        }
        let open: Vec<usize> = (0..pending.len()).filter(|&i| answers[i].is_none()).collect();
        if open.is_empty() {
            return answers
                .into_iter()
                .map(|a| a.unwrap_or_else(|| Err(timeout(Instant::now()))))
                .collect();
        }
        let deadline = open.iter().map(|&i| pending[i].3).min().unwrap_or(now);
        let ready = {
            let fds: Vec<_> = open
                .iter()
                .filter_map(|&i| {
                    players[pending[i].0].as_ref().and_then(|p| match &p.kind {
                        Kind::Process(bot) => Some(bot.stdout_fd()),
                        _ => None,
                    })
                })
                .collect();
            match crate::process::wait_readable(&fds, deadline) {
                Ok(r) => r,
                Err(f) => {
                    for &i in &open {
                        answers[i] = Some(Err(f.clone()));
                    }
                    continue;
                }
            }
        };
        for k in ready {
            let seat = pending[open[k]].0;
            if let Some(bot) = players[seat].as_mut().and_then(Player::process) {
                bot.on_readable();
            }
        }
    }
}

fn timeout(start: Instant) -> Fault {
    Fault::new(
        FaultKind::Timeout,
        format!("no move within {} ms", start.elapsed().as_millis()),
    )
}

/// The reply to request `id` if it has been read; late replies are counted and dropped.
fn reply_in_buffer(
    bot: &mut ProcessBot,
    id: u64,
    start: Instant,
    lines: &mut usize,
) -> Result<Option<Reply>, Fault> {
    loop {
        match bot.take_message(lines)? {
            None => return Ok(None),
            Some(FromBot::Move { id: got, mv }) if got == id => {
                return Ok(Some(Reply {
                    mv,
                    elapsed: start.elapsed(),
                    info: std::mem::take(&mut bot.info),
                }));
            }
            Some(FromBot::Move { id: got, mv }) => {
                bot.late_replies += 1;
                tracing::warn!(
                    bot = bot.command(),
                    id = got,
                    mv,
                    expected = id,
                    "late reply discarded"
                );
            }
            Some(FromBot::ReadyOk) => {}
            Some(other) => {
                return Err(Fault::new(
                    FaultKind::Malformed,
                    format!("{other} while a move was expected"),
                ));
            }
        }
    }
}

fn wait_reply(bot: &mut ProcessBot, id: u64, start: Instant, deadline: Instant) -> Result<Reply, Fault> {
    let mut lines = MAX_LINES_PER_REQUEST;
    loop {
        if let Some(reply) = reply_in_buffer(bot, id, start, &mut lines)? {
            return Ok(reply);
        }
        if crate::process::wait_readable(&[bot.stdout_fd()], deadline)?.is_empty() {
            return Err(timeout(start));
        }
        bot.on_readable();
    }
}

fn view_of<'a>(req: &'a MoveRequest, observation: &'a serde_json::Value, legal: &'a [&'a str]) -> View<'a> {
    View {
        game: req.game,
        seat: req.seat,
        seats: req.seats,
        options: &req.options,
        observation,
        legal,
        time_ms: req.time_ms,
        movetime_ms: req.movetime_ms,
    }
}

/// Every option to set must be one the bot declared, with a value it takes.
fn check_options(hello: &Hello, options: &[(String, String)]) -> Result<(), Fault> {
    for (name, value) in options {
        let decl = hello.options.iter().find(|d| &d.name == name).ok_or_else(|| {
            Fault::new(
                FaultKind::Handshake,
                format!("the bot declares no option {name:?}"),
            )
        })?;
        decl.check(value)
            .map_err(|e| Fault::new(FaultKind::Handshake, e))?;
    }
    Ok(())
}

fn handshake_with(bot: &mut ProcessBot, limit: Duration) -> Result<Hello, Fault> {
    let deadline = Instant::now() + limit;
    bot.queue(&ToBot::Hello {
        version: PROTOCOL_VERSION,
    });
    bot.flush_queue(deadline).map_err(as_handshake)?;
    let mut hello = Hello::default();
    let mut lines = MAX_LINES_PER_REQUEST;
    loop {
        match bot.next_message(deadline, FaultKind::Handshake, &mut lines) {
            Ok(FromBot::Id { name, author }) => {
                hello.name = name.or(hello.name);
                hello.author = author.or(hello.author);
            }
            Ok(FromBot::Option(decl)) => hello.options.push(decl),
            Ok(FromBot::HelloOk { version }) if version == PROTOCOL_VERSION => return Ok(hello),
            Ok(FromBot::HelloOk { version }) => {
                return Err(Fault::new(
                    FaultKind::Handshake,
                    format!("the bot speaks protocol version {version}, the referee {PROTOCOL_VERSION}"),
                ));
            }
            Ok(other) => {
                return Err(Fault::new(
                    FaultKind::Handshake,
                    format!("unexpected {other} during the handshake"),
                ));
            }
            Err(f) if f.kind == FaultKind::Handshake => {
                return Err(Fault::new(
                    FaultKind::Handshake,
                    format!("no astragalok within {} ms", limit.as_millis()),
                ));
            }
            Err(f) => return Err(as_handshake(f)),
        }
    }
}

/// A fault during the handshake is reported as a handshake fault, keeping the cause.
fn as_handshake(f: Fault) -> Fault {
    Fault::new(FaultKind::Handshake, format!("{}: {}", f.kind, f.detail))
}

fn ping_bot(bot: &mut ProcessBot, limit: Duration) -> Result<(), Fault> {
    let deadline = Instant::now() + limit;
    bot.queue(&ToBot::IsReady);
    bot.flush_queue(deadline)?;
    let mut lines = MAX_LINES_PER_REQUEST;
    loop {
        match bot.next_message(deadline, FaultKind::Stall, &mut lines)? {
            FromBot::ReadyOk => return Ok(()),
            FromBot::Move { .. } => bot.late_replies += 1, // an old answer: discarded
            other => {
                return Err(Fault::new(
                    FaultKind::Malformed,
                    format!("{other} in answer to isready"),
                ));
            }
        }
    }
}

fn ask_human(req: &MoveRequest) -> Result<String, Fault> {
    let legal = req.legal.list();
    let stdin = std::io::stdin();
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\n{}", req.render.as_deref().unwrap_or(""));
    for (i, m) in legal.iter().enumerate() {
        let _ = write!(err, "{:>3}) {m:<12}", i + 1);
        if (i + 1) % 5 == 0 {
            let _ = writeln!(err);
        }
    }
    loop {
        let _ = write!(err, "\nseat {}: your move (number or text): ", req.seat);
        let _ = err.flush();
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => return Err(Fault::new(FaultKind::Crash, "the terminal closed")),
            Ok(_) => {}
        }
        let t = line.trim();
        if let Ok(n) = t.parse::<usize>()
            && (1..=legal.len()).contains(&n)
        {
            return Ok(legal[n - 1].to_owned());
        }
        if legal.contains(&t) {
            return Ok(t.to_owned());
        }
        let _ = write!(err, "{t:?} is not one of the moves above.");
    }
}
