//! The persistent store: bots, competitions, mirrored groups and every game record.
//!
//! One code path for both back ends through sqlx's `Any` driver: SQLite (WAL) is the
//! embedded default, PostgreSQL the store several servers and workers share. The SQL
//! is the common subset (`$n` parameters, `ON CONFLICT`, `RETURNING`); the few places
//! that differ — auto-increment keys and row locks for leasing — go through
//! [`Dialect`].
//!
//! Exactly-once recording rests on the schema, not on the callers: a game is keyed by
//! `(group_id, rotation)`, and a group is marked done in the same transaction that
//! stores its games.

use referee::{FaultKind, Termination, TimeControl};
use serde::{Deserialize, Serialize};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, FromRow, Row};

mod artifacts;
mod authors;
mod bots;
mod challenges;
mod competitions;
mod games;
mod groups;
mod ids;
mod logs;
mod ops;
mod preps;
mod seasons;
mod sessions;
mod shapes;
mod sql;
mod upkeep;
mod workers;

pub use authors::{AuthorRow, BotLogs, UploadQuota};
pub use challenges::ChallengeRow;
pub use groups::LeaseAsk;
pub use ids::{AuthorId, BotId, CompetitionId, GameId, GroupId, WorkerId};
pub use logs::{GameLogs, NewSeatLog, SeatLogEntry};
pub use ops::{Collected, NotReady, PoolStats, Retention, backup_sqlite};
pub use preps::{MAX_PREP_TRIES, PrepJob, PrepResult};
pub use seasons::{Candidate, FinalsGameRow, SeasonRow, SeededGroup};
pub use sessions::{SESSIONS_PER_AUTHOR, SessionOf, WebSession};
pub use shapes::Tallied;
use sql::Sql;

/// A store operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or could not be reached.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// A URL the store does not take.
    #[error("store URL {0:?} is neither sqlite:FILE (or a file path) nor postgres://...")]
    Url(String),
    /// A name already taken with different settings.
    #[error("{0}")]
    Conflict(String),
    /// Something named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A stored value that does not parse.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The schema could not be brought up to date.
    #[error("migrating the database: {0}")]
    Migration(String),
    /// The database file could not be made private.
    #[error("{0}")]
    File(String),
    /// The operating system gave no random bytes for a new seed.
    #[error("no random source: {0}")]
    Random(String),
}

type Result<T> = std::result::Result<T, StoreError>;

/// Which SQL dialect the store speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// The schema's migrations, one SQL file each, per dialect where they differ
/// (`ladder/migrations/`), embedded at build time and applied by sqlx's migrator
/// (which records them in `_sqlx_migrations` and, on PostgreSQL, takes a lock so
/// that two servers starting at once migrate once).
static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// The schema's migrations for `dialect`, oldest first: what [`Store::open`]
/// applies (public so that a test can build a database as an older version left it).
pub fn migrations(dialect: Dialect) -> &'static sqlx::migrate::Migrator {
    match dialect {
        Dialect::Sqlite => &SQLITE_MIGRATIONS,
        Dialect::Postgres => &POSTGRES_MIGRATIONS,
    }
}

/// A registered bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, FromRow)]
pub struct BotRow {
    /// Key.
    pub id: BotId,
    /// Unique name.
    pub name: String,
    /// Game it plays.
    pub game: String,
    /// How to run it (a referee `--bot` spec).
    pub spec: String,
    /// Environment variables for its process (key, value).
    #[sqlx(try_from = "JsonText<Vec<(String, String)>>")]
    pub env: Vec<(String, String)>,
    /// Whether it is scheduled.
    pub status: BotStatus,
    /// Why it is not active, in words (empty when active).
    pub status_reason: String,
    /// Reported games in a row in which it could not start or shake hands.
    pub start_failures: i64,
    /// 1 for a bot as registered; each update makes a new row one higher.
    pub version: i64,
    /// The version this one replaced.
    pub previous_id: Option<BotId>,
    /// Who set its status last.
    pub status_by: StatusBy,
    /// The author who uploaded it (none: registered by the host).
    pub author_id: Option<AuthorId>,
    /// What its games run: an uploaded bot's folder, built (`artifacts.sha256`).
    /// Its `spec` is then the command, started in that folder.
    pub artifact_sha256: Option<String>,
}

/// A competition: a game with options among a set of bots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, FromRow)]
pub struct CompetitionRow {
    /// Key.
    pub id: CompetitionId,
    /// Unique name.
    pub name: String,
    /// Game id.
    pub game: String,
    /// Game options, `key=value`.
    #[sqlx(try_from = "JsonText<Vec<String>>")]
    pub options: Vec<String>,
    /// Seats per game.
    pub seats: i64,
    /// How its groups are drawn.
    pub format: CompetitionFormat,
    /// The competition's seed: group g plays `engine::group_seed(seed, g)`. Drawn
    /// from the operating system unless the host gave one.
    pub seed: i64,
    /// Games to play in all; 0 = no limit.
    pub max_games: i64,
    /// Time control (stored as `movetime=MS` or `tc=BASE+INC`).
    #[sqlx(try_from = "Text<TimeControl>")]
    pub time: TimeControl,
    /// Whether workers get its groups.
    pub status: CompetitionStatus,
    /// What created it (a tournament's settings, to resume only the same one).
    pub config: String,
    /// How its groups are dealt (a group with a gRPC bot is dealt independent
    /// seeds whatever this says: see [`Seeding::of_group`]).
    pub seeding: Seeding,
}

/// What to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCompetition {
    /// Unique name.
    pub name: String,
    /// Game id.
    pub game: String,
    /// Game options.
    pub options: Vec<String>,
    /// Seats per game.
    pub seats: i64,
    /// How its groups are drawn.
    pub format: CompetitionFormat,
    /// Seed of group 0.
    pub seed: i64,
    /// Games in all; 0 = no limit.
    pub max_games: i64,
    /// Time control.
    pub time: TimeControl,
    /// Settings fingerprint.
    pub config: String,
    /// How its groups are dealt.
    pub seeding: Seeding,
}

