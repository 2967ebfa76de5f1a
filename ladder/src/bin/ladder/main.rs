//! `ladder`: tournaments, ratings, the SPRT, the scheduling service and its workers.

mod bench_service;
mod bench_web;

use anyhow::{Context, bail};
use clap::builder::TypedValueParser as _;
use clap::{Args, Parser, Subcommand};
use ladder::local::tournament::{self, Format, TournamentConfig};
use ladder::store::Store;
use referee::clock::number_in;
use referee::sandbox::{Level, Sandbox, SandboxArgs};
use referee::spec::BotSpec;
use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;

/// Tournaments and a ladder service for astragal bots, with maximum-likelihood Elo.
///
/// Examples:
///   ladder tournament --game ur --bot builtin:random --bot heur="python3 bots/python/heuristic_bot.py" --games 200 --concurrency 2 --db ur.db
///   ladder ratings --db ur.db
///   ladder sprt --game ur --bot new="./my_bot" --vs old="./my_bot --v1" --elo0 0 --elo1 10
///   ladder serve --db sqlite:ladder.db --listen 127.0.0.1:50060 --http 127.0.0.1:8080
///   ladder admin add-worker w1 > w1.token      (the admin token in $ASTRAGAL_ADMIN_TOKEN)
///   ladder worker --server http://127.0.0.1:50060 --token-file w1.token --concurrency 2
///
/// Tokens come from a file (--token-file, --admin-token-file) or the environment
/// (ASTRAGAL_ADMIN_TOKEN, ASTRAGAL_WORKER_TOKEN), never from the command line,
/// which every process on the machine can read.
#[derive(Parser)]
#[command(name = "ladder", version, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play a round-robin or gauntlet of mirrored groups and print Elo standings.
    /// With --db the run is resumable: run the same command again after a kill and
    /// it plays only what is missing; with more --games it extends the tournament.
    ///
    /// Progress goes to stderr (a bar with games/s and ETA on a terminal). Ctrl-C
    /// starts no new game and prints the standings so far; the games under way are
    /// recorded, and the same command resumes. Exit status: 0 when every game was
    /// played as asked; 3 when a bot could not start or shake hands in some game;
    /// 130 when stopped by Ctrl-C; 1 for any other error.
    Tournament(TournamentArgs),
    /// Print standings of the competitions in a store, or of record files.
    Ratings(RatingsArgs),
    /// Play mirrored pairs between two bots until the SPRT decides between elo0 and
    /// elo1 (exact pentanomial GLLR, normalized or logistic Elo). Shows the LLR as it
    /// runs; Ctrl-C stops after the games in flight and prints where it stood.
    Sprt(SprtArgs),
    /// Measure the rating fit on simulated results.
    BenchFit(BenchFitArgs),
    /// Measure the SPRT's error rates on simulated pairs (α at elo0, β at elo1).
    BenchSprt(BenchSprtArgs),
    /// Measure the service: start a real `ladder serve` on loopback (SQLite or
    /// PostgreSQL) and simulated workers in this process, each with its own token,
    /// leasing, playing with in-process random bots and reporting; print groups and
    /// games per second, lease and report latency p50/p99, and the server's CPU per
    /// game, for each number of workers.
    ///
    ///   ladder bench-service --db sqlite --workers 10,100,500
    ///   ladder bench-service --db postgres://postgres@127.0.0.1:5432/postgres
    ///
    /// With PostgreSQL, a new database is made on that server for the run and
    /// dropped after it (the user needs CREATE DATABASE).
    BenchService(BenchServiceArgs),
    /// Measure the public pages of a large competition: fill a new store with
    /// simulated results (default 100,000 games, with faults and rating history),
    /// serve the pages on loopback and ask for each of them again and again; print
    /// p50/p99/max per page.
    ///
    ///   ladder bench-web --games 100000
    ///   ladder bench-web --db postgres://postgres@127.0.0.1:5432/postgres
    BenchWeb(BenchWebArgs),
    /// Run the ladder service: gRPC API (admin, reads, worker leases) and a web page.
    Serve(ServeArgs),
    /// Lease groups from a ladder server, play them, report the records.
    Worker(WorkerArgs),
    /// Talk to a ladder server as its admin: register bots, open and close competitions, read standings.
    Admin(AdminArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// Store: sqlite:FILE (or a file path) or postgres://user@host/db.
    #[arg(long)]
    db: String,
    /// gRPC address.
    #[arg(long, default_value = "127.0.0.1:50060")]
    listen: String,
    /// Web page address (standings and recent games, and their JSON); none if absent.
    #[arg(long)]
    http: Option<String>,
    /// File holding the admin token (else $ASTRAGAL_ADMIN_TOKEN): its first line, at
    /// least 16 characters (e.g. `openssl rand -hex 32`); never on the command
    /// line, where any process can read it. Workers get their own tokens:
    /// `ladder admin add-worker NAME`.
    #[arg(long, value_name = "FILE")]
    admin_token_file: Option<PathBuf>,
    /// Seconds a worker holds a lease before its group goes to another worker.
    #[arg(long, default_value_t = 120.0, value_parser = |s: &str| number_in(s, 1.0, 86_400.0))]
    lease_seconds: f64,
    /// Serve gRPC over TLS with this certificate (PEM; with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Suspend a bot after this many reported games in a row in which it could not
    /// start or shake hands (a mistyped command, a missing file), so that it stops
    /// taking the schedule; `ladder admin enable NAME` resumes it. 0: never.
    #[arg(long, default_value_t = ladder::server::SUSPEND_AFTER)]
    suspend_after: u32,
}

