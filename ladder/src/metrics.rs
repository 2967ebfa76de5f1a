//! The host's numbers, in Prometheus' text exposition format (0.0.4): what a
//! server and a worker count as they go, and what a server reads from its
//! store when it is scraped (queues, workers active). Label values come from
//! fixed lists only (a route's pattern, an RPC's name, an outcome), never from
//! what a caller sent, so no caller can grow the series without bound.
//! `docs/hosting.md` ("Operating") says which to watch and alert on.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::borrow::Cow;
use std::time::Duration;

/// One label: its name and value.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Label {
    /// What the series is of (an outcome, a route's pattern, a call).
    pub kind: Cow<'static, str>,
}

fn label(kind: impl Into<Cow<'static, str>>) -> Label {
    Label { kind: kind.into() }
}

type Latencies = Family<Label, Histogram, fn() -> Histogram>;

/// Latency buckets from 1 ms to about 33 s.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Build durations, from 1 s to about 68 min.
fn build_time() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 13))
}

/// Sandbox start times, from 0.5 ms to about 4 s.
fn start_time() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 14))
}

/// The content type of [`ServerMetrics::render`] and [`WorkerMetrics::render`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The RPCs of the ladder's gRPC service: a call's latency is labelled by
/// one of these, or `other` (a path no client of ours sends).
pub const RPCS: &[&str] = &[
    "RegisterBot",
    "OpenCompetition",
    "CloseCompetition",
    "ListCompetitions",
    "Standings",
    "GameRecords",
    "Lease",
    "Report",
    "LeaseGroups",
    "ReportGroups",
    "AddWorker",
    "RevokeWorker",
    "ListWorkers",
    "VoidWorker",
    "ListBots",
    "SetBotStatus",
    "UpdateBot",
    "RenewLeases",
    "AddAuthor",
    "RevokeAuthor",
    "SetAuthor",
    "EndSessions",
    "Submit",
    "MyBots",
    "SetMyBotStatus",
    "MyBotLog",
    "LeasePrep",
    "ReportPrep",
    "UploadArtifact",
    "FetchArtifact",
    "GameLogs",
    "Challenge",
    "MyChallenges",
    "ReturnLeases",
    "RenewPrep",
    "ReturnPrep",
    "CollectGarbage",
    "EnterSeason",
];

/// The label of a gRPC call by its path (`/astragal.ladder.v1.Ladder/Name`).
pub fn rpc_label(path: &str) -> &'static str {
    path.strip_prefix("/astragal.ladder.v1.Ladder/")
        .and_then(|name| RPCS.iter().find(|r| **r == name))
        .copied()
        .unwrap_or("other")
}

/// What the store holds now, read when the server is scraped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Queues {
    /// Groups scheduled and not leased, of open competitions.
    pub groups_waiting: i64,
    /// Of those, challenge groups.
    pub challenge_groups_waiting: i64,
    /// Groups leased now (unexpired).
    pub groups_leased: i64,
    /// Versions waiting for a build and check, or being built.
    pub builds_waiting: i64,
    /// Workers holding an unexpired lease now.
    pub workers_active: i64,
    /// Leases that ran out, counted against their workers since the ladder began.
    pub leases_expired: i64,
}

/// A server's metrics.
pub struct ServerMetrics {
    registry: Registry,
    /// Games stored.
    pub games_recorded: Counter,
    /// Groups stored.
    pub groups_recorded: Counter,
    /// Leases by event: granted, renewed, returned.
    pub leases: Family<Label, Counter>,
    /// Reports refused, by reason.
    pub reports_refused: Family<Label, Counter>,
    /// Builds and checks reported, by outcome (and given back).
    pub builds: Family<Label, Counter>,
    /// How long builds and checks took, lease to report.
    pub build_seconds: Histogram,
    /// Bytes received in uploads: an author's, a worker's built folder.
    pub upload_bytes: Family<Label, Counter>,
    /// gRPC calls' latency (to their answer's head), by call.
    pub grpc_seconds: Latencies,
    /// Pages' latency, by route.
    pub http_seconds: Latencies,
    groups_waiting: Gauge,
    challenge_groups_waiting: Gauge,
    groups_leased: Gauge,
    builds_waiting: Gauge,
    workers_active: Gauge,
    leases_expired: Counter,
    leases_expired_seen: std::sync::atomic::AtomicI64,
    db_connections: Family<Label, Gauge>,
    db_max_connections: Gauge,
}

impl Default for ServerMetrics {
    fn default() -> ServerMetrics {
        ServerMetrics::new()
    }
}

