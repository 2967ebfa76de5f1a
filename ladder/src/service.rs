//! `ladder serve`: the gRPC API (admin, reads, worker leases) and a read-only web
//! page of standings and recent games with its JSON.
//!
//! Workers are not trusted: every reported record is checked against the lease
//! (game, options, seed, seats, bots, rotations) and replayed move by move; one that
//! does not reproduce is refused and nothing of the group is stored.

use crate::cache::StandingsCache;
use crate::schedule::{self, Candidate};
use crate::store::{
    BotRow, BotStatus, CompetitionRow, CompetitionStatus, Completion, GroupStatus, NewCompetition, SeatStart,
    Store, StoreError, WorkerRow,
};
use crate::tournament::{limits_from, new_game};
use proto::ladder::ladder_server::{Ladder, LadderServer};
use proto::ladder::*;
use referee::fault::FaultKind;
use referee::record::GameRecord;
use referee::spec::BotSpec;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tonic::{Request, Response, Status};

/// Largest message the service takes: a report (a worker splits a batch to fit,
/// `worker::REPORT_BATCH_BYTES`). What a record can hold is
/// capped by the referee (`docs/security.md` has the sum: a group of the longest
/// games with every bot flooding `info` stays under a tenth of this), so the limit
/// is never what stops an honest worker; reports also travel gzip-compressed.
pub const MAX_REPORT_BYTES: usize = 16 << 20;

/// Most groups leased or reported in one call.
pub const MAX_BATCH: usize = 64;

/// Longest a lease that found no group ready waits for the background scheduler's
/// next look before it answers "ask again" (`retry_after_ms`). Leases never
/// schedule themselves: hundreds of them doing so at once queued behind each
/// other for seconds (lease p99 6.3 s at 500 workers).
pub const LEASE_WAIT: Duration = Duration::from_millis(250);

/// What a worker is told to wait when no group is ready yet but more are coming.
pub const RETRY_AFTER: Duration = Duration::from_millis(100);

/// Service settings.
#[derive(Clone)]
pub struct ServiceConfig {
    /// Token for admin calls.
    pub admin_token: String,
    /// How long a worker holds a lease.
    pub lease: Duration,
    /// The server's certificate and key for TLS; plain HTTP/2 without.
    pub tls: Option<tonic::transport::Identity>,
    /// Suspend a bot after this many reported games in a row in which it could
    /// not start or shake hands (0: never).
    pub suspend_after: u32,
}

/// Default of [`ServiceConfig::suspend_after`].
pub const SUSPEND_AFTER: u32 = 5;

impl std::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token or the key.
        f.debug_struct("ServiceConfig")
            .field("lease", &self.lease)
            .field("tls", &self.tls.is_some())
            .field("suspend_after", &self.suspend_after)
            .finish_non_exhaustive()
    }
}

/// Who is calling: the admin, or a worker known by its own token.
#[derive(Debug, Clone)]
enum Caller {
    Admin,
    Worker(WorkerRow),
}

/// The gRPC service.
pub struct LadderService {
    store: Store,
    cfg: Arc<ServiceConfig>,
    /// Standings per competition, shared with the web page.
    standings: Arc<StandingsCache>,
    /// Schedules groups: in the background, and for a lease that finds none.
    scheduler: Arc<Scheduler>,
    /// Replays at once: one per core.
    replays: tokio::sync::Semaphore,
    /// Competitions and bots by key (`LadderService::catalog`).
    catalog: std::sync::Mutex<Arc<Catalog>>,
    /// Worker calls (leases and reports) being served now.
    calls: Arc<std::sync::atomic::AtomicUsize>,
    /// Workers by their token's hash, with when each was read.
    tokens: std::sync::Mutex<TokenCache>,
    /// Past this many worker calls at once, a lease is told to come back
    /// (`retry_after_ms`) rather than queued: see [`LadderService::lease_groups`].
    calls_max: usize,
}

/// How long a worker's token is trusted without reading the store again. A
/// token revoked through this server stops at once; through another server
/// sharing the database, within this long.
pub const TOKEN_CACHE: Duration = Duration::from_secs(2);

/// Workers whose tokens were seen lately, by the token's hash.
#[derive(Default)]
struct TokenCache {
    by_hash: HashMap<String, (WorkerRow, std::time::Instant)>,
    /// When entries older than [`TOKEN_CACHE`] were last dropped.
    swept: Option<std::time::Instant>,
}

impl TokenCache {
    fn get(&self, hash: &str) -> Option<&WorkerRow> {
        self.by_hash
            .get(hash)
            .filter(|(_, at)| at.elapsed() < TOKEN_CACHE)
            .map(|(w, _)| w)
    }

    fn insert(&mut self, hash: String, w: WorkerRow) {
        let now = std::time::Instant::now();
        if self.swept.is_none_or(|t| now.duration_since(t) >= TOKEN_CACHE) {
            self.by_hash
                .retain(|_, (_, at)| now.duration_since(*at) < TOKEN_CACHE);
            self.swept = Some(now);
        }
        self.by_hash.insert(hash, (w, now));
    }

    /// About how many workers asked within the last [`TOKEN_CACHE`] or two.
    fn workers(&self) -> usize {
        self.by_hash.len()
    }
}

/// One worker call being served; counted down when dropped.
struct CallGuard(Arc<std::sync::atomic::AtomicUsize>);

