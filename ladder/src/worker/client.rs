//! The worker's client of the ladder: the connection (TLS, the token on every
//! call, gzip for reports) and [`Api`], the one place where the worker's calls
//! become `ladder.proto`'s messages and the replies become the service's own
//! types (`crate::app`'s views). The rest of the worker never names the wire,
//! as the service never does (fishnet's shape: a typed client apart from play).

use super::WorkerError;
use crate::app::{GroupReport, Leased, LeasedEntrant, LeasedGroup, PrepLeased, PrepReport, PrepVerdict};
use crate::store::{BotId, BotStatus, GroupId, Seeding};
use proto::ladder as wire;
use proto::ladder::ladder_client::LadderClient;
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

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

/// Why a call to the server did not give its answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The server refuses this worker's token (final).
    #[error("the server refuses the token: {0}")]
    Token(String),
    /// The server refused what was sent as invalid (final).
    #[error("the server refused it: {0}")]
    Invalid(String),
    /// The server judged the call otherwise: not found, not now, there already (final).
    #[error("the server refused it: {0}")]
    Refused(String),
    /// The server's certificate is not one the worker trusts: retrying cannot help.
    #[error("{0}")]
    Certificate(String),
    /// The call failed on its way (a server restarting or unreachable, a
    /// connection cut): worth another try, on a new connection.
    #[error("{0}")]
    Failed(String),
    /// The server answered with what no ladder sends (a time control the
    /// referee cannot read, too many bytes): final.
    #[error("the server's answer cannot be used: {0}")]
    Answer(String),
}

impl CallError {
    fn of(s: &tonic::Status) -> CallError {
        use tonic::Code::*;
        let said = || s.message().to_owned();
        match s.code() {
            Unauthenticated | PermissionDenied => CallError::Token(said()),
            InvalidArgument => CallError::Invalid(said()),
            FailedPrecondition | NotFound | AlreadyExists => CallError::Refused(said()),
            _ => {
                let why = referee::cli::error_chain(s);
                if certificate_refused(&why) {
                    CallError::Certificate(why)
                } else {
                    CallError::Failed(why)
                }
            }
        }
    }

    /// Whether the server judged the call, so that asking again gets the same answer.
    pub fn is_verdict(&self) -> bool {
        !matches!(self, CallError::Failed(_) | CallError::Certificate(_))
    }
}

/// How the server took one group's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// Recorded now.
    Recorded,
    /// Recorded already (by this worker's earlier try, or another worker's).
    AlreadyRecorded,
    /// Refused: the status code and why.
    Refused {
        /// The gRPC status code.
        code: u32,
        /// Why.
        message: String,
    },
}

impl Taken {
    /// Its name in a log line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Taken::Recorded => "recorded",
            Taken::AlreadyRecorded => "already-recorded",
            Taken::Refused { .. } => "refused",
        }
    }
}

/// What a renewal of some groups' lease got.
#[derive(Debug, Clone, Default)]
pub struct Renewed {
    /// The groups renewed (any other asked for is lost).
    pub groups: Vec<GroupId>,
    /// How long the lease now lasts, if the server said.
    pub period: Option<Duration>,
}

/// The ladder's calls a worker makes, each over the service's own types.
#[derive(Clone)]
pub struct Api {
    client: Client,
}

impl Api {
    /// Connects as [`connect`] does.
    ///
    /// # Errors
    /// As [`connect`].
    pub async fn connect(server: &str, token: &str, ca_pem: Option<&[u8]>) -> Result<Api, WorkerError> {
        connect(server, token, ca_pem).await.map(Api::on)
    }

