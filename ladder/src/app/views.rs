//! What the service's operations take and give beyond the store's rows: plain
//! domain types, with no wire format. Each front end turns them into its own
//! (`crate::grpc` into `ladder.proto`'s messages, `crate::web` into pages).

use crate::store::{BotId, BotRow, CompetitionRow, GroupId, Seeding};
use referee::TimeControl;
use std::time::Duration;

/// A worker and its audit (`rating::audit`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerAudit {
    /// Its name.
    pub name: String,
    /// Whether its token was revoked.
    pub revoked: bool,
    /// Groups it reported.
    pub groups: u64,
    /// Games in them.
    pub games: u64,
    /// Each kind of fault its games showed, against the other workers'.
    pub faults: Vec<FaultRate>,
    /// Why it stands out, if it does (`; ` between reasons).
    pub flag: String,
    /// Groups it leased.
    pub groups_leased: u64,
    /// Of them, leases it let run out.
    pub leases_expired: u64,
    /// Its share of leases run out.
    pub expired_rate: f64,
    /// The other workers' share.
    pub others_expired_rate: f64,
}

/// How often one kind of fault came in a worker's games, and in the others'.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultRate {
    /// The fault's kind.
    pub kind: String,
    /// This worker's games with it.
    pub games: u64,
    /// Their share of its games.
    pub rate: f64,
    /// The share in the other workers' games.
    pub others_rate: f64,
    /// How far apart the two are, in standard errors.
    pub z: f64,
}

/// A competition as its readers see it.
#[derive(Debug, Clone)]
pub struct CompetitionSummary {
    /// The competition.
    pub competition: CompetitionRow,
    /// Games recorded.
    pub games: u64,
    /// Its entrants' names.
    pub bots: Vec<String>,
    /// Of them, those in play.
    pub active_bots: u32,
    /// A season's phase, its deadline (ms since the Unix epoch) and its
    /// commitment to its seed.
    pub season: Option<SeasonSummary>,
}

/// A season's state as its readers see it.
#[derive(Debug, Clone)]
pub struct SeasonSummary {
    /// Its phase's name.
    pub phase: String,
    /// Entries close then (ms since the Unix epoch).
    pub deadline_ms: i64,
    /// Its commitment to its seed, once frozen.
    pub commitment: Option<String>,
}

/// A bot as the admin (or its author) is told of it: its row, with the names
/// its ids stand for.
#[derive(Debug, Clone)]
pub struct BotView {
    /// The bot.
    pub bot: BotRow,
    /// The version it replaced, by name.
    pub previous: Option<String>,
    /// Its author, by name.
    pub author: Option<String>,
}

/// A bot for the admin to register, or a new version of one.
#[derive(Debug, Clone, Default)]
pub struct BotAsk {
    /// Its name.
    pub name: String,
    /// Its game (for an update, empty or the bot's own).
    pub game: String,
    /// Its spec, as given.
    pub spec: String,
    /// Its environment, as given.
    pub env: Vec<(String, String)>,
}

/// A competition for the admin to open.
#[derive(Debug, Clone)]
pub struct CompetitionAsk {
    /// Its name.
    pub name: String,
    /// Its game.
    pub game: String,
    /// The game's options.
    pub options: Vec<String>,
    /// Seats (none: the game's own number).
    pub seats: Option<usize>,
    /// The seed every group's derives from (none: the OS's).
    pub seed: Option<u64>,
    /// Most games (0: no end).
    pub max_games: u64,
    /// A clock (`tc`, as `referee` reads it), or
    pub clock: Option<String>,
    /// a time per move (none of either: 5 s a move).
    pub move_time_ms: Option<u64>,
    /// Each game dealt its own seed, not mirrored.
    pub independent_seeds: bool,
    /// A season: its deadline (ms since the Unix epoch) and its finals.
    pub deadline_ms: Option<i64>,
    /// The season's finals.
    pub finals: crate::season::FinalsPlan,
}

/// What a worker's lease got.
#[derive(Debug, Clone, Default)]
pub struct Leased {
    /// The groups leased (none: no work now).
    pub groups: Vec<LeasedGroup>,
    /// Whether groups are being played (a worker that got none may wait).
    pub groups_in_progress: bool,
    /// Ask again after this long (none: the scheduler looked and could
    /// schedule nothing).
    pub retry_after: Option<Duration>,
    /// How long the lease waited its turn.
    pub queued: Duration,
}

/// A group leased to a worker: what it plays, under which lease.
#[derive(Debug, Clone)]
pub struct LeasedGroup {
    /// The lease's token (the same for every group of one lease).
    pub lease: String,
    /// The group.
    pub group_id: GroupId,
    /// Its competition's name.
    pub competition: String,
    /// Its game.
    pub game: String,
    /// The game's options.
    pub options: Vec<String>,
    /// The group's seed.
    pub seed: u64,
    /// Its number in its competition.
    pub group_no: u64,
    /// Its bots, in seat order of its first rotation.
    pub entrants: Vec<LeasedEntrant>,
    /// Its time control.
    pub time: TimeControl,
    /// How long the lease lasts between renewals.
    pub period: Duration,
    /// How its games are dealt.
    pub seeding: Seeding,
    /// How much of each seat's stderr to send back.
    pub author_log_bytes: u32,
}

