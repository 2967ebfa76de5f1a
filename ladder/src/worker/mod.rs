//! `ladder worker`: leases mirrored groups from a server, plays them with the
//! referee library and reports the records. A server that restarts is waited for;
//! a lease that runs out is the server's to hand out again.

use crate::app::{GroupReport, Leased as LeasedGroups, LeasedEntrant, LeasedGroup, ReportedSeatLog};
use crate::store::GroupId;
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

pub mod artifacts;
mod client;
pub mod holdings;
mod play;
pub mod prep;
pub mod promise;
mod renewals;
mod report;
mod runtimes;

pub use client::{
    Api, Auth, Backoff, CallError, Client, Renewed, Taken, channel, client_on, compressed, connect,
    leased_group,
};
use play::{PlayThread, WavePlayed, served_remotely};
pub use play::{PlayedGroup, play_lease, play_leases, play_leases_in, play_leases_limited};
use renewals::{Held, Renewals};
pub use report::REPORT_BATCH_BYTES;
use report::{report, report_calls};
pub use runtimes::detect_runtimes;

use holdings::Holdings;

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
    let (cache, _temporary) = open_cache(&cfg)?;
    let cfg = Arc::new(cfg);
    let reported = Arc::new(AtomicU64::new(0));
    let claimed = Arc::new(AtomicU64::new(0));
    let holdings = Arc::new(Holdings::default());
    // Builds and checks run on a task of their own, never between a task's
    // batches: a build that never ends (its limit is 10 minutes) holds no game.
    let builds_idle = Arc::new(std::sync::atomic::AtomicBool::new(
        cfg.uploads.runtimes.is_empty(),
    ));
    let builder = (!cfg.uploads.runtimes.is_empty()).then(|| {
        let (cfg, cache, holdings, idle) =
            (cfg.clone(), cache.clone(), holdings.clone(), builds_idle.clone());
        tokio::spawn(async move { build_loop(&cfg, &cache, &holdings, &idle).await })
    });
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..cfg.concurrency.max(1) {
        let (cfg, reported, claimed, cache, holdings, builds_idle) = (
            cfg.clone(),
            reported.clone(),
            claimed.clone(),
            cache.clone(),
            holdings.clone(),
            builds_idle.clone(),
        );
        tasks.spawn(
            async move { work_loop(k, &cfg, &cache, &reported, &claimed, &holdings, &builds_idle).await },
        );
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
    let finished = supervise(&mut tasks, shutdown, &holdings, cfg.stop_within).await;
    holdings.stop();
    tasks.abort_all();
    if let Some(builder) = builder {
        // Stopping, it gives its build's lease back with the rest, below.
        builder.abort();
        let _ = builder.await;
    }
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

/// The cache of uploaded bots' folders: the host's (`--cache-dir`), or one of
/// this run's own, removed with the temporary folder it returns.
fn open_cache(
    cfg: &WorkerConfig,
) -> Result<(Arc<artifacts::ArtifactCache>, Option<tempfile::TempDir>), WorkerError> {
    let (cache_dir, temporary) = match &cfg.uploads.cache_dir {
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
    Ok((cache, temporary))
}

/// Waits for the tasks to end, one to fail, or `shutdown`. Asked to stop, no
/// task leases again; the games in hand go on for `stop_within` to be played
/// and reported (what is still held is then given back by the caller, as it
/// is when a task fails).
async fn supervise(
    tasks: &mut tokio::task::JoinSet<Result<(), WorkerError>>,
    shutdown: impl Future<Output = ()>,
    holdings: &Holdings,
    stop_within: Duration,
) -> Result<(), WorkerError> {
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
                None => return Ok(()),
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => return Err(e),
                Some(Err(e)) => return Err(WorkerError::Task(e.to_string())),
            },
            () = &mut shutdown, if stop_by.is_none() => {
                holdings.stop();
                tracing::info!(
                    groups = holdings.groups_held(),
                    "stopping: no more leases; the games in hand have {stop_within:?} to finish"
                );
                stop_by = Some(tokio::time::Instant::now() + stop_within);
            }
            () = out_of_time => return Ok(()),
        }
    }
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

