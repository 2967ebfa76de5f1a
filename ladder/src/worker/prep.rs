//! A worker's build and check of an uploaded version: its upload fetched and
//! checked against its hash, built (if it has a build command) in a writable
//! copy, contained, with no network and a time limit; the built folder sent to
//! the server (which checks it as an upload); then the folder it plays, read-only,
//! put through `check-bot` (the protocol's checks and games against random).

use super::artifacts::{ArtifactCache, fetch};
use super::holdings::{HeldPrep, Holdings};
use super::{Api, CallError, WorkerConfig, WorkerError};
use crate::app::{PrepLeased, PrepReport, PrepVerdict};
use crate::submission::{ArchiveLimits, Tree, archive::sha256_hex, pack_folder};
use referee::clock::Limits;
use referee::game::SeatSetup;
use referee::sandbox::Home;
use referee::spec::BotSpec;
use std::sync::Arc;
use std::time::Duration;

/// The most of a build's output kept for its author.
pub const BUILD_LOG_BYTES: usize = 64 * 1024;

/// How long a check's every move may take.
pub const CHECK_MOVETIME: Duration = Duration::from_secs(1);

/// What a build and check came to, before it is reported.
struct Outcome {
    verdict: PrepVerdict,
    build_log: String,
    artifact: String,
    report: String,
}

impl Outcome {
    /// The build's fault, said in its log: nothing to check.
    fn build_failed(build_log: String) -> Outcome {
        Outcome {
            verdict: PrepVerdict::BuildFailed,
            build_log,
            artifact: String::new(),
            report: String::new(),
        }
    }
}

/// What building a job's source came to.
enum Build {
    /// Built and sent: the artifact's hash, and the build's log.
    Sent { artifact: String, log: String },
    /// The build's fault (it failed, or the server refused what it made): its log.
    Failed(String),
}

/// Asks for a version to build and check and does it. Whether there was one.
///
/// # Errors
/// The server cannot be reached, or refuses this worker.
pub async fn prep_once(
    client: &mut Api,
    cfg: &WorkerConfig,
    cache: &Arc<ArtifactCache>,
    holdings: &Holdings,
) -> Result<bool, WorkerError> {
    let job = client
        .lease_prep(&cfg.uploads.runtimes)
        .await
        .map_err(|e| WorkerError::Server(cfg.server.clone(), e.to_string()))?;
    let Some(job) = job else {
        return Ok(false);
    };
    holdings.prep_leased(HeldPrep {
        bot: job.bot_id,
        lease: job.lease.clone(),
    });
    // Said once the lease is held, so a stop from here on gives it back.
    tracing::info!(bot = %job.bot, build = !job.build.is_empty(), "building and checking");
    let outcome = match prepare_renewing(client, cfg, cache, &job).await {
        Ok(o) => o,
        // The worker's own trouble (the server's artifact, this machine): the
        // version is not judged; said, so that another worker tries at once and
        // a version no worker can finish ends `build-failed`.
        Err(e) => {
            tracing::warn!(bot = %job.bot, "cannot build and check: {e}");
            Outcome {
                verdict: PrepVerdict::WorkerTrouble,
                build_log: e.to_string(),
                artifact: String::new(),
                report: String::new(),
            }
        }
    };
    let reply = client
        .report_prep(PrepReport {
            bot_id: job.bot_id,
            lease: job.lease.clone(),
            verdict: outcome.verdict,
            build_log: outcome.build_log,
            artifact_sha256: outcome.artifact,
            check_report: outcome.report,
        })
        .await;
    holdings.prep_done();
    match reply {
        Ok(status) => {
            let status = status.map_or("unnamed", |s| s.as_str());
            tracing::info!(bot = %job.bot, status, "build and check reported");
        }
        Err(e) => tracing::warn!(bot = %job.bot, "build and check refused: {e}"),
    }
    Ok(true)
}

/// [`prepare`], its lease renewed every third of its period while the build
/// and check go on, on a client of its own.
async fn prepare_renewing(
    client: &mut Api,
    cfg: &WorkerConfig,
    cache: &Arc<ArtifactCache>,
    job: &PrepLeased,
) -> Result<Outcome, WorkerError> {
    let mut renewer = client.clone();
    let mut every = (job.period / 3).max(Duration::from_millis(50));
    let preparing = prepare(client, cfg, cache, job);
    tokio::pin!(preparing);
    loop {
        tokio::select! {
            prepared = &mut preparing => return prepared,
            () = tokio::time::sleep(every) => match renewer.renew_prep(job.bot_id, &job.lease).await {
                Ok(period) => every = (period / 3).max(Duration::from_millis(50)),
                // Tried again a third of a period later; a lease that is gone
                // stays gone (the report says so).
                Err(e) => tracing::warn!(bot = %job.bot, "cannot renew the build's lease: {e}"),
            },
        }
    }
}

