//! `referee bench`: what the protocol costs. Decisions per second through the
//! referee with the smallest compiled bot, beside a raw pipe round trip of the same
//! message sizes (the physical floor), and how games per second scale with
//! concurrency.

use referee::clock::{Limits, TimeControl};
use referee::game::{BotPool, GameSetup, LogPlace, SeatSetup, play_game_in};
use referee::matchplay::{MatchConfig, run_match};
use referee::player::Player;
use referee::sandbox::{Level, Sandbox};
use referee::spec::BotSpec;
use referee::transport::wait_readable;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Game id.
    pub game: String,
    /// Game options.
    pub options: Vec<String>,
    /// The bot program (the minimal `astragal-bot --bot first`).
    pub bot: String,
    /// Seats (the game's default if `None`).
    pub seats: Option<usize>,
    /// Decisions to make through the protocol.
    pub decisions: u64,
    /// Games for the concurrency comparison.
    pub scaling_games: u64,
    /// Rounds of protocol-then-raw measurements (medians are reported: wall time
    /// on a shared machine is noisy, and interleaving exposes both to the same noise).
    pub rounds: usize,
    /// How the bot processes are contained.
    pub sandbox: Sandbox,
}

/// What was measured.
#[derive(Debug, Clone, Default)]
pub struct BenchReport {
    /// Decisions per second through the referee (game loop time).
    pub protocol_rate: f64,
    /// Average request line length in bytes.
    pub request_bytes: usize,
    /// Average reply line length in bytes.
    pub reply_bytes: usize,
    /// Round trips per second through a bare pipe with those sizes.
    pub raw_rate: f64,
    /// Median of the per-round protocol / raw ratios.
    pub ratio: f64,
    /// Each round's protocol / raw ratio, in the order measured.
    pub round_ratios: Vec<f64>,
    /// The referee's own work per decision in microseconds, without I/O: legal
    /// moves, observation and `go` line, then the reply read and played.
    pub work_us: f64,
    /// Round trips per second through the same pipes when each is preceded by a
    /// busy pause of `work_us`, as the referee's are.
    pub paused_raw_rate: f64,
    /// Median of the per-round protocol / paused raw ratios.
    pub paused_ratio: f64,
    /// Rounds measured.
    pub rounds: usize,
    /// Games per second at concurrency 1 and 2.
    pub games_per_second: [f64; 2],
    /// Decisions per second with the same bot served over gRPC (loopback), median
    /// of the rounds.
    pub grpc_rate: f64,
    /// Microseconds per call of a bare tonic unary echo with the same message sizes
    /// (loopback, one call at a time): what any gRPC call costs here. Median of
    /// the rounds.
    pub grpc_echo_us: f64,
    /// Each round's gRPC microseconds per decision / echo microseconds per call, in
    /// the order measured; each round measures both, one right after the other.
    pub grpc_round_ratios: Vec<f64>,
    /// Median of the per-round gRPC / echo ratios.
    pub grpc_ratio: f64,
    /// The sandbox level the protocol figures were measured under.
    pub level: Level,
    /// Milliseconds to start the bot and finish its handshake (median), at level
    /// `none` and, where this machine can isolate, `isolated`.
    pub start_ms: [Option<f64>; 2],
}

impl BenchReport {
    /// The report for people.
    pub fn text(&self) -> String {
        format!(
            "protocol: {:.0} decisions/s (request ~{} B, reply ~{} B), median of {} rounds\n\
             raw pipes: {:.0} round trips/s, same sizes, same processes in the same order\n\
             protocol / raw: {:.0}% (median of the per-round ratios: {})\n\
             referee's own work: {:.2} us per decision (in process, no I/O)\n\
             raw pipes pausing that long before each round trip: {:.0} round trips/s; protocol / that: {:.0}%\n\
             whole games: {:.1} games/s at concurrency 1, {:.1} at 2 (x{:.2})\n\
             gRPC (loopback, same bot served with --grpc): {:.0} decisions/s, {:.1} us per decision (stdio: {:.1} us)\n\
             bare tonic unary echo, same sizes: {:.1} us per call; astragal gRPC / echo: {:.2}x (median of the per-round ratios: {})\n",
            self.protocol_rate,
            self.request_bytes,
            self.reply_bytes,
            self.rounds,
            self.raw_rate,
            100.0 * self.ratio,
            self.round_ratios
                .iter()
                .map(|r| format!("{:.0}%", 100.0 * r))
                .collect::<Vec<_>>()
                .join(", "),
            self.work_us,
            self.paused_raw_rate,
            100.0 * self.paused_ratio,
            self.games_per_second[0],
            self.games_per_second[1],
            self.games_per_second[1] / self.games_per_second[0].max(1e-9),
            self.grpc_rate,
            1e6 / self.grpc_rate.max(1e-9),
            1e6 / self.protocol_rate.max(1e-9),
            self.grpc_echo_us,
            self.grpc_ratio,
            self.grpc_round_ratios
                .iter()
                .map(|r| format!("{r:.2}x"))
                .collect::<Vec<_>>()
                .join(", ")
        ) + &format!(
            "sandbox: protocol figures above with --sandbox {}; bot start (spawn and handshake, median of {STARTS}): {}\n",
            self.level,
            match self.start_ms {
                [Some(none), Some(iso)] =>
                    format!("none {none:.1} ms, isolated {iso:.1} ms (+{:.1} ms)", iso - none),
                [Some(none), None] => format!("none {none:.1} ms, isolated not available here"),
                _ => "not measured".to_owned(),
            }
        )
    }
}

