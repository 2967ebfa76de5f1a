//! The one conversion between `ladder.proto`'s messages and the service's
//! domain types, and the one of its errors into statuses.

use crate::app::{
    BotView, ChallengeView, CompetitionSummary, GroupReport, LeasedGroup, PrepLeased, PrepReport,
    PrepVerdict, ReportedSeatLog, ServiceError, WorkerAudit,
};
use crate::store::{BotStatus, Completion, GroupId};
use proto::ladder as wire;
use tonic::{Code, Status};

/// What the caller is told of a service error: its code, and its text — but
/// of a failure of the server's own only that it failed (the text, which may
/// name tables, queries or a record's contents, goes to the host's log).
pub fn status(e: ServiceError) -> Status {
    let code = match &e {
        ServiceError::InvalidArgument(_) => Code::InvalidArgument,
        ServiceError::NotFound(_) => Code::NotFound,
        ServiceError::Unauthenticated(_) => Code::Unauthenticated,
        ServiceError::AlreadyExists(_) => Code::AlreadyExists,
        ServiceError::PermissionDenied(_) => Code::PermissionDenied,
        ServiceError::FailedPrecondition(_) => Code::FailedPrecondition,
        ServiceError::Unavailable(_) => Code::Unavailable,
        ServiceError::Internal(text) => {
            tracing::error!("a call failed: {text}");
            Code::Internal
        }
    };
    Status::new(code, e.public_message())
}

pub(super) fn worker_info(w: WorkerAudit) -> wire::WorkerInfo {
    wire::WorkerInfo {
        name: w.name,
        revoked: w.revoked,
        groups: w.groups,
        games: w.games,
        faults: w
            .faults
            .into_iter()
            .map(|f| wire::FaultCount {
                kind: f.kind,
                games: f.games,
                rate: f.rate,
                others_rate: f.others_rate,
                z: f.z,
            })
            .collect(),
        flag: w.flag,
        groups_leased: w.groups_leased,
        leases_expired: w.leases_expired,
        expired_rate: w.expired_rate,
        others_expired_rate: w.others_expired_rate,
    }
}

pub(super) fn competition_info(c: CompetitionSummary) -> wire::CompetitionInfo {
    let season = c.season;
    let c_row = c.competition;
    wire::CompetitionInfo {
        status: wire::CompetitionStatus::from(c_row.status).into(),
        name: c_row.name,
        game: c_row.game,
        options: c_row.options,
        seats: c_row.seats as u32,
        games: c.games,
        max_games: c_row.max_games as u64,
        active_bots: c.active_bots,
        bots: c.bots,
        phase: season.as_ref().map(|s| s.phase.clone()).unwrap_or_default(),
        deadline_ms: season.as_ref().map_or(0, |s| s.deadline_ms),
        commitment: season.and_then(|s| s.commitment).unwrap_or_default(),
    }
}

/// What the admin (or its author) is told of a bot (its environment's values never).
pub(super) fn bot_info(v: BotView) -> wire::BotInfo {
    let b = v.bot;
    wire::BotInfo {
        id: b.id.0,
        env_keys: b.env.into_iter().map(|(k, _)| k).collect(),
        status: wire::BotStatus::from(b.status).into(),
        name: b.name,
        game: b.game,
        spec: b.spec,
        status_reason: b.status_reason,
        version: b.version,
        previous: v.previous.unwrap_or_default(),
        start_failures: b.start_failures,
        author: v.author.unwrap_or_default(),
        artifact_sha256: b.artifact_sha256.unwrap_or_default(),
    }
}

pub(super) fn lease_reply(g: LeasedGroup) -> wire::LeaseReply {
    wire::LeaseReply {
        has_work: true,
        lease: g.lease,
        group_id: g.group_id.0,
        competition: g.competition,
        game: g.game,
        options: g.options,
        seed: g.seed,
        group_no: g.group_no,
        entrants: g
            .entrants
            .into_iter()
            .map(|e| wire::Entrant {
                bot: e.bot,
                spec: e.spec,
                artifact_sha256: e.artifact_sha256.unwrap_or_default(),
                env: e
                    .env
                    .into_iter()
                    .map(|(key, value)| wire::EnvVar { key, value })
                    .collect(),
            })
            .collect(),
        time: g.time.to_string(),
        expires_in_ms: g.period.as_millis() as u64,
        groups_in_progress: false,
        retry_after_ms: 0,
        independent_seeds: g.seeding == crate::store::Seeding::Independent,
        author_log_bytes: g.author_log_bytes,
    }
}

pub(super) fn group_report(r: wire::ReportRequest) -> GroupReport {
    GroupReport {
        lease: r.lease,
        group_id: GroupId(r.group_id),
        records: r.records,
        logs: r
            .logs
            .into_iter()
            .map(|l| ReportedSeatLog {
                rotation: l.rotation,
                seat: l.seat,
                stderr: l.stderr,
                stderr_dropped: l.stderr_dropped,
                faults: l.faults,
            })
            .collect(),
    }
}