/// A bot of a leased group, as the worker runs it.
#[derive(Debug, Clone)]
pub struct LeasedEntrant {
    /// Its public name.
    pub bot: String,
    /// Its spec.
    pub spec: String,
    /// Its uploaded files, if any.
    pub artifact_sha256: Option<String>,
    /// Its environment.
    pub env: Vec<(String, String)>,
}

/// A worker's report of a group it played.
#[derive(Debug, Clone, Default)]
pub struct GroupReport {
    /// The lease it was played under.
    pub lease: String,
    /// The group.
    pub group_id: GroupId,
    /// Its games' records, as JSON.
    pub records: Vec<String>,
    /// What each seat wrote for its author.
    pub logs: Vec<ReportedSeatLog>,
}

/// One seat's private log, as a worker reports it.
#[derive(Debug, Clone, Default)]
pub struct ReportedSeatLog {
    /// The rotation.
    pub rotation: u32,
    /// The seat.
    pub seat: u32,
    /// The end of its stderr.
    pub stderr: String,
    /// Bytes of stderr dropped before it.
    pub stderr_dropped: u64,
    /// Its faults' details.
    pub faults: Vec<String>,
}

/// A version leased to a worker to build and check.
#[derive(Debug, Clone)]
pub struct PrepLeased {
    /// The version.
    pub bot_id: BotId,
    /// Its name.
    pub bot: String,
    /// Its game.
    pub game: String,
    /// The runtime it builds and runs in.
    pub runtime: String,
    /// Its command line.
    pub run: String,
    /// Its build command, if any.
    pub build: String,
    /// The secret it serves with, if any.
    pub secret: String,
    /// Its upload.
    pub source_sha256: String,
    /// The lease's token.
    pub lease: String,
    /// How long the lease lasts between renewals.
    pub period: Duration,
    /// The build's time limit.
    pub build_seconds: u32,
    /// Games the check plays.
    pub check_games: u32,
}

/// How a build and check went, as a worker reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrepVerdict {
    /// Built, and passed the check.
    Passed,
    /// The build failed.
    BuildFailed,
    /// Built, and failed the check.
    Rejected,
    /// The worker could not do it (not the version's fault).
    WorkerTrouble,
}

/// A worker's report of a build and check.
#[derive(Debug, Clone)]
pub struct PrepReport {
    /// The version.
    pub bot_id: BotId,
    /// The lease it was done under.
    pub lease: String,
    /// How it went.
    pub verdict: PrepVerdict,
    /// The build's log (or, for worker trouble, what went wrong).
    pub build_log: String,
    /// The built folder's hash, if it was built.
    pub artifact_sha256: String,
    /// The check's report.
    pub check_report: String,
}

/// What retention let go of, with the retention it kept.
#[derive(Debug, Clone)]
pub struct Collection {
    /// What went.
    pub collected: crate::store::Collected,
    /// How long private logs are kept, if not for ever.
    pub keep_logs: Option<Duration>,
    /// How long spent versions' files are kept, if not for ever.
    pub keep_files: Option<Duration>,
}

/// A worker the admin added, with its token (shown this once).
#[derive(Debug, Clone)]
pub struct NewWorker {
    /// Its name.
    pub name: String,
    /// Its token.
    pub token: String,
}

/// A worker's groups and games voided.
#[derive(Debug, Clone, Copy)]
pub struct Voided {
    /// Groups to be played again.
    pub groups: u64,
    /// Games dropped.
    pub games: u64,
}

/// An upload stored: a new version for each of its games.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The new versions.
    pub bots: Vec<BotRow>,
    /// The upload's hash.
    pub source_sha256: String,
}

/// A bot's build log and check report, as its author reads them.
#[derive(Debug, Clone)]
pub struct BotLog {
    /// The bot.
    pub bot: BotView,
    /// Its logs.
    pub logs: crate::store::BotLogs,
}

impl BotView {
    /// `bot`, with its previous version's and its author's names from `names`
    /// and `authors`.
    pub(crate) fn of(
        bot: BotRow,
        names: &std::collections::HashMap<BotId, String>,
        authors: &std::collections::HashMap<crate::store::AuthorId, String>,
    ) -> BotView {
        BotView {
            previous: bot.previous_id.and_then(|id| names.get(&id).cloned()),
            author: bot.author_id.and_then(|id| authors.get(&id).cloned()),
            bot,
        }
    }
}

impl LeasedEntrant {
    /// `bot` as a worker runs it (a bot the catalog lacks: empty fields).
    pub(crate) fn of(bot: Option<&BotRow>) -> LeasedEntrant {
        LeasedEntrant {
            bot: bot.map(|b| b.name.clone()).unwrap_or_default(),
            spec: bot.map(|b| b.spec.clone()).unwrap_or_default(),
            artifact_sha256: bot.and_then(|b| b.artifact_sha256.clone()),
            env: bot.map(|b| b.env.clone()).unwrap_or_default(),
        }
    }
}