/// Starts timed per sandbox level.
const STARTS: usize = 10;

fn limits(cfg: &BenchConfig) -> Limits {
    Limits {
        tc: TimeControl::MoveTime(Duration::from_secs(10)),
        sandbox: cfg.sandbox.clone(),
        ..Limits::default()
    }
}

/// Median milliseconds to start the bench bot at `level` and finish its handshake
/// (then it is told to quit, outside the timing).
fn start_ms(cfg: &BenchConfig, level: Level) -> anyhow::Result<f64> {
    let limits = Limits {
        sandbox: Sandbox {
            level,
            ..cfg.sandbox.clone()
        },
        ..limits(cfg)
    };
    let seat = SeatSetup::new(BotSpec::Process {
        command: cfg.bot.clone(),
    });
    let mut times = Vec::with_capacity(STARTS);
    for _ in 0..STARTS {
        let start = Instant::now();
        let player = Player::start(&seat, &limits, referee::transport::StderrTo::default())
            .map_err(|f| anyhow::anyhow!("the bench bot: {f}"))?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        player.shutdown(limits.quit_grace);
    }
    Ok(median(&mut times))
}

/// Runs the benchmark.
///
/// # Errors
/// A game setup the engine refuses, or a bot that cannot be run.
pub fn bench(cfg: &BenchConfig) -> anyhow::Result<BenchReport> {
    let spec = BotSpec::Process {
        command: cfg.bot.clone(),
    };
    let seats = match cfg.seats {
        Some(n) => n,
        None => engine::game_info(&cfg.game)?.default_seats,
    };
    let table: Vec<SeatSetup> = (0..seats).map(|_| SeatSetup::new(spec.clone())).collect();
    let mut report = BenchReport::default();

    let rounds = cfg.rounds.max(1);
    let per_round = cfg.decisions.div_ceil(rounds as u64);
    report.work_us = referee_work_us(cfg, seats, per_round.max(1000))?;
    let pause = Duration::from_nanos((report.work_us * 1000.0) as u64);
    let (mut protocol, mut raw, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut paused, mut paused_ratios) = (Vec::new(), Vec::new());
    let mut seed = 0u64;
    for _ in 0..rounds {
        // Through the protocol.
        let run = play_until(cfg, &table, per_round, &mut seed)?;
        let (decisions, rate, sample) = (run.decisions, run.rate, Some(run.sample));
        // The sizes of the messages actually sent, from one game.
        if let (Some(rec), 0) = (&sample, report.request_bytes) {
            let (req, rep) = message_sizes(rec)?;
            report.request_bytes = req;
            report.reply_bytes = rep;
        }
        // Through bare pipes, right after: the same sizes, to as many processes as
        // the game has seats, in the order the game asked them.
        let (bot, req, rep) = (cfg.bot.clone(), report.request_bytes, report.reply_bytes);
        let order: Vec<usize> = sample
            .as_ref()
            .map(|r| r.moves.iter().map(|m| m.seat).collect())
            .unwrap_or_default();
        let floor = raw_round_trips(&bot, seats, &order, req, rep, decisions, Duration::ZERO)?;
        let floor_paused = raw_round_trips(&bot, seats, &order, req, rep, decisions, pause)?;
        protocol.push(rate);
        raw.push(floor);
        ratios.push(rate / floor);
        paused.push(floor_paused);
        paused_ratios.push(rate / floor_paused);
    }
    report.protocol_rate = median(&mut protocol);
    report.raw_rate = median(&mut raw);
    report.round_ratios = ratios.clone();
    report.ratio = median(&mut ratios);
    report.paused_raw_rate = median(&mut paused);
    report.paused_ratio = median(&mut paused_ratios);
    report.rounds = rounds;

    let (mut rates, mut echoes, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    with_grpc_bot(cfg, seats, |table| {
        let echo = BareEcho::start(report.request_bytes, report.reply_bytes)?;
        let per_round = cfg.decisions.div_ceil(rounds as u64);
        let mut seed = 0;
        for _ in 0..rounds {
            let rate = play_until(cfg, table, per_round, &mut seed)?.rate;
            let echo_us = echo.us_per_call(per_round)?;
            rates.push(rate);
            echoes.push(echo_us);
            ratios.push(1e6 / rate.max(1e-9) / echo_us.max(1e-9));
        }
        Ok(())
    })?;
    report.grpc_rate = median(&mut rates);
    report.grpc_echo_us = median(&mut echoes);
    report.grpc_round_ratios = ratios.clone();
    report.grpc_ratio = median(&mut ratios);
    report.level = cfg.sandbox.level;
    report.start_ms = [
        Some(start_ms(cfg, Level::None)?),
        Sandbox::at(Level::Isolated)
            .check()
            .ok()
            .map(|()| start_ms(cfg, Level::Isolated))
            .transpose()?,
    ];

    // Concurrency.
    for (i, concurrency) in [1usize, 2].into_iter().enumerate() {
        let m = MatchConfig {
            game: cfg.game.clone(),
            options: cfg.options.clone(),
            entrants: table.clone(),
            games: cfg.scaling_games,
            concurrency,
            seed: 1,
            limits: limits(cfg),
            record: None,
            log_dir: None,
            fresh_bots: false,
            ..MatchConfig::default()
        };
        let s = run_match(m, |_, _| std::ops::ControlFlow::Continue(()))?;
        report.games_per_second[i] = s.games as f64 / s.seconds.max(1e-9);
    }
    Ok(report)
}

/// What [`play_until`] measured.
struct Run {
    decisions: u64,
    /// Decisions per second over the game loops.
    rate: f64,
    /// The first game, for message sizes and seat order.
    sample: referee::record::GameRecord,
}

/// Plays games (seeds after `seed`) until `at_least` decisions were made.
fn play_until(cfg: &BenchConfig, table: &[SeatSetup], at_least: u64, seed: &mut u64) -> anyhow::Result<Run> {
    let (mut decisions, mut us) = (0u64, 0u64);
    let mut sample = None;
    // The same processes from game to game, as a match keeps them.
    let mut pool = BotPool::reusing();
    while decisions < at_least.max(1) {
        *seed += 1;
        let setup = GameSetup {
            game: cfg.game.clone(),
            options: cfg.options.clone(),
            seed: *seed,
            position: None,
            pairing: None,
        };
        let rec = play_game_in(&setup, table, &limits(cfg), &LogPlace::default(), &mut pool)?;
        if let Some(f) = rec.faults.first() {
            anyhow::bail!("the bench bot faulted: {} {}", f.kind, f.detail);
        }
        decisions += rec.moves.len() as u64;
        us += rec.play_us;
        sample.get_or_insert(rec);
    }
    let rate = decisions as f64 / (us as f64 / 1e6).max(1e-9);
    let sample = sample.ok_or_else(|| anyhow::anyhow!("no game was played"))?;
    Ok(Run {
        decisions,
        rate,
        sample,
    })
}

/// The referee's work per decision without I/O, in microseconds: for each seat to
/// act, its legal moves, observation and `go` line, then a `move` reply read and
/// played (the first legal move, as the bench bot plays), over whole games until
/// `at_least` decisions.
fn referee_work_us(cfg: &BenchConfig, seats: usize, at_least: u64) -> anyhow::Result<f64> {
    let (mut decisions, mut line, mut legal, mut obs) = (0u64, String::new(), String::new(), String::new());
    let start = Instant::now();
    let mut seed = 0;
    while decisions < at_least {
        seed += 1;
        let mut game = engine::new_game(&cfg.game, &cfg.options, Some(seats), seed)?;
        loop {
            let to_act = game.to_act();
            if to_act.is_empty() {
                break;
            }
            for seat in to_act.iter() {
                decisions += 1;
                line.clear();
                legal.clear();
                obs.clear();
                game.write_legal_moves(seat, &mut legal);
                game.write_observation_json(seat, &mut obs);
                proto::text::write_go(&mut line, decisions, seat, None, None, Some(10_000), &legal, &obs);
                let first = legal.split(',').next().unwrap_or_default();
                let reply = proto::FromBot::Move {
                    id: decisions,
                    mv: first.to_owned(),
                }
                .to_string();
                let proto::FromBot::Move { mv, .. } = proto::FromBot::parse(&reply)? else {
                    anyhow::bail!("a move reply did not read back as one");
                };
                game.play(seat, &mv)?;
            }
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / decisions.max(1) as f64)
}

/// Serves the bench bot over gRPC on loopback (its own `--grpc` mode) and runs
/// `measure` with a table of that many seats, all of them that server.
fn with_grpc_bot(
    cfg: &BenchConfig,
    seats: usize,
    measure: impl FnOnce(&[SeatSetup]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let addr = format!("127.0.0.1:{port}");
    let words = shlex::split(&cfg.bot).unwrap_or_default();
    let (program, args) = words
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("empty bot command"))?;
    let mut server = Command::new(program)
        .args(args)
        .args(["--grpc", &addr])
        .stderr(Stdio::null())
        .spawn()?;
    let up = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let result = (|| {
        anyhow::ensure!(up, "the gRPC bot server did not come up on {addr}");
        let spec = SeatSetup::new(BotSpec::Grpc {
            url: format!("grpc://{addr}"),
        });
        let table: Vec<SeatSetup> = (0..seats).map(|_| spec.clone()).collect();
        measure(&table)
    })();
    let _ = server.kill();
    let _ = server.wait();
    result
}

/// Answers every `Go` at once with a fixed move: nothing but tonic.
struct Echo {
    reply: String,
}

#[tonic::async_trait]
impl proto::grpc::bot_server::Bot for Echo {
    async fn hello(
        &self,
        _: tonic::Request<proto::grpc::HelloRequest>,
    ) -> Result<tonic::Response<proto::grpc::HelloReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("echo"))
    }
    async fn new_game(
        &self,
        _: tonic::Request<proto::grpc::NewGameRequest>,
    ) -> Result<tonic::Response<proto::grpc::NewGameReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("echo"))
    }
    async fn ping(
        &self,
        _: tonic::Request<proto::grpc::PingRequest>,
    ) -> Result<tonic::Response<proto::grpc::PingReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("echo"))
    }
    async fn go(
        &self,
        request: tonic::Request<proto::grpc::GoRequest>,
    ) -> Result<tonic::Response<proto::grpc::GoReply>, tonic::Status> {
        Ok(tonic::Response::new(proto::grpc::GoReply {
            id: request.into_inner().id,
            r#move: self.reply.clone(),
            info: Vec::new(),
        }))
    }
    async fn game_over(
        &self,
        _: tonic::Request<proto::grpc::GameOverRequest>,
    ) -> Result<tonic::Response<proto::grpc::GameOverReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("echo"))
    }
}

