//! What a caller's token says: who is calling (the admin token, a worker's own
//! token, or an author's, both stored as their hash), the proofs a check gives
//! ([`AdminCall`], [`HostCall`]), and a server's cache of the tokens it has
//! seen. The checks themselves are the service's ([`super::auth`]); this file
//! names no service, so the service can hold its cache without a circle.

use super::error::ServiceError;
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
/// only [`LadderService::admin`](super::LadderService::admin) makes one (its
/// field is the `app` module's), so no front end can reach an admin operation
/// without the check.
#[derive(Debug)]
pub struct AdminCall(pub(super) ());

/// That a call came from the host's own (the admin or one of its workers): the
/// host's readings take one, and only
/// [`LadderService::host`](super::LadderService::host) makes one.
#[derive(Debug)]
pub struct HostCall(pub(super) ());

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
    pub(super) fn mark_due(&self, now: i64) -> bool {
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
