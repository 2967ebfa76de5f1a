//! The gRPC adapter: each call of `ladder.proto` checked for its caller and handed
//! to the service's logic.

use super::auth::{new_token, token_hash};
use super::service::*;
use crate::store::{AuthorId, BotId, BotRow, BotStatus, Completion, GameId, GroupId, NewCompetition};
use proto::ladder::ladder_server::Ladder;
use proto::ladder::*;
use referee::TimeControl;
use referee::spec::BotSpec;
use std::collections::HashMap;
use tonic::{Request, Response, Status};

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
        let names: HashMap<BotId, &str> = all.iter().map(|b| (b.id, b.name.as_str())).collect();
        let authors = self.store.author_names().await.map_err(status_of)?;
        Ok(Response::new(ListBotsReply {
            bots: all.iter().map(|b| bot_info(b, &names, &authors)).collect(),
        }))
    }

    async fn add_author(&self, req: Request<AddAuthorRequest>) -> Result<Response<AddAuthorReply>, Status> {
        self.need_admin(&req).await?;
        let r = req.into_inner();
        let (author, token) = LadderService::add_author(self, &r.name, r.max_bots).await?;
        Ok(Response::new(AddAuthorReply {
            name: author.name,
            token,
            max_bots: u32::try_from(author.max_bots).unwrap_or(u32::MAX),
        }))
    }

    async fn end_sessions(
        &self,
        req: Request<EndSessionsRequest>,
    ) -> Result<Response<EndSessionsReply>, Status> {
        self.need_admin(&req).await?;
        let name = req.into_inner().author;
        let author = if name.is_empty() {
            None
        } else {
            Some(
                self.store
                    .author(&name)
                    .await
                    .map_err(status_of)?
                    .ok_or_else(|| Status::not_found(format!("no author named {name:?}")))?
                    .id,
            )
        };
        let ended = self.store.end_sessions(author).await.map_err(status_of)?;
        tracing::info!(author = %name, ended, "sessions ended");
        Ok(Response::new(EndSessionsReply { ended }))
    }

    async fn revoke_author(&self, req: Request<AuthorRequest>) -> Result<Response<AuthorInfo>, Status> {
        self.need_admin(&req).await?;
        let name = req.into_inner().name;
        let author = self.store.revoke_author(&name).await.map_err(status_of)?;
        self.forget_tokens();
        tracing::info!(author = %name, "author revoked");
        Ok(Response::new(AuthorInfo {
            name: author.name,
            revoked: author.revoked_ms.is_some(),
            max_bots: u32::try_from(author.max_bots).unwrap_or(u32::MAX),
        }))
    }

    async fn submit(
        &self,
        req: Request<tonic::Streaming<UploadChunk>>,
    ) -> Result<Response<SubmitReply>, Status> {
        let author = self.need_author(&req).await?;
        use futures_util::StreamExt;
        let chunks = req.into_inner().map(|c| c.map(|c| c.data));
        let (bots, source_sha256) = LadderService::submit(self, &author, chunks).await?;
        let mut infos = Vec::with_capacity(bots.len());
        for b in &bots {
            infos.push(self.bot_info(b).await?);
        }
        Ok(Response::new(SubmitReply {
            bots: infos,
            source_sha256,
        }))
    }

    async fn lease_prep(&self, req: Request<LeasePrepRequest>) -> Result<Response<LeasePrepReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let reply = LadderService::lease_prep(self, &worker, &req.into_inner().runtimes).await?;
        Ok(Response::new(reply))
    }

    async fn report_prep(
        &self,
        req: Request<ReportPrepRequest>,
    ) -> Result<Response<ReportPrepReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let bot = LadderService::report_prep(self, &worker, req.into_inner()).await?;
        Ok(Response::new(ReportPrepReply {
            status: proto::ladder::BotStatus::from(bot.status).into(),
        }))
    }

    async fn upload_artifact(
        &self,
        req: Request<tonic::Streaming<UploadChunk>>,
    ) -> Result<Response<ArtifactInfo>, Status> {
        self.need_worker(&req).await?;
        use futures_util::StreamExt;
        let chunks = req.into_inner().map(|c| c.map(|c| c.data));
        let (sha256, size) = LadderService::upload_artifact(self, chunks).await?;
        Ok(Response::new(ArtifactInfo { sha256, size }))
    }

    type FetchArtifactStream = tokio_stream::Iter<std::vec::IntoIter<Result<UploadChunk, Status>>>;

    async fn fetch_artifact(
        &self,
        req: Request<FetchArtifactRequest>,
    ) -> Result<Response<Self::FetchArtifactStream>, Status> {
        self.need_worker(&req).await?;
        let sha = req.into_inner().sha256;
        let bytes = match self.store.artifact_row(&sha).await.map_err(status_of)? {
            None => return Err(Status::not_found(format!("no artifact {sha:?}"))),
            Some(Some(bytes)) => bytes,
            Some(None) => match &self.cfg.uploads.objects {
                Some(objects) => objects.get(&sha).await.map_err(ServiceError::Internal)?,
                None => {
                    return Err(ServiceError::Internal(format!(
                        "artifact {sha} is kept in an object store this server was not given (--artifacts)"
                    ))
                    .into());
                }
            },
        };
        let chunks: Vec<Result<UploadChunk, Status>> = bytes
            .chunks(ARTIFACT_CHUNK)
            .map(|c| Ok(UploadChunk { data: c.to_vec() }))
            .collect();
        Ok(Response::new(tokio_stream::iter(chunks)))
    }

    async fn my_bot_log(&self, req: Request<MyBotRequest>) -> Result<Response<MyBotLogReply>, Status> {
        let author = self.need_author(&req).await?;
        let name = req.into_inner().name;
        let bot = self
            .store
            .bot(&name)
            .await
            .map_err(status_of)?
            .filter(|b| b.author_id == Some(author.id))
            .ok_or_else(|| Status::permission_denied(format!("{name:?} is not one of your bots")))?;
        let logs = self.store.bot_logs(bot.id).await.map_err(status_of)?;
        Ok(Response::new(MyBotLogReply {
            bot: Some(self.bot_info(&bot).await?),
            source_sha256: logs.source_sha256.unwrap_or_default(),
            build_log: logs.build_log,
            check_report: logs.check_report,
        }))
    }

    async fn game_logs(&self, req: Request<GameLogsRequest>) -> Result<Response<GameLogsReply>, Status> {
        use super::logs::{LogReader, readable_logs};
        let reader = match self.caller(&req).await? {
            super::auth::Caller::Admin => LogReader::Host,
            super::auth::Caller::Author(a) => LogReader::Author(a.id),
            super::auth::Caller::Worker(_) => {
                return Err(Status::permission_denied(
                    "a game's private logs are its bots' authors' and the host's, never a worker's",
                ));
            }
        };
        let id = GameId(req.into_inner().game_id);
        let redactor = self.redactor().await?;
        let seats = readable_logs(&self.store, reader, id, &redactor)
            .await
            .map_err(status_of)?
            .ok_or_else(|| Status::not_found(format!("no game {id} with a bot of yours")))?;
        Ok(Response::new(GameLogsReply {
            game_id: id.0,
            seats: seats
                .into_iter()
                .map(|s| SeatLogView {
                    seat: s.seat as u32,
                    bot: s.bot,
                    stderr: s.log.stderr,
                    stderr_dropped: s.log.stderr_dropped,
                    info: s
                        .log
                        .info
                        .into_iter()
                        .map(|(move_index, line)| InfoLine { move_index, line })
                        .collect(),
                    faults: s.log.faults,
                })
                .collect(),
        }))
    }

    async fn challenge(&self, req: Request<ChallengeRequest>) -> Result<Response<ChallengeInfo>, Status> {
        let author = self.need_author(&req).await?;
        let r = req.into_inner();
        let opened = LadderService::challenge(self, &author, &r.bot, &r.opponent, r.games)
            .await
            .map_err(Status::from)?;
        Ok(Response::new(ChallengeInfo {
            games: opened.competition.max_games as u32,
            competition: opened.competition.name,
            bot: opened.bot.name,
            opponent: opened.opponent.name,
            played: 0,
            game_ids: vec![],
            created_ms: self.store.now_ms(),
            withdrawn: String::new(),
        }))
    }

    async fn enter_season(
        &self,
        req: Request<EnterSeasonRequest>,
    ) -> Result<Response<EnterSeasonReply>, Status> {
        let author = self.need_author(&req).await?;
        let r = req.into_inner();
        let entry = LadderService::enter_season(self, &author, &r.competition, &r.bot)
            .await
            .map_err(Status::from)?;
        Ok(Response::new(EnterSeasonReply {
            competition: entry.season.name,
            bot: entry.bot.name,
            deadline_ms: entry.deadline_ms,
        }))
    }

    async fn my_challenges(
        &self,
        req: Request<MyChallengesRequest>,
    ) -> Result<Response<MyChallengesReply>, Status> {
        let author = self.need_author(&req).await?;
        let all = self.challenges(&author).await.map_err(Status::from)?;
        Ok(Response::new(MyChallengesReply {
            challenges: all
                .into_iter()
                .map(|c| ChallengeInfo {
                    competition: c.competition,
                    bot: c.bot,
                    opponent: c.opponent,
                    games: c.row.games as u32,
                    played: c.game_ids.len() as u32,
                    game_ids: c.game_ids,
                    created_ms: c.row.created_ms,
                    withdrawn: c.withdrawn.unwrap_or_default(),
                })
                .collect(),
        }))
    }

    async fn my_bots(&self, req: Request<MyBotsRequest>) -> Result<Response<ListBotsReply>, Status> {
        let author = self.need_author(&req).await?;
        let mine = self.store.bots_of_author(author.id).await.map_err(status_of)?;
        let names: HashMap<BotId, &str> = mine.iter().map(|b| (b.id, b.name.as_str())).collect();
        let authors = HashMap::from([(author.id, author.name.clone())]);
        Ok(Response::new(ListBotsReply {
            bots: mine.iter().map(|b| bot_info(b, &names, &authors)).collect(),
        }))
    }

    async fn set_my_bot_status(
        &self,
        req: Request<SetBotStatusRequest>,
    ) -> Result<Response<BotInfo>, Status> {
        let author = self.need_author(&req).await?;
        let r = req.into_inner();
        use proto::ladder::BotStatus as Wire;
        let status = match Wire::try_from(r.status) {
            Ok(Wire::Active) => BotStatus::Active,
            Ok(Wire::Disabled) => BotStatus::Disabled,
            _ => {
                return Err(Status::invalid_argument(
                    "an author sets their bot active (enable) or disabled (disable)",
                ));
            }
        };
        let bot = LadderService::set_my_bot_status(self, &author, &r.name, status).await?;
        Ok(Response::new(self.bot_info(&bot).await?))
    }

    async fn set_bot_status(&self, req: Request<SetBotStatusRequest>) -> Result<Response<BotInfo>, Status> {
        self.need_admin(&req).await?;
        let r = req.into_inner();
        use proto::ladder::BotStatus as Wire;
        let status = match Wire::try_from(r.status) {
            Ok(Wire::Active) => BotStatus::Active,
            Ok(Wire::Disabled) => BotStatus::Disabled,
            Ok(Wire::Removed) => BotStatus::Removed,
            Ok(Wire::Building | Wire::BuildFailed | Wire::Rejected) => {
                return Err(Status::invalid_argument(
                    "only a worker's build and check set an uploaded bot building, build-failed or rejected: \
                     set a bot active, disabled or removed",
                ));
            }
            Ok(Wire::Suspended | Wire::Superseded) => {
                return Err(Status::invalid_argument(
                    "only the server suspends a bot, and only an update supersedes one: \
                     set a bot active, disabled or removed",
                ));
            }
            Ok(Wire::Unspecified) => {
                return Err(Status::invalid_argument(
                    "give the status to set: active, disabled or removed",
                ));
            }
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "{} is not a bot status: set active, disabled or removed (1, 2 or 5)",
                    r.status
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
        // No seats asked for: the game's own number (Cuatto's 4, not its smallest 2),
        // as `referee` plays it, or what its `players` option says.
        let asked = (r.seats != 0).then_some(r.seats as usize);
        let game = engine::new_game(&r.game, &r.options, asked, 0)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let seats = game.seats();
        let time = match (r.tc.is_empty(), r.movetime_ms) {
            (false, 0) => TimeControl::parse_clock(&r.tc),
            (false, _) => return Err(Status::invalid_argument("give tc or movetime_ms, not both")),
            (true, 0) => TimeControl::move_time(5000),
            (true, ms) => TimeControl::move_time(ms),
        }
        .map_err(Status::invalid_argument)?;
        let plan = crate::season::FinalsPlan {
            top: r.finals_top,
            groups: r.finals_groups,
            until_separated: r.finals_until_separated,
            max_games: r.finals_max_games,
        };
        if let Some(deadline) = r.deadline_ms {
            if deadline <= self.store.now_ms() {
                return Err(Status::invalid_argument(format!(
                    "the deadline {} has passed",
                    crate::season::utc(deadline)
                )));
            }
            plan.check(seats as u32).map_err(Status::invalid_argument)?;
        } else if r.finals_top > 0
            || r.finals_groups > 0
            || r.finals_until_separated
            || r.finals_max_games > 0
        {
            return Err(Status::invalid_argument(
                "finals need a deadline (a season): give deadline_ms",
            ));
        }
        // A season's finals take the name `NAME-finals`: keep it free.
        let finals_of = |name: &str| crate::season::finals_name(name);
        if r.deadline_ms.is_some()
            && self
                .store
                .competition(&finals_of(&r.name))
                .await
                .map_err(status_of)?
                .is_some()
        {
            return Err(Status::already_exists(format!(
                "a competition named {:?} exists: a season's finals take that name; choose another",
                finals_of(&r.name)
            )));
        }
        if let Some(season) = r.name.strip_suffix("-finals")
            && let Some(c) = self.store.competition(season).await.map_err(status_of)?
            && self.store.season(c.id).await.map_err(status_of)?.is_some()
        {
            return Err(Status::already_exists(format!(
                "{:?} is the name of season {season:?}'s finals; choose another",
                r.name
            )));
        }
        let new = NewCompetition {
            name: r.name.clone(),
            game: r.game.clone(),
            options: game.options().to_vec(),
            seats: seats as i64,
            format: crate::store::CompetitionFormat::Ladder,
            // Unless the admin gave one: 64 bits no one knows, from which every
            // group's seed derives (`engine::group_seed`).
            seed: r.seed.unwrap_or_else(referee::seed::os_seed) as i64,
            max_games: r.max_games as i64,
            time,
            config: String::new(),
            seeding: if r.independent_seeds {
                crate::store::Seeding::Independent
            } else {
                crate::store::Seeding::Mirrored
            },
        };
        let c = match r.deadline_ms {
            Some(deadline) => self.store.open_season(&new, deadline, plan).await,
            None => self.store.open_competition(&new).await,
        }
        .map_err(status_of)?;
        tracing::info!(competition = %c.name, game = %c.game, seeding = %c.seeding, season = r.deadline_ms.is_some(), "competition opened");
        Ok(Response::new(self.competition_info(&c).await?))
    }

    async fn close_competition(
        &self,
        req: Request<CloseCompetitionRequest>,
    ) -> Result<Response<CompetitionInfo>, Status> {
        self.need_admin(&req).await?;
        let name = req.into_inner().name;
        // A season closes itself, when its finals are played: closing its ladder or
        // finals by hand would strand it (and its seed unrevealed).
        if let Some(c) = self.store.competition(&name).await.map_err(status_of)?
            && (self.store.season(c.id).await.map_err(status_of)?.is_some()
                || self
                    .store
                    .season_of_finals(c.id)
                    .await
                    .map_err(status_of)?
                    .is_some())
        {
            return Err(Status::failed_precondition(format!(
                "{name:?} belongs to a season, which closes itself once its finals are played"
            )));
        }
        self.store.set_status(&name, false).await.map_err(status_of)?;
        let c = self.competition_named(&name).await?;
        Ok(Response::new(self.competition_info(&c).await?))
    }

    async fn list_competitions(
        &self,
        req: Request<ListCompetitionsRequest>,
    ) -> Result<Response<ListCompetitionsReply>, Status> {
        self.need_host(&req).await?;
        let mut competitions = Vec::new();
        for c in self.store.competitions().await.map_err(status_of)? {
            competitions.push(self.competition_info(&c).await?);
        }
        Ok(Response::new(ListCompetitionsReply { competitions }))
    }

    async fn standings(&self, req: Request<StandingsRequest>) -> Result<Response<StandingsReply>, Status> {
        self.need_host(&req).await?;
        let c = self.competition_named(&req.into_inner().competition).await?;
        let st = self
            .standings
            .current(&c)
            .await
            .map_err(|e| ServiceError::Internal(format!("fitting the standings: {e}")))?;
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
                    separated: match r.separated {
                        None => Separation::None,
                        Some(rating::separation::Separation::NeverLost) => Separation::NeverLost,
                        Some(rating::separation::Separation::NeverWon) => Separation::NeverWon,
                    } as i32,
                })
                .collect(),
        }))
    }

    async fn game_records(
        &self,
        req: Request<GameRecordsRequest>,
    ) -> Result<Response<GameRecordsReply>, Status> {
        self.need_host(&req).await?;
        let r = req.into_inner();
        let c = self.competition_named(&r.competition).await?;
        let limit = if r.limit == 0 { 1000 } else { r.limit.min(1000) };
        let records = self
            .store
            .records(c.id, GameId(r.after_id), i64::from(limit))
            .await
            .map_err(status_of)?
            .into_iter()
            .map(|(id, json)| StoredRecord { id: id.0, json })
            .collect();
        Ok(Response::new(GameRecordsReply { records }))
    }

    async fn lease(&self, req: Request<LeaseRequest>) -> Result<Response<LeaseReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let reply = self.lease_groups(&worker, 1, &[]).await?;
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
            .ok_or_else(|| ServiceError::Internal("no outcome for a report".into()))??;
        Ok(Response::new(ReportReply {
            outcome: report_outcome(verdict).into(),
        }))
    }

    async fn lease_groups(
        &self,
        req: Request<LeaseGroupsRequest>,
    ) -> Result<Response<LeaseGroupsReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let r = req.into_inner();
        let runtimes: Vec<String> = r.runtimes.into_iter().take(64).collect();
        Ok(Response::new(
            LadderService::lease_groups(self, &worker, r.max_groups as usize, &runtimes).await?,
        ))
    }

    async fn renew_leases(
        &self,
        req: Request<RenewLeasesRequest>,
    ) -> Result<Response<RenewLeasesReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let r = req.into_inner();
        let ids: Vec<GroupId> = r.group_ids.iter().map(|&id| GroupId(id)).collect();
        let (renewed, period) = LadderService::renew_leases(self, &worker, &r.lease, &ids).await?;
        Ok(Response::new(RenewLeasesReply {
            renewed: renewed.into_iter().map(|id| id.0).collect(),
            expires_in_ms: period.as_millis() as u64,
        }))
    }

    async fn return_leases(
        &self,
        req: Request<RenewLeasesRequest>,
    ) -> Result<Response<ReturnLeasesReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let r = req.into_inner();
        let ids: Vec<GroupId> = r.group_ids.iter().map(|&id| GroupId(id)).collect();
        let returned = LadderService::return_leases(self, &worker, &r.lease, &ids).await?;
        Ok(Response::new(ReturnLeasesReply {
            returned: returned.into_iter().map(|id| id.0).collect(),
        }))
    }

    async fn collect_garbage(
        &self,
        req: Request<CollectGarbageRequest>,
    ) -> Result<Response<CollectGarbageReply>, Status> {
        self.need_admin(&req).await?;
        let c = LadderService::collect_garbage(self, req.get_ref().dry_run).await?;
        let days = |keep: Option<std::time::Duration>| keep.map_or(0, |d| (d.as_secs() / 86_400) as u32);
        Ok(Response::new(CollectGarbageReply {
            logs: c.logs,
            log_bytes: c.log_bytes,
            versions: c.versions,
            files: c.files,
            file_bytes: c.file_bytes,
            sessions: c.sessions,
            keep_logs_days: days(self.cfg.retention.logs),
            keep_files_days: days(self.cfg.retention.files),
        }))
    }

    async fn renew_prep(&self, req: Request<PrepLease>) -> Result<Response<RenewPrepReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let period = LadderService::renew_prep(self, &worker, req.get_ref()).await?;
        Ok(Response::new(RenewPrepReply {
            expires_in_ms: period.as_millis() as u64,
        }))
    }

    async fn return_prep(&self, req: Request<PrepLease>) -> Result<Response<ReturnPrepReply>, Status> {
        let worker = self.need_worker(&req).await?;
        let returned = LadderService::return_prep(self, &worker, req.get_ref()).await?;
        Ok(Response::new(ReturnPrepReply { returned }))
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
                        outcome: report_outcome(done).into(),
                        ..GroupOutcome::default()
                    },
                    Err(e) => {
                        let status = Status::from(e);
                        GroupOutcome {
                            group_id,
                            outcome: ReportOutcome::Refused.into(),
                            code: status.code() as u32,
                            message: status.message().to_owned(),
                        }
                    }
                })
                .collect(),
        }))
    }
}

