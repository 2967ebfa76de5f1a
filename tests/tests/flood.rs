//! A flood of idle and half-sent connections on both of `ladder serve`'s ports
//! while a worker plays: the red team held 1,024 connections open (≥ 125 s each)
//! and gRPC calls timed out. Each port now takes a bounded number of connections
//! and closes one that stays silent. Its own test binary: it opens hundreds of
//! sockets.

use astragal_tests::in_process::{InProcessServer, config};
use ladder::app;
use ladder::conn::ConnLimits;
use ladder::serve::Transport;
use ladder::store::Store;
use ladder::worker::{self, WorkerConfig};
use proto::ladder::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const ADMIN: &str = "admin-token-1";
const WORKER: &str = "worker-token-1";

/// Small limits, so the flood fills them at once and silence ends soon.
const TIGHT: ConnLimits = ConnLimits {
    max: 16,
    first_bytes: Duration::from_millis(400),
    idle: Duration::from_millis(400),
    lifetime: Some(Duration::from_secs(5)),
};

/// Opens `n` connections to `addr`; every other one sends half a request head
/// and nothing more.
fn flood(addr: std::net::SocketAddr, n: usize) -> Vec<std::net::TcpStream> {
    (0..n)
        .filter_map(|i| {
            let mut s = std::net::TcpStream::connect(addr).ok()?;
            if i % 2 == 1 {
                let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n");
            }
            Some(s)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_connections_neither_stops_a_worker_nor_stays_open() {
    for store in astragal_tests::test_stores("flood").await {
        let kind = store.kind;
        let st = Store::open(&store.url).await.unwrap();
        st.workers()
            .add_worker("w1", &app::token_hash(WORKER))
            .await
            .unwrap();
        let tight = Transport {
            grpc_connections: TIGHT,
            web_connections: TIGHT,
            ..Default::default()
        };
        let server = InProcessServer::start_with(st, config(ADMIN, Default::default()), tight, true).await;
        let url = server.url.clone();
        let grpc_addr: std::net::SocketAddr = url.trim_start_matches("http://").parse().unwrap();
        let web_addr = server.web;
        let mut a = worker::connect(&url, ADMIN, None).await.unwrap();
        for (name, spec) in [("rnd", "builtin:random"), ("first", "builtin:first")] {
            a.register_bot(RegisterBotRequest {
                name: name.into(),
                game: "ur".into(),
                spec: spec.into(),
                env: vec![],
            })
            .await
            .unwrap();
        }
        a.open_competition(OpenCompetitionRequest {
            name: "flood".into(),
            game: "ur".into(),
            options: vec![],
            seats: 0,
            seed: Some(1),
            max_games: 40,
            movetime_ms: 2000,
            tc: String::new(),
            independent_seeds: false,
            ..Default::default()
        })
        .await
        .unwrap();
        // Four times each port's limit, silent or half-sent.
        let (flooded, started) = tokio::task::spawn_blocking(move || {
            let mut all = flood(grpc_addr, 4 * TIGHT.max);
            all.extend(flood(web_addr, 4 * TIGHT.max));
            (all, Instant::now())
        })
        .await
        .unwrap();
        // A worker plays the whole competition meanwhile.
        let played = worker::run(
            WorkerConfig {
                server: url.clone(),
                token: WORKER.into(),
                ca_pem: None,
                name: "w1".into(),
                concurrency: 1,
                batch: 4,
                max_groups: None,
                exit_when_idle: true,
                log_dir: None,
                sandbox: referee::sandbox::Sandbox::default(),
                progress: false,
                stop_within: Duration::ZERO,
                uploads: Default::default(),
            },
            std::future::pending(),
        )
        .await
        .unwrap();
        assert_eq!(played, 20, "{kind}: every group");
        // Every flooding connection is closed by the server: it reads the end (or a
        // reset), never waits for ever.
        let closed = tokio::task::spawn_blocking(move || {
            // One deadline for all: a failure takes seconds, not one wait each.
            let deadline = Instant::now() + Duration::from_secs(5);
            flooded
                .into_iter()
                .filter(|s| {
                    let mut s = s;
                    let left = deadline.saturating_duration_since(Instant::now());
                    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
                        .unwrap();
                    let mut buf = [0u8; 512];
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) => return true,
                            Ok(_) => {}
                            Err(e) => {
                                return e.kind() != std::io::ErrorKind::WouldBlock
                                    && e.kind() != std::io::ErrorKind::TimedOut;
                            }
                        }
                    }
                })
                .count()
        })
        .await
        .unwrap();
        assert_eq!(closed, 8 * TIGHT.max, "{kind}: flooding connections left open");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{kind}: {:?}",
            started.elapsed()
        );
        // The pages answer again.
        let (status, body) = tokio::task::spawn_blocking(move || astragal_tests::http_get(web_addr, "/"))
            .await
            .unwrap();
        assert_eq!(status, 200, "{kind}: {body}");
        server.stop().await;
    }
}
