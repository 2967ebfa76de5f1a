//! Authors' calls: an upload received, checked off the executor and stored as
//! new versions; an author's own bots, and their status.

use super::error::ServiceError;
use super::service::{LadderService, valid_name};
use super::tokens::{new_token, token_hash};
use super::views::{BotLog, BotView, PrepLeased, PrepReport, PrepVerdict, Submitted};
use crate::store::{AuthorRow, BotId, BotRow, BotStatus, PrepResult, StatusBy, WorkerRow};
use crate::submission::{Submission, Tree};
use std::collections::HashMap;
use std::time::Duration;

/// How long an upload may wait for its turn to be checked.
pub const UPLOAD_QUEUE_WAIT: Duration = Duration::from_secs(30);
/// How long an upload may take to arrive, whole: a 64 MiB archive at 0.25 MiB/s.
pub const UPLOAD_TIME: Duration = Duration::from_secs(256);

impl LadderService {
    /// The store it serves.
    pub fn store(&self) -> &crate::store::Store {
        &self.store
    }

    /// The standings it keeps, shared with the pages.
    pub fn standings(&self) -> &std::sync::Arc<crate::app::cache::StandingsCache> {
        &self.standings
    }

    /// Its configuration.
    pub fn config(&self) -> &super::ServiceConfig {
        &self.cfg
    }

    /// Adds an author and makes their token.
    pub async fn add_author(
        &self,
        _: &super::tokens::AdminCall,
        name: &str,
        max_bots: u32,
    ) -> Result<(AuthorRow, String), ServiceError> {
        valid_name("author name", name)?;
        let max_bots = if max_bots == 0 {
            self.cfg.uploads.max_bots
        } else {
            max_bots
        };
        let token = new_token()?;
        let author = self
            .store
            .authors()
            .add_author(name, &token_hash(&token), i64::from(max_bots))
            .await?;
        tracing::info!(author = %name, max_bots, "author added");
        Ok((author, token))
    }

    /// Receives an upload (chunks of any size up to the packed limit), checks it
    /// and stores it. An author has at most
    /// [`super::UploadConfig::arriving_per_author`] uploads arriving at once
    /// (more are refused), each within [`UPLOAD_TIME`] and no slower than
    /// [`super::UploadConfig::floor`]; then it waits for one of
    /// [`super::UploadConfig::at_once`] turns to be checked.
    pub async fn submit<S, E>(&self, author: &AuthorRow, mut chunks: S) -> Result<Submitted, ServiceError>
    where
        S: futures_util::Stream<Item = Result<Vec<u8>, E>> + Unpin,
        E: std::fmt::Display,
    {
        let limits = self.cfg.uploads.limits;
        let bytes = {
            let _mine = Arriving::take(&self.arrivals, author, self.cfg.uploads.arriving_per_author)?;
            let _arriving = turn(&self.arriving, "receiving other uploads").await?;
            receive(&mut chunks, limits.packed_bytes, self.cfg.uploads.floor).await?
        };
        crate::metrics::ServerMetrics::count(&self.metrics.upload_bytes, "author", bytes.len() as u64);
        let _turn = turn(&self.uploads, "checking other uploads").await?;
        let runtimes = self.cfg.uploads.runtimes.clone();
        let submission = tokio::task::spawn_blocking(move || Submission::check(&bytes, &limits, &runtimes))
            .await
            .map_err(|e| ServiceError::Internal(format!("checking an upload: {e}")))?
            .map_err(|e| ServiceError::InvalidArgument(e.to_string()))?;
        if let Some(objects) = &self.cfg.uploads.objects {
            objects
                .put(&submission.artifact.sha256, &submission.artifact.bytes)
                .await
                .map_err(|e| ServiceError::Internal(e.to_string()))?;
        }
        let bots = self
            .store
            .authors()
            .submit(author, &submission, &self.cfg.uploads.quota())
            .await
            .map_err(|e| match ServiceError::from(e) {
                ServiceError::AlreadyExists(m) => ServiceError::FailedPrecondition(m),
                other => other,
            })?;
        tracing::info!(
            author = %author.name,
            bots = ?bots.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            sha256 = %submission.artifact.sha256,
            bytes = submission.artifact.bytes.len(),
            "upload stored"
        );
        Ok(Submitted {
            bots,
            source_sha256: submission.artifact.sha256,
        })
    }