/// How a stored report is named to the worker.
pub(super) fn report_outcome(done: Completion) -> wire::ReportOutcome {
    match done {
        Completion::Recorded => wire::ReportOutcome::Recorded,
        Completion::AlreadyDone | Completion::LeaseLost => wire::ReportOutcome::AlreadyRecorded,
    }
}

pub(super) fn challenge_info(c: ChallengeView) -> wire::ChallengeInfo {
    wire::ChallengeInfo {
        competition: c.competition,
        bot: c.bot,
        opponent: c.opponent,
        games: c.row.games as u32,
        played: c.game_ids.len() as u32,
        game_ids: c.game_ids,
        created_ms: c.row.created_ms,
        withdrawn: c.withdrawn.unwrap_or_default(),
    }
}

pub(super) fn lease_prep_reply(job: Option<PrepLeased>) -> wire::LeasePrepReply {
    let Some(job) = job else {
        return wire::LeasePrepReply::default();
    };
    wire::LeasePrepReply {
        has_work: true,
        bot_id: job.bot_id.0,
        bot: job.bot,
        game: job.game,
        runtime: job.runtime,
        run: job.run,
        build: job.build,
        secret: job.secret,
        source_sha256: job.source_sha256,
        lease: job.lease,
        expires_in_ms: job.period.as_millis() as u64,
        build_seconds: job.build_seconds,
        check_games: job.check_games,
    }
}

pub(super) fn prep_report(r: wire::ReportPrepRequest) -> Result<PrepReport, Status> {
    let verdict = match wire::PrepOutcome::try_from(r.outcome) {
        Ok(wire::PrepOutcome::Passed) => PrepVerdict::Passed,
        Ok(wire::PrepOutcome::BuildFailed) => PrepVerdict::BuildFailed,
        Ok(wire::PrepOutcome::Rejected) => PrepVerdict::Rejected,
        Ok(wire::PrepOutcome::WorkerTrouble) => PrepVerdict::WorkerTrouble,
        _ => {
            return Err(Status::invalid_argument(
                "say how it went: passed, build-failed, rejected or worker-trouble",
            ));
        }
    };
    Ok(PrepReport {
        bot_id: crate::store::BotId(r.bot_id),
        lease: r.lease,
        verdict,
        build_log: r.build_log,
        artifact_sha256: r.artifact_sha256,
        check_report: r.check_report,
    })
}

/// A status an admin or an author may set, from the wire.
pub(super) fn settable_status(status: i32, author: bool) -> Result<BotStatus, Status> {
    use wire::BotStatus as Wire;
    let say = if author {
        "an author sets their bot active (enable) or disabled (disable)"
    } else {
        "give the status to set: active, disabled or removed"
    };
    match Wire::try_from(status) {
        Ok(Wire::Active) => Ok(BotStatus::Active),
        Ok(Wire::Disabled) => Ok(BotStatus::Disabled),
        Ok(Wire::Removed) if !author => Ok(BotStatus::Removed),
        Ok(Wire::Building) if !author => Ok(BotStatus::Building),
        Ok(Wire::BuildFailed) if !author => Ok(BotStatus::BuildFailed),
        Ok(Wire::Rejected) if !author => Ok(BotStatus::Rejected),
        Ok(Wire::Suspended) if !author => Ok(BotStatus::Suspended),
        Ok(Wire::Superseded) if !author => Ok(BotStatus::Superseded),
        Err(_) if !author => Err(Status::invalid_argument(format!(
            "{status} is not a bot status: set active, disabled or removed (1, 2 or 5)"
        ))),
        _ => Err(Status::invalid_argument(say)),
    }
}

impl From<BotStatus> for wire::BotStatus {
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

impl From<crate::store::CompetitionStatus> for wire::CompetitionStatus {
    fn from(status: crate::store::CompetitionStatus) -> Self {
        match status {
            crate::store::CompetitionStatus::Open => Self::Open,
            crate::store::CompetitionStatus::Closed => Self::Closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database failure reaches a worker as "the server failed", never as the
    /// database's words; refusals keep theirs and their code.
    #[test]
    fn an_internal_failure_is_said_without_its_text() {
        let db = crate::store::StoreError::Corrupt("games row 7: column fault_kinds of table games".into());
        let s = status(db.into());
        assert_eq!(s.code(), Code::Internal);
        assert_eq!(s.message(), crate::app::error::INTERNAL_MESSAGE);
        let refused =
            status(ServiceError::InvalidArgument("record 1: does not parse".into()).about("group 3"));
        assert_eq!(refused.code(), Code::InvalidArgument);
        assert_eq!(refused.message(), "group 3: record 1: does not parse");
        let taken = status(crate::store::StoreError::Conflict("a worker named \"w\" exists".into()).into());
        assert_eq!(taken.code(), Code::AlreadyExists);
        assert!(taken.message().contains("\"w\""));
        let unknown = status(ServiceError::Unauthenticated("unknown or revoked token".into()));
        assert_eq!(unknown.code(), Code::Unauthenticated);
    }
}