#[derive(Args)]
struct WorkerArgs {
    /// Server URL.
    #[arg(long, default_value = "http://127.0.0.1:50060")]
    server: String,
    /// File holding this worker's token (else $ASTRAGAL_WORKER_TOKEN); the admin
    /// makes one with `ladder admin add-worker NAME`.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The authority that signed an https:// server's certificate (PEM), if not a
    /// public one.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Groups played at once.
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 1024))]
    concurrency: usize,
    /// Groups each of the --concurrency tasks leases, and reports, per call (1 to
    /// 64). With quick bots, 8 to 32 cut the round trips to the server; every group
    /// of a batch must be played within one lease period (the server's --lease-seconds).
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 64))]
    batch: usize,
    /// Name in this worker's own log lines (the server knows it by its token).
    #[arg(long, default_value = "worker")]
    name: String,
    /// Stop after this many groups.
    #[arg(long, value_parser = |s: &str| number_in(s, 1u64, u64::MAX))]
    max_groups: Option<u64>,
    /// Stop when the server has nothing to play.
    #[arg(long)]
    exit_when_idle: bool,
    /// Write each bot's stderr (capped) to files in this directory.
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// Run bots with `--sandbox none`. A worker runs programs that strangers
    /// registered, so it isolates them unless the host says this too.
    #[arg(long)]
    allow_unsandboxed: bool,
    /// Containment of bots (default here: isolated).
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Args)]
struct AdminArgs {
    /// Server URL.
    #[arg(long, default_value = "http://127.0.0.1:50060")]
    server: String,
    /// File holding the admin token (else $ASTRAGAL_ADMIN_TOKEN): its first line,
    /// the server's token, at least 16 characters.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The authority that signed an https:// server's certificate (PEM), if not a
    /// public one.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    #[command(subcommand)]
    action: AdminAction,
}

#[derive(Subcommand)]
enum AdminAction {
    /// Register a bot for a game: NAME GAME SPEC.
    RegisterBot {
        /// Unique name.
        name: String,
        /// Game id.
        game: String,
        /// How to run it (a referee --bot spec).
        spec: String,
        /// An environment variable for its process, KEY=VALUE (repeatable): the
        /// only thing of the host's a worker passes it.
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
    },
    /// Open a competition among the game's bots.
    Open {
        /// Unique name.
        name: String,
        /// Game id.
        #[arg(long)]
        game: String,
        /// Game option key=value (repeatable).
        #[arg(long = "opt")]
        opts: Vec<String>,
        /// Seats per game (default: the game's smallest).
        #[arg(long, default_value_t = 0, value_parser = |s: &str| number_in(s, 0u32, 64))]
        seats: u32,
        /// Games in all (0: keep playing).
        #[arg(long, default_value_t = 0)]
        max_games: u64,
        /// The competition's seed, for a reproducible run: every group's dice
        /// derive from it, so anyone who knows it knows them. Without it the server
        /// draws 64 bits from its random source (recommended).
        #[arg(long)]
        seed: Option<u64>,
        /// Milliseconds per move.
        #[arg(long, default_value_t = 5000, value_parser = |s: &str| number_in(s, 1u64, referee::clock::MAX_MOVE_MS))]
        movetime: u64,
    },
    /// Stop scheduling a competition.
    Close {
        /// Its name.
        name: String,
    },
    /// List competitions.
    List,
    /// Print a competition's standings.
    Standings {
        /// Its name.
        name: String,
    },
    /// Add a worker and print its token (once: the server keeps only its hash).
    /// Give the token to the worker in a file (--token-file) or its environment.
    AddWorker {
        /// Unique name; every group it reports is recorded as its.
        name: String,
    },
    /// Revoke a worker's token (its results stay; see void-worker).
    RevokeWorker {
        /// Its name.
        name: String,
    },
    /// Every worker: groups and games reported, faults by kind against the other
    /// workers' rates, and a flag where a worker stands out.
    Workers,
    /// Revoke a worker and remove every game it reported; its groups are played
    /// again by other workers.
    VoidWorker {
        /// Its name.
        name: String,
    },
    /// Every bot: status (active, disabled, suspended, superseded, removed), why,
    /// version, and its run of games in a row in which it could not start.
    Bots,
    /// Take a bot out of play: it is scheduled in no new group, and the groups it
    /// was scheduled in that no worker holds are withdrawn. Its games stay.
    Disable {
        /// Its name.
        name: String,
        /// Why, shown with its status.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Put a disabled or suspended bot back into play (a suspended one's run of
    /// failed starts starts again from 0).
    Enable {
        /// Its name.
        name: String,
    },
    /// Take a bot out of play for good (enable cannot undo it; update can make a
    /// new version). Its games and its rating stay.
    Remove {
        /// Its name.
        name: String,
        /// Why, shown with its status.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Replace a bot's command (or environment): a new bot NAME@N with a rating of
    /// its own, linked to the one it replaces, which stops being scheduled.
    Update {
        /// The bot's name (its newest version).
        name: String,
        /// How to run the new version (a referee --bot spec).
        spec: String,
        /// An environment variable for its process, KEY=VALUE (repeatable); the
        /// new version has only those given here.
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
    },
}

/// A refusal from the server, said as a sentence (tonic's own form is a debug
/// dump of code, metadata and details).
fn said(s: tonic::Status) -> anyhow::Error {
    use tonic::Code;
    let m = s.message();
    match s.code() {
        Code::Unauthenticated | Code::PermissionDenied => {
            anyhow::anyhow!("the server refused the token: {m}")
        }
        Code::Unavailable => anyhow::anyhow!("the server cannot be reached or is stopping: {m}"),
        Code::DeadlineExceeded => anyhow::anyhow!("the server did not answer in time: {m}"),
        _ => anyhow::anyhow!("{m}"),
    }
}

fn env_vars(pairs: &[String]) -> anyhow::Result<Vec<proto::ladder::EnvVar>> {
    pairs
        .iter()
        .map(|kv| {
            referee::sandbox::parse_env_pair(kv)
                .map(|(key, value)| proto::ladder::EnvVar { key, value })
                .map_err(|e| anyhow::anyhow!("--env: {e}"))
        })
        .collect()
}

/// `ladder admin disable|enable|remove`: sets the status and prints the bot.
async fn set_bot_status(
    c: &mut ladder::worker::Client,
    name: String,
    status: &str,
    reason: String,
) -> anyhow::Result<()> {
    let b = c
        .set_bot_status(proto::ladder::SetBotStatusRequest {
            name,
            status: status.into(),
            reason,
        })
        .await
        .map_err(said)?
        .into_inner();
    println!("{}", describe_bot(&b));
    Ok(())
}

fn describe_bot(b: &proto::ladder::BotInfo) -> String {
    let mut line = format!(
        "{} ({}, v{}): {} · {}",
        b.name, b.game, b.version, b.spec, b.status
    );
    if !b.status_reason.is_empty() {
        line.push_str(&format!(" — {}", b.status_reason));
    }
    if !b.previous.is_empty() {
        line.push_str(&format!(" · replaces {}", b.previous));
    }
    if b.start_failures > 0 {
        line.push_str(&format!(" · {} failed starts in a row", b.start_failures));
    }
    if !b.env_keys.is_empty() {
        line.push_str(&format!(" · environment: {}", b.env_keys.join(", ")));
    }
    line
}

/// A secret from a file (its first line) or else an environment variable; never
/// from the command line, which any process on the machine can read.
fn read_secret(file: Option<&std::path::Path>, env: &str, what: &str) -> anyhow::Result<String> {
    let secret = match file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the {what} from {}", path.display()))?
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        None => std::env::var(env)
            .map_err(|_| anyhow::anyhow!("no {what}: give a file holding it, or set {env}"))?,
    };
    if secret.len() < 16 {
        bail!(
            "the {what} is {} characters; use at least 16 (e.g. `openssl rand -hex 32`)",
            secret.len()
        );
    }
    Ok(secret)
}

fn read_pem(path: Option<&std::path::Path>) -> anyhow::Result<Option<Vec<u8>>> {
    path.map(|p| std::fs::read(p).with_context(|| format!("cannot read {}", p.display())))
        .transpose()
}

#[derive(Args)]
struct GameArgs {
    /// Game id (see `referee games`).
    #[arg(long)]
    game: String,
    /// Game option key=value (repeatable), e.g. --opt rules=finkel.
    #[arg(long = "opt")]
    opts: Vec<String>,
    /// Fixed time per move in milliseconds.
    #[arg(long, default_value_t = 5000, conflicts_with = "tc", value_parser = |s: &str| number_in(s, 1u64, referee::clock::MAX_MOVE_MS))]
    movetime: u64,
    /// Clock per seat instead, base+increment in seconds (e.g. 10+0.1).
    #[arg(long)]
    tc: Option<String>,
    /// Games played at the same time.
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 1024))]
    concurrency: usize,
    /// The run's seed, to play it again: group g plays a seed derived from it
    /// (recorded in each game). Without it, 64 random bits from the operating
    /// system, printed at the start.
    #[arg(long)]
    seed: Option<u64>,
    /// Write each bot's stderr (capped) to files in this directory.
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// Start every bot process anew for each game. By default a process that ends
    /// a game without a fault plays the next game on its thread too (told
    /// `newgame`, checked with `isready`): much faster with quick bots, but a bot
    /// that keeps state between games carries it over.
    #[arg(long)]
    fresh_bots: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