    /// The connection in `slot`, made first if there is none (a task empties
    /// its slot when a call fails, so that the next call connects anew).
    ///
    /// # Errors
    /// As [`connect`].
    pub(super) async fn held<'a>(
        slot: &'a mut Option<Api>,
        cfg: &super::WorkerConfig,
    ) -> Result<&'a mut Api, WorkerError> {
        if slot.is_none() {
            *slot = Some(Api::connect(&cfg.server, &cfg.token, cfg.ca_pem.as_deref()).await?);
        }
        slot.as_mut()
            .ok_or_else(|| WorkerError::Task("a connection just made is gone".into()))
    }

    /// The calls over a client already connected.
    pub fn on(client: Client) -> Api {
        Api { client }
    }

    /// Leases up to `want` groups of the competitions whose bots this worker
    /// can run (`runtimes`: its runtimes for uploaded bots).
    ///
    /// # Errors
    /// The call fails, or a group cannot be played as the server gave it.
    pub async fn lease_groups(&mut self, want: u64, runtimes: &[String]) -> Result<Leased, CallError> {
        let req = wire::LeaseGroupsRequest {
            max_groups: u32::try_from(want).unwrap_or(u32::MAX),
            runtimes: runtimes.to_vec(),
        };
        let r = self
            .client
            .lease_groups(req)
            .await
            .map_err(|s| CallError::of(&s))?
            .into_inner();
        Ok(Leased {
            groups: r.groups.into_iter().map(leased_group).collect::<Result<_, _>>()?,
            groups_in_progress: r.groups_in_progress,
            retry_after: (r.retry_after_ms > 0).then(|| Duration::from_millis(r.retry_after_ms.into())),
            queued: Duration::from_millis(r.queued_ms.into()),
        })
    }

    /// Renews `lease` for `groups` (at most [`crate::app::MAX_BATCH`]).
    ///
    /// # Errors
    /// The call fails.
    pub async fn renew_leases(&mut self, lease: &str, groups: &[GroupId]) -> Result<Renewed, CallError> {
        let r = self
            .client
            .renew_leases(lease_of(lease, groups))
            .await
            .map_err(|s| CallError::of(&s))?
            .into_inner();
        Ok(Renewed {
            groups: r.renewed.into_iter().map(GroupId).collect(),
            period: (r.expires_in_ms > 0).then(|| Duration::from_millis(r.expires_in_ms)),
        })
    }

    /// Gives `groups` of `lease` back, to be dealt again at once; how many the
    /// server took back (the others were lost already).
    ///
    /// # Errors
    /// The call fails.
    pub async fn return_leases(&mut self, lease: &str, groups: &[GroupId]) -> Result<usize, CallError> {
        let r = self
            .client
            .return_leases(lease_of(lease, groups))
            .await
            .map_err(|s| CallError::of(&s))?;
        Ok(r.into_inner().returned.len())
    }

    /// Reports played groups in one call (gzip-compressed): how the server took
    /// each, by group.
    ///
    /// # Errors
    /// The call fails, or the server judged the call as a whole.
    pub async fn report_groups(
        &mut self,
        reports: &[GroupReport],
    ) -> Result<Vec<(GroupId, Taken)>, CallError> {
        let req = wire::ReportGroupsRequest {
            reports: reports.iter().map(report_request).collect(),
        };
        let r = compressed(&self.client)
            .report_groups(req)
            .await
            .map_err(|s| CallError::of(&s))?;
        Ok(r.into_inner()
            .outcomes
            .into_iter()
            .map(|o| {
                let taken = match o.outcome() {
                    wire::ReportOutcome::Recorded => Taken::Recorded,
                    wire::ReportOutcome::AlreadyRecorded => Taken::AlreadyRecorded,
                    _ => Taken::Refused {
                        code: o.code,
                        message: o.message,
                    },
                };
                (GroupId(o.group_id), taken)
            })
            .collect())
    }

    /// Leases an author's version to build and check, if one waits for a
    /// runtime of `runtimes`.
    ///
    /// # Errors
    /// The call fails.
    pub async fn lease_prep(&mut self, runtimes: &[String]) -> Result<Option<PrepLeased>, CallError> {
        let req = wire::LeasePrepRequest {
            runtimes: runtimes.to_vec(),
        };
        let job = self
            .client
            .lease_prep(req)
            .await
            .map_err(|s| CallError::of(&s))?
            .into_inner();
        Ok(job.has_work.then(|| PrepLeased {
            bot_id: BotId(job.bot_id),
            bot: job.bot,
            game: job.game,
            runtime: job.runtime,
            run: job.run,
            build: job.build,
            secret: job.secret,
            source_sha256: job.source_sha256,
            lease: job.lease,
            period: Duration::from_millis(job.expires_in_ms),
            build_seconds: job.build_seconds,
            check_games: job.check_games,
        }))
    }

    /// Renews a build's lease: how long it now lasts.
    ///
    /// # Errors
    /// The call fails, or the lease is gone.
    pub async fn renew_prep(&mut self, bot: BotId, lease: &str) -> Result<Duration, CallError> {
        let r = self
            .client
            .renew_prep(prep_lease(bot, lease))
            .await
            .map_err(|s| CallError::of(&s))?;
        Ok(Duration::from_millis(r.into_inner().expires_in_ms))
    }

    /// Gives a build back, for another worker at once; whether the server took it.
    ///
    /// # Errors
    /// The call fails.
    pub async fn return_prep(&mut self, bot: BotId, lease: &str) -> Result<bool, CallError> {
        let r = self
            .client
            .return_prep(prep_lease(bot, lease))
            .await
            .map_err(|s| CallError::of(&s))?;
        Ok(r.into_inner().returned)
    }

    /// Reports a build and check: the version's status now, if the server named one.
    ///
    /// # Errors
    /// The call fails, or the server refuses the report.
    pub async fn report_prep(&mut self, report: PrepReport) -> Result<Option<BotStatus>, CallError> {
        let outcome = match report.verdict {
            PrepVerdict::Passed => wire::PrepOutcome::Passed,
            PrepVerdict::BuildFailed => wire::PrepOutcome::BuildFailed,
            PrepVerdict::Rejected => wire::PrepOutcome::Rejected,
            PrepVerdict::WorkerTrouble => wire::PrepOutcome::WorkerTrouble,
        };
        let req = wire::ReportPrepRequest {
            bot_id: report.bot_id.0,
            lease: report.lease,
            outcome: outcome.into(),
            build_log: report.build_log,
            artifact_sha256: report.artifact_sha256,
            check_report: report.check_report,
        };
        let r = self
            .client
            .report_prep(req)
            .await
            .map_err(|s| CallError::of(&s))?;
        Ok(bot_status(r.into_inner().status()))
    }

    /// Sends a built folder (an archive's bytes): the hash the server keeps it by.
    ///
    /// # Errors
    /// The call fails; [`CallError::Invalid`] when the server refuses the folder.
    pub async fn upload_artifact(&mut self, bytes: &[u8]) -> Result<String, CallError> {
        let chunks: Vec<wire::UploadChunk> = bytes
            .chunks(1 << 20)
            .map(|c| wire::UploadChunk { data: c.to_vec() })
            .collect();
        let info = self
            .client
            .upload_artifact(tokio_stream::iter(chunks))
            .await
            .map_err(|s| CallError::of(&s))?;
        Ok(info.into_inner().sha256)
    }

    /// The bytes kept under `sha256`, streamed; at most `most` of them.
    ///
    /// # Errors
    /// The call fails, or the server sends more than `most`.
    pub async fn fetch_artifact(&mut self, sha256: &str, most: u64) -> Result<Vec<u8>, CallError> {
        let req = wire::FetchArtifactRequest {
            sha256: sha256.to_owned(),
        };
        let mut stream = self
            .client
            .fetch_artifact(req)
            .await
            .map_err(|s| CallError::of(&s))?
            .into_inner();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.message().await.map_err(|s| CallError::of(&s))? {
            if (bytes.len() + chunk.data.len()) as u64 > most {
                return Err(CallError::Answer(format!("more than {most} bytes")));
            }
            bytes.extend_from_slice(&chunk.data);
        }
        Ok(bytes)
    }
}

