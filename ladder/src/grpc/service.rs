//! Each call of `ladder.proto`: its caller found from its token, its message
//! turned into the service's types, the service asked, the answer turned back.

use super::convert::*;
use super::require_token::bearer;
use crate::app::{BotAsk, CompetitionAsk, LadderService};
use crate::store::{GameId, GroupId};
use proto::ladder::ladder_server::Ladder;
use proto::ladder::*;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// How much of an artifact goes in one message of `FetchArtifact`.
pub const ARTIFACT_CHUNK: usize = 1 << 20;

/// `ladder.proto`'s `Ladder` service over the ladder's.
pub struct GrpcLadder {
    app: Arc<LadderService>,
}

impl GrpcLadder {
    /// The gRPC service of `app`.
    pub fn new(app: Arc<LadderService>) -> GrpcLadder {
        GrpcLadder { app }
    }

    async fn admin<T>(&self, req: &Request<T>) -> Result<crate::app::AdminCall, Status> {
        Ok(self.app.admin(bearer(req.metadata())?).await?)
    }

    async fn host<T>(&self, req: &Request<T>) -> Result<crate::app::HostCall, Status> {
        Ok(self.app.host(bearer(req.metadata())?).await?)
    }

    async fn worker<T>(&self, req: &Request<T>) -> Result<crate::store::WorkerRow, Status> {
        Ok(self.app.worker(bearer(req.metadata())?).await?)
    }

    async fn author<T>(&self, req: &Request<T>) -> Result<crate::store::AuthorRow, Status> {
        Ok(self.app.author(bearer(req.metadata())?).await?)
    }
}

fn bot_ask(r: RegisterBotRequest) -> BotAsk {
    BotAsk {
        name: r.name,
        game: r.game,
        spec: r.spec,
        env: r.env.into_iter().map(|v| (v.key, v.value)).collect(),
    }
}

fn ids(group_ids: &[i64]) -> Vec<GroupId> {
    group_ids.iter().map(|&id| GroupId(id)).collect()
}

#[tonic::async_trait]
impl Ladder for GrpcLadder {
    async fn add_worker(&self, req: Request<AddWorkerRequest>) -> Result<Response<AddWorkerReply>, Status> {
        let admin = self.admin(&req).await?;
        let w = self.app.add_worker(&admin, &req.into_inner().name).await?;
        Ok(Response::new(AddWorkerReply {
            name: w.name,
            token: w.token,
        }))
    }

    async fn revoke_worker(&self, req: Request<WorkerRequest>) -> Result<Response<WorkerInfo>, Status> {
        let admin = self.admin(&req).await?;
        let audit = self.app.revoke_worker(&admin, &req.into_inner().name).await?;
        Ok(Response::new(worker_info(audit)))
    }

    async fn list_workers(
        &self,
        req: Request<ListWorkersRequest>,
    ) -> Result<Response<ListWorkersReply>, Status> {
        let admin = self.admin(&req).await?;
        let workers = self.app.list_workers(&admin).await?;
        Ok(Response::new(ListWorkersReply {
            workers: workers.into_iter().map(worker_info).collect(),
        }))
    }

    async fn void_worker(&self, req: Request<WorkerRequest>) -> Result<Response<VoidWorkerReply>, Status> {
        let admin = self.admin(&req).await?;
        let name = req.into_inner().name;
        let voided = self.app.void_worker(&admin, &name).await?;
        Ok(Response::new(VoidWorkerReply {
            name,
            groups: voided.groups,
            games: voided.games,
        }))
    }

    async fn register_bot(&self, req: Request<RegisterBotRequest>) -> Result<Response<BotInfo>, Status> {
        let admin = self.admin(&req).await?;
        let bot = self.app.register_bot(&admin, &bot_ask(req.into_inner())).await?;
        Ok(Response::new(bot_info(bot)))
    }

    async fn list_bots(&self, req: Request<ListBotsRequest>) -> Result<Response<ListBotsReply>, Status> {
        let admin = self.admin(&req).await?;
        let bots = self.app.list_bots(&admin).await?;
        Ok(Response::new(ListBotsReply {
            bots: bots.into_iter().map(bot_info).collect(),
        }))
    }

    async fn add_author(&self, req: Request<AddAuthorRequest>) -> Result<Response<AddAuthorReply>, Status> {
        let admin = self.admin(&req).await?;
        let r = req.into_inner();
        let (author, token) = self.app.add_author(&admin, &r.name, r.max_bots).await?;
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
        let admin = self.admin(&req).await?;
        let name = req.into_inner().author;
        let author = (!name.is_empty()).then_some(name.as_str());
        let ended = self.app.end_sessions(&admin, author).await?;
        Ok(Response::new(EndSessionsReply { ended }))
    }

