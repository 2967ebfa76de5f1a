//! `ladder admin`: the host's calls to a running server.
use super::{Connection, Role, runtime, said, say};
use clap::{Args, Subcommand};
use ladder::worker::Client;
use proto::ladder::*;
use referee::cli::number_in;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct AdminArgs {
    #[command(flatten)]
    pub(crate) connection: Connection,
    #[command(subcommand)]
    pub(crate) action: AdminAction,
}

#[derive(Subcommand)]
pub(crate) enum AdminAction {
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
    Open(OpenArgs),
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
    /// Add an author, a stranger who uploads their own bots (`ladder submit`), and
    /// print their token (once: the server keeps only its hash). Their token
    /// opens their own calls and nothing else.
    AddAuthor {
        /// Unique name, shown beside their bots.
        name: String,
        /// How many bots (by name; versions do not count) they may have
        /// (default: the server's --max-bots-per-author).
        #[arg(long, value_parser = |s: &str| number_in(s, 1u32, 10_000))]
        max_bots: Option<u32>,
    },
    /// Change an author's terms: how many bots (by name; versions do not count)
    /// they may have. Bots beyond a lowered cap stay; the author makes new ones
    /// again once under it.
    SetAuthor {
        /// Their name.
        name: String,
        /// How many bots they may have.
        #[arg(long, value_parser = |s: &str| number_in(s, 1u32, 10_000))]
        max_bots: u32,
    },
    /// Revoke an author's token: their calls stop; their bots stay as they are
    /// (disable them to take them out of play).
    RevokeAuthor {
        /// Their name.
        name: String,
    },
    /// End the pages' sessions: every one there is (the host's and every
    /// author's), or with --author one author's only. Each must sign in again
    /// with their token. (A change of the admin token already ends every host
    /// session: restart `ladder serve` with the new one.)
    EndSessions {
        /// Only this author's sessions.
        #[arg(long, value_name = "NAME")]
        author: Option<String>,
    },
    /// Let go now of what the server's retention does not keep (`ladder serve
    /// --keep-logs-days`, `--keep-files-days`; the server also does it hourly):
    /// seats' private logs past their days, the files of versions that never
    /// played a game and are out of play for good, ended sessions. Games, their
    /// records and every file a game needs to be replayed are kept.
    Gc {
        /// Say what would go, and remove nothing.
        #[arg(long)]
        dry_run: bool,
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

/// `ladder admin open`'s arguments.
#[derive(Args)]
pub(crate) struct OpenArgs {
    /// Unique name.
    pub(crate) name: String,
    /// Game id.
    #[arg(long)]
    pub(crate) game: String,
    /// Game option key=value (repeatable).
    #[arg(long = "opt")]
    pub(crate) opts: Vec<String>,
    /// Seats per game (default: the game's own number, as `referee` plays it: 4 for
    /// Cuatto). A competition schedules games once it has that many active bots.
    #[arg(long, default_value_t = 0, value_parser = |s: &str| number_in(s, 0u32, 64))]
    pub(crate) seats: u32,
    /// Games in all (0: keep playing).
    #[arg(long, default_value_t = 0)]
    pub(crate) max_games: u64,
    /// The competition's seed, for a reproducible run: every group's dice
    /// derive from it, so anyone who knows it knows them. Without it the server
    /// draws 64 bits from its random source (recommended).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Milliseconds per move.
    #[arg(long, default_value_t = 5000, value_parser = |s: &str| number_in(s, 1u64, referee::clock::MAX_MOVE_MS))]
    pub(crate) movetime: u64,
    /// Deal every game of a group its own seed instead of mirroring the
    /// group's dice: for bots that cannot be held apart across a group's games
    /// (groups with a gRPC bot are dealt so anyway). About twice the games for
    /// the same precision in luck-heavy games: see docs/ladder.md.
    #[arg(long)]
    pub(crate) independent_seeds: bool,
    /// Make it a season: submissions close at this UTC time
    /// (2026-12-01T12:00:00Z, "2026-12-01 12:00" or 2026-12-01). Each author's
    /// entry is then fixed (the version they chose with `ladder author enter`,
    /// else their newest active one), the ladder stops, and finals among the
    /// top entries follow, their seeds committed to on the page before the
    /// first game and revealed at the close (see docs/hosting.md, "Running a
    /// season").
    #[arg(long, value_name = "UTC", value_parser = |s: &str| ladder::season::parse_utc(s))]
    pub(crate) deadline: Option<i64>,
    /// Finalists: the top N entries by the ladder's standings at the deadline.
    #[arg(long, default_value_t = 4, requires = "deadline", value_parser = |s: &str| number_in(s, 2u32, ladder::season::MAX_FINALISTS))]
    pub(crate) finals_top: u32,
    /// Groups each set of finalists plays per round (a group is one game per
    /// seat rotation, the dice mirrored across them).
    #[arg(long, default_value_t = 10, requires = "deadline", value_parser = |s: &str| number_in(s, 1u32, 100_000))]
    pub(crate) finals_groups: u32,
    /// Play further rounds until the top three's 95% intervals are apart (or
    /// --finals-max-games would be passed).
    #[arg(long, requires = "deadline")]
    pub(crate) finals_until_separated: bool,
    /// Most finals games in all, with --finals-until-separated (0: no cap).
    #[arg(long, default_value_t = 0, requires = "deadline")]
    pub(crate) finals_max_games: u64,
}

pub(crate) fn run(a: AdminArgs) -> anyhow::Result<ExitCode> {
    let rt = runtime()?;
    // The address authors reach, as this command reached it (said to them on add-author).
    let server = a.connection.server.clone();
    rt.block_on(async {
        let mut c = a.connection.connect(Role::Admin).await?;
        act(&mut c, a.action, &server).await
    })?;
    Ok(ExitCode::SUCCESS)
}

/// One action: its call to the server, and what it prints.
async fn act(c: &mut Client, action: AdminAction, server: &str) -> anyhow::Result<()> {
    match action {
        AdminAction::RegisterBot {
            name,
            game,
            spec,
            env,
        } => {
            let env = env_vars(&env)?;
            let ask = RegisterBotRequest {
                name,
                game,
                spec,
                env,
            };
            let b = c.register_bot(ask).await.map_err(said)?.into_inner();
            Ok(say(&describe_bot(&b))?)
        }
        AdminAction::Update { name, spec, env } => {
            let env = env_vars(&env)?;
            let ask = RegisterBotRequest {
                name,
                game: String::new(),
                spec,
                env,
            };
            let b = c.update_bot(ask).await.map_err(said)?.into_inner();
            Ok(say(&describe_bot(&b))?)
        }
        AdminAction::Bots => {
            let bots = c
                .list_bots(ListBotsRequest {})
                .await
                .map_err(said)?
                .into_inner()
                .bots;
            Ok(bots.iter().try_for_each(|b| say(&describe_bot(b)))?)
        }
        AdminAction::Disable { name, reason } => set_bot_status(c, name, BotStatus::Disabled, reason).await,
        AdminAction::Enable { name } => set_bot_status(c, name, BotStatus::Active, String::new()).await,
        AdminAction::Remove { name, reason } => set_bot_status(c, name, BotStatus::Removed, reason).await,
        AdminAction::Open(o) => open(c, o).await,
        AdminAction::Close { name } => {
            let ask = CloseCompetitionRequest { name };
            let i = c.close_competition(ask).await.map_err(said)?.into_inner();
            Ok(say(&describe_competition(&i))?)
        }
        AdminAction::List => {
            let ask = ListCompetitionsRequest {};
            let list = c.list_competitions(ask).await.map_err(said)?.into_inner();
            Ok(list
                .competitions
                .iter()
                .try_for_each(|i| say(&describe_competition(i)))?)
        }
        AdminAction::Standings { name } => standings(c, name).await,
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
            keep_stdout_private()?;
            Ok(say(&w.token)?)
        }
        AdminAction::AddAuthor { name, max_bots } => {
            let ask = AddAuthorRequest {
                name,
                max_bots: max_bots.unwrap_or(0),
            };
            let a = c.add_author(ask).await.map_err(said)?.into_inner();
            eprintln!(
                "author {} (up to {} bots): their token is below, shown once. Give it to them \
                 privately; they upload with `ladder submit --server {server} --token-file FILE FOLDER`.",
                a.name, a.max_bots
            );
            keep_stdout_private()?;
            Ok(say(&a.token)?)
        }
        AdminAction::SetAuthor { name, max_bots } => {
            let a = c
                .set_author(SetAuthorRequest { name, max_bots })
                .await
                .map_err(said)?
                .into_inner();
            Ok(say(&format!(
                "author {} may have up to {} bots",
                a.name, a.max_bots
            ))?)
        }
        AdminAction::RevokeAuthor { name } => {
            let a = c
                .revoke_author(AuthorRequest { name })
                .await
                .map_err(said)?
                .into_inner();
            Ok(say(&format!(
                "author {} revoked (their bots stay as they are)",
                a.name
            ))?)
        }
        AdminAction::EndSessions { author } => {
            let ask = EndSessionsRequest {
                author: author.clone().unwrap_or_default(),
            };
            let ended = c.end_sessions(ask).await.map_err(said)?.into_inner().ended;
            Ok(say(&match author {
                Some(name) => format!("{ended} sessions of {name} ended"),
                None => format!("{ended} sessions ended (every one there was)"),
            })?)
        }
        AdminAction::Gc { dry_run } => gc(c, dry_run).await,
        AdminAction::RevokeWorker { name } => {
            let w = c
                .revoke_worker(WorkerRequest { name })
                .await
                .map_err(said)?
                .into_inner();
            Ok(say(&format!(
                "worker {} revoked ({} groups, {} games reported stay)",
                w.name, w.groups, w.games
            ))?)
        }
        AdminAction::Workers => workers(c).await,
        AdminAction::VoidWorker { name } => {
            let v = c
                .void_worker(WorkerRequest { name })
                .await
                .map_err(said)?
                .into_inner();
            Ok(say(&format!(
                "worker {} revoked; {} games of {} groups removed, to be played again",
                v.name, v.games, v.groups
            ))?)
        }
    }
}

/// `ladder admin open`.
async fn open(c: &mut Client, o: OpenArgs) -> anyhow::Result<()> {
    let season = o.deadline.is_some();
    let ask = OpenCompetitionRequest {
        name: o.name,
        game: o.game,
        options: o.opts,
        seats: o.seats,
        seed: o.seed,
        max_games: o.max_games,
        movetime_ms: o.movetime,
        tc: String::new(),
        independent_seeds: o.independent_seeds,
        deadline_ms: o.deadline,
        finals_top: if season { o.finals_top } else { 0 },
        finals_groups: if season { o.finals_groups } else { 0 },
        finals_until_separated: o.finals_until_separated,
        finals_max_games: o.finals_max_games,
    };
    let i = c.open_competition(ask).await.map_err(said)?.into_inner();
    Ok(say(&describe_competition(&i))?)
}

/// `ladder admin standings`: a table, with a bound for a separated bot.
async fn standings(c: &mut Client, name: String) -> anyhow::Result<()> {
    let ask = StandingsRequest { competition: name };
    let s = c.standings(ask).await.map_err(said)?.into_inner();
    say(&format!(
        "{:>4}  {:<24} {:>7} {:>6} {:>7} {:>7}",
        "rank", "bot", "Elo", "±95%", "games", "score"
    ))?;
    for r in s.rows {
        // The cells every table of standings uses: a bound for a separated bot.
        let separated = match r.separated() {
            Separation::None => None,
            Separation::NeverLost => Some(rating::separation::Separation::NeverLost),
            Separation::NeverWon => Some(rating::separation::Separation::NeverWon),
        };
        let (elo, ci) = rating::standings::elo_cells(r.elo, r.ci95, separated);
        say(&format!(
            "{:>4}  {:<24} {:>7} {:>6} {:>7} {:>6.1}%",
            r.rank, r.bot, elo, ci, r.games, r.score
        ))?;
    }
    Ok(say(&format!("{} games; {}", s.games, s.anchor))?)
}

/// `ladder admin gc`: what retention freed (or would).
async fn gc(c: &mut Client, dry_run: bool) -> anyhow::Result<()> {
    let ask = CollectGarbageRequest { dry_run };
    let r = c.collect_garbage(ask).await.map_err(said)?.into_inner();
    let kept = |days: u32| match days {
        0 => "kept for ever".to_owned(),
        d => format!("kept {d} days"),
    };
    let verb = if dry_run { "would free" } else { "freed" };
    Ok(say(&format!(
        "{verb}: {} private logs ({} bytes; {}), the files of {} versions ({} files, {} bytes; {}), {} ended sessions",
        r.logs,
        r.log_bytes,
        kept(r.keep_logs_days),
        r.versions,
        r.files.len(),
        r.file_bytes,
        kept(r.keep_files_days),
        r.sessions
    ))?)
}

/// `ladder admin workers`: a table, a worker a line, and a line more for a flag.
async fn workers(c: &mut Client) -> anyhow::Result<()> {
    let list = c
        .list_workers(ListWorkersRequest {})
        .await
        .map_err(said)?
        .into_inner();
    say(&format!(
        "{:<20} {:>8} {:>7} {:>8} {:>16}  faulted games (rate, others' rate, z)",
        "worker", "status", "groups", "games", "leases lapsed"
    ))?;
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
        say(&format!(
            "{:<20} {:>8} {:>7} {:>8} {:>16}  {}",
            w.name,
            if w.revoked { "revoked" } else { "active" },
            w.groups,
            w.games,
            format!("{}/{}", w.leases_expired, w.groups_leased),
            if faults.is_empty() {
                "-".into()
            } else {
                faults.join("; ")
            }
        ))?;
        if !w.flag.is_empty() {
            say(&format!("{:<20} FLAGGED: {}", "", w.flag))?;
        }
    }
    Ok(())
}

