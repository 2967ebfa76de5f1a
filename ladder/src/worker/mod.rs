//! `ladder worker`: leases mirrored groups from a server, plays them with the
//! referee library and reports the records. A server that restarts is waited for;
//! a lease that runs out is the server's to hand out again.

use proto::ladder::ladder_client::LadderClient;
use proto::ladder::{
    LeaseGroupsReply, LeaseGroupsRequest, LeaseReply, RenewLeasesRequest, ReportGroupsRequest, ReportOutcome,
    ReportRequest, SeatLog,
};
use referee::clock::Limits;
use referee::dial::Dial;
use referee::game::{BotPool, GameSetup, LogPlace, SeatSetup};
use referee::record::Pairing;
use referee::sandbox::{Home, Sandbox};
use referee::seating;
use referee::spec::BotSpec;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

pub mod artifacts;
pub mod holdings;
pub mod prep;
pub mod promise;

use holdings::Holdings;

/// Adds the token to every call.
#[derive(Clone)]
pub struct Auth(MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

/// A client that sends the token with every call.
pub type Client = LadderClient<InterceptedService<Channel, Auth>>;

/// Why a worker stops.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The server's address is malformed or it cannot be reached.
    #[error("cannot reach the server {0}: {1}")]
    Server(String, String),
    /// The token cannot be sent, or the server refuses it.
    #[error("the worker token: {0}")]
    Token(String),
    /// A lease the referee cannot play as given (time control, bot spec, game).
    #[error("the lease cannot be played: {0}")]
    Lease(String),
    /// The game refused the lease's setup.
    #[error(transparent)]
    Game(#[from] engine::SetupError),
    /// A folder the worker writes.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The folder.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A worker task panicked or was cancelled.
    #[error("a worker task failed: {0}")]
    Task(String),
    /// This machine could not start a bot (out of descriptors or processes, a
    /// limit it may not set): the worker's failure, never the bot's.
    #[error("{0}; this worker stops and reports nothing of the group (see docs/security.md)")]
    Host(String),
    /// An uploaded bot's folder cannot be had as the server named it (its bytes
    /// do not hash to its name, or the server cannot give it): never run.
    #[error("{0}")]
    Artifact(String),
    /// The server's certificate is not one the worker trusts: retrying cannot help.
    #[error(
        "the server's certificate is not trusted ({0}); give the authority that signed it with --ca-cert"
    )]
    Certificate(String),
}

/// Whether a failed call failed on the server's certificate.
fn certificate_refused(why: &str) -> bool {
    why.contains("invalid peer certificate")
        || why.contains("UnknownIssuer")
        || why.contains("certificate verify")
}

/// Connects to a ladder server with a token: `https://` with TLS, the server's
/// certificate checked against `ca_pem` when given (a host's own authority) or the
/// usual public roots; reports go gzip-compressed ([`compressed`]).
///
/// # Errors
/// A malformed URL, token or certificate, or a server that cannot be reached.
pub async fn connect(server: &str, token: &str, ca_pem: Option<&[u8]>) -> Result<Client, WorkerError> {
    client_on(channel(server, ca_pem).await?, token)
}

/// A connection to the ladder server at `server`, which clients of several
/// tokens may share ([`client_on`]): HTTP/2 carries their calls side by side.
///
/// # Errors
/// A malformed URL or certificate, or a server that cannot be reached.
pub async fn channel(server: &str, ca_pem: Option<&[u8]>) -> Result<Channel, WorkerError> {
    let unreachable = |e: &dyn std::fmt::Display| WorkerError::Server(server.to_owned(), e.to_string());
    let mut endpoint = tonic::transport::Endpoint::from_shared(server.to_owned())
        .map_err(|e| unreachable(&e))?
        .connect_timeout(Duration::from_secs(5));
    if server.starts_with("https://") {
        let mut tls = tonic::transport::ClientTlsConfig::new().with_webpki_roots();
        if let Some(pem) = ca_pem {
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| unreachable(&e))?;
    } else if ca_pem.is_some() {
        return Err(WorkerError::Server(
            server.to_owned(),
            "a CA certificate was given for a plain http:// server: use https://".into(),
        ));
    }
    endpoint.connect().await.map_err(|e| {
        let why = referee::cli::error_chain(&e);
        if certificate_refused(&why) {
            WorkerError::Certificate(why)
        } else {
            WorkerError::Server(server.to_owned(), why)
        }
    })
}

/// A client calling as `token` over `channel`. Its calls travel as they are:
/// leases, renewals and replies are small, and compressing them cost a
/// busy server more than it saved (gzip on every call: 7,300 games/s at 10,000
/// workers on the bench's two cores; plain calls: 9,100). Reports go compressed
/// ([`compressed`]).
///
/// # Errors
/// A token a header cannot carry.
pub fn client_on(channel: Channel, token: &str) -> Result<Client, WorkerError> {
    let value: MetadataValue<_> = format!("Bearer {token}")
        .parse()
        .map_err(|_| WorkerError::Token("it has characters a header cannot carry".into()))?;
    Ok(LadderClient::with_interceptor(channel, Auth(value)).max_decoding_message_size(64 << 20))
}

/// `client` for a report: its records (a group's moves and bots' logs, a
/// hundred kilobytes and more) travel gzip-compressed.
pub fn compressed(client: &Client) -> Client {
    client
        .clone()
        .send_compressed(tonic::codec::CompressionEncoding::Gzip)
}

/// Codes by which the server judged a report, as opposed to failing to take it.
fn is_verdict(code: tonic::Code) -> bool {
    use tonic::Code::*;
    matches!(
        code,
        InvalidArgument | FailedPrecondition | NotFound | AlreadyExists | Unauthenticated | PermissionDenied
    )
}

