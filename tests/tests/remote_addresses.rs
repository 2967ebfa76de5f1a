//! An author's self-served bot (`runtime = "remote"`) names the address a worker
//! dials, and the worker is not sandboxed: so a worker resolves the name once,
//! refuses loopback, private, link-local and the machine's own addresses (unless
//! the host allows a range: `ladder worker --remote-allow`), connects to the
//! address it checked, and tells the author "could not connect" and nothing more,
//! so the check report cannot be used to scan the host's network. Through the
//! real programs: `ladder serve`, `ladder submit`, `ladder worker`, `ladder author`.
//!
//! No packet is ever sent to the private address these tests name
//! (10.255.255.1): the refusal comes before any connection, which is what the
//! tests check.

use astragal_tests::{GrpcServer, LadderServer, ladder, ladder_admin, output_text as text};
use bots::grpc::BotService;
use proto::grpc::bot_server::BotServer;
use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const ADMIN_TOKEN: &str = "admin-secret-remote-addresses";
const SECRET: &str = "the-authors-own-secret-77";
/// What the author is told of any connection that did not happen.
const COULD_NOT_CONNECT: &str = "spawn: could not connect";

fn fresh_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("astragal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn admin(url: &str, args: &[&str]) -> String {
    ladder_admin(url, ADMIN_TOKEN, args)
}

/// Opens a competition of two Ur games, 2 s a move.
fn open_two_games(url: &str, name: &str) {
    admin(
        url,
        &[
            "open",
            name,
            "--game",
            "ur",
            "--max-games",
            "2",
            "--movetime",
            "2000",
        ],
    );
}

/// A TLS bot server (a random bot that refuses calls without the secret) on
/// 127.0.0.1 and a free port, with `cert`: the server, its port, and how many
/// TCP connections it has accepted.
fn tls_bot(cert: &rcgen::CertifiedKey<rcgen::KeyPair>) -> (GrpcServer, u16, Arc<AtomicUsize>) {
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let identity = tonic::transport::Identity::from_pem(cert.cert.pem(), cert.signing_key.serialize_pem());
    let server = GrpcServer::start(move |listener| {
        let incoming =
            tokio_stream::StreamExt::map(tonic::transport::server::TcpIncoming::from(listener), move |c| {
                counter.fetch_add(1, Ordering::SeqCst);
                c
            });
        let make: bots::grpc::BotFactory = Arc::new(|| bots::builtin("random", &[]).unwrap());
        let check = |req: tonic::Request<()>| match req.metadata().get("authorization") {
            Some(v) if v.to_str().ok() == Some(format!("Bearer {SECRET}").as_str()) => Ok(req),
            _ => Err(tonic::Status::unauthenticated("not the ladder")),
        };
        tonic::transport::Server::builder()
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .unwrap()
            .add_service(BotServer::with_interceptor(
                BotService::new(make, "an author"),
                check,
            ))
            .serve_with_incoming(incoming)
    });
    let port = server.url.rsplit(':').next().unwrap().parse().unwrap();
    (server, port, accepted)
}

/// A host with a ladder, a worker's token, the `random` bot to meet, and an
/// author (alice) whose token is in a file.
struct Host {
    dir: PathBuf,
    server: LadderServer,
    worker_token: String,
    alice: PathBuf,
    ca: PathBuf,
}