    /// One of `author`'s own bots, by name (`NAME@VERSION` a version); anyone
    /// else's is refused as not theirs.
    async fn authors_bot(&self, author: &AuthorRow, name: &str) -> Result<BotRow, ServiceError> {
        self.store
            .bots()
            .bot(name)
            .await?
            .filter(|b| b.author_id == Some(author.id))
            .ok_or_else(|| ServiceError::PermissionDenied(format!("{name:?} is not one of your bots")))
    }

    /// Sets the status of one of the author's own bots: out of play, or back
    /// into play if the author or the server took it out (never the host).
    pub async fn set_my_bot_status(
        &self,
        author: &AuthorRow,
        name: &str,
        status: BotStatus,
    ) -> Result<BotRow, ServiceError> {
        let bot = self.authors_bot(author, name).await?;
        let allowed = match status {
            BotStatus::Disabled => matches!(bot.status, BotStatus::Active | BotStatus::Suspended),
            BotStatus::Active => {
                bot.status == BotStatus::Suspended
                    || (bot.status == BotStatus::Disabled && bot.status_by == StatusBy::Author)
            }
            _ => false,
        };
        if !allowed {
            return Err(ServiceError::FailedPrecondition(format!(
                "{name:?} is {}{}: {}",
                bot.status,
                if bot.status_reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", bot.status_reason)
                },
                match status {
                    BotStatus::Active if bot.status == BotStatus::Disabled =>
                        "the host took it out, and only the host puts it back",
                    BotStatus::Active => "only a disabled or suspended bot can be enabled",
                    _ => "only an active or suspended bot can be disabled",
                }
            )));
        }
        let reason = match status {
            BotStatus::Active => "",
            _ => "disabled by its author",
        };
        let (bot, withdrawn) = self
            .store
            .bots()
            .set_bot_status_by(name, status, reason, StatusBy::Author)
            .await?;
        if withdrawn > 0 {
            self.scheduler.forget().await;
        }
        tracing::info!(bot = %bot.name, status = %bot.status, author = %author.name, "bot status set by its author");
        Ok(bot)
    }
}

/// A challenge opened: its competition (of its own, unrated), the author's
/// bot and the one it plays.
#[derive(Debug, Clone)]
pub struct ChallengeOpened {
    /// The challenge's competition.
    pub competition: crate::store::CompetitionRow,
    /// The author's bot.
    pub bot: BotRow,
    /// The bot it plays.
    pub opponent: BotRow,
}

