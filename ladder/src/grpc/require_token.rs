//! Every call needs a known token, checked from its headers before its body is read.

use crate::app::LadderService;
use std::future::Future;
use std::time::Instant;
use tonic::Status;
use tonic::metadata::MetadataMap;

/// The bearer token of a call's `metadata`.
pub(super) fn bearer(metadata: &MetadataMap) -> Result<&str, Status> {
    let Some(value) = metadata.get("authorization") else {
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
            let metadata = MetadataMap::from_headers(req.headers().clone());
            let known = match bearer(&metadata) {
                Ok(token) => service.caller(token).await.map_err(super::status),
                Err(status) => Err(status),
            };
            let answer = match known {
                Err(status) => Ok(status.into_http()),
                Ok(_) => inner.call(req).await,
            };
            crate::metrics::ServerMetrics::time(&service.metrics.grpc_seconds, rpc, started.elapsed());
            answer
        })
    }
}
