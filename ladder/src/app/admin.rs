//! The host's operations: workers, bots, authors and competitions. Each takes an
//! [`AdminCall`] (only [`LadderService::admin`] makes one) or, for the host's
//! readings, a [`HostCall`].

use super::error::ServiceError;
use super::service::{LadderService, valid_name};
use super::tokens::{AdminCall, HostCall, new_token, token_hash};
use super::views::{
    BotAsk, BotView, Collection, CompetitionAsk, CompetitionSummary, NewWorker, Voided, WorkerAudit,
};
use crate::store::{AuthorRow, BotId, BotStatus, CompetitionRow, GameId, NewCompetition};
use referee::TimeControl;
use referee::spec::BotSpec;
use std::collections::HashMap;

/// Longest bot spec the admin may register.
const MAX_SPEC_BYTES: usize = 4096;
/// Most environment variables a bot may be registered with.
const MAX_ENV_VARS: usize = 64;
/// Longest value of one of them.
const MAX_ENV_VALUE_BYTES: usize = 4096;
/// Most records one reading of a competition's games gives.
pub const RECORDS_PER_READ: u32 = 1000;

impl LadderService {
    /// Adds a worker; its token is shown this once.
    pub async fn add_worker(&self, _: &AdminCall, name: &str) -> Result<NewWorker, ServiceError> {
        valid_name("worker name", name)?;
        let token = new_token()?;
        self.store.workers().add_worker(name, &token_hash(&token)).await?;
        tracing::info!(worker = %name, "worker added");
        Ok(NewWorker {
            name: name.to_owned(),
            token,
        })
    }

    /// Revokes a worker's token: its calls stop at once here, and within
    /// [`super::TOKEN_CACHE`] on another server of the same store.
    pub async fn revoke_worker(&self, _: &AdminCall, name: &str) -> Result<WorkerAudit, ServiceError> {
        let w = self.store.workers().revoke_worker(name).await?;
        self.forget_tokens();
        tracing::info!(worker = %name, "worker revoked");
        let audit = self.worker_audits().await?.into_iter().find(|i| i.name == w.name);
        Ok(audit.unwrap_or(WorkerAudit {
            name: w.name,
            revoked: true,
            ..WorkerAudit::default()
        }))
    }

    /// Every worker with its audit.
    pub async fn list_workers(&self, _: &AdminCall) -> Result<Vec<WorkerAudit>, ServiceError> {
        self.worker_audits().await
    }

    /// Drops a worker's reported games: its groups are played again.
    pub async fn void_worker(&self, _: &AdminCall, name: &str) -> Result<Voided, ServiceError> {
        let (groups, games) = self.store.workers().void_worker(name).await?;
        self.forget_tokens();
        self.standings.forget_all();
        tracing::warn!(worker = %name, groups, games, "worker voided: its groups are played again");
        Ok(Voided { groups, games })
    }

    /// Registers a bot of the host's own (a built-in or a command line), and
    /// enters it in its game's open competitions.
    pub async fn register_bot(&self, _: &AdminCall, ask: &BotAsk) -> Result<BotView, ServiceError> {
        valid_name("bot name", &ask.name)?;
        engine::game_info(&ask.game).map_err(|e| ServiceError::InvalidArgument(e.to_string()))?;
        let (spec, env) = checked_spec(&ask.spec, &ask.env)?;
        if let Some(old) = self.store.bots().bot(&ask.name).await?
            && (old.game != ask.game || old.spec != spec || old.env != env)
        {
            return Err(ServiceError::AlreadyExists(format!(
                "bot {:?} is already registered ({} {:?}); to change its command, \
                 `ladder admin update {} SPEC` makes a new version",
                old.name, old.game, old.spec, old.name
            )));
        }
        let bot = self
            .store
            .bots()
            .register_bot(&ask.name, &ask.game, &spec, &env)
            .await?;
        self.enter_open_competitions(&bot).await?;
        tracing::info!(bot = %bot.name, game = %bot.game, "bot registered");
        self.bot_view(bot).await
    }

    /// A new version of a bot of the host's own, with another command line.
    pub async fn update_bot(&self, _: &AdminCall, ask: &BotAsk) -> Result<BotView, ServiceError> {
        let (spec, env) = checked_spec(&ask.spec, &ask.env)?;
        if let Some(old) = self.store.bots().bot(&ask.name).await?
            && !ask.game.is_empty()
            && ask.game != old.game
        {
            return Err(ServiceError::InvalidArgument(format!(
                "bot {:?} plays {}; a new version plays the same game (register a new bot for {})",
                old.name, old.game, ask.game
            )));
        }
        let bot = self.store.bots().update_bot(&ask.name, &spec, &env).await?;
        self.scheduler.forget().await;
        self.enter_open_competitions(&bot).await?;
        tracing::info!(bot = %bot.name, "bot updated");
        self.bot_view(bot).await
    }

