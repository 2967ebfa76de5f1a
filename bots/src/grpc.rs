//! Serving a [`Bot`] over gRPC: the reference implementation of the `Bot` service
//! of `proto/astragal/v1/bot.proto` (`astragal-bot --grpc ADDR`).

use crate::{Bot, View};
use proto::PROTOCOL_VERSION;
use proto::grpc::bot_server::{Bot as BotRpc, BotServer};
use proto::grpc::{
    GameOverReply, GameOverRequest, GoReply, GoRequest, HelloReply, HelloRequest, NewGameReply,
    NewGameRequest, OptionDecl as GrpcOption, PingReply, PingRequest,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tonic::{Request, Response, Status};

/// Makes a fresh bot for each game.
pub type BotFactory = Arc<dyn Fn() -> Box<dyn Bot> + Send + Sync>;

struct Session {
    bot: Option<Box<dyn Bot>>,
    game: String,
    seats: usize,
    options: Vec<String>,
}

/// The `Bot` service for one kind of bot; one bot per game (session).
pub struct BotService {
    make: BotFactory,
    author: String,
    sessions: Mutex<HashMap<String, Session>>,
}

impl BotService {
    /// A service making its bots with `make`.
    pub fn new(make: BotFactory, author: &str) -> BotService {
        BotService {
            make,
            author: author.to_owned(),
            sessions: Mutex::new(HashMap::new()),
        }
    }
}

#[tonic::async_trait]
impl BotRpc for BotService {
    async fn hello(&self, request: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        if request.get_ref().version != PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "this bot speaks protocol version {PROTOCOL_VERSION}, not {}",
                request.get_ref().version
            )));
        }
        let bot = (self.make)();
        Ok(Response::new(HelloReply {
            name: bot.name(),
            author: self.author.clone(),
            options: bot.options().into_iter().map(GrpcOption::from).collect(),
            version: PROTOCOL_VERSION,
        }))
    }

    async fn new_game(&self, request: Request<NewGameRequest>) -> Result<Response<NewGameReply>, Status> {
        let r = request.into_inner();
        let mut bot = (self.make)();
        for (name, value) in &r.bot_options {
            bot.set_option(name, value).map_err(Status::invalid_argument)?;
        }
        bot.new_game(&r.game, r.seats as usize, r.seat as usize, &r.options);
        // 0: a referee that sends no salt (proto3 has no "absent" for numbers).
        if r.salt != 0 {
            bot.salt_game(r.salt);
        }
        let session = Session {
            bot: Some(bot),
            game: r.game,
            seats: r.seats as usize,
            options: r.options,
        };
        self.sessions
            .lock()
            .map_err(|_| Status::internal("poisoned"))?
            .insert(r.session, session);
        Ok(Response::new(NewGameReply {}))
    }

    async fn ping(&self, _request: Request<PingRequest>) -> Result<Response<PingReply>, Status> {
        Ok(Response::new(PingReply {}))
    }

    async fn go(&self, request: Request<GoRequest>) -> Result<Response<GoReply>, Status> {
        let r = request.into_inner();
        let (bot, game, seats, options) = {
            let mut sessions = self.sessions.lock().map_err(|_| Status::internal("poisoned"))?;
            let s = sessions
                .get_mut(&r.session)
                .ok_or_else(|| Status::not_found(format!("no game session {:?}", r.session)))?;
            let bot = s
                .bot
                .take()
                .ok_or_else(|| Status::failed_precondition("a request is already in flight"))?;
            (bot, s.game.clone(), s.seats, s.options.clone())
        };
        let quick = !bot.thinks_long();
        if r.legal.is_empty() {
            return Err(Status::invalid_argument("no legal moves"));
        }
        let think = move || {
            let observation = if bot.reads_observations() {
                serde_json::from_str(&r.observation_json).unwrap_or(serde_json::Value::Null)
            } else {
                serde_json::Value::Null
            };
            let legal: Vec<&str> = r.legal.iter().map(String::as_str).collect();
            let view = View {
                game: &game,
                seat: r.seat as usize,
                seats,
                options: &options,
                observation: &observation,
                legal: &legal,
                time_ms: r.time_ms,
                movetime_ms: r.movetime_ms,
            };
            let mut bot = bot;
            let mv = bot.choose(&view);
            (bot, mv)
        };
        // A search may take a while: tell the runtime this thread blocks (cheaper
        // than handing the work to another thread, and as safe for the other
        // calls). A quick bot answers here: the hand-over would cost more than it.
        let (bot, mv) = if quick {
            think()
        } else {
            tokio::task::block_in_place(think)
        };
        if let Ok(mut sessions) = self.sessions.lock()
            && let Some(s) = sessions.get_mut(&r.session)
        {
            s.bot = Some(bot);
        }
        Ok(Response::new(GoReply {
            id: r.id,
            r#move: mv,
            info: Vec::new(),
        }))
    }

    async fn game_over(&self, request: Request<GameOverRequest>) -> Result<Response<GameOverReply>, Status> {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(&request.get_ref().session);
        }
        Ok(Response::new(GameOverReply {}))
    }
}

/// Serves bots made by `make` on `addr` until `shutdown` completes.
///
/// # Errors
/// The address cannot be bound, or the server fails.
pub async fn serve(
    addr: SocketAddr,
    make: BotFactory,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(BotServer::new(BotService::new(make, "astragal")))
        .serve_with_shutdown(addr, shutdown)
        .await
}

/// Serves on an already bound listener (tests bind `127.0.0.1:0`).
///
/// # Errors
/// The server fails.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    make: BotFactory,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(BotServer::new(BotService::new(make, "astragal")))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}
