//! The `ladder` commands, one file each, and what several of them share.

pub mod admin;
pub mod author;
pub mod backup;
pub mod bench;
pub mod ratings;
pub mod serve;
pub mod sprt;
pub mod tournament;
pub mod verify;
pub mod worker;

use anyhow::{Context, bail};
use clap::Args;
use referee::cli::number_in;
use referee::sandbox::{Level, Sandbox, SandboxArgs};
use referee::spec::BotSpec;
use std::path::PathBuf;

/// A refusal from the server, said as a sentence (tonic's own form is a debug
/// dump of code, metadata and details).
pub(crate) fn said(s: tonic::Status) -> anyhow::Error {
    use tonic::Code;
    let m = s.message();
    match s.code() {
        Code::Unauthenticated => anyhow::anyhow!("the server refused the token: {m}"),
        // The token is good; what it asked for is not its caller's.
        Code::PermissionDenied => anyhow::anyhow!("refused: {m}"),
        Code::Unavailable => anyhow::anyhow!("the server cannot be reached or is stopping: {m}"),
        Code::DeadlineExceeded => anyhow::anyhow!("the server did not answer in time: {m}"),
        _ => anyhow::anyhow!("{m}"),
    }
}

/// Where a ladder server is and who calls it: the flags `admin`, `submit`,
/// `author` and `worker` share, declared once.
#[derive(Args)]
pub(crate) struct Connection {
    /// The ladder's gRPC URL, as its host gave it (https:// for TLS).
    #[arg(long, default_value = "http://127.0.0.1:50060")]
    pub(crate) server: String,
    /// File holding your token, its first line: the admin token for `admin`
    /// (else $ASTRAGAL_ADMIN_TOKEN), an author's for `submit` and `author`
    /// (else $ASTRAGAL_AUTHOR_TOKEN; `ladder admin add-author` makes one), a
    /// worker's for `worker` (else $ASTRAGAL_WORKER_TOKEN; `ladder admin
    /// add-worker`). Never on the command line, which any process can read.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,
    /// The authority that signed an https:// server's certificate (PEM), if not a
    /// public one.
    #[arg(long, value_name = "FILE")]
    pub(crate) ca_cert: Option<PathBuf>,
}

/// Whose token a command sends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Role {
    Admin,
    Author,
    Worker,
}

impl Role {
    fn env(self) -> &'static str {
        match self {
            Role::Admin => "ASTRAGAL_ADMIN_TOKEN",
            Role::Author => "ASTRAGAL_AUTHOR_TOKEN",
            Role::Worker => "ASTRAGAL_WORKER_TOKEN",
        }
    }

    fn token(self) -> &'static str {
        match self {
            Role::Admin => "admin token",
            Role::Author => "author token",
            Role::Worker => "worker token",
        }
    }
}

impl Connection {
    /// The token `role` calls with, from `--token-file` or its variable.
    pub(crate) fn token(&self, role: Role) -> anyhow::Result<String> {
        read_secret(self.token_file.as_deref(), role.env(), role.token())
    }

    /// The `--ca-cert` authority's PEM, if one was given.
    pub(crate) fn ca_pem(&self) -> anyhow::Result<Option<Vec<u8>>> {
        read_pem(self.ca_cert.as_deref())
    }

    /// A client of the server, calling as `role`.
    pub(crate) async fn connect(&self, role: Role) -> anyhow::Result<ladder::worker::Client> {
        let token = self.token(role)?;
        let ca = self.ca_pem()?;
        Ok(ladder::worker::connect(&self.server, &token, ca.as_deref()).await?)
    }
}