impl LadderService {
    /// Opens a challenge: `games` unrated games of `author`'s bot `bot` against
    /// `opponent`, in a competition of their own.
    pub async fn challenge(
        &self,
        author: &AuthorRow,
        bot: &str,
        opponent: &str,
        games: u32,
    ) -> Result<ChallengeOpened, ServiceError> {
        let mine = self.authors_bot(author, bot).await?;
        let other = self
            .store
            .bots()
            .bot(opponent)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no bot named {opponent:?}")))?;
        if mine.id == other.id || mine.game != other.game {
            return Err(ServiceError::InvalidArgument(format!(
                "a challenge is between two bots of one game: {} plays {}, {} plays {}",
                mine.name, mine.game, other.name, other.game
            )));
        }
        for b in [&mine, &other] {
            if b.status != BotStatus::Active {
                return Err(ServiceError::FailedPrecondition(format!(
                    "{} is {}: only active bots play challenges",
                    b.name, b.status
                )));
            }
        }
        let info = engine::game_info(&mine.game).map_err(|e| ServiceError::Internal(e.to_string()))?;
        let seats = *info.seats.start();
        if seats != 2 {
            return Err(ServiceError::InvalidArgument(format!(
                "{} is a game of {seats} or more seats; challenges are between two bots",
                mine.game
            )));
        }
        let games = if games == 0 { 2 } else { games };
        if games > super::CHALLENGE_GAMES_MAX {
            return Err(ServiceError::InvalidArgument(format!(
                "at most {} games in one challenge",
                super::CHALLENGE_GAMES_MAX
            )));
        }
        let games = i64::from(games.div_ceil(2) * 2);
        let game = engine::new_game::<&str>(&mine.game, &[], Some(2), 0)
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        let name = format!("challenge-{}-{}", self.store.now_ms(), &new_token()?[..8]);
        let c = self
            .store
            .challenges()
            .open_challenge(
                &crate::store::NewCompetition {
                    name,
                    game: mine.game.clone(),
                    options: game.options().to_vec(),
                    seats: 2,
                    format: crate::store::CompetitionFormat::Challenge,
                    seed: referee::seed::os_seed() as i64,
                    max_games: games,
                    time: referee::TimeControl::move_time(5000).map_err(ServiceError::Internal)?,
                    config: String::new(),
                    seeding: crate::store::Seeding::Mirrored,
                },
                author.id,
                mine.id,
                other.id,
                i64::from(self.cfg.uploads.challenge_games_per_day),
            )
            .await
            .map_err(|e| match ServiceError::from(e) {
                ServiceError::AlreadyExists(m) => ServiceError::FailedPrecondition(m),
                other => other,
            })?;
        self.scheduler.forget().await;
        tracing::info!(author = %author.name, bot = %mine.name, opponent = %other.name, games, competition = %c.name, "challenge opened");
        Ok(ChallengeOpened {
            competition: c,
            bot: mine,
            opponent: other,
        })
    }

    /// The author's own bots.
    pub async fn my_bots(&self, author: &AuthorRow) -> Result<Vec<BotView>, ServiceError> {
        let mine = self.store.authors().bots_of_author(author.id).await?;
        let names: HashMap<BotId, String> = mine.iter().map(|b| (b.id, b.name.clone())).collect();
        let authors = HashMap::from([(author.id, author.name.clone())]);
        Ok(mine
            .into_iter()
            .map(|b| BotView::of(b, &names, &authors))
            .collect())
    }

    /// One of the author's bots (`NAME` or `NAME@VERSION`) with its build log
    /// and check report.
    pub async fn my_bot_log(&self, author: &AuthorRow, name: &str) -> Result<BotLog, ServiceError> {
        let bot = self.authors_bot(author, name).await?;
        let logs = self.store.authors().bot_logs(bot.id).await?;
        Ok(BotLog {
            bot: self.bot_view(bot).await?,
            logs,
        })
    }

    /// A game's private logs, as `caller` may read them: the host all, an
    /// author their own bots' seats, a worker none.
    pub async fn game_logs(
        &self,
        caller: &super::tokens::Caller,
        game: crate::store::GameId,
    ) -> Result<Vec<super::logs::SeatLogView>, ServiceError> {
        use super::logs::{LogReader, readable_logs};
        use super::tokens::Caller;
        let reader = match caller {
            Caller::Admin => LogReader::Host,
            Caller::Author(a) => LogReader::Author(a.id),
            Caller::Worker(_) => {
                return Err(ServiceError::PermissionDenied(
                    "a game's private logs are its bots' authors' and the host's, never a worker's".into(),
                ));
            }
        };
        let redactor = self.redactor().await?;
        readable_logs(&self.store, reader, game, &redactor)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no game {game} with a bot of yours")))
    }

