//! What the host's orchestrator and monitoring ask: `/healthz` (the process
//! answers), `/readyz` (its database answers, its schema is current, and it is
//! not stopping) and `/metrics` (Prometheus' text format). The first two are
//! also on the pages' port, for a load balancer; `/metrics` only on the port
//! the host names (`ladder serve --metrics ADDR`), never on the public pages.

use crate::app::LadderService;
use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;

/// What the probes and the metrics read.
#[derive(Clone)]
pub struct Ops {
    service: Arc<LadderService>,
    stopping: tokio::sync::watch::Receiver<bool>,
}

impl Ops {
    /// The probes of `service`, which say "not ready" once `stopping` is true.
    pub fn new(service: Arc<LadderService>, stopping: tokio::sync::watch::Receiver<bool>) -> Ops {
        Ops { service, stopping }
    }
}

/// `/healthz` and `/readyz`.
pub fn probes(ops: Ops) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(ops)
}

/// The probes and `/metrics`, for the host's own port.
pub fn router(ops: Ops) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(ops.clone())
        .merge(probes(ops))
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(ops): State<Ops>) -> Response {
    if *ops.stopping.borrow() {
        return (StatusCode::SERVICE_UNAVAILABLE, "stopping\n").into_response();
    }
    match ops.service.store().ready().await {
        Ok(()) => "ready\n".into_response(),
        Err(why) => {
            tracing::warn!("not ready: {why}");
            (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")).into_response()
        }
    }
}

async fn metrics(State(ops): State<Ops>) -> Response {
    let store = &ops.service.store();
    match store.queues(store.now_ms()).await {
        Ok(q) => {
            let pool = store.pool_stats();
            ops.service.metrics.sample(&q, pool.open, pool.idle, pool.max);
        }
        // The counters are still worth a scrape; the queues keep their last values.
        Err(e) => tracing::warn!("metrics: cannot read the queues: {e}"),
    }
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        ops.service.metrics.render(),
    )
        .into_response()
}

/// A layer's function: each page's latency, by its route's pattern (a path
/// no route matched counts as `unmatched`, whatever it was).
pub async fn time_pages(State(service): State<Arc<LadderService>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let started = std::time::Instant::now();
    let response = next.run(req).await;
    crate::metrics::ServerMetrics::time(&service.metrics.http_seconds, route, started.elapsed());
    response
}
