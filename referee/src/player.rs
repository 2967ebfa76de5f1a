//! A seat's player: a process, a built-in bot, or a person; one interface.

use crate::fault::{Fault, FaultKind};
use crate::process::{MAX_LINES_PER_REQUEST, ProcessBot};
use crate::spec::BotSpec;
use bots::{Bot, View};
use proto::{FromBot, OptionDecl, PROTOCOL_VERSION, ToBot};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

/// Everything a seat is told when it must decide.
#[derive(Debug, Clone)]
pub struct MoveRequest {
    /// Request id (echoed by the reply).
    pub id: u64,
    /// Game id.
    pub game: String,
    /// The game's options.
    pub options: Vec<String>,
    /// Seats in the game.
    pub seats: usize,
    /// The deciding seat.
    pub seat: usize,
    /// Legal moves.
    pub legal: Vec<String>,
    /// The seat's observation.
    pub observation: serde_json::Value,
    /// Clock left (clock controls only).
    pub time_ms: Option<u64>,
    /// Increment (clock controls only).
    pub inc_ms: Option<u64>,
    /// Time for this move (move-time controls only).
    pub movetime_ms: Option<u64>,
    /// The position drawn for people (asked only for human players).
    pub render: Option<String>,
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
    Builtin(Option<Box<dyn Bot>>),
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

impl Player {
    /// Starts a player: spawns and shakes hands with a process, or builds a built-in
    /// bot; then sets `options` (each must be one the bot declared).
    ///
    /// # Errors
    /// A [`Fault`] naming what went wrong (spawn, handshake, a refused option).
    pub async fn start(
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
                    kind: Kind::Builtin(Some(bot)),
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
            BotSpec::Process { command } => {
                let mut bot = ProcessBot::spawn(command, stderr_log)?;
                let hello = handshake_with(&mut bot, handshake).await?;
                for (name, value) in options {
                    let decl = hello.options.iter().find(|d| &d.name == name).ok_or_else(|| {
                        Fault::new(
                            FaultKind::Handshake,
                            format!("the bot declares no option {name:?}"),
                        )
                    })?;
                    decl.check(value)
                        .map_err(|e| Fault::new(FaultKind::Handshake, e))?;
                    bot.send(&ToBot::SetOption {
                        name: name.clone(),
                        value: value.clone(),
                    })
                    .await?;
                }
                Ok(Player {
                    hello,
                    spec: spec.clone(),
                    kind: Kind::Process(Box::new(bot)),
                })
            }
        }
    }

    /// The name to show: announced name, else the spec's short name.
    pub fn name(&self) -> String {
        self.hello.name.clone().unwrap_or_else(|| self.spec.short_name())
    }

    /// Tells the player a game starts, and checks it is responsive (`isready`).
    ///
    /// # Errors
    /// [`FaultKind::Stall`] without `readyok` in time, or any read fault.
    pub async fn new_game(
        &mut self,
        game: &str,
        seats: usize,
        seat: usize,
        options: &[String],
        ping: Duration,
    ) -> Result<(), Fault> {
        match &mut self.kind {
            Kind::Process(bot) => {
                bot.send(&ToBot::NewGame {
                    game: game.to_owned(),
                    seats,
                    seat,
                    options: options.to_vec(),
                })
                .await?;
                ping_bot(bot, ping).await
            }
            Kind::Builtin(Some(bot)) => {
                bot.new_game(game, seats, seat, options);
                Ok(())
            }
            Kind::Builtin(None) | Kind::Human => Ok(()),
        }
    }

    /// Asks for a move; waits until `deadline` (built-in bots and people are not
    /// timed out).
    ///
    /// # Errors
    /// Any fault of the seat while waiting.
    pub async fn request(&mut self, req: &MoveRequest, deadline: Instant) -> Result<Reply, Fault> {
        match &mut self.kind {
            Kind::Process(bot) => request_process(bot, req, deadline).await,
            Kind::Builtin(slot) => {
                let mut bot = slot
                    .take()
                    .ok_or_else(|| Fault::new(FaultKind::Crash, "the built-in bot was lost"))?;
                let req2 = req.clone();
                let start = Instant::now();
                let joined = tokio::task::spawn_blocking(move || {
                    let mv = bot.choose(&view_of(&req2));
                    (bot, mv)
                })
                .await;
                match joined {
                    Ok((bot, mv)) => {
                        *slot = Some(bot);
                        Ok(Reply {
                            mv,
                            elapsed: start.elapsed(),
                            info: Vec::new(),
                        })
                    }
                    Err(e) => Err(Fault::new(
                        FaultKind::Crash,
                        format!("the built-in bot panicked: {e}"),
                    )),
                }
            }
            Kind::Human => {
                let req2 = req.clone();
                let start = Instant::now();
                let mv = tokio::task::spawn_blocking(move || ask_human(&req2))
                    .await
                    .map_err(|e| Fault::new(FaultKind::Crash, e.to_string()))??;
                Ok(Reply {
                    mv,
                    elapsed: start.elapsed(),
                    info: Vec::new(),
                })
            }
        }
    }