/// A competition in a line; an open one short of bots schedules nothing, which
/// it says.
fn describe_competition(i: &CompetitionInfo) -> String {
    let short = i.status == CompetitionStatus::Open as i32 && i.active_bots < i.seats;
    let waits = if short {
        format!(" · needs {} active bots, has {}", i.seats, i.active_bots)
    } else {
        String::new()
    };
    format!(
        "{}: {} {} · {} seats · {} · {} games{} · bots: {}{waits}",
        i.name,
        i.game,
        i.options.join(" "),
        i.seats,
        enum_word(
            CompetitionStatus::try_from(i.status)
                .ok()
                .map(|s| s.as_str_name())
        ),
        i.games,
        if i.max_games > 0 {
            format!(" of {}", i.max_games)
        } else {
            String::new()
        },
        i.bots.join(", ")
    ) + &season_words(i)
}

fn env_vars(pairs: &[String]) -> anyhow::Result<Vec<EnvVar>> {
    pairs
        .iter()
        .map(|kv| {
            referee::sandbox::parse_env_pair(kv)
                .map(|(key, value)| EnvVar { key, value })
                .map_err(|e| anyhow::anyhow!("--env: {e}"))
        })
        .collect()
}

/// `ladder admin disable|enable|remove`: sets the status and prints the bot.
async fn set_bot_status(
    c: &mut Client,
    name: String,
    status: BotStatus,
    reason: String,
) -> anyhow::Result<()> {
    let b = c
        .set_bot_status(SetBotStatusRequest {
            name,
            status: status.into(),
            reason,
        })
        .await
        .map_err(said)?
        .into_inner();
    say(&describe_bot(&b))?;
    Ok(())
}

