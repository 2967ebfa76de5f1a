//! The `referee` command.

mod bench;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use referee::cli::number_in;
use referee::clock::{Limits, MAX_MOVE_MS, TimeControl};
use referee::game::{GameSetup, LogPlace, SeatSetup, play_game};
use referee::matchplay::{MatchConfig, run_match};
use referee::sandbox::{self, SandboxArgs};
use referee::text::escaped;
use referee::{BotSpec, record, replay};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Run dice games between bots, deterministically from a seed, and record them.
///
/// A bot is any program that speaks the astragal text protocol on stdin/stdout
/// (see docs/protocol.md), a gRPC server of the astragal.v1.Bot service, a
/// built-in bot, or you at the terminal.
///
/// Examples:
///
///   referee play --game ur --seed 42 --bot builtin:random --bot "python3 bots/python/random_bot.py"
///
///   referee match --game cuatto --bot builtin:random --bot builtin:first --bot builtin:random --games 30
///
///   referee replay games.jsonl
#[derive(Parser)]
#[command(version, about, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play one game and print its result (and record it with --record).
    ///
    /// Exit status: 0 when the game was played; 3 when a bot could not start (the
    /// game is still printed and recorded, ended by that seat's fault); 1 for any
    /// other error.
    Play(PlayArgs),
    /// Play many games in mirrored groups and print a summary per bot.
    ///
    /// Progress goes to stderr (a bar on a terminal). Ctrl-C starts no new game,
    /// lets the ones under way finish and be recorded, and prints the partial
    /// table; Ctrl-C again quits at once. Exit status: 0 when every game was played
    /// as asked; 3 when a bot could not start or shake hands in some game; 130 when
    /// stopped by Ctrl-C; 1 for any other error.
    Match(MatchArgs),
    /// Re-run recorded games and report any difference.
    ///
    /// Exit status: 0 when every line replays identically; 1 when a line does not
    /// (each is named) or a file cannot be read.
    Replay(ReplayArgs),
    /// Draw a recorded game move by move.
    Show(ShowArgs),
    /// Write a recorded game as one HTML page to watch in a browser, move by move:
    /// first/previous/next/last, play at a speed, a scrubber, arrow keys, each
    /// move's time, info lines and faults, and the full state or what one seat saw.
    /// The page is self-contained: it works offline and fetches nothing.
    View(ViewArgs),
    /// Check that a bot follows the protocol: handshake, ping, ids, legal moves, speed, quit.
    ///
    /// Each line says ok, FAIL, or -- (not checked: nothing was seen that could
    /// tell, e.g. no move was made). Exit status: 0 when the bot passed, 2 when it
    /// failed a check, 1 for any other error.
    CheckBot(CheckArgs),
    /// Measure the protocol: decisions/s beside a raw pipe, and games/s at concurrency 1 and 2.
    Bench(BenchArgs),
    /// List the games and their options.
    Games,
}

