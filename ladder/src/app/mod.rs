//! The ladder's service without its transports: every operation a caller can
//! ask (register, submit, lease, renew, report, read standings and logs,
//! challenge, sign in) is a method of [`LadderService`] over domain types
//! ([`views`], the store's rows) that answers with a [`ServiceError`]. Who may
//! ask is decided here too, from the caller's token ([`LadderService::caller`]);
//! the host's operations take an [`AdminCall`] or a [`HostCall`], which only
//! that check makes.
//!
//! The front ends are siblings that call it: `crate::grpc` (the API of
//! `ladder.proto`) and `crate::web` (the pages); `crate::serve` wires them. No
//! file here names a transport.
//!
//! Workers are not trusted: every reported record is checked against the lease
//! (game, options, seed, seats, bots, rotations) and replayed move by move; one that
//! does not reproduce is refused and nothing of the group is stored.

pub mod admin;
pub mod admission;
mod auth;
mod authors;
pub mod cache;
pub mod error;
pub mod logs;
pub mod objects;
pub mod redact;
mod scheduler;
pub mod seasons;
mod service;
pub mod tally;
pub mod throttle;
mod tokens;
pub mod upkeep;
pub mod views;

pub use authors::{ChallengeOpened, ChallengeView, PREP_TEXT_KEPT, UPLOAD_QUEUE_WAIT, UPLOAD_TIME};
pub use error::ServiceError;
pub use scheduler::{BACKLOG_EVERY, BACKLOG_MIN, Scheduler};
pub use service::{CALLS_PER_CONNECTION, LadderService, SeasonEntry};
pub use tokens::{
    AdminCall, Caller, HostCall, OpenedSession, TOKEN_CACHE, constant_time_eq, host_session_key, new_token,
    token_hash,
};
pub use views::*;

use referee::TimeControl;
use std::sync::Arc;
use std::time::Duration;

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

/// How long a lease of a group of a competition with time control `time` lasts
/// between renewals: `floor` (`--lease-seconds`), or three of the longest
/// decisions the time control allows (a move's time, or a whole clock and its
/// increment, with the referee's margin) when that is longer. A worker renews
/// every third of it while it plays ([`worker`](crate::worker)), so a game that
/// keeps to its time control never outlives its lease, however long it is; the
/// period only says how soon a worker that stopped renewing loses the group.
pub fn lease_period(floor: Duration, time: &TimeControl) -> Duration {
    let decision = match *time {
        TimeControl::MoveTime(t) => t,
        TimeControl::Clock { base, inc } => base + inc,
    } + referee::Limits::default().margin;
    floor.max(decision.saturating_mul(3))
}

/// How many times the longest its group can legally take a lease may live,
/// whatever its renewals ([`lease_life`]).
pub const LEASE_LIFE_FACTOR: u32 = 3;

/// Decisions one seat's turn is taken to hold at most, for [`lease_life`]: a
/// Spartan turn is three rolls and a scoring, and every other game's fewer on
/// all but the rarest turns.
const DECISIONS_PER_TURN: u64 = 4;

/// The longest a lease of a group may live, however often its worker renews it:
/// [`LEASE_LIFE_FACTOR`] times the longest its `rotations` games can take under
/// `time`, each game at most its `max_turns` (the option's value in `options`,
/// else the game's default) of [`DECISIONS_PER_TURN`] for each of `seats`, and
/// never less than two lease periods. Past it the lease runs out and the group
/// goes to another worker with a new seed: a worker that renews and never
/// reports cannot hold a group, or its seed, for ever.
pub fn lease_life(
    floor: Duration,
    time: &TimeControl,
    game: &str,
    options: &[String],
    seats: usize,
    rotations: usize,
) -> Duration {
    let turns = options
        .iter()
        .find_map(|o| o.strip_prefix("max_turns="))
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| {
            let info = engine::game_info(game).ok()?;
            info.options
                .iter()
                .find(|o| o.name == "max_turns")?
                .default
                .parse()
                .ok()
        })
        .unwrap_or(1_000);
    let seats = seats.max(1) as u64;
    let decisions = turns.saturating_mul(seats).saturating_mul(DECISIONS_PER_TURN);
    let margin = referee::Limits::default().margin;
    let game_ms: u128 = match *time {
        TimeControl::MoveTime(t) => (t + margin).as_millis() * u128::from(decisions),
        // Each seat's whole clock, its increments, and the margin on every move.
        TimeControl::Clock { base, inc } => {
            base.as_millis() * u128::from(seats) + (inc + margin).as_millis() * u128::from(decisions)
        }
    };
    let life_ms = game_ms * rotations.max(1) as u128 * u128::from(LEASE_LIFE_FACTOR);
    let life = Duration::from_millis(u64::try_from(life_ms).unwrap_or(u64::MAX));
    life.max(2 * lease_period(floor, time))
}

/// What a worker is told to wait when no group is ready yet but more are coming.
pub const RETRY_AFTER: Duration = Duration::from_millis(100);