    /// `author`'s challenges, newest first, each with the ids of its games so far
    /// and, where it plays no more, why.
    pub async fn challenges(&self, author: &AuthorRow) -> Result<Vec<ChallengeView>, ServiceError> {
        let rows = self.store.challenges().challenges_of(author.id).await?;
        let mut ids: Vec<BotId> = rows.iter().flat_map(|r| [r.bot_id, r.opponent_id]).collect();
        ids.sort_unstable();
        let bots: HashMap<BotId, BotRow> = self
            .store
            .bots()
            .bots_by_id(&ids)
            .await?
            .into_iter()
            .map(|b| (b.id, b))
            .collect();
        let replaced: Vec<BotId> = bots
            .values()
            .filter(|b| b.status == BotStatus::Superseded)
            .map(|b| b.id)
            .collect();
        // The newest version of each replaced bot, following the chain.
        let mut next: HashMap<BotId, BotRow> = HashMap::new();
        let mut asked = replaced;
        while !asked.is_empty() {
            let found = self.store.bots().replacements(&asked).await?;
            asked = found.iter().map(|b| b.id).collect();
            for b in found {
                if let Some(prev) = b.previous_id {
                    next.insert(prev, b);
                }
            }
        }
        let newest = |id: BotId| {
            let mut at = next.get(&id)?;
            while let Some(later) = next.get(&at.id) {
                at = later;
            }
            Some(at.name.clone())
        };
        let competitions: HashMap<crate::store::CompetitionId, String> = self
            .store
            .competitions()
            .all()
            .await?
            .into_iter()
            .map(|c| (c.id, c.name))
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let game_ids: Vec<i64> = self
                .store
                .games()
                .recent(r.competition_id, r.games)
                .await?
                .iter()
                .map(|g| g.id)
                .collect();
            let name = |id: BotId| bots.get(&id).map(|b| b.name.clone()).unwrap_or_default();
            let withdrawn = if (game_ids.len() as i64) < r.games {
                [r.bot_id, r.opponent_id].into_iter().find_map(|id| {
                    let b = bots.get(&id)?;
                    match b.status {
                        BotStatus::Active => None,
                        BotStatus::Superseded => Some(match newest(id) {
                            Some(by) => format!("withdrawn: {} was replaced by {by}", b.name),
                            None => format!("withdrawn: {} was replaced", b.name),
                        }),
                        other => Some(format!("withdrawn: {} is {other}", b.name)),
                    }
                })
            } else {
                None
            };
            out.push(ChallengeView {
                competition: competitions.get(&r.competition_id).cloned().unwrap_or_default(),
                bot: name(r.bot_id),
                opponent: name(r.opponent_id),
                game_ids,
                withdrawn,
                row: r,
            });
        }
        Ok(out)
    }
}

/// A challenge as its author sees it.
#[derive(Debug, Clone)]
pub struct ChallengeView {
    /// As kept.
    pub row: crate::store::ChallengeRow,
    /// Its competition's name.
    pub competition: String,
    /// The author's bot, and the bot it meets, by name.
    pub bot: String,
    pub opponent: String,
    /// Its games so far.
    pub game_ids: Vec<i64>,
    /// Why it plays no more games, if it has not played them all: a bot of it
    /// replaced by a new version, disabled, suspended or removed.
    pub withdrawn: Option<String>,
}

/// One of `turns`, waited for at most [`UPLOAD_QUEUE_WAIT`]; `busy` says what
/// the server is doing meanwhile.
async fn turn<'a>(
    turns: &'a tokio::sync::Semaphore,
    busy: &str,
) -> Result<tokio::sync::SemaphorePermit<'a>, ServiceError> {
    tokio::time::timeout(UPLOAD_QUEUE_WAIT, turns.acquire())
        .await
        .map_err(|_| ServiceError::Unavailable(format!("the server is {busy}: try again in a minute")))?
        .map_err(|_| ServiceError::Unavailable("the server is shutting down".into()))
}

/// One of an author's uploads arriving, counted until dropped.
struct Arriving<'a> {
    arrivals: &'a std::sync::Mutex<HashMap<crate::store::AuthorId, usize>>,
    author: crate::store::AuthorId,
}

impl<'a> Arriving<'a> {
    /// Counts one more of `author`'s uploads arriving, or refuses it when they
    /// have `most` arriving already. Refused at once rather than queued: the
    /// uploads a client sends together share its connection, and one waiting
    /// unread would hold back the others' bytes.
    fn take(
        arrivals: &'a std::sync::Mutex<HashMap<crate::store::AuthorId, usize>>,
        author: &AuthorRow,
        most: usize,
    ) -> Result<Arriving<'a>, ServiceError> {
        let mut now = arrivals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mine = now.entry(author.id).or_default();
        if *mine >= most.max(1) {
            return Err(ServiceError::FailedPrecondition(format!(
                "you have {mine} uploads arriving already: send the next when one has arrived"
            )));
        }
        *mine += 1;
        Ok(Arriving {
            arrivals,
            author: author.id,
        })
    }
}