impl GameArgs {
    /// The sandbox the flags ask for (`none` by default: the host's own bots),
    /// checked here, with the logs and a SQLite store kept from isolated bots.
    fn sandbox(&self, db: Option<&str>) -> anyhow::Result<Sandbox> {
        let mut sandbox = self.sandbox.sandbox(Level::None).map_err(anyhow::Error::msg)?;
        sandbox.check()?;
        if let Some(dir) = &self.log_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
        }
        let db_file = db
            .filter(|d| !d.starts_with("postgres"))
            .map(|d| PathBuf::from(d.strip_prefix("sqlite:").unwrap_or(d)));
        sandbox.hide(self.log_dir.iter().cloned().chain(db_file));
        Ok(sandbox)
    }

    fn time(&self) -> String {
        match &self.tc {
            Some(tc) => format!("tc={tc}"),
            None => format!("movetime={}", self.movetime),
        }
    }
}

#[derive(Args)]
struct TournamentArgs {
    #[command(flatten)]
    game: GameArgs,
    /// An entrant, NAME=SPEC or SPEC (named after its program): a command line,
    /// builtin:NAME[?key=value&...] (random, first, greedy, mcts: see docs/bots.md), or
    /// grpc://host:port. Repeat for each bot.
    #[arg(long = "bot", required = true)]
    bots: Vec<String>,
    /// Games to play in all, rounded up to whole mirrored groups.
    #[arg(long, default_value_t = 100, value_parser = |s: &str| number_in(s, 1u64, 1_000_000_000))]
    games: u64,
    /// Interim standings every this many games (0: none); on a terminal they print
    /// above the progress bar.
    #[arg(long, default_value_t = 0)]
    standings_every: u64,
    /// round-robin: every set of bots meets in turn; gauntlet: the first bot meets all others.
    #[arg(long, value_enum, default_value = "round-robin")]
    format: Format,
    /// Seats per game (default: the game's smallest number).
    #[arg(long, value_parser = |s: &str| number_in(s, 1usize, 64))]
    seats: Option<usize>,
    /// Store: a SQLite file (created if missing) or postgres://...; resumable.
    /// Without it the tournament lives in memory.
    #[arg(long)]
    db: Option<String>,
    /// The tournament's name in the store.
    #[arg(long, default_value = "tournament")]
    name: String,
    /// Pin this bot's rating: NAME or NAME=ELO (default: the average is 0).
    #[arg(long)]
    anchor: Option<String>,
    /// Print the standings as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct RatingsArgs {
    /// Store to read (SQLite file or postgres://...).
    #[arg(long, conflicts_with = "records")]
    db: Option<String>,
    /// Only this competition.
    #[arg(long)]
    name: Option<String>,
    /// Recompute from the game records themselves rather than the stored results.
    #[arg(long)]
    from_records: bool,
    /// JSON Lines record files (from `referee --record` or a store) to rate instead.
    #[arg(long, num_args = 1..)]
    records: Vec<PathBuf>,
    /// Pin this bot's rating: NAME or NAME=ELO.
    #[arg(long)]
    anchor: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct SprtArgs {
    #[command(flatten)]
    game: GameArgs,
    /// The bot under test, NAME=SPEC or SPEC.
    #[arg(long = "bot")]
    bot: String,
    /// Its opponent, NAME=SPEC or SPEC.
    #[arg(long = "vs")]
    vs: String,
    /// Elo of the null hypothesis (in the --model's scale).
    #[arg(long, default_value_t = 0.0, value_parser = |s: &str| number_in(s, -1000.0, 1000.0))]
    elo0: f64,
    /// Elo of the alternative (in the --model's scale).
    #[arg(long, default_value_t = 10.0, value_parser = |s: &str| number_in(s, -1000.0, 1000.0))]
    elo1: f64,
    /// The scale of elo0 and elo1: normalized Elo (the score's distance from 50% in
    /// units of its own spread, so the same bounds suit drawish and decisive games;
    /// limited to ±150) or logistic Elo (the familiar scale of the ratings).
    #[arg(long, default_value_t = rating::sprt::EloModel::Normalized,
          value_parser = clap::builder::PossibleValuesParser::new(["normalized", "logistic"]).try_map(|s| s.parse::<rating::sprt::EloModel>()))]
    model: rating::sprt::EloModel,
    /// False positive rate.
    #[arg(long, default_value_t = 0.05, value_parser = |s: &str| number_in(s, 0.0001, 0.5))]
    alpha: f64,
    /// False negative rate.
    #[arg(long, default_value_t = 0.05, value_parser = |s: &str| number_in(s, 0.0001, 0.5))]
    beta: f64,
    /// Stop undecided after this many games.
    #[arg(long, default_value_t = 100_000, value_parser = |s: &str| number_in(s, 2u64, 1_000_000_000))]
    max_games: u64,
}

