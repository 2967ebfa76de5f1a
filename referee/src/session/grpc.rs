//! A bot served over gRPC (`--bot grpc://host:port`, or `grpcs://host:port` over
//! TLS): the session's states, ids, deadlines and faults over unary calls, one per
//! exchange.
//!
//! Over `grpcs://` the bot's certificate is verified (against [`Limits::grpc_ca`],
//! else the system's root certificates) before anything is sent, and the seat's secret
//! ([`BOT_SECRET_ENV`] in its environment) goes with every call as
//! `authorization: Bearer SECRET`, so the bot's server can refuse callers that
//! are not the ladder's workers. The secret never travels over plain `grpc://`.
//!
//! Game threads stay synchronous. Each session owns a single-threaded runtime that
//! carries its connection, and whoever waits for a call drives it: when a step asks
//! one seat, the game's own thread sends the request, reads the reply and times it,
//! with no hand-over between threads (what a bare tonic client pays, nothing more).
//! When a step asks several seats, each call is handed to its session's keeper
//! thread the moment it is asked ([`GrpcAsked::start_elsewhere`]), so every bot
//! thinks at once and each reply is timed when it arrives, not when the game gets
//! round to it. The keeper also drives a connection nobody has driven for
//! [`Limits::remote_keep`], until the next call, so a bot server's pings are
//! answered while other seats think (see `conn.rs`).

mod conn;

use super::{Ask, GameOver, Hello, Reply, Table, version_fault};
use crate::clock::Limits;
use crate::dial::{self, CheckedConnector, Dial};
use crate::fault::{Fault, FaultKind};
use conn::Conn;
use proto::grpc::bot_client::BotClient;
use proto::grpc::{GameOverRequest, GoRequest, HelloRequest, NewGameRequest, PingRequest, Played};
use proto::{OptionDecl, PROTOCOL_VERSION};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Status};

/// The seat environment variable whose value a `grpcs://` bot is sent as its
/// secret (its host sets it: `ladder admin register-bot ... --env`).
pub const BOT_SECRET_ENV: &str = "ASTRAGAL_BOT_SECRET";

/// Adds the seat's secret to every call (none: nothing added).
#[derive(Debug, Clone, Default)]
pub struct SecretHeader(Option<MetadataValue<Ascii>>);

impl tonic::service::Interceptor for SecretHeader {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert("authorization", v.clone());
        }
        Ok(request)
    }
}

/// Largest message taken from a gRPC bot: a line's limit (`MAX_BOT_LINE`) and room
/// for its `info`; a larger reply is a `malformed` fault.
pub const MAX_GRPC_REPLY: usize = 2 * proto::MAX_BOT_LINE;

/// What a gRPC failure means for the seat.
fn fault_of(status: &Status, what: &str, on_deadline: FaultKind) -> Fault {
    match status.code() {
        Code::DeadlineExceeded | Code::Cancelled => {
            Fault::new(on_deadline, format!("{what}: no answer before the deadline"))
        }
        // The transport's words may name the server's address: private.
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Aborted => Fault::with_private(
            FaultKind::Crash,
            format!("{what}: the bot server failed"),
            format!(": {}", status.message()),
        ),
        _ => Fault::new(
            FaultKind::Malformed,
            format!("{what}: {:?} {}", status.code(), status.message()),
        ),
    }
}

/// A [`Dial::PublicOnly`] seat that could not be connected: its author reads
/// [`dial::COULD_NOT_CONNECT`] and nothing else (not the address, not why: the
/// check report of a stranger's bot must not map the host's network); this
/// process's log says why.
fn could_not_connect(url: &str, why: &dyn std::fmt::Display) -> Fault {
    tracing::warn!(bot = url, "a remote bot not connected: {why}");
    Fault::new(FaultKind::Spawn, dial::COULD_NOT_CONNECT)
}