impl Host {
    fn start(tag: &str, ca_pem: &str) -> Host {
        let dir = fresh_dir(tag);
        let db = dir.join("ladder.db");
        let server = LadderServer::start(db.to_str().unwrap(), ADMIN_TOKEN, &[]);
        let worker_token = admin(&server.url, &["add-worker", "w1"]).trim().to_owned();
        admin(&server.url, &["register-bot", "rnd", "ur", "builtin:random"]);
        let alice = dir.join("alice.token");
        std::fs::write(
            &alice,
            admin(&server.url, &["add-author", "alice", "--max-bots", "10"]),
        )
        .unwrap();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, ca_pem).unwrap();
        Host {
            dir,
            server,
            worker_token,
            alice,
            ca,
        }
    }

    /// Alice uploads a manifest naming `run` as where her bot `name` is served.
    fn submit_remote(&self, name: &str, run: &str) {
        let folder = self.dir.join(format!("upload-{name}-{}", run.len()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("astragal.toml"),
            format!(
                "name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"remote\"\nrun = \"{run}\"\nsecret = \"{SECRET}\"\n"
            ),
        )
        .unwrap();
        let o = self.author(&[
            "submit",
            "--server",
            &self.server.url,
            "--token-file",
            &self.alice.to_string_lossy(),
            &folder.to_string_lossy(),
        ]);
        assert!(o.status.success(), "{run}: {}", text(&o));
    }

    fn author(&self, args: &[&str]) -> Output {
        ladder(args, &[])
    }

    /// `ladder author log NAME`: the version's build log and check report.
    fn check_report(&self, name: &str) -> String {
        let o = self.author(&[
            "author",
            "--server",
            &self.server.url,
            "--token-file",
            &self.alice.to_string_lossy(),
            "log",
            name,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The status word of each of alice's versions, by name (`NAME`, `NAME@2`).
    fn statuses(&self) -> Vec<(String, String)> {
        let o = self.author(&[
            "author",
            "--server",
            &self.server.url,
            "--token-file",
            &self.alice.to_string_lossy(),
            "bots",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                let (name, rest) = l.split_once(" (")?;
                let (_, rest) = rest.split_once("): ")?;
                Some((name.to_owned(), rest.split([' ', '—']).next()?.to_owned()))
            })
            .collect()
    }

    fn status(&self, name: &str) -> String {
        let all = self.statuses();
        all.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no version {name} in {all:?}"))
            .1
            .clone()
    }

    /// Runs `ladder worker` (remote bots only, trusting the test's authority)
    /// until nothing is left to check or play; its output and how long it took.
    fn work(&self, allow: &[&str]) -> (Output, Duration) {
        let ca = self.ca.to_string_lossy();
        let mut args = vec![
            "worker",
            "--server",
            &self.server.url,
            "--exit-when-idle",
            "--runtimes",
            "remote",
            "--grpc-ca",
            &ca,
            // Remote bots and built-ins only: no process is started.
            "--sandbox",
            "none",
            "--allow-unsandboxed",
        ];
        for range in allow {
            args.extend(["--remote-allow", range]);
        }
        let start = Instant::now();
        let o = ladder(&args, &[("ASTRAGAL_WORKER_TOKEN", &self.worker_token)]);
        let took = start.elapsed();
        assert!(o.status.success(), "{}", text(&o));
        (o, took)
    }
}

/// The check report's failed handshake, as the author reads it: the words after
/// `FAIL handshake`, and the whole report for messages.
fn failed_handshake(report: &str) -> String {
    report
        .lines()
        .find_map(|l| l.strip_prefix("FAIL handshake"))
        .unwrap_or_else(|| panic!("no failed handshake in:\n{report}"))
        .trim()
        .to_owned()
}

/// Attack: an author points their remote bot at the worker's own loopback (by
/// address, by name, as an IPv4-mapped IPv6 address) where a real TLS bot server
/// listens, and at a private address. The worker refuses each before it
/// connects: the version is rejected by its check with "could not connect" and
/// nothing else, and the loopback server sees no connection at all. The host who
/// allows `127.0.0.0/8` gets the same upload checked and played.
#[test]
fn an_uploaded_remote_bot_is_never_dialled_at_loopback_or_a_private_address() {
    let cert =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let (mut bot, port, accepted) = tls_bot(&cert);
    let host = Host::start("remote-loopback", &cert.cert.pem());
    let targets = [
        ("loop", format!("grpcs://127.0.0.1:{port}")),
        ("named", format!("grpcs://localhost:{port}")),
        ("mapped", format!("grpcs://[::ffff:127.0.0.1]:{port}")),
        ("private", format!("grpcs://10.255.255.1:{port}")),
        // Spellings that do not parse as a host say no more than the rest
        // (before: "bad TLS setup for https://127.1:…: transport error").
        ("short", format!("grpcs://127.1:{port}")),
        ("scoped", format!("grpcs://[fe80::1%25lo]:{port}")),
    ];
    for (name, run) in &targets {
        host.submit_remote(name, run);
    }
    let (out, took) = host.work(&[]);
    let log = text(&out);
    for (name, run) in &targets {
        assert_eq!(host.status(name), "rejected", "{run}");
        let report = host.check_report(name);
        assert_eq!(failed_handshake(&report), COULD_NOT_CONNECT, "{run}:\n{report}");
        // Nothing of the address or of why: not the port, not a reason.
        for word in [
            &port.to_string()[..],
            "127.0.0.1",
            "10.255.255.1",
            "refused",
            "reach",
            "private",
            "loopback",
            "timed out",
            "transport",
        ] {
            let check = report.split("--- check report ---").nth(1).unwrap_or(&report);
            assert!(
                !check.contains(word),
                "{run}: the report says {word:?}:\n{report}"
            );
        }
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a worker connected to its own loopback for an author"
    );
    // Refused before connecting (the worker's log names the refusal, which
    // comes from the check of the resolved addresses: nothing is dialled when
    // none is left), not after a connection failed.
    for refused in [
        "10.255.255.1 is private (10.0.0.0/8)",
        "127.0.0.1 is loopback (127.0.0.0/8)",
    ] {
        assert!(
            log.contains(&format!("resolves only to refused addresses: {refused}")),
            "the worker's log does not say it refused {refused} (in {took:?}):\n{log}"
        );
    }

    // The host allows its own loopback: the same upload, a new version, is
    // checked and plays.
    host.submit_remote("loop", &targets[0].1);
    let (out, _) = host.work(&["127.0.0.0/8"]);
    assert_eq!(host.status("loop@2"), "active", "{}", text(&out));
    assert!(accepted.load(Ordering::SeqCst) > 0);
    open_two_games(&host.server.url, "allowed");
    let (out, _) = host.work(&["127.0.0.0/8"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt
        .block_on(ladder::store::Store::open(
            host.dir.join("ladder.db").to_str().unwrap(),
        ))
        .unwrap();
    for id in [1, 2] {
        let (_, json) = rt
            .block_on(store.games().record(ladder::store::GameId(id)))
            .unwrap()
            .unwrap_or_else(|| panic!("no game {id}: {}", text(&out)));
        let rec: referee::GameRecord = serde_json::from_str(&json).unwrap();
        let seat = rec
            .seats
            .iter()
            .position(|s| s.entrant.as_deref() == Some("loop@2"))
            .unwrap_or_else(|| panic!("{:?}", rec.seats));
        assert!(rec.faults.is_empty(), "{:?}", rec.faults);
        assert!(rec.moves.iter().any(|m| m.seat == seat && !m.fallback));
    }

    // Its server goes away: the next games' records, and the author's own log
    // of them, say the same words, and no more.
    bot.kill();
    open_two_games(&host.server.url, "gone");
    let (out, _) = host.work(&["127.0.0.0/8"]);
    for id in [3, 4] {
        let (_, json) = rt
            .block_on(store.games().record(ladder::store::GameId(id)))
            .unwrap()
            .unwrap_or_else(|| panic!("no game {id}: {}", text(&out)));
        let rec: referee::GameRecord = serde_json::from_str(&json).unwrap();
        let said: Vec<String> = rec
            .faults
            .iter()
            .map(|f| format!("{}: {}", f.kind, f.detail))
            .collect();
        assert_eq!(said, [COULD_NOT_CONNECT], "game {id}");
        let o = host.author(&[
            "author",
            "--server",
            &host.server.url,
            "--token-file",
            &host.alice.to_string_lossy(),
            "game",
            &id.to_string(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            if let Some(fault) = line.strip_prefix("fault: ") {
                assert_eq!(fault, COULD_NOT_CONNECT, "game {id}: {}", text(&o));
            }
        }
    }
}

/// At an address the host allows, every way a connection can fail reads the
/// same to the author: a closed port, a server whose certificate the worker does
/// not trust, a server that hangs up at once. So nothing tells one from another.
#[test]
fn an_uploaded_remote_bots_failed_connection_says_could_not_connect_and_no_more() {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let stranger = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let (_untrusted, untrusted_port, _) = tls_bot(&stranger);
    let closed_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let hangup = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hangup_port = hangup.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in hangup.incoming() {
            drop(c);
        }
    });
    let host = Host::start("remote-failures", &cert.cert.pem());
    let targets = [
        ("closed", format!("grpcs://127.0.0.1:{closed_port}")),
        ("untrusted", format!("grpcs://127.0.0.1:{untrusted_port}")),
        ("hangup", format!("grpcs://127.0.0.1:{hangup_port}")),
    ];
    for (name, run) in &targets {
        host.submit_remote(name, run);
    }
    let (out, _) = host.work(&["127.0.0.0/8"]);
    for (name, run) in &targets {
        assert_eq!(host.status(name), "rejected", "{run}: {}", text(&out));
        let report = host.check_report(name);
        assert_eq!(failed_handshake(&report), COULD_NOT_CONNECT, "{run}:\n{report}");
    }
    // The worker's own log says more, for its host.
    let log = text(&out);
    assert!(log.contains(&closed_port.to_string()), "{log}");
}

/// The parse errors a host sees name the flag, the value and what is wrong.
#[test]
fn a_bad_remote_allow_range_is_refused_naming_it() {
    for (range, says) in [
        ("10.0.0.0/33", "10.0.0.0/33"),
        ("10.0.0.1/8", "10.0.0.0/8"),
        ("ten/8", "ten"),
        ("10.0.0.0", "/"),
    ] {
        let o = ladder(
            &["worker", "--remote-allow", range],
            &[("ASTRAGAL_WORKER_TOKEN", "t")],
        );
        let said = text(&o);
        assert!(!o.status.success(), "{range}: {said}");
        assert!(
            said.contains("--remote-allow") && said.contains(says),
            "{range}: {said}"
        );
    }
}
