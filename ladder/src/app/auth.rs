//! Who is calling: the admin token, a worker's own token, or an author's (both
//! stored as their hash).

use super::error::ServiceError;
use super::service::LadderService;
use crate::store::{AuthorRow, WorkerRow};
use std::collections::HashMap;
use std::time::Duration;

/// Who is calling: the admin, a worker known by its own token, or an author.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The admin token.
    Admin,
    /// A worker's own token.
    Worker(WorkerRow),
    /// An author's token.
    Author(AuthorRow),
}

/// That a call came with the admin token: every admin operation takes one, and
/// only [`LadderService::admin`] makes one, so no front end can reach an admin
/// operation without the check.
#[derive(Debug)]
pub struct AdminCall(());

/// That a call came from the host's own (the admin or one of its workers): the
/// host's readings take one, and only [`LadderService::host`] makes one.
#[derive(Debug)]
pub struct HostCall(());

/// How stale a server's view of revoked tokens may be. A token revoked through
/// this server stops at once; through another server sharing the database,
/// within this long: each server reads the store's revocation mark this often
/// (one query for the whole server), and an author's token is read again after
/// this long.
pub const TOKEN_CACHE: Duration = Duration::from_secs(2);

/// How long a worker's token is trusted without reading its row again, while
/// the revocation mark stays the same. Workers ask every few seconds for hours,
/// so a read per call (as when every token was read again after two seconds)
/// was a query for most calls of a fleet of thousands.
pub const WORKER_TOKEN_KEPT: Duration = Duration::from_secs(600);

/// Workers and authors whose tokens were seen lately, by the token's hash.
/// Its times are the store's clock's (ms since the Unix epoch), so a test
/// moves them on with the clock instead of waiting.
#[derive(Default)]
pub(super) struct TokenCache {
    pub(super) by_hash: HashMap<String, (Caller, i64)>,
    /// When entries past their time were last dropped.
    pub(super) swept: Option<i64>,
    /// The store's revocation mark as last read, and when.
    pub(super) mark: Option<((i64, i64), i64)>,
    /// When the cache was last emptied for a revocation: a token read before
    /// then (or in the same millisecond) may have been revoked since, so it is
    /// not kept.
    pub(super) emptied: Option<i64>,
}

/// Whether `kept` has not passed between `then` and `now` (a clock that went
/// back counts as past: the entry is read again).
fn within(then: i64, now: i64, kept: Duration) -> bool {
    (0..kept.as_millis() as i64).contains(&(now - then))
}

impl TokenCache {
    fn fresh(caller: &Caller, read: i64, now: i64) -> bool {
        let kept = match caller {
            Caller::Worker(_) => WORKER_TOKEN_KEPT,
            Caller::Admin | Caller::Author(_) => TOKEN_CACHE,
        };
        within(read, now, kept)
    }

    pub(super) fn get(&self, hash: &str, now: i64) -> Option<&Caller> {
        self.by_hash
            .get(hash)
            .filter(|(c, read)| Self::fresh(c, *read, now))
            .map(|(c, _)| c)
    }

    /// Keeps `caller`, whose row was read starting at `read`, unless the cache
    /// was emptied since (the row may be stale by then).
    pub(super) fn insert(&mut self, hash: String, caller: Caller, read: i64, now: i64) {
        if self.emptied.is_some_and(|at| read <= at) {
            return;
        }
        if self.swept.is_none_or(|t| !within(t, now, TOKEN_CACHE)) {
            self.by_hash.retain(|_, (c, read)| Self::fresh(c, *read, now));
            self.swept = Some(now);
        }
        self.by_hash.insert(hash, (caller, read));
    }

    /// Forgets every token: a token was revoked.
    pub(super) fn empty(&mut self, now: i64) {
        self.by_hash.clear();
        self.emptied = Some(now);
    }

    /// Whether the revocation mark is due to be read again.
    fn mark_due(&self, now: i64) -> bool {
        self.mark.is_none_or(|(_, at)| !within(at, now, TOKEN_CACHE))
    }
}

/// The SHA-256 of a token, in hex: what the store keeps of a worker's token.
pub fn token_hash(token: &str) -> String {
    crate::store::token_hash(token)
}

/// A new worker token: 256 bits from the operating system's random source, in hex.
///
/// # Errors
/// The operating system has no random source to give.
pub fn new_token() -> Result<String, ServiceError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ServiceError::Internal(format!("no random source: {e}")))?;
    Ok(hex::encode(bytes))
}