/// A season's phase and deadline (and its finals' commitment); empty for any
/// other competition.
fn season_words(i: &CompetitionInfo) -> String {
    let mut out = String::new();
    if !i.phase.is_empty() {
        out.push_str(&format!(
            " · season, {} (deadline {})",
            i.phase,
            ladder::season::utc(i.deadline_ms)
        ));
        if !i.commitment.is_empty() {
            out.push_str(&format!(" · finals commitment {}", i.commitment));
        }
    }
    out
}

/// A proto enum value as a word: `BOT_STATUS_ACTIVE` is "active".
fn enum_word(name: Option<&str>) -> String {
    let Some(name) = name else { return "unknown".into() };
    let word = ["BOT_STATUS_", "COMPETITION_STATUS_"]
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .unwrap_or(name);
    word.to_lowercase()
}

fn describe_bot(b: &BotInfo) -> String {
    let mut line = format!(
        "{} ({}, v{}): {} · {}",
        b.name,
        b.game,
        b.version,
        b.spec,
        enum_word(BotStatus::try_from(b.status).ok().map(|s| s.as_str_name()))
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
    if !b.author.is_empty() {
        line.push_str(&format!(" · by {}", b.author));
    }
    if !b.artifact_sha256.is_empty() {
        // The first 12 hex digits name the files as well as a person reads them.
        line.push_str(&format!(
            " · files {}",
            &b.artifact_sha256[..b.artifact_sha256.len().min(12)]
        ));
    }
    line
}

/// Where the token goes to a file (`add-worker w1 > w1.token`), makes that file
/// readable by its owner only, before the token is in it: a shell creates it with
/// the umask's mode, often world-readable, and a bot that is shown the folder
/// must not read it.
fn keep_stdout_private() -> anyhow::Result<()> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;
    let out = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    if out.metadata()?.is_file() {
        out.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| anyhow::anyhow!("cannot make the token's file private (chmod 600): {e}"))?;
    }
    Ok(())
}
