//! `ladder serve`: the gRPC API (admin, reads, worker leases) and a read-only web
//! page of standings and recent games with its JSON.
//!
//! Workers are not trusted: every reported record is checked against the lease
//! (game, options, seed, seats, bots, rotations) and replayed move by move; one that
//! does not reproduce is refused and nothing of the group is stored.

use crate::cache::StandingsCache;
use crate::schedule::{self, Candidate};
use crate::store::{
    BotRow, CompetitionRow, CompetitionStatus, Completion, GroupStatus, NewCompetition, Store, StoreError,
};
use crate::tournament::{limits_from, new_game};
use proto::ladder::ladder_server::{Ladder, LadderServer};
use proto::ladder::*;
use referee::record::GameRecord;
use referee::spec::BotSpec;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tonic::{Request, Response, Status};

/// Who a token belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// May lease and report, and read.
    Worker,
    /// May do everything.
    Admin,
}

/// Service settings.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Token for admin calls.
    pub admin_token: String,
    /// Token for worker calls.
    pub worker_token: String,
    /// How long a worker holds a lease.
    pub lease: Duration,
}

/// The gRPC service.
pub struct LadderService {
    store: Store,
    cfg: Arc<ServiceConfig>,
    /// Standings per competition, shared with the web page.
    standings: Arc<StandingsCache>,
    // Scheduling reads then writes; one at a time per server keeps it simple (with
    // several servers the group-number key settles races).
    schedule_lock: Mutex<()>,
}

fn status_of(e: StoreError) -> Status {
    match e {
        StoreError::Conflict(m) => Status::already_exists(m),
        StoreError::NotFound(m) => Status::not_found(m),
        other => Status::internal(other.to_string()),
    }
}

