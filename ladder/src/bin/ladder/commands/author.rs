//! `ladder submit` and `ladder author`: an author's own calls, with their token.
use super::{Connection, Role, runtime, said, say};
use clap::{Args, Subcommand};
use proto::ladder::BotStatus;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct SubmitArgs {
    #[command(flatten)]
    pub(crate) connection: Connection,
    /// Your bot: its folder (astragal.toml at its top), or an archive of it
    /// (.tar, .tar.gz, .tgz).
    pub(crate) path: PathBuf,
    /// A manifest to upload as the folder's astragal.toml, for a folder that
    /// holds more than one bot (the Python starter's `search.toml`, say): the
    /// folder's own astragal.toml, if any, is left out.
    #[arg(long, value_name = "FILE")]
    pub(crate) manifest: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct AuthorArgs {
    #[command(flatten)]
    pub(crate) connection: Connection,
    #[command(subcommand)]
    pub(crate) action: AuthorAction,
}

#[derive(Subcommand)]
pub(crate) enum AuthorAction {
    /// Every version of your bots: status (building, build-failed, rejected,
    /// active, superseded, disabled, suspended), why, and what it runs.
    Bots,
    /// Take one of your bots out of play (its games and rating stay).
    Disable {
        /// Its name, with its version (`NAME@2`) after the first.
        name: String,
    },
    /// Put back a bot you disabled, or one the ladder suspended.
    Enable {
        /// Its name.
        name: String,
    },
    /// One version's build log and check report: why it failed, if it did.
    Log {
        /// Its name, with its version (`NAME@2`) after the first.
        name: String,
    },
    /// Ask for unrated games between your bot and another bot of its game. They
    /// are played after the ladder's own games (a tenth of the scheduling goes to
    /// challenges), within the host's cap per author per day. Read them with
    /// `ladder author challenges` and `ladder author game ID`.
    Challenge {
        /// Your bot (its version's name).
        bot: String,
        /// The bot it meets.
        opponent: String,
        /// How many games (whole groups of two: both seatings of the same dice).
        #[arg(long, default_value_t = 2)]
        games: u32,
    },
    /// Your challenges, newest first: who met whom, games played of those asked
    /// for, and the games' ids.
    Challenges,
    /// A game's private logs of your seats in it: each bot's info lines with the
    /// move they came with, the end of its stderr, and its faults in full. Only
    /// you (and the host) can read them; the game's public record has none.
    Game {
        /// The game's id (as the pages and records number it).
        id: i64,
        /// Print the logs as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make one of your versions your entry in a season, before its deadline.
    /// Without a choice your entry is your newest active version uploaded by
    /// the deadline; versions uploaded after it take no part in the season.
    Enter {
        /// The version: `NAME` (version 1) or `NAME@N`.
        version: String,
        /// The season (default: the one season of the bot's game taking entries).
        #[arg(long, value_name = "NAME")]
        competition: Option<String>,
    },
}

/// How much of an upload goes in one message.
const CHUNK: usize = 1 << 20;

async fn connect(c: &Connection) -> anyhow::Result<ladder::worker::Client> {
    c.connect(Role::Author).await
}

/// The upload's bytes: a folder packed (with `manifest` as its astragal.toml
/// when given), or an archive as it is.
fn upload_of(path: &Path, manifest: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(file) = manifest {
        if !meta.is_dir() {
            anyhow::bail!(
                "--manifest is for a folder; {} is an archive, whose astragal.toml is its own",
                path.display()
            );
        }
        let text =
            std::fs::read(file).with_context(|| format!("--manifest: cannot read {}", file.display()))?;
        return ladder::submission::pack_folder_with_manifest(path, Some(&text))
            .with_context(|| format!("cannot pack {}", path.display()));
    }
    if meta.is_dir() {
        if !path.join(ladder::submission::MANIFEST).is_file() {
            anyhow::bail!(
                "{} holds no {}: write one (docs/hosting.md, \"Your bot's manifest\")",
                path.display(),
                ladder::submission::MANIFEST
            );
        }
        ladder::submission::pack_folder(path).with_context(|| format!("cannot pack {}", path.display()))
    } else {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
    }
}

pub(crate) fn submit(a: SubmitArgs) -> anyhow::Result<ExitCode> {
    let bytes = upload_of(&a.path, a.manifest.as_deref())?;
    // The same check the server makes, with the default limits and every runtime:
    // most mistakes are told here, before anything is sent.
    // The server's list of runtimes is its own: a runtime unknown here is unknown
    // to every ladder, and one known here may still be refused there, by its list.
    ladder::submission::Submission::check(
        &bytes,
        &ladder::submission::ArchiveLimits::default(),
        &ladder::submission::all_runtimes(),
    )
    .map_err(|e| match e {
        ladder::submission::SubmissionError::Manifest(
            ladder::submission::ManifestError::UnknownRuntime { runtime, known },
        ) => anyhow::anyhow!(
            "{}: astragal.toml: no ladder has a runtime {runtime:?}; ladders know {known} (each offers \
             some of them: the one you submit to says which if yours is not among them)",
            a.path.display()
        ),
        e => anyhow::anyhow!("{}: {e}", a.path.display()),
    })?;
    let rt = runtime()?;
    rt.block_on(async {
        let mut c = connect(&a.connection).await?;
        let size = bytes.len();
        let chunks: Vec<proto::ladder::UploadChunk> = bytes
            .chunks(CHUNK)
            .map(|data| proto::ladder::UploadChunk { data: data.to_vec() })
            .collect();
        let reply = c
            .submit(tokio_stream::iter(chunks))
            .await
            .map_err(said)?
            .into_inner();
        say(&format!(
            "uploaded {} ({size} bytes); the ladder keeps it as sha256 {}",
            a.path.display(),
            reply.source_sha256
        ))?;
        for b in &reply.bots {
            say(&describe(b))?;
        }
        say("a worker builds and checks each new version; `ladder author bots` shows how it went")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run(a: AuthorArgs) -> anyhow::Result<ExitCode> {
    let rt = runtime()?;
    rt.block_on(async {
        let mut c = connect(&a.connection).await?;
        let set = |name: String, status: BotStatus| proto::ladder::SetBotStatusRequest {
            name,
            status: status.into(),
            reason: String::new(),
        };
        match a.action {
            AuthorAction::Bots => {
                let bots = c
                    .my_bots(proto::ladder::MyBotsRequest {})
                    .await
                    .map_err(said)?
                    .into_inner()
                    .bots;
                if bots.is_empty() {
                    say("no bots yet: `ladder submit FOLDER` uploads one")?;
                }
                for b in &bots {
                    say(&describe(b))?;
                }
            }
            AuthorAction::Disable { name } => {
                let b = c
                    .set_my_bot_status(set(name, BotStatus::Disabled))
                    .await
                    .map_err(said)?;
                say(&describe(&b.into_inner()))?;
            }
            AuthorAction::Log { name } => {
                let r = c
                    .my_bot_log(proto::ladder::MyBotRequest { name })
                    .await
                    .map_err(said)?
                    .into_inner();
                print_bot_log(&r)?;
            }
            AuthorAction::Challenge { bot, opponent, games } => {
                let c = c
                    .challenge(proto::ladder::ChallengeRequest { bot, opponent, games })
                    .await
                    .map_err(said)?
                    .into_inner();
                say(&format!(
                    "{}: {} games of {} against {} asked for (ladder author challenges shows them)",
                    c.competition, c.games, c.bot, c.opponent
                ))?;
            }
            AuthorAction::Enter { version, competition } => {
                let r = c
                    .enter_season(proto::ladder::EnterSeasonRequest {
                        competition: competition.unwrap_or_default(),
                        bot: version,
                    })
                    .await
                    .map_err(said)?
                    .into_inner();
                say(&format!(
                    "{} is your entry in {} (entries are fixed at {})",
                    r.bot,
                    r.competition,
                    ladder::season::utc(r.deadline_ms)
                ))?;
            }
            AuthorAction::Challenges => {
                let all = c
                    .my_challenges(proto::ladder::MyChallengesRequest {})
                    .await
                    .map_err(said)?
                    .into_inner()
                    .challenges;
                print_challenges(&all)?;
            }
            AuthorAction::Game { id, json } => {
                let r = c
                    .game_logs(proto::ladder::GameLogsRequest { game_id: id })
                    .await
                    .map_err(said)?
                    .into_inner();
                print_game_logs(&r, json)?;
            }
            AuthorAction::Enable { name } => {
                let b = c
                    .set_my_bot_status(set(name, BotStatus::Active))
                    .await
                    .map_err(said)?;
                say(&describe(&b.into_inner()))?;
            }
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A version's upload, build log and check report, as `ladder author log` shows them.
fn print_bot_log(r: &proto::ladder::MyBotLogReply) -> anyhow::Result<()> {
    if let Some(b) = &r.bot {
        say(&describe(b))?;
    }
    say(&format!("upload: sha256 {}", r.source_sha256))?;
    say("--- build log ---")?;
    say(if r.build_log.is_empty() {
        "(no build)"
    } else {
        &r.build_log
    })?;
    say("--- check report ---")?;
    let failed_build = r
        .bot
        .as_ref()
        .is_some_and(|b| b.status == BotStatus::BuildFailed as i32);
    say(if r.check_report.is_empty() && failed_build {
        "(not checked: its build failed, as its log above says)"
    } else if r.check_report.is_empty() {
        "(not checked yet)"
    } else {
        &r.check_report
    })?;
    Ok(())
}

/// The author's challenges, a line each, with their games.
fn print_challenges(all: &[proto::ladder::ChallengeInfo]) -> anyhow::Result<()> {
    if all.is_empty() {
        say("no challenges yet (ladder author challenge BOT OPPONENT)")?;
    }
    for ch in all {
        let ids: Vec<String> = ch.game_ids.iter().map(i64::to_string).collect();
        say(&format!(
            "{}: {} v {}, {}/{} games{}{}{}{}",
            ch.competition,
            ch.bot,
            ch.opponent,
            ch.played,
            ch.games,
            if ids.is_empty() { "" } else { ": " },
            ids.join(" "),
            if ch.withdrawn.is_empty() { "" } else { "; " },
            ch.withdrawn
        ))?;
    }
    Ok(())
}

/// A game's logs: each seat's faults, info lines and stderr (or all as JSON).
fn print_game_logs(r: &proto::ladder::GameLogsReply, json: bool) -> anyhow::Result<()> {
    if json {
        let seats: Vec<serde_json::Value> = r
            .seats
            .iter()
            .map(|s| {
                serde_json::json!({
                    "seat": s.seat, "bot": s.bot, "stderr": s.stderr,
                    "stderr_dropped": s.stderr_dropped, "faults": s.faults,
                    "info": s.info.iter().map(|i| (i.move_index, &i.line)).collect::<Vec<_>>(),
                })
            })
            .collect();
        say(&serde_json::json!({ "game": r.game_id, "seats": seats }).to_string())?;
    } else {
        for s in &r.seats {
            say(&format!("--- seat {}: {} ---", s.seat, s.bot))?;
            for f in &s.faults {
                say(&format!("fault: {f}"))?;
            }
            for i in &s.info {
                // Numbered from 1, as the viewer numbers moves.
                say(&format!("move {}: info {}", i.move_index + 1, i.line))?;
            }
            if s.stderr_dropped > 0 {
                say(&format!("stderr (the first {} bytes cut):", s.stderr_dropped))?;
            } else {
                say("stderr:")?;
            }
            say(&s.stderr)?;
        }
    }
    Ok(())
}

/// One version, as its author reads it.
fn describe(b: &proto::ladder::BotInfo) -> String {
    let status = BotStatus::try_from(b.status)
        .ok()
        .map(|s| {
            s.as_str_name()
                .trim_start_matches("BOT_STATUS_")
                .to_lowercase()
                .replace('_', "-")
        })
        .unwrap_or_else(|| "unknown".into());
    let mut line = format!("{} ({}, v{}): {status}", b.name, b.game, b.version);
    if !b.status_reason.is_empty() {
        line.push_str(&format!(" — {}", b.status_reason));
    }
    if !b.artifact_sha256.is_empty() {
        line.push_str(&format!(" · runs sha256 {}", &b.artifact_sha256));
    }
    line
}