/// The runtimes whose programs this machine has on the bots' PATH: what a
/// worker offers uploaded bots unless told otherwise. `python3-engine` only
/// where the host gave the engine's package (`with_engine`).
pub fn detect_runtimes(with_engine: bool) -> Vec<String> {
    let on_path = |program: &str| {
        referee::sandbox::BOT_PATH
            .split(':')
            .any(|dir| std::path::Path::new(dir).join(program).is_file())
    };
    crate::submission::RUNTIMES
        .iter()
        .filter(|r| {
            let needs: &[&str] = match r.name {
                "python3" => &["python3"],
                "python3-engine" if with_engine => &["python3"],
                "python3-engine" => return false,
                "node" => &["node"],
                "java" => &["java", "javac"],
                "cc" => &["cc", "make"],
                "cargo" => &["cargo", "rustc"],
                _ => &[],
            };
            needs.iter().all(|p| on_path(p))
        })
        .map(|r| r.name.to_owned())
        .collect()
}

/// Worker settings.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Server URL (`http://host:port`).
    pub server: String,
    /// This worker's own token (from `ladder admin add-worker`).
    pub token: String,
    /// The authority that signed an `https://` server's certificate (PEM), when
    /// not a public one.
    pub ca_pem: Option<Vec<u8>>,
    /// Name in this worker's own log lines (the server knows it by its token).
    pub name: String,
    /// Groups played at once.
    pub concurrency: usize,
    /// Groups each task leases per call (and reports per call): more saves round
    /// trips with quick bots (the leases are renewed while the batch is played, so
    /// a batch may take longer than a lease's period).
    pub batch: usize,
    /// Stop after this many groups (all tasks together).
    pub max_groups: Option<u64>,
    /// Stop when the server has no work.
    pub exit_when_idle: bool,
    /// Bots' stderr logs.
    pub log_dir: Option<PathBuf>,
    /// How bot processes are contained: strangers' programs, so isolated unless
    /// the host said otherwise.
    pub sandbox: Sandbox,
    /// Show the groups reported, their rate and the time so far on stderr (a line
    /// every 30 s, or a live counter on a terminal).
    pub progress: bool,
    /// Authors' uploaded bots: what this worker offers them, where it keeps them.
    pub uploads: WorkerUploads,
    /// Once asked to stop, how long the games in hand may go on to be played
    /// and reported; then what is still held is given back to the server
    /// (dealt again at once with new seeds). Zero: given back at once.
    pub stop_within: Duration,
}

/// What a worker offers authors' uploaded bots.
#[derive(Debug, Clone)]
pub struct WorkerUploads {
    /// The runtimes this machine has (`ladder worker --runtimes`): it builds,
    /// checks and plays only uploaded bots of these. None: only the host's bots.
    pub runtimes: Vec<String>,
    /// Where their folders are kept (`None`: a new temporary folder per run).
    pub cache_dir: Option<PathBuf>,
    /// How much of them is kept, in bytes (the least recently used go first).
    pub cache_bytes: u64,
    /// The authority (PEM) that bots served by their authors over `grpcs://`
    /// must show a certificate of (`--grpc-ca`); `None`: the system's roots.
    pub grpc_ca: Option<Arc<[u8]>>,
    /// Ranges where authors' self-served bots may be dialled although they are
    /// not public addresses (`--remote-allow`): see [`referee::dial`].
    pub remote_allow: Vec<referee::dial::IpRange>,
}

impl Default for WorkerUploads {
    fn default() -> WorkerUploads {
        WorkerUploads {
            runtimes: Vec::new(),
            cache_dir: None,
            cache_bytes: 2 << 30,
            grpc_ca: None,
            remote_allow: Vec::new(),
        }
    }
}

/// Plays every rotation of a leased group with the bots of `pool`: [`play_leases`]
/// of one lease.
///
/// # Errors
/// A lease the referee cannot set up, or this machine failing to start a bot.
pub fn play_lease(
    lease: &LeaseReply,
    log_dir: Option<&PathBuf>,
    sandbox: &Sandbox,
    pool: &mut BotPool,
) -> Result<Vec<String>, WorkerError> {
    let mut all = play_leases(std::slice::from_ref(lease), log_dir, sandbox, pool)?;
    Ok(all.pop().unwrap_or_default())
}

/// One leased group, ready to play.
struct Leased<'a> {
    lease: &'a LeaseReply,
    limits: Limits,
    /// Its entrants in the order of rotation 0.
    wanted: Vec<SeatSetup>,
    played: PlayedGroup,
}

/// What a leased group's games gave: its JSON records, one per rotation, and
/// what only the seats' authors may read.
#[derive(Debug, Clone, Default)]
pub struct PlayedGroup {
    /// One JSON record per rotation.
    pub records: Vec<String>,
    /// The seats' private logs (none for a seat with nothing to say).
    pub logs: Vec<SeatLog>,
}

/// Plays every rotation of several leased groups in waves, with the bots of `pool`:
/// rotation 0 of every group, then rotation 1 of every group, and so on. Between
/// two waves every process has exited (so no process of a bot that saw one
/// rotation's dice is alive in another rotation of that group, to play it or to
/// signal to the process that does); the last wave's processes are kept for the
/// next leases where the same bots play. So a batch of leases starts each bot
/// about once per rotation, not once per group. Returns each lease's JSON records,
/// in the leases' order.
///
/// # Errors
/// A lease the referee cannot set up, or this machine failing to start a bot (then
/// nothing of the batch is reported: its leases run out, and other workers play
/// the groups with new seeds).
pub fn play_leases(
    leases: &[LeaseReply],
    log_dir: Option<&PathBuf>,
    sandbox: &Sandbox,
    pool: &mut BotPool,
) -> Result<Vec<Vec<String>>, WorkerError> {
    let played = play_leases_in(leases, &HashMap::new(), log_dir, sandbox, pool)?;
    Ok(played.into_iter().map(|p| p.records).collect())
}