/// Most groups a task holds in one wave, leased a batch at a time (as the
/// runner's waves grow): between the waves of mirrored groups the task's bots
/// are quit, so a larger wave starts them fewer times.
const MAX_GROUPS_HELD: usize = crate::app::MAX_BATCH;

/// The first and the longest wait before a task tries the server again
/// ([`Backoff`]): the first try again within half a second, then doubling, so
/// that ten thousand workers waiting out a long restart ask about once every
/// ten seconds each, and not in step.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MOST: Duration = Duration::from_secs(10);

/// How long a task's wave may grow: its groups are reported when it ends, so
/// this is what growing adds to the time a game's result (and a suspension, a
/// new version's first rating) takes to reach the server; between two waves,
/// the first task builds an author's version.
const GROWING: Duration = Duration::from_secs(2);

/// The worker's builds: authors' new versions built and checked one after
/// another, each contained and capped like a bot (`--bot-cores`), on a task of
/// their own. `idle` says that the last look found nothing to build (the play
/// tasks' "idle" waits for it).
async fn build_loop(
    cfg: &WorkerConfig,
    cache: &Arc<artifacts::ArtifactCache>,
    holdings: &Holdings,
    idle: &std::sync::atomic::AtomicBool,
) {
    let mut client = None;
    let mut backoff = Backoff::new(RETRY_FIRST, RETRY_MOST);
    while !holdings.stopping() {
        let c = match Api::held(&mut client, cfg).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("cannot reach {} to build: {e}; retrying", cfg.server);
                holdings.nap(backoff.next_wait()).await;
                continue;
            }
        };
        match prep::prep_once(c, cfg, cache, holdings).await {
            Ok(true) => {
                backoff.reset();
                idle.store(false, Ordering::Relaxed);
            }
            Ok(false) => {
                backoff.reset();
                idle.store(true, Ordering::Relaxed);
                holdings.nap(BUILD_LOOK).await;
            }
            Err(e) => {
                tracing::warn!("cannot build and check: {e}; retrying");
                client = None;
                holdings.nap(backoff.next_wait()).await;
            }
        }
    }
}

/// How often the build task asks for a version to build when there was none.
const BUILD_LOOK: Duration = Duration::from_millis(500);

async fn work_loop(
    k: usize,
    cfg: &WorkerConfig,
    cache: &Arc<artifacts::ArtifactCache>,
    reported: &AtomicU64,
    claimed: &AtomicU64,
    holdings: &Holdings,
    builds_idle: &std::sync::atomic::AtomicBool,
) -> Result<(), WorkerError> {
    let mut task = Task {
        cfg,
        cache,
        claimed,
        reported,
        holdings,
        client: None,
        player: PlayThread::for_task(k, cfg)?,
        batch: cfg.batch.clamp(1, crate::app::MAX_BATCH) as u64,
        backoff: Backoff::new(RETRY_FIRST, RETRY_MOST),
    };
    loop {
        if holdings.stopping() {
            return Ok(());
        }
        let want = claim(claimed, cfg.max_groups, task.batch);
        if want == 0 {
            return Ok(());
        }
        let Some(leased) = task.lease(want, Patience::UntilLeased).await? else {
            continue;
        };
        holdings.leased(&leased.groups);
        if leased.groups.is_empty() {
            let builds_idle = builds_idle.load(Ordering::Relaxed);
            if !task.wait_for_work(&leased, builds_idle).await {
                return Ok(());
            }
            continue;
        }
        task.play_batch(leased.groups).await?;
    }
}

