//! `ladder serve`: the gRPC API and the web pages.
use super::{read_secret, runtime, shutdown_signal};
use anyhow::Context;
use clap::Args;
use ladder::store::Store;
use referee::cli::number_in;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Read flags from a TOML file: each key a flag's long name, each value
    /// its value (`lease-seconds = 300`, `runtimes = ["python3", "node"]`). A
    /// flag given on the command line wins over the file. deploy/ladder.toml
    /// lists every key with its default.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Store: sqlite:FILE (or a file path) or postgres://user@host/db.
    #[arg(long)]
    pub(crate) db: String,
    /// gRPC address.
    #[arg(long, default_value = "127.0.0.1:50060")]
    pub(crate) listen: String,
    /// Web page address (standings and recent games, and their JSON); none if absent.
    /// It also answers `/healthz` (the process is up) and `/readyz` (the database
    /// answers, its schema is current, the server is not stopping).
    #[arg(long)]
    pub(crate) http: Option<String>,
    /// Address for your monitoring: `/metrics` in Prometheus' text format, and
    /// `/healthz` and `/readyz` (docs/hosting.md, "Operating"); none if absent.
    /// Keep it off the public network.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
    /// Days each seat's private log (its stderr, info lines and faults, for its
    /// author) is kept after its game; 0 keeps them for ever. Games and their
    /// public records are always kept.
    #[arg(long, default_value_t = ladder::app::KEEP_DAYS, value_name = "DAYS",
          value_parser = |s: &str| number_in(s, 0u32, 36_500))]
    pub(crate) keep_logs_days: u32,
    /// Days the files (upload and built folder) of a version that never played a
    /// game and is out of play for good (superseded, removed, failed its build
    /// or check) are kept after its upload; 0 keeps them for ever. A version that
    /// played keeps its files for as long as the ladder lasts, so that its games
    /// can be played again. Ended sessions of the pages go at once.
    #[arg(long, default_value_t = ladder::app::KEEP_DAYS, value_name = "DAYS",
          value_parser = |s: &str| number_in(s, 0u32, 36_500))]
    pub(crate) keep_files_days: u32,
    /// File holding the admin token (else $ASTRAGAL_ADMIN_TOKEN): its first line, at
    /// least 16 characters (e.g. `openssl rand -hex 32`); never on the command
    /// line, where any process can read it. Workers get their own tokens:
    /// `ladder admin add-worker NAME`.
    #[arg(long, value_name = "FILE")]
    pub(crate) admin_token_file: Option<PathBuf>,
    /// Seconds a lease lasts unless renewed: a worker renews its leases while it
    /// plays them, so this is how soon a worker that died loses its groups (each
    /// goes to another worker with a new seed). A competition whose time control
    /// allows longer decisions gets three of its longest decisions instead.
    #[arg(long, default_value_t = ladder::app::LEASE.as_secs_f64(),
          value_parser = |s: &str| number_in(s, 1.0, 86_400.0))]
    pub(crate) lease_seconds: f64,
    /// Serve gRPC over TLS with this certificate (PEM; with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Suspend a bot after this many reported games in a row in which it could not
    /// start or shake hands (a mistyped command, a missing file), so that it stops
    /// taking the schedule; `ladder admin enable NAME` resumes it. 0: never.
    #[arg(long, default_value_t = ladder::app::SUSPEND_AFTER)]
    pub(crate) suspend_after: u32,
    /// Most groups one worker may hold unreported at once; its further leases get
    /// nothing until it reports, so a worker that loops on leases cannot take the
    /// competition from the others. Raise it for workers with many cores.
    #[arg(long, default_value_t = ladder::app::HELD_PER_WORKER,
          value_parser = |s: &str| referee::cli::number_in(s, 1u32, 1_000_000))]
    pub(crate) held_per_worker: u32,
    /// The slowest an upload (an author's, or a worker's built folder) may
    /// arrive, in KiB/s on average since it began: one more than 10 s behind it
    /// is cut, saying so, so that a trickle holds nobody's turn for long.
    #[arg(long, default_value_t = 16, value_name = "KIB",
          value_parser = |s: &str| number_in(s, 1u64, 1_048_576))]
    pub(crate) upload_min_kib_per_s: u64,
    /// Largest upload an author may send, packed, in MiB.
    #[arg(long, default_value_t = 64, value_name = "MIB",
          value_parser = |s: &str| number_in(s, 1u64, 4096))]
    pub(crate) upload_max_mib: u64,
    /// Largest an upload may unpack to, its files' contents added up, in MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB",
          value_parser = |s: &str| number_in(s, 1u64, 65_536))]
    pub(crate) upload_max_unpacked_mib: u64,
    /// Most entries (files, folders, links) an upload may hold.
    #[arg(long, default_value_t = 10_000, value_name = "N",
          value_parser = |s: &str| number_in(s, 1u64, 10_000_000))]
    pub(crate) upload_max_entries: u64,
    /// The runtimes your workers offer, comma-separated: an upload whose
    /// astragal.toml names another is refused. Known: native, python3,
    /// python3-engine, node, java, cc, cargo, remote (docs/hosting.md says what
    /// each gives).
    #[arg(long, value_delimiter = ',', default_values_t = ladder::submission::all_runtimes(),
          value_parser = known_runtime)]
    pub(crate) runtimes: Vec<String>,
    /// Bots (by name; their versions do not count) an author may have, unless
    /// `ladder admin add-author --max-bots` (or later `set-author`) gives them another cap. An upload
    /// makes one bot per game it lists: the default lets a starter kit (all five
    /// games) go up whole.
    #[arg(long, default_value_t = 5, value_parser = |s: &str| number_in(s, 1u32, 10_000))]
    pub(crate) max_bots_per_author: u32,
    /// Keep bots' files in an object store instead of the database: a
    /// directory, or a URL (`s3://bucket/prefix`, configured by the usual
    /// AWS_* variables; AWS_ENDPOINT for another S3-compatible service). The
    /// database keeps their names and sizes. See docs/hosting.md.
    #[arg(long, value_name = "DIR|URL")]
    pub(crate) artifacts: Option<String>,
    /// How many bytes of the end of each bot's stderr a game keeps for the bot's
    /// author (and you), apart from its public record, with the bot's `info`
    /// lines and its faults in full. 0 keeps no stderr.
    #[arg(long, default_value_t = ladder::app::AUTHOR_LOG_BYTES / 1024, value_name = "KIB",
          value_parser = |s: &str| number_in(s, 0u32, 1024))]
    pub(crate) author_log_kib: u32,
    /// Challenge games (an author's unrated games against a bot they name) one
    /// author may ask for in any 24 hours; 0 turns challenges off.
    #[arg(long, default_value_t = ladder::app::CHALLENGE_GAMES_PER_DAY,
          value_parser = |s: &str| number_in(s, 0u32, 1_000_000))]
    pub(crate) challenge_games_per_day: u32,
    /// The share of the groups leased to workers, in percent, that may be
    /// challenge groups leased ahead of the ladder's groups already waiting: a
    /// challenge starts soon even on a ladder with hundreds of groups
    /// scheduled, and the ladder keeps the rest (0: challenges wait their turn).
    #[arg(long, default_value_t = ladder::app::CHALLENGE_SHARE, value_name = "PERCENT",
          value_parser = |s: &str| number_in(s, 0u32, 100))]
    pub(crate) challenge_share: u32,
    /// New versions one author may upload in any 24 hours (an upload that plays
    /// several games makes a version of each). Past it an upload is refused,
    /// saying how many more are taken now; uploads sent at once cannot pass it.
    #[arg(long, default_value_t = ladder::app::VERSIONS_PER_DAY, value_name = "N",
          value_parser = |s: &str| number_in(s, 1u32, 1_000_000))]
    pub(crate) max_versions_per_day: u32,
    /// The wall time an author's build may take on a worker before it is killed,
    /// its whole tree, and its version ends `build-failed`. A build runs on a
    /// task of the worker's own, capped at the worker's `--bot-cores`, so a long
    /// one holds back no game.
    #[arg(long, default_value_t = ladder::app::UploadConfig::default().build_seconds, value_name = "SECONDS",
          value_parser = |s: &str| number_in(s, 5u32, 86_400))]
    pub(crate) build_seconds: u32,
    /// MiB of files the store keeps for one author: every version's upload and
    /// built folder, each file once, for as long as the ladder lasts (so that any
    /// game can be played again with the bot that played it). Past it an upload
    /// is refused; raise it for an author who needs room.
    #[arg(long, default_value_t = ladder::app::AUTHOR_BYTES >> 20, value_name = "MIB",
          value_parser = |s: &str| number_in(s, 1u64, 1 << 30))]
    pub(crate) max_author_mib: u64,
}