/// [`play_leases`], with uploaded bots' folders: `homes` maps an entrant's
/// artifact to the folder it was unpacked in, where its command runs. An
/// entrant whose artifact is not there is never run (its command means nothing
/// outside its folder).
///
/// # Errors
/// As [`play_leases`], and an uploaded bot without its folder.
pub fn play_leases_in(
    leases: &[LeaseReply],
    homes: &HashMap<String, PathBuf>,
    log_dir: Option<&PathBuf>,
    sandbox: &Sandbox,
    pool: &mut BotPool,
) -> Result<Vec<PlayedGroup>, WorkerError> {
    let base = Limits {
        sandbox: sandbox.clone(),
        ..Limits::default()
    };
    play_leases_limited(leases, homes, log_dir, &base, pool)
}

/// [`play_leases_in`] with the worker's own limits (its sandbox, the authority
/// that `grpcs://` bots' certificates chain to); each lease sets the time.
///
/// # Errors
/// As [`play_leases_in`].
pub fn play_leases_limited(
    leases: &[LeaseReply],
    homes: &HashMap<String, PathBuf>,
    log_dir: Option<&PathBuf>,
    base: &Limits,
    pool: &mut BotPool,
) -> Result<Vec<PlayedGroup>, WorkerError> {
    let mut groups = ready(leases, homes, base)?;
    pool.retain(|s| groups.iter().any(|g| g.wanted.contains(s)));
    let waves = groups.iter().map(|g| g.wanted.len()).max().unwrap_or(0);
    for rotation in 0..waves {
        play_wave(&mut groups, rotation, log_dir, pool)?;
    }
    Ok(groups.into_iter().map(|g| g.played).collect())
}

/// The leases' groups, their seats set up, nothing played yet.
fn ready<'a>(
    leases: &'a [LeaseReply],
    homes: &HashMap<String, PathBuf>,
    base: &Limits,
) -> Result<Vec<Leased<'a>>, WorkerError> {
    let mut groups = Vec::with_capacity(leases.len());
    for lease in leases {
        let limits = Limits {
            tc: lease.time.parse().map_err(WorkerError::Lease)?,
            ..base.clone()
        };
        let wanted = lease
            .entrants
            .iter()
            .map(|e| {
                let (spec, home) = if e.artifact_sha256.is_empty() || served_remotely(e) {
                    (BotSpec::parse(&e.spec).map_err(WorkerError::Lease)?, None)
                } else {
                    let dir = homes.get(&e.artifact_sha256).ok_or_else(|| {
                        WorkerError::Artifact(format!(
                            "{}: its folder {} is not here",
                            e.bot, e.artifact_sha256
                        ))
                    })?;
                    // An uploaded bot is always a program in its folder.
                    let home = Home {
                        dir: dir.clone(),
                        writable: false,
                    };
                    (
                        BotSpec::Process {
                            command: e.spec.clone(),
                        },
                        Some(home),
                    )
                };
                Ok(SeatSetup {
                    env: e.env.iter().map(|v| (v.key.clone(), v.value.clone())).collect(),
                    // The record names the bot, never its command or environment.
                    shown_as: Some(e.bot.clone()),
                    home,
                    artifact: (!e.artifact_sha256.is_empty()).then(|| e.artifact_sha256.clone()),
                    dial: dial_for(e),
                    ..SeatSetup::new(spec)
                })
            })
            .collect::<Result<Vec<_>, WorkerError>>()?;
        groups.push(Leased {
            lease,
            limits,
            played: PlayedGroup {
                records: Vec::with_capacity(wanted.len()),
                logs: Vec::new(),
            },
            wanted,
        });
    }
    Ok(groups)
}

/// Plays `rotation` of every group that has it; whether a seat faulted in any
/// of its games. A wave past the first starts with a turn of the machine's
/// rotation gate, so that no bot process on this machine lives from one
/// rotation into the next (where a seat of the wave is a process at all: a
/// built-in bot is the worker's own code, and a gRPC bot is dealt independent
/// seeds).
fn play_wave(
    groups: &mut [Leased<'_>],
    rotation: usize,
    log_dir: Option<&PathBuf>,
    pool: &mut BotPool,
) -> Result<bool, WorkerError> {
    let playing = || groups.iter().filter(|g| rotation < g.wanted.len());
    if rotation > 0 {
        if playing().any(|g| g.wanted.iter().any(SeatSetup::is_process)) {
            pool.next_rotation()
                .map_err(|e| WorkerError::Host(e.to_string()))?;
        } else {
            pool.quit_all();
        }
    }
    let mut faulted = false;
    for g in groups.iter_mut().filter(|g| rotation < g.wanted.len()) {
        let (rec, logs, faults) = play_rotation(g, rotation, log_dir, pool)?;
        faulted |= faults;
        g.played.records.push(rec);
        g.played.logs.extend(logs);
    }
    Ok(faulted)
}

/// Plays one rotation of a leased group; its JSON record, the seats' private
/// logs, and whether a seat faulted.
fn play_rotation(
    g: &Leased<'_>,
    rotation: usize,
    log_dir: Option<&PathBuf>,
    pool: &mut BotPool,
) -> Result<(String, Vec<SeatLog>, bool), WorkerError> {
    let lease = g.lease;
    let setup = GameSetup {
        game: lease.game.clone(),
        options: lease.options.clone(),
        seed: if lease.independent_seeds {
            crate::store::Seeding::Independent
        } else {
            crate::store::Seeding::Mirrored
        }
        .game_seed(lease.seed, rotation),
        position: None,
        pairing: Some(Pairing {
            group: lease.group_no,
            rotation,
        }),
    };
    let seats: Vec<SeatSetup> = seating::seated(&g.wanted, rotation);
    let logs = LogPlace {
        dir: log_dir.cloned(),
        tag: format!("{}-g{}r{rotation}-", lease.competition, lease.group_no),
        names: seating::seated(&lease.entrants, rotation)
            .into_iter()
            .map(|e| e.bot)
            .collect(),
        author_tail: lease.author_log_bytes as usize,
    };
    let (rec, private) = referee::play_game_logged(&setup, &seats, &g.limits, &logs, pool)?;
    // This machine failed, not the bot: nothing of the group is reported (its
    // lease runs out, and another worker plays it with a new seed).
    if let Some(f) = rec
        .faults
        .iter()
        .find(|f| referee::fault::is_host_failure(f.kind, &f.detail))
    {
        return Err(WorkerError::Host(f.detail.clone()));
    }
    let logs = private
        .into_iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(seat, p)| SeatLog {
            rotation: rotation as u32,
            seat: seat as u32,
            stderr: p.stderr,
            stderr_dropped: p.stderr_dropped,
            faults: p.faults,
        })
        .collect();
    let faulted = !rec.faults.is_empty();
    let metrics = crate::metrics::worker();
    metrics.games.inc();
    for f in &rec.faults {
        crate::metrics::WorkerMetrics::count(&metrics.faults, f.kind.as_str(), 1);
    }
    for took in pool.started() {
        metrics.sandbox_start_seconds.observe(took.as_secs_f64());
    }
    let rec = serde_json::to_string(&rec).map_err(|e| WorkerError::Lease(e.to_string()))?;
    Ok((rec, logs, faulted))
}