async fn prepare(
    client: &mut Api,
    cfg: &WorkerConfig,
    cache: &Arc<ArtifactCache>,
    job: &PrepLeased,
) -> Result<Outcome, WorkerError> {
    let (artifact, build_log) = if job.build.is_empty() {
        (job.source_sha256.clone(), String::new())
    } else {
        match build_and_send(client, cfg, cache, job).await? {
            Build::Sent { artifact, log } => (artifact, log),
            Build::Failed(log) => return Ok(Outcome::build_failed(log)),
        }
    };
    // A remote bot is checked where its author serves it; its upload is only its
    // manifest, never run.
    let remote = job.runtime == crate::submission::manifest::REMOTE;
    let folder = if remote {
        None
    } else {
        Some(cache.folder(client, &artifact).await?)
    };
    let seat = checked_seat(job, folder.as_ref().map(|f| f.dir.clone()))?;
    let limits = Limits {
        sandbox: cfg.sandbox.clone(),
        tc: referee::TimeControl::MoveTime(CHECK_MOVETIME),
        grpc_ca: cfg.uploads.grpc_ca.clone(),
        remote_allow: cfg.uploads.remote_allow.clone(),
        ..Limits::default()
    };
    let (game, games) = (job.game.clone(), u64::from(job.check_games.max(1)));
    let report =
        tokio::task::spawn_blocking(move || referee::check::check_bot(&seat, &game, &[], &limits, games))
            .await
            .map_err(|e| WorkerError::Task(e.to_string()))?;
    drop(folder);
    Ok(Outcome {
        verdict: if report.passed() {
            PrepVerdict::Passed
        } else {
            PrepVerdict::Rejected
        },
        build_log,
        artifact,
        report: report.text(),
    })
}

/// Builds the job's source in the sandbox and sends the built folder to the
/// server.
async fn build_and_send(
    client: &mut Api,
    cfg: &WorkerConfig,
    cache: &Arc<ArtifactCache>,
    job: &PrepLeased,
) -> Result<Build, WorkerError> {
    let source = fetch(client, &job.source_sha256).await?;
    let (sandbox, command) = (cfg.sandbox.clone(), job.build.clone());
    let limit = Duration::from_secs(u64::from(job.build_seconds.max(1)));
    let sha = job.source_sha256.clone();
    let built = tokio::task::spawn_blocking(move || build(&sha, &source, &command, &sandbox, limit))
        .await
        .map_err(|e| WorkerError::Task(e.to_string()))??;
    let (mut build_log, bytes) = match built {
        Built::Failed(log) => return Ok(Build::Failed(log)),
        Built::Folder { log, bytes } => (log, bytes),
    };
    let local = sha256_hex(&bytes);
    let kept_as = match client.upload_artifact(&bytes).await {
        Ok(sha256) => sha256,
        // The server refused the built folder (a link out of it, too large):
        // the build's fault, said in its log.
        Err(CallError::Invalid(why)) => {
            build_log.push_str(&format!("\nthe ladder refused the built folder: {why}\n"));
            return Ok(Build::Failed(build_log));
        }
        Err(e) => return Err(WorkerError::Artifact(format!("sending the built folder: {e}"))),
    };
    if kept_as == local {
        // The server keeps the same canonical bytes: no need to fetch them back.
        let this = cache.clone();
        tokio::task::spawn_blocking(move || this.insert(&local, &bytes).map(drop))
            .await
            .map_err(|e| WorkerError::Task(e.to_string()))??;
    }
    Ok(Build::Sent {
        artifact: kept_as,
        log: build_log,
    })
}

/// The seat the check plays: the bot run from its unpacked folder `dir`,
/// read-only, or (no folder: a remote bot) dialled where its author serves it,
/// only if public (or in --remote-allow), its failures told as "could not
/// connect".
fn checked_seat(job: &PrepLeased, dir: Option<std::path::PathBuf>) -> Result<SeatSetup, WorkerError> {
    Ok(match dir {
        None => SeatSetup {
            shown_as: Some(job.bot.clone()),
            env: (!job.secret.is_empty())
                .then(|| (referee::session::BOT_SECRET_ENV.to_owned(), job.secret.clone()))
                .into_iter()
                .collect(),
            dial: referee::dial::Dial::PublicOnly,
            ..SeatSetup::new(BotSpec::parse(&job.run).map_err(WorkerError::Lease)?)
        },
        Some(dir) => SeatSetup {
            home: Some(Home { dir, writable: false }),
            shown_as: Some(job.bot.clone()),
            ..SeatSetup::new(BotSpec::Process {
                command: job.run.clone(),
            })
        },
    })
}

