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

use serde::{Deserialize, Serialize};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};

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

/// A registered bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotRow {
    /// Key.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Game it plays.
    pub game: String,
    /// How to run it (a referee `--bot` spec).
    pub spec: String,
    /// Environment variables for its process (key, value).
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
    pub previous_id: Option<i64>,
}

/// A competition: a game with options among a set of bots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompetitionRow {
    /// Key.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Game id.
    pub game: String,
    /// Game options, `key=value`.
    pub options: Vec<String>,
    /// Seats per game.
    pub seats: i64,
    /// `ladder` (scheduled by ratings), `round-robin` or `gauntlet`.
    pub format: String,
    /// The competition's seed: group g plays `engine::group_seed(seed, g)`. Drawn
    /// from the operating system unless the host gave one.
    pub seed: i64,
    /// Games to play in all; 0 = no limit.
    pub max_games: i64,
    /// Time control: `movetime=MS` or `tc=BASE+INC`.
    pub time: String,
    /// Whether workers get its groups.
    pub status: CompetitionStatus,
    /// What created it (a tournament's settings, to resume only the same one).
    pub config: String,
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
    /// Format.
    pub format: String,
    /// Seed of group 0.
    pub seed: i64,
    /// Games in all; 0 = no limit.
    pub max_games: i64,
    /// Time control.
    pub time: String,
    /// Settings fingerprint.
    pub config: String,
}

/// One group's report to [`Store::complete_leases`].
#[derive(Debug, Clone, Copy)]
pub struct LeaseReport<'a> {
    /// The group.
    pub group_id: i64,
    /// The lease it was played under.
    pub token: &'a str,
    /// Its games, checked.
    pub games: &'a [NewGame],
    /// Its seats, game by game in the order played: counted towards each bot's
    /// run of failed starts when the group is recorded.
    pub starts: &'a [SeatStart],
}

/// A seat of a reported game: its bot, and why it could not start or shake
/// hands, if it could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatStart {
    /// The bot.
    pub bot: i64,
    /// `kind: detail` of its spawn or handshake fault.
    pub failure: Option<String>,
}

/// A mirrored group: the same seed played once per seat rotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRow {
    /// Key.
    pub id: i64,
    /// Its competition.
    pub competition_id: i64,
    /// Number within the competition.
    pub group_no: i64,
    /// Seed of every game in it.
    pub seed: i64,
    /// Bot ids in rotation 0's seat order; rotation r puts `bots[(s + r) % n]` in seat s.
    pub bots: Vec<i64>,
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

macro_rules! stored_as_text {
    ($ty:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        impl $ty {
            /// The text the store keeps.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $text),* }
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
    };
}

stored_as_text!(CompetitionStatus { Open = "open", Closed = "closed" });
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
    Active = "active",
    Disabled = "disabled",
    Suspended = "suspended",
    Superseded = "superseded",
    Removed = "removed",
});

/// What a batch of reported games did to a bot's run of games in a row in which
/// it could not start or shake hands.
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
    pub competition_id: i64,
    /// Group.
    pub group_id: i64,
    /// Rotation within the group.
    pub rotation: i64,
    /// Bot ids by seat.
    pub bots: Vec<i64>,
    /// Places by seat.
    pub ranks: Vec<u32>,
    /// `normal`, `cap` or `forfeit`.
    pub termination: String,
    /// The referee's JSON record.
    pub record: String,
    /// The kinds of its faults, comma-separated (empty: none).
    pub fault_kinds: String,
    /// Its faults by seat and kind, for the bot pages.
    pub faults: Vec<SeatFaults>,
}

/// A game's faults of one kind at one seat: how many, and the first one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeatFaults {
    /// The seat.
    pub seat: usize,
    /// The kind (`timeout`, `illegal`, ...).
    pub kind: String,
    /// How many of this kind the seat had in the game.
    pub count: u64,
    /// The first one's detail.
    pub detail: String,
    /// Moves recorded before the first one.
    pub at_move: usize,
}

/// A bot's faults of one kind in a competition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultTally {
    /// The kind.
    pub kind: String,
    /// Faults of that kind.
    pub faults: i64,
    /// Games with at least one.
    pub games: i64,
}

/// One stored fault row, for a bot's page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultRow {
    /// The game.
    pub game_id: i64,
    /// The kind.
    pub kind: String,
    /// How many of this kind in that game.
    pub count: i64,
    /// The first one's detail (as the referee wrote it: redact before showing).
    pub detail: String,
    /// Moves recorded before it.
    pub at_move: i64,
}

/// A bot's rating as fit at one point of a competition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingPoint {
    /// Bot.
    pub bot_id: i64,
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
    /// Games recorded in the last hour.
    pub games_last_hour: i64,
    /// Workers holding an unexpired lease of one of its groups.
    pub workers_active: i64,
    /// Groups scheduled and waiting for a worker.
    pub groups_waiting: i64,
    /// Groups leased now.
    pub groups_playing: i64,
}

/// A worker known to the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerRow {
    /// Key.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Whether its token was revoked.
    pub revoked: bool,
}

/// A stored game's result, compact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRow {
    /// Game key.
    pub id: i64,
    /// Group.
    pub group_id: i64,
    /// Rotation.
    pub rotation: i64,
    /// Bot ids by seat.
    pub bots: Vec<i64>,
    /// Places by seat.
    pub ranks: Vec<u32>,
    /// Termination.
    pub termination: String,
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

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn join_ids<T: ToString>(ids: &[T]) -> String {
    ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

fn split_ids<T: std::str::FromStr>(text: &str) -> Result<Vec<T>> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|_| StoreError::Corrupt(format!("id list {text:?}")))
        })
        .collect()
}