/// Whether a given token is the expected one, in time that does not depend on
/// where they differ (an empty token never matches).
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    !a.is_empty() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl LadderService {
    /// Who holds `token`: the admin, or a worker or an author whose token is
    /// not revoked.
    pub async fn caller(&self, token: &str) -> Result<Caller, ServiceError> {
        if constant_time_eq(token, &self.cfg.admin_token) {
            return Ok(Caller::Admin);
        }
        // Looked up by its hash: the store never holds a token, and a lookup by
        // hash gives away nothing of a token's text through timing. Known tokens
        // are kept, so a busy fleet's calls cost no query each; a revocation on
        // this server forgets them at once, on another within TOKEN_CACHE.
        self.watch_revocations().await?;
        let hash = token_hash(token);
        if let Ok(cache) = self.tokens.lock()
            && let Some(caller) = cache.get(&hash, self.store.now_ms())
        {
            return Ok(caller.clone());
        }
        let read = self.store.now_ms();
        let caller = match self.store.worker_by_token_hash(&hash).await? {
            Some(w) => Caller::Worker(w),
            None => match self.store.author_by_token_hash(&hash).await? {
                Some(a) => Caller::Author(a),
                None => return Err(ServiceError::Unauthenticated("unknown or revoked token".into())),
            },
        };
        if let Ok(mut cache) = self.tokens.lock() {
            cache.insert(hash, caller.clone(), read, self.store.now_ms());
        }
        Ok(caller)
    }

    /// Reads the store's revocation mark when it is [`TOKEN_CACHE`] old (one
    /// call reads it; the others wait for it) and forgets every token when it
    /// moved: a worker was revoked through another server.
    async fn watch_revocations(&self) -> Result<(), ServiceError> {
        let due = || {
            self.tokens
                .lock()
                .map_or(true, |c| c.mark_due(self.store.now_ms()))
        };
        if !due() {
            return Ok(());
        }
        let _reading = self.mark_read.lock().await;
        if !due() {
            return Ok(());
        }
        let mark = self.store.revocation_mark().await?;
        if let Ok(mut cache) = self.tokens.lock() {
            if cache.mark.is_some_and(|(was, _)| was != mark) {
                // Emptied after the mark was read: a row read from now on
                // sees the revocation the mark counted.
                cache.empty(self.store.now_ms());
            }
            cache.mark = Some((mark, self.store.now_ms()));
        }
        Ok(())
    }

    /// Forgets every known token: after a revocation.
    pub(crate) fn forget_tokens(&self) {
        if let Ok(mut cache) = self.tokens.lock() {
            cache.empty(self.store.now_ms());
        }
    }

    /// That `token` is the admin's.
    pub async fn admin(&self, token: &str) -> Result<AdminCall, ServiceError> {
        match self.caller(token).await? {
            Caller::Admin => Ok(AdminCall(())),
            Caller::Worker(_) | Caller::Author(_) => Err(ServiceError::PermissionDenied(
                "this call needs the admin token".into(),
            )),
        }
    }

    /// The worker whose token `token` is.
    pub async fn worker(&self, token: &str) -> Result<WorkerRow, ServiceError> {
        match self.caller(token).await? {
            Caller::Worker(w) => Ok(w),
            Caller::Admin | Caller::Author(_) => Err(ServiceError::PermissionDenied(
                "leases and reports need a worker's own token (ladder admin add-worker), so every group is someone's"
                    .into(),
            )),
        }
    }

    /// That `token` is one of the host's own readers: the admin and its
    /// workers, not authors (their token opens their own calls only; the public
    /// pages show what is public).
    pub async fn host(&self, token: &str) -> Result<HostCall, ServiceError> {
        match self.caller(token).await? {
            Caller::Admin | Caller::Worker(_) => Ok(HostCall(())),
            Caller::Author(_) => Err(ServiceError::PermissionDenied(
                "an author's token opens the author's own calls only (submit, my bots); \
                 the ladder's public pages show the standings and games"
                    .into(),
            )),
        }
    }

    /// What hides the host's tokens wherever a bot may have written them.
    pub(crate) async fn redactor(&self) -> Result<super::redact::Redactor, ServiceError> {
        Ok(super::redact::Redactor::new(super::redact::HostSecrets {
            admin_token: Some(self.cfg.admin_token.clone()),
            token_hashes: self.store.token_hashes().await?,
        }))
    }

    /// The author whose token `token` is.
    pub async fn author(&self, token: &str) -> Result<AuthorRow, ServiceError> {
        match self.caller(token).await? {
            Caller::Author(a) => Ok(a),
            Caller::Admin | Caller::Worker(_) => Err(ServiceError::PermissionDenied(
                "this call is an author's, with their own token (ladder admin add-author): \
                 every uploaded bot is someone's"
                    .into(),
            )),
        }
    }
}

/// The key a host's web session is kept under: from the admin token, so a new
/// admin token ends the host's sessions.
pub fn host_session_key(admin_token: &str) -> String {
    token_hash(&format!("astragal host session\n{admin_token}"))
}

/// A web session just opened: its cookie and its form token, given this once.
#[derive(Debug)]
pub struct OpenedSession {
    /// The cookie's value (the store keeps its hash).
    pub cookie: String,
    /// The token its forms carry.
    pub csrf: String,
}

impl LadderService {
    /// Opens a web session for the holder of `token`, an author's (or the
    /// admin's, as the host), lasting `hours`; the author's oldest beyond
    /// [`crate::store::SESSIONS_PER_AUTHOR`] ends. A worker's token opens none.
    pub async fn sign_in(&self, token: &str, hours: i64) -> Result<OpenedSession, ServiceError> {
        let admin = &self.cfg.admin_token;
        let host_key = host_session_key(admin);
        let who = if !admin.is_empty() && constant_time_eq(token, admin) {
            crate::store::SessionOf::Host(&host_key)
        } else {
            match self.store.author_by_token_hash(&token_hash(token)).await? {
                Some(author) => crate::store::SessionOf::Author(author.id),
                None => {
                    return Err(ServiceError::Unauthenticated(
                        "no author has this token (or it was revoked)".into(),
                    ));
                }
            }
        };
        let cookie = new_token()?;
        let csrf = new_token()?;
        let expires = self.store.now_ms() + hours * 3_600_000;
        self.store
            .open_session(&token_hash(&cookie), who, &csrf, expires)
            .await?;
        Ok(OpenedSession { cookie, csrf })
    }
}