#[cfg(test)]
impl NewCompetition {
    /// An open two-seat Ur ladder named `name`, for tests.
    pub(crate) fn two_seat_ur(name: &str) -> NewCompetition {
        NewCompetition {
            name: name.into(),
            game: "ur".into(),
            options: vec![],
            seats: 2,
            format: CompetitionFormat::Ladder,
            seed: 1,
            max_games: 0,
            time: TimeControl::move_time(100).expect("in range"),
            config: String::new(),
            seeding: Seeding::Mirrored,
        }
    }
}

/// One group's report to [`Groups::complete_leases`].
#[derive(Debug, Clone, Copy)]
pub struct LeaseReport<'a> {
    /// The group.
    pub group_id: GroupId,
    /// The lease it was played under.
    pub token: &'a str,
    /// Its games, checked.
    pub games: &'a [NewGame],
    /// Its seats, game by game in the order played: counted towards each bot's
    /// run of failed starts when the group is recorded.
    pub starts: &'a [SeatStart],
}

/// A seat of a reported game: its bot, and the fault with which it broke, if it
/// did. (The names say "start" for history: a run counts any game in which the
/// bot broke — could not start, crashed or broke the protocol — and the columns
/// `start_failures` and `start_failure_witnesses` hold that run.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatStart {
    /// The bot.
    pub bot: BotId,
    /// The kind of the fault with which it broke in this game (any but a timeout:
    /// it could not start, crashed, or broke the protocol).
    pub failure: Option<FaultKind>,
    /// It made a move of its own: a game without a fault is proof of health only
    /// then (one its opponent forfeited before its first turn says nothing).
    pub moved: bool,
}

/// A mirrored group: the same seed played once per seat rotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, FromRow)]
pub struct GroupRow {
    /// Key.
    pub id: GroupId,
    /// Its competition.
    pub competition_id: CompetitionId,
    /// Number within the competition.
    pub group_no: i64,
    /// Seed of every game in it.
    pub seed: i64,
    /// Bot ids in rotation 0's seat order; rotation r puts `bots[(s + r) % n]` in seat s.
    /// (Kept in `group_seats`.)
    #[sqlx(skip)]
    pub bots: Vec<BotId>,
    /// Where it stands.
    pub status: GroupStatus,
}

/// Whether a competition's groups go to workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompetitionStatus {
    /// Scheduled and leased.
    Open,
    /// Kept, but nothing new is played.
    Closed,
}

/// Where a mirrored group stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupStatus {
    /// Waiting for a worker.
    Scheduled,
    /// A worker holds it until its lease expires.
    Leased,
    /// Every rotation is recorded.
    Done,
    /// One of its bots was taken out of play before a worker leased it: never
    /// played, and not counted as scheduled.
    Withdrawn,
}

/// A status or kind stored as its text: `as_str`, `FromStr`, `Display`, and the
/// sqlx traits, so that rows read it and queries bind it as the type itself.
/// A part of a statement's text ([`sql_text!`]): SQL as written, or a
/// stored word of an enum, quoted.
pub(crate) trait SqlPart {
    /// Appends this part to `text`.
    fn push_to(&self, text: &mut String);
}

impl SqlPart for &str {
    fn push_to(&self, text: &mut String) {
        text.push_str(self);
    }
}

/// A statement's text, put together once (the first time it runs) from SQL
/// and the stored words of enums (`sql_text!("... status = ", GroupStatus::Done)`
/// writes `status = 'done'`). So every status word lives in its enum alone
/// (`tests/tests/layers.rs` holds that no statement spells one), and a renamed
/// or removed word cannot leave a query behind. The words are written into
/// the text, not bound: the partial indexes on them (`WHERE status =
/// 'scheduled'`) serve only a statement whose own text names the same word.
macro_rules! sql_text {
    ($($part:expr),+ $(,)?) => {{
        static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            let mut text = String::new();
            $( $crate::store::SqlPart::push_to(&$part, &mut text); )+
            text
        });
        TEXT.as_str()
    }};
}
pub(crate) use sql_text;

macro_rules! stored_as_text {
    ($ty:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        impl $ty {
            /// Every value, in the order declared: the words the store's
            /// CHECK on the column allows (a test holds the two together).
            pub const ALL: &'static [$ty] = &[$($ty::$variant),*];

            /// The text the store keeps.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $text),* }
            }

            /// The text as an SQL string literal (`'done'`), to write into a
            /// statement ([`sql_text!`]).
            pub fn quoted(self) -> &'static str {
                match self { $($ty::$variant => concat!("'", $text, "'")),* }
            }
        }

        impl SqlPart for $ty {
            fn push_to(&self, text: &mut String) {
                text.push_str(self.quoted());
            }
        }

        impl std::str::FromStr for $ty {
            type Err = StoreError;
            fn from_str(text: &str) -> Result<$ty> {
                match text {
                    $($text => Ok($ty::$variant),)*
                    other => Err(StoreError::Corrupt(format!(
                        concat!("unknown ", stringify!($ty), " {:?}"),
                        other
                    ))),
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl sqlx::Type<sqlx::Any> for $ty {
            fn type_info() -> sqlx::any::AnyTypeInfo {
                <str as sqlx::Type<sqlx::Any>>::type_info()
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Any> for $ty {
            fn decode(value: sqlx::any::AnyValueRef<'r>) -> std::result::Result<$ty, sqlx::error::BoxDynError> {
                Ok(<&str as sqlx::Decode<sqlx::Any>>::decode(value)?.parse()?)
            }
        }

        impl<'q> sqlx::Encode<'q, sqlx::Any> for $ty {
            fn encode_by_ref(
                &self,
                buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer,
            ) -> std::result::Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Any>>::encode(self.as_str(), buf)
            }
        }
    };
}

/// A column holding JSON text, read as `T`: rows declare such a field
/// `#[sqlx(try_from = "JsonText<T>")]`.
pub struct JsonText<T>(T);

impl<T> sqlx::Type<sqlx::Any> for JsonText<T> {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <str as sqlx::Type<sqlx::Any>>::type_info()
    }
}

impl<'r, T: serde::de::DeserializeOwned> sqlx::Decode<'r, sqlx::Any> for JsonText<T> {
    fn decode(
        value: sqlx::any::AnyValueRef<'r>,
    ) -> std::result::Result<JsonText<T>, sqlx::error::BoxDynError> {
        let text = <&str as sqlx::Decode<sqlx::Any>>::decode(value)?;
        Ok(JsonText(serde_json::from_str(text)?))
    }
}

impl From<JsonText<Vec<String>>> for Vec<String> {
    fn from(json: JsonText<Vec<String>>) -> Self {
        json.0
    }
}

impl From<JsonText<crate::submission::Manifest>> for crate::submission::Manifest {
    fn from(json: JsonText<crate::submission::Manifest>) -> Self {
        json.0
    }
}

impl From<JsonText<Vec<(String, String)>>> for Vec<(String, String)> {
    fn from(json: JsonText<Vec<(String, String)>>) -> Self {
        json.0
    }
}

/// A column holding a value of another crate's type as its text (`Display` writes
/// it, `FromStr` reads it): the referee's time controls, terminations and fault
/// kinds. Rows declare such a field `#[sqlx(try_from = "Text<T>")]`; queries bind
/// `Text(value)`.
pub struct Text<T>(pub T);

impl<T> sqlx::Type<sqlx::Any> for Text<T> {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <str as sqlx::Type<sqlx::Any>>::type_info()
    }
}

