//! The service's logic: leases, reports checked by replay, the catalog of
//! competitions and bots. Its front ends (`crate::grpc`, `crate::web`) call it.

use super::admission::{Admission, LEASE_POLL, StillInLine};
pub(super) use super::error::ServiceError;
use super::scheduler::Scheduler;
use super::tokens::TokenCache;
use super::views::{
    BotView, CompetitionSummary, FaultRate, GroupReport, Leased, LeasedEntrant, LeasedGroup, ReportedSeatLog,
    SeasonSummary, WorkerAudit,
};
use super::*;
use crate::app::cache::StandingsCache;
use crate::local::tournament::new_game;
use crate::store::{
    BotId, BotRow, BotStatus, CompetitionId, CompetitionRow, CompetitionStatus, Completion, GroupId,
    SeatStart, Seeding, Store, WorkerRow,
};
use referee::fault::FaultKind;
use referee::record::GameRecord;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// An author's entry in a season: the season, the version entered, and the
/// deadline until which another version may take its place.
#[derive(Debug, Clone)]
pub struct SeasonEntry {
    /// The season's competition.
    pub season: CompetitionRow,
    /// The version entered.
    pub bot: BotRow,
    /// Entries close then (ms since the Unix epoch).
    pub deadline_ms: i64,
}

/// The ladder's service: every operation a caller can ask, over domain types,
/// whatever front end asked.
pub struct LadderService {
    pub(super) store: Store,
    pub(super) cfg: Arc<ServiceConfig>,
    /// Standings per competition, shared with the web page.
    pub(super) standings: Arc<StandingsCache>,
    /// Schedules groups: in the background, and for a lease that finds none.
    pub(super) scheduler: Arc<Scheduler>,
    /// Replays at once: one per core.
    pub(super) replays: tokio::sync::Semaphore,
    /// Competitions and bots by key (`LadderService::catalog`).
    pub(super) catalog: std::sync::Mutex<Arc<Catalog>>,
    /// Worker calls being served, and leases waiting their turn.
    pub(super) admission: Admission,
    /// Workers by their token's hash, with when each was read.
    pub(super) tokens: std::sync::Mutex<TokenCache>,
    /// Held by the call reading the store's revocation mark.
    pub(super) mark_read: Mutex<()>,
    /// Authors' uploads being checked now ([`super::UploadConfig::at_once`]).
    pub(super) uploads: tokio::sync::Semaphore,
    /// Workers' built folders being received and checked now (as many again):
    /// never behind the authors'.
    pub(super) artifact_uploads: tokio::sync::Semaphore,
    /// Authors' uploads arriving now ([`super::UPLOADS_ARRIVING`], or one
    /// author's [`super::UploadConfig::arriving_per_author`] if that is more).
    pub(super) arriving: tokio::sync::Semaphore,
    /// Per author, their uploads arriving now
    /// ([`super::UploadConfig::arriving_per_author`] at most).
    pub(super) arrivals: std::sync::Mutex<HashMap<crate::store::AuthorId, usize>>,
    /// Hundredths of a group owed to challenges, carried from lease to lease
    /// ([`LadderService::challenges_first`]).
    pub(super) challenge_credit: std::sync::atomic::AtomicU64,
    /// What the host's monitoring reads (`/metrics`).
    pub metrics: Arc<crate::metrics::ServerMetrics>,
    /// When each build and check being done here was leased (for its duration).
    pub(super) builds_leased: std::sync::Mutex<HashMap<i64, std::time::Instant>>,
}

/// Worker calls served at once per database connection before leases wait
/// their turn: enough to keep every connection and replay permit busy, few
/// enough that a call never waits long behind the others.
pub const CALLS_PER_CONNECTION: usize = 1;

/// Competitions and bots by key.
#[derive(Debug, Default)]
pub(super) struct Catalog {
    pub(super) competitions: HashMap<CompetitionId, CompetitionRow>,
    pub(super) bots: HashMap<BotId, BotRow>,
}

pub(super) fn valid_name(what: &str, name: &str) -> Result<(), ServiceError> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.#".contains(c))
    {
        return Err(ServiceError::InvalidArgument(format!(
            "{what} {name:?}: use 1 to 64 letters, digits, '_', '-', '.', '#'"
        )));
    }
    Ok(())
}

/// A report whose records replayed as its group and lease say: what the store
/// records of it.
struct CheckedReport {
    group_id: GroupId,
    lease: String,
    games: Vec<crate::store::NewGame>,
    starts: Vec<SeatStart>,
}

impl CheckedReport {
    fn as_lease_report(&self) -> crate::store::LeaseReport<'_> {
        crate::store::LeaseReport {
            group_id: self.group_id,
            token: &self.lease,
            games: &self.games,
            starts: &self.starts,
        }
    }
}