impl CallGuard {
    fn enter(calls: &Arc<std::sync::atomic::AtomicUsize>) -> (CallGuard, usize) {
        let now = calls.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        (CallGuard(calls.clone()), now)
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Worker calls served at once per database connection before leases are told
/// to come back: enough to keep every connection and replay permit busy, few
/// enough that a call never waits long behind the others.
pub const CALLS_PER_CONNECTION: usize = 1;

/// Shortest wait a busy server tells a lease to wait (then up to as much again,
/// at random).
pub const BUSY_RETRY_MIN: Duration = Duration::from_millis(200);

/// Longest base wait a busy server tells a lease.
pub const BUSY_RETRY_MAX: Duration = Duration::from_secs(3);

/// How often, per second, the whole fleet should ask a busy server again.
pub const BUSY_ASKS_PER_S: u64 = 250;

/// Competitions and bots by key.
#[derive(Debug, Default)]
struct Catalog {
    competitions: HashMap<i64, CompetitionRow>,
    bots: HashMap<i64, BotRow>,
}

fn status_of(e: StoreError) -> Status {
    match e {
        StoreError::Conflict(m) => Status::already_exists(m),
        StoreError::NotFound(m) => Status::not_found(m),
        other => Status::internal(other.to_string()),
    }
}

/// The SHA-256 of a token, in hex: what the store keeps of a worker's token.
pub fn token_hash(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new worker token: 256 bits from the operating system's random source, in hex.
///
/// # Errors
/// The operating system has no random source to give.
pub fn new_token() -> Result<String, Status> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Status::internal(format!("no random source: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn bearer<T>(req: &Request<T>) -> Result<&str, Status> {
    let Some(value) = req.metadata().get("authorization") else {
        return Err(Status::unauthenticated(
            "missing authorization metadata: send `authorization: Bearer <token>`",
        ));
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| Status::unauthenticated("authorization is not `Bearer <token>`"))
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && !a.is_empty()
        && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn valid_name(what: &str, name: &str) -> Result<(), Status> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.#".contains(c))
    {
        return Err(Status::invalid_argument(format!(
            "{what} {name:?}: use 1 to 64 letters, digits, '_', '-', '.', '#'"
        )));
    }
    Ok(())
}

impl LadderService {
    /// Who sent `req`: the admin token, or a worker's token that is not revoked.
    async fn caller<T>(&self, req: &Request<T>) -> Result<Caller, Status> {
        let token = bearer(req)?;
        if constant_time_eq(token, &self.cfg.admin_token) {
            return Ok(Caller::Admin);
        }
        // Looked up by its hash: the store never holds a token, and a lookup by
        // hash gives away nothing of a token's text through timing. Known tokens
        // are kept for TOKEN_CACHE, so a busy fleet's calls cost no query each;
        // a revocation on this server forgets them at once.
        let hash = token_hash(token);
        if let Ok(cache) = self.tokens.lock()
            && let Some(w) = cache.get(&hash)
        {
            return Ok(Caller::Worker(w.clone()));
        }
        match self.store.worker_by_token_hash(&hash).await.map_err(status_of)? {
            Some(w) => {
                if let Ok(mut cache) = self.tokens.lock() {
                    cache.insert(hash, w.clone());
                }
                Ok(Caller::Worker(w))
            }
            None => Err(Status::unauthenticated("unknown or revoked token")),
        }
    }

    /// Forgets every known token: after a revocation.
    fn forget_tokens(&self) {
        if let Ok(mut cache) = self.tokens.lock() {
            *cache = TokenCache::default();
        }
    }

    async fn need_admin<T>(&self, req: &Request<T>) -> Result<(), Status> {
        match self.caller(req).await? {
            Caller::Admin => Ok(()),
            Caller::Worker(_) => Err(Status::permission_denied("this call needs the admin token")),
        }
    }

    async fn need_worker<T>(&self, req: &Request<T>) -> Result<WorkerRow, Status> {
        match self.caller(req).await? {
            Caller::Worker(w) => Ok(w),
            Caller::Admin => Err(Status::permission_denied(
                "leases and reports need a worker's own token (ladder admin add-worker), so every group is someone's",
            )),
        }
    }

    /// Every worker with its audit (`crate::audit`).
    async fn worker_infos(&self) -> Result<Vec<WorkerInfo>, Status> {
        let workers = self.store.workers().await.map_err(status_of)?;
        let games = self.store.reported_games().await.map_err(status_of)?;
        let ids: Vec<i64> = workers.iter().map(|w| w.id).collect();
        let audits = crate::audit::audit(&ids, &games);
        Ok(workers
            .into_iter()
            .zip(audits)
            .map(|(w, a)| WorkerInfo {
                name: w.name,
                revoked: w.revoked,
                groups: a.groups,
                games: a.games,
                faults: a
                    .kinds
                    .into_iter()
                    .map(|k| FaultCount {
                        kind: k.kind,
                        games: k.games,
                        rate: k.rate,
                        others_rate: k.others_rate,
                        z: k.z,
                    })
                    .collect(),
                flag: a.flag,
            })
            .collect())
    }

    /// A service over a store, with the standings cache it shares with the page.
    pub fn new(store: Store, cfg: ServiceConfig, standings: Arc<StandingsCache>) -> LadderService {
        LadderService {
            store: store.clone(),
            cfg: Arc::new(cfg),
            standings: standings.clone(),
            scheduler: Arc::new(Scheduler {
                store: store.clone(),
                standings: standings.clone(),
                tallies: Mutex::new(HashMap::new()),
                wanted: std::sync::atomic::AtomicU64::new(0),
                wake: tokio::sync::Notify::new(),
                looks: tokio::sync::watch::Sender::new(Look::default()),
            }),
            catalog: std::sync::Mutex::new(Arc::default()),
            replays: tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, usize::from)),
            calls: Arc::default(),
            tokens: std::sync::Mutex::default(),
            calls_max: (CALLS_PER_CONNECTION * store.max_connections() as usize).min(4),
        }
    }

    async fn competition_info(&self, c: &CompetitionRow) -> Result<CompetitionInfo, Status> {
        let games = self.store.game_count(c.id).await.map_err(status_of)?;
        let bots = self.store.entrants(c.id).await.map_err(status_of)?;
        Ok(CompetitionInfo {
            name: c.name.clone(),
            game: c.game.clone(),
            options: c.options.clone(),
            seats: c.seats as u32,
            status: c.status.to_string(),
            games: games as u64,
            max_games: c.max_games as u64,
            bots: bots.into_iter().map(|b| b.name).collect(),
        })
    }

    async fn competition_named(&self, name: &str) -> Result<CompetitionRow, Status> {
        self.store
            .competition(name)
            .await
            .map_err(status_of)?
            .ok_or_else(|| Status::not_found(format!("no competition named {name:?}")))
    }

    /// The competitions and bots with these keys (and all others known). Their
    /// rows never change once made (a bot registered again must match; a
    /// competition's game, options, seed and time are fixed), so they are kept,
    /// and read again only when a key is missing: a row another server made.
    async fn catalog(&self, competitions: &[i64], bots: &[i64]) -> Result<Arc<Catalog>, Status> {
        let known = self
            .catalog
            .lock()
            .map_err(|_| Status::internal("catalog poisoned"))?
            .clone();
        if competitions.iter().all(|id| known.competitions.contains_key(id))
            && bots.iter().all(|id| known.bots.contains_key(id))
        {
            return Ok(known);
        }
        let fresh = Arc::new(Catalog {
            competitions: self
                .store
                .competitions()
                .await
                .map_err(status_of)?
                .into_iter()
                .map(|c| (c.id, c))
                .collect(),
            bots: self
                .store
                .bots()
                .await
                .map_err(status_of)?
                .into_iter()
                .map(|b| (b.id, b))
                .collect(),
        });
        *self
            .catalog
            .lock()
            .map_err(|_| Status::internal("catalog poisoned"))? = fresh.clone();
        Ok(fresh)
    }

    /// A bot as the admin is told of it.
    async fn bot_info(&self, b: &BotRow) -> Result<BotInfo, Status> {
        let all = self.store.bots().await.map_err(status_of)?;
        let names: HashMap<i64, &str> = all.iter().map(|x| (x.id, x.name.as_str())).collect();
        Ok(bot_info(b, &names))
    }

    /// Enters an active bot in every open competition of its game.
    async fn enter_open_competitions(&self, bot: &BotRow) -> Result<(), Status> {
        if bot.status != BotStatus::Active {
            return Ok(());
        }
        for c in self.store.competitions().await.map_err(status_of)? {
            if c.status == CompetitionStatus::Open && c.game == bot.game {
                self.store.add_entrant(c.id, bot.id).await.map_err(status_of)?;
            }
        }
        Ok(())
    }

    /// Leases up to `max` groups to `worker` under one token. The background
    /// scheduler keeps groups ready; a lease that finds none wakes it and waits
    /// (at most [`LEASE_WAIT`]) for its next look. "No work" without a
    /// `retry_after_ms` means the scheduler looked and could schedule nothing.
    async fn lease_groups(&self, worker: &WorkerRow, max: usize) -> Result<LeaseGroupsReply, Status> {
        let max = max.clamp(1, MAX_BATCH);
        // Admission: when the server is already serving as many worker calls as
        // its database can take, queueing one more lease only makes every call
        // slower (the closed loop of a fleet of workers piles up here). It is told
        // to come back instead, after a wait that grows with the load, jittered
        // so the fleet does not come back at once. Reports are never turned away:
        // their games are played.
        let (call, in_flight) = CallGuard::enter(&self.calls);
        if in_flight > self.calls_max {
            // Longer the more workers are asking (those whose tokens were seen
            // lately), so that the fleet's asking again stays at about
            // BUSY_ASKS_PER_S however large it is; never past a few seconds,
            // short against a lease of minutes.
            let workers = self.tokens.lock().map_or(1, |c| c.workers()) as u64;
            let base = (workers * 1000 / BUSY_ASKS_PER_S).clamp(
                BUSY_RETRY_MIN.as_millis() as u64,
                BUSY_RETRY_MAX.as_millis() as u64,
            );
            let jitter = referee::seed::os_seed() % base;
            return Ok(LeaseGroupsReply {
                groups: Vec::new(),
                groups_in_progress: true,
                retry_after_ms: (base + jitter) as u32,
            });
        }
        let token = new_token()?;
        let lease_ms = self.cfg.lease.as_millis() as i64;
        let lease_now = |want: usize| {
            let now = crate::store::now_ms();
            self.store
                .lease_many(&worker.name, &token, now, now + lease_ms, want as i64)
        };
        let mut groups = lease_now(max).await.map_err(status_of)?;
        self.scheduler
            .wanted
            .fetch_add(max as u64, std::sync::atomic::Ordering::Relaxed);
        // Subscribed before the wake, so the look the wake causes is not missed.
        let mut looked = self.scheduler.looks.subscribe();
        if groups.len() < max {
            self.scheduler.wake.notify_one();
        }
        let mut retry_after_ms = 0;
        if groups.is_empty() {
            // Waiting for the scheduler is not serving.
            drop(call);
            let look = tokio::time::timeout(LEASE_WAIT, looked.changed()).await;
            match look {
                Ok(Ok(())) => {
                    groups = lease_now(max).await.map_err(status_of)?;
                    let could_schedule = looked.borrow().could_schedule;
                    if groups.is_empty() && could_schedule {
                        retry_after_ms = RETRY_AFTER.as_millis() as u32;
                    }
                }
                // The scheduler is still at work (or stopping): ask again soon.
                Ok(Err(_)) | Err(_) => retry_after_ms = RETRY_AFTER.as_millis() as u32,
            }
        }
        if groups.is_empty() {
            let in_progress = self.store.groups_in_progress().await.map_err(status_of)?;
            return Ok(LeaseGroupsReply {
                groups: Vec::new(),
                groups_in_progress: in_progress > 0,
                retry_after_ms,
            });
        }
        let comp_ids: Vec<i64> = groups.iter().map(|g| g.competition_id).collect();
        let bot_ids: Vec<i64> = groups.iter().flat_map(|g| g.bots.iter().copied()).collect();
        let catalog = self.catalog(&comp_ids, &bot_ids).await?;
        let (competitions, bots) = (&catalog.competitions, &catalog.bots);
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            let c = competitions
                .get(&g.competition_id)
                .ok_or_else(|| Status::internal(format!("group {} has no competition", g.id)))?;
            tracing::debug!(worker = %worker.name, group = g.id, competition = %c.name, "group leased");
            out.push(LeaseReply {
                has_work: true,
                lease: token.clone(),
                group_id: g.id,
                competition: c.name.clone(),
                game: c.game.clone(),
                options: c.options.clone(),
                seed: g.seed as u64,
                group_no: g.group_no as u64,
                entrants: g
                    .bots
                    .iter()
                    .map(|id| {
                        let bot = bots.get(id);
                        Entrant {
                            bot: bot.map(|b| b.name.clone()).unwrap_or_default(),
                            spec: bot.map(|b| b.spec.clone()).unwrap_or_default(),
                            env: bot
                                .map(|b| {
                                    b.env
                                        .iter()
                                        .map(|(key, value)| EnvVar {
                                            key: key.clone(),
                                            value: value.clone(),
                                        })
                                        .collect()
                                })
                                .unwrap_or_default(),
                        }
                    })
                    .collect(),
                time: c.time.clone(),
                expires_in_ms: lease_ms as u64,
                groups_in_progress: false,
                retry_after_ms: 0,
            });
        }
        tracing::info!(worker = %worker.name, groups = out.len(), "groups leased");
        Ok(LeaseGroupsReply {
            groups: out,
            groups_in_progress: false,
            retry_after_ms: 0,
        })
    }

    /// Judges and stores several groups' reports: each checked against its lease
    /// and replayed (on the blocking pool, at most one batch per core at once),
    /// then all that pass stored in one transaction. One verdict per report.
    async fn report_groups(
        &self,
        worker: &WorkerRow,
        reports: Vec<ReportRequest>,
    ) -> Result<Vec<Result<Completion, Status>>, Status> {
        if reports.len() > MAX_BATCH {
            return Err(Status::invalid_argument(format!(
                "{} reports in one call: send at most {MAX_BATCH}",
                reports.len()
            )));
        }
        let _call = CallGuard::enter(&self.calls);
        let ids: Vec<i64> = reports.iter().map(|r| r.group_id).collect();
        let groups: HashMap<i64, crate::store::GroupRow> = self
            .store
            .groups_by_id(&ids)
            .await
            .map_err(status_of)?
            .into_iter()
            .map(|g| (g.id, g))
            .collect();
        let comp_ids: Vec<i64> = groups.values().map(|g| g.competition_id).collect();
        let bot_ids: Vec<i64> = groups.values().flat_map(|g| g.bots.iter().copied()).collect();
        let catalog = self.catalog(&comp_ids, &bot_ids).await?;
        // Replaying is CPU work: on the blocking pool, not an executor thread, and
        // no more batches at once than there are cores.
        let _permit = self
            .replays
            .acquire()
            .await
            .map_err(|_| Status::unavailable("the server is stopping"))?;
        let checked = tokio::task::spawn_blocking(move || {
            reports
                .into_iter()
                .map(|r| {
                    let group = groups
                        .get(&r.group_id)
                        .ok_or_else(|| Status::not_found(format!("no group {}", r.group_id)))?;
                    let c = catalog
                        .competitions
                        .get(&group.competition_id)
                        .ok_or_else(|| Status::internal(format!("group {} has no competition", group.id)))?;
                    let (games, starts) = Self::verify(c, group, &catalog.bots, &r.records)
                        .map_err(|e| Status::new(e.code(), format!("group {}: {}", group.id, e.message())))?;
                    Ok((r.group_id, r.lease, games, starts))
                })
                .collect::<Vec<Result<_, Status>>>()
        })
        .await
        .map_err(|e| Status::internal(format!("the replay failed: {e}")))?;
        drop(_permit);
        let passed: Vec<crate::store::LeaseReport<'_>> = checked
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|(group_id, lease, games, starts)| crate::store::LeaseReport {
                group_id: *group_id,
                token: lease,
                games,
                starts,
            })
            .collect();
        let (stored, suspended) = self
            .store
            .complete_leases(&passed, Some(worker.id), i64::from(self.cfg.suspend_after))
            .await
            .map_err(status_of)?;
        let mut stored = stored.into_iter();
        let mut out = Vec::with_capacity(checked.len());
        for r in &checked {
            out.push(match r {
                Err(e) => {
                    tracing::warn!(worker = %worker.name, "report refused: {}", e.message());
                    Err(e.clone())
                }
                Ok((group_id, ..)) => match stored.next() {
                    Some(Ok(Completion::LeaseLost)) => Err(Status::failed_precondition(format!(
                        "the lease on group {group_id} expired and the group went to another worker"
                    ))),
                    Some(Ok(done)) => Ok(done),
                    Some(Err(e)) => Err(status_of(e)),
                    None => Err(Status::internal("no outcome for a report")),
                },
            });
        }
        let recorded = out
            .iter()
            .filter(|r| matches!(r, Ok(Completion::Recorded)))
            .count();
        tracing::info!(worker = %worker.name, groups = recorded, "groups recorded");
        for bot in &suspended {
            tracing::warn!(bot = %bot.name, "bot suspended: it could not start or shake hands in {} reported games in a row", self.cfg.suspend_after);
        }
        if !suspended.is_empty() {
            self.scheduler.forget().await;
        }
        Ok(out)
    }