#[derive(Args)]
struct CheckArgs {
    /// The bot: a command line, grpc://host:port, or builtin:NAME.
    bot: String,
    /// Game to check it on.
    #[arg(long, default_value = "ur")]
    game: String,
    /// Game option key=value (repeatable).
    #[arg(long = "opt")]
    opts: Vec<String>,
    /// Bot option key=value (repeatable), sent with setoption.
    #[arg(long = "bot-opt")]
    bot_opts: Vec<String>,
    /// Games to play (at least one per seat).
    #[arg(long, default_value_t = 4, value_parser = |s: &str| number_in(s, 1u64, 100_000))]
    games: u64,
    /// Milliseconds per move.
    #[arg(long, default_value_t = 2000, value_parser = |s: &str| number_in(s, 1u64, MAX_MOVE_MS))]
    movetime: u64,
    /// An environment variable for the bot's process, KEY=VALUE (repeatable).
    #[arg(long = "bot-env", value_name = "KEY=VALUE")]
    bot_env: Vec<String>,
    /// Milliseconds the bot has to start and finish the handshake.
    #[arg(long, default_value_t = 10_000, value_parser = |s: &str| number_in(s, 1u64, 600_000))]
    handshake_timeout: u64,
    /// Print the report as one JSON object (`passed`, and `items` with `status`
    /// ok, fail or not_checked) instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Args)]
struct BenchArgs {
    /// Game id.
    #[arg(long, default_value = "ur")]
    game: String,
    /// Game option key=value (repeatable).
    #[arg(long = "opt")]
    opts: Vec<String>,
    /// Decisions to make through the protocol.
    #[arg(long, default_value_t = 20_000, value_parser = |s: &str| number_in(s, 1u64, 1_000_000_000))]
    decisions: u64,
    /// Games for the concurrency comparison.
    #[arg(long, default_value_t = 200, value_parser = |s: &str| number_in(s, 1u64, 100_000_000))]
    games: u64,
    /// The bot program (default: astragal-bot --bot first, next to this referee).
    #[arg(long)]
    bot: Option<String>,
    /// Seats (the game's default when absent).
    #[arg(long, value_parser = |s: &str| number_in(s, 1usize, 64))]
    seats: Option<usize>,
    /// Rounds of protocol-then-raw measurement; medians are reported.
    #[arg(long, default_value_t = 5, value_parser = |s: &str| number_in(s, 1usize, 1000))]
    rounds: usize,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Args, Clone)]
