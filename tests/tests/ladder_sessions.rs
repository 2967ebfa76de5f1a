//! The pages' sessions against a hostile visitor, on SQLite and (with
//! ASTRAGAL_PG_URL) PostgreSQL: a host session ends when the admin token
//! changes; the host ends sessions (`EndSessions`, `ladder admin
//! end-sessions`); sign-in is slowed after failures, per address and per
//! token (429 with `Retry-After`); an author keeps at most
//! `SESSIONS_PER_AUTHOR` live sessions, however many sign-ins arrive at once.
//! Before: a host cookie outlived a change of the admin token by up to 12
//! hours, 1,000 wrong tokens were tried in 1.3 s with no slowing, and one
//! author held 1,751 live sessions after 10 s of sign-ins.

use astragal_tests::{http_request, test_stores};
use ladder::app::throttle::SignInLimits;
use ladder::app::{self, UploadConfig};
use ladder::clock::{Clock, system_ms};
use ladder::store::{SESSIONS_PER_AUTHOR, Store};
use ladder::worker;
use proto::ladder::*;
use std::net::SocketAddr;
use std::time::Duration;
use tonic::Code;

const ADMIN: &str = "admin-token-sessions-one";
const ADMIN_2: &str = "admin-token-sessions-two";
const ALICE: &str = "author-token-alice-sessions";
const BOB: &str = "author-token-bob-sessions";

use astragal_tests::in_process::{InProcessServer as Server, config};

/// A server with its pages on `db` under `admin`, with authors alice and bob
/// (added if they are not there yet); sign-in lets 5 failures through, then one
/// an hour (so that no refill happens while a test runs).
async fn serve(db: &str, admin: &str) -> Server {
    serve_by(db, admin, Clock::system()).await
}

/// [`serve`], its time read from `clock` (a manual one: the test moves it past
/// a refill instead of waiting an hour).
async fn serve_by(db: &str, admin: &str, clock: Clock) -> Server {
    let store = Store::open(db).await.expect("store opens").with_clock(clock);
    for (name, token) in [("alice", ALICE), ("bob", BOB)] {
        if store.authors().author(name).await.unwrap().is_none() {
            store
                .authors()
                .add_author(name, &app::token_hash(token), 3)
                .await
                .unwrap();
        }
    }
    let uploads = UploadConfig {
        sign_in: SignInLimits {
            burst: 5,
            refill: Duration::from_secs(3600),
        },
        ..UploadConfig::default()
    };
    Server::start(store, config(admin, uploads), true).await
}