    /// Checks a group's reported records against what was leased and replays each.
    fn verify(
        c: &CompetitionRow,
        group: &crate::store::GroupRow,
        bots: &HashMap<i64, BotRow>,
        texts: &[String],
    ) -> Result<(Vec<crate::store::NewGame>, Vec<SeatStart>), Status> {
        let n = c.seats as usize;
        if texts.len() != n {
            return Err(Status::invalid_argument(format!(
                "a group of {n}-seat games has {n} records (one per rotation); got {}",
                texts.len()
            )));
        }
        let mut games = Vec::with_capacity(n);
        let mut starts = Vec::with_capacity(n * n);
        let mut seen = vec![false; n];
        for (k, text) in texts.iter().enumerate() {
            let bad = |why: String| Status::invalid_argument(format!("record {k}: {why}"));
            let mut rec: GameRecord =
                serde_json::from_str(text).map_err(|e| bad(format!("does not parse: {e}")))?;
            let pairing = rec.pairing.ok_or_else(|| bad("has no pairing".into()))?;
            let r = pairing.rotation;
            if pairing.group != group.group_no as u64 || r >= n || seen[r] {
                return Err(bad(format!(
                    "pairing (group {}, rotation {r}) is not an unplayed rotation of group {}",
                    pairing.group, group.group_no
                )));
            }
            seen[r] = true;
            if rec.game != c.game || rec.options != c.options || rec.seed != group.seed as u64 {
                return Err(bad(format!(
                    "is {} {:?} seed {}, but the lease is {} {:?} seed {}",
                    rec.game, rec.options, rec.seed, c.game, c.options, group.seed
                )));
            }
            if rec.start_position.is_some() || rec.seats.len() != n {
                return Err(bad("has another start or number of seats than leased".into()));
            }
            let seat_bots = referee::seating::seated(&group.bots, r);
            for (s, id) in seat_bots.iter().enumerate() {
                let bot = bots
                    .get(id)
                    .ok_or_else(|| Status::internal(format!("group names unknown bot {id}")))?;
                if rec.seats[s].spec != bot.spec
                    || rec.seats[s].entrant.as_deref().is_some_and(|e| e != bot.name)
                {
                    return Err(bad(format!("seat {s} is not {} ({})", bot.name, bot.spec)));
                }
                rec.seats[s].entrant = Some(bot.name.clone());
            }
            referee::replay::replay(&rec).map_err(|e| bad(format!("does not reproduce: {e}")))?;
            for (s, &bot) in seat_bots.iter().enumerate() {
                let failed = rec
                    .faults
                    .iter()
                    .find(|f| f.seat == s && matches!(f.kind, FaultKind::Spawn | FaultKind::Handshake));
                starts.push(SeatStart {
                    bot,
                    failure: failed.map(|f| format!("{}: {}", f.kind, f.detail)),
                });
            }
            games.push(new_game(c.id, group.id, r, seat_bots, &rec));
        }
        Ok((games, starts))
    }
}

