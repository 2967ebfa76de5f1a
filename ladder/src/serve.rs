//! The running ladder: the service (`crate::server`, with its gRPC front end)
//! and the pages (`crate::web`) wired together. The pages call the service;
//! the service knows nothing of them, so this is the one place that names both.

use crate::server::{Listeners, ServeError, ServiceConfig};
use crate::store::Store;
use std::future::Future;

/// Serves on `listeners` until `shutdown` completes: the gRPC API, and the pages
/// (public and authors') if an HTTP port is given. From `shutdown` on, `/readyz`
/// says "stopping", no connection is accepted, the calls and pages under way
/// are answered, and it returns.
///
/// # Errors
/// A server that fails.
pub async fn serve(
    listeners: Listeners,
    store: Store,
    cfg: ServiceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let admin_token = cfg.admin_token.clone();
    let pages_store = store.clone();
    let pages = move |service: &std::sync::Arc<crate::server::LadderService>,
                      standings: &std::sync::Arc<crate::server::cache::StandingsCache>| {
        crate::web::router(pages_store, standings.clone(), Some(&admin_token))
            .merge(crate::web::author::router(service.clone()))
    };
    crate::server::serve_with_pages(listeners, store, cfg, pages, shutdown).await
}

/// Serves the gRPC API on `grpc` and, if given, the web page on `http`, until
/// `shutdown` completes: [`serve`] without a port for the host's metrics.
///
/// # Errors
/// A server that fails.
pub async fn run(
    grpc: tokio::net::TcpListener,
    http: Option<tokio::net::TcpListener>,
    store: Store,
    cfg: ServiceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    serve(
        Listeners {
            grpc,
            http,
            ops: None,
        },
        store,
        cfg,
        shutdown,
    )
    .await
}