struct GameArgs {
    /// Game id: utara, ur, uptick, cuatto, spartan (see `referee games`).
    #[arg(long)]
    game: String,
    /// A bot, once per seat: a command line ("python3 bot.py"), grpc://host:port (a bot
    /// served over gRPC), builtin:NAME[?key=value&...] (built-in: random, first, greedy, mcts), or human.
    /// The number of seats is the number of --bot. Name it with NAME=SPEC
    /// (e.g. --bot fast=builtin:random); unnamed bots show as the spec's short
    /// name, numbered when repeated (random, random#2).
    #[arg(long = "bot", required = true, value_name = "[NAME=]SPEC")]
    bots: Vec<String>,
    /// Game option key=value (repeatable), e.g. --opt rules=finkel. See `referee games`.
    #[arg(long = "opt")]
    opts: Vec<String>,
    /// Bot option for the N-th --bot (from 0) as N:key=value, sent with setoption.
    #[arg(long = "bot-opt")]
    bot_opts: Vec<String>,
    /// Clock per seat, base+increment in seconds (e.g. 10+0.1).
    #[arg(long, conflicts_with = "movetime")]
    tc: Option<String>,
    /// Fixed time per move in milliseconds (default 5000 when no --tc).
    #[arg(long, value_parser = |s: &str| number_in(s, 1u64, MAX_MOVE_MS))]
    movetime: Option<u64>,
    /// A time control for the N-th --bot only (from 0), instead of --tc/--movetime:
    /// N:BASE+INC in seconds (0:10+0.1) or N:MS for a fixed time per move (1:200).
    /// Repeatable; it follows the bot to every seat it plays.
    #[arg(long = "bot-tc", value_name = "N:TC")]
    bot_tc: Vec<String>,
    /// Extra milliseconds allowed on every deadline, for pipes and scheduling.
    #[arg(long, default_value_t = 100, value_parser = |s: &str| number_in(s, 0u64, 60_000))]
    timemargin: u64,
    /// Milliseconds a bot has to start and finish the handshake.
    #[arg(long, default_value_t = 10_000, value_parser = |s: &str| number_in(s, 1u64, 600_000))]
    handshake_timeout: u64,
    /// Append each game's record to this JSON Lines file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Write each bot's stderr (capped at 1 MiB per game) to files in this directory.
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// An environment variable for the N-th --bot's process (from 0), as N:KEY=VALUE
    /// (repeatable). Bots get nothing of the referee's own environment.
    #[arg(long = "bot-env", value_name = "N:KEY=VALUE")]
    bot_env: Vec<String>,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

#[derive(Args)]
struct PlayArgs {
    #[command(flatten)]
    game: GameArgs,
    /// Seed of the game's dice, to play a recorded game again. Without it the seed
    /// is 64 random bits from the operating system, printed and recorded: a seed a
    /// bot could guess would tell it every die to come.
    #[arg(long)]
    seed: Option<u64>,
    /// Start from this position (the game's position notation, see docs/rules/).
    #[arg(long)]
    position: Option<String>,
    /// Draw the game move by move at the end.
    #[arg(long)]
    show: bool,
    /// Print the game's record (as --record writes it) as one JSON line instead of
    /// the text summary.
    #[arg(long, conflicts_with = "show")]
    json: bool,
}

#[derive(Args)]
struct MatchArgs {
    #[command(flatten)]
    game: GameArgs,
    /// Games to play, rounded up to whole mirrored groups (one game per seat rotation).
    #[arg(long, default_value_t = 20, value_parser = |s: &str| number_in(s, 1u64, 1_000_000_000))]
    games: u64,
    /// Give every game a seed of its own instead of playing mirrored groups (the
    /// same dice with the seats rotated). Mirrored groups measure strength with
    /// far fewer games, but are fair only if no entrant can carry what it saw in one
    /// game of a group into another; so a match with a gRPC bot (one server sees
    /// every game) or a person plays independent seeds anyway.
    #[arg(long)]
    independent_seeds: bool,
    /// The bot processes are your own programs: play mirrored groups even at
    /// `--sandbox isolated`. Without it, an isolated match deals every game its
    /// own seed, because on one machine a process can leave word for the next
    /// rotation in state the kernel keeps after it exits (its page cache); at
    /// `--sandbox none` the bots are taken to be your own. See
    /// docs/security.md, "Mirrored groups".
    #[arg(long)]
    trusted_bots: bool,
    /// Games played at the same time.
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 1024))]
    concurrency: usize,
    /// The match's seed, to play a match again: group g plays a seed derived from
    /// it (recorded in each game). Without it the seed is 64 random bits from the
    /// operating system, printed at the start.
    #[arg(long)]
    seed: Option<u64>,
    /// Start every bot process anew for each game. By default a bot process that
    /// ends a game without a fault plays its next game too (told `newgame`, checked
    /// with `isready`), as in fastchess: much faster with quick bots, but a bot
    /// that keeps state between games carries it over.
    #[arg(long)]
    fresh_bots: bool,
    /// A start position (the game's notation, see docs/rules/), repeatable: group g
    /// starts from the (g mod count)-th, all its rotations from the same one, as
    /// opening books are played in chess matches.
    #[arg(long = "position", value_name = "POSITION")]
    positions: Vec<String>,
    /// A file of start positions, one per line (# starts a comment), as --position.
    #[arg(long)]
    positions_file: Option<PathBuf>,
    /// Interim standings every this many games (0: none); on a terminal they print
    /// above the progress bar.
    #[arg(long, default_value_t = 0)]
    standings_every: u64,
    /// Print the summary as JSON (`seed`, and `summary` with each entrant's counts)
    /// instead of a table.
    #[arg(long)]
    json: bool,
    /// Continue a match stopped early: the games of this match (same --game and
    /// --seed) already in the --record file count and are not played again.
    #[arg(long, requires_all = ["record", "seed"])]
    resume: bool,
}

#[derive(Args)]
struct ReplayArgs {
    /// Record files (JSON Lines).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print the result as JSON: `replayed` (games that replay identically) and
    /// `refused` (each line that does not: `file`, `line`, `why`).
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ShowArgs {
    /// Record file (JSON Lines).
    file: PathBuf,
    /// Which game of the file, from 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    index: u64,
}

#[derive(Args)]
struct ViewArgs {
    /// Record file (JSON Lines).
    file: PathBuf,
    /// Which game of the file, from 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    index: u64,
    /// Where to write the page (`-` for standard output).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "game.html"
    )]
    output: PathBuf,
}