/// Service settings.
#[derive(Clone)]
pub struct ServiceConfig {
    /// Token for admin calls.
    pub admin_token: String,
    /// A lease's shortest period: a lease lasts this long, or [`lease_period`] of
    /// its competition's time control if that is longer, and its worker renews it
    /// while the group is played.
    pub lease: Duration,
    /// Suspend a bot after this many reported games in a row in which it could
    /// not start or shake hands (0: never).
    pub suspend_after: u32,
    /// Most groups one worker holds unreported at once; its further leases get
    /// nothing until it reports (a worker looping on leases cannot hoard).
    pub held_per_worker: u32,
    /// What authors may upload.
    pub uploads: UploadConfig,
    /// How long what the ladder does not need for ever is kept.
    pub retention: RetentionConfig,
}

/// A lease's shortest period unless the host says otherwise (`ladder serve
/// --lease-seconds`).
pub const LEASE: Duration = Duration::from_secs(120);

impl ServiceConfig {
    /// `ladder serve`'s defaults, with this admin token: what a test or a bench
    /// starts from, changing only what it is about.
    pub fn new(admin_token: impl Into<String>) -> ServiceConfig {
        ServiceConfig {
            admin_token: admin_token.into(),
            lease: LEASE,
            suspend_after: SUSPEND_AFTER,
            held_per_worker: HELD_PER_WORKER,
            uploads: UploadConfig::default(),
            retention: RetentionConfig::default(),
        }
    }
}

/// How long the store keeps what no game needs to be replayed
/// ([`crate::store::Store::collect_garbage`]); the rest is kept for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// Seats' private logs (their stderr, info lines and faults in full), from
    /// their game; `None`: for ever.
    pub logs: Option<Duration>,
    /// Files of versions that never played a game and are out of play for
    /// good, and files no version names, from their upload; `None`: for ever.
    pub files: Option<Duration>,
    /// How often the server lets go of what is past these (ended sessions too).
    pub every: Duration,
}

/// Default of [`RetentionConfig::logs`] and [`RetentionConfig::files`], in days.
pub const KEEP_DAYS: u32 = 30;

impl Default for RetentionConfig {
    /// 30 days of each, looked at hourly.
    fn default() -> RetentionConfig {
        let days = Duration::from_secs(u64::from(KEEP_DAYS) * 86_400);
        RetentionConfig {
            logs: Some(days),
            files: Some(days),
            every: Duration::from_secs(3600),
        }
    }
}

impl RetentionConfig {
    /// The cutoffs as of `now_ms`.
    pub fn as_of(&self, now_ms: i64) -> crate::store::Retention {
        let before = |keep: Option<Duration>| keep.map(|d| now_ms.saturating_sub(d.as_millis() as i64));
        crate::store::Retention {
            logs_before_ms: before(self.logs),
            files_before_ms: before(self.files),
            sessions_before_ms: now_ms,
        }
    }
}

/// How much of each seat's stderr a game keeps for its author by default.
pub const AUTHOR_LOG_BYTES: u32 = 64 * 1024;

/// Challenge games an author may ask for in a day, by default.
pub const CHALLENGE_GAMES_PER_DAY: u32 = 200;

/// The share of the groups leased (percent) that may be challenge groups
/// leased ahead of ladder groups already waiting, by default.
pub const CHALLENGE_SHARE: u32 = 50;

/// New versions an author may upload in any 24 hours, by default (one per game
/// an upload plays).
pub const VERSIONS_PER_DAY: u32 = 20;

/// Bytes of files the store keeps for one author, by default: eight uploads at
/// the largest packed size.
pub const AUTHOR_BYTES: u64 = 512 << 20;

/// Most games one challenge asks for.
pub const CHALLENGE_GAMES_MAX: u32 = 100;

/// Most faults kept in full per seat and game (a seat has one fault in most games
/// that have any; a reporting worker says how many).
pub const PRIVATE_FAULTS_KEPT: usize = 16;

/// What authors may upload, and how much of the server checking uploads takes.
#[derive(Debug, Clone)]
pub struct UploadConfig {
    /// An archive's limits (64 MiB packed, 256 MiB unpacked, 10,000 entries).
    pub limits: crate::submission::ArchiveLimits,
    /// The runtimes the host's workers offer: a manifest naming another is
    /// refused (default: every one the ladder knows).
    pub runtimes: Vec<String>,
    /// Bots (by name) an author may have unless given another cap.
    pub max_bots: u32,
    /// Uploads checked at once; more wait. Each holds its archive and its
    /// unpacked files in memory while it is checked. Authors' uploads and
    /// workers' built folders take turns apart, so neither waits for the other.
    pub at_once: usize,
    /// Uploads one author may have arriving at once; more are refused.
    pub arriving_per_author: usize,
    /// The slowest an upload may arrive: cut once it is more than
    /// [`UploadFloor::grace`] behind [`UploadFloor::bytes_per_s`].
    pub floor: UploadFloor,
    /// How long a version's build may take on a worker.
    pub build_seconds: u32,
    /// Games of a version's check (check-bot) against random, at least one per seat.
    pub check_games: u32,
    /// Where bots' files are kept when not in the store (`--artifacts`).
    pub objects: Option<Arc<objects::ObjectArtifacts>>,
    /// How many bytes of the end of each seat's stderr a game keeps for the bot's
    /// author (and the host), apart from its public record; 0 keeps none.
    pub author_log_bytes: u32,
    /// Challenge games an author may ask for in any 24 hours.
    pub challenge_games_per_day: u32,
    /// The share of the groups leased, in percent, that may be challenge groups
    /// leased ahead of the ladder's groups already waiting (beyond it,
    /// challenges wait their turn in the order they were scheduled).
    pub challenge_share: u32,
    /// New versions an author may upload in any 24 hours.
    pub versions_per_day: u32,
    /// Bytes of files (uploads and built folders) kept for one author.
    pub author_bytes: u64,
    /// How the author's pages slow sign-ins after failures.
    pub sign_in: throttle::SignInLimits,
}