/// How a stored report is named to the worker.
pub(super) fn report_outcome(done: Completion) -> ReportOutcome {
    match done {
        Completion::Recorded => ReportOutcome::Recorded,
        Completion::AlreadyDone | Completion::LeaseLost => ReportOutcome::AlreadyRecorded,
    }
}

impl From<BotStatus> for proto::ladder::BotStatus {
    fn from(status: BotStatus) -> Self {
        match status {
            BotStatus::Active => Self::Active,
            BotStatus::Disabled => Self::Disabled,
            BotStatus::Suspended => Self::Suspended,
            BotStatus::Superseded => Self::Superseded,
            BotStatus::Removed => Self::Removed,
            BotStatus::Building => Self::Building,
            BotStatus::BuildFailed => Self::BuildFailed,
            BotStatus::Rejected => Self::Rejected,
        }
    }
}

impl From<crate::store::CompetitionStatus> for CompetitionStatus {
    fn from(status: crate::store::CompetitionStatus) -> Self {
        match status {
            crate::store::CompetitionStatus::Open => Self::Open,
            crate::store::CompetitionStatus::Closed => Self::Closed,
        }
    }
}

/// A spec and environment as the admin gave them, checked: it parses, a built-in
/// exists and takes its options, a command line splits, only a program has an
/// environment. Returns them as stored.
pub(super) fn checked_spec(text: &str, vars: &[EnvVar]) -> Result<(String, Vec<(String, String)>), Status> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(Status::invalid_argument(format!(
            "the bot spec is {} bytes; at most {MAX_SPEC_BYTES}",
            text.len()
        )));
    }
    if text.contains('\0')
        || vars
            .iter()
            .any(|v| v.key.contains('\0') || v.value.contains('\0'))
    {
        return Err(Status::invalid_argument(
            "a NUL byte in the spec or the environment (no program can be given one)",
        ));
    }
    if vars.len() > MAX_ENV_VARS {
        return Err(Status::invalid_argument(format!(
            "{} environment variables; at most {MAX_ENV_VARS}",
            vars.len()
        )));
    }
    if let Some(v) = vars.iter().find(|v| v.value.len() > MAX_ENV_VALUE_BYTES) {
        return Err(Status::invalid_argument(format!(
            "environment: {} is {} bytes; at most {MAX_ENV_VALUE_BYTES}",
            v.key,
            v.value.len()
        )));
    }
    let spec = BotSpec::parse(text).map_err(|e| Status::invalid_argument(format!("the bot spec: {e}")))?;
    if spec == BotSpec::Human {
        return Err(Status::invalid_argument("a ladder bot cannot be `human`"));
    }
    spec.check()
        .map_err(|e| Status::invalid_argument(format!("the bot spec: {e}")))?;
    let mut env: Vec<(String, String)> = Vec::with_capacity(vars.len());
    for v in vars {
        let pair = referee::sandbox::parse_env_pair(&format!("{}={}", v.key, v.value))
            .map_err(|e| Status::invalid_argument(format!("environment: {e}")))?;
        if env.iter().any(|(k, _)| *k == pair.0) {
            return Err(Status::invalid_argument(format!(
                "environment: {} is given twice",
                pair.0
            )));
        }
        env.push(pair);
    }
    // A program has an environment; a gRPC bot only its secret, which goes with
    // every call over TLS (never over plain grpc://).
    let grpcs = matches!(&spec, BotSpec::Grpc { url } if url.starts_with("grpcs://"));
    let secret_only = env.iter().all(|(k, _)| k == referee::session::BOT_SECRET_ENV);
    let may_have_env = matches!(spec, BotSpec::Process { .. }) || (grpcs && secret_only);
    if !env.is_empty() && !may_have_env {
        return Err(Status::invalid_argument(format!(
            "only a program has an environment, and a grpcs:// bot only its secret ({}): this bot is neither",
            referee::session::BOT_SECRET_ENV
        )));
    }
    Ok((spec.to_string(), env))
}