/// One of the worker's tasks: what it leases, plays and reports with.
struct Task<'a> {
    cfg: &'a WorkerConfig,
    cache: &'a Arc<artifacts::ArtifactCache>,
    /// Groups claimed by all tasks together (against `--max-groups`).
    claimed: &'a AtomicU64,
    /// Groups the server took from all tasks together.
    reported: &'a AtomicU64,
    holdings: &'a Holdings,
    /// Its connection, made when first needed and again after a failure.
    client: Option<Api>,
    player: PlayThread,
    /// Groups asked for in one lease.
    batch: u64,
    /// The wait before the next try when the server cannot be reached.
    backoff: Backoff,
}

impl Task<'_> {
    /// Asks the server for up to `want` groups (claimed already; what is not leased
    /// is given back to `claimed`). `None`: no answer (with [`Patience::Once`]).
    ///
    /// # Errors
    /// A token or certificate the server refuses.
    async fn lease(&mut self, want: u64, patience: Patience) -> Result<Option<LeasedGroups>, WorkerError> {
        loop {
            if self.holdings.stopping() {
                self.unclaim(want, 0);
                return Ok(None);
            }
            match self.try_lease(want).await? {
                Tried::Leased(r) => {
                    self.backoff.reset();
                    self.unclaim(want, r.groups.len() as u64);
                    return Ok(Some(r));
                }
                Tried::Failed if patience == Patience::Once => {
                    self.unclaim(want, 0);
                    return Ok(None);
                }
                Tried::Failed => self.holdings.nap(self.backoff.next_wait()).await,
            }
        }
    }

    /// After a lease that got no group: waits as the server asked. Whether to
    /// go on: not when idle with `exit_when_idle`, idle meaning nothing left
    /// anywhere (a group another worker holds may still come back when its
    /// lease runs out) and nothing to build (`builds_idle`: a version being
    /// built may bring groups).
    async fn wait_for_work(&self, leased: &LeasedGroups, builds_idle: bool) -> bool {
        if self.cfg.exit_when_idle
            && builds_idle
            && !leased.groups_in_progress
            && leased.retry_after.is_none()
        {
            return false;
        }
        self.player.rest();
        let wait = leased
            .retry_after
            .map_or(Duration::from_millis(500), |d| d.min(Duration::from_secs(5)));
        self.holdings.nap(wait).await;
        true
    }

    /// Plays a batch just leased (and more while it grows) and reports it; a
    /// batch whose bots' folders cannot be had is not played (its leases run
    /// out, and the server deals its groups again).
    async fn play_batch(&mut self, groups: Vec<LeasedGroup>) -> Result<(), WorkerError> {
        let mut held = Held::default();
        if let Err(e) = held.fetch(&groups, &mut self.client, self.cache).await {
            tracing::error!("not playing a batch: {e}");
            self.holdings
                .reported(groups.iter().map(|g| (g.lease.clone(), g.group_id)));
            self.holdings.nap(Duration::from_millis(500)).await;
            return Ok(());
        }
        let mut renewals = Renewals::new(&groups);
        self.play_growing(&mut held, &mut renewals, groups).await?;
        self.report_played(held).await;
        Ok(())
    }

    /// Gives back to `claimed` what of `want` groups was not leased (`got`).
    fn unclaim(&self, want: u64, got: u64) {
        if self.cfg.max_groups.is_some() && got < want {
            self.claimed.fetch_sub(want - got, Ordering::Relaxed);
        }
    }

    /// One try at [`Task::lease`]: connects if need be, then leases.
    ///
    /// # Errors
    /// A token or certificate the server refuses.
    async fn try_lease(&mut self, want: u64) -> Result<Tried, WorkerError> {
        let cfg = self.cfg;
        let c = match Api::held(&mut self.client, cfg).await {
            Ok(c) => c,
            Err(e @ WorkerError::Certificate(_)) => return Err(e),
            Err(e) => {
                tracing::warn!("cannot reach {}: {e}; retrying", cfg.server);
                return Ok(Tried::Failed);
            }
        };
        match c.lease_groups(want, &cfg.uploads.runtimes).await {
            Ok(leased) => Ok(Tried::Leased(leased)),
            Err(CallError::Token(why)) => Err(WorkerError::Token(format!("the server refuses it: {why}"))),
            Err(CallError::Certificate(why)) => Err(WorkerError::Certificate(why)),
            Err(CallError::Answer(why)) => Err(WorkerError::Lease(why)),
            Err(e) => {
                tracing::warn!("lease failed: {e}; retrying");
                self.client = None;
                Ok(Tried::Failed)
            }
        }
    }

    /// Plays rotation 0 of `first`, then of more batches: for at most `GROWING` (and half a lease period, so the
    /// later rotations still fit well inside the leases' lives), and not past a
    /// game in which a seat faulted, so the server hears of a broken bot (and
    /// suspends it) as soon as it would from one batch. Then the other
    /// rotations of every group held.
    async fn play_growing(
        &mut self,
        held: &mut Held,
        renewals: &mut Renewals,
        first: Vec<LeasedGroup>,
    ) -> Result<(), WorkerError> {
        let grow_until = tokio::time::Instant::now() + GROWING.min(renewals.period / 2);
        let mut wave = held
            .play(&self.player, first, 0, renewals, self.cfg, &mut self.client)
            .await?;
        while !wave.faulted
            && !self.holdings.stopping()
            && held.leases.len() + self.batch as usize <= MAX_GROUPS_HELD
            && tokio::time::Instant::now() < grow_until
        {
            let want = claim(self.claimed, self.cfg.max_groups, self.batch);
            if want == 0 {
                break;
            }
            let more = match self.lease(want, Patience::Once).await? {
                Some(more) if !more.groups.is_empty() => more,
                _ => break,
            };
            self.holdings.leased(&more.groups);
            if let Err(e) = held.fetch(&more.groups, &mut self.client, self.cache).await {
                tracing::error!("not playing a batch: {e}");
                self.holdings
                    .reported(more.groups.iter().map(|g| (g.lease.clone(), g.group_id)));
                break;
            }
            renewals.add(&more.groups);
            wave = held
                .play(&self.player, more.groups, 0, renewals, self.cfg, &mut self.client)
                .await?;
        }
        let rotations = held.leases.iter().map(|l| l.entrants.len()).max().unwrap_or(0);
        for rotation in 1..rotations {
            let all = held.leases.clone();
            held.play(&self.player, all, rotation, renewals, self.cfg, &mut self.client)
                .await?;
        }
        Ok(())
    }

    /// Reports what `held` played, in calls of a bounded size, and counts what
    /// the server took.
    async fn report_played(&mut self, held: Held) {
        let Held {
            leases, played, pins, ..
        } = held;
        drop(pins);
        // The leases are good for a period from their last renewal.
        let give_up = tokio::time::Instant::now()
            + leases
                .iter()
                .map(|g| g.period)
                .min()
                .unwrap_or_default()
                .mul_f64(2.0 / 3.0)
            + Duration::from_secs(5);
        let reports: Vec<GroupReport> = leases
            .into_iter()
            .zip(played)
            .map(|(lease, played)| GroupReport {
                lease: lease.lease,
                group_id: lease.group_id,
                records: played.records,
                logs: played.logs,
            })
            .collect();
        for call in report_calls(reports) {
            let sent: Vec<(String, GroupId)> = call.iter().map(|r| (r.lease.clone(), r.group_id)).collect();
            let n = report(self.cfg, &mut self.client, call, give_up).await;
            self.reported.fetch_add(n, Ordering::Relaxed);
            crate::metrics::worker().groups_reported.inc_by(n);
            // Taken, refused or dropped: nothing of these is held any more.
            self.holdings.reported(sent);
        }
    }
}

/// What one try at a lease came to.
enum Tried {
    /// The server's answer.
    Leased(LeasedGroups),
    /// The server could not be reached, or failed: try again after a nap
    /// (with [`Patience::UntilLeased`]).
    Failed,
}

/// How hard [`Task::lease`] tries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Patience {
    /// Through a server restarting or unreachable (and, for the first task,
    /// building authors' new versions first).
    UntilLeased,
    /// One call: a task that holds groups already plays them rather than wait.
    Once,
}