/// A fault as a seat dialled by `dial` is told it: for [`Dial::PublicOnly`],
/// without the transport's words (logged here instead).
fn told(dial: Dial, fault: Fault) -> Fault {
    match dial {
        Dial::PublicOnly if !fault.private.is_empty() => {
            tracing::info!("a remote bot's call failed: {}{}", fault.detail, fault.private);
            fault.without_private()
        }
        _ => fault,
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

/// A move call: asking, its reply checked and timed, bounded by the deadline and
/// the slack.
type Call = Pin<Box<dyn Future<Output = Result<Reply, Fault>> + Send>>;

/// A move request over gRPC, sent by whichever thread drives it.
pub struct GrpcAsked {
    state: AskedState,
}

enum AskedState {
    /// Driven by the thread that waits: sent when waited for.
    Here { call: Call, conn: Arc<Conn> },
    /// Driven by the keeper since it was asked; the answer comes here.
    Elsewhere(mpsc::Receiver<Result<Reply, Fault>>),
}

impl std::fmt::Debug for GrpcAsked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.state {
            AskedState::Here { .. } => "GrpcAsked(here)",
            AskedState::Elsewhere(_) => "GrpcAsked(elsewhere)",
        })
    }
}

/// A session with a bot behind a gRPC endpoint.
#[derive(Debug)]
pub struct GrpcSession {
    conn: Arc<Conn>,
    client: BotClient<InterceptedService<Channel, SecretHeader>>,
    hello: Hello,
    session: String,
    options: HashMap<String, String>,
    events: Vec<Played>,
    last_id: u64,
    notice: Duration,
    slack: Duration,
    /// How its address was dialled, and so how much its faults say.
    dial: Dial,
}

impl GrpcSession {
    /// Connects to `url` (`grpc://` or `http://`), dialled anywhere (the host
    /// named it), and shakes hands, within `limits.handshake`.
    ///
    /// # Errors
    /// [`FaultKind::Spawn`] if the endpoint cannot be reached, [`FaultKind::Handshake`]
    /// for a failed handshake.
    pub fn open(url: &str, limits: &Limits) -> Result<GrpcSession, Fault> {
        GrpcSession::open_with(url, limits, None, Dial::Anywhere)
    }