    /// Every bot.
    pub async fn list_bots(&self, _: &AdminCall) -> Result<Vec<BotView>, ServiceError> {
        let all = self.store.bots().all().await?;
        let names: HashMap<BotId, String> = all.iter().map(|b| (b.id, b.name.clone())).collect();
        let authors = self.store.authors().author_names().await?;
        Ok(all
            .into_iter()
            .map(|b| BotView::of(b, &names, &authors))
            .collect())
    }

    /// Sets a bot active, disabled or removed, with the admin's reason; the
    /// challenges it was in are withdrawn when it leaves play.
    pub async fn set_bot_status(
        &self,
        _: &AdminCall,
        name: &str,
        status: BotStatus,
        reason: &str,
    ) -> Result<BotView, ServiceError> {
        match status {
            BotStatus::Active | BotStatus::Disabled | BotStatus::Removed => {}
            BotStatus::Building | BotStatus::BuildFailed | BotStatus::Rejected => {
                return Err(ServiceError::InvalidArgument(
                    "only a worker's build and check set an uploaded bot building, build-failed or rejected: \
                     set a bot active, disabled or removed"
                        .into(),
                ));
            }
            BotStatus::Suspended | BotStatus::Superseded => {
                return Err(ServiceError::InvalidArgument(
                    "only the server suspends a bot, and only an update supersedes one: \
                     set a bot active, disabled or removed"
                        .into(),
                ));
            }
        }
        let reason = match (status, reason.trim()) {
            (BotStatus::Active, _) => String::new(),
            (_, "") => format!("{status} by the admin"),
            (_, why) => format!("{status} by the admin: {}", referee::text::capped(why, 200)),
        };
        let (bot, withdrawn) = self.store.bots().set_bot_status(name, status, &reason).await?;
        if withdrawn > 0 {
            self.scheduler.forget().await;
        }
        tracing::info!(bot = %bot.name, status = %bot.status, withdrawn, "bot status set");
        self.bot_view(bot).await
    }

    /// Ends the web sessions of an author (`None`: of everyone). How many ended.
    pub async fn end_sessions(&self, _: &AdminCall, author: Option<&str>) -> Result<u64, ServiceError> {
        let id = match author {
            None => None,
            Some(name) => Some(
                self.store
                    .authors()
                    .author(name)
                    .await?
                    .ok_or_else(|| ServiceError::NotFound(format!("no author named {name:?}")))?
                    .id,
            ),
        };
        let ended = self.store.sessions().end_sessions(id).await?;
        tracing::info!(author = author.unwrap_or(""), ended, "sessions ended");
        Ok(ended)
    }

    /// Revokes an author's token.
    pub async fn revoke_author(&self, _: &AdminCall, name: &str) -> Result<AuthorRow, ServiceError> {
        let author = self.store.authors().revoke_author(name).await?;
        self.forget_tokens();
        tracing::info!(author = %name, "author revoked");
        Ok(author)
    }

    /// Sets how many bots an author may have (1 to 10,000).
    pub async fn set_author_max_bots(
        &self,
        _: &AdminCall,
        name: &str,
        max_bots: u32,
    ) -> Result<AuthorRow, ServiceError> {
        if !(1..=10_000).contains(&max_bots) {
            return Err(ServiceError::InvalidArgument(format!(
                "max_bots {max_bots}: an author may have from 1 to 10000 bots"
            )));
        }
        let author = self
            .store
            .authors()
            .set_max_bots(name, i64::from(max_bots))
            .await?;
        self.forget_tokens();
        tracing::info!(author = %name, max_bots, "author's bot cap set");
        Ok(author)
    }

