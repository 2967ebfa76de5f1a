//! `ladder tournament`: a round-robin or gauntlet of mirrored groups, resumable with --db.
use super::{GameArgs, anchor_of, name_bots, runtime, say};
use anyhow::Context;
use clap::Args;
use ladder::local::tournament::{self, Format, TournamentConfig};
use ladder::store::Store;
use referee::cli::number_in;
use std::io::Write as _;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct TournamentArgs {
    #[command(flatten)]
    pub(crate) game: GameArgs,
    /// An entrant, NAME=SPEC or SPEC (named after its program): a command line,
    /// builtin:NAME[?key=value&...] (random, first, greedy, mcts: see docs/bots.md), or
    /// grpc://host:port. Repeat for each bot.
    #[arg(long = "bot", required = true)]
    pub(crate) bots: Vec<String>,
    /// Games to play in all, rounded up to whole mirrored groups.
    #[arg(long, default_value_t = 100, value_parser = |s: &str| number_in(s, 1u64, 1_000_000_000))]
    pub(crate) games: u64,
    /// Interim standings every this many games (0: none); on a terminal they print
    /// above the progress bar.
    #[arg(long, default_value_t = 0)]
    pub(crate) standings_every: u64,
    /// round-robin: every set of bots meets in turn; gauntlet: the first bot meets all others.
    #[arg(long, value_enum, default_value = "round-robin")]
    pub(crate) format: Format,
    /// Seats per game (default: the game's smallest number).
    #[arg(long, value_parser = |s: &str| number_in(s, 1usize, 64))]
    pub(crate) seats: Option<usize>,
    /// Store: a SQLite file (created if missing) or postgres://...; resumable.
    /// Without it the tournament lives in memory.
    #[arg(long)]
    pub(crate) db: Option<String>,
    /// The tournament's name in the store.
    #[arg(long, default_value = "tournament")]
    pub(crate) name: String,
    /// Pin this bot's rating: NAME or NAME=ELO (default: the average is 0).
    #[arg(long)]
    pub(crate) anchor: Option<String>,
    /// Print the standings as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Deal every game of a group its own seed instead of mirroring the group's
    /// dice: for bots that cannot be held apart across a group's games (groups
    /// with a grpc:// bot are dealt so anyway). About twice the games for the same
    /// precision in luck-heavy games: see docs/ladder.md.
    #[arg(long)]
    pub(crate) independent_seeds: bool,
}

pub(crate) fn run(a: TournamentArgs) -> anyhow::Result<ExitCode> {
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
        independent_seeds: a.independent_seeds,
        log_dir: a.game.log_dir.clone(),
        fresh_bots: a.game.fresh_bots,
        sandbox: a.game.sandbox(a.db.as_deref())?,
        trusted_bots: a.game.trusted_bots,
        stop: Some(referee::progress::stop_on_ctrl_c("games").map_err(anyhow::Error::msg)?),
    };
    let mut progress: Option<referee::progress::Progress> = None;
    let report = tournament::run(&rt, &store, &cfg, |done, total| {
        let p = progress
            .get_or_insert_with(|| referee::progress::Progress::new(Some(total), "games", a.standings_every));
        p.update(done, || {
            let standings = rt
                .block_on(store.competitions().competition(&cfg.name))
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
                .block_on(store.competitions().competition(&cfg.name))?
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
        say(&serde_json::to_string_pretty(&standings)?)?;
        eprintln!("{summary}");
    } else {
        say(&standings.table())?;
        say(&summary)?;
    }
    rt.block_on(store.games().close());
    std::io::stdout().flush()?;
    if report.setup_faults > 0 {
        eprintln!(
            "ladder: in {} games a bot could not start or shake hands, so the tournament was not played as asked",
            report.setup_faults
        );
        return Ok(ExitCode::from(3));
    }
    if report.resumed + report.played < report.total {
        eprintln!(
            "interrupted: {} of {} games recorded; run the same command again to resume",
            report.resumed + report.played,
            report.total
        );
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
