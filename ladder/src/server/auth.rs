//! Who is calling: the admin token, a worker's own token, or an author's (both
//! stored as their hash).

use super::service::{LadderService, status_of};
use crate::store::{AuthorRow, WorkerRow};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tonic::{Request, Status};

/// Who is calling: the admin, a worker known by its own token, or an author.
#[derive(Debug, Clone)]
pub(super) enum Caller {
    Admin,
    Worker(WorkerRow),
    Author(AuthorRow),
}

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
#[derive(Default)]
pub(super) struct TokenCache {
    pub(super) by_hash: HashMap<String, (Caller, Instant)>,
    /// When entries past their time were last dropped.
    pub(super) swept: Option<Instant>,
    /// The store's revocation mark as last read, and when.
    pub(super) mark: Option<((i64, i64), Instant)>,
    /// When the cache was last emptied for a revocation: a token read before
    /// then may have been revoked since, so it is not kept.
    pub(super) emptied: Option<Instant>,
}

impl TokenCache {
    fn fresh(caller: &Caller, read: Instant, now: Instant) -> bool {
        let kept = match caller {
            Caller::Worker(_) => WORKER_TOKEN_KEPT,
            Caller::Admin | Caller::Author(_) => TOKEN_CACHE,
        };
        now.duration_since(read) < kept
    }

    pub(super) fn get(&self, hash: &str) -> Option<&Caller> {
        let now = Instant::now();
        self.by_hash
            .get(hash)
            .filter(|(c, read)| Self::fresh(c, *read, now))
            .map(|(c, _)| c)
    }

    /// Keeps `caller`, whose row was read starting at `read`, unless the cache
    /// was emptied since (the row may be stale by then).
    pub(super) fn insert(&mut self, hash: String, caller: Caller, read: Instant) {
        if self.emptied.is_some_and(|at| read < at) {
            return;
        }
        let now = Instant::now();
        if self.swept.is_none_or(|t| now.duration_since(t) >= TOKEN_CACHE) {
            self.by_hash.retain(|_, (c, read)| Self::fresh(c, *read, now));
            self.swept = Some(now);
        }
        self.by_hash.insert(hash, (caller, read));
    }

    /// Forgets every token: a token was revoked.
    pub(super) fn empty(&mut self) {
        self.by_hash.clear();
        self.emptied = Some(Instant::now());
    }

    /// Whether the revocation mark is due to be read again.
    fn mark_due(&self) -> bool {
        self.mark.is_none_or(|(_, at)| at.elapsed() >= TOKEN_CACHE)
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
pub fn new_token() -> Result<String, super::error::ServiceError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| super::error::ServiceError::Internal(format!("no random source: {e}")))?;
    Ok(hex::encode(bytes))
}

pub(super) fn bearer<T>(req: &Request<T>) -> Result<&str, Status> {
    let Some(value) = req.metadata().get("authorization") else {
        return Err(Status::unauthenticated(
            "missing authorization metadata: send `authorization: Bearer <token>`",
        ));
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| Status::unauthenticated("authorization is not `Bearer <token>`"))
}