/// A leased group as the service's own type.
///
/// # Errors
/// A time control the referee cannot read.
pub fn leased_group(g: wire::LeaseReply) -> Result<LeasedGroup, CallError> {
    let time = g
        .time
        .parse()
        .map_err(|e| CallError::Answer(format!("group {}: time control {:?}: {e}", g.group_id, g.time)))?;
    Ok(LeasedGroup {
        lease: g.lease,
        group_id: GroupId(g.group_id),
        competition: g.competition,
        game: g.game,
        options: g.options,
        seed: g.seed,
        group_no: g.group_no,
        entrants: g
            .entrants
            .into_iter()
            .map(|e| LeasedEntrant {
                bot: e.bot,
                spec: e.spec,
                artifact_sha256: (!e.artifact_sha256.is_empty()).then_some(e.artifact_sha256),
                env: e.env.into_iter().map(|v| (v.key, v.value)).collect(),
            })
            .collect(),
        time,
        period: Duration::from_millis(g.expires_in_ms),
        seeding: if g.independent_seeds {
            Seeding::Independent
        } else {
            Seeding::Mirrored
        },
        author_log_bytes: g.author_log_bytes,
    })
}

fn report_request(r: &GroupReport) -> wire::ReportRequest {
    wire::ReportRequest {
        lease: r.lease.clone(),
        group_id: r.group_id.0,
        records: r.records.clone(),
        logs: r
            .logs
            .iter()
            .map(|l| wire::SeatLog {
                rotation: l.rotation,
                seat: l.seat,
                stderr: l.stderr.clone(),
                stderr_dropped: l.stderr_dropped,
                faults: l.faults.clone(),
            })
            .collect(),
    }
}