#[derive(Args)]
struct BenchServiceArgs {
    /// `sqlite` (a new file, removed after) or a postgres:// URL.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Numbers of simulated workers, one row each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "10,100,500", value_parser = |s: &str| number_in(s, 1usize, 5000))]
    workers: Vec<usize>,
    /// Seconds measured per row.
    #[arg(long, default_value_t = 10.0, value_parser = |s: &str| number_in(s, 0.5, 3600.0))]
    seconds: f64,
    /// Seconds of warm-up per row.
    #[arg(long, default_value_t = 2.0, value_parser = |s: &str| number_in(s, 0.0, 600.0))]
    warmup: f64,
    /// Groups per lease and per report call (1 to 64).
    #[arg(long, default_value_t = 16, value_parser = |s: &str| number_in(s, 1usize, 64))]
    batch: usize,
    /// The game.
    #[arg(long, default_value = "ur")]
    game: String,
    /// Random bots registered.
    #[arg(long, default_value_t = 8, value_parser = |s: &str| number_in(s, 2usize, 1000))]
    bots: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct BenchWebArgs {
    /// `sqlite` (a new file, removed after) or a postgres:// URL (a new database on
    /// that server, dropped after).
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Games in the competition.
    #[arg(long, default_value_t = 100_000, value_parser = |s: &str| number_in(s, 2u64, 10_000_000))]
    games: u64,
    /// Bots in it.
    #[arg(long, default_value_t = 12, value_parser = |s: &str| number_in(s, 2usize, 1000))]
    bots: usize,
    /// Requests per page.
    #[arg(long, default_value_t = 50, value_parser = |s: &str| number_in(s, 1usize, 100_000))]
    requests: usize,
    /// Seed of the simulated results.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct BenchSprtArgs {
    /// Simulated tests per hypothesis, gap and kind of pairs.
    #[arg(long, default_value_t = 2000, value_parser = |s: &str| number_in(s, 10u64, 10_000_000))]
    runs: u64,
    /// Gaps elo1 - elo0 to test (logistic Elo, elo0 = 0), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "5,10,50,100")]
    gaps: Vec<f64>,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
struct BenchFitArgs {
    /// Simulated games.
    #[arg(long, default_value_t = 1_000_000, value_parser = |s: &str| number_in(s, 1u64, 100_000_000))]
    games: u64,
    /// Bots.
    #[arg(long, default_value_t = 50, value_parser = |s: &str| number_in(s, 2usize, 100_000))]
    bots: usize,
    /// Seats per game.
    #[arg(long, default_value_t = 2, value_parser = |s: &str| number_in(s, 2usize, 64))]
    seats: usize,
}

/// Names every entrant (`NAME=SPEC` or `SPEC`); a tournament seats no person.
fn name_bots(texts: &[String]) -> anyhow::Result<Vec<(String, BotSpec)>> {
    let named = referee::spec::name_entrants(texts).map_err(anyhow::Error::msg)?;
    if named.iter().any(|(_, spec)| matches!(spec, BotSpec::Human)) {
        bail!("a tournament cannot seat `human`; use `referee play` to play a bot yourself");
    }
    Ok(named)
}

fn anchor_of(text: &Option<String>) -> anyhow::Result<Option<(String, f64)>> {
    Ok(match text {
        None => None,
        Some(t) => match t.split_once('=') {
            None => Some((t.clone(), 0.0)),
            Some((n, e)) => Some((
                n.to_owned(),
                e.parse()
                    .with_context(|| format!("--anchor {t:?}: ELO is not a number"))?,
            )),
        },
    })
}

fn bench_service(a: BenchServiceArgs) -> anyhow::Result<()> {
    engine::game_info(&a.game)?;
    let cfg = bench_service::BenchServiceConfig {
        db: a.db,
        server_program: std::env::current_exe().context("cannot find this program to run as the server")?,
        workers: a.workers,
        seconds: a.seconds,
        warmup: a.warmup,
        batch: a.batch,
        game: a.game,
        bots: a.bots,
    };
    let report = runtime()?.block_on(bench_service::run(&cfg))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(())
}

fn bench_web(a: BenchWebArgs) -> anyhow::Result<()> {
    let cfg = bench_web::BenchWebConfig {
        db: a.db,
        games: a.games,
        bots: a.bots,
        requests: a.requests,
        seed: a.seed,
    };
    let report = runtime()?.block_on(bench_web::run(&cfg))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Tournament(a) => tournament_cmd(a),
        Command::Ratings(a) => ratings_cmd(a),
        Command::Sprt(a) => sprt_cmd(a),
        Command::BenchSprt(a) => bench_sprt(a),
        Command::BenchService(a) => bench_service(a),
        Command::BenchWeb(a) => bench_web(a),
        Command::BenchFit(a) => bench_fit(a),
        Command::Serve(a) => serve_cmd(a),
        Command::Worker(a) => worker_cmd(a),
        Command::Admin(a) => admin_cmd(a),
    }
}

fn tournament_cmd(a: TournamentArgs) -> anyhow::Result<()> {
    let rt = runtime()?;
    let url = a.db.clone().unwrap_or_else(|| "sqlite::memory:".into());
    let store = rt
        .block_on(Store::open(&url))
        .with_context(|| format!("opening store {url}"))?;
    let cfg = TournamentConfig {
        name: a.name.clone(),
        game: a.game.game.clone(),
        options: a.game.opts.clone(),
        seats: a.seats,
        bots: name_bots(&a.bots)?,
        format: a.format,
        games: a.games,
        concurrency: a.game.concurrency,
        seed: a.game.seed,
        time: a.game.time(),
        log_dir: a.game.log_dir.clone(),
        fresh_bots: a.game.fresh_bots,
        sandbox: a.game.sandbox(a.db.as_deref())?,
        stop: Some(interrupt_flag()),
    };
    let mut progress: Option<referee::progress::Progress> = None;
    let report = tournament::run(&rt, &store, &cfg, |done, total| {
        let p = progress
            .get_or_insert_with(|| referee::progress::Progress::new(Some(total), "games", a.standings_every));
        p.update(done, || {
            let standings = rt
                .block_on(store.competition(&cfg.name))
                .ok()
                .flatten()
                .map(|comp| rt.block_on(tournament::standings_of(&store, &comp, None)));
            match standings {
                Some(Ok(s)) => s.table(),
                _ => "(standings not available)".into(),
            }
        });
    })?;
    drop(progress);
    let standings = match anchor_of(&a.anchor)? {
        None => report.standings,
        Some((n, e)) => {
            let comp = rt
                .block_on(store.competition(&cfg.name))?
                .context("the tournament vanished from the store")?;
            rt.block_on(tournament::standings_of(&store, &comp, Some((&n, e))))?
        }
    };
    let summary = format!(
        "this run: {} games in {:.1} s ({:.0} games/s, {:.0} decisions/s), seed {}{}",
        report.played,
        report.seconds,
        report.played as f64 / report.seconds.max(1e-9),
        report.decisions as f64 / report.seconds.max(1e-9),
        report.seed,
        if report.resumed > 0 {
            format!("; {} were already recorded", report.resumed)
        } else {
            String::new()
        }
    );
    if a.json {
        println!("{}", serde_json::to_string_pretty(&standings)?);
        eprintln!("{summary}");
    } else {
        print!("{}", standings.table());
        println!("{summary}");
    }
    rt.block_on(store.close());
    std::io::stdout().flush()?;
    if report.setup_faults > 0 {
        eprintln!(
            "ladder: in {} games a bot could not start or shake hands, so the tournament was not played as asked",
            report.setup_faults
        );
        std::process::exit(3);
    }
    if report.resumed + report.played < report.total {
        eprintln!(
            "interrupted: {} of {} games recorded; run the same command again to resume",
            report.resumed + report.played,
            report.total
        );
        std::process::exit(130);
    }
    Ok(())
}

fn ratings_cmd(a: RatingsArgs) -> anyhow::Result<()> {
    let anchor = anchor_of(&a.anchor)?;
    let anchor_ref = anchor.as_ref().map(|(n, e)| (n.as_str(), *e));
    let mut out: Vec<(String, rating::standings::Standings)> = Vec::new();
    // Lines of --records files that are not games that replay: reported after the
    // ratings of the good ones, and the command fails.
    let mut refused: Vec<String> = Vec::new();
    if !a.records.is_empty() {
        let mut records = Vec::new();
        for f in &a.records {
            let checked = referee::replay::check_file(f).map_err(anyhow::Error::msg)?;
            records.extend(checked.good);
            refused.extend(
                checked
                    .bad
                    .into_iter()
                    .map(|(n, why)| format!("{}:{n}: {why}", f.display())),
            );
        }
        out.push((
            "records".into(),
            ladder::local::standings_from_records(&records, anchor_ref).map_err(anyhow::Error::msg)?,
        ));
    } else {
        let Some(url) = a.db else {
            bail!("give --db STORE or --records FILE...");
        };
        let rt = runtime()?;
        let store = rt
            .block_on(Store::open(&url))
            .with_context(|| format!("opening store {url}"))?;
        let comps = rt.block_on(store.competitions())?;
        if let Some(n) = &a.name
            && !comps.iter().any(|c| &c.name == n)
        {
            bail!("no competition named {n:?} in {url}");
        }
        for c in comps
            .iter()
            .filter(|c| a.name.as_ref().is_none_or(|n| *n == c.name))
        {
            let st = if a.from_records {
                let mut records = Vec::new();
                let mut after = 0;
                loop {
                    let page = rt.block_on(store.records(c.id, after, 10_000))?;
                    let Some(&(last, _)) = page.last() else { break };
                    after = last;
                    for (id, text) in page {
                        records.push(
                            serde_json::from_str(&text)
                                .with_context(|| format!("game {id}: record does not parse"))?,
                        );
                    }
                }
                ladder::local::standings_from_records(&records, anchor_ref).map_err(anyhow::Error::msg)?
            } else {
                rt.block_on(tournament::standings_of(&store, c, anchor_ref))?
            };
            out.push((c.name.clone(), st));
        }
    }
    if a.json {
        let map: serde_json::Map<String, serde_json::Value> = out
            .into_iter()
            .map(|(n, s)| (n, serde_json::to_value(s).unwrap_or_default()))
            .collect();
        println!("{}", serde_json::to_string_pretty(&map)?);
    } else {
        for (name, st) in out {
            println!("== {name}\n{}", st.table());
        }
    }
    for line in &refused {
        eprintln!("refused: {line}");
    }
    if !refused.is_empty() {
        bail!(
            "{} lines of the records are not games that replay (the ratings above leave them out)",
            refused.len()
        );
    }
    Ok(())
}

fn sprt_cmd(a: SprtArgs) -> anyhow::Result<()> {
    let seed = referee::seed::seed_or_random(a.game.seed);
    if a.game.seed.is_none() {
        eprintln!("sprt seed {seed} (random; --seed {seed} plays these pairs again)");
    }
    let bots = name_bots(&[a.bot.clone(), a.vs.clone()])?;
    let test =
        rating::sprt::Sprt::new(a.model, a.elo0, a.elo1, a.alpha, a.beta).map_err(anyhow::Error::msg)?;
    let stop = interrupt_flag();
    let cfg = ladder::local::sprt::SprtConfig {
        game: a.game.game.clone(),
        options: a.game.opts.clone(),
        bots,
        test,
        max_games: a.max_games,
        concurrency: a.game.concurrency,
        seed,
        limits: referee::Limits {
            sandbox: a.game.sandbox(None)?,
            ..tournament::limits_from(&a.game.time()).map_err(anyhow::Error::msg)?
        },
        log_dir: a.game.log_dir.clone(),
        fresh_bots: a.game.fresh_bots,
        stop: Some(stop),
    };
    let report = ladder::local::sprt::run(&cfg, sprt_progress())?;
    print!("{}", report.text(&cfg));
    if report.interrupted {
        // The conventional status of a run stopped by SIGINT.
        std::process::exit(130);
    }
    Ok(())
}

/// A flag that Ctrl-C (SIGINT) sets, watched by a thread of its own, so that a
/// long run can stop after its games in flight and print what it has.
fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let set = flag.clone();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        if rt.block_on(tokio::signal::ctrl_c()).is_ok() {
            eprintln!("\ninterrupted: finishing the games in flight (Ctrl-C again to abandon them)");
            set.store(true, std::sync::atomic::Ordering::Relaxed);
            // A second Ctrl-C: the default action, at once.
            if rt.block_on(tokio::signal::ctrl_c()).is_ok() {
                std::process::exit(130);
            }
        }
    });
    flag
}