    async fn revoke_author(&self, req: Request<AuthorRequest>) -> Result<Response<AuthorInfo>, Status> {
        let admin = self.admin(&req).await?;
        let author = self.app.revoke_author(&admin, &req.into_inner().name).await?;
        Ok(Response::new(AuthorInfo {
            name: author.name,
            revoked: author.revoked_ms.is_some(),
            max_bots: u32::try_from(author.max_bots).unwrap_or(u32::MAX),
        }))
    }

    async fn set_author(&self, req: Request<SetAuthorRequest>) -> Result<Response<AuthorInfo>, Status> {
        let admin = self.admin(&req).await?;
        let r = req.into_inner();
        let author = self.app.set_author_max_bots(&admin, &r.name, r.max_bots).await?;
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
        let author = self.author(&req).await?;
        use futures_util::StreamExt;
        let chunks = req
            .into_inner()
            .map(|c| c.map(|c| c.data).map_err(|s| s.message().to_owned()));
        let stored = self.app.submit(&author, chunks).await?;
        let mut bots = Vec::with_capacity(stored.bots.len());
        for b in stored.bots {
            bots.push(bot_info(self.app.bot_view(b).await?));
        }
        Ok(Response::new(SubmitReply {
            bots,
            source_sha256: stored.source_sha256,
        }))
    }

    async fn lease_prep(&self, req: Request<LeasePrepRequest>) -> Result<Response<LeasePrepReply>, Status> {
        let worker = self.worker(&req).await?;
        let job = self.app.lease_prep(&worker, &req.into_inner().runtimes).await?;
        Ok(Response::new(lease_prep_reply(job)))
    }

    async fn report_prep(
        &self,
        req: Request<ReportPrepRequest>,
    ) -> Result<Response<ReportPrepReply>, Status> {
        let worker = self.worker(&req).await?;
        let report = prep_report(req.into_inner())?;
        let bot = self.app.report_prep(&worker, &report).await?;
        Ok(Response::new(ReportPrepReply {
            status: BotStatus::from(bot.status).into(),
        }))
    }

    async fn upload_artifact(
        &self,
        req: Request<tonic::Streaming<UploadChunk>>,
    ) -> Result<Response<ArtifactInfo>, Status> {
        let worker = self.worker(&req).await?;
        use futures_util::StreamExt;
        let chunks = req
            .into_inner()
            .map(|c| c.map(|c| c.data).map_err(|s| s.message().to_owned()));
        let (sha256, size) = self.app.upload_artifact(&worker, chunks).await?;
        Ok(Response::new(ArtifactInfo { sha256, size }))
    }

    type FetchArtifactStream = tokio_stream::Iter<std::vec::IntoIter<Result<UploadChunk, Status>>>;

    async fn fetch_artifact(
        &self,
        req: Request<FetchArtifactRequest>,
    ) -> Result<Response<Self::FetchArtifactStream>, Status> {
        let worker = self.worker(&req).await?;
        let bytes = self.app.fetch_artifact(&worker, &req.into_inner().sha256).await?;
        let chunks: Vec<Result<UploadChunk, Status>> = bytes
            .chunks(ARTIFACT_CHUNK)
            .map(|c| Ok(UploadChunk { data: c.to_vec() }))
            .collect();
        Ok(Response::new(tokio_stream::iter(chunks)))
    }

    async fn my_bot_log(&self, req: Request<MyBotRequest>) -> Result<Response<MyBotLogReply>, Status> {
        let author = self.author(&req).await?;
        let log = self.app.my_bot_log(&author, &req.into_inner().name).await?;
        Ok(Response::new(MyBotLogReply {
            bot: Some(bot_info(log.bot)),
            source_sha256: log.logs.source_sha256.unwrap_or_default(),
            build_log: log.logs.build_log,
            check_report: log.logs.check_report,
        }))
    }

    async fn game_logs(&self, req: Request<GameLogsRequest>) -> Result<Response<GameLogsReply>, Status> {
        let caller = self.app.caller(bearer(req.metadata())?).await?;
        let id = GameId(req.into_inner().game_id);
        let seats = self.app.game_logs(&caller, id).await?;
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
        let author = self.author(&req).await?;
        let r = req.into_inner();
        let opened = self.app.challenge(&author, &r.bot, &r.opponent, r.games).await?;
        Ok(Response::new(ChallengeInfo {
            games: opened.competition.max_games as u32,
            competition: opened.competition.name,
            bot: opened.bot.name,
            opponent: opened.opponent.name,
            played: 0,
            game_ids: vec![],
            created_ms: self.app.store().now_ms(),
            withdrawn: String::new(),
        }))
    }