/// Whether an uploaded entrant runs on its author's machine (`grpcs://`): its
/// files are only its manifest, never fetched or run here.
fn served_remotely(e: &proto::ladder::Entrant) -> bool {
    matches!(BotSpec::parse(&e.spec), Ok(BotSpec::Grpc { .. }))
}

/// Where an entrant's server may be dialled: an uploaded bot's address is a
/// stranger's word, so only a public one (or one in `--remote-allow`); the
/// host's own gRPC bots (`register-bot`, no upload) wherever the host said.
fn dial_for(e: &proto::ladder::Entrant) -> Dial {
    if e.artifact_sha256.is_empty() {
        Dial::Anywhere
    } else {
        Dial::PublicOnly
    }
}

/// One rotation of some leased groups to play, and where their records go; or
/// word that no batch comes soon.
enum PlayJob {
    Wave {
        leases: Vec<LeaseReply>,
        homes: HashMap<String, PathBuf>,
        rotation: usize,
        reply: tokio::sync::oneshot::Sender<Result<WavePlayed, WorkerError>>,
    },
    Rest,
}

/// What one [`PlayJob::Wave`] gave.
struct WavePlayed {
    /// Per lease, in order: what this rotation of its group gave (nothing for a
    /// group with fewer rotations).
    groups: Vec<PlayedGroup>,
    /// Whether, when the wave ended, another thread or program on this machine
    /// waited to turn the rotation gate.
    turn_waiting: bool,
    /// Whether a seat faulted in one of its games.
    faulted: bool,
}

/// How long kept bots wait for the next batch before they are quit anyway: a
/// kept process holds the machine's rotation gate shut for every other thread
/// and program on it (see [`referee::sandbox::RotationGate`]), so it is kept
/// only across the round trip between two batches, and quit at once when a
/// turn waits.
const KEPT_BOTS_WAIT: Duration = Duration::from_secs(1);

/// How often a play thread with kept bots looks whether a turn of the gate waits.
const GATE_LOOK: Duration = Duration::from_millis(5);

/// The thread that plays one task's batches of leases ([`play_leases`]), and keeps
/// their bots from batch to batch. One long-lived thread rather than the runtime's
/// blocking pool: a bot process dies with the thread that started it (its parent
/// death signal), and a blocking-pool thread ends when it idles.
struct PlayThread {
    leases: std::sync::mpsc::Sender<PlayJob>,
}

impl PlayThread {
    fn start(name: &str, log_dir: Option<PathBuf>, base: Limits) -> Result<PlayThread, WorkerError> {
        let (leases, inbox) = std::sync::mpsc::channel::<PlayJob>();
        std::thread::Builder::new()
            .name(format!("play-{name}"))
            .spawn(move || {
                let mut pool = BotPool::reusing();
                // Ends when the task drops its sender; the pool's bots go with it.
                loop {
                    // Kept bots wait for the next batch, but not past a second,
                    // nor while a turn of the gate waits for them (looked at
                    // every few milliseconds).
                    let kept_since = std::time::Instant::now();
                    let job = loop {
                        match inbox.recv_timeout(GATE_LOOK) {
                            Ok(job) => break Some(job),
                            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                                if pool.idle() > 0
                                    && (pool.turn_waiting() || kept_since.elapsed() >= KEPT_BOTS_WAIT)
                                {
                                    pool.quit_all();
                                }
                                if pool.idle() == 0 {
                                    break inbox.recv().ok();
                                }
                            }
                            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
                        }
                    };
                    let Some(job) = job else { break };
                    match job {
                        PlayJob::Wave {
                            leases,
                            homes,
                            rotation,
                            reply,
                        } => {
                            let played = ready(&leases, &homes, &base).and_then(|mut groups| {
                                if rotation == 0 {
                                    pool.retain(|s| groups.iter().any(|g| g.wanted.contains(s)));
                                }
                                let faulted = play_wave(&mut groups, rotation, log_dir.as_ref(), &mut pool)?;
                                Ok(WavePlayed {
                                    groups: groups.into_iter().map(|g| g.played).collect(),
                                    turn_waiting: pool.turn_waiting(),
                                    faulted,
                                })
                            });
                            let _ = reply.send(played);
                        }
                        PlayJob::Rest => pool.quit_all(),
                    }
                }
            })
            .map_err(|e| WorkerError::Task(format!("cannot start a play thread: {e}")))?;
        Ok(PlayThread { leases })
    }

    /// Quits the kept bots: no batch comes soon.
    fn rest(&self) {
        let _ = self.leases.send(PlayJob::Rest);
    }

    /// Plays `rotation` of the leases' groups (a wave past the first starts with
    /// a turn of the rotation gate).
    async fn play_wave(
        &self,
        leases: Vec<LeaseReply>,
        homes: HashMap<String, PathBuf>,
        rotation: usize,
    ) -> Result<WavePlayed, WorkerError> {
        let (reply, played) = tokio::sync::oneshot::channel();
        self.leases
            .send(PlayJob::Wave {
                leases,
                homes,
                rotation,
                reply,
            })
            .map_err(|_| WorkerError::Task("the play thread is gone".into()))?;
        played
            .await
            .map_err(|_| WorkerError::Task("the play thread stopped mid-lease".into()))?
    }
}