impl GameArgs {
    fn limits(&self) -> anyhow::Result<Limits> {
        let tc = match (&self.tc, self.movetime) {
            (Some(tc), _) => TimeControl::parse_clock(tc).map_err(anyhow::Error::msg)?,
            (None, Some(ms)) => TimeControl::move_time(ms).map_err(anyhow::Error::msg)?,
            (None, None) => TimeControl::default(),
        };
        let mut sandbox = checked_sandbox(&self.sandbox)?;
        // The records and logs exist before any bot starts, so that an isolated bot
        // whose directory holds them is shown neither.
        if let Some(path) = &self.record {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        if let Some(dir) = &self.log_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
        }
        sandbox.hide(self.record.iter().chain(&self.log_dir).cloned());
        Ok(Limits {
            tc,
            margin: Duration::from_millis(self.timemargin),
            handshake: Duration::from_millis(self.handshake_timeout),
            sandbox,
            ..Limits::default()
        })
    }

    fn seats(&self) -> anyhow::Result<Vec<SeatSetup>> {
        Ok(self.named_seats()?.into_iter().map(|(_, s)| s).collect())
    }

    /// Each entrant's name (`NAME=SPEC`, else the spec's short name, numbered) and
    /// seat, with its options, environment and time control.
    fn named_seats(&self) -> anyhow::Result<Vec<(String, SeatSetup)>> {
        let (names, mut seats): (Vec<String>, Vec<SeatSetup>) = referee::spec::name_entrants(&self.bots)
            .map_err(anyhow::Error::msg)?
            .into_iter()
            .map(|(name, spec)| (name, SeatSetup::new(spec)))
            .unzip();
        for t in &self.bot_tc {
            let (idx, tc) = t.split_once(':').context(format!("--bot-tc {t:?} is not N:TC"))?;
            let idx: usize = idx
                .parse()
                .context(format!("--bot-tc {t:?}: {idx:?} is not a bot number"))?;
            let tc = if tc.contains('+') {
                TimeControl::parse_clock(tc)
            } else {
                tc.parse::<u64>()
                    .map_err(|_| format!("{tc:?} is neither BASE+INC (seconds) nor milliseconds per move"))
                    .and_then(TimeControl::move_time)
            }
            .map_err(|e| anyhow::anyhow!("--bot-tc {t:?}: {e}"))?;
            let seat = seats
                .get_mut(idx)
                .context(format!("--bot-tc {t:?}: there is no bot {idx} (from 0)"))?;
            seat.tc = Some(tc);
        }
        for o in &self.bot_opts {
            let (idx, kv) = o
                .split_once(':')
                .context(format!("--bot-opt {o:?} is not N:key=value"))?;
            let idx: usize = idx
                .parse()
                .context(format!("--bot-opt {o:?}: {idx:?} is not a bot number"))?;
            let (k, v) = kv
                .split_once('=')
                .context(format!("--bot-opt {o:?}: {kv:?} is not key=value"))?;
            let seat = seats
                .get_mut(idx)
                .context(format!("--bot-opt {o:?}: there is no bot {idx} (from 0)"))?;
            seat.options.push((k.to_owned(), v.to_owned()));
        }
        for e in &self.bot_env {
            let (idx, k, v) = sandbox::parse_bot_env(e).map_err(anyhow::Error::msg)?;
            let seat = seats
                .get_mut(idx)
                .context(format!("--bot-env {e:?}: there is no bot {idx} (from 0)"))?;
            if !matches!(seat.spec, BotSpec::Process { .. }) {
                bail!("--bot-env {e:?}: bot {idx} is not a program, so it has no environment");
            }
            seat.env.push((k, v));
        }
        // Built-in bots and their options are checked now, not at the first game.
        for s in &seats {
            if let BotSpec::Builtin { name, options } = &s.spec {
                let all: Vec<(String, String)> = options.iter().chain(&s.options).cloned().collect();
                bots::builtin(name, &all).map_err(anyhow::Error::msg)?;
            }
        }
        Ok(names.into_iter().zip(seats).collect())
    }
}

/// The sandbox the flags ask for (`none` unless `--sandbox` says otherwise), checked
/// on this machine before any game.
fn checked_sandbox(args: &SandboxArgs) -> anyhow::Result<sandbox::Sandbox> {
    let sandbox = args.sandbox(sandbox::Level::None).map_err(anyhow::Error::msg)?;
    sandbox.check()?;
    Ok(sandbox)
}