#[tonic::async_trait]
impl Ladder for LadderService {
    async fn add_worker(&self, req: Request<AddWorkerRequest>) -> Result<Response<AddWorkerReply>, Status> {
        self.need_admin(&req).await?;
        let name = req.into_inner().name;
        valid_name("worker name", &name)?;
        let token = new_token()?;
        self.store
            .add_worker(&name, &token_hash(&token))
            .await
            .map_err(status_of)?;
        tracing::info!(worker = %name, "worker added");
        Ok(Response::new(AddWorkerReply { name, token }))
    }

    async fn revoke_worker(&self, req: Request<WorkerRequest>) -> Result<Response<WorkerInfo>, Status> {
        self.need_admin(&req).await?;
        let name = req.into_inner().name;
        let w = self.store.revoke_worker(&name).await.map_err(status_of)?;
        self.forget_tokens();
        tracing::info!(worker = %name, "worker revoked");
        let info = self.worker_infos().await?.into_iter().find(|i| i.name == w.name);
        Ok(Response::new(info.unwrap_or(WorkerInfo {
            name: w.name,
            revoked: true,
            ..WorkerInfo::default()
        })))
    }

    async fn list_workers(
        &self,
        req: Request<ListWorkersRequest>,
    ) -> Result<Response<ListWorkersReply>, Status> {
        self.need_admin(&req).await?;
        Ok(Response::new(ListWorkersReply {
            workers: self.worker_infos().await?,
        }))
    }