/// Runs until `max_groups` are reported, the server is idle (with `exit_when_idle`),
/// or `shutdown` completes. Returns the groups reported.
///
/// # Errors
/// A token the server refuses.
pub async fn run(cfg: WorkerConfig, shutdown: impl Future<Output = ()>) -> Result<u64, WorkerError> {
    if let Some(dir) = &cfg.log_dir {
        std::fs::create_dir_all(dir).map_err(|e| WorkerError::Io {
            path: dir.clone(),
            source: e,
        })?;
    }
    // Uploaded bots' folders: the host's cache, or one of this run's own.
    let (cache_dir, _temporary) = match &cfg.uploads.cache_dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let t = tempfile::Builder::new()
                .prefix("astragal-artifacts-")
                .tempdir()
                .map_err(|e| WorkerError::Io {
                    path: std::env::temp_dir(),
                    source: e,
                })?;
            (t.path().join("cache"), Some(t))
        }
    };
    let cache =
        artifacts::ArtifactCache::open(&cache_dir, cfg.uploads.cache_bytes).map_err(|e| WorkerError::Io {
            path: cache_dir.clone(),
            source: e,
        })?;
    let cfg = Arc::new(cfg);
    let reported = Arc::new(AtomicU64::new(0));
    let claimed = Arc::new(AtomicU64::new(0));
    let holdings = Arc::new(Holdings::default());
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..cfg.concurrency.max(1) {
        let (cfg, reported, claimed, cache, holdings) = (
            cfg.clone(),
            reported.clone(),
            claimed.clone(),
            cache.clone(),
            holdings.clone(),
        );
        tasks.spawn(async move { work_loop(k, &cfg, &cache, &reported, &claimed, &holdings).await });
    }
    // On its own task, stopped when the work ends.
    let shown = cfg.progress.then(|| {
        let reported = reported.clone();
        tokio::spawn(async move {
            let mut progress = referee::progress::Progress::new(None, "groups", 0);
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                progress.update(reported.load(Ordering::Relaxed), String::new);
            }
        })
    });
    // Asked to stop: no task leases again; the games in hand go on for
    // `stop_within` to be played and reported, then what is still held is
    // given back (a task that fails gives back what it held too).
    let mut finished = Ok(());
    let mut stop_by: Option<tokio::time::Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let out_of_time = async {
            match stop_by {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            joined = tasks.join_next() => match joined {
                None => break,
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => {
                    finished = Err(e);
                    break;
                }
                Some(Err(e)) => {
                    finished = Err(WorkerError::Task(e.to_string()));
                    break;
                }
            },
            () = &mut shutdown, if stop_by.is_none() => {
                holdings.stop();
                tracing::info!(
                    groups = holdings.groups_held(),
                    "stopping: no more leases; the games in hand have {:?} to finish",
                    cfg.stop_within
                );
                stop_by = Some(tokio::time::Instant::now() + cfg.stop_within);
            }
            () = out_of_time => break,
        }
    }
    holdings.stop();
    tasks.abort_all();
    let given = holdings.give_back(&cfg).await;
    if given != holdings::GivenBack::default() {
        tracing::info!(
            groups = given.groups,
            lost = given.not_taken,
            build = given.prep,
            "leases given back to the server"
        );
    }
    if let Some(task) = shown {
        task.abort();
    }
    finished?;
    Ok(reported.load(Ordering::Relaxed))
}

/// Takes up to `batch` from what is left of `max` (all tasks together); 0 when
/// nothing is left.
fn claim(claimed: &AtomicU64, max: Option<u64>, batch: u64) -> u64 {
    let Some(max) = max else {
        return batch;
    };
    let mut now = claimed.load(Ordering::Relaxed);
    loop {
        let take = batch.min(max.saturating_sub(now));
        if take == 0 {
            return 0;
        }
        match claimed.compare_exchange(now, now + take, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return take,
            Err(seen) => now = seen,
        }
    }
}

/// Splits reports into calls of at most [`crate::server::MAX_BATCH`] groups and
/// [`REPORT_BATCH_BYTES`] of records (a single larger group goes alone).
fn report_calls(reports: Vec<ReportRequest>) -> Vec<Vec<ReportRequest>> {
    let mut calls: Vec<Vec<ReportRequest>> = Vec::new();
    let mut bytes = 0;
    for r in reports {
        let size: usize = r.records.iter().map(String::len).sum::<usize>()
            + r.logs
                .iter()
                .map(|l| l.stderr.len() + l.faults.iter().map(String::len).sum::<usize>())
                .sum::<usize>();
        match calls.last_mut() {
            Some(call) if call.len() < crate::server::MAX_BATCH && bytes + size <= REPORT_BATCH_BYTES => {
                bytes += size;
                call.push(r);
            }
            _ => {
                bytes = size;
                calls.push(vec![r]);
            }
        }
    }
    calls
}

/// Most bytes of records in one report call: half what the server takes
/// ([`crate::server::MAX_REPORT_BYTES`]), for the message's own framing.
pub const REPORT_BATCH_BYTES: usize = crate::server::MAX_REPORT_BYTES / 2;