impl Drop for Arriving<'_> {
    fn drop(&mut self) {
        let mut now = self
            .arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(mine) = now.get_mut(&self.author) {
            *mine -= 1;
            if *mine == 0 {
                now.remove(&self.author);
            }
        }
    }
}

/// An upload's chunks, whole, refused past `limit` bytes, past [`UPLOAD_TIME`],
/// or once it falls more than `floor.grace` behind `floor.bytes_per_s`.
async fn receive<S, E>(chunks: &mut S, limit: u64, floor: super::UploadFloor) -> Result<Vec<u8>, ServiceError>
where
    S: futures_util::Stream<Item = Result<Vec<u8>, E>> + Unpin,
    E: std::fmt::Display,
{
    use futures_util::StreamExt;
    let start = tokio::time::Instant::now();
    let give_up = start + UPLOAD_TIME;
    let mut bytes = Vec::new();
    loop {
        // The moment this upload falls `grace` behind the floor, with what it has.
        let due = start
            + floor.grace
            + Duration::from_secs_f64(bytes.len() as f64 / floor.bytes_per_s.max(1) as f64);
        let chunk = match tokio::time::timeout_at(due.min(give_up), chunks.next()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(bytes),
            Err(_) if due < give_up => {
                return Err(ServiceError::InvalidArgument(format!(
                    "the upload arrived slower than {} KiB/s (its {} bytes took {:.0} s): send it again on a faster connection",
                    floor.bytes_per_s / 1024,
                    bytes.len(),
                    start.elapsed().as_secs_f64()
                )));
            }
            Err(_) => {
                return Err(ServiceError::InvalidArgument(format!(
                    "the upload took longer than {} s to arrive",
                    UPLOAD_TIME.as_secs()
                )));
            }
        };
        let chunk = chunk.map_err(|s| ServiceError::InvalidArgument(format!("the upload broke off: {s}")))?;
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(ServiceError::InvalidArgument(format!(
                "the archive is more than {limit} bytes; this ladder takes at most {limit} bytes packed"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// The longest build log or check report kept, in bytes (the tail of a log).
pub const PREP_TEXT_KEPT: usize = 64 * 1024;

/// How long a worker holds a version's check beyond its build.
const CHECK_TIME: Duration = Duration::from_secs(300);

impl LadderService {
    /// Leases a version to build and check to `worker`, of one of `runtimes`.
    pub async fn lease_prep(
        &self,
        worker: &WorkerRow,
        runtimes: &[String],
    ) -> Result<Option<PrepLeased>, ServiceError> {
        let runtimes: Vec<String> = runtimes
            .iter()
            .filter(|r| self.cfg.uploads.runtimes.contains(r))
            .take(64)
            .cloned()
            .collect();
        let lease = new_token()?;
        // Renewed while it runs, so a worker that dies delays the version by
        // one period; never past the build's time limit and the check's.
        let period = self.cfg.lease;
        let life = Duration::from_secs(u64::from(self.cfg.uploads.build_seconds)) + CHECK_TIME + period;
        let Some(job) = self
            .store
            .preps()
            .lease_prep(
                worker.id,
                &runtimes,
                &lease,
                period.as_millis() as i64,
                life.as_millis() as i64,
            )
            .await?
        else {
            return Ok(None);
        };
        tracing::info!(bot = %job.name, worker = %worker.name, "build and check leased");
        {
            let mut leased = self
                .builds_leased
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Leases that ran out leave theirs behind: kept bounded.
            if leased.len() >= 4096 {
                leased.clear();
            }
            leased.insert(job.id.0, std::time::Instant::now());
        }
        Ok(Some(PrepLeased {
            bot_id: job.id,
            bot: job.name,
            game: job.game,
            runtime: job.runtime,
            run: job.spec,
            build: job.manifest.build.clone().unwrap_or_default(),
            secret: job.manifest.secret.clone().unwrap_or_default(),
            source_sha256: job.source_sha256,
            lease,
            period: period.min(life),
            build_seconds: self.cfg.uploads.build_seconds,
            check_games: self.cfg.uploads.check_games,
        }))
    }

    /// Renews `worker`'s lease of a build and check; how long it now lasts.
    pub async fn renew_prep(
        &self,
        worker: &WorkerRow,
        bot: BotId,
        lease: &str,
    ) -> Result<Duration, ServiceError> {
        let now = self.store.now_ms();
        let until = self
            .store
            .preps()
            .renew_prep(
                worker.id,
                bot,
                lease,
                now,
                now + self.cfg.lease.as_millis() as i64,
            )
            .await?
            .ok_or_else(|| {
                ServiceError::FailedPrecondition(
                    "this build's lease ran out or the version was replaced: another worker builds it".into(),
                )
            })?;
        Ok(Duration::from_millis(until.saturating_sub(now).max(0) as u64))
    }

    /// Counts a build and check that ended as `outcome`, with its duration if
    /// this server leased it.
    fn build_ended(&self, bot: BotId, outcome: &'static str) {
        crate::metrics::ServerMetrics::count(&self.metrics.builds, outcome, 1);
        let leased = self
            .builds_leased
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&bot.0);
        if let Some(at) = leased {
            self.metrics.build_seconds.observe(at.elapsed().as_secs_f64());
        }
    }

    /// Takes back `worker`'s lease of a build and check it will not finish.
    pub async fn return_prep(
        &self,
        worker: &WorkerRow,
        bot: BotId,
        lease: &str,
    ) -> Result<bool, ServiceError> {
        let returned = self.store.preps().return_prep(worker.id, bot, lease).await?;
        if returned {
            self.build_ended(bot, "returned");
            tracing::info!(bot = %bot, worker = %worker.name, "build and check given back");
        }
        Ok(returned)
    }

    /// Records how a build and check went; a version that passed enters its
    /// game's open competitions, and the versions it replaces leave them.
    pub async fn report_prep(&self, worker: &WorkerRow, r: &PrepReport) -> Result<BotRow, ServiceError> {
        let kept = |text: &str| {
            let cut = text.len().saturating_sub(PREP_TEXT_KEPT);
            let cut = (cut..=text.len())
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(text.len());
            if cut > 0 {
                format!("[the first {cut} bytes are cut]\n{}", &text[cut..])
            } else {
                text.to_owned()
            }
        };
        let artifact = |sha: &str| -> Result<String, ServiceError> {
            if sha.len() == 64
                && sha
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            {
                Ok(sha.to_owned())
            } else {
                Err(ServiceError::InvalidArgument(format!(
                    "{sha:?} is not a SHA-256 in lowercase hex"
                )))
            }
        };
        let result = match r.verdict {
            PrepVerdict::Passed => PrepResult::Passed {
                artifact: artifact(&r.artifact_sha256)?,
                build_log: kept(&r.build_log),
                report: kept(&r.check_report),
            },
            PrepVerdict::BuildFailed => PrepResult::BuildFailed {
                build_log: kept(&r.build_log),
            },
            PrepVerdict::WorkerTrouble => PrepResult::WorkerTrouble {
                reason: kept(&r.build_log),
            },
            PrepVerdict::Rejected => PrepResult::Rejected {
                artifact: (!r.artifact_sha256.is_empty())
                    .then(|| artifact(&r.artifact_sha256))
                    .transpose()?,
                build_log: kept(&r.build_log),
                report: kept(&r.check_report),
            },
        };
        let done = self
            .store
            .preps()
            .finish_prep(worker.id, r.bot_id, &r.lease, &result)
            .await
            .map_err(|e| match ServiceError::from(e) {
                ServiceError::AlreadyExists(m) => ServiceError::InvalidArgument(m),
                other => other,
            })?;
        let Some((bot, superseded)) = done else {
            return Err(ServiceError::FailedPrecondition(
                "this build's lease ran out or the version was replaced: another worker builds it".into(),
            ));
        };
        self.build_ended(
            r.bot_id,
            match r.verdict {
                PrepVerdict::Passed => "passed",
                PrepVerdict::BuildFailed => "build_failed",
                PrepVerdict::Rejected => "rejected",
                PrepVerdict::WorkerTrouble => "worker_trouble",
            },
        );
        self.enter_open_competitions(&bot).await?;
        if !superseded.is_empty() {
            self.scheduler.forget().await;
        }
        tracing::info!(bot = %bot.name, status = %bot.status, worker = %worker.name, "build and check reported");
        Ok(bot)
    }

    /// Takes a built folder from a worker: checked as an upload is (its limits,
    /// its paths and links), kept in its canonical form; its hash.
    pub async fn upload_artifact<S, E>(
        &self,
        _: &WorkerRow,
        mut chunks: S,
    ) -> Result<(String, u64), ServiceError>
    where
        S: futures_util::Stream<Item = Result<Vec<u8>, E>> + Unpin,
        E: std::fmt::Display,
    {
        let limits = self.cfg.uploads.limits;
        let _turn = turn(&self.artifact_uploads, "receiving other built folders").await?;
        let bytes = receive(&mut chunks, limits.packed_bytes, self.cfg.uploads.floor).await?;
        crate::metrics::ServerMetrics::count(&self.metrics.upload_bytes, "artifact", bytes.len() as u64);
        let artifact = tokio::task::spawn_blocking(move || Tree::read(&bytes, &limits).map(|t| t.pack()))
            .await
            .map_err(|e| ServiceError::Internal(format!("checking a built folder: {e}")))?
            .map_err(|e| ServiceError::InvalidArgument(format!("the built folder: {e}")))?;
        if let Some(objects) = &self.cfg.uploads.objects {
            objects
                .put(&artifact.sha256, &artifact.bytes)
                .await
                .map_err(|e| ServiceError::Internal(e.to_string()))?;
        }
        self.store.preps().store_artifact(&artifact).await?;
        Ok((artifact.sha256, artifact.bytes.len() as u64))
    }

    /// A version's built folder, for a worker to run it.
    pub async fn fetch_artifact(&self, _: &WorkerRow, sha: &str) -> Result<Vec<u8>, ServiceError> {
        match self.store.artifacts().artifact_row(sha).await? {
            None => Err(ServiceError::NotFound(format!("no artifact {sha:?}"))),
            Some(Some(bytes)) => Ok(bytes),
            Some(None) => match &self.cfg.uploads.objects {
                Some(objects) => objects
                    .get(sha)
                    .await
                    .map_err(|e| ServiceError::Internal(e.to_string())),
                None => Err(ServiceError::Internal(format!(
                    "artifact {sha} is kept in an object store this server was not given (--artifacts)"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Arriving;
    use crate::store::{AuthorId, AuthorRow};

    fn author(id: i64) -> AuthorRow {
        AuthorRow {
            id: AuthorId(id),
            name: format!("author{id}"),
            max_bots: 3,
            revoked_ms: None,
        }
    }

    /// An author has at most `most` uploads arriving: the next is refused at
    /// once, saying so, and taken again once one has arrived; another author
    /// is not held to the first's count.
    #[test]
    fn an_authors_third_upload_arriving_is_refused() {
        let arrivals = std::sync::Mutex::default();
        let (alice, bob) = (author(1), author(2));
        let first = Arriving::take(&arrivals, &alice, 2).unwrap();
        let _second = Arriving::take(&arrivals, &alice, 2).unwrap();
        let Err(third) = Arriving::take(&arrivals, &alice, 2) else {
            panic!("a third upload arriving was taken");
        };
        assert!(
            third.to_string().contains("2 uploads arriving already"),
            "{third}"
        );
        let _bobs = Arriving::take(&arrivals, &bob, 2).unwrap();
        drop(first);
        let _again = Arriving::take(&arrivals, &alice, 2).unwrap();
        assert!(Arriving::take(&arrivals, &alice, 2).is_err());
    }
}