    async fn void_worker(&self, req: Request<WorkerRequest>) -> Result<Response<VoidWorkerReply>, Status> {
        self.need_admin(&req).await?;
        let name = req.into_inner().name;
        let (groups, games) = self.store.void_worker(&name).await.map_err(status_of)?;
        self.forget_tokens();
        self.standings.forget_all();
        tracing::warn!(worker = %name, groups, games, "worker voided: its groups are played again");
        Ok(Response::new(VoidWorkerReply { name, groups, games }))
    }

    async fn register_bot(&self, req: Request<RegisterBotRequest>) -> Result<Response<BotInfo>, Status> {
        self.need_admin(&req).await?;
        let r = req.into_inner();
        valid_name("bot name", &r.name)?;
        engine::game_info(&r.game).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let (spec, env) = checked_spec(&r.spec, &r.env)?;
        if let Some(old) = self.store.bot(&r.name).await.map_err(status_of)?
            && (old.game != r.game || old.spec != spec || old.env != env)
        {
            return Err(Status::already_exists(format!(
                "bot {:?} is already registered ({} {:?}); to change its command, \
                 `ladder admin update {} SPEC` makes a new version",
                old.name, old.game, old.spec, old.name
            )));
        }
        let bot = self
            .store
            .register_bot(&r.name, &r.game, &spec, &env)
            .await
            .map_err(status_of)?;
        self.enter_open_competitions(&bot).await?;
        tracing::info!(bot = %bot.name, game = %bot.game, "bot registered");
        Ok(Response::new(self.bot_info(&bot).await?))
    }

    async fn list_bots(&self, req: Request<ListBotsRequest>) -> Result<Response<ListBotsReply>, Status> {
        self.need_admin(&req).await?;
        let all = self.store.bots().await.map_err(status_of)?;
        let names: HashMap<i64, &str> = all.iter().map(|b| (b.id, b.name.as_str())).collect();
        Ok(Response::new(ListBotsReply {
            bots: all.iter().map(|b| bot_info(b, &names)).collect(),
        }))
    }

    async fn set_bot_status(&self, req: Request<SetBotStatusRequest>) -> Result<Response<BotInfo>, Status> {
        self.need_admin(&req).await?;
        let r = req.into_inner();
        let status = match r.status.as_str() {
            "active" | "enabled" | "enable" => BotStatus::Active,
            "disabled" | "disable" => BotStatus::Disabled,
            "removed" | "remove" => BotStatus::Removed,
            other => {
                return Err(Status::invalid_argument(format!(
                    "a bot's status can be set to active, disabled or removed, not {other:?}"
                )));
            }
        };
        let reason = match (status, r.reason.trim()) {
            (BotStatus::Active, _) => String::new(),
            (_, "") => format!("{status} by the admin"),
            (_, why) => format!("{status} by the admin: {}", referee::text::capped(why, 200)),
        };
        let (bot, withdrawn) = self
            .store
            .set_bot_status(&r.name, status, &reason)
            .await
            .map_err(status_of)?;
        if withdrawn > 0 {
            self.scheduler.forget().await;
        }
        tracing::info!(bot = %bot.name, status = %bot.status, withdrawn, "bot status set");
        Ok(Response::new(self.bot_info(&bot).await?))
    }

