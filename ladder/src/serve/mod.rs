//! The running ladder: the service (`crate::app`) behind its two front ends,
//! the gRPC API (`crate::grpc`) and the pages (`crate::web`), wired together
//! with the host's probes and metrics ([`ops`]). The front ends call the
//! service; it knows neither, so this is the one place that names them all.

pub mod ops;

use crate::conn;

use crate::app::cache::StandingsCache;
use crate::app::{LadderService, MAX_REPORT_BYTES, ServiceConfig};
use crate::store::Store;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Why the service stopped other than by its shutdown.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The gRPC server failed.
    #[error("the gRPC server: {0}")]
    Grpc(#[from] tonic::transport::Error),
    /// The web server failed.
    #[error("the web server: {0}")]
    Web(#[from] std::io::Error),
    /// The web server's task panicked.
    #[error("the web server's task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// The server's certificate chain and private key, in PEM: the gRPC port
/// serves TLS with them.
#[derive(Clone)]
pub struct Tls {
    /// The certificate chain.
    pub cert_pem: Vec<u8>,
    /// The private key.
    pub key_pem: Vec<u8>,
}

impl Tls {
    /// A certificate chain and its key, in PEM.
    pub fn from_pem(cert: impl AsRef<[u8]>, key: impl AsRef<[u8]>) -> Tls {
        Tls {
            cert_pem: cert.as_ref().to_vec(),
            key_pem: key.as_ref().to_vec(),
        }
    }
}

/// How the ports listen: the transport's own settings, apart from the
/// service's ([`ServiceConfig`] names no listener, certificate or socket).
#[derive(Clone)]
pub struct Transport {
    /// The gRPC port's certificate and key for TLS; plain HTTP/2 without.
    pub tls: Option<Tls>,
    /// How the gRPC port bounds its connections ([`conn::ConnLimits::GRPC`]).
    pub grpc_connections: conn::ConnLimits,
    /// How the web port bounds its connections ([`conn::ConnLimits::WEB`]).
    pub web_connections: conn::ConnLimits,
}

impl Default for Transport {
    /// Plain HTTP/2, the default limits.
    fn default() -> Transport {
        Transport {
            tls: None,
            grpc_connections: conn::ConnLimits::GRPC,
            web_connections: conn::ConnLimits::WEB,
        }
    }
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Transport")
            .field("tls", &self.tls.is_some())
            .field("grpc_connections", &self.grpc_connections)
            .field("web_connections", &self.web_connections)
            .finish()
    }
}

/// The ports a server listens on, and how.
pub struct Listeners {
    /// The gRPC API.
    pub grpc: tokio::net::TcpListener,
    /// The pages (and `/healthz`, `/readyz`), if any.
    pub http: Option<tokio::net::TcpListener>,
    /// `/metrics`, `/healthz` and `/readyz` for the host, if any.
    pub ops: Option<tokio::net::TcpListener>,
    /// TLS and the connections' bounds.
    pub transport: Transport,
}

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
    let pages = move |service: &Arc<LadderService>, standings: &Arc<StandingsCache>| {
        crate::web::router(pages_store, standings.clone(), Some(&admin_token))
            .merge(crate::web::author::router(service.clone()))
    };
    serve_with_pages(listeners, store, cfg, pages, shutdown).await
}

/// Serves the gRPC API on `grpc` and, if given, the web page on `http`, as
/// `transport` says, until `shutdown` completes: [`serve`] without a port for the host's metrics.
///
/// # Errors
/// A server that fails.
pub async fn run(
    grpc: tokio::net::TcpListener,
    http: Option<tokio::net::TcpListener>,
    transport: Transport,
    store: Store,
    cfg: ServiceConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    serve(
        Listeners {
            grpc,
            http,
            ops: None,
            transport,
        },
        store,
        cfg,
        shutdown,
    )
    .await
}

/// [`serve`] with the pages `pages` makes from the service they call.
///
/// # Errors
/// A server that fails.
pub async fn serve_with_pages(
    listeners: Listeners,
    store: Store,
    cfg: ServiceConfig,
    pages: impl FnOnce(&Arc<LadderService>, &Arc<StandingsCache>) -> axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let Listeners {
        grpc,
        http,
        ops,
        transport,
    } = listeners;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // Told at the start of the stop, for `/readyz`: a load balancer stops
    // sending before the ports close.
    let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
    let standings = Arc::new(StandingsCache::new(store.clone()));
    let Transport {
        tls,
        grpc_connections: grpc_limits,
        web_connections: web_limits,
    } = transport;
    let service = Arc::new(LadderService::new(store.clone(), cfg, standings.clone()));
    let probes = ops::Ops::new(service.clone(), stopping_rx);
    let ops_server = ops.map(|listener| {
        let app = ops::router(probes.clone());
        let mut rx = stop_rx.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.wait_for(|s| *s).await;
                })
                .await
        })
    });
    let web = http.map(|listener| {
        let app = pages(&service, &standings)
            .merge(ops::probes(probes.clone()))
            .layer(axum::middleware::from_fn_with_state(
                service.clone(),
                ops::time_pages,
            ));
        let mut rx = stop_rx.clone();
        tokio::spawn(async move {
            axum::serve(
                conn::Bounded::new(listener, web_limits),
                app.into_make_service_with_connect_info::<conn::Peer>(),
            )
            .with_graceful_shutdown(async move {
                let _ = rx.wait_for(|s| *s).await;
            })
            .await
        })
    });
    let incoming = conn::Bounded::new(grpc, grpc_limits).into_stream();
    // Pings keep a quiet worker's connection within the idle limit, and find dead
    // peers; a call that takes longer than any lease or report should is cut.
    let mut builder = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .max_concurrent_streams(Some(64))
        .timeout(Duration::from_secs(120));
    if let Some(tls) = tls {
        let identity = tonic::transport::Identity::from_pem(tls.cert_pem, tls.key_pem);
        builder = builder.tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))?;
    }
    let background = tokio::spawn(service.clone().run_background(stop_rx.clone()));
    // Once stopping, leases waiting their turn are answered at once.
    let stopping = service.clone();
    let shutdown = async move {
        shutdown.await;
        let _ = stopping_tx.send(true);
        tracing::info!("stopping: no new connections; answering the calls under way");
        stopping.stop_admitting();
    };
    let result = builder
        .add_service(crate::grpc::service(service, MAX_REPORT_BYTES))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    let _ = stop_tx.send(true);
    let _ = background.await;
    if let Some(web) = web {
        web.await??;
    }
    if let Some(ops) = ops_server {
        ops.await??;
    }
    Ok(result?)
}