    /// Opens a competition, or a season when it has a deadline.
    pub async fn open_competition(
        &self,
        _: &AdminCall,
        ask: &CompetitionAsk,
    ) -> Result<CompetitionSummary, ServiceError> {
        let invalid = |e: String| ServiceError::InvalidArgument(e);
        valid_name("competition name", &ask.name)?;
        // No seats asked for: the game's own number (Cuatto's 4, not its smallest 2),
        // as `referee` plays it, or what its `players` option says.
        let game =
            engine::new_game(&ask.game, &ask.options, ask.seats, 0).map_err(|e| invalid(e.to_string()))?;
        let seats = game.seats();
        let time = match (&ask.clock, ask.move_time_ms) {
            (Some(tc), None) => TimeControl::parse_clock(tc),
            (Some(_), Some(_)) => return Err(invalid("give tc or movetime_ms, not both".into())),
            (None, None) => TimeControl::move_time(5000),
            (None, Some(ms)) => TimeControl::move_time(ms),
        }
        .map_err(invalid)?;
        let plan = ask.finals;
        if let Some(deadline) = ask.deadline_ms {
            if deadline <= self.store.now_ms() {
                return Err(invalid(format!(
                    "the deadline {} has passed",
                    crate::season::utc(deadline)
                )));
            }
            plan.check(seats as u32).map_err(|e| invalid(e.to_string()))?;
        } else if plan.top > 0 || plan.groups > 0 || plan.until_separated || plan.max_games > 0 {
            return Err(invalid(
                "finals need a deadline (a season): give deadline_ms".into(),
            ));
        }
        // A season's finals take the name `NAME-finals`: keep it free.
        let finals = crate::season::finals_name(&ask.name);
        if ask.deadline_ms.is_some() && self.store.competitions().competition(&finals).await?.is_some() {
            return Err(ServiceError::AlreadyExists(format!(
                "a competition named {finals:?} exists: a season's finals take that name; choose another"
            )));
        }
        if let Some(season) = ask.name.strip_suffix("-finals")
            && let Some(c) = self.store.competitions().competition(season).await?
            && self.store.seasons().season(c.id).await?.is_some()
        {
            return Err(ServiceError::AlreadyExists(format!(
                "{:?} is the name of season {season:?}'s finals; choose another",
                ask.name
            )));
        }
        let new = NewCompetition {
            name: ask.name.clone(),
            game: ask.game.clone(),
            options: game.options().to_vec(),
            seats: seats as i64,
            format: crate::store::CompetitionFormat::Ladder,
            // Unless the admin gave one: 64 bits no one knows, from which every
            // group's seed derives (`engine::group_seed`).
            seed: ask.seed.unwrap_or_else(referee::seed::os_seed) as i64,
            max_games: ask.max_games as i64,
            time,
            config: String::new(),
            seeding: if ask.independent_seeds {
                crate::store::Seeding::Independent
            } else {
                crate::store::Seeding::Mirrored
            },
        };
        let c = match ask.deadline_ms {
            Some(deadline) => self.store.seasons().open_season(&new, deadline, plan).await,
            None => self.store.competitions().open_competition(&new).await,
        }?;
        tracing::info!(competition = %c.name, game = %c.game, seeding = %c.seeding, season = ask.deadline_ms.is_some(), "competition opened");
        self.competition_summary(c).await
    }

    /// Closes a competition (not a season's: it closes itself).
    pub async fn close_competition(
        &self,
        _: &AdminCall,
        name: &str,
    ) -> Result<CompetitionSummary, ServiceError> {
        // A season closes itself, when its finals are played: closing its ladder or
        // finals by hand would strand it (and its seed unrevealed).
        if let Some(c) = self.store.competitions().competition(name).await?
            && (self.store.seasons().season(c.id).await?.is_some()
                || self.store.seasons().season_of_finals(c.id).await?.is_some())
        {
            return Err(ServiceError::FailedPrecondition(format!(
                "{name:?} belongs to a season, which closes itself once its finals are played"
            )));
        }
        self.store.competitions().set_status(name, false).await?;
        let c = self.competition_named(name).await?;
        self.competition_summary(c).await
    }

    /// Lets go of what the host's retention does not keep (or, `dry_run`,
    /// says what it would): private logs, spent versions' files (in the object
    /// store too), ended sessions.
    pub async fn collect_garbage(&self, _: &AdminCall, dry_run: bool) -> Result<Collection, ServiceError> {
        self.collect(dry_run).await
    }

    /// [`LadderService::collect_garbage`], for the server's own rounds.
    pub(super) async fn collect(&self, dry_run: bool) -> Result<Collection, ServiceError> {
        let keep = self.cfg.retention.as_of(self.store.now_ms());
        let collected = self.store.collect_garbage(&keep, dry_run).await?;
        if !dry_run && let Some(objects) = &self.cfg.uploads.objects {
            for sha in &collected.files_elsewhere {
                // The row is gone: a file left behind is only space, and a
                // later round cannot name it, so it is said.
                if let Err(e) = objects.delete(sha).await {
                    tracing::warn!("retention: {e}");
                }
            }
        }
        Ok(Collection {
            collected,
            keep_logs: self.cfg.retention.logs,
            keep_files: self.cfg.retention.files,
        })
    }