    async fn update_bot(&self, req: Request<RegisterBotRequest>) -> Result<Response<BotInfo>, Status> {
        self.need_admin(&req).await?;
        let r = req.into_inner();
        let (spec, env) = checked_spec(&r.spec, &r.env)?;
        if let Some(old) = self.store.bot(&r.name).await.map_err(status_of)?
            && !r.game.is_empty()
            && r.game != old.game
        {
            return Err(Status::invalid_argument(format!(
                "bot {:?} plays {}; a new version plays the same game (register a new bot for {})",
                old.name, old.game, r.game
            )));
        }
        let bot = self
            .store
            .update_bot(&r.name, &spec, &env)
            .await
            .map_err(status_of)?;
        self.scheduler.forget().await;
        self.enter_open_competitions(&bot).await?;
        tracing::info!(bot = %bot.name, "bot updated");
        Ok(Response::new(self.bot_info(&bot).await?))
    }

    async fn open_competition(
        &self,
        req: Request<OpenCompetitionRequest>,
    ) -> Result<Response<CompetitionInfo>, Status> {
        self.need_admin(&req).await?;
        let r = req.into_inner();
        valid_name("competition name", &r.name)?;
        let info = engine::game_info(&r.game).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let seats = if r.seats == 0 {
            *info.seats.start()
        } else {
            r.seats as usize
        };
        let game = engine::new_game(&r.game, &r.options, Some(seats), 0)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let time = match (r.tc.is_empty(), r.movetime_ms) {
            (false, 0) => format!("tc={}", r.tc),
            (false, _) => return Err(Status::invalid_argument("give tc or movetime_ms, not both")),
            (true, 0) => "movetime=5000".into(),
            (true, ms) => format!("movetime={ms}"),
        };
        limits_from(&time).map_err(Status::invalid_argument)?;
        let c = self
            .store
            .create_competition(&NewCompetition {
                name: r.name.clone(),
                game: r.game.clone(),
                options: game.options().to_vec(),
                seats: seats as i64,
                format: "ladder".into(),
                // Unless the admin gave one: 64 bits no one knows, from which every
                // group's seed derives (`engine::group_seed`).
                seed: r.seed.unwrap_or_else(referee::seed::os_seed) as i64,
                max_games: r.max_games as i64,
                time,
                config: String::new(),
            })
            .await
            .map_err(status_of)?;
        for b in self.store.bots().await.map_err(status_of)? {
            if b.game == c.game {
                self.store.add_entrant(c.id, b.id).await.map_err(status_of)?;
            }
        }
        tracing::info!(competition = %c.name, game = %c.game, "competition opened");
        Ok(Response::new(self.competition_info(&c).await?))
    }

    async fn close_competition(
        &self,
        req: Request<CloseCompetitionRequest>,
    ) -> Result<Response<CompetitionInfo>, Status> {
        self.need_admin(&req).await?;
        let name = req.into_inner().name;
        self.store.set_status(&name, false).await.map_err(status_of)?;
        let c = self.competition_named(&name).await?;
        Ok(Response::new(self.competition_info(&c).await?))
    }

    async fn list_competitions(
        &self,
        req: Request<ListCompetitionsRequest>,
    ) -> Result<Response<ListCompetitionsReply>, Status> {
        self.caller(&req).await?;
        let mut competitions = Vec::new();
        for c in self.store.competitions().await.map_err(status_of)? {
            competitions.push(self.competition_info(&c).await?);
        }
        Ok(Response::new(ListCompetitionsReply { competitions }))
    }

    async fn standings(&self, req: Request<StandingsRequest>) -> Result<Response<StandingsReply>, Status> {
        self.caller(&req).await?;
        let c = self.competition_named(&req.into_inner().competition).await?;
        let st = self
            .standings
            .current(&c)
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(StandingsReply {
            competition: c.name,
            games: st.games,
            anchor: st.anchor.clone(),
            rows: st
                .rows
                .iter()
                .map(|r| StandingRow {
                    rank: r.rank as u32,
                    bot: r.name.clone(),
                    elo: r.elo,
                    ci95: r.ci95,
                    games: r.games,
                    score: r.score,
                    wins: r.wins,
                    draws: r.draws,
                    losses: r.losses,
                    avg_rank: r.avg_rank,
                })
                .collect(),
        }))
    }

    async fn game_records(
        &self,
        req: Request<GameRecordsRequest>,
    ) -> Result<Response<GameRecordsReply>, Status> {
        self.caller(&req).await?;
        let r = req.into_inner();
        let c = self.competition_named(&r.competition).await?;
        let limit = if r.limit == 0 { 1000 } else { r.limit.min(1000) };
        let records = self
            .store
            .records(c.id, r.after_id, i64::from(limit))
            .await
            .map_err(status_of)?
            .into_iter()
            .map(|(id, json)| StoredRecord { id, json })
            .collect();
        Ok(Response::new(GameRecordsReply { records }))
    }

    async fn lease(&self, req: Request<LeaseRequest>) -> Result<Response<LeaseReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let reply = self.lease_groups(&worker, 1).await?;
        Ok(Response::new(reply.groups.into_iter().next().unwrap_or(
            LeaseReply {
                groups_in_progress: reply.groups_in_progress,
                retry_after_ms: reply.retry_after_ms,
                ..LeaseReply::default()
            },
        )))
    }

    async fn report(&self, req: Request<ReportRequest>) -> Result<Response<ReportReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let verdict = self
            .report_groups(&worker, vec![req.into_inner()])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| Status::internal("no outcome for a report"))??;
        Ok(Response::new(ReportReply {
            outcome: outcome_word(verdict).into(),
        }))
    }

    async fn lease_groups(
        &self,
        req: Request<LeaseGroupsRequest>,
    ) -> Result<Response<LeaseGroupsReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let max = req.into_inner().max_groups as usize;
        Ok(Response::new(
            LadderService::lease_groups(self, &worker, max).await?,
        ))
    }

    async fn report_groups(
        &self,
        req: Request<ReportGroupsRequest>,
    ) -> Result<Response<ReportGroupsReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let reports = req.into_inner().reports;
        let ids: Vec<i64> = reports.iter().map(|r| r.group_id).collect();
        let verdicts = LadderService::report_groups(self, &worker, reports).await?;
        Ok(Response::new(ReportGroupsReply {
            outcomes: ids
                .into_iter()
                .zip(verdicts)
                .map(|(group_id, v)| match v {
                    Ok(done) => GroupOutcome {
                        group_id,
                        outcome: outcome_word(done).into(),
                        ..GroupOutcome::default()
                    },
                    Err(s) => GroupOutcome {
                        group_id,
                        outcome: "refused".into(),
                        code: s.code() as u32,
                        message: s.message().to_owned(),
                    },
                })
                .collect(),
        }))
    }
}