/// Whether a given token is the expected one, in time that does not depend on
/// where they differ (an empty token never matches).
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    !a.is_empty() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl LadderService {
    /// Who sent `req`: the admin token, or a worker's or an author's token that
    /// is not revoked.
    pub(super) async fn caller<T>(&self, req: &Request<T>) -> Result<Caller, Status> {
        let token = bearer(req)?;
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
            && let Some(caller) = cache.get(&hash)
        {
            return Ok(caller.clone());
        }
        let read = Instant::now();
        let caller = match self.store.worker_by_token_hash(&hash).await.map_err(status_of)? {
            Some(w) => Caller::Worker(w),
            None => match self.store.author_by_token_hash(&hash).await.map_err(status_of)? {
                Some(a) => Caller::Author(a),
                None => return Err(Status::unauthenticated("unknown or revoked token")),
            },
        };
        if let Ok(mut cache) = self.tokens.lock() {
            cache.insert(hash, caller.clone(), read);
        }
        Ok(caller)
    }

    /// Reads the store's revocation mark when it is [`TOKEN_CACHE`] old (one
    /// call reads it; the others wait for it) and forgets every token when it
    /// moved: a worker was revoked through another server.
    async fn watch_revocations(&self) -> Result<(), Status> {
        let due = || self.tokens.lock().map_or(true, |c| c.mark_due());
        if !due() {
            return Ok(());
        }
        let _reading = self.mark_read.lock().await;
        if !due() {
            return Ok(());
        }
        let mark = self.store.revocation_mark().await.map_err(status_of)?;
        if let Ok(mut cache) = self.tokens.lock() {
            if cache.mark.is_some_and(|(was, _)| was != mark) {
                // Emptied after the mark was read: a row read from now on
                // sees the revocation the mark counted.
                cache.empty();
            }
            cache.mark = Some((mark, Instant::now()));
        }
        Ok(())
    }

    /// Forgets every known token: after a revocation.
    pub(super) fn forget_tokens(&self) {
        if let Ok(mut cache) = self.tokens.lock() {
            cache.empty();
        }
    }

    pub(super) async fn need_admin<T>(&self, req: &Request<T>) -> Result<(), Status> {
        match self.caller(req).await? {
            Caller::Admin => Ok(()),
            Caller::Worker(_) | Caller::Author(_) => {
                Err(Status::permission_denied("this call needs the admin token"))
            }
        }
    }

    pub(super) async fn need_worker<T>(&self, req: &Request<T>) -> Result<WorkerRow, Status> {
        match self.caller(req).await? {
            Caller::Worker(w) => Ok(w),
            Caller::Admin | Caller::Author(_) => Err(Status::permission_denied(
                "leases and reports need a worker's own token (ladder admin add-worker), so every group is someone's",
            )),
        }
    }

    /// The host's own readers: the admin and its workers, not authors (their
    /// token opens their own calls only; the public pages show what is public).
    pub(super) async fn need_host<T>(&self, req: &Request<T>) -> Result<(), Status> {
        match self.caller(req).await? {
            Caller::Admin | Caller::Worker(_) => Ok(()),
            Caller::Author(_) => Err(Status::permission_denied(
                "an author's token opens the author's own calls only (submit, my bots); \
                 the ladder's public pages show the standings and games",
            )),
        }
    }

    /// What hides the host's tokens wherever a bot may have written them.
    pub(super) async fn redactor(&self) -> Result<super::redact::Redactor, Status> {
        Ok(super::redact::Redactor::new(super::redact::HostSecrets {
            admin_token: Some(self.cfg.admin_token.clone()),
            token_hashes: self.store.token_hashes().await.map_err(status_of)?,
        }))
    }

    pub(super) async fn need_author<T>(&self, req: &Request<T>) -> Result<AuthorRow, Status> {
        match self.caller(req).await? {
            Caller::Author(a) => Ok(a),
            Caller::Admin | Caller::Worker(_) => Err(Status::permission_denied(
                "this call is an author's, with their own token (ladder admin add-author): \
                 every uploaded bot is someone's",
            )),
        }
    }
}

/// The gRPC service behind a token check that runs before a request's body is
/// read: every call needs a known token (the admin's, a worker's or an
/// author's), so a caller
/// without one is answered `UNAUTHENTICATED` from the headers alone, and its body
/// (up to the 16 MiB report limit) is never decoded. Each call still checks its
/// own role (admin or worker); known tokens are cached, so that costs nothing.
#[derive(Clone)]
pub struct RequireToken<S> {
    inner: S,
    service: std::sync::Arc<LadderService>,
}

impl<S> RequireToken<S> {
    /// `inner` behind the token check of `service`.
    pub fn new(inner: S, service: std::sync::Arc<LadderService>) -> RequireToken<S> {
        RequireToken { inner, service }
    }
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for RequireToken<S> {
    const NAME: &'static str = S::NAME;
}

type HttpRequest = tonic::codegen::http::Request<tonic::body::Body>;
type HttpResponse = tonic::codegen::http::Response<tonic::body::Body>;

impl<S> tonic::codegen::Service<HttpRequest> for RequireToken<S>
where
    S: tonic::codegen::Service<HttpRequest, Response = HttpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<HttpResponse, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: HttpRequest) -> Self::Future {
        // The clone that was polled ready serves this call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let service = self.service.clone();
        Box::pin(async move {
            let started = Instant::now();
            let rpc = crate::metrics::rpc_label(req.uri().path());
            let metadata = tonic::metadata::MetadataMap::from_headers(req.headers().clone());
            let probe = Request::from_parts(metadata, tonic::Extensions::default(), ());
            let answer = match service.caller(&probe).await {
                Err(status) => Ok(status.into_http()),
                Ok(_) => inner.call(req).await,
            };
            crate::metrics::ServerMetrics::time(&service.metrics.grpc_seconds, rpc, started.elapsed());
            answer
        })
    }
}