/// The running state of an SPRT: on a terminal one line rewritten at most 10 times a
/// second, else a line every 5 seconds.
fn sprt_progress() -> impl FnMut(&rating::sprt::SequentialTest, u64, u64) {
    let tty = std::io::stderr().is_terminal();
    let mut last: Option<std::time::Instant> = None;
    let started = std::time::Instant::now();
    move |test, done, total| {
        let every = std::time::Duration::from_millis(if tty { 100 } else { 5000 });
        let finished = test.decision != rating::sprt::SprtDecision::Continue || done >= total;
        if last.is_some_and(|t| t.elapsed() < every) && !finished {
            return;
        }
        last = Some(std::time::Instant::now());
        // An SPRT stops when the LLR leaves its bounds, so there is no ETA: the
        // rate, and the time until --max-games at that rate, at most.
        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
        let line = format!(
            "{}  {rate:.1} games/s, at most {:.0} s left",
            ladder::local::sprt::progress_line(test, done, total),
            total.saturating_sub(done) as f64 / rate.max(1e-9)
        );
        if tty {
            eprint!("\r\x1b[2K{line}");
            if finished {
                eprintln!();
            }
        } else {
            eprintln!("{line}");
        }
    }
}

fn bench_sprt(a: BenchSprtArgs) -> anyhow::Result<()> {
    println!(
        "{:>5} {:<12} {:>8} {:>8} {:>12} {:>12}",
        "gap", "pairs", "alpha", "beta", "pairs@elo0", "pairs@elo1"
    );
    let start = std::time::Instant::now();
    for &gap in &a.gaps {
        let test = rating::sprt::Sprt::new(rating::sprt::EloModel::Logistic, 0.0, gap, 0.05, 0.05)
            .map_err(anyhow::Error::msg)?;
        for draw_heavy in [false, true] {
            let at0 = rating::sprt::simulate(test, 0.0, draw_heavy, a.runs, a.seed);
            let at1 = rating::sprt::simulate(test, gap, draw_heavy, a.runs, a.seed.wrapping_add(1));
            let rate = |k: u64| 100.0 * k as f64 / a.runs as f64;
            println!(
                "{gap:>5} {:<12} {:>7.2}% {:>7.2}% {:>12.0} {:>12.0}",
                if draw_heavy { "draw-heavy" } else { "independent" },
                rate(at0.h1),
                rate(at1.h0),
                at0.mean_pairs,
                at1.mean_pairs
            );
        }
    }
    let se = 100.0 * (0.05f64 * 0.95 / a.runs as f64).sqrt();
    println!(
        "{} runs a cell (a true 5% reads within ±{:.2} points 95% of the time); α and β nominal 5%; {:.1} s",
        a.runs,
        1.96 * se,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn bench_fit(a: BenchFitArgs) -> anyhow::Result<()> {
    let games = rating::fit::SimulatedGames::new(a.games, a.bots, a.seats).map_err(anyhow::Error::msg)?;
    let start = std::time::Instant::now();
    let results = games.results()?;
    let build = start.elapsed().as_secs_f64();
    let start = std::time::Instant::now();
    let steps = results.fit(rating::fit::Anchor::Mean(0.0)).iterations;
    let fit = (start.elapsed().as_secs_f64(), steps);
    println!(
        "{} games among {} bots ({} seats): {} distinct rankings; aggregating {:.3} s, fitting {:.3} s ({} Newton steps), {:.3} s in all",
        a.games,
        a.bots,
        a.seats,
        results.distinct(),
        build,
        fit.0,
        fit.1,
        build + fit.0
    );
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}

fn serve_cmd(a: ServeArgs) -> anyhow::Result<()> {
    let admin_token = read_secret(
        a.admin_token_file.as_deref(),
        "ASTRAGAL_ADMIN_TOKEN",
        "admin token",
    )?;
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => Some(tonic::transport::Identity::from_pem(
            std::fs::read(cert).with_context(|| format!("cannot read {}", cert.display()))?,
            std::fs::read(key).with_context(|| format!("cannot read {}", key.display()))?,
        )),
        _ => None,
    };
    let rt = runtime()?;
    rt.block_on(async {
        let store = Store::open(&a.db)
            .await
            .with_context(|| format!("opening store {}", a.db))?;
        let grpc = tokio::net::TcpListener::bind(&a.listen)
            .await
            .with_context(|| format!("cannot listen on {}", a.listen))?;
        eprintln!("ladder: gRPC on {}", grpc.local_addr()?);
        let http = match &a.http {
            Some(addr) => {
                let l = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}"))?;
                eprintln!("ladder: web on http://{}", l.local_addr()?);
                Some(l)
            }
            None => None,
        };
        let cfg = ladder::server::ServiceConfig {
            admin_token,
            lease: std::time::Duration::from_secs_f64(a.lease_seconds),
            tls,
            suspend_after: a.suspend_after,
        };
        ladder::server::run(grpc, http, store, cfg, shutdown_signal()).await?;
        anyhow::Ok(())
    })
}