impl<'r, T> sqlx::Decode<'r, sqlx::Any> for Text<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    fn decode(value: sqlx::any::AnyValueRef<'r>) -> std::result::Result<Text<T>, sqlx::error::BoxDynError> {
        let text = <&str as sqlx::Decode<sqlx::Any>>::decode(value)?;
        text.parse()
            .map(Text)
            .map_err(|e: T::Err| StoreError::Corrupt(e.to_string()).into())
    }
}

impl<'q, T: std::fmt::Display> sqlx::Encode<'q, sqlx::Any> for Text<T> {
    fn encode_by_ref(
        &self,
        buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer,
    ) -> std::result::Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <String as sqlx::Encode<sqlx::Any>>::encode(self.0.to_string(), buf)
    }
}

/// `From<Text<T>>` for each type kept through [`Text`] (one impl per type: the
/// orphan rule forbids a blanket one).
macro_rules! text_column {
    ($($ty:ty),*) => {$(
        impl From<Text<$ty>> for $ty {
            fn from(text: Text<$ty>) -> $ty {
                text.0
            }
        }
    )*};
}

text_column!(TimeControl, Termination, FaultKind);

stored_as_text!(CompetitionStatus { Open = "open", Closed = "closed" });

pub use crate::season::Phase;
stored_as_text!(Phase {
    Open = "open",
    Frozen = "frozen",
    Finals = "finals",
    Closed = "closed",
});

/// How a competition's groups are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompetitionFormat {
    /// By the ratings, for as long as it is open (the service's scheduler).
    Ladder,
    /// Every set of bots meets in turn (`ladder tournament`).
    RoundRobin,
    /// The first bot meets every set of the others (`ladder tournament`).
    Gauntlet,
    /// An author's unrated games between their bot and another (its entrants are
    /// the two bots alone; no other bot enters it, no page lists it as a ladder).
    Challenge,
    /// A season's finals: its entrants are the finalists alone, and its groups
    /// are placed by the season, each seed derived from a committed master seed
    /// ([`crate::season`]), never by the scheduler.
    Finals,
}

stored_as_text!(CompetitionFormat {
    Ladder = "ladder",
    RoundRobin = "round-robin",
    Gauntlet = "gauntlet",
    Challenge = "challenge",
    Finals = "finals",
});
pub use crate::dealing::Seeding;
stored_as_text!(Seeding {
    Mirrored = "mirrored",
    Independent = "independent",
});

stored_as_text!(GroupStatus {
    Scheduled = "scheduled",
    Leased = "leased",
    Done = "done",
    Withdrawn = "withdrawn",
});

/// Whether a bot is scheduled, and if not, who took it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BotStatus {
    /// Uploaded, waiting for its build (if it has one) and its qualification.
    Building,
    /// Its build failed (its log says why); never scheduled. Upload a new version.
    #[serde(rename = "build-failed")]
    BuildFailed,
    /// Built, but it failed its qualification (the report says why); never
    /// scheduled. Upload a new version.
    Rejected,
    /// Scheduled in its game's open competitions.
    Active,
    /// Taken out by the admin; `enable` puts it back.
    Disabled,
    /// Taken out by the server: it could not start or shake hands in too many
    /// reported games in a row; `enable` puts it back.
    Suspended,
    /// Replaced by a newer version (`update`); its games and rating stay.
    Superseded,
    /// Taken out for good; its games stay.
    Removed,
}

stored_as_text!(BotStatus {
    Building = "building",
    BuildFailed = "build-failed",
    Rejected = "rejected",
    Active = "active",
    Disabled = "disabled",
    Suspended = "suspended",
    Superseded = "superseded",
    Removed = "removed",
});

/// Who set a bot's status last: an author may put back only what they or the
/// server took out, never what the host did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusBy {
    Admin,
    Author,
    Server,
}

stored_as_text!(StatusBy {
    Admin = "admin",
    Author = "author",
    Server = "server",
});

/// What a batch of reported games did to a bot's run of games in a row in which
/// it broke (could not start, crashed or broke the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartRun {
    /// It started in some game: the run is now the failures after its last start.
    Restarted(i64),
    /// It started in none: the run grows by this many.
    Continued(i64),
}

impl StartRun {
    /// The run after one more game, in which the bot started or did not.
    #[must_use]
    pub fn then(self, started: bool) -> StartRun {
        match (self, started) {
            (_, true) => StartRun::Restarted(0),
            (StartRun::Restarted(n), false) => StartRun::Restarted(n + 1),
            (StartRun::Continued(n), false) => StartRun::Continued(n + 1),
        }
    }
}

