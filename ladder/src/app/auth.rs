//! The service's checks of who is calling, and its web sessions: a token read
//! (through the server's cache of tokens, [`super::tokens`]) into a
//! [`Caller`], and the proofs the admin's and the host's operations take.

use super::error::ServiceError;
use super::service::LadderService;
use super::tokens::{
    AdminCall, Caller, HostCall, OpenedSession, constant_time_eq, host_session_key, new_token, token_hash,
};
use crate::store::{AuthorRow, WorkerRow};

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
        let caller = match self.store.workers().worker_by_token_hash(&hash).await? {
            Some(w) => Caller::Worker(w),
            None => match self.store.authors().author_by_token_hash(&hash).await? {
                Some(a) => Caller::Author(a),
                None => return Err(ServiceError::Unauthenticated("unknown or revoked token".into())),
            },
        };
        if let Ok(mut cache) = self.tokens.lock() {
            cache.insert(hash, caller.clone(), read, self.store.now_ms());
        }
        Ok(caller)
    }

    /// Reads the store's revocation mark when it is [`super::TOKEN_CACHE`] old (one
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
        let mark = self.store.workers().revocation_mark().await?;
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
            token_hashes: self.store.workers().token_hashes().await?,
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
            match self
                .store
                .authors()
                .author_by_token_hash(&token_hash(token))
                .await?
            {
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
            .sessions()
            .open_session(&token_hash(&cookie), who, &csrf, expires)
            .await?;
        Ok(OpenedSession { cookie, csrf })
    }
}