/// How a stored report is named to the worker.
fn outcome_word(done: Completion) -> &'static str {
    match done {
        Completion::Recorded => "recorded",
        Completion::AlreadyDone | Completion::LeaseLost => "already_recorded",
    }
}

/// A spec and environment as the admin gave them, checked: it parses, a built-in
/// exists and takes its options, a command line splits, only a program has an
/// environment. Returns them as stored.
fn checked_spec(text: &str, vars: &[EnvVar]) -> Result<(String, Vec<(String, String)>), Status> {
    let spec = BotSpec::parse(text).map_err(|e| Status::invalid_argument(format!("the bot spec: {e}")))?;
    if spec == BotSpec::Human {
        return Err(Status::invalid_argument("a ladder bot cannot be `human`"));
    }
    spec.check()
        .map_err(|e| Status::invalid_argument(format!("the bot spec: {e}")))?;
    let mut env = Vec::with_capacity(vars.len());
    for v in vars {
        let pair = referee::sandbox::parse_env_pair(&format!("{}={}", v.key, v.value))
            .map_err(|e| Status::invalid_argument(format!("environment: {e}")))?;
        env.push(pair);
    }
    if !env.is_empty() && !matches!(spec, BotSpec::Process { .. }) {
        return Err(Status::invalid_argument(
            "only a program has an environment: this bot is not one",
        ));
    }
    Ok((spec.to_string(), env))
}

/// What the admin is told of a bot (its environment's values never).
fn bot_info(b: &BotRow, names: &HashMap<i64, &str>) -> BotInfo {
    BotInfo {
        id: b.id,
        name: b.name.clone(),
        game: b.game.clone(),
        spec: b.spec.clone(),
        env_keys: b.env.iter().map(|(k, _)| k.clone()).collect(),
        status: b.status.to_string(),
        status_reason: b.status_reason.clone(),
        version: b.version,
        previous: b
            .previous_id
            .and_then(|id| names.get(&id).map(|n| (*n).to_owned()))
            .unwrap_or_default(),
        start_failures: b.start_failures,
    }
}

/// Chooses who plays next and stores the groups; one per server.
pub struct Scheduler {
    store: Store,
    standings: Arc<StandingsCache>,
    // Scheduling reads then writes; one at a time per server keeps it simple (with
    // several servers the group-number key settles races). Per competition, what
    // has been scheduled so far.
    tallies: Mutex<HashMap<i64, schedule::Tally>>,
    /// Groups asked for in leases on this server so far: the demand the backlog
    /// follows (what was asked, not what was had, so a backlog run dry grows).
    wanted: std::sync::atomic::AtomicU64,
    /// Rung by a lease that found too few groups ready.
    wake: tokio::sync::Notify,
    /// Told after every look at the backlog, for leases waiting on one.
    looks: tokio::sync::watch::Sender<Look>,
}

/// What the scheduler's last look at the backlog found.
#[derive(Debug, Clone, Copy, Default)]
struct Look {
    /// Groups were ready, or it stored some: a lease that found none should ask
    /// again. False: every open competition is full or has too few bots.
    could_schedule: bool,
}

impl Scheduler {
    /// Forgets what was scheduled, so the next batch reads it again: after
    /// groups were withdrawn, which no longer count.
    pub async fn forget(&self) {
        self.tallies.lock().await.clear();
    }

    /// What the scheduler knows of each bot: its rating from the standings cache
    /// (refit as games arrive, on the blocking pool, never under a lock the
    /// scheduler holds) and its games from the tally, played or scheduled, so a
    /// new bot is not put into every group at once.
    async fn candidates(
        &self,
        c: &CompetitionRow,
        bots: &[BotRow],
        tally: &schedule::Tally,
    ) -> Result<Vec<Candidate>, Status> {
        let st = self
            .standings
            .latest(c)
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let by_name: HashMap<&str, &crate::standings::Standing> =
            st.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        Ok(bots
            .iter()
            .map(|b| {
                let (elo, sd) =
                    by_name
                        .get(b.name.as_str())
                        .map_or((0.0, crate::rating::PRIOR_SD_ELO), |r| {
                            // A separated bot (never lost, or never won) has a bound,
                            // not an interval: uncertain, but less so than a newcomer.
                            let sd = if r.ci95.is_finite() {
                                r.ci95 / 1.959964
                            } else {
                                400.0
                            };
                            (r.elo, sd)
                        });
                Candidate {
                    id: b.id,
                    elo,
                    sd,
                    games: tally.games.get(&b.id).copied().unwrap_or(0),
                }
            })
            .collect())
    }