/// A played game to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGame {
    /// Competition.
    pub competition_id: CompetitionId,
    /// Group.
    pub group_id: GroupId,
    /// Rotation within the group.
    pub rotation: i64,
    /// Bot ids by seat.
    pub bots: Vec<BotId>,
    /// Places by seat.
    pub ranks: Vec<u32>,
    /// How it ended.
    pub termination: Termination,
    /// The referee's JSON record.
    pub record: String,
    /// Its faults by seat and kind, for the bot pages.
    pub faults: Vec<SeatFaults>,
    /// What only its seats' authors may read, for the seats that said something.
    pub logs: Vec<NewSeatLog>,
}

/// A game's places by seat as the store keeps them: one integer, four bits a
/// seat, seat 0 lowest. A place is 1 to 15, so the first zero nibble ends the
/// list; a game's bots are not kept with it (they are its group's seats turned
/// by its rotation).
pub struct Places;

impl Places {
    /// Most seats a packed game can hold.
    pub const MAX_SEATS: usize = 15;

    /// `places` packed, or `None` for more than [`Places::MAX_SEATS`] seats, none,
    /// or a place outside 1..=15.
    pub fn pack(places: &[u32]) -> Option<i64> {
        if places.is_empty() || places.len() > Self::MAX_SEATS {
            return None;
        }
        places
            .iter()
            .enumerate()
            .try_fold(0i64, |packed, (seat, &place)| {
                (1..=15)
                    .contains(&place)
                    .then(|| packed | i64::from(place) << (4 * seat))
            })
    }

    /// What [`Places::pack`] made, or `None` for a number it cannot have made.
    pub fn unpack(packed: i64) -> Option<Vec<u32>> {
        if packed <= 0 || packed >> (4 * Self::MAX_SEATS) != 0 {
            return None;
        }
        let seats = (0..Self::MAX_SEATS)
            .take_while(|&seat| (packed >> (4 * seat)) & 0xf != 0)
            .count();
        // A zero nibble below a place is not a list `pack` writes.
        if packed >> (4 * seats) != 0 {
            return None;
        }
        Some(
            (0..seats)
                .map(|seat| ((packed >> (4 * seat)) & 0xf) as u32)
                .collect(),
        )
    }
}

/// A game's faults of one kind at one seat: how many, and the first one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeatFaults {
    /// The seat.
    pub seat: usize,
    /// The kind.
    pub kind: FaultKind,
    /// How many of this kind the seat had in the game.
    pub count: u64,
    /// The first one's detail.
    pub detail: String,
    /// Moves recorded before the first one.
    pub at_move: usize,
}

/// A bot's faults of one kind in a competition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromRow)]
pub struct FaultTally {
    /// The kind.
    #[sqlx(try_from = "Text<FaultKind>")]
    pub kind: FaultKind,
    /// Faults of that kind.
    pub faults: i64,
    /// Games with at least one.
    pub games: i64,
}

/// One stored fault row, for a bot's page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromRow)]
pub struct FaultRow {
    /// The game.
    pub game_id: GameId,
    /// The kind.
    #[sqlx(try_from = "Text<FaultKind>")]
    pub kind: FaultKind,
    /// How many of this kind in that game.
    pub count: i64,
    /// The first one's detail (as the referee wrote it: redact before showing).
    pub detail: String,
    /// Moves recorded before it.
    pub at_move: i64,
}

/// A bot's rating as fit at one point of a competition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FromRow)]
pub struct RatingPoint {
    /// Bot.
    pub bot_id: BotId,
    /// Games in the competition at the fit.
    pub games: i64,
    /// When it was kept (ms since the epoch).
    pub at_ms: i64,
    /// Elo as fit.
    pub elo: f64,
    /// Half-width of the 95% interval; None while unbounded.
    pub ci95: Option<f64>,
}

/// How busy a competition is now, for its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Activity {
    /// Games recorded in the last hour, counted up to one more than
    /// [`Activity::LAST_HOUR_CAP`] (which then reads "or more").
    pub games_last_hour: i64,
    /// Workers holding an unexpired lease of one of its groups.
    pub workers_active: i64,
    /// Groups scheduled and waiting for a worker.
    pub groups_waiting: i64,
    /// Groups leased now.
    pub groups_playing: i64,
}

impl Activity {
    /// Games in the last hour counted at most (a page never walks more).
    pub const LAST_HOUR_CAP: i64 = 100_000;
}

/// A worker known to the service.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct WorkerRow {
    /// Key.
    pub id: WorkerId,
    /// Unique name.
    pub name: String,
    /// When its token was revoked (ms since the epoch), if it was.
    pub revoked_ms: Option<i64>,
}

impl WorkerRow {
    /// Whether its token was revoked.
    pub fn revoked(&self) -> bool {
        self.revoked_ms.is_some()
    }
}

/// A stored game's result, compact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRow {
    /// What the standings count.
    pub game: rating::GameResult,
    /// How it ended.
    pub termination: Termination,
}

impl std::ops::Deref for ResultRow {
    type Target = rating::GameResult;

    fn deref(&self) -> &rating::GameResult {
        &self.game
    }
}

impl AsRef<rating::GameResult> for ResultRow {
    fn as_ref(&self) -> &rating::GameResult {
        &self.game
    }
}

/// How a report of a leased group ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Stored.
    Recorded,
    /// Another report already stored this group.
    AlreadyDone,
    /// The lease expired and the group went to another worker.
    LeaseLost,
}

/// The SHA-256 of a token, in hex: what the store keeps of a worker's token and
/// of a lease's, so that a copy of the database leases and reports nothing.
pub fn token_hash(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

/// A seed from the operating system's random source, for a group played again
/// (its first seed was dealt to a worker already).
fn fresh_seed() -> Result<u64> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Random(e.to_string()))?;
    Ok(u64::from_le_bytes(bytes))
}