    /// Every competition.
    pub async fn list_competitions(&self, _: &HostCall) -> Result<Vec<CompetitionSummary>, ServiceError> {
        let mut out = Vec::new();
        for c in self.store.competitions().all().await? {
            out.push(self.competition_summary(c).await?);
        }
        Ok(out)
    }

    /// A competition's standings now.
    pub async fn competition_standings(
        &self,
        _: &HostCall,
        competition: &str,
    ) -> Result<(CompetitionRow, std::sync::Arc<rating::standings::Standings>), ServiceError> {
        let c = self.competition_named(competition).await?;
        let standings = self
            .standings
            .current(&c)
            .await
            .map_err(|e| ServiceError::Internal(format!("fitting the standings: {e}")))?;
        Ok((c, standings))
    }

    /// A competition's records after game `after`, at most `limit` (0: as many
    /// as one reading gives, [`RECORDS_PER_READ`]).
    pub async fn game_records(
        &self,
        _: &HostCall,
        competition: &str,
        after: GameId,
        limit: u32,
    ) -> Result<Vec<(GameId, String)>, ServiceError> {
        let c = self.competition_named(competition).await?;
        let limit = if limit == 0 {
            RECORDS_PER_READ
        } else {
            limit.min(RECORDS_PER_READ)
        };
        Ok(self.store.games().records(c.id, after, i64::from(limit)).await?)
    }
}

/// A spec and environment as the admin gave them, checked: it parses, a built-in
/// exists and takes its options, a command line splits, only a program has an
/// environment. Returns them as stored.
pub(super) fn checked_spec(
    text: &str,
    vars: &[(String, String)],
) -> Result<(String, Vec<(String, String)>), ServiceError> {
    let invalid = |e: String| ServiceError::InvalidArgument(e);
    if text.len() > MAX_SPEC_BYTES {
        return Err(invalid(format!(
            "the bot spec is {} bytes; at most {MAX_SPEC_BYTES}",
            text.len()
        )));
    }
    if text.contains('\0') || vars.iter().any(|(k, v)| k.contains('\0') || v.contains('\0')) {
        return Err(invalid(
            "a NUL byte in the spec or the environment (no program can be given one)".into(),
        ));
    }
    if vars.len() > MAX_ENV_VARS {
        return Err(invalid(format!(
            "{} environment variables; at most {MAX_ENV_VARS}",
            vars.len()
        )));
    }
    if let Some((k, v)) = vars.iter().find(|(_, v)| v.len() > MAX_ENV_VALUE_BYTES) {
        return Err(invalid(format!(
            "environment: {k} is {} bytes; at most {MAX_ENV_VALUE_BYTES}",
            v.len()
        )));
    }
    let spec = BotSpec::parse(text).map_err(|e| invalid(format!("the bot spec: {e}")))?;
    if spec == BotSpec::Human {
        return Err(invalid("a ladder bot cannot be `human`".into()));
    }
    spec.check().map_err(|e| invalid(format!("the bot spec: {e}")))?;
    let mut env: Vec<(String, String)> = Vec::with_capacity(vars.len());
    for (k, v) in vars {
        let pair = referee::sandbox::parse_env_pair(&format!("{k}={v}"))
            .map_err(|e| invalid(format!("environment: {e}")))?;
        if env.iter().any(|(k, _)| *k == pair.0) {
            return Err(invalid(format!("environment: {} is given twice", pair.0)));
        }
        env.push(pair);
    }
    // A program has an environment; a gRPC bot only its secret, which goes with
    // every call over TLS (never over plain grpc://).
    let grpcs = matches!(&spec, BotSpec::Grpc { url } if url.starts_with("grpcs://"));
    let secret_only = env.iter().all(|(k, _)| k == referee::session::BOT_SECRET_ENV);
    let may_have_env = matches!(spec, BotSpec::Process { .. }) || (grpcs && secret_only);
    if !env.is_empty() && !may_have_env {
        return Err(invalid(format!(
            "only a program has an environment, and a grpcs:// bot only its secret ({}): this bot is neither",
            referee::session::BOT_SECRET_ENV
        )));
    }
    Ok((spec.to_string(), env))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(key: &str, value: &str) -> (String, String) {
        (key.into(), value.into())
    }

    #[test]
    fn specs_and_environments_past_their_limits_are_refused_and_say_why() {
        let ok = checked_spec("./bot --x", &[var("A", "1"), var("B", "2")]).unwrap();
        assert_eq!(ok.1.len(), 2);
        let many: Vec<(String, String)> = (0..10_000).map(|i| var(&format!("V{i}"), "x")).collect();
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
            assert!(
                matches!(&e, ServiceError::InvalidArgument(m) if m.contains(says)),
                "{says}: {e}"
            );
        }
    }
}