/// Most groups a task holds in one wave, leased a batch at a time while no turn
/// of the machine's rotation gate waits (as the runner's waves grow): each
/// turn waits for every bot process on the machine to quit, so a task with
/// `--batch 1` that turned after every group's first game held every other
/// thread to the same pace.
const MAX_GROUPS_HELD: usize = crate::server::MAX_BATCH;

/// How long a task's wave may grow: its groups are reported when it ends, so
/// this is what growing adds to the time a game's result (and a suspension, a
/// new version's first rating) takes to reach the server; between two waves,
/// the first task builds an author's version.
const GROWING: Duration = Duration::from_secs(2);

async fn work_loop(
    k: usize,
    cfg: &WorkerConfig,
    cache: &Arc<artifacts::ArtifactCache>,
    reported: &AtomicU64,
    claimed: &AtomicU64,
    holdings: &Holdings,
) -> Result<(), WorkerError> {
    let name = format!("{}/{k}", cfg.name);
    let mut client: Option<Client> = None;
    let base = Limits {
        sandbox: cfg.sandbox.clone(),
        grpc_ca: cfg.uploads.grpc_ca.clone(),
        remote_allow: cfg.uploads.remote_allow.clone(),
        ..Limits::default()
    };
    let player = PlayThread::start(&name, cfg.log_dir.clone(), base)?;
    let batch = cfg.batch.clamp(1, crate::server::MAX_BATCH) as u64;
    let mut just_built = false;
    loop {
        if holdings.stopping() {
            return Ok(());
        }
        let want = claim(claimed, cfg.max_groups, batch);
        if want == 0 {
            return Ok(());
        }
        // This call leases without building first: the last one built.
        let build_skipped = k == 0 && just_built;
        let builder = (k == 0).then_some(&mut just_built);
        let Some(leased) = lease(
            cfg,
            cache,
            &mut client,
            claimed,
            want,
            Patience::UntilLeased,
            builder,
            holdings,
        )
        .await?
        else {
            continue;
        };
        holdings.leased(&leased.groups);
        if leased.groups.is_empty() {
            if build_skipped {
                // Nothing to play: on to the next build at once.
                continue;
            }
            // Idle means nothing left anywhere: a group another worker holds may
            // still come back when its lease runs out.
            if cfg.exit_when_idle && !leased.groups_in_progress && leased.retry_after_ms == 0 {
                return Ok(());
            }
            player.rest();
            let wait = match leased.retry_after_ms {
                0 => 500,
                ms => u64::from(ms).min(5_000),
            };
            holdings.nap(Duration::from_millis(wait)).await;
            continue;
        }
        let mut held = Held::default();
        if let Err(e) = held.fetch(&leased.groups, &mut client, cache).await {
            // Its leases run out, and the server deals its groups again.
            tracing::error!("not playing a batch: {e}");
            holdings.reported(leased.groups.iter().map(|g| (g.lease.clone(), g.group_id)));
            holdings.nap(Duration::from_millis(500)).await;
            continue;
        }
        let mut renewals = Renewals::new(&leased.groups);
        // Rotation 0 of this batch, then of more batches while nothing waits to
        // turn the gate: for at most `GROWING` (and half a lease period, so the
        // later rotations still fit well inside the leases' lives), and not
        // past a game in which a seat faulted, so the server hears of a broken
        // bot (and suspends it) as soon as it would from one batch.
        let grow_until = tokio::time::Instant::now() + GROWING.min(renewals.period / 2);
        let mut wave = held
            .play(&player, leased.groups, 0, &mut renewals, cfg, &mut client)
            .await?;
        while !wave.turn_waiting
            && !wave.faulted
            && !holdings.stopping()
            && held.leases.len() + batch as usize <= MAX_GROUPS_HELD
            && tokio::time::Instant::now() < grow_until
        {
            let want = claim(claimed, cfg.max_groups, batch);
            if want == 0 {
                break;
            }
            let more = match lease(
                cfg,
                cache,
                &mut client,
                claimed,
                want,
                Patience::Once,
                None,
                holdings,
            )
            .await?
            {
                Some(more) if !more.groups.is_empty() => more,
                _ => break,
            };
            holdings.leased(&more.groups);
            if let Err(e) = held.fetch(&more.groups, &mut client, cache).await {
                tracing::error!("not playing a batch: {e}");
                holdings.reported(more.groups.iter().map(|g| (g.lease.clone(), g.group_id)));
                break;
            }
            renewals.add(&more.groups);
            wave = held
                .play(&player, more.groups, 0, &mut renewals, cfg, &mut client)
                .await?;
        }
        let rotations = held.leases.iter().map(|l| l.entrants.len()).max().unwrap_or(0);
        for rotation in 1..rotations {
            let all = held.leases.clone();
            held.play(&player, all, rotation, &mut renewals, cfg, &mut client)
                .await?;
        }
        let Held {
            leases, played, pins, ..
        } = held;
        drop(pins);
        // The leases are good for a period from their last renewal.
        let give_up = tokio::time::Instant::now()
            + Duration::from_millis(leases.iter().map(|g| g.expires_in_ms).min().unwrap_or(0))
                .mul_f64(2.0 / 3.0)
            + Duration::from_secs(5);
        let reports: Vec<ReportRequest> = leases
            .into_iter()
            .zip(played)
            .map(|(lease, played)| ReportRequest {
                lease: lease.lease,
                group_id: lease.group_id,
                records: played.records,
                logs: played.logs,
            })
            .collect();
        for call in report_calls(reports) {
            let sent: Vec<(String, i64)> = call.iter().map(|r| (r.lease.clone(), r.group_id)).collect();
            let n = report(cfg, &mut client, call, give_up).await;
            reported.fetch_add(n, Ordering::Relaxed);
            crate::metrics::worker().groups_reported.inc_by(n);
            // Taken, refused or dropped: nothing of these is held any more.
            holdings.reported(sent);
        }
    }
}