    async fn enter_season(
        &self,
        req: Request<EnterSeasonRequest>,
    ) -> Result<Response<EnterSeasonReply>, Status> {
        let author = self.author(&req).await?;
        let r = req.into_inner();
        let entry = self.app.enter_season(&author, &r.competition, &r.bot).await?;
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
        let author = self.author(&req).await?;
        let all = self.app.challenges(&author).await?;
        Ok(Response::new(MyChallengesReply {
            challenges: all.into_iter().map(challenge_info).collect(),
        }))
    }

    async fn my_bots(&self, req: Request<MyBotsRequest>) -> Result<Response<ListBotsReply>, Status> {
        let author = self.author(&req).await?;
        let mine = self.app.my_bots(&author).await?;
        Ok(Response::new(ListBotsReply {
            bots: mine.into_iter().map(bot_info).collect(),
        }))
    }

    async fn set_my_bot_status(
        &self,
        req: Request<SetBotStatusRequest>,
    ) -> Result<Response<BotInfo>, Status> {
        let author = self.author(&req).await?;
        let r = req.into_inner();
        let status = settable_status(r.status, true)?;
        let bot = self.app.set_my_bot_status(&author, &r.name, status).await?;
        Ok(Response::new(bot_info(self.app.bot_view(bot).await?)))
    }

    async fn set_bot_status(&self, req: Request<SetBotStatusRequest>) -> Result<Response<BotInfo>, Status> {
        let admin = self.admin(&req).await?;
        let r = req.into_inner();
        let status = settable_status(r.status, false)?;
        let bot = self
            .app
            .set_bot_status(&admin, &r.name, status, &r.reason)
            .await?;
        Ok(Response::new(bot_info(bot)))
    }

    async fn update_bot(&self, req: Request<RegisterBotRequest>) -> Result<Response<BotInfo>, Status> {
        let admin = self.admin(&req).await?;
        let bot = self.app.update_bot(&admin, &bot_ask(req.into_inner())).await?;
        Ok(Response::new(bot_info(bot)))
    }

    async fn open_competition(
        &self,
        req: Request<OpenCompetitionRequest>,
    ) -> Result<Response<CompetitionInfo>, Status> {
        let admin = self.admin(&req).await?;
        let r = req.into_inner();
        let ask = CompetitionAsk {
            name: r.name,
            game: r.game,
            options: r.options,
            seats: (r.seats != 0).then_some(r.seats as usize),
            seed: r.seed,
            max_games: r.max_games,
            clock: (!r.tc.is_empty()).then_some(r.tc),
            move_time_ms: (r.movetime_ms != 0).then_some(r.movetime_ms),
            independent_seeds: r.independent_seeds,
            deadline_ms: r.deadline_ms,
            finals: crate::season::FinalsPlan {
                top: r.finals_top,
                groups: r.finals_groups,
                until_separated: r.finals_until_separated,
                max_games: r.finals_max_games,
            },
        };
        let c = self.app.open_competition(&admin, &ask).await?;
        Ok(Response::new(competition_info(c)))
    }

    async fn close_competition(
        &self,
        req: Request<CloseCompetitionRequest>,
    ) -> Result<Response<CompetitionInfo>, Status> {
        let admin = self.admin(&req).await?;
        let c = self.app.close_competition(&admin, &req.into_inner().name).await?;
        Ok(Response::new(competition_info(c)))
    }

    async fn list_competitions(
        &self,
        req: Request<ListCompetitionsRequest>,
    ) -> Result<Response<ListCompetitionsReply>, Status> {
        let host = self.host(&req).await?;
        let all = self.app.list_competitions(&host).await?;
        Ok(Response::new(ListCompetitionsReply {
            competitions: all.into_iter().map(competition_info).collect(),
        }))
    }

    async fn standings(&self, req: Request<StandingsRequest>) -> Result<Response<StandingsReply>, Status> {
        let host = self.host(&req).await?;
        let (c, st) = self
            .app
            .competition_standings(&host, &req.into_inner().competition)
            .await?;
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
        let host = self.host(&req).await?;
        let r = req.into_inner();
        let records = self
            .app
            .game_records(&host, &r.competition, GameId(r.after_id), r.limit)
            .await?
            .into_iter()
            .map(|(id, json)| StoredRecord { id: id.0, json })
            .collect();
        Ok(Response::new(GameRecordsReply { records }))
    }