/// The files a SQLite store at `url` keeps (the database, its write-ahead log,
/// the log's index and a rollback journal), to be masked from bots: the log holds
/// every row written lately, seeds included. Empty for PostgreSQL and memory.
pub fn sqlite_files(url: &str) -> Vec<std::path::PathBuf> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") || url == "sqlite::memory:" {
        return Vec::new();
    }
    let path = url
        .strip_prefix("sqlite:")
        .unwrap_or(url)
        .trim_start_matches("//");
    let path = path.split('?').next().unwrap_or(path);
    if path.is_empty() {
        return Vec::new();
    }
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| std::path::PathBuf::from(format!("{path}{suffix}")))
        .collect()
}

/// The store.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    dialect: Dialect,
    /// Whether artifacts' bytes go in the store (else the server keeps them in
    /// an object store, and the store only their names).
    artifact_bytes_here: bool,
    /// The time its decisions read (a season's deadline, an upload's time).
    clock: crate::clock::Clock,
}

/// Declares the store's repositories: for each aggregate a view of the store,
/// made by the accessor of its name, that holds that aggregate's queries and
/// writes (its own file of `store/`).
macro_rules! repositories {
    ($($(#[$doc:meta])* $repo:ident => $accessor:ident;)*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy)]
            pub struct $repo<'s> {
                store: &'s Store,
            }
        )*
        impl Store {
            $(
                $(#[$doc])*
                pub fn $accessor(&self) -> $repo<'_> {
                    $repo { store: self }
                }
            )*
        }
    };
}

repositories! {
    /// Bots' files, by the SHA-256 of their archive (`store/artifacts.rs`).
    Artifacts => artifacts;
    /// Authors, their uploads and their bots' logs (`store/authors.rs`).
    Authors => authors;
    /// Builds and checks of uploaded versions: their leases and verdicts (`store/preps.rs`).
    Preps => preps;
    /// Bots: registered, updated, their status (`store/bots.rs`).
    Bots => bots;
    /// Challenges between two bots (`store/challenges.rs`).
    Challenges => challenges;
    /// Competitions and their entrants (`store/competitions.rs`).
    Competitions => competitions;
    /// Played games: results, records, faults, rating points (`store/games.rs`).
    Games => games;
    /// Mirrored groups: scheduled, leased, renewed, recorded exactly once (`store/groups.rs`).
    Groups => groups;
    /// Seats' private logs (`store/logs.rs`).
    Logs => logs;
    /// Seasons: entries, freezing, finals (`store/seasons.rs`).
    Seasons => seasons;
    /// Authors' web sessions (`store/sessions.rs`).
    Sessions => sessions;
    /// Finished groups counted by the shape of their results, what a refit reads (`store/shapes.rs`).
    Shapes => shapes;
    /// Workers, their tokens and their audit (`store/workers.rs`).
    Workers => workers;
}

impl Store {
    /// This store, keeping only artifacts' names and sizes: their bytes go to
    /// the server's object store.
    #[must_use]
    pub fn with_artifact_bytes_elsewhere(mut self) -> Store {
        self.artifact_bytes_here = false;
        self
    }

    /// This store, reading time from `clock` where its decisions need it (an
    /// upload's time, a season's deadline): a test moves it instead of waiting.
    #[must_use]
    pub fn with_clock(mut self, clock: crate::clock::Clock) -> Store {
        self.clock = clock;
        self
    }