/// How much of an artifact goes in one message of `FetchArtifact`.
pub const ARTIFACT_CHUNK: usize = 1 << 20;

/// Longest bot spec the admin may register.
const MAX_SPEC_BYTES: usize = 4096;
/// Most environment variables a bot may be registered with.
const MAX_ENV_VARS: usize = 64;
/// Longest value of one of them.
const MAX_ENV_VALUE_BYTES: usize = 4096;

/// What the admin (or its author) is told of a bot (its environment's values never).
pub(super) fn bot_info(
    b: &BotRow,
    names: &HashMap<BotId, &str>,
    authors: &HashMap<AuthorId, String>,
) -> BotInfo {
    BotInfo {
        id: b.id.0,
        name: b.name.clone(),
        game: b.game.clone(),
        spec: b.spec.clone(),
        env_keys: b.env.iter().map(|(k, _)| k.clone()).collect(),
        status: proto::ladder::BotStatus::from(b.status).into(),
        status_reason: b.status_reason.clone(),
        version: b.version,
        previous: b
            .previous_id
            .and_then(|id| names.get(&id).map(|n| (*n).to_owned()))
            .unwrap_or_default(),
        start_failures: b.start_failures,
        author: b
            .author_id
            .and_then(|id| authors.get(&id).cloned())
            .unwrap_or_default(),
        artifact_sha256: b.artifact_sha256.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(key: &str, value: &str) -> EnvVar {
        EnvVar {
            key: key.into(),
            value: value.into(),
        }
    }

    #[test]
    fn specs_and_environments_past_their_limits_are_refused_and_say_why() {
        let ok = checked_spec("./bot --x", &[var("A", "1"), var("B", "2")]).unwrap();
        assert_eq!(ok.1.len(), 2);
        let many: Vec<EnvVar> = (0..10_000).map(|i| var(&format!("V{i}"), "x")).collect();
        let big = "x".repeat(1 << 20);
        for (spec, vars, says) in [
            ("./bot\0x", vec![], "NUL"),
            ("./bot", vec![var("A", "a\0b")], "NUL"),
            ("./bot", vec![var("A", "1"), var("A", "2")], "given twice"),
            ("./bot", many, "at most 64"),
            ("./bot", vec![var("A", &big)], "at most 4096"),
            (big.as_str(), vec![], "at most 4096"),
        ] {
            let e = checked_spec(spec, &vars).unwrap_err();
            assert!(e.message().contains(says), "{says}: {}", e.message());
        }
    }
}
