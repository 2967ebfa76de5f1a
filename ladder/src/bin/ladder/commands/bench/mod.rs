//! The benchmark commands: `bench-service`, `bench-web`, `bench-upload`, `bench-fit`,
//! `bench-sprt`.
//! They live in the binary, not the library: nothing else calls them.

mod service;
mod upload;
mod web;

use super::runtime;
use anyhow::Context;
use clap::Args;
use clap::builder::TypedValueParser as _;
use referee::cli::number_in;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct BenchServiceArgs {
    /// `sqlite` (a new file, removed after) or a postgres:// URL.
    #[arg(long, default_value = "sqlite")]
    pub(crate) db: String,
    /// Numbers of simulated workers, one row each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "10,100,500", value_parser = |s: &str| number_in(s, 1usize, 100_000))]
    pub(crate) workers: Vec<usize>,
    /// Connections the simulated workers share at most: past this many
    /// workers, several call over one connection, each with its own token and
    /// leases (a server takes 4096 gRPC connections at once, and 64 calls at
    /// once on each: at most 32 workers share one).
    #[arg(long, default_value_t = 1000, value_parser = |s: &str| number_in(s, 1usize, 4000))]
    pub(crate) connections: usize,
    /// `ladder serve` processes on the one (PostgreSQL) database, the workers
    /// spread over them; the run checks every game was stored exactly once.
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 16))]
    pub(crate) servers: usize,
    /// Seconds measured per row.
    #[arg(long, default_value_t = 10.0, value_parser = |s: &str| number_in(s, 0.5, 3600.0))]
    pub(crate) seconds: f64,
    /// Seconds of warm-up per row.
    #[arg(long, default_value_t = 2.0, value_parser = |s: &str| number_in(s, 0.0, 600.0))]
    pub(crate) warmup: f64,
    /// Groups per lease and per report call (1 to 64).
    #[arg(long, default_value_t = 16, value_parser = |s: &str| number_in(s, 1usize, 64))]
    pub(crate) batch: usize,
    /// The game.
    #[arg(long, default_value = "ur")]
    pub(crate) game: String,
    /// Random bots registered.
    #[arg(long, default_value_t = 8, value_parser = |s: &str| number_in(s, 2usize, 1000))]
    pub(crate) bots: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct BenchWebArgs {
    /// `sqlite` (a new file, removed after) or a postgres:// URL (a new database on
    /// that server, dropped after).
    #[arg(long, default_value = "sqlite")]
    pub(crate) db: String,
    /// Games in the competition.
    #[arg(long, default_value_t = 100_000, value_parser = |s: &str| number_in(s, 2u64, 10_000_000))]
    pub(crate) games: u64,
    /// Bots in it.
    #[arg(long, default_value_t = 12, value_parser = |s: &str| number_in(s, 2usize, 1000))]
    pub(crate) bots: usize,
    /// Requests per page.
    #[arg(long, default_value_t = 50, value_parser = |s: &str| number_in(s, 1usize, 100_000))]
    pub(crate) requests: usize,
    /// Seed of the simulated results.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct BenchUploadArgs {
    /// The bot's size in MiB (random padding, which does not compress).
    #[arg(long, default_value_t = 10, value_parser = |s: &str| number_in(s, 0u64, 60))]
    pub(crate) mib: u64,
    /// Games per run of the throughput comparison.
    #[arg(long, default_value_t = 200, value_parser = |s: &str| number_in(s, 2u64, 1_000_000))]
    pub(crate) games: u64,
    /// Runs of each kind, in turn (the median is reported).
    #[arg(long, default_value_t = 3, value_parser = |s: &str| number_in(s, 1usize, 100))]
    pub(crate) rounds: usize,
    /// Keep the files in an object store (a directory or a URL) instead of
    /// the database, as `ladder serve --artifacts`.
    #[arg(long, value_name = "DIR|URL")]
    pub(crate) artifacts: Option<String>,
    /// Containment of the bots (default: isolated, as a worker).
    #[command(flatten)]
    pub(crate) sandbox: referee::sandbox::SandboxArgs,
}

