//! A bot served over gRPC (`--bot grpc://host:port`): the same state machine,
//! deadlines and faults as a bot over stdin/stdout.
//!
//! Game threads stay synchronous; gRPC calls run on one shared runtime. A move
//! request is started when it is sent and collected later, so a remote bot thinks
//! while the other seats are asked, and its reply is timed inside the call.

use crate::fault::{Fault, FaultKind};
use crate::player::{Hello, Reply};
use proto::PROTOCOL_VERSION;
use proto::grpc::bot_client::BotClient;
use proto::grpc::{GameOverRequest, GoRequest, HelloRequest, NewGameRequest, PingRequest, Played};
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("referee-grpc")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the gRPC runtime: {e}"))
    })
}

/// What a gRPC failure means for the seat.
fn fault_of(status: &Status, what: &str, on_deadline: FaultKind) -> Fault {
    match status.code() {
        Code::DeadlineExceeded | Code::Cancelled => {
            Fault::new(on_deadline, format!("{what}: no answer before the deadline"))
        }
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Aborted => Fault::new(
            FaultKind::Crash,
            format!("{what}: the bot server failed: {}", status.message()),
        ),
        _ => Fault::new(
            FaultKind::Malformed,
            format!("{what}: {:?} {}", status.code(), status.message()),
        ),
    }
}

fn with_deadline<T>(msg: T, deadline: Instant) -> Request<T> {
    let mut r = Request::new(msg);
    r.set_timeout(
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1)),
    );
    r
}

/// A bot behind a gRPC endpoint, for one game.
#[derive(Debug)]
pub struct RemoteBot {
    client: BotClient<Channel>,
    session: String,
    options: HashMap<String, String>,
    events: Vec<Played>,
}