impl UploadConfig {
    /// The caps [`crate::store::Authors::submit`] holds an author to.
    pub fn quota(&self) -> crate::store::UploadQuota {
        crate::store::UploadQuota {
            versions_per_day: i64::from(self.versions_per_day),
            bytes: i64::try_from(self.author_bytes).unwrap_or(i64::MAX),
        }
    }
}

impl Default for UploadConfig {
    fn default() -> UploadConfig {
        UploadConfig {
            limits: crate::submission::ArchiveLimits::default(),
            runtimes: crate::submission::all_runtimes(),
            // One bot for each game: a starter kit (all five) goes up whole.
            max_bots: 5,
            at_once: 2,
            floor: UploadFloor::default(),
            arriving_per_author: 2,
            author_log_bytes: AUTHOR_LOG_BYTES,
            challenge_games_per_day: CHALLENGE_GAMES_PER_DAY,
            challenge_share: CHALLENGE_SHARE,
            versions_per_day: VERSIONS_PER_DAY,
            author_bytes: AUTHOR_BYTES,
            sign_in: throttle::SignInLimits::default(),
            build_seconds: 600,
            check_games: 4,
            objects: None,
        }
    }
}

/// The slowest an upload (an author's, or a worker's built folder) may arrive:
/// one that trickles in holds memory and a slot that others wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadFloor {
    /// Bytes a second, on average since the upload began.
    pub bytes_per_s: u64,
    /// How far behind that rate an upload may fall (a slow start, a pause).
    pub grace: Duration,
}

impl Default for UploadFloor {
    /// 16 KiB/s, 10 s behind at most.
    fn default() -> UploadFloor {
        UploadFloor {
            bytes_per_s: 16 * 1024,
            grace: Duration::from_secs(10),
        }
    }
}

/// Uploads arriving at once, beyond those being checked: each holds at most an
/// archive's bytes, and one author has at most
/// [`UploadConfig::arriving_per_author`] of them.
pub const UPLOADS_ARRIVING: usize = 16;

/// Default of [`ServiceConfig::held_per_worker`]: two full batches, so a worker
/// can report one batch while it plays the next.
pub const HELD_PER_WORKER: u32 = 2 * MAX_BATCH as u32;

/// Default of [`ServiceConfig::suspend_after`].
pub const SUSPEND_AFTER: u32 = 5;

impl std::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token or the key.
        f.debug_struct("ServiceConfig")
            .field("lease", &self.lease)
            .field("suspend_after", &self.suspend_after)
            .field("held_per_worker", &self.held_per_worker)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leases_life_is_a_few_times_its_groups_longest_legal_time() {
        let floor = Duration::from_secs(30);
        let margin = referee::Limits::default().margin;
        let opts = |o: &[&str]| o.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // Spartan, 100 ms a move, 13 turns: 13 × 2 seats × 4 decisions, two
        // rotations, three times over.
        let life = lease_life(
            floor,
            &TimeControl::MoveTime(Duration::from_millis(100)),
            "spartan",
            &opts(&["max_turns=13"]),
            2,
            2,
        );
        assert_eq!(life, (Duration::from_millis(100) + margin) * (13 * 2 * 4) * 2 * 3);
        // Without the option, the game's own default (Ur: 1,000 turns).
        let ur = lease_life(
            floor,
            &TimeControl::MoveTime(Duration::from_millis(10)),
            "ur",
            &[],
            2,
            2,
        );
        assert_eq!(ur, (Duration::from_millis(10) + margin) * (1_000 * 2 * 4) * 2 * 3);
        // A clock: each seat's whole base, and every move's increment and margin.
        let clock = TimeControl::Clock {
            base: Duration::from_secs(60),
            inc: Duration::from_millis(500),
        };
        let life = lease_life(floor, &clock, "spartan", &opts(&["max_turns=13"]), 2, 2);
        assert_eq!(
            life,
            (Duration::from_secs(60) * 2 + (Duration::from_millis(500) + margin) * (13 * 2 * 4)) * 2 * 3
        );
        // Never shorter than two lease periods.
        let short = lease_life(
            floor,
            &TimeControl::MoveTime(Duration::from_millis(1)),
            "spartan",
            &opts(&["max_turns=1"]),
            2,
            2,
        );
        assert_eq!(
            short,
            2 * lease_period(floor, &TimeControl::MoveTime(Duration::from_millis(1)))
        );
    }
}