/// `($1, $2, ...), (...)`: the placeholders of `rows` rows of `columns` values
/// each, for a many-row `INSERT`.
fn value_rows(rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|r| {
            let marks: Vec<String> = (1..=columns).map(|c| format!("${}", r * columns + c)).collect();
            format!("({})", marks.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The store.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    dialect: Dialect,
}

impl Store {
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
        let store = Store { pool, dialect };
        store.migrate().await?;
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

    /// Most connections the pool opens.
    pub fn max_connections(&self) -> u32 {
        self.pool.options().get_max_connections()
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    async fn migrate(&self) -> Result<()> {
        let migrator = match self.dialect {
            Dialect::Sqlite => &SQLITE_MIGRATIONS,
            Dialect::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator
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

    // ---- bots

    fn bot_row(r: &AnyRow) -> Result<BotRow> {
        Ok(BotRow {
            id: r.try_get("id")?,
            name: r.try_get("name")?,
            game: r.try_get("game")?,
            spec: r.try_get("spec")?,
            env: serde_json::from_str(&r.try_get::<String, _>("env")?)
                .map_err(|e| StoreError::Corrupt(format!("bot environment: {e}")))?,
            status: r.try_get::<String, _>("status")?.parse()?,
            status_reason: r.try_get("status_reason")?,
            start_failures: r.try_get("start_failures")?,
            version: r.try_get("version")?,
            previous_id: r.try_get("previous_id")?,
        })
    }

    const BOT_COLUMNS: &str =
        "id, name, game, spec, env, status, status_reason, start_failures, version, previous_id";

    /// Registers a bot, or returns the one of that name if it is the same.
    ///
    /// # Errors
    /// The name is taken by a bot with another game, spec or environment.
    pub async fn register_bot(
        &self,
        name: &str,
        game: &str,
        spec: &str,
        env: &[(String, String)],
    ) -> Result<BotRow> {
        let env_json = serde_json::to_string(env).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO bots (name, game, spec, env, created_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(game)
        .bind(spec)
        .bind(&env_json)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        let bot = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {name:?} vanished")))?;
        if bot.game != game || bot.spec != spec || bot.env != env {
            return Err(StoreError::Conflict(format!(
                "bot name {name:?} is taken (game {}, spec {:?}, {} environment variables)",
                bot.game,
                bot.spec,
                bot.env.len()
            )));
        }
        Ok(bot)
    }

    /// A bot by name.
    ///
    /// # Errors
    /// The database.
    pub async fn bot(&self, name: &str) -> Result<Option<BotRow>> {
        let sql = format!("SELECT {} FROM bots WHERE name = $1", Self::BOT_COLUMNS);
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(Self::bot_row).transpose()
    }

    /// Every bot, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn bots(&self) -> Result<Vec<BotRow>> {
        let sql = format!("SELECT {} FROM bots ORDER BY id", Self::BOT_COLUMNS);
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Self::bot_row).collect()
    }

    /// Sets a bot's status. Taking it out of play withdraws the groups it was
    /// scheduled in that no worker holds yet; putting it back clears its run of
    /// start failures. Returns the bot and how many groups were withdrawn.
    ///
    /// # Errors
    /// No such bot ([`StoreError::NotFound`]), a superseded or removed bot put back
    /// ([`StoreError::Conflict`]), or the database.
    pub async fn set_bot_status(&self, name: &str, status: BotStatus, reason: &str) -> Result<(BotRow, u64)> {
        let bot = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no bot named {name:?}")))?;
        if matches!(bot.status, BotStatus::Superseded | BotStatus::Removed) && status != BotStatus::Removed {
            return Err(StoreError::Conflict(format!(
                "bot {name:?} is {} ({}); it cannot be {}",
                bot.status,
                bot.status_reason,
                match status {
                    BotStatus::Active => "enabled",
                    _ => "changed",
                }
            )));
        }
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "UPDATE bots SET status = $2, status_reason = $3,
             start_failures = CASE WHEN $2 = 'active' THEN 0 ELSE start_failures END WHERE id = $1",
        )
        .bind(bot.id)
        .bind(status.as_str())
        .bind(reason)
        .execute(&mut *tx)
        .await?;
        let withdrawn = if status == BotStatus::Active {
            0
        } else {
            Self::withdraw_groups_of(&mut tx, bot.id).await?
        };
        tx.commit().await?;
        let bot = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {name:?} vanished")))?;
        Ok((bot, withdrawn))
    }

    /// Withdraws the scheduled (not leased) groups a bot sits in.
    async fn withdraw_groups_of(tx: &mut sqlx::Transaction<'static, sqlx::Any>, bot_id: i64) -> Result<u64> {
        // `bots` is the ids joined by commas: match the id between commas.
        Ok(sqlx::query(
            "UPDATE match_groups SET status = 'withdrawn'
             WHERE status = 'scheduled' AND (',' || bots || ',') LIKE $1",
        )
        .bind(format!("%,{bot_id},%"))
        .execute(&mut **tx)
        .await?
        .rows_affected())
    }

    /// Replaces a bot with a new version: a new row `BASE@N` (its own rating) with
    /// the new spec and environment, linked to the old one, which is superseded
    /// (its games and rating stay; its scheduled groups are withdrawn).
    ///
    /// # Errors
    /// No such bot, a superseded or removed one, or the database.
    pub async fn update_bot(&self, name: &str, spec: &str, env: &[(String, String)]) -> Result<BotRow> {
        let old = self
            .bot(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no bot named {name:?}")))?;
        if matches!(old.status, BotStatus::Superseded | BotStatus::Removed) {
            return Err(StoreError::Conflict(format!(
                "bot {name:?} is {} ({}): update its newest version",
                old.status, old.status_reason
            )));
        }
        let base = name.split_once('@').map_or(name, |(b, _)| b);
        let version = old.version + 1;
        let new_name = format!("{base}@{version}");
        let env_json = serde_json::to_string(env).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO bots (name, game, spec, env, created_ms, version, previous_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&new_name)
        .bind(&old.game)
        .bind(spec)
        .bind(&env_json)
        .bind(now_ms())
        .bind(version)
        .bind(old.id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE bots SET status = 'superseded', status_reason = $2 WHERE id = $1")
            .bind(old.id)
            .bind(format!("replaced by {new_name}"))
            .execute(&mut *tx)
            .await?;
        Self::withdraw_groups_of(&mut tx, old.id).await?;
        tx.commit().await?;
        self.bot(&new_name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {new_name:?} vanished")))
    }

    /// Counts reported games against bots' runs of games in a row in which they
    /// could not start or shake hands (see [`StartRun`]). A bot whose run reaches
    /// `limit` (0: never) is suspended with `reason(bot, run)`, and its scheduled
    /// groups withdrawn. Returns the bots suspended now, as they were.
    ///
    async fn count_start_failures(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        runs: &[(i64, StartRun)],
        limit: i64,
        reason: impl Fn(i64, i64) -> String,
    ) -> Result<Vec<BotRow>> {
        // Started, and no failure since: one statement for all, which writes
        // nothing in the usual case (no run to clear).
        let cleared: Vec<i64> = runs
            .iter()
            .filter(|(_, run)| *run == StartRun::Restarted(0))
            .map(|(id, _)| *id)
            .collect();
        if !cleared.is_empty() {
            let marks: Vec<String> = (1..=cleared.len()).map(|k| format!("${k}")).collect();
            let sql = format!(
                "UPDATE bots SET start_failures = 0 WHERE start_failures <> 0 AND id IN ({})",
                marks.join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for id in &cleared {
                q = q.bind(*id);
            }
            q.execute(&mut **tx).await?;
        }
        let mut suspended = Vec::new();
        for &(bot_id, run) in runs {
            let (sql, n) = match run {
                StartRun::Restarted(0) | StartRun::Continued(0) => continue,
                StartRun::Restarted(n) => ("UPDATE bots SET start_failures = $2 WHERE id = $1", n),
                StartRun::Continued(n) => (
                    "UPDATE bots SET start_failures = start_failures + $2 WHERE id = $1",
                    n,
                ),
            };
            sqlx::query(sql).bind(bot_id).bind(n).execute(&mut **tx).await?;
            if limit <= 0 {
                continue;
            }
            let sql = format!(
                "SELECT {} FROM bots WHERE id = $1 AND status = 'active' AND start_failures >= $2",
                Self::BOT_COLUMNS
            );
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(bot_id)
                .bind(limit)
                .fetch_optional(&mut **tx)
                .await?;
            if let Some(row) = row {
                let bot = Self::bot_row(&row)?;
                sqlx::query("UPDATE bots SET status = 'suspended', status_reason = $2 WHERE id = $1")
                    .bind(bot_id)
                    .bind(reason(bot_id, bot.start_failures))
                    .execute(&mut **tx)
                    .await?;
                Self::withdraw_groups_of(tx, bot_id).await?;
                suspended.push(bot);
            }
        }
        Ok(suspended)
    }

    // ---- competitions

    fn competition_row(r: &AnyRow) -> Result<CompetitionRow> {
        let options: String = r.try_get("options")?;
        Ok(CompetitionRow {
            id: r.try_get("id")?,
            name: r.try_get("name")?,
            game: r.try_get("game")?,
            options: serde_json::from_str(&options).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            seats: r.try_get("seats")?,
            format: r.try_get("format")?,
            seed: r.try_get("seed")?,
            max_games: r.try_get("max_games")?,
            time: r.try_get("time")?,
            status: r.try_get::<String, _>("status")?.parse()?,
            config: r.try_get("config")?,
        })
    }

    const COMPETITION_COLUMNS: &str =
        "id, name, game, options, seats, format, seed, max_games, time, status, config";

    /// Creates an open competition.
    ///
    /// # Errors
    /// The name is taken.
    pub async fn create_competition(&self, c: &NewCompetition) -> Result<CompetitionRow> {
        let inserted = sqlx::query(
            "INSERT INTO competitions (name, game, options, seats, format, seed, max_games, time, status, config, created_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'open', $9, $10) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&c.name)
        .bind(&c.game)
        .bind(serde_json::to_string(&c.options).unwrap_or_default())
        .bind(c.seats)
        .bind(&c.format)
        .bind(c.seed)
        .bind(c.max_games)
        .bind(&c.time)
        .bind(&c.config)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "competition {:?} already exists",
                c.name
            )));
        }
        self.competition(&c.name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("competition {:?} vanished", c.name)))
    }

    /// A competition by name.
    ///
    /// # Errors
    /// The database.
    pub async fn competition(&self, name: &str) -> Result<Option<CompetitionRow>> {
        let sql = format!(
            "SELECT {} FROM competitions WHERE name = $1",
            Self::COMPETITION_COLUMNS
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(Self::competition_row).transpose()
    }

    /// Every competition, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn competitions(&self) -> Result<Vec<CompetitionRow>> {
        let sql = format!(
            "SELECT {} FROM competitions ORDER BY id",
            Self::COMPETITION_COLUMNS
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Self::competition_row).collect()
    }

    /// Opens or closes a competition.
    ///
    /// # Errors
    /// No such competition.
    pub async fn set_status(&self, name: &str, open: bool) -> Result<()> {
        let r = sqlx::query("UPDATE competitions SET status = $1 WHERE name = $2")
            .bind(
                if open {
                    CompetitionStatus::Open
                } else {
                    CompetitionStatus::Closed
                }
                .as_str(),
            )
            .bind(name)
            .execute(&self.pool)
            .await?;
        if r.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("no competition named {name:?}")));
        }
        Ok(())
    }

    /// Enters a bot in a competition (again is fine).
    ///
    /// # Errors
    /// The database.
    pub async fn add_entrant(&self, competition_id: i64, bot_id: i64) -> Result<()> {
        sqlx::query("INSERT INTO entrants (competition_id, bot_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(competition_id)
            .bind(bot_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A competition's bots, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn entrants(&self, competition_id: i64) -> Result<Vec<BotRow>> {
        let columns: Vec<String> = Self::BOT_COLUMNS.split(", ").map(|c| format!("b.{c}")).collect();
        let sql = format!(
            "SELECT {} FROM bots b JOIN entrants e ON e.bot_id = b.id WHERE e.competition_id = $1 ORDER BY b.id",
            columns.join(", ")
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(competition_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Self::bot_row).collect()
    }

    // ---- groups

    fn group_row(r: &AnyRow) -> Result<GroupRow> {
        let bots: String = r.try_get("bots")?;
        Ok(GroupRow {
            id: r.try_get("id")?,
            competition_id: r.try_get("competition_id")?,
            group_no: r.try_get("group_no")?,
            seed: r.try_get("seed")?,
            bots: split_ids(&bots)?,
            status: r.try_get::<String, _>("status")?.parse()?,
        })
    }

    /// Schedules groups `(group_no, bots)`; a group number already present is kept
    /// as it is. Group g's seed is `engine::group_seed(competition seed, g)`.
    ///
    /// # Errors
    /// The database.
    pub async fn schedule_groups(&self, c: &CompetitionRow, groups: &[(i64, Vec<i64>)]) -> Result<()> {
        let mut tx = self.write_tx().await?;
        let now = now_ms();
        for (no, bots) in groups {
            sqlx::query(
                "INSERT INTO match_groups (competition_id, group_no, seed, bots, status, created_ms)
                 VALUES ($1, $2, $3, $4, 'scheduled', $5) ON CONFLICT (competition_id, group_no) DO NOTHING",
            )
            .bind(c.id)
            .bind(*no)
            .bind(engine::group_seed(c.seed as u64, *no as u64) as i64)
            .bind(join_ids(bots))
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Schedules one more group with the next free number; returns it, or `None`
    /// when another server took the number first (try again).
    ///
    /// # Errors
    /// The database.
    pub async fn schedule_next(&self, c: &CompetitionRow, bots: &[i64]) -> Result<Option<GroupRow>> {
        let next: Option<i64> =
            sqlx::query("SELECT MAX(group_no) FROM match_groups WHERE competition_id = $1")
                .bind(c.id)
                .fetch_one(&self.pool)
                .await?
                .try_get(0)?;
        let no = next.map_or(0, |n| n + 1);
        let row = sqlx::query(
            "INSERT INTO match_groups (competition_id, group_no, seed, bots, status, created_ms)
             VALUES ($1, $2, $3, $4, 'scheduled', $5) ON CONFLICT (competition_id, group_no) DO NOTHING
             RETURNING id, competition_id, group_no, seed, bots, status",
        )
        .bind(c.id)
        .bind(no)
        .bind(engine::group_seed(c.seed as u64, no as u64) as i64)
        .bind(join_ids(bots))
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::group_row).transpose()
    }

    /// Groups of a competition, by number.
    ///
    /// # Errors
    /// The database.
    pub async fn groups(&self, competition_id: i64) -> Result<Vec<GroupRow>> {
        let rows = sqlx::query(
            "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups
             WHERE competition_id = $1 ORDER BY group_no",
        )
        .bind(competition_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::group_row).collect()
    }

    /// A group by key.
    ///
    /// # Errors
    /// The database.
    pub async fn group(&self, id: i64) -> Result<Option<GroupRow>> {
        let row = sqlx::query(
            "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::group_row).transpose()
    }

    /// Leases the oldest group of an open competition that is scheduled or whose
    /// lease has expired, to `worker` until `expires_ms`, under `token`.
    ///
    /// # Errors
    /// The database.
    pub async fn lease(
        &self,
        worker: &str,
        token: &str,
        now: i64,
        expires_ms: i64,
    ) -> Result<Option<GroupRow>> {
        Ok(self
            .lease_many(worker, token, now, expires_ms, 1)
            .await?
            .into_iter()
            .next())
    }

    /// Leases up to `limit` groups at once, oldest first (see [`Store::lease`]), all
    /// under `token`.
    ///
    /// # Errors
    /// The database.
    pub async fn lease_many(
        &self,
        worker: &str,
        token: &str,
        now: i64,
        expires_ms: i64,
        limit: i64,
    ) -> Result<Vec<GroupRow>> {
        // PostgreSQL: several servers lease at once; SKIP LOCKED hands each its own
        // rows. `OF g`: locking the competition's row too would make every other
        // lease of that competition skip, and find nothing, until this one commits.
        let lock = match self.dialect {
            Dialect::Postgres => "FOR UPDATE OF g SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        // Expired leases first (they are the oldest), then scheduled groups, each
        // through its own partial index (migration 0005): a lease never walks past
        // the thousands of groups other workers hold.
        let mut rows = Vec::new();
        for (which, order) in [
            (
                "g.status = 'leased' AND g.lease_expires_ms < $4",
                "g.lease_expires_ms",
            ),
            ("g.status = 'scheduled'", "g.id"),
        ] {
            let want = limit - rows.len() as i64;
            if want <= 0 {
                break;
            }
            let expired = which.contains("$4");
            let limit_mark = if expired { "$5" } else { "$4" };
            let sql = format!(
                "UPDATE match_groups SET status = 'leased', lease_token = $1, lease_worker = $2, lease_expires_ms = $3
                 WHERE id IN (
                    SELECT g.id FROM match_groups g JOIN competitions c ON c.id = g.competition_id
                    WHERE {which} AND c.status = 'open'
                    ORDER BY {order} LIMIT {limit_mark} {lock})
                 RETURNING id, competition_id, group_no, seed, bots, status"
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(token)
                .bind(worker)
                .bind(expires_ms);
            if expired {
                q = q.bind(now);
            }
            rows.extend(q.bind(want).fetch_all(&self.pool).await?);
        }
        let mut groups = rows.iter().map(Self::group_row).collect::<Result<Vec<_>>>()?;
        groups.sort_by_key(|g| g.id);
        Ok(groups)
    }

    /// Groups of a competition with a key above `after`, by key: what the
    /// scheduler has not seen yet (its own and other servers').
    ///
    /// # Errors
    /// The database.
    pub async fn groups_after(&self, competition_id: i64, after: i64) -> Result<Vec<GroupRow>> {
        let rows = sqlx::query(
            "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups
             WHERE competition_id = $1 AND id > $2 ORDER BY id",
        )
        .bind(competition_id)
        .bind(after)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::group_row).collect()
    }

    /// Schedules groups with the next free numbers, in one transaction; returns
    /// those stored (a number another server took meanwhile is skipped: its
    /// group is that server's).
    ///
    /// # Errors
    /// The database.
    pub async fn schedule_many(&self, c: &CompetitionRow, groups: &[Vec<i64>]) -> Result<Vec<GroupRow>> {
        let mut tx = self.write_tx().await?;
        // A bot taken out of play since the groups were picked is left out. On
        // PostgreSQL the rows are share-locked, so a status change waits for this
        // transaction and then withdraws what it stored.
        let mut ids: Vec<i64> = groups.iter().flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let mut inactive = std::collections::HashSet::new();
        for chunk in ids.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|k| format!("${k}")).collect();
            let sql = format!(
                "SELECT id, status FROM bots WHERE id IN ({}) {}",
                marks.join(", "),
                match self.dialect {
                    Dialect::Postgres => "FOR SHARE",
                    Dialect::Sqlite => "",
                }
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for id in chunk {
                q = q.bind(*id);
            }
            for row in q.fetch_all(&mut *tx).await? {
                if row.try_get::<String, _>(1)? != BotStatus::Active.as_str() {
                    inactive.insert(row.try_get::<i64, _>(0)?);
                }
            }
        }
        let groups: Vec<&Vec<i64>> = groups
            .iter()
            .filter(|g| !g.iter().any(|id| inactive.contains(id)))
            .collect();
        let next: Option<i64> =
            sqlx::query("SELECT MAX(group_no) FROM match_groups WHERE competition_id = $1")
                .bind(c.id)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
        let first = next.map_or(0, |n| n + 1);
        let now = now_ms();
        let mut stored = Vec::with_capacity(groups.len());
        // Numbers are dense from 0, so a cap on the number is a cap on the count,
        // whichever server got there first.
        // Withdrawn groups hold numbers but no games: the cap moves past them.
        let last = if c.max_games > 0 {
            let withdrawn: i64 = sqlx::query(
                "SELECT COUNT(*) FROM match_groups WHERE competition_id = $1 AND status = 'withdrawn'",
            )
            .bind(c.id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            (c.max_games + c.seats - 1) / c.seats + withdrawn
        } else {
            i64::MAX
        };
        let numbered: Vec<(i64, &Vec<i64>)> = groups
            .iter()
            .enumerate()
            .map(|(k, bots)| (first + k as i64, *bots))
            .take_while(|(no, _)| *no < last)
            .collect();
        // Many rows a statement: a batch of the background scheduler is hundreds.
        for chunk in numbered.chunks(100) {
            let mut sql = format!(
                "INSERT INTO match_groups (competition_id, group_no, seed, bots, status, created_ms) VALUES {}",
                value_rows(chunk.len(), 6)
            );
            sql.push_str(
                " ON CONFLICT (competition_id, group_no) DO NOTHING
                 RETURNING id, competition_id, group_no, seed, bots, status",
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (no, bots) in chunk {
                q = q
                    .bind(c.id)
                    .bind(*no)
                    .bind(engine::group_seed(c.seed as u64, *no as u64) as i64)
                    .bind(join_ids(bots))
                    .bind("scheduled")
                    .bind(now);
            }
            for row in q.fetch_all(&mut *tx).await? {
                stored.push(Self::group_row(&row)?);
            }
        }
        stored.sort_by_key(|g| g.id);
        tx.commit().await?;
        Ok(stored)
    }

    /// Groups by key (those that exist).
    ///
    /// # Errors
    /// The database.
    pub async fn groups_by_id(&self, ids: &[i64]) -> Result<Vec<GroupRow>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|k| format!("${k}")).collect();
            let sql = format!(
                "SELECT id, competition_id, group_no, seed, bots, status FROM match_groups WHERE id IN ({})",
                marks.join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for &id in chunk {
                q = q.bind(id);
            }
            for row in q.fetch_all(&self.pool).await? {
                out.push(Self::group_row(&row)?);
            }
        }
        Ok(out)
    }

    async fn insert_games(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        games: &[&NewGame],
        now: i64,
    ) -> Result<u64> {
        // Many rows a statement (a statement per game is most of a report's cost
        // in SQLite); 100 rows of 9 values stay far below both databases' limits.
        let mut inserted = 0;
        for chunk in games.chunks(100) {
            let sql = format!(
                "INSERT INTO games (competition_id, group_id, rotation, bots, ranks, termination, record, recorded_ms, fault_kinds) VALUES {}",
                value_rows(chunk.len(), 9)
            );
            let sql = format!("{sql} ON CONFLICT (group_id, rotation) DO NOTHING");
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for g in chunk {
                q = q
                    .bind(g.competition_id)
                    .bind(g.group_id)
                    .bind(g.rotation)
                    .bind(join_ids(&g.bots))
                    .bind(join_ids(&g.ranks))
                    .bind(&g.termination)
                    .bind(&g.record)
                    .bind(now)
                    .bind(&g.fault_kinds);
            }
            inserted += q.execute(&mut **tx).await?.rows_affected();
        }
        for g in games.iter().filter(|g| !g.faults.is_empty()) {
            Self::insert_faults(tx, g).await?;
        }
        Ok(inserted)
    }

    /// A stored game's faults, once: a game already itemized (reported twice) is
    /// skipped. Faulted games are few, so two statements each is cheap.
    async fn insert_faults(tx: &mut sqlx::Transaction<'_, sqlx::Any>, g: &NewGame) -> Result<()> {
        let row = sqlx::query(
            "SELECT id FROM games WHERE group_id = $1 AND rotation = $2
             AND NOT EXISTS (SELECT 1 FROM faults f WHERE f.game_id = games.id)",
        )
        .bind(g.group_id)
        .bind(g.rotation)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = row else { return Ok(()) };
        let game_id: i64 = row.try_get(0)?;
        let faults: Vec<&SeatFaults> = g.faults.iter().filter(|f| f.seat < g.bots.len()).collect();
        for chunk in faults.chunks(100) {
            let sql = format!(
                "INSERT INTO faults (game_id, competition_id, bot_id, seat, kind, count, detail, at_move) VALUES {}",
                value_rows(chunk.len(), 8)
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for f in chunk {
                q = q
                    .bind(game_id)
                    .bind(g.competition_id)
                    .bind(g.bots[f.seat])
                    .bind(f.seat as i64)
                    .bind(&f.kind)
                    .bind(f.count as i64)
                    .bind(&f.detail)
                    .bind(f.at_move as i64);
            }
            q.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Stores games in one transaction (a game already stored is skipped) and marks
    /// each group done once all `seats` rotations are in. Returns how many were new.
    ///
    /// # Errors
    /// The database; nothing of the batch is stored then.
    pub async fn record_games(&self, games: &[NewGame], seats: i64) -> Result<u64> {
        let mut tx = self.write_tx().await?;
        let refs: Vec<&NewGame> = games.iter().collect();
        let inserted = Self::insert_games(&mut tx, &refs, now_ms()).await?;
        let mut groups: Vec<i64> = games.iter().map(|g| g.group_id).collect();
        groups.sort_unstable();
        groups.dedup();
        for id in groups {
            sqlx::query(
                "UPDATE match_groups SET status = 'done'
                 WHERE id = $1 AND (SELECT COUNT(*) FROM games WHERE group_id = $1) >= $2",
            )
            .bind(id)
            .bind(seats)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(inserted)
    }

    /// Stores a leased group's games if the lease under `token` still holds it.
    ///
    /// # Errors
    /// The database; nothing is stored then.
    pub async fn complete_lease(
        &self,
        group_id: i64,
        token: &str,
        worker_id: Option<i64>,
        games: &[NewGame],
    ) -> Result<Completion> {
        let (done, _) = self
            .complete_leases(
                &[LeaseReport {
                    group_id,
                    token,
                    games,
                    starts: &[],
                }],
                worker_id,
                0,
            )
            .await?;
        done.into_iter()
            .next()
            .ok_or_else(|| StoreError::Corrupt("no outcome for a report".into()))?
    }

    /// Stores several leased groups' games in one transaction, each if its lease
    /// still holds it; one outcome per report, in order (a group that does not
    /// exist is [`StoreError::NotFound`] there, and the others still go in). The
    /// recorded groups' seats count towards each bot's run of games in a row in
    /// which it could not start; a run reaching `suspend_after` (0: never)
    /// suspends the bot. Returns the outcomes and the bots suspended now.
    ///
    /// # Errors
    /// The database; nothing is stored then.
    pub async fn complete_leases(
        &self,
        reports: &[LeaseReport<'_>],
        worker_id: Option<i64>,
        suspend_after: i64,
    ) -> Result<(Vec<Result<Completion>>, Vec<BotRow>)> {
        let mut tx = self.write_tx().await?;
        let now = now_ms();
        let mut out = Vec::with_capacity(reports.len());
        let mut games = Vec::new();
        for r in reports {
            // Done, by this lease, if it still holds the group: one statement in
            // the usual case (on PostgreSQL the row lock makes a second report of
            // the group wait, then find it done).
            let taken = sqlx::query(
                "UPDATE match_groups SET status = 'done', reported_by = $2
                 WHERE id = $1 AND status <> 'done' AND lease_token = $3",
            )
            .bind(r.group_id)
            .bind(worker_id)
            .bind(r.token)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if taken == 1 {
                games.extend(r.games.iter());
                out.push(Ok(Completion::Recorded));
                continue;
            }
            let row = sqlx::query("SELECT status FROM match_groups WHERE id = $1")
                .bind(r.group_id)
                .fetch_optional(&mut *tx)
                .await?;
            out.push(match row {
                None => Err(StoreError::NotFound(format!("no group {}", r.group_id))),
                Some(row) => match row.try_get::<String, _>(0)?.parse::<GroupStatus>()? {
                    GroupStatus::Done => Ok(Completion::AlreadyDone),
                    _ => Ok(Completion::LeaseLost),
                },
            });
        }
        Self::insert_games(&mut tx, &games, now).await?;
        let mut runs: Vec<(i64, StartRun)> = Vec::new();
        let mut last_failure: std::collections::HashMap<i64, &str> = std::collections::HashMap::new();
        for (r, _) in reports
            .iter()
            .zip(&out)
            .filter(|(_, o)| matches!(o, Ok(Completion::Recorded)))
        {
            for seat in r.starts {
                let k = match runs.iter().position(|(id, _)| *id == seat.bot) {
                    Some(k) => k,
                    None => {
                        runs.push((seat.bot, StartRun::Continued(0)));
                        runs.len() - 1
                    }
                };
                runs[k].1 = runs[k].1.then(seat.failure.is_none());
                if let Some(f) = &seat.failure {
                    last_failure.insert(seat.bot, f);
                }
            }
        }
        let suspended = Self::count_start_failures(&mut tx, &runs, suspend_after, |bot, run| {
            let last = last_failure.get(&bot).copied().unwrap_or("");
            format!("could not start or shake hands in {run} reported games in a row (last: {last})")
        })
        .await?;
        tx.commit().await?;
        Ok((out, suspended))
    }

    // ---- workers

    fn worker_row(r: &AnyRow) -> Result<WorkerRow> {
        Ok(WorkerRow {
            id: r.try_get("id")?,
            name: r.try_get("name")?,
            revoked: r.try_get::<Option<i64>, _>("revoked_ms")?.is_some(),
        })
    }

    /// Adds a worker known by the SHA-256 of its token.
    ///
    /// # Errors
    /// The name is taken, or the database.
    pub async fn add_worker(&self, name: &str, token_hash: &str) -> Result<WorkerRow> {
        let inserted = sqlx::query(
            "INSERT INTO workers (name, token_hash, created_ms) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(token_hash)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "a worker named {name:?} exists (revoke it and add another name)"
            )));
        }
        self.worker(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("worker {name:?} vanished")))
    }

    /// A worker by name.
    ///
    /// # Errors
    /// The database.
    pub async fn worker(&self, name: &str) -> Result<Option<WorkerRow>> {
        let row = sqlx::query("SELECT id, name, revoked_ms FROM workers WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(Self::worker_row).transpose()
    }

    /// The worker whose token has this SHA-256, if it is not revoked.
    ///
    /// # Errors
    /// The database.
    pub async fn worker_by_token_hash(&self, token_hash: &str) -> Result<Option<WorkerRow>> {
        let row = sqlx::query(
            "SELECT id, name, revoked_ms FROM workers WHERE token_hash = $1 AND revoked_ms IS NULL",
        )
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::worker_row).transpose()
    }

    /// Every worker, by name.
    ///
    /// # Errors
    /// The database.
    pub async fn workers(&self) -> Result<Vec<WorkerRow>> {
        let rows = sqlx::query("SELECT id, name, revoked_ms FROM workers ORDER BY name")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Self::worker_row).collect()
    }

    /// Revokes a worker's token: its calls are refused from now on.
    ///
    /// # Errors
    /// No such worker, or the database.
    pub async fn revoke_worker(&self, name: &str) -> Result<WorkerRow> {
        let done = sqlx::query("UPDATE workers SET revoked_ms = $2 WHERE name = $1 AND revoked_ms IS NULL")
            .bind(name)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        match self.worker(name).await? {
            Some(w) => Ok(w),
            None if done.rows_affected() == 0 => Err(StoreError::NotFound(format!("no worker {name:?}"))),
            None => Err(StoreError::NotFound(format!("worker {name:?} vanished"))),
        }
    }

    /// What each worker reported: `(worker id, group id, fault kinds)` per stored
    /// game of a group a worker reported.
    ///
    /// # Errors
    /// The database.
    pub async fn reported_games(&self) -> Result<Vec<(i64, i64, String)>> {
        let rows = sqlx::query(
            "SELECT m.reported_by, g.group_id, g.fault_kinds FROM games g
             JOIN match_groups m ON m.id = g.group_id WHERE m.reported_by IS NOT NULL",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect()
    }

    /// Revokes a worker and removes every game of the groups it reported, which are
    /// scheduled again (other workers play them). Returns `(groups, games)` voided.
    ///
    /// # Errors
    /// No such worker, or the database (then nothing changes).
    pub async fn void_worker(&self, name: &str) -> Result<(u64, u64)> {
        let mut tx = self.write_tx().await?;
        let row = sqlx::query("SELECT id FROM workers WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no worker {name:?}")))?;
        let id: i64 = row.try_get(0)?;
        sqlx::query("UPDATE workers SET revoked_ms = $2 WHERE id = $1 AND revoked_ms IS NULL")
            .bind(id)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "DELETE FROM faults WHERE game_id IN (SELECT g.id FROM games g
             JOIN match_groups m ON m.id = g.group_id WHERE m.reported_by = $1)",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let games = sqlx::query(
            "DELETE FROM games WHERE group_id IN (SELECT id FROM match_groups WHERE reported_by = $1)",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let groups = sqlx::query(
            "UPDATE match_groups SET status = 'scheduled', lease_token = NULL, lease_worker = NULL,
             lease_expires_ms = NULL, reported_by = NULL WHERE reported_by = $1",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok((groups, games))
    }

    // ---- games

    /// Reads `id, group_id, rotation, bots, ranks, termination`.
    fn result_row(r: &AnyRow) -> Result<ResultRow> {
        let bots: String = r.try_get(3)?;
        let ranks: String = r.try_get(4)?;
        Ok(ResultRow {
            id: r.try_get(0)?,
            group_id: r.try_get(1)?,
            rotation: r.try_get(2)?,
            bots: split_ids(&bots)?,
            ranks: split_ids(&ranks)?,
            termination: r.try_get(5)?,
        })
    }

    /// Rotations of a group already stored.
    ///
    /// # Errors
    /// The database.
    pub async fn stored_rotations(&self, competition_id: i64) -> Result<Vec<(i64, i64)>> {
        let rows = sqlx::query("SELECT group_id, rotation FROM games WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// Every result of a competition, in recording order.
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results(&self, competition_id: i64) -> Result<Vec<ResultRow>> {
        let rows = sqlx::query(
            "SELECT id, group_id, rotation, bots, ranks, termination FROM games WHERE competition_id = $1 ORDER BY id",
        )
        .bind(competition_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::result_row).collect()
    }

    /// Game records of a competition after game key `after`, oldest first, at most `limit`.
    ///
    /// # Errors
    /// The database.
    pub async fn records(&self, competition_id: i64, after: i64, limit: i64) -> Result<Vec<(i64, String)>> {
        let rows = sqlx::query(
            "SELECT id, record FROM games WHERE competition_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(competition_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    /// The newest results of a competition, newest first.
    ///
    /// # Errors
    /// The database.
    pub async fn recent(&self, competition_id: i64, limit: i64) -> Result<Vec<ResultRow>> {
        let rows = sqlx::query(
            "SELECT id, group_id, rotation, bots, ranks, termination FROM games WHERE competition_id = $1
             ORDER BY id DESC LIMIT $2",
        )
        .bind(competition_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::result_row).collect()
    }

    /// Groups scheduled for a competition, done or not.
    ///
    /// # Errors
    /// The database.
    pub async fn group_count(&self, competition_id: i64) -> Result<i64> {
        self.count(
            "SELECT COUNT(*) FROM match_groups WHERE competition_id = $1",
            competition_id,
        )
        .await
    }

    /// Groups of open competitions scheduled and not yet leased.
    ///
    /// # Errors
    /// The database.
    pub async fn groups_ready(&self) -> Result<i64> {
        Ok(sqlx::query(
            "SELECT COUNT(*) FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE g.status = 'scheduled' AND c.status = 'open'",
        )
        .fetch_one(&self.pool)
        .await?
        .try_get(0)?)
    }

    /// Groups of open competitions leased to a worker and not yet done.
    ///
    /// # Errors
    /// The database.
    pub async fn groups_in_progress(&self) -> Result<i64> {
        Ok(sqlx::query(
            "SELECT COUNT(*) FROM match_groups g JOIN competitions c ON c.id = g.competition_id
             WHERE c.status = 'open' AND g.status = 'leased'",
        )
        .fetch_one(&self.pool)
        .await?
        .try_get(0)?)
    }

    /// Runs a `SELECT COUNT(*) ... WHERE ... = $1`.
    async fn count(&self, sql: &'static str, id: i64) -> Result<i64> {
        Ok(sqlx::query(sql)
            .bind(id)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?)
    }

    /// One stored record: its competition and JSON.
    ///
    /// # Errors
    /// The database.
    pub async fn record(&self, game_id: i64) -> Result<Option<(i64, String)>> {
        let row = sqlx::query("SELECT competition_id, record FROM games WHERE id = $1")
            .bind(game_id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
    }

    /// The key of a competition's newest game (0 with none): one probe of the
    /// index, where a count walks every game.
    ///
    /// # Errors
    /// The database.
    pub async fn newest_game(&self, competition_id: i64) -> Result<i64> {
        let newest: Option<i64> = sqlx::query("SELECT MAX(id) FROM games WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?;
        Ok(newest.unwrap_or(0))
    }

    /// Games stored for a competition.
    ///
    /// # Errors
    /// The database.
    pub async fn game_count(&self, competition_id: i64) -> Result<i64> {
        self.count(
            "SELECT COUNT(*) FROM games WHERE competition_id = $1",
            competition_id,
        )
        .await
    }

    /// Results of the games `ids`, in key order.
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results_by_id(&self, ids: &[i64]) -> Result<Vec<ResultRow>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT id, group_id, rotation, bots, ranks, termination FROM games WHERE id IN ({})",
                marks.join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for &id in chunk {
                q = q.bind(id);
            }
            for row in q.fetch_all(&self.pool).await? {
                out.push(Self::result_row(&row)?);
            }
        }
        out.sort_unstable_by_key(|r| r.id);
        Ok(out)
    }

    /// A page of a competition's results, newest first: at most `limit` with keys
    /// below `before` (keyset pagination: one index range, however deep the page).
    ///
    /// # Errors
    /// The database, or a corrupt row.
    pub async fn results_before(
        &self,
        competition_id: i64,
        before: i64,
        limit: i64,
    ) -> Result<Vec<ResultRow>> {
        let rows = sqlx::query(
            "SELECT id, group_id, rotation, bots, ranks, termination FROM games
             WHERE competition_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
        )
        .bind(competition_id)
        .bind(before)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::result_row).collect()
    }

    /// A bot's faults in a competition, by kind.
    ///
    /// # Errors
    /// The database.
    pub async fn fault_tally(&self, competition_id: i64, bot_id: i64) -> Result<Vec<FaultTally>> {
        let rows = sqlx::query(
            "SELECT kind, CAST(SUM(count) AS BIGINT), COUNT(*) FROM faults WHERE bot_id = $1 AND competition_id = $2
             GROUP BY kind ORDER BY kind",
        )
        .bind(bot_id)
        .bind(competition_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(FaultTally {
                    kind: r.try_get(0)?,
                    faults: r.try_get(1)?,
                    games: r.try_get(2)?,
                })
            })
            .collect()
    }

    /// A bot's newest faults in a competition, newest first.
    ///
    /// # Errors
    /// The database.
    pub async fn recent_faults(&self, competition_id: i64, bot_id: i64, limit: i64) -> Result<Vec<FaultRow>> {
        let rows = sqlx::query(
            "SELECT game_id, kind, count, detail, at_move FROM faults WHERE bot_id = $1 AND competition_id = $2
             ORDER BY id DESC LIMIT $3",
        )
        .bind(bot_id)
        .bind(competition_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(FaultRow {
                    game_id: r.try_get(0)?,
                    kind: r.try_get(1)?,
                    count: r.try_get(2)?,
                    detail: r.try_get(3)?,
                    at_move: r.try_get(4)?,
                })
            })
            .collect()
    }

    /// Keeps a fit's ratings as one point of each bot's history (a point another
    /// server on the same store kept already is left as it is).
    ///
    /// # Errors
    /// The database.
    pub async fn add_rating_points(&self, competition_id: i64, points: &[RatingPoint]) -> Result<()> {
        let mut tx = self.write_tx().await?;
        for chunk in points.chunks(100) {
            let sql = format!(
                "INSERT INTO rating_points (competition_id, bot_id, games, at_ms, elo, ci95) VALUES {}
                 ON CONFLICT (competition_id, bot_id, games) DO NOTHING",
                value_rows(chunk.len(), 6)
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for p in chunk {
                q = q
                    .bind(competition_id)
                    .bind(p.bot_id)
                    .bind(p.games)
                    .bind(p.at_ms)
                    .bind(p.elo)
                    .bind(p.ci95);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The newest kept point of a competition: `(games, at_ms)`, if any.
    ///
    /// # Errors
    /// The database.
    pub async fn last_rating_point(&self, competition_id: i64) -> Result<Option<(i64, i64)>> {
        let row = sqlx::query("SELECT MAX(games), MAX(at_ms) FROM rating_points WHERE competition_id = $1")
            .bind(competition_id)
            .fetch_one(&self.pool)
            .await?;
        let games: Option<i64> = row.try_get(0)?;
        let at: Option<i64> = row.try_get(1)?;
        Ok(games.zip(at))
    }

    /// A bot's rating history in a competition, oldest first.
    ///
    /// # Errors
    /// The database.
    pub async fn rating_history(&self, competition_id: i64, bot_id: i64) -> Result<Vec<RatingPoint>> {
        let rows = sqlx::query(
            "SELECT bot_id, games, at_ms, elo, ci95 FROM rating_points WHERE competition_id = $1 AND bot_id = $2
             ORDER BY games",
        )
        .bind(competition_id)
        .bind(bot_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(RatingPoint {
                    bot_id: r.try_get(0)?,
                    games: r.try_get(1)?,
                    at_ms: r.try_get(2)?,
                    elo: r.try_get(3)?,
                    ci95: r.try_get(4)?,
                })
            })
            .collect()
    }

    /// How busy a competition is now.
    ///
    /// # Errors
    /// The database.
    pub async fn activity(&self, competition_id: i64) -> Result<Activity> {
        let now = now_ms();
        let games_last_hour: i64 =
            sqlx::query("SELECT COUNT(*) FROM games WHERE competition_id = $1 AND recorded_ms >= $2")
                .bind(competition_id)
                .bind(now - 3_600_000)
                .fetch_one(&self.pool)
                .await?
                .try_get(0)?;
        // Through the partial indexes of leased and of scheduled groups: few rows.
        let row = sqlx::query(
            "SELECT COUNT(DISTINCT lease_worker), COUNT(*) FROM match_groups
             WHERE status = 'leased' AND lease_expires_ms > $2 AND competition_id = $1",
        )
        .bind(competition_id)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        let (workers_active, groups_playing): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        let groups_waiting: i64 = sqlx::query(
            "SELECT COUNT(*) FROM match_groups WHERE status = 'scheduled' AND competition_id = $1",
        )
        .bind(competition_id)
        .fetch_one(&self.pool)
        .await?
        .try_get(0)?;
        Ok(Activity {
            games_last_hour,
            workers_active,
            groups_waiting,
            groups_playing,
        })
    }

    /// Closes the pool (waits for connections to finish).
    pub async fn close(&self) {
        self.pool.close().await;
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
            let legacy = include_str!("../migrations/sqlite/0001_initial.sql").replace(" IF NOT EXISTS", "");
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
        let bots = store.bots().await.unwrap();
        assert_eq!(bots.len(), 1);
        assert_eq!(bots[0].name, "old");
        assert!(bots[0].env.is_empty(), "a bot from before environments has none");
        store
            .register_bot("new", "ur", "builtin:first", &[])
            .await
            .unwrap();
        assert_eq!(store.bots().await.unwrap().len(), 2);
        drop(store);
        let _ = std::fs::remove_file(&path);
    }
}