fn worker_cmd(a: WorkerArgs) -> anyhow::Result<()> {
    let mut sandbox = a.sandbox.sandbox(Level::Isolated).map_err(anyhow::Error::msg)?;
    if sandbox.level == Level::None && !a.allow_unsandboxed {
        bail!(
            "a worker runs programs strangers registered: it refuses `--sandbox none` unless you also pass \
             --allow-unsandboxed (see docs/security.md)"
        );
    }
    sandbox.check().context("bots cannot be isolated on this machine; to run them anyway, pass `--sandbox none --allow-unsandboxed` (see docs/security.md)")?;
    if let Some(dir) = &a.log_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    }
    sandbox.hide(a.log_dir.iter().cloned());
    let rt = runtime()?;
    let cfg = ladder::worker::WorkerConfig {
        token: read_secret(a.token_file.as_deref(), "ASTRAGAL_WORKER_TOKEN", "worker token")?,
        ca_pem: read_pem(a.ca_cert.as_deref())?,
        server: a.server,
        name: a.name,
        concurrency: a.concurrency,
        batch: a.batch,
        max_groups: a.max_groups,
        exit_when_idle: a.exit_when_idle,
        log_dir: a.log_dir,
        sandbox,
        progress: true,
    };
    let n = rt.block_on(ladder::worker::run(cfg, shutdown_signal()))?;
    eprintln!("ladder worker: {n} groups reported");
    Ok(())
}