#[derive(Args)]
pub(crate) struct BenchSprtArgs {
    /// Simulated tests per hypothesis, gap and kind of pairs.
    #[arg(long, default_value_t = 2000, value_parser = |s: &str| number_in(s, 10u64, 10_000_000))]
    pub(crate) runs: u64,
    /// Gaps elo1 - elo0 to test (in the --model's scale, elo0 = 0), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "5,10,50,100")]
    pub(crate) gaps: Vec<f64>,
    /// The scale of the gaps and of the tests: normalized (the default of `ladder
    /// sprt`) or logistic. The simulated pairs are drawn at elo0 and elo1 in it.
    #[arg(long, default_value_t = rating::sprt::EloModel::Normalized,
          value_parser = clap::builder::PossibleValuesParser::new(["normalized", "logistic"]).try_map(|s| s.parse::<rating::sprt::EloModel>()))]
    pub(crate) model: rating::sprt::EloModel,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

#[derive(Args)]
pub(crate) struct BenchFitArgs {
    /// Simulated games.
    #[arg(long, default_value_t = 1_000_000, value_parser = |s: &str| number_in(s, 1u64, 100_000_000))]
    pub(crate) games: u64,
    /// Bots.
    #[arg(long, default_value_t = 50, value_parser = |s: &str| number_in(s, 2usize, 100_000))]
    pub(crate) bots: usize,
    /// Seats per game.
    #[arg(long, default_value_t = 2, value_parser = |s: &str| number_in(s, 2usize, 64))]
    pub(crate) seats: usize,
}

pub(crate) fn service(a: BenchServiceArgs) -> anyhow::Result<ExitCode> {
    engine::game_info(&a.game)?;
    let cfg = service::BenchServiceConfig {
        db: a.db,
        server_program: std::env::current_exe().context("cannot find this program to run as the server")?,
        workers: a.workers,
        seconds: a.seconds,
        warmup: a.warmup,
        batch: a.batch,
        game: a.game,
        bots: a.bots,
        connections: a.connections,
        servers: a.servers,
    };
    let report = runtime()?.block_on(service::run(&cfg))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn upload(a: BenchUploadArgs) -> anyhow::Result<ExitCode> {
    let sandbox = a
        .sandbox
        .sandbox(referee::sandbox::Level::Isolated)
        .map_err(anyhow::Error::msg)?;
    sandbox.check()?;
    let cfg = upload::BenchUploadConfig {
        mib: a.mib,
        games: a.games,
        rounds: a.rounds,
        sandbox,
        artifacts: a.artifacts,
    };
    runtime()?.block_on(upload::run(&cfg))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn web(a: BenchWebArgs) -> anyhow::Result<ExitCode> {
    let cfg = web::BenchWebConfig {
        db: a.db,
        games: a.games,
        bots: a.bots,
        requests: a.requests,
        seed: a.seed,
    };
    let report = runtime()?.block_on(web::run(&cfg))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn sprt(a: BenchSprtArgs) -> anyhow::Result<ExitCode> {
    println!(
        "{:>5} {:<12} {:>8} {:>8} {:>12} {:>12}",
        "gap", "pairs", "alpha", "beta", "pairs@elo0", "pairs@elo1"
    );
    let start = std::time::Instant::now();
    for &gap in &a.gaps {
        let test = rating::sprt::Sprt::new(a.model, 0.0, gap, 0.05, 0.05)?;
        for draw_heavy in [false, true] {
            // The two hypotheses side by side, one a core: each is its own seed's.
            let (at0, at1) = std::thread::scope(|s| {
                let at0 = s.spawn(|| rating::sprt::simulate(test, 0.0, draw_heavy, a.runs, a.seed));
                let at1 = rating::sprt::simulate(test, gap, draw_heavy, a.runs, a.seed.wrapping_add(1));
                (at0.join(), at1)
            });
            let at0 = at0.map_err(|_| anyhow::anyhow!("the simulation at elo0 panicked"))?;
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
        "{} model; {} runs a cell (a true 5% reads within ±{:.2} points 95% of the time); α and β nominal 5%; {:.1} s",
        a.model,
        a.runs,
        1.96 * se,
        start.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn fit(a: BenchFitArgs) -> anyhow::Result<ExitCode> {
    let games = rating::fit::SimulatedGames::new(a.games, a.bots, a.seats)?;
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
    Ok(ExitCode::SUCCESS)
}
