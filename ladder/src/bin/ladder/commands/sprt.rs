//! `ladder sprt`: mirrored pairs between two bots until the SPRT decides.
use super::{GameArgs, name_bots, say};
use clap::Args;
use clap::builder::TypedValueParser as _;
use referee::Limits;
use referee::cli::number_in;
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct SprtArgs {
    #[command(flatten)]
    pub(crate) game: GameArgs,
    /// The bot under test, NAME=SPEC or SPEC.
    #[arg(long = "bot")]
    pub(crate) bot: String,
    /// Its opponent, NAME=SPEC or SPEC.
    #[arg(long = "vs")]
    pub(crate) vs: String,
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
    pub(crate) model: rating::sprt::EloModel,
    /// False positive rate.
    #[arg(long, default_value_t = 0.05, value_parser = |s: &str| number_in(s, 0.0001, 0.5))]
    pub(crate) alpha: f64,
    /// False negative rate.
    #[arg(long, default_value_t = 0.05, value_parser = |s: &str| number_in(s, 0.0001, 0.5))]
    pub(crate) beta: f64,
    /// Stop undecided after this many games.
    #[arg(long, default_value_t = 100_000, value_parser = |s: &str| number_in(s, 2u64, 1_000_000_000))]
    pub(crate) max_games: u64,
    /// Deal the two games of a pair their own seeds instead of the same dice with
    /// the seats swapped: for bots that cannot be held apart across a pair (a
    /// grpc:// bot gets this anyway). More games for the same decision: see
    /// docs/ladder.md.
    #[arg(long)]
    pub(crate) independent_seeds: bool,
}

pub(crate) fn run(a: SprtArgs) -> anyhow::Result<ExitCode> {
    let seed = referee::seed::seed_or_random(a.game.seed);
    if a.game.seed.is_none() {
        eprintln!("sprt seed {seed} (random; --seed {seed} plays these pairs again)");
    }
    let bots = name_bots(&[a.bot.clone(), a.vs.clone()])?;
    let test = rating::sprt::Sprt::new(a.model, a.elo0, a.elo1, a.alpha, a.beta)?;
    let stop = referee::progress::stop_on_ctrl_c("games").map_err(anyhow::Error::msg)?;
    let cfg = ladder::local::sprt::SprtConfig {
        game: a.game.game.clone(),
        options: a.game.opts.clone(),
        bots,
        test,
        max_games: a.max_games,
        concurrency: a.game.concurrency,
        seed,
        limits: Limits {
            sandbox: a.game.sandbox(None)?,
            tc: a.game.time(),
            ..Limits::default()
        },
        log_dir: a.game.log_dir.clone(),
        fresh_bots: a.game.fresh_bots,
        independent_seeds: a.independent_seeds,
        trusted_bots: a.game.trusted_bots,
        stop: Some(stop),
    };
    let report = ladder::local::sprt::run(&cfg, sprt_progress())?;
    say(&report.text(&cfg))?;
    if report.interrupted {
        // The conventional status of a run stopped by SIGINT.
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
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