    /// Schedules up to `want` groups, each in the open competition with the fewest
    /// groups that can take one. Returns how many it stored.
    async fn schedule_batch(&self, want: usize) -> Result<usize, Status> {
        let mut tallies = self.tallies.lock().await;
        struct Open {
            c: CompetitionRow,
            candidates: Vec<Candidate>,
            picks: Vec<Vec<i64>>,
            room: u64,
        }
        let mut open = Vec::new();
        for c in self.store.competitions().await.map_err(status_of)? {
            if c.status != CompetitionStatus::Open {
                continue;
            }
            let tally = tallies.entry(c.id).or_default();
            for g in self
                .store
                .groups_after(c.id, tally.read_from())
                .await
                .map_err(status_of)?
            {
                if g.status != GroupStatus::Withdrawn {
                    tally.add(g.id, &g.bots, c.seats as u64);
                }
            }
            let room = if c.max_games > 0 {
                (c.max_games as u64)
                    .div_ceil(c.seats as u64)
                    .saturating_sub(tally.groups)
            } else {
                u64::MAX
            };
            if room == 0 {
                continue;
            }
            let mut bots = self.store.entrants(c.id).await.map_err(status_of)?;
            bots.retain(|b| b.status == BotStatus::Active);
            let candidates = self.candidates(&c, &bots, tally).await?;
            open.push(Open {
                c,
                candidates,
                picks: Vec::new(),
                room,
            });
        }
        for _ in 0..want {
            let Some(o) = open
                .iter_mut()
                .filter(|o| o.room > o.picks.len() as u64)
                .min_by_key(|o| (tallies[&o.c.id].groups + o.picks.len() as u64, o.c.id))
            else {
                break;
            };
            let tally = tallies
                .get_mut(&o.c.id)
                .ok_or_else(|| Status::internal("no tally"))?;
            let seats = o.c.seats as u64;
            let Some(ids) = schedule::pick(&o.candidates, seats as usize, &tally.met) else {
                o.room = 0;
                continue;
            };
            // With 3+ seats, the orientation that evens out who follows whom.
            let ids = referee::seating::balanced_order_by(ids, &tally.follows);
            // Counted at once so the next pick of this batch sees it.
            tally.count(&ids, seats, 1);
            for c in o.candidates.iter_mut().filter(|c| ids.contains(&c.id)) {
                c.games += seats;
            }
            o.picks.push(ids);
        }
        let mut stored = 0;
        for o in open.into_iter().filter(|o| !o.picks.is_empty()) {
            let tally = tallies
                .get_mut(&o.c.id)
                .ok_or_else(|| Status::internal("no tally"))?;
            let seats = o.c.seats as u64;
            // Taken back, then counted as stored (by key, so a refresh skips them).
            for ids in &o.picks {
                tally.count(ids, seats, -1);
            }
            let groups = self
                .store
                .schedule_many(&o.c, &o.picks)
                .await
                .map_err(status_of)?;
            for g in &groups {
                tally.add(g.id, &g.bots, seats);
            }
            stored += groups.len();
        }
        Ok(stored)
    }

    /// Keeps about two seconds of leases' asking worth of groups ready (at least
    /// [`BACKLOG_MIN`]), so a lease is one query and never waits for the scheduler;
    /// looks every [`BACKLOG_EVERY`] or when a lease found too few. Ends with `stop`.
    pub async fn keep_ahead(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut last = (std::time::Instant::now(), 0u64);
        let mut rate = 0.0f64;
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(BACKLOG_EVERY) => {}
            }
            let wanted = self.wanted.load(std::sync::atomic::Ordering::Relaxed);
            let secs = last.0.elapsed().as_secs_f64();
            if secs >= 0.05 {
                // Groups leased per second, smoothed over a few looks.
                let now = (wanted - last.1) as f64 / secs;
                rate = if rate == 0.0 { now } else { 0.7 * rate + 0.3 * now };
                last = (std::time::Instant::now(), wanted);
            }
            // Two seconds of demand: a fleet's leases arrive in bursts (every
            // worker of a batch comes back at once), and a lease that finds the
            // backlog empty waits for the next look.
            let target = ((2.0 * rate) as usize).max(BACKLOG_MIN);
            let ready = match self.store.groups_ready().await {
                Ok(n) => n as usize,
                Err(e) => {
                    tracing::warn!("the scheduler cannot count the groups ready: {e}");
                    continue;
                }
            };
            let mut could_schedule = ready > 0;
            if ready < target / 2 {
                let want = (target - ready).min(16 * BACKLOG_MIN);
                match self.schedule_batch(want).await {
                    Ok(stored) => could_schedule |= stored > 0,
                    Err(e) => {
                        // Told as "ask again": a passing database fault is not the end.
                        could_schedule = true;
                        tracing::warn!("the scheduler failed: {}", e.message());
                    }
                }
            }
            self.looks.send_replace(Look { could_schedule });
        }
    }
}

/// Fewest groups the background scheduler keeps ready.
pub const BACKLOG_MIN: usize = 256;

/// How often the background scheduler looks at the backlog.
pub const BACKLOG_EVERY: Duration = Duration::from_millis(200);

/// Why the service stopped other than by its shutdown.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The gRPC server failed.
    #[error("the gRPC server: {0}")]
    Grpc(#[from] tonic::transport::Error),
    /// The web server failed.
    #[error("the web server: {0}")]
    Web(#[from] std::io::Error),
    /// The web server's task panicked.
    #[error("the web server's task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Serves the gRPC API on `grpc` and, if given, the web page on `http`, until
/// `shutdown` completes.
///
/// # Errors
/// A server that fails.
pub async fn run(
    grpc: tokio::net::TcpListener,
    http: Option<tokio::net::TcpListener>,
    store: Store,
    cfg: ServiceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let standings = Arc::new(StandingsCache::new(store.clone()));
    let web = http.map(|listener| {
        let app = crate::web::router(store.clone(), standings.clone());
        let mut rx = stop_rx.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.wait_for(|s| *s).await;
                })
                .await
        })
    });
    let incoming = tonic::transport::server::TcpIncoming::from(grpc).with_nodelay(Some(true));
    let mut builder = tonic::transport::Server::builder();
    if let Some(identity) = cfg.tls.clone() {
        builder = builder.tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))?;
    }
    let service = LadderService::new(store, cfg, standings);
    let scheduler = tokio::spawn(service.scheduler.clone().keep_ahead(stop_rx.clone()));
    let svc = LadderServer::new(service)
        .max_decoding_message_size(MAX_REPORT_BYTES)
        .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
        .send_compressed(tonic::codec::CompressionEncoding::Gzip);
    let result = builder
        .add_service(svc)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    let _ = stop_tx.send(true);
    let _ = scheduler.await;
    if let Some(web) = web {
        web.await??;
    }
    Ok(result?)
}
