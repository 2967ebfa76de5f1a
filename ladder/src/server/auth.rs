//! Who is calling: the admin token, a worker's own token, or an author's (both
//! stored as their hash).

use super::service::{LadderService, status_of};
use crate::store::{AuthorRow, WorkerRow};
use std::collections::HashMap;
use std::time::Duration;
use tonic::{Request, Status};

/// Who is calling: the admin, a worker known by its own token, or an author.
#[derive(Debug, Clone)]
pub(super) enum Caller {
    Admin,
    Worker(WorkerRow),
    Author(AuthorRow),
}

/// How long a worker's token is trusted without reading the store again. A
/// token revoked through this server stops at once; through another server
/// sharing the database, within this long.
pub const TOKEN_CACHE: Duration = Duration::from_secs(2);

/// Workers and authors whose tokens were seen lately, by the token's hash.
#[derive(Default)]
pub(super) struct TokenCache {
    pub(super) by_hash: HashMap<String, (Caller, std::time::Instant)>,
    /// When entries older than [`TOKEN_CACHE`] were last dropped.
    pub(super) swept: Option<std::time::Instant>,
}

impl TokenCache {
    pub(super) fn get(&self, hash: &str) -> Option<&Caller> {
        self.by_hash
            .get(hash)
            .filter(|(_, at)| at.elapsed() < TOKEN_CACHE)
            .map(|(w, _)| w)
    }

    pub(super) fn insert(&mut self, hash: String, w: Caller) {
        let now = std::time::Instant::now();
        if self.swept.is_none_or(|t| now.duration_since(t) >= TOKEN_CACHE) {
            self.by_hash
                .retain(|_, (_, at)| now.duration_since(*at) < TOKEN_CACHE);
            self.swept = Some(now);
        }
        self.by_hash.insert(hash, (w, now));
    }

    /// About how many workers asked within the last [`TOKEN_CACHE`] or two.
    pub(super) fn workers(&self) -> usize {
        self.by_hash
            .values()
            .filter(|(c, _)| matches!(c, Caller::Worker(_)))
            .count()
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
        // are kept for TOKEN_CACHE, so a busy fleet's calls cost no query each;
        // a revocation on this server forgets them at once.
        let hash = token_hash(token);
        if let Ok(cache) = self.tokens.lock()
            && let Some(caller) = cache.get(&hash)
        {
            return Ok(caller.clone());
        }
        let caller = match self.store.worker_by_token_hash(&hash).await.map_err(status_of)? {
            Some(w) => Caller::Worker(w),
            None => match self.store.author_by_token_hash(&hash).await.map_err(status_of)? {
                Some(a) => Caller::Author(a),
                None => return Err(Status::unauthenticated("unknown or revoked token")),
            },
        };
        if let Ok(mut cache) = self.tokens.lock() {
            cache.insert(hash, caller.clone());
        }
        Ok(caller)
    }

    /// Forgets every known token: after a revocation.
    pub(super) fn forget_tokens(&self) {
        if let Ok(mut cache) = self.tokens.lock() {
            *cache = TokenCache::default();
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
    pub(super) async fn redactor(&self) -> Result<crate::web::redact::Redactor, Status> {
        Ok(crate::web::redact::Redactor::new(
            crate::web::redact::HostSecrets {
                admin_token: Some(self.cfg.admin_token.clone()),
                token_hashes: self.store.token_hashes().await.map_err(status_of)?,
            },
        ))
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
            let metadata = tonic::metadata::MetadataMap::from_headers(req.headers().clone());
            let probe = Request::from_parts(metadata, tonic::Extensions::default(), ());
            if let Err(status) = service.caller(&probe).await {
                return Ok(status.into_http());
            }
            inner.call(req).await
        })
    }
}