    /// Tells the player something that needs no answer. `played` is queued and goes
    /// out with the player's next message; anything else is sent now. A bot that
    /// cannot hear it any more is not the referee's problem now.
    pub async fn notify(&mut self, msg: &ToBot) {
        match &mut self.kind {
            Kind::Process(bot) if matches!(msg, ToBot::Played { .. }) => bot.queue(msg),
            Kind::Process(bot) => {
                let _ = bot.send(msg).await;
            }
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

    /// Late replies discarded so far (process bots).
    pub fn late_replies(&self) -> u64 {
        match &self.kind {
            Kind::Process(bot) => bot.late_replies,
            _ => 0,
        }
    }

    /// Ends the player: `quit`, then kill and reap a process that lingers. Returns
    /// whether it left by itself within `grace`.
    pub async fn shutdown(self, grace: Duration) -> bool {
        match self.kind {
            Kind::Process(bot) => bot.shutdown(grace).await,
            Kind::Builtin(_) | Kind::Human => true,
        }
    }
}

fn view_of(req: &MoveRequest) -> View<'_> {
    View {
        game: &req.game,
        seat: req.seat,
        seats: req.seats,
        options: &req.options,
        observation: &req.observation,
        legal: &req.legal,
        time_ms: req.time_ms,
        movetime_ms: req.movetime_ms,
    }
}

async fn handshake_with(bot: &mut ProcessBot, limit: Duration) -> Result<Hello, Fault> {
    bot.send(&ToBot::Hello {
        version: PROTOCOL_VERSION,
    })
    .await
    .map_err(as_handshake)?;
    let deadline = Instant::now() + limit;
    let mut hello = Hello::default();
    let mut lines = MAX_LINES_PER_REQUEST;
    loop {
        match bot.next_message(deadline, FaultKind::Handshake, &mut lines).await {
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

async fn ping_bot(bot: &mut ProcessBot, limit: Duration) -> Result<(), Fault> {
    bot.send(&ToBot::IsReady).await?;
    let deadline = Instant::now() + limit;
    let mut lines = MAX_LINES_PER_REQUEST;
    loop {
        match bot.next_message(deadline, FaultKind::Stall, &mut lines).await? {
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

async fn request_process(bot: &mut ProcessBot, req: &MoveRequest, deadline: Instant) -> Result<Reply, Fault> {
    let go = ToBot::Go {
        id: req.id,
        seat: req.seat,
        time_ms: req.time_ms,
        inc_ms: req.inc_ms,
        movetime_ms: req.movetime_ms,
        legal: req.legal.clone(),
        obs: req.observation.to_string(),
    };
    bot.info.clear();
    bot.send(&go).await?;
    let start = Instant::now(); // the request is flushed: the clock runs
    let mut lines = MAX_LINES_PER_REQUEST;
    loop {
        match bot.next_message(deadline, FaultKind::Timeout, &mut lines).await {
            Ok(FromBot::Move { id, mv }) if id == req.id => {
                return Ok(Reply {
                    mv,
                    elapsed: start.elapsed(),
                    info: std::mem::take(&mut bot.info),
                });
            }
            Ok(FromBot::Move { id, mv }) => {
                bot.late_replies += 1;
                tracing::warn!(
                    bot = bot.command(),
                    id,
                    mv,
                    expected = req.id,
                    "late reply discarded"
                );
            }
            Ok(FromBot::ReadyOk) => {}
            Ok(other) => {
                return Err(Fault::new(
                    FaultKind::Malformed,
                    format!("{other} while a move was expected"),
                ));
            }
            Err(f) if f.kind == FaultKind::Timeout => {
                return Err(Fault::new(
                    FaultKind::Timeout,
                    format!("no move within {} ms", start.elapsed().as_millis()),
                ));
            }
            Err(f) => return Err(f),
        }
    }
}

fn ask_human(req: &MoveRequest) -> Result<String, Fault> {
    let stdin = std::io::stdin();
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\n{}", req.render.as_deref().unwrap_or(""));
    for (i, m) in req.legal.iter().enumerate() {
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
        if let Ok(n) = t.parse::<usize>() {
            if (1..=req.legal.len()).contains(&n) {
                return Ok(req.legal[n - 1].clone());
            }
        }
        if req.legal.iter().any(|m| m == t) {
            return Ok(t.to_owned());
        }
        let _ = write!(err, "{t:?} is not one of the moves above.");
    }
}