/// The command line with `ladder serve --config FILE`'s keys written in as
/// flags, ahead of the command line's own so that those win (the command is
/// parsed with `args_override_self`); any other command line as it is. Each
/// value goes through the flag's own parser, so the file is checked as the
/// command line is.
pub(crate) fn with_config(args: Vec<OsString>) -> anyhow::Result<Vec<OsString>> {
    if args.get(1).is_none_or(|a| a != "serve") {
        return Ok(args);
    }
    let mut path = None;
    for (i, arg) in args.iter().enumerate().skip(2) {
        if arg == "--" {
            break;
        }
        if arg == "--config" {
            path = args.get(i + 1).map(PathBuf::from);
        } else if let Some(p) = arg.to_str().and_then(|a| a.strip_prefix("--config=")) {
            path = Some(PathBuf::from(p));
        }
    }
    // No file named (or `--config` without one: clap says so).
    let Some(path) = path else {
        return Ok(args);
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("cannot read --config {}", path.display()))?;
    let flags = config_flags(&text).with_context(|| format!("in --config {}", path.display()))?;
    let mut out = args[..2].to_vec();
    out.extend(flags.into_iter().map(OsString::from));
    out.extend(args[2..].iter().cloned());
    Ok(out)
}

/// The flags a config file's text gives, `--KEY=VALUE` each.
fn config_flags(text: &str) -> anyhow::Result<Vec<String>> {
    let table: toml::Table = toml::from_str(text).context("not TOML")?;
    let known: Vec<String> = ServeArgs::augment_args(clap::Command::new("serve"))
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_owned))
        .filter(|long| long != "config")
        .collect();
    let mut flags = Vec::with_capacity(table.len());
    for (key, value) in &table {
        let flag = key.replace('_', "-");
        if !known.contains(&flag) {
            anyhow::bail!(
                "unknown key {key:?}: the keys are `ladder serve`'s flags without their dashes ({})",
                known.join(", ")
            );
        }
        let scalar = |v: &toml::Value| -> anyhow::Result<String> {
            Ok(match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(x) => x.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => anyhow::bail!("{key}: a {} is not a flag's value", other.type_str()),
            })
        };
        let text = match value {
            toml::Value::Array(items) => items
                .iter()
                .map(scalar)
                .collect::<anyhow::Result<Vec<_>>>()?
                .join(","),
            one => scalar(one)?,
        };
        flags.push(format!("--{flag}={text}"));
    }
    Ok(flags)
}