/// A sandboxed build's end, with its folder as it came back: the bytes read,
/// and the tree they made (or why they were refused).
type BuiltFolder = referee::sandbox::Built<(u64, Result<Tree, crate::submission::ArchiveError>)>;

/// What a build made.
enum Built {
    /// The build failed: its log.
    Failed(String),
    /// The built folder, packed, and the build's log.
    Folder { log: String, bytes: Vec<u8> },
}

/// Builds the upload `source` (bytes that must hash to `sha`) in a writable
/// copy, contained by `sandbox`.
fn build(
    sha: &str,
    source: &[u8],
    command: &str,
    sandbox: &referee::sandbox::Sandbox,
    limit: Duration,
) -> Result<Built, WorkerError> {
    let (_scratch, dir) = unpacked_source(sha, source)?;
    let home = Home {
        dir: dir.clone(),
        writable: true,
    };
    // Isolated, the build writes in a bounded area of its own and its folder
    // comes back as a stream, read here no further than an upload's limits.
    let built = referee::sandbox::build(command, sandbox, &home, limit, BUILD_LOG_BYTES, |stream| {
        let mut counted = Counted {
            inner: stream,
            bytes: 0,
        };
        let tree = Tree::read_stream(&mut counted, &ArchiveLimits::default());
        (counted.bytes, tree)
    });
    let built = match built {
        Ok(b) => b,
        // This machine's failure, not the version's.
        Err(why) if why.starts_with(referee::fault::HOST_FAILURE) => return Err(WorkerError::Host(why)),
        Err(why) => {
            return Ok(Built::Failed(format!(
                "$ {command}\ncannot start the build: {why}\n"
            )));
        }
    };
    let finished = &built.finished;
    let mut log = build_log(command, &built);
    let folder = match built.folder {
        // Nothing came: the build failed (or its folder held what cannot be
        // packed) before packing, and its log says why.
        Some((0, _)) => return Ok(Built::Failed(log)),
        Some((_, folder)) => folder,
        // Level `none` (the host's own trusted builds): the host's folder.
        None if finished.success => {
            let packed = pack_folder(&dir).map_err(|e| WorkerError::Io { path: dir, source: e })?;
            Tree::read(&packed, &ArchiveLimits::default())
        }
        None => return Ok(Built::Failed(log)),
    };
    match folder {
        Ok(built) if finished.success => Ok(Built::Folder {
            log,
            bytes: built.pack().bytes,
        }),
        Ok(_) => Ok(Built::Failed(log)),
        Err(e) => {
            log.push_str(&format!("the built folder is refused: {e}\n"));
            Ok(Built::Failed(log))
        }
    }
}

/// The upload `source` (bytes that must hash to `sha`) unpacked, writable, in
/// a new scratch folder closed to everyone else (the sandbox hands it to the
/// build's own user): the scratch folder, removed when dropped, and the bot's.
fn unpacked_source(sha: &str, source: &[u8]) -> Result<(tempfile::TempDir, std::path::PathBuf), WorkerError> {
    use std::os::unix::fs::PermissionsExt;
    let tree = super::artifacts::checked_tree("upload", sha, source, "built")?;
    let io = |path: &std::path::Path| {
        let path = path.to_owned();
        move |e: std::io::Error| WorkerError::Io { path, source: e }
    };
    let scratch = tempfile::Builder::new()
        .prefix("astragal-build-")
        .tempdir()
        .map_err(io(&std::env::temp_dir()))?;
    let root = std::fs::canonicalize(scratch.path()).map_err(io(scratch.path()))?;
    let dir = root.join("bot");
    std::fs::create_dir(&dir).map_err(io(&dir))?;
    tree.unpack_writable(&dir).map_err(io(&dir))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(io(&dir))?;
    Ok((scratch, dir))
}

/// A build's log as its author reads it: the command, its output, and how it
/// ended (or that its packing was stopped: then the reason follows).
fn build_log(command: &str, built: &BuiltFolder) -> String {
    let finished = &built.finished;
    let mut log = format!("$ {command}\n{}", finished.output);
    if !log.ends_with('\n') {
        log.push('\n');
    }
    // Its folder refused while it was packed: the packing was stopped (tar's
    // broken pipe is not the build's own end).
    let refused_in_packing = matches!(&built.folder, Some((n, Err(_))) if *n > 0) && !finished.timed_out;
    if refused_in_packing {
        log.push_str("[built; its packing was stopped]\n");
    } else {
        log.push_str(&format!("[{}]\n", finished.ended));
    }
    log
}

/// A reader that counts what came through it.
struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}