    /// [`GrpcSession::open`] with the seat's `secret` for a `grpcs://` bot, dialled
    /// as `dial` says: a [`Dial::PublicOnly`] seat's name is resolved once, only
    /// the addresses [`dial::resolve_public`] keeps are dialled, and every failure
    /// to connect (or to shake hands over the transport) reads
    /// [`dial::COULD_NOT_CONNECT`] alone, the rest going to this process's log.
    ///
    /// # Errors
    /// As [`GrpcSession::open`]; a certificate that does not verify is a
    /// [`FaultKind::Spawn`] too (nothing was sent to that server).
    pub fn open_with(
        url: &str,
        limits: &Limits,
        secret: Option<&str>,
        dial: Dial,
    ) -> Result<GrpcSession, Fault> {
        let tls = url.starts_with("grpcs://");
        let as_named = url;
        let url = url
            .replacen("grpcs://", "https://", 1)
            .replacen("grpc://", "http://", 1);
        let limit = limits.handshake;
        let deadline = Instant::now() + limit;
        // A stranger's address that does not even parse says no more than one
        // that does not answer (`127.1`, a scoped address): the same words.
        let setup_fault = |what: &str, e: &dyn std::fmt::Display| match dial {
            Dial::PublicOnly => could_not_connect(as_named, &format!("{what}: {e}")),
            Dial::Anywhere => Fault::with_private(FaultKind::Spawn, what, format!(" for {url:?}: {e}")),
        };
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| setup_fault("bad gRPC address", &e))?
            .connect_timeout(limit)
            .tcp_nodelay(true);
        let mut header = SecretHeader::default();
        if tls {
            let config = match &limits.grpc_ca {
                Some(ca) => ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca)),
                None => ClientTlsConfig::new().with_native_roots(),
            };
            endpoint = endpoint
                .tls_config(config)
                .map_err(|e| setup_fault("bad TLS setup", &crate::cli::error_chain(&e)))?;
            if let Some(secret) = secret {
                let value = format!("Bearer {secret}").parse().map_err(|_| {
                    Fault::new(
                        FaultKind::Spawn,
                        format!("the bot's secret ({BOT_SECRET_ENV}) is not visible ASCII"),
                    )
                })?;
                header = SecretHeader(Some(value));
            }
        }
        let conn = Conn::open(limits.remote_keep)?;
        let opened = conn.drive(async {
            let channel = match dial {
                Dial::Anywhere => endpoint.connect().await.map_err(|e| {
                    Fault::with_private(FaultKind::Spawn, "cannot reach", format!(" {url}: {e}"))
                })?,
                Dial::PublicOnly => {
                    let uri = endpoint.uri().clone();
                    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
                    let host = uri.host().unwrap_or_default();
                    let resolved = tokio::time::timeout_at(
                        tokio::time::Instant::from_std(deadline),
                        dial::resolve_public(host, port, &limits.remote_allow),
                    )
                    .await;
                    let addrs = match resolved {
                        Ok(Ok(addrs)) => addrs,
                        Ok(Err(why)) => return Err(could_not_connect(as_named, &why)),
                        Err(_) => {
                            return Err(could_not_connect(as_named, &"the name did not resolve in time"));
                        }
                    };
                    // The URI keeps the name, for TLS; the connection goes to
                    // the addresses just checked, and only to them.
                    endpoint
                        .connect_with_connector(CheckedConnector::new(addrs))
                        .await
                        .map_err(|e| could_not_connect(as_named, &crate::cli::error_chain(&e)))?
                }
            };
            // A reply is a move and a few info lines: anything near a line's limit is
            // refused by the transport, not read into memory and copied into a fault.
            let mut client =
                BotClient::with_interceptor(channel, header).max_decoding_message_size(MAX_GRPC_REPLY);
            let reply = client
                .hello(with_deadline(
                    HelloRequest {
                        version: PROTOCOL_VERSION,
                    },
                    deadline,
                ))
                .await
                .map_err(|s| {
                    let f = fault_of(&s, "hello", FaultKind::Handshake);
                    told(
                        dial,
                        Fault::with_private(FaultKind::Handshake, f.detail, f.private),
                    )
                })?
                .into_inner();
            Ok::<_, Fault>((client, reply))
        });
        let (client, hello) = opened.inspect_err(|_| conn.close())?;
        if hello.version != PROTOCOL_VERSION {
            conn.close();
            return Err(version_fault(hello.version));
        }
        let info = Hello {
            name: (!hello.name.is_empty()).then_some(hello.name),
            author: (!hello.author.is_empty()).then_some(hello.author),
            options: hello
                .options
                .into_iter()
                .filter_map(OptionDecl::from_grpc)
                .collect(),
        };
        Ok(GrpcSession {
            conn,
            client,
            hello: info,
            session: session_id(),
            options: HashMap::new(),
            events: Vec::new(),
            last_id: 0,
            notice: limits.remote_notice,
            slack: limits.remote_slack,
            dial,
        })
    }

    /// What the bot said in its handshake.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Remembers a bot option, sent with the next game.
    pub fn set_option(&mut self, name: &str, value: &str) {
        self.options.insert(name.to_owned(), value.to_owned());
    }

    /// `NewGame` and a `Ping`, within `ping`. Ids start afresh.
    ///
    /// # Errors
    /// [`FaultKind::Stall`] without an answer in time, or a failed call.
    pub fn new_game(&mut self, table: &Table<'_>, ping: Duration) -> Result<(), Fault> {
        self.last_id = 0;
        self.events.clear();
        let deadline = Instant::now() + ping;
        let req = NewGameRequest {
            session: self.session.clone(),
            game: table.game.to_owned(),
            seats: table.seats as u32,
            seat: table.seat as u32,
            options: table.options.to_vec(),
            bot_options: self.options.clone(),
            salt: table.bot_salt,
        };
        let mut client = self.client.clone();
        let session = self.session.clone();
        let dial = self.dial;
        self.conn.drive(async move {
            client
                .new_game(with_deadline(req, deadline))
                .await
                .map_err(|s| told(dial, fault_of(&s, "newgame", FaultKind::Stall)))?;
            client
                .ping(with_deadline(PingRequest { session }, deadline))
                .await
                .map_err(|s| told(dial, fault_of(&s, "ping", FaultKind::Stall)))?;
            Ok(())
        })
    }

    /// Queues another seat's public move for the next request.
    pub fn queue_played(&mut self, seat: usize, mv: &str) {
        self.events.push(Played {
            seat: seat as u32,
            r#move: mv.to_owned(),
        });
    }

    /// Makes a move request, sent when it is waited for or started elsewhere.
    pub fn ask(&mut self, ask: &Ask<'_>) -> GrpcAsked {
        self.last_id += 1;
        let id = self.last_id;
        let req = GoRequest {
            session: self.session.clone(),
            id,
            seat: ask.seat as u32,
            time_ms: ask.clock.time_ms,
            inc_ms: ask.clock.inc_ms,
            movetime_ms: ask.clock.movetime_ms,
            legal: ask.game.legal_moves(ask.seat),
            observation_json: ask.game.observation_json(ask.seat),
            events: std::mem::take(&mut self.events),
        };
        let mut client = self.client.clone();
        let (deadline, slack, dial) = (ask.deadline, self.slack, self.dial);
        let call = async move {
            let start = Instant::now();
            // The call's own deadline fires first, so a late bot is reported by its
            // call; the slack bounds a call whose deadline the transport lost.
            let bound = deadline.saturating_duration_since(start) + slack;
            match tokio::time::timeout(bound, client.go(with_deadline(req, deadline))).await {
                Ok(Ok(r)) => {
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
                Ok(Err(s)) => Err(told(dial, fault_of(&s, "go", FaultKind::Timeout))),
                Err(_) => Err(Fault::new(
                    FaultKind::Timeout,
                    "no answer from the bot server before the deadline",
                )),
            }
        };
        GrpcAsked {
            state: AskedState::Here {
                call: Box::pin(call),
                conn: Arc::clone(&self.conn),
            },
        }
    }

    /// Tells the bot the game ended (with the events it has not seen).
    pub fn game_over(&mut self, over: &GameOver) {
        let req = GameOverRequest {
            session: self.session.clone(),
            ranks: over.ranks.iter().map(|&r| u32::from(r)).collect(),
            scores: over.scores.clone(),
            reason: over.reason.clone(),
            detail: over.detail.clone().unwrap_or_default(),
            events: std::mem::take(&mut self.events),
        };
        let mut client = self.client.clone();
        let deadline = Instant::now() + self.notice;
        let _ = self
            .conn
            .drive(async move { client.game_over(with_deadline(req, deadline)).await });
    }
}