/// A secret from a file (its first line) or else an environment variable; never
/// from the command line, which any process on the machine can read.
pub(crate) fn read_secret(file: Option<&std::path::Path>, env: &str, what: &str) -> anyhow::Result<String> {
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

pub(crate) fn read_pem(path: Option<&std::path::Path>) -> anyhow::Result<Option<Vec<u8>>> {
    path.map(|p| std::fs::read(p).with_context(|| format!("cannot read {}", p.display())))
        .transpose()
}

#[derive(Args)]
pub(crate) struct GameArgs {
    /// Game id (see `referee games`).
    #[arg(long)]
    pub(crate) game: String,
    /// Game option key=value (repeatable), e.g. --opt rules=finkel.
    #[arg(long = "opt")]
    pub(crate) opts: Vec<String>,
    /// Fixed time per move in milliseconds.
    #[arg(long, default_value_t = 5000, conflicts_with = "tc", value_parser = |s: &str| number_in(s, 1u64, referee::clock::MAX_MOVE_MS))]
    pub(crate) movetime: u64,
    /// Clock per seat instead, base+increment in seconds (e.g. 10+0.1).
    #[arg(long, value_parser = referee::TimeControl::parse_clock)]
    pub(crate) tc: Option<referee::TimeControl>,
    /// Games played at the same time.
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 1024))]
    pub(crate) concurrency: usize,
    /// The run's seed, to play it again: group g plays a seed derived from it
    /// (recorded in each game). Without it, 64 random bits from the operating
    /// system, printed at the start.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Write each bot's stderr (capped) to files in this directory.
    #[arg(long)]
    pub(crate) log_dir: Option<PathBuf>,
    /// Start every bot process anew for each game. By default a process that ends
    /// a game without a fault plays the next game on its thread too (told
    /// `newgame`, checked with `isready`): much faster with quick bots, but a bot
    /// that keeps state between games carries it over.
    #[arg(long)]
    pub(crate) fresh_bots: bool,
    /// The bot processes are your own programs: play their groups mirrored (the
    /// same dice with the seats rotated) even at `--sandbox isolated`. Without
    /// it, isolated bots' groups deal every game its own seed, since on one
    /// machine a process can leave word for the next rotation in state the
    /// kernel keeps (its page cache); at `--sandbox none` bots are your own
    /// anyway. See docs/security.md, "Mirrored groups".
    #[arg(long)]
    pub(crate) trusted_bots: bool,
    #[command(flatten)]
    pub(crate) sandbox: SandboxArgs,
}

impl GameArgs {
    /// The sandbox the flags ask for (`none` by default: the host's own bots),
    /// checked here, with the logs and a SQLite store kept from isolated bots.
    pub(crate) fn sandbox(&self, db: Option<&str>) -> anyhow::Result<Sandbox> {
        let mut sandbox = self.sandbox.sandbox(Level::None).map_err(anyhow::Error::msg)?;
        sandbox.check()?;
        if let Ok(info) = engine::game_info(&self.game) {
            let acting = if info.nature.simultaneous {
                info.default_seats
            } else {
                1
            };
            if let Some(w) =
                referee::sandbox::concurrency_warning(self.concurrency, acting, sandbox.cpu_millicores)
            {
                tracing::warn!("{w}");
            }
        }
        if let Some(dir) = &self.log_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
        }
        let db_files = db.map(ladder::store::sqlite_files).unwrap_or_default();
        sandbox.hide(self.log_dir.iter().cloned().chain(db_files));
        Ok(sandbox)
    }

    pub(crate) fn time(&self) -> referee::TimeControl {
        match self.tc {
            Some(tc) => tc,
            // In range: the argument's parser checked it.
            None => referee::TimeControl::MoveTime(std::time::Duration::from_millis(self.movetime)),
        }
    }
}

/// Names every entrant (`NAME=SPEC` or `SPEC`); a tournament seats no person.
pub(crate) fn name_bots(texts: &[String]) -> anyhow::Result<Vec<(String, BotSpec)>> {
    let named = referee::spec::name_entrants(texts).map_err(anyhow::Error::msg)?;
    if named.iter().any(|(_, spec)| matches!(spec, BotSpec::Human)) {
        bail!("a tournament cannot seat `human`; use `referee play` to play a bot yourself");
    }
    Ok(named)
}

pub(crate) fn anchor_of(text: &Option<String>) -> anyhow::Result<Option<(String, f64)>> {
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

/// The runtime of every async command: a worker thread per core (tokio's
/// default), so a server on a bigger machine uses it.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

pub(crate) async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}

/// Prints `text` on stdout, each line with its control characters made visible:
/// a bot's name, a reason a bot caused or a record's text may hold terminal
/// escapes, and none reaches the host's terminal. A closed pipe (`| head`) is an
/// error that `main` turns into a quiet exit.
pub(crate) fn say(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    for line in text.lines() {
        writeln!(out, "{}", referee::text::escaped(line))?;
    }
    out.flush()
}