fn admin_cmd(a: AdminArgs) -> anyhow::Result<()> {
    use proto::ladder::*;
    let rt = runtime()?;
    rt.block_on(async {
        let token = read_secret(a.token_file.as_deref(), "ASTRAGAL_ADMIN_TOKEN", "admin token")?;
        let ca = read_pem(a.ca_cert.as_deref())?;
        let mut c = ladder::worker::connect(&a.server, &token, ca.as_deref()).await?;
        let describe = |i: CompetitionInfo| {
            format!(
                "{}: {} {} · {} seats · {} · {} games{} · bots: {}",
                i.name,
                i.game,
                i.options.join(" "),
                i.seats,
                i.status,
                i.games,
                if i.max_games > 0 {
                    format!(" of {}", i.max_games)
                } else {
                    String::new()
                },
                i.bots.join(", ")
            )
        };
        match a.action {
            AdminAction::RegisterBot {
                name,
                game,
                spec,
                env,
            } => {
                let env = env_vars(&env)?;
                let b = c
                    .register_bot(RegisterBotRequest {
                        name,
                        game,
                        spec,
                        env,
                    })
                    .await
                    .map_err(said)?
                    .into_inner();
                println!("{}", describe_bot(&b));
            }
            AdminAction::Bots => {
                for b in c
                    .list_bots(ListBotsRequest {})
                    .await
                    .map_err(said)?
                    .into_inner()
                    .bots
                {
                    println!("{}", describe_bot(&b));
                }
            }
            AdminAction::Disable { name, reason } => set_bot_status(&mut c, name, "disabled", reason).await?,
            AdminAction::Enable { name } => set_bot_status(&mut c, name, "active", String::new()).await?,
            AdminAction::Remove { name, reason } => set_bot_status(&mut c, name, "removed", reason).await?,
            AdminAction::Update { name, spec, env } => {
                let env = env_vars(&env)?;
                let b = c
                    .update_bot(RegisterBotRequest {
                        name,
                        game: String::new(),
                        spec,
                        env,
                    })
                    .await
                    .map_err(said)?
                    .into_inner();
                println!("{}", describe_bot(&b));
            }
            AdminAction::Open {
                name,
                game,
                opts,
                seats,
                max_games,
                seed,
                movetime,
            } => {
                let i = c
                    .open_competition(OpenCompetitionRequest {
                        name,
                        game,
                        options: opts,
                        seats,
                        seed,
                        max_games,
                        movetime_ms: movetime,
                        tc: String::new(),
                    })
                    .await
                    .map_err(said)?
                    .into_inner();
                println!("{}", describe(i));
            }
            AdminAction::Close { name } => {
                let i = c
                    .close_competition(CloseCompetitionRequest { name })
                    .await
                    .map_err(said)?
                    .into_inner();
                println!("{}", describe(i));
            }
            AdminAction::List => {
                for i in c
                    .list_competitions(ListCompetitionsRequest {})
                    .await
                    .map_err(said)?
                    .into_inner()
                    .competitions
                {
                    println!("{}", describe(i));
                }
            }
            AdminAction::Standings { name } => {
                let s = c
                    .standings(StandingsRequest { competition: name })
                    .await
                    .map_err(said)?
                    .into_inner();
                println!(
                    "{:>4}  {:<24} {:>7} {:>6} {:>7} {:>7}",
                    "rank", "bot", "Elo", "±95%", "games", "score"
                );
                for r in s.rows {
                    println!(
                        "{:>4}  {:<24} {:>7.0} {:>6.0} {:>7} {:>6.1}%",
                        r.rank, r.bot, r.elo, r.ci95, r.games, r.score
                    );
                }
                println!("{} games; {}", s.games, s.anchor);
            }
            AdminAction::AddWorker { name } => {
                let w = c
                    .add_worker(AddWorkerRequest { name })
                    .await
                    .map_err(said)?
                    .into_inner();
                eprintln!(
                    "worker {}: its token is below, shown once. Save it to a file only the worker reads \
                     and run `ladder worker --token-file FILE`.",
                    w.name
                );
                println!("{}", w.token);
            }
            AdminAction::RevokeWorker { name } => {
                let w = c
                    .revoke_worker(WorkerRequest { name })
                    .await
                    .map_err(said)?
                    .into_inner();
                println!(
                    "worker {} revoked ({} groups, {} games reported stay)",
                    w.name, w.groups, w.games
                );
            }
            AdminAction::Workers => {
                let list = c
                    .list_workers(ListWorkersRequest {})
                    .await
                    .map_err(said)?
                    .into_inner();
                println!(
                    "{:<20} {:>8} {:>7} {:>8}  faulted games (rate, others' rate, z)",
                    "worker", "status", "groups", "games"
                );
                for w in list.workers {
                    let faults: Vec<String> = w
                        .faults
                        .iter()
                        .filter(|f| f.games > 0)
                        .map(|f| {
                            format!(
                                "{} {} ({:.1}%, {:.1}%, {:+.1})",
                                f.kind,
                                f.games,
                                100.0 * f.rate,
                                100.0 * f.others_rate,
                                f.z
                            )
                        })
                        .collect();
                    println!(
                        "{:<20} {:>8} {:>7} {:>8}  {}",
                        w.name,
                        if w.revoked { "revoked" } else { "active" },
                        w.groups,
                        w.games,
                        if faults.is_empty() {
                            "-".into()
                        } else {
                            faults.join("; ")
                        }
                    );
                    if !w.flag.is_empty() {
                        println!("{:<20} FLAGGED: {}", "", w.flag);
                    }
                }
            }
            AdminAction::VoidWorker { name } => {
                let v = c
                    .void_worker(WorkerRequest { name })
                    .await
                    .map_err(said)?
                    .into_inner();
                println!(
                    "worker {} revoked; {} games of {} groups removed, to be played again",
                    v.name, v.games, v.groups
                );
            }
        }
        anyhow::Ok(())
    })
}