    /// Now, by this store's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Opens (creating if needed) and migrates a store: `sqlite:FILE`, a plain file
    /// path (SQLite), `sqlite::memory:` or `postgres://...`.
    ///
    /// # Errors
    /// A URL of another kind, or a database that cannot be opened or migrated.
    pub async fn open(url: &str) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let (url, dialect) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            (url.to_owned(), Dialect::Postgres)
        } else if url == "sqlite::memory:" {
            (url.to_owned(), Dialect::Sqlite)
        } else if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.trim_start_matches("//");
            let sep = if path.contains('?') { '&' } else { '?' };
            (format!("sqlite:{path}{sep}mode=rwc"), Dialect::Sqlite)
        } else if !url.contains("://") && !url.is_empty() {
            (format!("sqlite:{url}?mode=rwc"), Dialect::Sqlite)
        } else {
            return Err(StoreError::Url(url.to_owned()));
        };
        let memory = url == "sqlite::memory:";
        let pool = AnyPoolOptions::new()
            // An in-memory SQLite database lives in one connection.
            .max_connections(if memory {
                1
            } else if dialect == Dialect::Sqlite {
                4
            } else {
                8
            })
            // A SQLite file keeps one connection open, so its write-ahead log
            // stays where it was when a bot was started (and masked from it).
            .min_connections(u32::from(dialect == Dialect::Sqlite && !memory))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if dialect == Dialect::Sqlite {
                        // WAL: readers do not block the writer; NORMAL sync is durable
                        // across process crashes (the kill -9 case), not power loss.
                        for pragma in [
                            "PRAGMA journal_mode=WAL",
                            "PRAGMA synchronous=NORMAL",
                            "PRAGMA busy_timeout=10000",
                            "PRAGMA foreign_keys=ON",
                            // 32 MiB of pages per connection (the default is 2 MiB):
                            // the unfinished groups and recent games stay in memory.
                            "PRAGMA cache_size=-32768",
                        ] {
                            sqlx::query(pragma).execute(&mut *conn).await?;
                        }
                    }
                    Ok(())
                })
            })
            .connect(&url)
            .await?;
        let store = Store {
            pool,
            dialect,
            artifact_bytes_here: true,
            clock: crate::clock::Clock::system(),
        };
        store.migrate().await?;
        store.shapes().tally_pending().await?;
        // A SQLite file holds bots' environments and every seed: its owner's only.
        for file in sqlite_files(&url) {
            use std::os::unix::fs::PermissionsExt;
            if file.exists() {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
                    StoreError::File(format!("{}: cannot make it private: {e}", file.display()))
                })?;
            }
        }
        Ok(store)
    }

    /// A transaction that will write. SQLite takes the write lock at once: a
    /// transaction that reads first and writes later cannot wait for the lock and
    /// fails with "database is locked" when another writer is in.
    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        Ok(match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Dialect::Postgres => self.pool.begin().await?,
        })
    }

    /// Serialises one author's capped requests (uploads, challenges, the host's
    /// status changes of their bots) inside `tx`, so that a cap's count and the
    /// insert it allows are one step: on PostgreSQL, a lock on the author's row
    /// until `tx` ends (READ COMMITTED reads what the request before it wrote once
    /// the lock is granted); on SQLite, [`Store::write_tx`] already holds the
    /// database's one write lock.
    async fn lock_author(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        author: AuthorId,
    ) -> Result<()> {
        if self.dialect == Dialect::Postgres {
            sqlx::query("SELECT id FROM authors WHERE id = $1 FOR UPDATE")
                .bind(author)
                .fetch_optional(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Most connections the pool opens.
    pub fn max_connections(&self) -> u32 {
        self.pool.options().get_max_connections()
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    async fn migrate(&self) -> Result<()> {
        migrations(self.dialect)
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Migration(e.to_string()))
    }

    /// The newest migration applied.
    ///
    /// # Errors
    /// The database.
    pub async fn schema_version(&self) -> Result<i64> {
        let v: Option<i64> = sqlx::query("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        Ok(v.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database made when migrations were a list in this file (their own
    /// `schema_migrations` table, no `_sqlx_migrations`) opens, keeps its rows and
    /// takes new ones.
    #[tokio::test]
    async fn a_database_from_before_migration_files_opens_with_everything_kept() {
        sqlx::any::install_default_drivers();
        let path = std::env::temp_dir().join(format!("astragal-legacy-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let url = format!("sqlite:{}", path.display());
        {
            let pool = AnyPoolOptions::new()
                .max_connections(1)
                .connect(&format!("{url}?mode=rwc"))
                .await
                .unwrap();
            let legacy =
                include_str!("../../migrations/sqlite/0001_initial.sql").replace(" IF NOT EXISTS", "");
            let statements = legacy
                .split(';')
                .map(|s| s.lines().filter(|l| !l.starts_with("--")).collect::<Vec<_>>().join("\n"))
                .filter(|s| !s.trim().is_empty())
                .chain([
                    "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, applied_ms BIGINT NOT NULL)".into(),
                    "INSERT INTO schema_migrations VALUES (1, 0)".into(),
                    "INSERT INTO bots (name, game, spec, created_ms) VALUES ('old', 'ur', 'builtin:random', 0)".into(),
                ]);
            for statement in statements {
                sqlx::query(sqlx::AssertSqlSafe(statement))
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            pool.close().await;
        }
        let store = Store::open(&url).await.unwrap();
        // Brought up to the newest migration, its old rows kept.
        let newest = SQLITE_MIGRATIONS.iter().map(|m| m.version).max().unwrap();
        assert_eq!(store.schema_version().await.unwrap(), newest);
        let bots = store.bots().all().await.unwrap();
        assert_eq!(bots.len(), 1);
        assert_eq!(bots[0].name, "old");
        assert!(bots[0].env.is_empty(), "a bot from before environments has none");
        store
            .bots()
            .register_bot("new", "ur", "builtin:first", &[])
            .await
            .unwrap();
        assert_eq!(store.bots().all().await.unwrap().len(), 2);
        drop(store);
        let _ = std::fs::remove_file(&path);
    }

    /// Taking a bot out of play withdraws exactly the waiting groups it sits in:
    /// not a leased one, not another bot's (nor one of a bot whose id shares its
    /// digits, which the old comma lists had to guard against).
    #[tokio::test]
    async fn a_bot_out_of_play_withdraws_only_its_waiting_groups() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let mut ids = Vec::new();
        for k in 0..12 {
            ids.push(
                store
                    .bots()
                    .register_bot(&format!("b{k}"), "ur", "builtin:first", &[])
                    .await
                    .unwrap()
                    .id,
            );
        }
        let (one, eleven, two) = (ids[0], ids[10], ids[1]);
        assert_eq!((one, eleven), (BotId(1), BotId(11)));
        let c = store
            .competitions()
            .create_competition(&NewCompetition::two_seat_ur("c"))
            .await
            .unwrap();
        store
            .groups()
            .schedule_groups(
                &c,
                &[
                    (0, vec![one, two]),
                    (1, vec![eleven, two]),
                    (2, vec![two, one]),
                    (3, vec![two, eleven]),
                ],
            )
            .await
            .unwrap();
        // Group 0 is leased: it plays on.
        let now = store.now_ms();
        let leased = store
            .groups()
            .lease_many(&LeaseAsk::new("w", "t"), now, now + 60_000, 1, 4)
            .await
            .unwrap();
        assert_eq!(leased[0].group_no, 0);
        let (_, withdrawn) = store
            .bots()
            .set_bot_status("b0", BotStatus::Disabled, "")
            .await
            .unwrap();
        assert_eq!(withdrawn, 1);
        let status: Vec<(i64, GroupStatus)> = store
            .groups()
            .of_competition(c.id)
            .await
            .unwrap()
            .iter()
            .map(|g| (g.group_no, g.status))
            .collect();
        assert_eq!(
            status,
            [
                (0, GroupStatus::Leased),
                (1, GroupStatus::Scheduled),
                (2, GroupStatus::Withdrawn),
                (3, GroupStatus::Scheduled)
            ]
        );
    }

    /// An in-memory store with bots `a` and `b` and the two-seat Ur ladder `c`.
    async fn two_bots_in_a_ladder() -> (Store, BotRow, BotRow, CompetitionRow) {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let a = store
            .bots()
            .register_bot("a", "ur", "builtin:first", &[])
            .await
            .unwrap();
        let b = store
            .bots()
            .register_bot("b", "ur", "builtin:random", &[])
            .await
            .unwrap();
        let c = store
            .competitions()
            .create_competition(&NewCompetition::two_seat_ur("c"))
            .await
            .unwrap();
        (store, a, b, c)
    }

    /// A batch of reports is stored group by group and answered report by
    /// report, in order: a group reported twice in one call is recorded from its
    /// first report, a report under another lease's token stores nothing, and an
    /// unknown group is named.
    #[tokio::test]
    async fn a_batch_of_reports_is_answered_report_by_report() {
        let (store, a, b, c) = two_bots_in_a_ladder().await;
        store
            .groups()
            .schedule_groups(&c, &[(0, vec![a.id, b.id]), (1, vec![b.id, a.id])])
            .await
            .unwrap();
        let now = store.now_ms();
        let leased = store
            .groups()
            .lease_many(&LeaseAsk::new("w", "tok"), now, now + 60_000, 2, 4)
            .await
            .unwrap();
        assert_eq!(leased.len(), 2);
        let game = |g: &GroupRow, rotation: i64| NewGame {
            logs: Vec::new(),
            competition_id: c.id,
            group_id: g.id,
            rotation,
            bots: if rotation == 0 {
                g.bots.clone()
            } else {
                g.bots.iter().rev().copied().collect()
            },
            ranks: vec![1, 2],
            termination: Termination::Normal,
            record: "{}".into(),
            faults: vec![],
        };
        let (g0, g1) = (&leased[0], &leased[1]);
        let games0 = [game(g0, 0), game(g0, 1)];
        let games1 = [game(g1, 0), game(g1, 1)];
        let report = |group_id, token, games| LeaseReport {
            group_id,
            token,
            games,
            starts: &[],
        };
        let (out, _) = store
            .groups()
            .complete_leases(
                &[
                    report(g1.id, "other", &games1),
                    report(g0.id, "tok", &games0),
                    report(g0.id, "tok", &games0),
                    report(GroupId(999_999), "tok", &games0),
                ],
                None,
                0,
            )
            .await
            .unwrap();
        let said: Vec<String> = out
            .iter()
            .map(|o| match o {
                Ok(done) => format!("{done:?}"),
                Err(e) => e.to_string(),
            })
            .collect();
        assert_eq!(said, ["LeaseLost", "Recorded", "AlreadyDone", "no group 999999"]);
        let results = store.games().results(c.id).await.unwrap();
        assert_eq!(results.len(), 2, "group 0's two games, once");
        assert!(results.iter().all(|r| r.group_id == g0.id.0));
        assert_eq!(results[1].bots, vec![g0.bots[1].0, g0.bots[0].0]);
    }

    /// The worker audit reads a reported game's fault kinds from its `faults`
    /// rows: each game of a group the worker reported once, with its kinds (a
    /// game without faults with none), typed.
    #[tokio::test]
    async fn a_workers_reported_games_carry_their_fault_kinds() {
        let (store, a, b, c) = two_bots_in_a_ladder().await;
        let w = store
            .workers()
            .add_worker("w", &token_hash("secret"))
            .await
            .unwrap();
        store
            .groups()
            .schedule_groups(&c, &[(0, vec![a.id, b.id])])
            .await
            .unwrap();
        let now = store.now_ms();
        let g = store
            .groups()
            .lease_many(&LeaseAsk::new("w", "tok"), now, now + 60_000, 1, 4)
            .await
            .unwrap()
            .remove(0);
        let fault = |seat, kind| SeatFaults {
            seat,
            kind,
            count: 2,
            detail: String::new(),
            at_move: 3,
        };
        let game = |rotation: i64, faults| NewGame {
            logs: Vec::new(),
            competition_id: c.id,
            group_id: g.id,
            rotation,
            bots: vec![a.id, b.id],
            ranks: vec![1, 2],
            termination: Termination::Forfeit,
            record: "{}".into(),
            faults,
        };
        let games = [
            game(
                0,
                vec![fault(0, FaultKind::Timeout), fault(1, FaultKind::Illegal)],
            ),
            game(1, vec![]),
        ];
        let report = LeaseReport {
            group_id: g.id,
            token: "tok",
            games: &games,
            starts: &[],
        };
        store
            .groups()
            .complete_leases(&[report], Some(w.id), 0)
            .await
            .unwrap();
        let mut reported = store.workers().reported_games().await.unwrap();
        reported.iter_mut().for_each(|r| r.kinds.sort());
        assert_eq!(
            reported,
            [
                rating::audit::ReportedGame {
                    worker: w.id.0,
                    group: g.id.0,
                    kinds: vec![FaultKind::Timeout, FaultKind::Illegal]
                },
                rating::audit::ReportedGame {
                    worker: w.id.0,
                    group: g.id.0,
                    kinds: vec![]
                },
            ]
        );
    }

    /// A bot put back in play starts a new run of failed starts with no
    /// witnesses: a worker that saw the old run does not count again, so one
    /// worker alone cannot suspend it afterwards (two are needed here).
    #[tokio::test]
    async fn a_bot_put_back_in_play_keeps_no_witness_of_its_old_run() {
        let (store, a, b, c) = two_bots_in_a_ladder().await;
        let w1 = store
            .workers()
            .add_worker("w1", &token_hash("one"))
            .await
            .unwrap();
        let w2 = store
            .workers()
            .add_worker("w2", &token_hash("two"))
            .await
            .unwrap();
        store
            .groups()
            .schedule_groups(&c, &[(0, vec![a.id, b.id]), (1, vec![a.id, b.id])])
            .await
            .unwrap();
        // Each worker plays one group in which b never starts: a run of 2.
        let broke = |worker: &WorkerRow, token: &'static str| {
            let store = store.clone();
            let (worker, c) = (worker.clone(), c.clone());
            async move {
                let now = store.now_ms();
                let g = store
                    .groups()
                    .lease_many(&LeaseAsk::new(&worker.name, token), now, now + 60_000, 1, 4)
                    .await
                    .unwrap()
                    .remove(0);
                let games: Vec<NewGame> = (0..2)
                    .map(|rotation| NewGame {
                        logs: Vec::new(),
                        competition_id: c.id,
                        group_id: g.id,
                        rotation,
                        bots: vec![a.id, b.id],
                        ranks: vec![1, 2],
                        termination: Termination::Forfeit,
                        record: "{}".into(),
                        faults: vec![],
                    })
                    .collect();
                let starts: Vec<SeatStart> = (0..2)
                    .map(|_| SeatStart {
                        bot: b.id,
                        failure: Some(FaultKind::Spawn),
                        moved: false,
                    })
                    .collect();
                let report = LeaseReport {
                    group_id: g.id,
                    token,
                    games: &games,
                    starts: &starts,
                };
                let (_, suspended) = store
                    .groups()
                    .complete_leases(&[report], Some(worker.id), 2)
                    .await
                    .unwrap();
                suspended
            }
        };
        assert!(
            broke(&w1, "t1").await.is_empty(),
            "one worker's word is not enough"
        );
        store
            .bots()
            .set_bot_status("b", BotStatus::Active, "")
            .await
            .unwrap();
        let suspended = broke(&w2, "t2").await;
        assert!(suspended.is_empty(), "w1 saw another run: {suspended:?}");
        let b_now = store.bots().bot("b").await.unwrap().unwrap();
        assert_eq!((b_now.status, b_now.start_failures), (BotStatus::Active, 2));
    }

    /// Places pack and unpack to the same list for every size and tie, and a
    /// number `pack` cannot have written is refused, never read as some list.
    #[test]
    fn places_read_back_as_packed_and_nothing_else_unpacks() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let seats = 1 + (rng >> 60) as usize % Places::MAX_SEATS;
            let places: Vec<u32> = (0..seats).map(|s| 1 + ((rng >> (4 * s)) % 15) as u32).collect();
            let packed = Places::pack(&places).unwrap();
            assert_eq!(
                Places::unpack(packed).as_deref(),
                Some(&places[..]),
                "{packed:#x}"
            );
        }
        assert_eq!(Places::pack(&[1, 2]), Some(0x21));
        assert_eq!(Places::pack(&[2, 1, 1]), Some(0x112));
        for bad in [&[][..], &[0, 1], &[1, 16], &[1; 16]] {
            assert_eq!(Places::pack(bad), None, "{bad:?}");
        }
        for bad in [0, -1, 0x201, 1 << 60, i64::MAX] {
            assert_eq!(Places::unpack(bad), None, "{bad:#x}");
        }
    }

    /// Statuses and formats go in and come back as their types; a stored text
    /// that is none of them is an error that names it, never a panic or a default.
    #[tokio::test]
    async fn stored_kinds_round_trip_and_an_unknown_one_is_named() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let mut new = NewCompetition::two_seat_ur("g");
        new.format = CompetitionFormat::Gauntlet;
        new.seeding = Seeding::Independent;
        let c = store.competitions().create_competition(&new).await.unwrap();
        assert_eq!(
            (c.format, c.seeding, c.status),
            (
                CompetitionFormat::Gauntlet,
                Seeding::Independent,
                CompetitionStatus::Open
            )
        );
        store
            .bots()
            .register_bot("b", "ur", "builtin:first", &[])
            .await
            .unwrap();
        let (b, _) = store
            .bots()
            .set_bot_status("b", BotStatus::Disabled, "resting")
            .await
            .unwrap();
        assert_eq!(b.status, BotStatus::Disabled);
        // The store refuses a status its enum lacks (migration 0022)...
        let refused = sqlx::query("UPDATE bots SET status = 'bogus'")
            .execute(&store.pool)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("CHECK constraint failed: bots_status_known"),
            "{refused}"
        );
        // ...and one that got in all the same (its check dropped) is read as an
        // error that names it.
        sqlx::raw_sql("DROP TRIGGER bots_status_known_update; UPDATE bots SET status = 'bogus'")
            .execute(&store.pool)
            .await
            .unwrap();
        let e = store.bots().all().await.unwrap_err().to_string();
        assert!(e.contains("unknown BotStatus \"bogus\""), "{e}");
        sqlx::query("UPDATE competitions SET options = 'not json'")
            .execute(&store.pool)
            .await
            .unwrap();
        let e = store.competitions().all().await.unwrap_err().to_string();
        assert!(e.contains("options"), "{e}");
    }

    /// A SQLite store is its owner's only, and keeps no lease token a copy of it
    /// could report with: only the token's hash.
    #[tokio::test]
    async fn a_sqlite_store_is_private_and_keeps_only_hashes_of_lease_tokens() {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!("astragal-private-{}.db", std::process::id()));
        let url = format!("sqlite:{}", path.display());
        for file in sqlite_files(&url) {
            let _ = std::fs::remove_file(file);
        }
        let store = Store::open(&url).await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
        let a = store
            .bots()
            .register_bot("a", "ur", "builtin:first", &[])
            .await
            .unwrap();
        let b = store
            .bots()
            .register_bot("b", "ur", "builtin:random", &[])
            .await
            .unwrap();
        let c = store
            .competitions()
            .create_competition(&NewCompetition::two_seat_ur("c"))
            .await
            .unwrap();
        store
            .groups()
            .schedule_groups(&c, &[(0, vec![a.id, b.id])])
            .await
            .unwrap();
        let now = store.now_ms();
        let leased = store
            .groups()
            .lease_many(&LeaseAsk::new("w1", "the-lease-token"), now, now + 60_000, 1, 4)
            .await
            .unwrap();
        assert_eq!(leased.len(), 1);
        let kept: String = sqlx::query("SELECT lease_token FROM match_groups WHERE id = $1")
            .bind(leased[0].id)
            .fetch_one(&store.pool)
            .await
            .unwrap()
            .try_get(0)
            .unwrap();
        assert_eq!(kept, token_hash("the-lease-token"));
        drop(store);
        for file in sqlite_files(&url) {
            let _ = std::fs::remove_file(file);
        }
    }
}