impl RemoteBot {
    /// Connects to `url` and shakes hands, within `limit`.
    ///
    /// # Errors
    /// [`FaultKind::Spawn`] if the endpoint cannot be reached, [`FaultKind::Handshake`]
    /// for a failed handshake.
    pub fn connect(url: &str, limit: Duration) -> Result<(RemoteBot, Hello), Fault> {
        static SESSIONS: AtomicU64 = AtomicU64::new(0);
        let deadline = Instant::now() + limit;
        let endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| Fault::new(FaultKind::Spawn, format!("bad gRPC address {url:?}: {e}")))?
            .connect_timeout(limit)
            .tcp_nodelay(true);
        let (client, hello) = runtime().block_on(async {
            let channel = endpoint
                .connect()
                .await
                .map_err(|e| Fault::new(FaultKind::Spawn, format!("cannot reach {url}: {e}")))?;
            let mut client = BotClient::new(channel);
            let reply = client
                .hello(with_deadline(
                    HelloRequest {
                        version: PROTOCOL_VERSION,
                    },
                    deadline,
                ))
                .await
                .map_err(|s| fault_of(&s, "hello", FaultKind::Handshake))
                .map_err(|f| Fault::new(FaultKind::Handshake, f.detail))?
                .into_inner();
            Ok::<_, Fault>((client, reply))
        })?;
        if hello.version != PROTOCOL_VERSION {
            return Err(Fault::new(
                FaultKind::Handshake,
                format!(
                    "the bot speaks protocol version {}, the referee {PROTOCOL_VERSION}",
                    hello.version
                ),
            ));
        }
        let info = Hello {
            name: (!hello.name.is_empty()).then_some(hello.name),
            author: (!hello.author.is_empty()).then_some(hello.author),
            options: hello
                .options
                .into_iter()
                .filter_map(bots::grpc::option_from_grpc)
                .collect(),
        };
        let session = format!(
            "{}-{}",
            std::process::id(),
            SESSIONS.fetch_add(1, Ordering::Relaxed)
        );
        Ok((
            RemoteBot {
                client,
                session,
                options: HashMap::new(),
                events: Vec::new(),
            },
            info,
        ))
    }

    /// Remembers a bot option, sent with the next game.
    pub fn set_option(&mut self, name: &str, value: &str) {
        self.options.insert(name.to_owned(), value.to_owned());
    }

    /// `newgame` and a ping, within `ping`.
    ///
    /// # Errors
    /// [`FaultKind::Stall`] without an answer in time, or a failed call.
    pub fn new_game(
        &mut self,
        game: &str,
        seats: usize,
        seat: usize,
        options: &[String],
        ping: Duration,
    ) -> Result<(), Fault> {
        let deadline = Instant::now() + ping;
        let req = NewGameRequest {
            session: self.session.clone(),
            game: game.to_owned(),
            seats: seats as u32,
            seat: seat as u32,
            options: options.to_vec(),
            bot_options: self.options.clone(),
        };
        let mut client = self.client.clone();
        let session = self.session.clone();
        runtime().block_on(async move {
            client
                .new_game(with_deadline(req, deadline))
                .await
                .map_err(|s| fault_of(&s, "newgame", FaultKind::Stall))?;
            client
                .ping(with_deadline(PingRequest { session }, deadline))
                .await
                .map_err(|s| fault_of(&s, "ping", FaultKind::Stall))?;
            Ok(())
        })
    }

    /// Queues another seat's public move for the next request.
    pub fn played(&mut self, seat: usize, mv: &str) {
        self.events.push(Played {
            seat: seat as u32,
            r#move: mv.to_owned(),
        });
    }

    /// Starts a move request; the answer arrives on the returned channel.
    #[allow(clippy::too_many_arguments)]
    pub fn begin_go(
        &mut self,
        id: u64,
        seat: usize,
        time_ms: Option<u64>,
        inc_ms: Option<u64>,
        movetime_ms: Option<u64>,
        legal: Vec<String>,
        observation_json: String,
        deadline: Instant,
    ) -> mpsc::Receiver<Result<Reply, Fault>> {
        let (tx, rx) = mpsc::channel();
        let req = GoRequest {
            session: self.session.clone(),
            id,
            seat: seat as u32,
            time_ms,
            inc_ms,
            movetime_ms,
            legal,
            observation_json,
            events: std::mem::take(&mut self.events),
        };
        let mut client = self.client.clone();
        runtime().spawn(async move {
            let start = Instant::now();
            let result = match client.go(with_deadline(req, deadline)).await {
                Ok(r) => {
                    let r = r.into_inner();
                    if r.id == id {
                        Ok(Reply {
                            mv: r.r#move,
                            elapsed: start.elapsed(),
                            info: r.info,
                        })
                    } else {
                        Err(Fault::new(
                            FaultKind::Malformed,
                            format!("reply to request {} while {id} was asked", r.id),
                        ))
                    }
                }
                Err(s) => Err(fault_of(&s, "go", FaultKind::Timeout)),
            };
            let _ = tx.send(result);
        });
        rx
    }

    /// Tells the bot the game ended (with the events it has not seen).
    pub fn game_over(&mut self, ranks: &[u8], scores: &[i64], reason: &str, detail: Option<&str>) {
        let req = GameOverRequest {
            session: self.session.clone(),
            ranks: ranks.iter().map(|&r| u32::from(r)).collect(),
            scores: scores.to_vec(),
            reason: reason.to_owned(),
            detail: detail.unwrap_or_default().to_owned(),
            events: std::mem::take(&mut self.events),
        };
        let mut client = self.client.clone();
        let deadline = Instant::now() + Duration::from_millis(500);
        let _ = runtime().block_on(async move { client.game_over(with_deadline(req, deadline)).await });
    }
}

/// Waits for a remote answer until `deadline` (and a little slack for the call's
/// own deadline to fire first).
pub fn wait(rx: &mpsc::Receiver<Result<Reply, Fault>>, deadline: Instant) -> Result<Reply, Fault> {
    let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(200);
    rx.recv_timeout(left).unwrap_or_else(|_| {
        Err(Fault::new(
            FaultKind::Timeout,
            "no answer from the bot server before the deadline",
        ))
    })
}