/// A bare tonic echo on loopback and a client of it: the server on a runtime of
/// its own thread, as a bot server would be; the client on a single-threaded
/// runtime driven by the caller, the cheapest way to make a call. What a unary
/// `Go` call of the game's message sizes costs on this machine, beside which
/// astragal's gRPC path is measured.
struct BareEcho {
    // Kept for its threads: the echo serves while this lives.
    _server: tokio::runtime::Runtime,
    client_rt: tokio::runtime::Runtime,
    client: proto::grpc::bot_client::BotClient<tonic::transport::Channel>,
    request: proto::grpc::GoRequest,
}

impl BareEcho {
    /// Starts the echo for requests of `request_bytes` (legal moves and
    /// observation) and replies of `reply_bytes`, connected and warmed up.
    fn start(request_bytes: usize, reply_bytes: usize) -> anyhow::Result<BareEcho> {
        let server = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let listener = server.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let echo = Echo {
            reply: "m".repeat(reply_bytes.saturating_sub(20).max(1)),
        };
        server.spawn(
            tonic::transport::Server::builder()
                .add_service(proto::grpc::bot_server::BotServer::new(echo))
                .serve_with_incoming(
                    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
                ),
        );
        let client_rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let body = request_bytes.saturating_sub(40).max(2);
        let request = proto::grpc::GoRequest {
            session: "s".into(),
            id: 1,
            legal: vec!["l".repeat(body / 4)],
            observation_json: "o".repeat(body - body / 4),
            movetime_ms: Some(10_000),
            ..Default::default()
        };
        let client = client_rt.block_on(async {
            let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
                .tcp_nodelay(true)
                .connect()
                .await?;
            let mut client = proto::grpc::bot_client::BotClient::new(channel);
            for _ in 0..50 {
                client.go(request.clone()).await?;
            }
            Ok::<_, anyhow::Error>(client)
        })?;
        Ok(BareEcho {
            _server: server,
            client_rt,
            client,
            request,
        })
    }