fn check_role<T>(req: &Request<T>, cfg: &ServiceConfig, need: Role) -> Result<Role, Status> {
    let Some(value) = req.metadata().get("authorization") else {
        return Err(Status::unauthenticated(
            "missing authorization metadata: send `authorization: Bearer <token>`",
        ));
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| Status::unauthenticated("authorization is not `Bearer <token>`"))?;
    let role = if constant_time_eq(token, &cfg.admin_token) {
        Role::Admin
    } else if constant_time_eq(token, &cfg.worker_token) {
        Role::Worker
    } else {
        return Err(Status::unauthenticated("unknown token"));
    };
    if role < need {
        return Err(Status::permission_denied("this call needs the admin token"));
    }
    Ok(role)
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
    /// A service over a store, with the standings cache it shares with the page.
    pub fn new(store: Store, cfg: ServiceConfig, standings: Arc<StandingsCache>) -> LadderService {
        LadderService {
            store,
            cfg: Arc::new(cfg),
            standings,
            schedule_lock: Mutex::new(()),
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

    /// Ratings for scheduling, from the standings cache (refit as games arrive,
    /// on the blocking pool, never under a lock the scheduler holds).
    async fn candidates(
        &self,
        c: &CompetitionRow,
        bots: &[BotRow],
    ) -> Result<(Vec<Candidate>, schedule::Meetings, Vec<Vec<i64>>), Status> {
        let st = self
            .standings
            .get(c)
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let by_name: HashMap<&str, &crate::standings::Standing> =
            st.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        let by_bot: HashMap<i64, (f64, f64, u64)> = bots
            .iter()
            .map(|b| {
                let (elo, sd, g) = by_name
                    .get(b.name.as_str())
                    .map_or((0.0, crate::rating::PRIOR_SD_ELO, 0), |r| {
                        (r.elo, r.ci95 / 1.959964, r.games)
                    });
                (b.id, (elo, sd, g))
            })
            .collect();
        // Games in groups not yet played count too, so a new bot is not scheduled
        // into every group at once.
        let groups = self.store.groups(c.id).await.map_err(status_of)?;
        let mut pending: HashMap<i64, u64> = HashMap::new();
        let mut met = schedule::Meetings::new();
        for g in &groups {
            if g.status != GroupStatus::Done {
                for b in &g.bots {
                    *pending.entry(*b).or_default() += c.seats as u64;
                }
            }
            for (i, &a) in g.bots.iter().enumerate() {
                for &b in &g.bots[i + 1..] {
                    *met.entry((a.min(b), a.max(b))).or_default() += c.seats as u64;
                }
            }
        }
        let candidates = bots
            .iter()
            .map(|b| {
                let (elo, sd, g) =
                    by_bot
                        .get(&b.id)
                        .copied()
                        .unwrap_or((0.0, crate::rating::PRIOR_SD_ELO, 0));
                Candidate {
                    id: b.id,
                    elo,
                    sd,
                    games: g + pending.get(&b.id).copied().unwrap_or(0),
                }
            })
            .collect();
        let orders = groups.into_iter().map(|g| g.bots).collect();
        Ok((candidates, met, orders))
    }

    /// Schedules one group in the open competition with the fewest games that can
    /// take one. Returns whether it did.
    async fn schedule_one(&self) -> Result<bool, Status> {
        let _guard = self.schedule_lock.lock().await;
        let mut open = Vec::new();
        for c in self.store.competitions().await.map_err(status_of)? {
            if c.status != CompetitionStatus::Open {
                continue;
            }
            let groups = self.store.group_count(c.id).await.map_err(status_of)?;
            if c.max_games > 0 && groups * c.seats >= c.max_games {
                continue;
            }
            open.push((groups, c));
        }
        open.sort_by_key(|(g, c)| (*g, c.id));
        for (_, c) in open {
            let bots = self.store.entrants(c.id).await.map_err(status_of)?;
            let (candidates, met, orders) = self.candidates(&c, &bots).await?;
            if let Some(ids) = schedule::pick(&candidates, c.seats as usize, &met) {
                // With 3+ seats, the orientation that evens out who follows whom.
                let ids = referee::seating::balanced_order(ids, orders.iter().map(Vec::as_slice));
                // None: another server took the number; the next lease tries again.
                self.store.schedule_next(&c, &ids).await.map_err(status_of)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A group's competition, and every bot by key.
    async fn group_context(
        &self,
        group: &crate::store::GroupRow,
    ) -> Result<(CompetitionRow, HashMap<i64, BotRow>), Status> {
        let c = self
            .store
            .competitions()
            .await
            .map_err(status_of)?
            .into_iter()
            .find(|c| c.id == group.competition_id)
            .ok_or_else(|| Status::internal(format!("group {} has no competition", group.id)))?;
        let bots = self
            .store
            .bots()
            .await
            .map_err(status_of)?
            .into_iter()
            .map(|b| (b.id, b))
            .collect();
        Ok((c, bots))
    }

    /// Checks a group's reported records against what was leased and replays each.
    fn verify(
        c: &CompetitionRow,
        group: &crate::store::GroupRow,
        bots: &HashMap<i64, BotRow>,
        texts: &[String],
    ) -> Result<Vec<crate::store::NewGame>, Status> {
        let n = c.seats as usize;
        if texts.len() != n {
            return Err(Status::invalid_argument(format!(
                "a group of {n}-seat games has {n} records (one per rotation); got {}",
                texts.len()
            )));
        }
        let mut games = Vec::with_capacity(n);
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
            games.push(new_game(c.id, group.id, r, seat_bots, &rec));
        }
        Ok(games)
    }
}

#[tonic::async_trait]
impl Ladder for LadderService {
    async fn register_bot(&self, req: Request<RegisterBotRequest>) -> Result<Response<BotInfo>, Status> {
        check_role(&req, &self.cfg, Role::Admin)?;
        let r = req.into_inner();
        valid_name("bot name", &r.name)?;
        engine::game_info(&r.game).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let spec = BotSpec::parse(&r.spec).map_err(Status::invalid_argument)?;
        if spec == BotSpec::Human {
            return Err(Status::invalid_argument("a ladder bot cannot be `human`"));
        }
        let mut env = Vec::with_capacity(r.env.len());
        for v in &r.env {
            let pair = referee::sandbox::parse_env_pair(&format!("{}={}", v.key, v.value))
                .map_err(|e| Status::invalid_argument(format!("environment: {e}")))?;
            env.push(pair);
        }
        if !env.is_empty() && !matches!(spec, BotSpec::Process { .. }) {
            return Err(Status::invalid_argument(
                "only a program has an environment: this bot is not one",
            ));
        }
        let bot = self
            .store
            .register_bot(&r.name, &r.game, &spec.to_string(), &env)
            .await
            .map_err(status_of)?;
        for c in self.store.competitions().await.map_err(status_of)? {
            if c.status == CompetitionStatus::Open && c.game == bot.game {
                self.store.add_entrant(c.id, bot.id).await.map_err(status_of)?;
            }
        }
        tracing::info!(bot = %bot.name, game = %bot.game, "bot registered");
        Ok(Response::new(BotInfo {
            id: bot.id,
            name: bot.name,
            game: bot.game,
            spec: bot.spec,
            env_keys: bot.env.into_iter().map(|(k, _)| k).collect(),
        }))
    }

    async fn open_competition(
        &self,
        req: Request<OpenCompetitionRequest>,
    ) -> Result<Response<CompetitionInfo>, Status> {
        check_role(&req, &self.cfg, Role::Admin)?;
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
                seed: r.seed as i64,
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
        check_role(&req, &self.cfg, Role::Admin)?;
        let name = req.into_inner().name;
        self.store.set_status(&name, false).await.map_err(status_of)?;
        let c = self.competition_named(&name).await?;
        Ok(Response::new(self.competition_info(&c).await?))
    }

    async fn list_competitions(
        &self,
        req: Request<ListCompetitionsRequest>,
    ) -> Result<Response<ListCompetitionsReply>, Status> {
        check_role(&req, &self.cfg, Role::Worker)?;
        let mut competitions = Vec::new();
        for c in self.store.competitions().await.map_err(status_of)? {
            competitions.push(self.competition_info(&c).await?);
        }
        Ok(Response::new(ListCompetitionsReply { competitions }))
    }

    async fn standings(&self, req: Request<StandingsRequest>) -> Result<Response<StandingsReply>, Status> {
        check_role(&req, &self.cfg, Role::Worker)?;
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
        check_role(&req, &self.cfg, Role::Worker)?;
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
        check_role(&req, &self.cfg, Role::Worker)?;
        let worker = req.into_inner().worker;
        let token = format!("{:016x}{:016x}", rand_u64(), rand_u64());
        for attempt in 0..3 {
            let now = crate::store::now_ms();
            let lease_ms = self.cfg.lease.as_millis() as i64;
            if let Some(g) = self
                .store
                .lease(&worker, &token, now, now + lease_ms)
                .await
                .map_err(status_of)?
            {
                let (c, bots) = self.group_context(&g).await?;
                tracing::info!(%worker, group = g.id, competition = %c.name, "group leased");
                return Ok(Response::new(LeaseReply {
                    has_work: true,
                    lease: token,
                    group_id: g.id,
                    competition: c.name.clone(),
                    game: c.game.clone(),
                    options: c.options.clone(),
                    seed: g.seed as u64,
                    group_no: g.group_no as u64,
                    entrants: g
                        .bots
                        .iter()
                        .map(|id| Entrant {
                            bot: bots.get(id).map(|b| b.name.clone()).unwrap_or_default(),
                            spec: bots.get(id).map(|b| b.spec.clone()).unwrap_or_default(),
                            env: bots
                                .get(id)
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
                        })
                        .collect(),
                    time: c.time.clone(),
                    expires_in_ms: lease_ms as u64,
                    groups_in_progress: false,
                }));
            }
            if attempt < 2 && !self.schedule_one().await? {
                break;
            }
        }
        let in_progress = self.store.groups_in_progress().await.map_err(status_of)?;
        Ok(Response::new(LeaseReply {
            groups_in_progress: in_progress > 0,
            ..LeaseReply::default()
        }))
    }

    async fn report(&self, req: Request<ReportRequest>) -> Result<Response<ReportReply>, Status> {
        check_role(&req, &self.cfg, Role::Worker)?;
        let mut r = req.into_inner();
        let group = self
            .store
            .group(r.group_id)
            .await
            .map_err(status_of)?
            .ok_or_else(|| Status::not_found(format!("no group {}", r.group_id)))?;
        let (c, bots) = self.group_context(&group).await?;
        // Replaying a group is CPU work: on the blocking pool, not an executor thread.
        let (checked, records) = (group.clone(), std::mem::take(&mut r.records));
        let games = tokio::task::spawn_blocking(move || Self::verify(&c, &checked, &bots, &records))
            .await
            .map_err(|e| Status::internal(format!("the replay failed: {e}")))?
            .inspect_err(|e| {
                tracing::warn!(group = group.id, "report refused: {}", e.message());
            })?;
        match self
            .store
            .complete_lease(group.id, &r.lease, &games)
            .await
            .map_err(status_of)?
        {
            Completion::Recorded => Ok(Response::new(ReportReply {
                outcome: "recorded".into(),
            })),
            Completion::AlreadyDone => Ok(Response::new(ReportReply {
                outcome: "already_recorded".into(),
            })),
            Completion::LeaseLost => Err(Status::failed_precondition(format!(
                "the lease on group {} expired and the group went to another worker",
                group.id
            ))),
        }
    }
}

/// Unpredictable enough for lease tokens (which only stop stale reports; the
/// worker token is the secret).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

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
    let svc = LadderServer::new(LadderService::new(store, cfg, standings));
    let result = tonic::transport::Server::builder()
        .add_service(svc)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    let _ = stop_tx.send(true);
    if let Some(web) = web {
        web.await??;
    }
    Ok(result?)
}