impl Drop for GrpcSession {
    fn drop(&mut self) {
        self.conn.close();
    }
}

impl GrpcAsked {
    /// Sends the request now from the session's keeper thread, which reads and
    /// times the reply while this thread asks the other seats of a step. Without
    /// a keeper, the request stays here and is sent when waited for.
    pub fn start_elsewhere(&mut self) {
        let (tx, rx) = mpsc::channel();
        let state = std::mem::replace(&mut self.state, AskedState::Elsewhere(rx));
        let AskedState::Here { call, conn } = state else {
            self.state = state;
            return;
        };
        if let Err((call, _)) = conn.hand(call, tx) {
            self.state = AskedState::Here { call, conn };
        }
    }

    /// The answer: the call is driven here unless it was started elsewhere. The
    /// call ends by its deadline and slack.
    ///
    /// # Errors
    /// The call's fault, or a timeout.
    pub fn wait(self) -> Result<Reply, Fault> {
        match self.state {
            AskedState::Here { call, conn } => conn.drive(call),
            AskedState::Elsewhere(rx) => rx.recv().unwrap_or_else(|_| {
                Err(Fault::new(
                    FaultKind::Crash,
                    "the gRPC session's keeper ended without an answer",
                ))
            }),
        }
    }
}

/// A session id the bot server keys its games by: 128 bits from the operating
/// system's random source, so it tells the bot nothing about the referee (no
/// process id, no count of earlier sessions).
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No random source: still unique within this process, and still no pid.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        bytes[..8].copy_from_slice(
            &NEXT
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                .to_le_bytes(),
        );
    }
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::session_id;

    #[test]
    fn session_ids_are_random_and_carry_no_process_id() {
        let pid = std::process::id();
        let ids: Vec<String> = (0..1000).map(|_| session_id()).collect();
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "ids repeat");
        for id in &ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
        // No byte position is fixed across ids (a pid or a counter would be).
        for at in (0..32).step_by(2) {
            let values: std::collections::HashSet<&str> = ids.iter().map(|id| &id[at..at + 2]).collect();
            assert!(
                values.len() > 100,
                "byte {} takes only {} values",
                at / 2,
                values.len()
            );
        }
        let (dec, hex) = (pid.to_string(), format!("{pid:x}"));
        let with_pid = ids
            .iter()
            .filter(|id| id.contains(&dec) || id.contains(&hex))
            .count();
        assert!(with_pid < 50, "{with_pid} of 1000 ids hold the pid {pid}");
    }
}
