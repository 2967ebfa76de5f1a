//! A `ladder` service run in the test's own process on loopback ports: the
//! gRPC port, and the pages' port if asked for. The one way the tests start an
//! in-process server ([`crate::LadderServer`] is the one way they start a real
//! `ladder serve`): a test changes the settings it is about in [`config`]'s and
//! passes them to [`InProcessServer::start`].

use ladder::app::{ServiceConfig, UploadConfig};
use ladder::store::Store;
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
    /// Serves `store` with `cfg`, and its pages if `pages`.
    pub async fn start(store: Store, cfg: ServiceConfig, pages: bool) -> InProcessServer {
        let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = if cfg.tls.is_some() {
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
            ladder::serve::run(grpc, http, serving, cfg, async move {
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