fn main() -> ExitCode {
    referee::cli::quiet_on_closed_stdout();
    let cli = Cli::parse();
    referee::cli::log_to_stderr();
    let result = match cli.command {
        Command::Play(a) => play(a),
        Command::Match(a) => matchplay(a),
        Command::Replay(a) => replay_files(&a).map(|()| ExitCode::SUCCESS),
        Command::Show(a) => show(&a).map(|()| ExitCode::SUCCESS),
        Command::View(a) => view(&a).map(|()| ExitCode::SUCCESS),
        Command::CheckBot(a) => check(a),
        Command::Bench(a) => bench(a).map(|()| ExitCode::SUCCESS),
        Command::Games => {
            games();
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|e| {
        // The error and its causes on one line; never a backtrace, whatever
        // RUST_BACKTRACE says (it is for panics, and a refusal is not one).
        // A refusal may quote what a bot or worker wrote: escapes made visible.
        eprintln!("referee: {}", escaped(&format!("{e:#}")));
        ExitCode::FAILURE
    })
}

fn play(a: PlayArgs) -> anyhow::Result<ExitCode> {
    let seats = a.game.seats()?;
    let seed = referee::seed::seed_or_random(a.seed);
    let setup = GameSetup {
        game: a.game.game.clone(),
        options: a.game.opts.clone(),
        seed,
        position: a.position.clone(),
        pairing: None,
    };
    if let Some(dir) = &a.game.log_dir {
        std::fs::create_dir_all(dir)?;
    }
    let logs = LogPlace {
        dir: a.game.log_dir.clone(),
        // Not the seed: a bot that can list the log directory must not learn it.
        tag: format!("play{}-", std::process::id()),
        names: Vec::new(),
        author_tail: 0,
    };
    let rec = play_game(&setup, &seats, &a.game.limits()?, &logs)?;
    if let Some(path) = &a.game.record {
        record::append(path, &rec).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&rec)?);
    } else {
        print_played(&a, &rec);
    }
    if let Some(f) = rec.faults.iter().find(|f| f.is_setup()) {
        // Scripts must not take a game a bot never played for a result.
        eprintln!(
            "referee: seat {} could not start ({}), so the game was not played as asked",
            f.seat, f.kind
        );
        std::io::stdout().flush()?;
        return Ok(ExitCode::from(EXIT_BOT_DID_NOT_START));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_played(a: &PlayArgs, rec: &referee::GameRecord) {
    if a.show {
        print!("{}", replay::show(rec));
    }
    println!(
        "{} seed {}{}: {} moves, {}",
        rec.game,
        rec.seed,
        if a.seed.is_none() { " (random)" } else { "" },
        rec.moves.len(),
        rec.termination
    );
    for (i, s) in rec.seats.iter().enumerate() {
        println!(
            "  seat {i} {:<24} place {} score {}",
            escaped(&s.name),
            rec.outcome.ranks[i],
            rec.outcome.scores[i]
        );
    }
    for f in &rec.faults {
        println!("  fault: seat {} {}: {}", f.seat, f.kind, escaped(&f.detail));
    }
}

/// The exit status of `play` and `match` when a bot could not start.
const EXIT_BOT_DID_NOT_START: u8 = 3;
/// The exit status of `check-bot` when the bot failed a check.
const EXIT_CHECK_FAILED: u8 = 2;
/// The exit status of a run stopped by Ctrl-C (after its partial result).
const EXIT_INTERRUPTED: u8 = 130;

fn matchplay(a: MatchArgs) -> anyhow::Result<ExitCode> {
    let seed = referee::seed::seed_or_random(a.seed);
    let (names, entrants): (Vec<String>, Vec<SeatSetup>) = a.game.named_seats()?.into_iter().unzip();
    // A person learns the seed (which foretells every die) only when the match is
    // over.
    let person = entrants.iter().any(|e| e.spec == BotSpec::Human);
    let say_seed = || {
        if a.seed.is_none() {
            eprintln!("match seed {seed} (random; --seed {seed} plays this match again)");
        }
    };
    if !person {
        say_seed();
    }
    let limits = a.game.limits()?;
    let strangers = limits.sandbox.level == sandbox::Level::Isolated && !a.trusted_bots;
    if let Ok(info) = engine::game_info(&a.game.game) {
        let acting = if info.nature.simultaneous {
            entrants.len()
        } else {
            1
        };
        if let Some(w) = sandbox::concurrency_warning(a.concurrency, acting, limits.sandbox.cpu_millicores) {
            tracing::warn!("{w}");
        }
    }
    let independent_seeds = a.independent_seeds
        || entrants.iter().any(|e| {
            matches!(e.spec, BotSpec::Human | BotSpec::Grpc { .. })
                || strangers && matches!(e.spec, BotSpec::Process { .. })
        });
    let mut positions = a.positions.clone();
    if let Some(file) = &a.positions_file {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        positions.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from),
        );
        if positions.is_empty() {
            bail!(
                "{} holds no position (one per line; # starts a comment)",
                file.display()
            );
        }
    }
    let played_before = match (&a.game.record, a.resume) {
        (Some(path), true) => {
            let lines = record::read_lines(path).map_err(anyhow::Error::msg)?;
            let found = referee::matchplay::games_of_match(
                lines.records.into_iter().map(|(_, r)| r).collect(),
                &a.game.game,
                seed,
                entrants.len(),
            );
            eprintln!(
                "resuming: {} games of this match are in {}",
                found.len(),
                path.display()
            );
            found
        }
        _ => Vec::new(),
    };
    let stop = referee::progress::stop_on_ctrl_c("games").map_err(anyhow::Error::msg)?;
    let cfg = MatchConfig {
        played_before,
        game: a.game.game.clone(),
        options: a.game.opts.clone(),
        entrants,
        names,
        positions,
        games: a.games,
        independent_seeds,
        concurrency: a.concurrency,
        seed,
        limits,
        record: a.game.record.clone(),
        log_dir: a.game.log_dir.clone(),
        fresh_bots: a.fresh_bots,
        stop,
    };
    let n = cfg.entrants.len() as u64;
    let planned = if independent_seeds {
        a.games
    } else {
        a.games.div_ceil(n).max(1) * n
    };
    let mut progress = referee::progress::Progress::new(Some(planned), "games", a.standings_every);
    let summary = run_match(cfg, |summary, rec| {
        for f in &rec.faults {
            // A game's seed is its dice: not for a person's eyes until the end.
            let game = if person {
                format!("game {}", summary.games)
            } else {
                format!("game seed {}", rec.seed)
            };
            progress.println(&format!(
                "fault in {game}: seat {} {}: {}",
                f.seat,
                f.kind,
                escaped(&f.detail)
            ));
        }
        progress.update(summary.games, || summary.table());
        std::ops::ControlFlow::Continue(())
    })?;
    progress.finish();
    if person {
        say_seed();
    }
    if a.json {
        println!("{}", serde_json::json!({ "seed": seed, "summary": summary }));
    } else {
        print!("{}", summary.table());
    }
    if summary.interrupted {
        eprintln!(
            "interrupted after {} of {} games: the table counts the games played{}",
            summary.games,
            summary.planned,
            if a.game.record.is_some() {
                "; each is in the record file"
            } else {
                ""
            }
        );
    }
    std::io::stdout().flush()?;
    if summary.setup_faults > 0 {
        eprintln!(
            "referee: in {} games a bot could not start or shake hands, so the match was not played as asked",
            summary.setup_faults
        );
        return Ok(ExitCode::from(EXIT_BOT_DID_NOT_START));
    }
    if summary.interrupted {
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let mut seat = SeatSetup::new(BotSpec::parse(&a.bot).map_err(anyhow::Error::msg)?);
    for kv in &a.bot_opts {
        let (k, v) = kv
            .split_once('=')
            .context(format!("--bot-opt {kv:?} is not key=value"))?;
        seat.options.push((k.to_owned(), v.to_owned()));
    }
    for kv in &a.bot_env {
        seat.env
            .push(sandbox::parse_env_pair(kv).map_err(|e| anyhow::anyhow!("--bot-env: {e}"))?);
    }
    let limits = Limits {
        tc: TimeControl::MoveTime(Duration::from_millis(a.movetime)),
        handshake: Duration::from_millis(a.handshake_timeout),
        sandbox: checked_sandbox(&a.sandbox)?,
        ..Limits::default()
    };
    let report = referee::check::check_bot(&seat, &a.game, &a.opts, &limits, a.games);
    if a.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    std::io::stdout().flush()?;
    if !report.passed() {
        return Ok(ExitCode::from(EXIT_CHECK_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

fn bench(a: BenchArgs) -> anyhow::Result<()> {
    let bot = match a.bot {
        Some(b) => b,
        None => {
            let exe = std::env::current_exe()?;
            let path = exe.with_file_name("astragal-bot");
            if !path.exists() {
                bail!(
                    "{} not found: build it with `cargo build --release -p astragal-bots`, or give --bot",
                    path.display()
                );
            }
            format!("{} --bot first", path.display())
        }
    };
    let cfg = bench::BenchConfig {
        game: a.game,
        options: a.opts,
        bot,
        decisions: a.decisions,
        scaling_games: a.games,
        rounds: a.rounds,
        seats: a.seats,
        sandbox: checked_sandbox(&a.sandbox)?,
    };
    let report = bench::bench(&cfg)?;
    print!("{}", report.text());
    Ok(())
}

fn replay_files(a: &ReplayArgs) -> anyhow::Result<()> {
    let (mut ok, mut refused) = (0, Vec::new());
    for file in &a.files {
        let checked = replay::check_file(file).map_err(anyhow::Error::msg)?;
        ok += checked.good.len();
        for (line, why) in checked.bad {
            if !a.json {
                println!("{}:{line}: {why}", file.display());
            }
            refused.push(serde_json::json!({ "file": file, "line": line, "why": why }));
        }
    }
    let bad = refused.len();
    if a.json {
        println!("{}", serde_json::json!({ "replayed": ok, "refused": refused }));
    } else {
        println!("{ok} games replayed identically, {bad} lines refused");
    }
    std::io::stdout().flush()?;
    if bad > 0 {
        bail!("{bad} lines are not games that replay");
    }
    Ok(())
}

/// Game `index` (from 1) of a record file; bad lines are named on stderr.
fn record_at(file: &std::path::Path, index: u64) -> anyhow::Result<record::GameRecord> {
    let lines = record::read_lines(file).map_err(anyhow::Error::msg)?;
    for (line, why) in &lines.bad {
        eprintln!("{}:{line}: skipped: {}", file.display(), escaped(why));
    }
    let count = lines.records.len();
    lines
        .records
        .into_iter()
        .nth(usize::try_from(index - 1).unwrap_or(usize::MAX))
        .map(|(_, rec)| rec)
        .with_context(|| format!("{} holds {count} games; there is no game {index}", file.display()))
}

fn show(a: &ShowArgs) -> anyhow::Result<()> {
    print!("{}", replay::show(&record_at(&a.file, a.index)?));
    Ok(())
}

fn view(a: &ViewArgs) -> anyhow::Result<()> {
    let rec = record_at(&a.file, a.index)?;
    let title = format!(
        "{} — {} (game {} of {})",
        rec.game,
        rec.seats
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(" v "),
        a.index,
        a.file.display()
    );
    let page = referee::view::html(&rec, &title)
        .with_context(|| format!("game {} of {} does not replay", a.index, a.file.display()))?;
    if a.output.as_os_str() == "-" {
        print!("{page}");
    } else {
        std::fs::write(&a.output, page).with_context(|| format!("cannot write {}", a.output.display()))?;
        eprintln!(
            "wrote {} ({} moves); open it in a browser",
            a.output.display(),
            rec.moves.len()
        );
    }
    Ok(())
}

fn games() {
    for g in engine::games() {
        println!(
            "{} — {} ({} to {} seats, default {})",
            g.id,
            g.name,
            g.seats.start(),
            g.seats.end(),
            g.default_seats
        );
        for o in g.options {
            let default = if o.default.is_empty() {
                "computed"
            } else {
                o.default
            };
            println!(
                "    {:<11} {:<44} default {default}\n                {}",
                o.name,
                o.kind.to_string(),
                o.help
            );
        }
    }
}