impl ServerMetrics {
    /// Every series registered, at zero.
    pub fn new() -> ServerMetrics {
        let mut registry = Registry::with_prefix("ladder");
        let m = ServerMetrics {
            games_recorded: Counter::default(),
            groups_recorded: Counter::default(),
            leases: Family::default(),
            reports_refused: Family::default(),
            builds: Family::default(),
            build_seconds: build_time(),
            upload_bytes: Family::default(),
            grpc_seconds: Family::new_with_constructor(latency),
            http_seconds: Family::new_with_constructor(latency),
            groups_waiting: Gauge::default(),
            challenge_groups_waiting: Gauge::default(),
            groups_leased: Gauge::default(),
            builds_waiting: Gauge::default(),
            workers_active: Gauge::default(),
            leases_expired: Counter::default(),
            leases_expired_seen: std::sync::atomic::AtomicI64::new(0),
            db_connections: Family::default(),
            db_max_connections: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register(
            "games_recorded",
            "Games stored, replayed and checked",
            m.games_recorded.clone(),
        );
        registry.register("groups_recorded", "Groups stored", m.groups_recorded.clone());
        registry.register(
            "leases",
            "Group leases by event (granted, renewed, returned by a stopping worker)",
            m.leases.clone(),
        );
        registry.register(
            "leases_expired",
            "Leases that ran out before their worker reported (in the store, since the ladder began)",
            m.leases_expired.clone(),
        );
        registry.register(
            "reports_refused",
            "Group reports refused, by reason (invalid: a record that does not replay or match its lease; lease_lost; internal)",
            m.reports_refused.clone(),
        );
        registry.register(
            "builds",
            "Builds and checks of authors' versions, by outcome (passed, build_failed, rejected, worker_trouble, returned)",
            m.builds.clone(),
        );
        registry.register(
            "build_seconds",
            "How long a build and check took, from its lease to its report",
            m.build_seconds.clone(),
        );
        registry.register(
            "upload_bytes",
            "Bytes received in uploads (author: an author's bot; artifact: a worker's built folder)",
            m.upload_bytes.clone(),
        );
        registry.register(
            "grpc_seconds",
            "gRPC calls' latency, by call",
            m.grpc_seconds.clone(),
        );
        registry.register("http_seconds", "Pages' latency, by route", m.http_seconds.clone());
        registry.register(
            "groups_waiting",
            "Groups scheduled and not leased, in open competitions",
            m.groups_waiting.clone(),
        );
        registry.register(
            "challenge_groups_waiting",
            "Challenge groups scheduled and not leased",
            m.challenge_groups_waiting.clone(),
        );
        registry.register("groups_leased", "Groups leased now", m.groups_leased.clone());
        registry.register(
            "builds_waiting",
            "Authors' versions waiting for a build and check, or being built",
            m.builds_waiting.clone(),
        );
        registry.register(
            "workers_active",
            "Workers holding an unexpired lease now",
            m.workers_active.clone(),
        );
        registry.register(
            "db_connections",
            "The database pool's connections, by state (idle, in_use)",
            m.db_connections.clone(),
        );
        registry.register(
            "db_max_connections",
            "The most connections the database pool opens",
            m.db_max_connections.clone(),
        );
        ServerMetrics { registry, ..m }
    }

    /// Counts one event of `family` labelled `kind`.
    pub fn count(family: &Family<Label, Counter>, kind: impl Into<Cow<'static, str>>, n: u64) {
        family.get_or_create(&label(kind)).inc_by(n);
    }

    /// Records one latency of `family` labelled `kind`.
    pub fn time(family: &Latencies, kind: impl Into<Cow<'static, str>>, took: Duration) {
        family.get_or_create(&label(kind)).observe(took.as_secs_f64());
    }

    /// Sets what was read from the store and the pool.
    pub fn sample(&self, q: &Queues, pool_size: u32, pool_idle: usize, pool_max: u32) {
        self.groups_waiting.set(q.groups_waiting);
        self.challenge_groups_waiting.set(q.challenge_groups_waiting);
        self.groups_leased.set(q.groups_leased);
        self.builds_waiting.set(q.builds_waiting);
        self.workers_active.set(q.workers_active);
        // The store's total only grows (but for a voided worker's); the
        // counter follows it up.
        let seen = self
            .leases_expired_seen
            .fetch_max(q.leases_expired, std::sync::atomic::Ordering::Relaxed);
        if q.leases_expired > seen {
            self.leases_expired.inc_by((q.leases_expired - seen) as u64);
        }
        let idle = i64::try_from(pool_idle).unwrap_or(i64::MAX);
        self.db_connections.get_or_create(&label("idle")).set(idle);
        self.db_connections
            .get_or_create(&label("in_use"))
            .set(i64::from(pool_size) - idle);
        self.db_max_connections.set(i64::from(pool_max));
    }

    /// Everything, in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

/// A worker's metrics.
pub struct WorkerMetrics {
    registry: Registry,
    /// Games played (reported or not).
    pub games: Counter,
    /// Groups the server took.
    pub groups_reported: Counter,
    /// Seats' faults in the games played, by kind.
    pub faults: Family<Label, Counter>,
    /// Bot folders found in the cache, and fetched from the server.
    pub artifacts: Family<Label, Counter>,
    /// How long a bot's sandbox took to start and shake hands.
    pub sandbox_start_seconds: Histogram,
    /// Groups held now.
    pub groups_held: Gauge,
}

/// This process's worker metrics: one worker per process, so one set (tests
/// that run several workers in one process share it, and read none of it).
pub fn worker() -> &'static WorkerMetrics {
    static METRICS: std::sync::OnceLock<WorkerMetrics> = std::sync::OnceLock::new();
    METRICS.get_or_init(WorkerMetrics::new)
}

impl Default for WorkerMetrics {
    fn default() -> WorkerMetrics {
        WorkerMetrics::new()
    }
}

impl WorkerMetrics {
    /// Every series registered, at zero.
    pub fn new() -> WorkerMetrics {
        let mut registry = Registry::with_prefix("ladder_worker");
        let m = WorkerMetrics {
            games: Counter::default(),
            groups_reported: Counter::default(),
            faults: Family::default(),
            artifacts: Family::default(),
            sandbox_start_seconds: start_time(),
            groups_held: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register("games", "Games played", m.games.clone());
        registry.register(
            "groups_reported",
            "Groups the server took (recorded, or recorded already)",
            m.groups_reported.clone(),
        );
        registry.register(
            "faults",
            "Seats' faults in the games played, by kind (the referee's fault kinds)",
            m.faults.clone(),
        );
        registry.register(
            "artifacts",
            "Uploaded bots' folders, by where they came from (cache_hit, fetched)",
            m.artifacts.clone(),
        );
        registry.register(
            "sandbox_start_seconds",
            "How long a bot process took from its start to its handshake",
            m.sandbox_start_seconds.clone(),
        );
        registry.register(
            "groups_held",
            "Groups leased and not yet reported",
            m.groups_held.clone(),
        );
        WorkerMetrics { registry, ..m }
    }

    /// Counts one event of `family` labelled `kind`.
    pub fn count(family: &Family<Label, Counter>, kind: impl Into<Cow<'static, str>>, n: u64) {
        family.get_or_create(&label(kind)).inc_by(n);
    }

    /// Everything, in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every RPC the proto declares is named here, so none is lumped into `other`.
    #[test]
    fn every_rpc_of_the_proto_has_its_own_label() {
        let proto = include_str!("../../proto/astragal/ladder/v1/ladder.proto");
        let declared: Vec<&str> = proto
            .lines()
            .filter_map(|l| l.trim().strip_prefix("rpc "))
            .filter_map(|l| l.split('(').next())
            .map(str::trim)
            .collect();
        assert!(declared.len() > 30, "{declared:?}");
        for rpc in &declared {
            assert_eq!(rpc_label(&format!("/astragal.ladder.v1.Ladder/{rpc}")), *rpc);
        }
        assert_eq!(
            declared.len(),
            RPCS.len(),
            "a name here the proto does not declare"
        );
        assert_eq!(rpc_label("/astragal.ladder.v1.Ladder/NoSuchCall"), "other");
        assert_eq!(rpc_label("/evil/../Lease"), "other");
    }

    #[test]
    fn the_text_format_names_every_series_and_counts_what_was_counted() {
        let m = ServerMetrics::new();
        m.games_recorded.inc_by(3);
        ServerMetrics::count(&m.leases, "granted", 5);
        ServerMetrics::time(&m.grpc_seconds, "LeaseGroups", Duration::from_millis(3));
        m.sample(
            &Queues {
                groups_waiting: 7,
                leases_expired: 2,
                ..Queues::default()
            },
            4,
            1,
            10,
        );
        let text = m.render();
        for line in [
            "ladder_games_recorded_total 3",
            "ladder_leases_total{kind=\"granted\"} 5",
            "ladder_groups_waiting 7",
            "ladder_leases_expired_total 2",
            "ladder_db_connections{kind=\"in_use\"} 3",
            "ladder_db_max_connections 10",
            "ladder_grpc_seconds_count{kind=\"LeaseGroups\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        // The store's total is followed, not added again.
        m.sample(
            &Queues {
                leases_expired: 2,
                ..Queues::default()
            },
            4,
            1,
            10,
        );
        assert!(m.render().lines().any(|l| l == "ladder_leases_expired_total 2"));
        let w = WorkerMetrics::new();
        w.games.inc();
        assert!(
            w.render().lines().any(|l| l == "ladder_worker_games_total 1"),
            "{}",
            w.render()
        );
    }
}