fn lease_of(lease: &str, groups: &[GroupId]) -> wire::RenewLeasesRequest {
    wire::RenewLeasesRequest {
        lease: lease.to_owned(),
        group_ids: groups.iter().map(|g| g.0).collect(),
    }
}

fn prep_lease(bot: BotId, lease: &str) -> wire::PrepLease {
    wire::PrepLease {
        bot_id: bot.0,
        lease: lease.to_owned(),
    }
}

fn bot_status(s: wire::BotStatus) -> Option<BotStatus> {
    use wire::BotStatus as W;
    Some(match s {
        W::Unspecified => return None,
        W::Active => BotStatus::Active,
        W::Disabled => BotStatus::Disabled,
        W::Suspended => BotStatus::Suspended,
        W::Superseded => BotStatus::Superseded,
        W::Removed => BotStatus::Removed,
        W::Building => BotStatus::Building,
        W::BuildFailed => BotStatus::BuildFailed,
        W::Rejected => BotStatus::Rejected,
    })
}

/// Waits between tries at a call that failed (a server restarting or
/// unreachable): doubling from `first` up to `most`, each drawn at random from
/// the upper half of its span, so that a fleet of workers cut off at once does
/// not come back in step (fishnet's randomized backoff).
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    most: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff from `first` (the span of the first wait) up to `most`.
    pub fn new(first: Duration, most: Duration) -> Backoff {
        Backoff {
            first,
            most: most.max(first),
            failures: 0,
        }
    }

    /// The wait before the next try, one failure more than the last.
    pub fn next_wait(&mut self) -> Duration {
        let span = self
            .first
            .saturating_mul(1 << self.failures.min(16))
            .min(self.most);
        self.failures = self.failures.saturating_add(1);
        let half = span / 2;
        // The OS's randomness: no two workers draw the same waits.
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(referee::seed::os_seed() % nanos.saturating_add(1))
    }

    /// A call went through: the next failure waits the first span again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::Duration;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_backoff_doubles_in_the_upper_half_of_its_span_up_to_the_most_and_starts_over() {
        let mut b = Backoff::new(ms(100), ms(1000));
        for span in [100, 200, 400, 800, 1000, 1000, 1000] {
            let wait = b.next_wait();
            assert!(
                wait >= ms(span) / 2 && wait <= ms(span),
                "{wait:?} outside the upper half of {span} ms"
            );
        }
        b.reset();
        assert!(
            b.next_wait() <= ms(100),
            "a reset backoff waits the first span again"
        );
    }

    #[test]
    fn two_workers_backing_off_together_do_not_wait_in_step() {
        let (mut a, mut b) = (Backoff::new(ms(1000), ms(1000)), Backoff::new(ms(1000), ms(1000)));
        let waits = |x: &mut Backoff| (0..8).map(|_| x.next_wait()).collect::<Vec<_>>();
        assert_ne!(waits(&mut a), waits(&mut b), "the waits are drawn, not fixed");
    }
}