/// `n` days, or `None` (for ever) for 0.
fn days(n: u32) -> Option<std::time::Duration> {
    (n > 0).then(|| std::time::Duration::from_secs(u64::from(n) * 86_400))
}

fn known_runtime(name: &str) -> Result<String, String> {
    let known = ladder::submission::all_runtimes();
    if known.iter().any(|k| k == name) {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "unknown runtime {name:?}; the ladder knows {}",
            known.join(", ")
        ))
    }
}

pub(crate) fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    if let Some(config) = &a.config {
        eprintln!("ladder: flags from {} and the command line", config.display());
    }
    let admin_token = read_secret(
        a.admin_token_file.as_deref(),
        "ASTRAGAL_ADMIN_TOKEN",
        "admin token",
    )?;
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => Some(ladder::serve::Tls::from_pem(
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
        let ops = match &a.metrics {
            Some(addr) => {
                let l = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}"))?;
                eprintln!("ladder: metrics on http://{}/metrics", l.local_addr()?);
                Some(l)
            }
            None => None,
        };
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
        let cfg = ladder::app::ServiceConfig {
            retention: ladder::app::RetentionConfig {
                logs: days(a.keep_logs_days),
                files: days(a.keep_files_days),
                ..Default::default()
            },
            admin_token,
            lease: std::time::Duration::from_secs_f64(a.lease_seconds),
            suspend_after: a.suspend_after,
            held_per_worker: a.held_per_worker,
            uploads: ladder::app::UploadConfig {
                limits: ladder::submission::ArchiveLimits {
                    packed_bytes: a.upload_max_mib << 20,
                    unpacked_bytes: a.upload_max_unpacked_mib << 20,
                    entries: a.upload_max_entries,
                },
                runtimes: a.runtimes,
                max_bots: a.max_bots_per_author,
                objects: match &a.artifacts {
                    Some(place) => Some(std::sync::Arc::new(ladder::app::objects::ObjectArtifacts::open(
                        place,
                    )?)),
                    None => None,
                },
                author_log_bytes: a.author_log_kib * 1024,
                build_seconds: a.build_seconds,
                challenge_games_per_day: a.challenge_games_per_day,
                challenge_share: a.challenge_share,
                versions_per_day: a.max_versions_per_day,
                author_bytes: a.max_author_mib << 20,
                floor: ladder::app::UploadFloor {
                    bytes_per_s: a.upload_min_kib_per_s * 1024,
                    ..ladder::app::UploadFloor::default()
                },
                ..ladder::app::UploadConfig::default()
            },
        };
        let listeners = ladder::serve::Listeners {
            grpc,
            http,
            ops,
            transport: ladder::serve::Transport {
                tls,
                ..Default::default()
            },
        };
        ladder::serve::serve(listeners, store, cfg, shutdown_signal()).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