impl LadderService {
    /// How many groups of a lease of `want` may be challenge groups leased
    /// ahead of the ladder's: the host's share of every group asked for, its
    /// fractions carried from lease to lease, so that a worker leasing one
    /// group at a time gets a challenge first every other lease at 50%.
    fn challenges_first(&self, want: usize) -> i64 {
        share_of(&self.challenge_credit, want, self.cfg.uploads.challenge_share)
    }

    /// Every worker with its audit (`crate::audit`).
    pub(super) async fn worker_audits(&self) -> Result<Vec<WorkerAudit>, ServiceError> {
        let workers = self.store.workers().all().await?;
        let games = self.store.workers().reported_games().await?;
        let ids: Vec<i64> = workers.iter().map(|w| w.id.0).collect();
        let audits = rating::audit::audit(&ids, &games);
        let leases = self.store.workers().lease_counts().await?;
        let counts: Vec<rating::audit::LeaseCount> = workers
            .iter()
            .map(|w| {
                let (leased, expired) = leases.get(&w.id).copied().unwrap_or_default();
                rating::audit::LeaseCount {
                    worker: w.id.0,
                    leased: leased.max(0) as u64,
                    expired: expired.max(0) as u64,
                }
            })
            .collect();
        let lease_audits = rating::audit::lease_audit(&counts);
        Ok(workers
            .into_iter()
            .zip(audits)
            .zip(counts.into_iter().zip(lease_audits))
            .map(|((w, a), (count, lapsed))| WorkerAudit {
                revoked: w.revoked(),
                name: w.name,
                groups: a.groups,
                games: a.games,
                faults: a
                    .kinds
                    .into_iter()
                    .map(|k| FaultRate {
                        kind: k.kind.to_string(),
                        games: k.games,
                        rate: k.rate,
                        others_rate: k.others_rate,
                        z: k.z,
                    })
                    .collect(),
                flag: [a.flag, lapsed.flag]
                    .into_iter()
                    .filter(|f| !f.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
                groups_leased: count.leased,
                leases_expired: count.expired,
                expired_rate: lapsed.rate,
                others_expired_rate: lapsed.others_rate,
            })
            .collect())
    }

    /// A service over a store, with the standings cache it shares with the page.
    pub fn new(store: Store, cfg: ServiceConfig, standings: Arc<StandingsCache>) -> LadderService {
        let uploads_at_once = cfg.uploads.at_once.max(1);
        let arriving_at_once = UPLOADS_ARRIVING.max(cfg.uploads.arriving_per_author);
        // Artifacts' bytes go to the object store, if the host gave one.
        let store = if cfg.uploads.objects.is_some() {
            store.with_artifact_bytes_elsewhere()
        } else {
            store
        };
        LadderService {
            store: store.clone(),
            cfg: Arc::new(cfg),
            standings: standings.clone(),
            scheduler: Arc::new(Scheduler::new(store.clone(), standings.clone())),
            catalog: std::sync::Mutex::new(Arc::default()),
            replays: tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, usize::from)),
            admission: Admission::new((CALLS_PER_CONNECTION * store.max_connections() as usize).min(4)),
            tokens: std::sync::Mutex::default(),
            mark_read: Mutex::new(()),
            challenge_credit: std::sync::atomic::AtomicU64::new(0),
            uploads: tokio::sync::Semaphore::new(uploads_at_once),
            artifact_uploads: tokio::sync::Semaphore::new(uploads_at_once),
            // Never fewer than one author may send at once: their uploads share
            // a connection, and one queued unread would hold back the others'
            // bytes (HTTP/2's window is the connection's), stalling them all.
            arriving: tokio::sync::Semaphore::new(arriving_at_once),
            arrivals: std::sync::Mutex::default(),
            metrics: Arc::default(),
            builds_leased: std::sync::Mutex::default(),
        }
    }

    /// The service's own work, until `stop`: the scheduler keeping groups
    /// ready, the store's upkeep, retention's rounds and seasons' deadlines.
    pub async fn run_background(self: Arc<Self>, stop: tokio::sync::watch::Receiver<bool>) {
        let scheduler = tokio::spawn(self.scheduler.clone().keep_ahead(stop.clone()));
        let upkeep = tokio::spawn(upkeep::keep_fit(self.store.clone(), stop.clone()));
        let seasons = tokio::spawn(upkeep::keep_seasons(self.store.clone(), stop.clone()));
        upkeep::keep_tidy(self, stop).await;
        let _ = scheduler.await;
        let _ = upkeep.await;
        let _ = seasons.await;
    }

    /// The server is stopping: leases waiting their turn are answered at once.
    pub fn stop_admitting(&self) {
        self.admission.close();
    }

    /// A competition as its readers see it.
    pub(super) async fn competition_summary(
        &self,
        c: CompetitionRow,
    ) -> Result<CompetitionSummary, ServiceError> {
        let games = self.store.shapes().game_count(c.id).await?;
        let bots = self.store.competitions().entrants(c.id).await?;
        let season = self.store.seasons().season(c.id).await?;
        Ok(CompetitionSummary {
            competition: c,
            games: games as u64,
            active_bots: bots.iter().filter(|b| b.status == BotStatus::Active).count() as u32,
            bots: bots.into_iter().map(|b| b.name).collect(),
            season: season.map(|s| SeasonSummary {
                phase: s.phase.to_string(),
                deadline_ms: s.deadline_ms,
                commitment: s.commitment,
            }),
        })
    }

    /// Makes an author's version their entry in a season (`competition`, or
    /// the one season of the bot's game taking entries).
    pub async fn enter_season(
        &self,
        author: &crate::store::AuthorRow,
        competition: &str,
        bot: &str,
    ) -> Result<SeasonEntry, ServiceError> {
        // `name@1` is version 1 (the store reads it so).
        let b = self
            .store
            .bots()
            .bot(bot)
            .await?
            .filter(|b| b.author_id == Some(author.id))
            .ok_or_else(|| ServiceError::NotFound(format!("you have no version named {bot:?}")))?;
        let c = if competition.is_empty() {
            let mut open = Vec::new();
            for c in self.store.competitions().all().await? {
                if c.game == b.game
                    && let Some(s) = self.store.seasons().season(c.id).await?
                    && s.phase == crate::store::Phase::Open
                {
                    open.push(c);
                }
            }
            match open.len() {
                1 => open.remove(0),
                0 => {
                    return Err(ServiceError::FailedPrecondition(format!(
                        "no season of {} takes entries now",
                        b.game
                    )));
                }
                _ => {
                    return Err(ServiceError::InvalidArgument(format!(
                        "several seasons of {} take entries ({}): name one",
                        b.game,
                        open.iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
        } else {
            self.competition_named(competition).await?
        };
        self.store.seasons().choose_entry(c.id, author.id, &b).await?;
        let deadline = self
            .store
            .seasons()
            .season(c.id)
            .await?
            .map_or(0, |s| s.deadline_ms);
        tracing::info!(season = %c.name, bot = %b.name, author = %author.name, "entry chosen");
        Ok(SeasonEntry {
            season: c,
            bot: b,
            deadline_ms: deadline,
        })
    }

    pub(super) async fn competition_named(&self, name: &str) -> Result<CompetitionRow, ServiceError> {
        self.store
            .competitions()
            .competition(name)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no competition named {name:?}")))
    }

    /// The competitions and bots with these keys (and all others known). What
    /// is read of their rows never changes once made (a bot registered again
    /// must match; a competition's game, options, seed and time are fixed), so
    /// they are kept, and read again only when a key is missing (a row another
    /// server made) — or when an author's bot is kept from before its build and
    /// check: its files are named only once it passes, and a bot in a group has.
    /// (Kept without them, an author's bot was leased without its files, and the
    /// worker ran its command outside its folder: every game a failed start.)
    pub(super) async fn catalog(
        &self,
        competitions: &[CompetitionId],
        bots: &[BotId],
    ) -> Result<Arc<Catalog>, ServiceError> {
        let known = self
            .catalog
            .lock()
            .map_err(|_| ServiceError::Internal("catalog poisoned".into()))?
            .clone();
        let settled = |b: &BotRow| b.author_id.is_none() || b.artifact_sha256.is_some();
        if competitions.iter().all(|id| known.competitions.contains_key(id))
            && bots.iter().all(|id| known.bots.get(id).is_some_and(settled))
        {
            return Ok(known);
        }
        let fresh = Arc::new(Catalog {
            competitions: self
                .store
                .competitions()
                .all()
                .await?
                .into_iter()
                .map(|c| (c.id, c))
                .collect(),
            bots: self
                .store
                .bots()
                .all()
                .await?
                .into_iter()
                .map(|b| (b.id, b))
                .collect(),
        });
        *self
            .catalog
            .lock()
            .map_err(|_| ServiceError::Internal("catalog poisoned".into()))? = fresh.clone();
        Ok(fresh)
    }

    /// A bot as the admin is told of it.
    /// A bot with the names its ids stand for.
    pub async fn bot_view(&self, b: BotRow) -> Result<BotView, ServiceError> {
        let all = self.store.bots().all().await?;
        let names: HashMap<BotId, String> = all.into_iter().map(|x| (x.id, x.name)).collect();
        let authors = self.store.authors().author_names().await?;
        Ok(BotView::of(b, &names, &authors))
    }

    pub(super) async fn enter_open_competitions(&self, bot: &BotRow) -> Result<(), ServiceError> {
        if bot.status != BotStatus::Active {
            return Ok(());
        }
        // A season past its deadline takes no one new, though its freeze may be a
        // moment away.
        let past_deadline = self.store.seasons().seasons_past_deadline().await?;
        for c in self.store.competitions().all().await? {
            // A challenge's entrants are its two bots alone; a final's are its
            // finalists.
            if c.status == CompetitionStatus::Open
                && c.game == bot.game
                && !matches!(
                    c.format,
                    crate::store::CompetitionFormat::Challenge | crate::store::CompetitionFormat::Finals
                )
                && !past_deadline.contains(&c.id)
            {
                self.store.competitions().add_entrant(c.id, bot.id).await?;
            }
        }
        Ok(())
    }

    /// Leases up to `max` groups to `worker` under one token. The background
    /// scheduler keeps groups ready; a lease that finds none wakes it and waits
    /// (at most [`LEASE_WAIT`]) for its next look. "No work" without a
    /// `retry_after_ms` means the scheduler looked and could schedule nothing.
    pub async fn lease_groups(
        &self,
        worker: &WorkerRow,
        max: usize,
        runtimes: &[String],
    ) -> Result<Leased, ServiceError> {
        let max = max.clamp(1, MAX_BATCH);
        let runtimes = &runtimes[..runtimes.len().min(64)];
        // Admission: when the server is already serving as many worker calls as
        // its database can take, one more only makes every call slower (a
        // fleet's closed loop piles up in the database). So a lease waits its
        // turn, first come first served, for at most a poll; then it is told to
        // ask again at once, and keeps its place. Reports are never held: their
        // games are played.
        // Each poll's length is drawn between three quarters and five quarters
        // of LEASE_POLL, so a fleet that came at once (a server's start) does
        // not run out of its polls at once and ask again as one burst.
        let poll = LEASE_POLL.mul_f64(0.75 + (referee::seed::os_seed() % 1000) as f64 / 2000.0);
        let (call, queued) = match self.admission.enter_in_turn(worker.id.0, poll).await {
            Ok(entered) => entered,
            Err(StillInLine) => {
                return Ok(Leased {
                    groups: Vec::new(),
                    groups_in_progress: true,
                    retry_after: Some(RETRY_AFTER),
                    queued: poll,
                });
            }
        };
        let token = new_token()?;
        let lease_ms = self.cfg.lease.as_millis() as i64;
        let ask = crate::store::LeaseAsk {
            worker: &worker.name,
            token: &token,
            runtimes,
            challenges_first: self.challenges_first(max),
        };
        let lease_now = |want: usize| {
            let now = self.store.now_ms();
            self.store.groups().lease_many(
                &ask,
                now,
                now + lease_ms,
                want as i64,
                i64::from(self.cfg.held_per_worker),
            )
        };
        let mut groups = lease_now(max).await?;
        self.scheduler
            .wanted
            .fetch_add(max as u64, std::sync::atomic::Ordering::Relaxed);
        // Only a look begun after the query above answers it: one already under
        // way may have read the competitions before a change the query saw
        // (a competition just opened), and would say "nothing to schedule".
        let asked_after = self
            .scheduler
            .looks_begun
            .load(std::sync::atomic::Ordering::SeqCst);
        let mut looked = self.scheduler.looks.subscribe();
        if groups.len() < max {
            self.scheduler.wake.notify_one();
        }
        let mut retry_after = None;
        if groups.is_empty() {
            // Waiting for the scheduler is not serving.
            drop(call);
            match Scheduler::look_begun_after(&mut looked, asked_after, LEASE_WAIT).await {
                Some(look) => {
                    groups = lease_now(max).await?;
                    if groups.is_empty() && look.could_schedule {
                        retry_after = Some(RETRY_AFTER);
                    }
                }
                // The scheduler is still at work (or stopping): ask again soon.
                None => retry_after = Some(RETRY_AFTER),
            }
        }
        if groups.is_empty() {
            let in_progress = self.store.games().groups_in_progress().await?;
            return Ok(Leased {
                groups: Vec::new(),
                groups_in_progress: in_progress > 0,
                retry_after,
                queued,
            });
        }
        self.hand_out(worker, &token, groups, queued).await
    }

    /// The groups `worker` just leased under `token`, as it plays them: each
    /// with its competition, bots and lease period, their leases' periods and
    /// lives set in the store.
    async fn hand_out(
        &self,
        worker: &WorkerRow,
        token: &str,
        groups: Vec<crate::store::GroupRow>,
        queued: Duration,
    ) -> Result<Leased, ServiceError> {
        let comp_ids: Vec<CompetitionId> = groups.iter().map(|g| g.competition_id).collect();
        let bot_ids: Vec<BotId> = groups.iter().flat_map(|g| g.bots.iter().copied()).collect();
        let catalog = self.catalog(&comp_ids, &bot_ids).await?;
        let (competitions, bots) = (&catalog.competitions, &catalog.bots);
        let mut out = Vec::with_capacity(groups.len());
        // Each group's lease period (longer than the server's shortest where its
        // time control asks) and its last moment, whatever its renewals
        // ([`lease_life`]): set once they are leased.
        let mut lives: HashMap<(Duration, Duration), Vec<GroupId>> = HashMap::new();
        for g in groups {
            let c = competitions
                .get(&g.competition_id)
                .ok_or_else(|| ServiceError::Internal(format!("group {} has no competition", g.id)))?;
            tracing::debug!(worker = %worker.name, group = %g.id, competition = %c.name, "group leased");
            let seeding = Self::seeding(c, &g, bots);
            let period = lease_period(self.cfg.lease, &c.time);
            let life = lease_life(
                self.cfg.lease,
                &c.time,
                &c.game,
                &c.options,
                g.bots.len(),
                g.bots.len(),
            );
            lives.entry((period, life)).or_default().push(g.id);
            out.push(LeasedGroup {
                lease: token.to_owned(),
                group_id: g.id,
                competition: c.name.clone(),
                game: c.game.clone(),
                options: c.options.clone(),
                seed: g.seed as u64,
                group_no: g.group_no as u64,
                entrants: g.bots.iter().map(|id| LeasedEntrant::of(bots.get(id))).collect(),
                time: c.time,
                period,
                seeding,
                author_log_bytes: self.cfg.uploads.author_log_bytes,
            });
        }
        let now = self.store.now_ms();
        for ((period, life), ids) in lives {
            self.store
                .groups()
                .start_leases(
                    token,
                    &ids,
                    now + period.as_millis() as i64,
                    now + life.as_millis() as i64,
                )
                .await?;
        }
        tracing::info!(worker = %worker.name, groups = out.len(), "groups leased");
        crate::metrics::ServerMetrics::count(&self.metrics.leases, "granted", out.len() as u64);
        Ok(Leased {
            groups: out,
            groups_in_progress: false,
            retry_after: None,
            queued,
        })
    }

    /// Takes back `worker`'s leases of `ids` under `token`: the groups are
    /// dealt again at once with new seeds.
    pub async fn return_leases(
        &self,
        worker: &WorkerRow,
        token: &str,
        ids: &[GroupId],
    ) -> Result<Vec<GroupId>, ServiceError> {
        if ids.len() > MAX_BATCH {
            return Err(ServiceError::InvalidArgument(format!(
                "{} groups in one call: send at most {MAX_BATCH}",
                ids.len()
            )));
        }
        let _call = self.admission.enter_now();
        let returned = self
            .store
            .groups()
            .return_leases(&worker.name, token, ids)
            .await?;
        crate::metrics::ServerMetrics::count(&self.metrics.leases, "returned", returned.len() as u64);
        tracing::info!(worker = %worker.name, groups = returned.len(), "leases given back");
        Ok(returned)
    }

    /// Renews `worker`'s leases of `ids` under `token` that have not run out, each
    /// for another period of its competition ([`lease_period`]). Returns the
    /// groups renewed and the shortest of their periods.
    pub async fn renew_leases(
        &self,
        worker: &WorkerRow,
        token: &str,
        ids: &[GroupId],
    ) -> Result<(Vec<GroupId>, Duration), ServiceError> {
        if ids.len() > MAX_BATCH {
            return Err(ServiceError::InvalidArgument(format!(
                "{} groups in one renewal: send at most {MAX_BATCH}",
                ids.len()
            )));
        }
        let _call = self.admission.enter_now();
        let groups = self.store.groups().groups_by_id(ids).await?;
        let comp_ids: Vec<CompetitionId> = groups.iter().map(|g| g.competition_id).collect();
        let catalog = self.catalog(&comp_ids, &[]).await?;
        let mut by_period: HashMap<Duration, Vec<GroupId>> = HashMap::new();
        for g in &groups {
            let period = catalog
                .competitions
                .get(&g.competition_id)
                .map_or(self.cfg.lease, |c| lease_period(self.cfg.lease, &c.time));
            by_period.entry(period).or_default().push(g.id);
        }
        let mut renewed = Vec::with_capacity(ids.len());
        let mut shortest: Option<Duration> = None;
        for (period, ids) in by_period {
            let now = self.store.now_ms();
            let got = self
                .store
                .groups()
                .renew_leases(&worker.name, token, &ids, now, now + period.as_millis() as i64)
                .await?;
            if !got.is_empty() {
                shortest = Some(shortest.map_or(period, |s| s.min(period)));
            }
            renewed.extend(got);
        }
        renewed.sort_unstable();
        crate::metrics::ServerMetrics::count(&self.metrics.leases, "renewed", renewed.len() as u64);
        tracing::debug!(worker = %worker.name, groups = renewed.len(), "leases renewed");
        Ok((renewed, shortest.unwrap_or(self.cfg.lease)))
    }

    /// Judges and stores several groups' reports: each checked against its lease
    /// and replayed (on the blocking pool, at most one batch per core at once),
    /// then all that pass stored in one transaction. One verdict per report.
    pub async fn report_groups(
        &self,
        worker: &WorkerRow,
        reports: Vec<GroupReport>,
    ) -> Result<Vec<Result<Completion, ServiceError>>, ServiceError> {
        if reports.len() > MAX_BATCH {
            return Err(ServiceError::InvalidArgument(format!(
                "{} reports in one call: send at most {MAX_BATCH}",
                reports.len()
            )));
        }
        let _call = self.admission.enter_now();
        let checked = self.check_reports(worker, reports).await?;
        let passed: Vec<crate::store::LeaseReport<'_>> = checked
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(CheckedReport::as_lease_report)
            .collect();
        let (stored, suspended) = self
            .store
            .groups()
            .complete_leases(&passed, Some(worker.id), i64::from(self.cfg.suspend_after))
            .await?;
        let out = Self::report_outcomes(&checked, stored);
        self.count_reports(worker, &checked, &out);
        for bot in &suspended {
            tracing::warn!(bot = %bot.name, "bot suspended: it broke (could not start, crashed or broke the protocol) in {} reported games in a row", self.cfg.suspend_after);
        }
        if !suspended.is_empty() {
            self.scheduler.forget().await;
        }
        Ok(out)
    }

    /// Each report replayed against its group and lease (on the blocking pool,
    /// no more batches at once than there are cores): what the store would
    /// record of it, or why not.
    async fn check_reports(
        &self,
        worker: &WorkerRow,
        reports: Vec<GroupReport>,
    ) -> Result<Vec<Result<CheckedReport, ServiceError>>, ServiceError> {
        let ids: Vec<GroupId> = reports.iter().map(|r| r.group_id).collect();
        let groups: HashMap<GroupId, crate::store::GroupRow> = self
            .store
            .groups()
            .groups_by_id(&ids)
            .await?
            .into_iter()
            .map(|g| (g.id, g))
            .collect();
        let holders = self.store.groups().lease_holders(&ids).await?;
        let holder = worker.name.clone();
        let comp_ids: Vec<CompetitionId> = groups.values().map(|g| g.competition_id).collect();
        let bot_ids: Vec<BotId> = groups.values().flat_map(|g| g.bots.iter().copied()).collect();
        let catalog = self.catalog(&comp_ids, &bot_ids).await?;
        let log_cap = self.cfg.uploads.author_log_bytes as usize;
        // Replaying is CPU work: on the blocking pool, not an executor thread.
        let _permit = self
            .replays
            .acquire()
            .await
            .map_err(|_| ServiceError::Unavailable("the server is stopping".into()))?;
        tokio::task::spawn_blocking(move || {
            reports
                .into_iter()
                .map(|r| {
                    let group = groups
                        .get(&r.group_id)
                        .ok_or_else(|| ServiceError::NotFound(format!("no group {}", r.group_id)))?;
                    // A lease this worker no longer holds (it ran out, or it was
                    // never its own) is not replayed: the group may have a new
                    // seed by now, and replay is the server's dearest work.
                    if group.status == crate::store::GroupStatus::Done {
                        // Stored already: the store answers `already_recorded`.
                        return Ok(CheckedReport {
                            group_id: group.id,
                            lease: r.lease,
                            games: Vec::new(),
                            starts: Vec::new(),
                        });
                    }
                    if let Some((token, by)) = holders.get(&group.id)
                        && (*token != crate::store::token_hash(&r.lease) || *by != holder)
                    {
                        return Err(ServiceError::FailedPrecondition(format!(
                            "the lease on group {} expired and the group went to another worker",
                            r.group_id
                        )));
                    }
                    let c = catalog.competitions.get(&group.competition_id).ok_or_else(|| {
                        ServiceError::Internal(format!("group {} has no competition", group.id))
                    })?;
                    let (games, starts) = Self::verify(c, group, &catalog.bots, &r.records, &r.logs, log_cap)
                        .map_err(|e| e.about(format_args!("group {}", group.id)))?;
                    Ok(CheckedReport {
                        group_id: group.id,
                        lease: r.lease,
                        games,
                        starts,
                    })
                })
                .collect()
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("the replay failed: {e}")))
    }

    /// Each report's answer: its refusal, or what the store made of the ones
    /// that passed (`stored`, in their order).
    fn report_outcomes(
        checked: &[Result<CheckedReport, ServiceError>],
        stored: Vec<Result<Completion, crate::store::StoreError>>,
    ) -> Vec<Result<Completion, ServiceError>> {
        let mut stored = stored.into_iter();
        checked
            .iter()
            .map(|r| match r {
                Err(e) => Err(e.clone()),
                Ok(report) => match stored.next() {
                    Some(Ok(Completion::LeaseLost)) => Err(ServiceError::FailedPrecondition(format!(
                        "the lease on group {} expired and the group went to another worker",
                        report.group_id
                    ))),
                    Some(Ok(done)) => Ok(done),
                    Some(Err(e)) => Err(e.into()),
                    None => Err(ServiceError::Internal("no outcome for a report".into())),
                },
            })
            .collect()
    }

    /// The metrics and the log of a batch of reports: groups and games
    /// recorded, refusals by reason.
    fn count_reports(
        &self,
        worker: &WorkerRow,
        checked: &[Result<CheckedReport, ServiceError>],
        out: &[Result<Completion, ServiceError>],
    ) {
        let recorded = out
            .iter()
            .filter(|r| matches!(r, Ok(Completion::Recorded)))
            .count();
        self.metrics.groups_recorded.inc_by(recorded as u64);
        let games: usize = checked
            .iter()
            .zip(out)
            .filter(|(_, o)| matches!(o, Ok(Completion::Recorded)))
            .filter_map(|(c, _)| c.as_ref().ok())
            .map(|c| c.games.len())
            .sum();
        self.metrics.games_recorded.inc_by(games as u64);
        for refused in out.iter().filter_map(|r| r.as_ref().err()) {
            tracing::warn!(worker = %worker.name, "report refused: {refused}");
            let reason = match refused {
                ServiceError::InvalidArgument(_) => "invalid",
                ServiceError::FailedPrecondition(_) => "lease_lost",
                ServiceError::NotFound(_) => "not_found",
                ServiceError::PermissionDenied(_) => "not_theirs",
                _ => "internal",
            };
            crate::metrics::ServerMetrics::count(&self.metrics.reports_refused, reason, 1);
        }
        tracing::info!(worker = %worker.name, groups = recorded, "groups recorded");
    }

    /// How a group's games are dealt: the competition's way, or independent seeds
    /// when one of its bots is a gRPC server or a process (a worker plays a
    /// group whole, on one kernel). A season's finals are dealt as their terms
    /// say, committed before the finals began.
    fn seeding(c: &CompetitionRow, group: &crate::store::GroupRow, bots: &HashMap<BotId, BotRow>) -> Seeding {
        let processes = if c.format == crate::store::CompetitionFormat::Finals {
            crate::dealing::Processes::Trusted
        } else {
            crate::dealing::Processes::Strangers
        };
        Seeding::of_group(
            c.seeding,
            group
                .bots
                .iter()
                .filter_map(|id| bots.get(id))
                .map(|b| b.spec.as_str()),
            processes,
        )
    }

    /// Checks a group's reported records against what was leased and replays each.
    pub(super) fn verify(
        c: &CompetitionRow,
        group: &crate::store::GroupRow,
        bots: &HashMap<BotId, BotRow>,
        texts: &[String],
        logs: &[ReportedSeatLog],
        log_cap: usize,
    ) -> Result<(Vec<crate::store::NewGame>, Vec<SeatStart>), ServiceError> {
        let n = c.seats as usize;
        let mut reported_logs: HashMap<(usize, usize), &ReportedSeatLog> = HashMap::new();
        for l in logs {
            let at = (l.rotation as usize, l.seat as usize);
            if at.0 >= n || at.1 >= n || reported_logs.insert(at, l).is_some() {
                return Err(ServiceError::InvalidArgument(format!(
                    "a private log of rotation {} seat {} is not one of the group's {n} by {n} seats, or comes twice",
                    l.rotation, l.seat
                )));
            }
        }
        if texts.len() != n {
            return Err(ServiceError::InvalidArgument(format!(
                "a group of {n}-seat games has {n} records (one per rotation); got {}",
                texts.len()
            )));
        }
        let seeding = Self::seeding(c, group, bots);
        let mut games = Vec::with_capacity(n);
        let mut starts = Vec::with_capacity(n * n);
        let mut seen = vec![false; n];
        for (k, text) in texts.iter().enumerate() {
            let bad = |why: String| ServiceError::InvalidArgument(format!("record {k}: {why}"));
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
            let mirrored = seeding == Seeding::Mirrored;
            if pairing.mirrored != mirrored {
                return Err(bad(format!(
                    "says its group was {}, but the group was dealt {}",
                    if pairing.mirrored {
                        "mirrored"
                    } else {
                        "dealt a seed per rotation"
                    },
                    if mirrored {
                        "mirrored"
                    } else {
                        "a seed per rotation"
                    },
                )));
            }
            let seed = seeding.game_seed(group.seed as u64, r);
            if rec.game != c.game || rec.options != c.options || rec.seed != seed {
                return Err(bad(format!(
                    "is {} {:?} seed {}, but rotation {r} of the lease is {} {:?} seed {seed}",
                    rec.game, rec.options, rec.seed, c.game, c.options
                )));
            }
            if rec.start_position.is_some() || rec.seats.len() != n {
                return Err(bad("has another start or number of seats than leased".into()));
            }
            let seat_bots = referee::seating::seated(&group.bots, r);
            for (s, id) in seat_bots.iter().enumerate() {
                let bot = bots
                    .get(id)
                    .ok_or_else(|| ServiceError::Internal(format!("group names unknown bot {id}")))?;
                // A seat is named by its bot's public name; a record that carries a
                // command line is refused, so none is ever stored.
                if !rec.seats[s].spec.is_empty() || rec.seats[s].entrant.as_deref() != Some(bot.name.as_str())
                {
                    return Err(bad(format!(
                        "seat {s} is not named {} alone (a record names each seat by its bot and carries no spec)",
                        bot.name
                    )));
                }
                // An uploaded bot ran from its own files, and the record says which.
                if rec.seats[s].artifact != bot.artifact_sha256 {
                    return Err(bad(format!(
                        "seat {s} names files {:?}, but {} plays {:?}",
                        rec.seats[s].artifact, bot.name, bot.artifact_sha256
                    )));
                }
            }
            referee::replay::replay(&rec).map_err(|e| bad(format!("does not reproduce: {e}")))?;
            for (s, &bot) in seat_bots.iter().enumerate() {
                // A game in which the bot broke (not one it merely lost on time):
                // it could not start, crashed, or broke the protocol. Only the kind
                // travels on; details can carry a command line or a path.
                let failed = rec
                    .faults
                    .iter()
                    .find(|f| f.seat == s && f.kind != FaultKind::Timeout);
                starts.push(SeatStart {
                    bot,
                    failure: failed.map(|f| f.kind),
                    moved: rec.moves.iter().any(|m| m.seat == s && !m.fallback),
                });
            }
            // Info lines are for the bot's author: out of the public record.
            let mut private = private_logs(&mut rec, |s| reported_logs.get(&(r, s)).copied(), log_cap);
            let mut game = new_game(c.id, group.id, r, seat_bots.clone(), &rec);
            private.retain(|(_, entry)| !entry.is_empty());
            game.logs = private
                .into_iter()
                .map(|(seat, entry)| crate::store::NewSeatLog {
                    seat,
                    bot: seat_bots[seat],
                    entry,
                })
                .collect();
            games.push(game);
        }
        Ok((games, starts))
    }
}

/// Takes every seat's `info` lines out of `rec` and joins them to what the worker
/// reported of that seat (`reported(seat)`): the end of its stderr, cut to `cap`
/// bytes whatever the worker sent, and at most [`super::PRIVATE_FAULTS_KEPT`]
/// faults, each cut as a record cuts a fault's detail. By seat.
fn private_logs<'a>(
    rec: &mut GameRecord,
    reported: impl Fn(usize) -> Option<&'a ReportedSeatLog>,
    cap: usize,
) -> Vec<(usize, crate::store::SeatLogEntry)> {
    let mut out: Vec<(usize, crate::store::SeatLogEntry)> = (0..rec.seats.len())
        .map(|s| (s, crate::store::SeatLogEntry::default()))
        .collect();
    for (k, m) in rec.moves.iter_mut().enumerate() {
        if let Some((_, entry)) = out.get_mut(m.seat) {
            entry.info.extend(
                std::mem::take(&mut m.info)
                    .into_iter()
                    .map(|line| (k as u32, line)),
            );
        } else {
            m.info.clear();
        }
    }
    for (seat, entry) in &mut out {
        let Some(log) = reported(*seat) else { continue };
        let keep = referee::fault::last_chars(&log.stderr, cap);
        entry.stderr_dropped = log
            .stderr_dropped
            .saturating_add((log.stderr.len() - keep.len()) as u64);
        entry.stderr = keep.to_owned();
        entry.faults = log
            .faults
            .iter()
            .take(PRIVATE_FAULTS_KEPT)
            .map(|f| referee::text::capped(f, referee::record::FAULT_DETAIL_KEPT))
            .collect();
    }
    out
}

/// `share` percent of `want`, in whole groups, with the fraction left over
/// kept in `credit` (hundredths of a group) for the next call.
fn share_of(credit: &std::sync::atomic::AtomicU64, want: usize, share: u32) -> i64 {
    use std::sync::atomic::Ordering::Relaxed;
    let owed = want as u64 * u64::from(share.min(100));
    let before = credit
        .fetch_update(Relaxed, Relaxed, |c| Some((c + owed) % 100))
        .unwrap_or_default();
    ((before + owed) / 100) as i64
}

#[cfg(test)]
mod tests {
    use super::share_of;
    use std::sync::atomic::AtomicU64;

    /// The share is kept over many leases whatever their size: at 50%, a lease
    /// of one gets a challenge first every other time; at 30%, leases of 4 get
    /// 1, 1, 2, 1, 1, 2, ... (1.2 each); at 0 none, at 100 all.
    #[test]
    fn the_challenges_share_holds_over_leases_of_any_size() {
        let credit = AtomicU64::new(0);
        let ones: Vec<i64> = (0..6).map(|_| share_of(&credit, 1, 50)).collect();
        assert_eq!(ones, [0, 1, 0, 1, 0, 1]);
        let credit = AtomicU64::new(0);
        let fours: Vec<i64> = (0..10).map(|_| share_of(&credit, 4, 30)).collect();
        assert_eq!(fours.iter().sum::<i64>(), 12, "{fours:?}");
        assert!(fours.iter().all(|&n| n == 1 || n == 2), "{fours:?}");
        let credit = AtomicU64::new(0);
        assert_eq!(share_of(&credit, 64, 0), 0);
        assert_eq!(share_of(&credit, 64, 100), 64);
        assert_eq!(share_of(&credit, 3, 250), 3, "a share past 100% is all");
    }
}