/// Posts the sign-in form with `token` from `from` (a loopback address of the
/// test's choosing: the server slows by address); the status, and the session
/// cookie (`name=value`) or the `Retry-After` seconds.
async fn sign_in_from(web: SocketAddr, from: &str, token: &str) -> (u16, Option<String>, Option<u64>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let mut s = socket.connect(web).await.expect("the server listens");
    let body = format!("token={token}");
    let head = format!(
        "POST /author/sign-in HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nOrigin: http://localhost\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw);
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let header = |name: &str| {
        text.lines()
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    let cookie = header("set-cookie").map(|v| v.split(';').next().unwrap().to_owned());
    let retry = header("retry-after").map(|v| v.parse().unwrap());
    (status, cookie, retry)
}

async fn sign_in(web: SocketAddr, token: &str) -> String {
    let (status, cookie, _) = sign_in_from(web, "127.0.0.1", token).await;
    assert_eq!(status, 303, "signing in");
    cookie.expect("a session cookie")
}

/// Whether `cookie` opens the author's pages (else they send to sign-in).
async fn signed_in(web: SocketAddr, cookie: &str) -> bool {
    let cookie = cookie.to_owned();
    let (status, _, _) =
        tokio::task::spawn_blocking(move || http_request(web, "GET", "/author", &[("Cookie", &cookie)], b""))
            .await
            .unwrap();
    match status {
        200 => true,
        303 => false,
        other => panic!("GET /author: {other}"),
    }
}

/// A host cookie made before the admin token changed is refused after it, on
/// every page; the old token no longer signs in, the new one does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_session_ends_when_the_admin_token_changes() {
    for db in test_stores("sessions_token_change").await {
        let server = serve(&db.url, ADMIN).await;
        let host = sign_in(server.web, ADMIN).await;
        let alice = sign_in(server.web, ALICE).await;
        assert!(signed_in(server.web, &host).await && signed_in(server.web, &alice).await);
        server.stop().await;

        // The host changes the token and starts the server again.
        let server = serve(&db.url, ADMIN_2).await;
        assert!(
            !signed_in(server.web, &host).await,
            "{}: the old host cookie still opens the pages",
            db.kind
        );
        let web = server.web;
        let old = host.clone();
        let (status, _, _) = tokio::task::spawn_blocking(move || {
            http_request(web, "GET", "/author/api/games/1", &[("Cookie", &old)], b"")
        })
        .await
        .unwrap();
        assert_ne!(status, 200, "{}: the old host cookie reads logs", db.kind);
        assert!(
            signed_in(server.web, &alice).await,
            "an author's session does not hang on the admin token"
        );
        let (status, cookie, _) = sign_in_from(server.web, "127.0.0.1", ADMIN).await;
        assert_eq!((status, cookie), (401, None), "the old token signs in");
        let host = sign_in(server.web, ADMIN_2).await;
        assert!(signed_in(server.web, &host).await);
        server.stop().await;
    }
}

/// The host ends one author's sessions, then every session there is; an
/// author's token cannot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_ends_one_authors_sessions_or_all_of_them() {
    for db in test_stores("sessions_end").await {
        let server = serve(&db.url, ADMIN).await;
        let web = server.web;
        let alices = [sign_in(web, ALICE).await, sign_in(web, ALICE).await];
        let bob = sign_in(web, BOB).await;
        let host = sign_in(web, ADMIN).await;
        let mut admin = worker::connect(&server.url, ADMIN, None).await.unwrap();
        let mut as_alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let refused = as_alice
            .end_sessions(EndSessionsRequest { author: "bob".into() })
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
        assert!(signed_in(web, &bob).await);
        let unknown = admin
            .end_sessions(EndSessionsRequest {
                author: "nobody".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(unknown.code(), Code::NotFound);

        // One author's, by the command the host types.
        let url = server.url.clone();
        let said = tokio::task::spawn_blocking(move || {
            astragal_tests::ladder_admin(&url, ADMIN, &["end-sessions", "--author", "alice"])
        })
        .await
        .unwrap();
        assert_eq!(said.trim(), "2 sessions of alice ended", "{}", db.kind);
        for c in &alices {
            assert!(!signed_in(web, c).await, "{}: alice's session lives on", db.kind);
        }
        assert!(signed_in(web, &bob).await && signed_in(web, &host).await);

        let ended = admin
            .end_sessions(EndSessionsRequest::default())
            .await
            .unwrap()
            .into_inner()
            .ended;
        assert_eq!(ended, 2, "{}: bob's and the host's", db.kind);
        assert!(!signed_in(web, &bob).await && !signed_in(web, &host).await);
        server.stop().await;
    }
}

/// 50 sign-ins with one token at once leave exactly `SESSIONS_PER_AUTHOR`
/// live sessions: the newest; every other cookie is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_sign_ins_at_once_leave_at_most_the_cap_live() {
    for db in test_stores("sessions_cap").await {
        let server = serve(&db.url, ADMIN).await;
        let web = server.web;
        let tasks: Vec<_> = (0..50).map(|_| tokio::spawn(sign_in(web, ALICE))).collect();
        let mut cookies = Vec::new();
        for t in tasks {
            cookies.push(t.await.unwrap());
        }
        let alice = server.store.authors().author("alice").await.unwrap().unwrap();
        let live = server
            .store
            .sessions()
            .live_sessions(Some(alice.id))
            .await
            .unwrap();
        let mut open = 0;
        for c in &cookies {
            open += usize::from(signed_in(web, c).await);
        }
        eprintln!(
            "{}: 50 sign-ins at once: {live} sessions live, {open} cookies open the pages",
            db.kind
        );
        assert_eq!(
            (live, open as i64),
            (SESSIONS_PER_AUTHOR, SESSIONS_PER_AUTHOR),
            "{}",
            db.kind
        );
        // The newest sign-in is always among them.
        let newest = sign_in(web, ALICE).await;
        assert!(signed_in(web, &newest).await);
        assert_eq!(
            server
                .store
                .sessions()
                .live_sessions(Some(alice.id))
                .await
                .unwrap(),
            SESSIONS_PER_AUTHOR
        );
        server.stop().await;
    }
}

/// 1,000 wrong tokens from one address: the first 5 are tried (401), every
/// other is answered 429 with a `Retry-After`, and so is the right token from
/// that address; another address signs in. One wrong token tried from five
/// addresses is then refused from a sixth, while another token is still tried
/// there. Once the ladder's clock has moved on by a refill, the slowed address
/// signs in again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_is_slowed_after_failures_per_address_and_per_token() {
    // The throttle lives in the server's memory, not the store: one store is enough.
    let db = test_stores("sessions_throttle").await.remove(0);
    let clock = Clock::manual(system_ms());
    let server = serve_by(&db.url, ADMIN, clock.clone()).await;
    let web = server.web;
    let (mut tried, mut slowed) = (0, 0);
    for k in 0..1000 {
        let (status, cookie, retry) = sign_in_from(web, "127.0.0.2", &format!("wrong-token-{k}")).await;
        assert!(cookie.is_none());
        match status {
            401 => tried += 1,
            429 => {
                slowed += 1;
                assert!(retry.is_some_and(|s| s > 0), "a 429 says when to retry");
            }
            other => panic!("wrong token {k}: {other}"),
        }
    }
    eprintln!("1,000 wrong tokens from one address: {tried} tried (401), {slowed} slowed (429)");
    assert_eq!((tried, slowed), (5, 995));
    let (status, _, retry) = sign_in_from(web, "127.0.0.2", ALICE).await;
    assert_eq!(status, 429, "the address is slowed for every token");
    assert!(retry.unwrap() <= 3600);
    assert_eq!(sign_in_from(web, "127.0.0.3", ALICE).await.0, 303);

    // One token, many addresses.
    for from in ["127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8"] {
        assert_eq!(sign_in_from(web, from, "a-leaked-old-token").await.0, 401);
    }
    assert_eq!(sign_in_from(web, "127.0.0.9", "a-leaked-old-token").await.0, 429);
    assert_eq!(sign_in_from(web, "127.0.0.9", "another-wrong-one").await.0, 401);

    // One refill later (the hour passes on the ladder's clock, not the test's).
    clock.advance(Duration::from_secs(3599));
    assert_eq!(
        sign_in_from(web, "127.0.0.2", ALICE).await.0,
        429,
        "not yet refilled"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        sign_in_from(web, "127.0.0.2", ALICE).await.0,
        303,
        "refilled: tried, and right"
    );
    server.stop().await;
}