/// How hard [`lease`] tries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Patience {
    /// Through a server restarting or unreachable (and, for the first task,
    /// building authors' new versions first).
    UntilLeased,
    /// One call: a task that holds groups already plays them rather than wait.
    Once,
}

/// Asks the server for up to `want` groups (claimed already; what is not leased
/// is given back to `claimed`). `None`: no answer (with [`Patience::Once`]), or
/// a build took the turn (ask again). `builder`, for the task that also builds
/// authors' versions: whether its last call built one (then this one leases
/// first), set when this one does.
///
/// # Errors
/// A token or certificate the server refuses.
// Each argument is one thing a lease call reads or moves; bundling them
// would only name the bundle (issue 57 reshapes the worker).
#[allow(clippy::too_many_arguments)]
async fn lease(
    cfg: &WorkerConfig,
    cache: &Arc<artifacts::ArtifactCache>,
    client: &mut Option<Client>,
    claimed: &AtomicU64,
    want: u64,
    patience: Patience,
    mut builder: Option<&mut bool>,
    holdings: &Holdings,
) -> Result<Option<LeaseGroupsReply>, WorkerError> {
    let unclaim = |got: u64| {
        if cfg.max_groups.is_some() && got < want {
            claimed.fetch_sub(want - got, Ordering::Relaxed);
        }
    };
    loop {
        if holdings.stopping() {
            unclaim(0);
            return Ok(None);
        }
        let c = match client.as_mut() {
            Some(c) => c,
            None => match connect(&cfg.server, &cfg.token, cfg.ca_pem.as_deref()).await {
                Ok(c) => client.insert(c),
                Err(e @ WorkerError::Certificate(_)) => return Err(e),
                Err(e) => {
                    tracing::warn!("cannot reach {}: {e}; retrying", cfg.server);
                    if patience == Patience::Once {
                        unclaim(0);
                        return Ok(None);
                    }
                    holdings.nap(Duration::from_millis(500)).await;
                    continue;
                }
            },
        };
        // The first task also builds and checks authors' new versions, one
        // between two batches: a version waits for at most one batch of games,
        // and a queue of builds (one author's flood, say) holds back the games
        // of the versions already built by no more than half.
        let build = match builder.as_deref_mut() {
            Some(just_built) if patience == Patience::UntilLeased && !cfg.uploads.runtimes.is_empty() => {
                !std::mem::take(just_built)
            }
            _ => false,
        };
        if build {
            match prep::prep_once(c, cfg, cache, holdings).await {
                Ok(true) => {
                    if let Some(just_built) = builder.as_deref_mut() {
                        *just_built = true;
                    }
                    unclaim(0);
                    return Ok(None);
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!("cannot build and check: {e}; retrying");
                    *client = None;
                    holdings.nap(Duration::from_millis(500)).await;
                    continue;
                }
            }
        }
        let req = LeaseGroupsRequest {
            max_groups: want as u32,
            runtimes: cfg.uploads.runtimes.clone(),
        };
        match c.lease_groups(req).await {
            Ok(r) => {
                let r = r.into_inner();
                unclaim(r.groups.len() as u64);
                return Ok(Some(r));
            }
            Err(s)
                if matches!(
                    s.code(),
                    tonic::Code::Unauthenticated | tonic::Code::PermissionDenied
                ) =>
            {
                return Err(WorkerError::Token(format!(
                    "the server refuses it: {}",
                    s.message()
                )));
            }
            Err(s) => {
                let why = referee::cli::error_chain(&s);
                if certificate_refused(&why) {
                    return Err(WorkerError::Certificate(why));
                }
                tracing::warn!("lease failed: {why}; retrying");
                *client = None;
                if patience == Patience::Once {
                    unclaim(0);
                    return Ok(None);
                }
                holdings.nap(Duration::from_millis(500)).await;
            }
        }
    }
}

/// The groups a task holds in its wave: their leases, the uploaded bots'
/// folders (pinned in the cache until the groups are played), and what their
/// rotations gave so far.
#[derive(Default)]
struct Held {
    leases: Vec<LeaseReply>,
    homes: HashMap<String, PathBuf>,
    pins: Vec<artifacts::Pinned>,
    played: Vec<PlayedGroup>,
}

impl Held {
    /// Fetches (or finds in the cache) the folders of the groups' uploaded bots.
    ///
    /// # Errors
    /// A folder that cannot be had: the groups are not played.
    async fn fetch(
        &mut self,
        groups: &[LeaseReply],
        client: &mut Option<Client>,
        cache: &Arc<artifacts::ArtifactCache>,
    ) -> Result<(), WorkerError> {
        for e in groups.iter().flat_map(|g| &g.entrants) {
            if e.artifact_sha256.is_empty()
                || self.homes.contains_key(&e.artifact_sha256)
                || served_remotely(e)
            {
                continue;
            }
            let c = client
                .as_mut()
                .ok_or_else(|| WorkerError::Artifact("no connection to fetch a bot".into()))?;
            let pin = cache.folder(c, &e.artifact_sha256).await?;
            self.homes.insert(e.artifact_sha256.clone(), pin.dir.clone());
            self.pins.push(pin);
        }
        Ok(())
    }

    /// Plays `rotation` of `groups` (new ones when it is 0, else all held),
    /// renewing every held lease while the games go on.
    async fn play(
        &mut self,
        player: &PlayThread,
        groups: Vec<LeaseReply>,
        rotation: usize,
        renewals: &mut Renewals,
        cfg: &WorkerConfig,
        client: &mut Option<Client>,
    ) -> Result<WavePlayed, WorkerError> {
        let fresh = rotation == 0;
        let playing = player.play_wave(groups.clone(), self.homes.clone(), rotation);
        tokio::pin!(playing);
        let wave = loop {
            tokio::select! {
                played = &mut playing => break played?,
                () = renewals.due() => renewals.renew(cfg, client).await,
            }
        };
        if fresh {
            self.leases.extend(groups);
            self.played.extend(wave.groups.iter().cloned());
        } else {
            for (mine, new) in self.played.iter_mut().zip(&wave.groups) {
                mine.records.extend(new.records.iter().cloned());
                mine.logs.extend(new.logs.iter().cloned());
            }
        }
        Ok(wave)
    }
}