    async fn lease(&self, req: Request<LeaseRequest>) -> Result<Response<LeaseReply>, Status> {
        let worker = self.worker(&req).await?;
        let leased = self.app.lease_groups(&worker, 1, &[]).await?;
        Ok(Response::new(match leased.groups.into_iter().next() {
            Some(g) => lease_reply(g),
            None => LeaseReply {
                groups_in_progress: leased.groups_in_progress,
                retry_after_ms: leased.retry_after.map_or(0, |d| d.as_millis() as u32),
                ..LeaseReply::default()
            },
        }))
    }

    async fn report(&self, req: Request<ReportRequest>) -> Result<Response<ReportReply>, Status> {
        let worker = self.worker(&req).await?;
        let verdict = self
            .app
            .report_groups(&worker, vec![group_report(req.into_inner())])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| Status::internal("no outcome for a report"))??;
        Ok(Response::new(ReportReply {
            outcome: report_outcome(verdict).into(),
        }))
    }

    async fn lease_groups(
        &self,
        req: Request<LeaseGroupsRequest>,
    ) -> Result<Response<LeaseGroupsReply>, Status> {
        let worker = self.worker(&req).await?;
        let r = req.into_inner();
        let leased = self
            .app
            .lease_groups(&worker, r.max_groups as usize, &r.runtimes)
            .await?;
        Ok(Response::new(LeaseGroupsReply {
            groups: leased.groups.into_iter().map(lease_reply).collect(),
            groups_in_progress: leased.groups_in_progress,
            retry_after_ms: leased.retry_after.map_or(0, |d| d.as_millis() as u32),
            queued_ms: leased.queued.as_millis().min(u128::from(u32::MAX)) as u32,
        }))
    }

    async fn renew_leases(
        &self,
        req: Request<RenewLeasesRequest>,
    ) -> Result<Response<RenewLeasesReply>, Status> {
        let worker = self.worker(&req).await?;
        let r = req.into_inner();
        let (renewed, period) = self
            .app
            .renew_leases(&worker, &r.lease, &ids(&r.group_ids))
            .await?;
        Ok(Response::new(RenewLeasesReply {
            renewed: renewed.into_iter().map(|id| id.0).collect(),
            expires_in_ms: period.as_millis() as u64,
        }))
    }

    async fn return_leases(
        &self,
        req: Request<RenewLeasesRequest>,
    ) -> Result<Response<ReturnLeasesReply>, Status> {
        let worker = self.worker(&req).await?;
        let r = req.into_inner();
        let returned = self
            .app
            .return_leases(&worker, &r.lease, &ids(&r.group_ids))
            .await?;
        Ok(Response::new(ReturnLeasesReply {
            returned: returned.into_iter().map(|id| id.0).collect(),
        }))
    }

    async fn collect_garbage(
        &self,
        req: Request<CollectGarbageRequest>,
    ) -> Result<Response<CollectGarbageReply>, Status> {
        let admin = self.admin(&req).await?;
        let done = self.app.collect_garbage(&admin, req.get_ref().dry_run).await?;
        let days = |keep: Option<std::time::Duration>| keep.map_or(0, |d| (d.as_secs() / 86_400) as u32);
        let c = done.collected;
        Ok(Response::new(CollectGarbageReply {
            logs: c.logs,
            log_bytes: c.log_bytes,
            versions: c.versions,
            files: c.files,
            file_bytes: c.file_bytes,
            sessions: c.sessions,
            keep_logs_days: days(done.keep_logs),
            keep_files_days: days(done.keep_files),
        }))
    }

    async fn renew_prep(&self, req: Request<PrepLease>) -> Result<Response<RenewPrepReply>, Status> {
        let worker = self.worker(&req).await?;
        let r = req.into_inner();
        let period = self
            .app
            .renew_prep(&worker, crate::store::BotId(r.bot_id), &r.lease)
            .await?;
        Ok(Response::new(RenewPrepReply {
            expires_in_ms: period.as_millis() as u64,
        }))
    }

    async fn return_prep(&self, req: Request<PrepLease>) -> Result<Response<ReturnPrepReply>, Status> {
        let worker = self.worker(&req).await?;
        let r = req.into_inner();
        let returned = self
            .app
            .return_prep(&worker, crate::store::BotId(r.bot_id), &r.lease)
            .await?;
        Ok(Response::new(ReturnPrepReply { returned }))
    }

    async fn report_groups(
        &self,
        req: Request<ReportGroupsRequest>,
    ) -> Result<Response<ReportGroupsReply>, Status> {
        let worker = self.worker(&req).await?;
        let reports: Vec<_> = req.into_inner().reports.into_iter().map(group_report).collect();
        let ids: Vec<i64> = reports.iter().map(|r| r.group_id.0).collect();
        let verdicts = self.app.report_groups(&worker, reports).await?;
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
                        let status = status(e);
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
