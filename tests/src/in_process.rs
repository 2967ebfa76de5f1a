//! A `ladder` service run in the test's own process on loopback ports: the
//! gRPC port, and the pages' port if asked for. The one way the tests start an
//! in-process server ([`crate::LadderServer`] is the one way they start a real
//! `ladder serve`): a test changes the settings it is about in [`config`]'s and
//! passes them to [`InProcessServer::start`].

use ladder::app::{ServiceConfig, UploadConfig};
use ladder::serve::Transport;
use ladder::store::Store;
use proto::ladder::{LeaseGroupsRequest, LeaseReply, LeaseRequest};
use std::net::SocketAddr;
use std::time::Duration;

/// A running service; [`InProcessServer::stop`] ends it and waits.
pub struct InProcessServer {
    /// Its gRPC address, `http://127.0.0.1:PORT` (`https://localhost:PORT`
    /// with TLS, the name a test certificate gives).
    pub url: String,
    /// Its pages' address (`0.0.0.0:0` when it serves none).
    pub web: SocketAddr,
    /// The store it serves.
    pub store: Store,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

/// What `ladder serve` would run with by default, with this admin token, a
/// minute's leases and these upload settings.
pub fn config(admin: &str, uploads: UploadConfig) -> ServiceConfig {
    ServiceConfig {
        lease: Duration::from_secs(60),
        uploads,
        ..ServiceConfig::new(admin)
    }
}

impl InProcessServer {
    /// Serves `store` with `cfg`, and its pages if `pages`, over plain HTTP/2
    /// with the default bounds on connections.
    pub async fn start(store: Store, cfg: ServiceConfig, pages: bool) -> InProcessServer {
        Self::start_with(store, cfg, Transport::default(), pages).await
    }

    /// [`InProcessServer::start`], listening as `transport` says (TLS, the
    /// bounds on connections).
    pub async fn start_with(
        store: Store,
        cfg: ServiceConfig,
        transport: Transport,
        pages: bool,
    ) -> InProcessServer {
        let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = if transport.tls.is_some() {
            "https://localhost"
        } else {
            "http://127.0.0.1"
        };
        let url = format!("{origin}:{}", grpc.local_addr().unwrap().port());
        let http = if pages {
            Some(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        } else {
            None
        };
        let web = http
            .as_ref()
            .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |h| h.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let serving = store.clone();
        let task = tokio::spawn(async move {
            ladder::serve::run(grpc, http, transport, serving, cfg, async move {
                let _ = rx.await;
            })
            .await
            .expect("the server runs until stopped");
        });
        InProcessServer {
            url,
            web,
            store,
            stop: Some(tx),
            task,
        }
    }

    /// Stops it and waits for it to end.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap();
    }
}

/// Most times [`lease_ready`] and [`lease_groups_ready`] ask.
pub const LEASE_ASKS: usize = 100;

/// Leases a group as a worker does: asks again at once while the server answers
/// none with `retry_after_ms` (its scheduler had not looked within the lease's
/// wait, as on a loaded machine), at most [`LEASE_ASKS`] times, so a slow
/// scheduler is not taken for "no work". A lease that must come back empty
/// asks once.
///
/// # Panics
/// If a lease call fails.
pub async fn lease_ready(w: &mut ladder::worker::Client, ask: LeaseRequest) -> LeaseReply {
    for _ in 1..LEASE_ASKS {
        let r = w.lease(ask.clone()).await.expect("lease").into_inner();
        if r.has_work || r.retry_after_ms == 0 {
            return r;
        }
    }
    w.lease(ask).await.expect("lease").into_inner()
}

/// Up to `max` groups, asked for as [`lease_ready`] asks.
///
/// # Panics
/// If a lease call fails.
pub async fn lease_groups_ready(w: &mut ladder::worker::Client, max: u32) -> Vec<LeaseReply> {
    let ask = LeaseGroupsRequest {
        max_groups: max,
        ..Default::default()
    };
    for _ in 1..LEASE_ASKS {
        let r = w.lease_groups(ask.clone()).await.expect("lease").into_inner();
        if !r.groups.is_empty() || r.retry_after_ms == 0 {
            return r.groups;
        }
    }
    w.lease_groups(ask).await.expect("lease").into_inner().groups
}