/// The leases being played, renewed every third of their period so that however
/// long the games legally take, the groups stay this worker's (a lease that ran
/// out would be dealt again, with a new seed, and its report refused).
struct Renewals {
    /// Each held group, with the lease it came in.
    groups: Vec<(String, i64)>,
    /// The shortest of the leases' periods.
    period: Duration,
    every: Duration,
    next: tokio::time::Instant,
}

impl Renewals {
    fn new(leases: &[LeaseReply]) -> Renewals {
        let period = Duration::from_millis(leases.iter().map(|g| g.expires_in_ms).min().unwrap_or(60_000));
        let every = (period / 3).max(Duration::from_millis(50));
        Renewals {
            groups: leases.iter().map(|g| (g.lease.clone(), g.group_id)).collect(),
            period,
            every,
            next: tokio::time::Instant::now() + every,
        }
    }

    /// Renews these too from now on.
    fn add(&mut self, leases: &[LeaseReply]) {
        self.groups
            .extend(leases.iter().map(|g| (g.lease.clone(), g.group_id)));
    }

    /// Resolves when the next renewal is due.
    async fn due(&self) {
        tokio::time::sleep_until(self.next).await;
    }

    /// Renews what is left of the held groups. A call that fails is tried again
    /// at the next renewal (a third of a period later, before the leases run
    /// out); a group the server no longer renews is lost, and is not asked for
    /// again.
    async fn renew(&mut self, cfg: &WorkerConfig, client: &mut Option<Client>) {
        self.next = tokio::time::Instant::now() + self.every;
        if self.groups.is_empty() {
            return;
        }
        let c = match client.as_mut() {
            Some(c) => c,
            None => match connect(&cfg.server, &cfg.token, cfg.ca_pem.as_deref()).await {
                Ok(c) => client.insert(c),
                Err(e) => {
                    tracing::warn!("cannot renew leases: {e}");
                    return;
                }
            },
        };
        let mut leases: Vec<&str> = self.groups.iter().map(|(l, _)| l.as_str()).collect();
        leases.sort_unstable();
        leases.dedup();
        // Per lease, in calls the server takes (at most its batch each), so that
        // a worker that holds more never loses them all to one refused renewal.
        let mut renewed = Vec::with_capacity(self.groups.len());
        let mut expires_in_ms = u64::MAX;
        for lease in leases {
            let ids: Vec<i64> = self
                .groups
                .iter()
                .filter(|(l, _)| l == lease)
                .map(|(_, g)| *g)
                .collect();
            for chunk in ids.chunks(crate::server::MAX_BATCH) {
                let req = RenewLeasesRequest {
                    lease: lease.to_owned(),
                    group_ids: chunk.to_vec(),
                };
                match c.renew_leases(req).await {
                    Ok(r) => {
                        let r = r.into_inner();
                        renewed.extend(r.renewed.into_iter().map(|g| (lease.to_owned(), g)));
                        if r.expires_in_ms > 0 {
                            expires_in_ms = expires_in_ms.min(r.expires_in_ms);
                        }
                    }
                    Err(s) => {
                        // Tried again at the next renewal, all of them.
                        tracing::warn!("cannot renew leases: {s}");
                        *client = None;
                        return;
                    }
                }
            }
        }
        let lost: Vec<i64> = self
            .groups
            .iter()
            .filter(|g| !renewed.contains(g))
            .map(|(_, g)| *g)
            .collect();
        if !lost.is_empty() {
            tracing::warn!(
                ?lost,
                "leases ran out before they were renewed; their report will be refused"
            );
        }
        self.groups = renewed;
        if expires_in_ms != u64::MAX {
            self.every = (Duration::from_millis(expires_in_ms) / 3).max(Duration::from_millis(50));
            self.next = tokio::time::Instant::now() + self.every;
        }
    }
}

/// Reports one call's groups; a server restarting is waited for until the leases
/// would have run out. Returns how many groups the server took (recorded, or
/// recorded already by another worker).
async fn report(
    cfg: &WorkerConfig,
    client: &mut Option<Client>,
    call: Vec<ReportRequest>,
    give_up: tokio::time::Instant,
) -> u64 {
    let groups: Vec<i64> = call.iter().map(|r| r.group_id).collect();
    loop {
        let c = match client.as_mut() {
            Some(c) => c,
            None => match connect(&cfg.server, &cfg.token, cfg.ca_pem.as_deref()).await {
                Ok(c) => client.insert(c),
                Err(_) if tokio::time::Instant::now() < give_up => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(?groups, "dropping the groups: server unreachable: {e}");
                    return 0;
                }
            },
        };
        let req = ReportGroupsRequest {
            reports: call.clone(),
        };
        match compressed(c).report_groups(req).await {
            Ok(r) => {
                let mut taken = 0;
                for o in r.into_inner().outcomes {
                    if o.outcome() == ReportOutcome::Refused {
                        tracing::warn!(group = o.group_id, code = o.code, "report refused: {}", o.message);
                    } else {
                        tracing::info!(
                            group = o.group_id,
                            outcome = o.outcome().as_str_name(),
                            "reported"
                        );
                        taken += 1;
                    }
                }
                return taken;
            }
            // A verdict on the call is final; anything else (a server restarting,
            // a connection cut mid-call) is worth another try.
            Err(s) if !is_verdict(s.code()) => {
                *client = None;
                if tokio::time::Instant::now() >= give_up {
                    tracing::warn!(?groups, "dropping the groups: {s}");
                    return 0;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(s) => {
                tracing::warn!(?groups, "report refused: {s}");
                return 0;
            }
        }
    }
}