    /// Microseconds per call over `calls` calls, one at a time.
    fn us_per_call(&self, calls: u64) -> anyhow::Result<f64> {
        let mut client = self.client.clone();
        self.client_rt.block_on(async {
            let start = Instant::now();
            for id in 0..calls.max(1) {
                let mut r = self.request.clone();
                r.id = id;
                client.go(r).await?;
            }
            Ok::<f64, anyhow::Error>(start.elapsed().as_secs_f64() * 1e6 / calls.max(1) as f64)
        })
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Average lengths of `go` requests and `move` replies in a recorded game.
fn message_sizes(rec: &referee::record::GameRecord) -> anyhow::Result<(usize, usize)> {
    let mut game = engine::new_game(&rec.game, &rec.options, Some(rec.seats.len()), rec.seed)?;
    let (mut req, mut rep) = (0usize, 0usize);
    for (i, m) in rec.moves.iter().enumerate() {
        let go = proto::ToBot::Go {
            id: i as u64 + 1,
            seat: m.seat,
            time_ms: None,
            inc_ms: None,
            movetime_ms: Some(10_000),
            legal: game.legal_moves(m.seat),
            obs: game.observation(m.seat).to_string(),
        };
        req += go.to_string().len() + 1;
        rep += proto::FromBot::Move {
            id: i as u64 + 1,
            mv: m.mv.clone(),
        }
        .to_string()
        .len()
            + 1;
        game.play(m.seat, &m.mv)?;
    }
    let n = rec.moves.len().max(1);
    Ok((req / n, rep / n))
}

/// Round trips per second of `request` bytes out and `reply` bytes back through
/// `seats` copies of the bot program's echo mode, visited in `order` (cycled),
/// waiting for each reply exactly as the referee does ([`wait_readable`]), so the
/// comparison measures the protocol's work and nothing else. Each round trip starts
/// after a busy `pause` (zero: back to back).
#[allow(clippy::too_many_arguments)]
fn raw_round_trips(
    bot: &str,
    seats: usize,
    order: &[usize],
    request: usize,
    reply: usize,
    n: u64,
    pause: Duration,
) -> anyhow::Result<f64> {
    let words = shlex::split(bot).unwrap_or_default();
    let (program, args) = words
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("empty bot command"))?;
    let mut children = Vec::new();
    for _ in 0..seats.max(1) {
        let mut child = Command::new(program)
            .args(args)
            .args(["--echo", &reply.saturating_sub(1).to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        children.push((child, stdin, stdout));
    }
    let line = format!("{}\n", "x".repeat(request.saturating_sub(1)));
    let mut buf = vec![0u8; 64 * 1024];
    let start = Instant::now();
    for i in 0..n as usize {
        let seat = if order.is_empty() {
            0
        } else {
            order[i % order.len()] % children.len()
        };
        let (_, stdin, stdout) = &mut children[seat];
        if !pause.is_zero() {
            // Busy, as the referee is between a reply and its next request.
            let until = Instant::now() + pause;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        stdin.write_all(line.as_bytes())?;
        stdin.flush()?;
        // The echo answers with one line in one write.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if wait_readable(&[stdout.as_fd()], deadline)
                .map_err(|f| anyhow::anyhow!("{f}"))?
                .is_empty()
            {
                anyhow::bail!("the echo bot did not answer");
            }
            let got = stdout.read(&mut buf)?;
            if got == 0 {
                anyhow::bail!("the echo bot stopped");
            }
            if buf[..got].ends_with(b"\n") {
                break;
            }
        }
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    for (mut child, stdin, _) in children {
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
    }
    Ok(rate)
}
