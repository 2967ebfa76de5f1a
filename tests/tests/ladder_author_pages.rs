//! An author's own view, on SQLite and (with ASTRAGAL_PG_URL) PostgreSQL: each
//! seat's private log (the end of its stderr, its `info` lines, its faults in
//! full) reaches its author and the host, and no one else by any page or call;
//! the author's pages hold their session and their forms against another site.
//! The same in a real browser: `in_a_real_browser_an_author_signs_in_uploads_and_reads_their_logs`.

use astragal_tests::author_pages::{csrf_on, get_as, post_form, sign_in};
use astragal_tests::{http_request, test_stores};
use ladder::app::{self, UploadConfig};
use ladder::store::Store;
use ladder::worker::{self, Client, WorkerConfig};
use proto::ladder::*;
use std::time::Duration;
use tonic::Code;

const ADMIN: &str = "admin-token-author-pages";
const WORKER: &str = "worker-token-author-pages";
const ALICE: &str = "author-token-alice-pages";
const BOB: &str = "author-token-bob-pages-2";

use astragal_tests::in_process::{InProcessServer as Server, config};

/// A server with its pages on `db`: worker `w1`, authors alice and bob.
async fn serve(db: &str, uploads: UploadConfig) -> Server {
    let store = Store::open(db).await.expect("store opens");
    store
        .workers()
        .add_worker("w1", &app::token_hash(WORKER))
        .await
        .unwrap();
    for (name, token) in [("alice", ALICE), ("bob", BOB)] {
        store
            .authors()
            .add_author(name, &app::token_hash(token), 3)
            .await
            .unwrap();
    }
    Server::start(store, config(ADMIN, uploads), true).await
}

/// A Python bot folder named `name` that says `MARKER` on stderr (a long line)
/// and on an `info` line at every move, and plays the first legal move.
fn logging_bot(dir: &std::path::Path, name: &str, marker: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let root = astragal_tests::workspace_root();
    std::fs::copy(
        root.join("bots/python/astragal_bot.py"),
        dir.join("astragal_bot.py"),
    )
    .unwrap();
    std::fs::write(
        dir.join("astragal.toml"),
        format!(
            "name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py {marker}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("bot.py"),
        r#"import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from astragal_bot import run
marker = sys.argv[1]
moves = [0]
def choose(obs, legal, info):
    moves[0] += 1
    sys.stderr.write("%s-STDERR move %d %s\n" % (marker, moves[0], "x" * 200))
    sys.stderr.flush()
    sys.stdout.write("info %s-INFO %d\n" % (marker, moves[0]))
    return legal[0]
run(choose, name="logbot", author=marker)
"#,
    )
    .unwrap();
}

async fn submit(c: &mut Client, bytes: Vec<u8>) -> SubmitReply {
    let chunks: Vec<UploadChunk> = bytes
        .chunks(100_000)
        .map(|d| UploadChunk { data: d.to_vec() })
        .collect();
    c.submit(tokio_stream::iter(chunks)).await.unwrap().into_inner()
}

/// A worker that builds and checks what is waiting, plays what is ready, and ends
/// when there is nothing more.
fn worker_until_idle(url: &str) -> WorkerConfig {
    WorkerConfig {
        server: url.to_owned(),
        token: WORKER.into(),
        ca_pem: None,
        name: "w1".into(),
        concurrency: 1,
        batch: 1,
        max_groups: None,
        exit_when_idle: true,
        log_dir: None,
        sandbox: referee::sandbox::Sandbox::default(),
        progress: false,
        stop_within: Duration::ZERO,
        uploads: worker::WorkerUploads {
            runtimes: vec!["python3".into()],
            ..Default::default()
        },
    }
}

/// Attack: every reader but a seat's author and the host tries every page and
/// call for another seat's private log. The stranger (no session), bob (another
/// author, signed in and by token) and the worker read the public pages, the
/// records, the author's pages and the logs call; none of them ever sees a word
/// alice's bot wrote on stderr or on an `info` line. Alice sees her own (cut to
/// the host's cap, said where), not bob's; the host sees both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seats_private_log_reaches_its_author_and_the_host_and_no_one_else() {
    for store in test_stores("author_private_logs").await {
        let uploads = UploadConfig {
            author_log_bytes: 2048,
            ..UploadConfig::default()
        };
        let server = serve(&store.url, uploads).await;
        let web = server.web;
        let mut admin = worker::connect(&server.url, ADMIN, None).await.unwrap();
        let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let mut bob = worker::connect(&server.url, BOB, None).await.unwrap();
        let mut w1 = worker::connect(&server.url, WORKER, None).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (c, name, marker) in [(&mut alice, "alices", "ALICE"), (&mut bob, "bobs", "BOB")] {
            let folder = dir.path().join(name);
            logging_bot(&folder, name, marker);
            submit(c, ladder::submission::pack_folder(&folder).unwrap()).await;
        }
        // Built and checked...
        worker::run(worker_until_idle(&server.url), std::future::pending())
            .await
            .unwrap();
        for name in ["alices", "bobs"] {
            let b = admin
                .list_bots(ListBotsRequest {})
                .await
                .unwrap()
                .into_inner()
                .bots;
            let b = b.iter().find(|b| b.name == name).unwrap();
            assert_eq!(b.status, i32::from(BotStatus::Active), "{}: {b:?}", store.kind);
        }
        // ...then four games of alice's bot against bob's.
        admin
            .open_competition(OpenCompetitionRequest {
                name: "logs".into(),
                game: "ur".into(),
                max_games: 4,
                movetime_ms: 2000,
                ..Default::default()
            })
            .await
            .unwrap();
        let played = worker::run(worker_until_idle(&server.url), std::future::pending())
            .await
            .unwrap();
        assert_eq!(played, 2, "{}: two groups", store.kind);
        let ids: Vec<i64> = admin
            .game_records(GameRecordsRequest {
                competition: "logs".into(),
                after_id: 0,
                limit: 10,
            })
            .await
            .unwrap()
            .into_inner()
            .records
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids.len(), 4);

        // What alice and the host read: her lines are there (so the attacks below
        // can fail), cut to the cap with the cut said.
        let (alice_cookie, set_cookie) = sign_in(web, ALICE);
        for attr in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
            assert!(set_cookie.contains(attr), "{set_cookie}");
        }
        let (bob_cookie, _) = sign_in(web, BOB);
        let (host_cookie, _) = sign_in(web, ADMIN);
        for &id in &ids {
            let (status, mine) = get_as(web, Some(&alice_cookie), &format!("/author/api/games/{id}"));
            assert_eq!(status, 200, "{mine}");
            let v: serde_json::Value = serde_json::from_str(&mine).unwrap();
            let seats = v["seats"].as_array().unwrap();
            assert_eq!(seats.len(), 1, "alice reads her seat alone: {mine}");
            assert_eq!(seats[0]["bot"], "alices");
            assert!(
                mine.contains("ALICE-INFO ") && mine.contains("ALICE-STDERR"),
                "{mine}"
            );
            assert!(!mine.contains("BOB-"), "{mine}");
            let kept = seats[0]["stderr"].as_str().unwrap();
            assert!(kept.len() <= 2048, "{} bytes kept", kept.len());
            assert!(seats[0]["stderr_dropped"].as_u64().unwrap() > 0, "{mine}");
            let (status, page) = get_as(web, Some(&alice_cookie), &format!("/author/games/{id}"));
            assert_eq!(status, 200);
            assert!(
                page.contains("ALICE-INFO") && page.contains("bytes were cut"),
                "{id}"
            );
            let (_, hosts) = get_as(web, Some(&host_cookie), &format!("/author/api/games/{id}"));
            assert!(
                hosts.contains("ALICE-INFO") && hosts.contains("BOB-INFO"),
                "{hosts}"
            );
            let by_token = alice
                .game_logs(GameLogsRequest { game_id: id })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(by_token.seats.len(), 1);
            assert!(
                by_token.seats[0]
                    .info
                    .iter()
                    .any(|i| i.line.starts_with("ALICE-INFO"))
            );
            assert!(
                admin
                    .game_logs(GameLogsRequest { game_id: id })
                    .await
                    .unwrap()
                    .into_inner()
                    .seats
                    .len()
                    == 2
            );
        }

        // The attackers.
        let leaks = |what: &str, text: &str| {
            assert!(
                !text.contains("ALICE-INFO") && !text.contains("ALICE-STDERR"),
                "{}: {what} shows alice's private log",
                store.kind
            );
        };
        let mut public = vec![
            "/".to_owned(),
            "/api/standings.json".into(),
            "/competitions/logs".into(),
            "/competitions/logs.json".into(),
            "/competitions/logs/games".into(),
            "/competitions/logs/games.json".into(),
            "/competitions/logs/games.jsonl".into(),
            "/bots/alices".into(),
            "/bots/alices.json".into(),
        ];
        for id in &ids {
            public.push(format!("/games/{id}"));
            public.push(format!("/api/games/{id}"));
        }
        let mut private = vec![
            "/author".to_owned(),
            "/author/bots.json".into(),
            "/author/bots/alices".into(),
        ];
        for id in &ids {
            private.push(format!("/author/games/{id}"));
            private.push(format!("/author/api/games/{id}"));
        }
        for (who, cookie) in [("the stranger", None), ("bob", Some(bob_cookie.as_str()))] {
            for path in public.iter().chain(&private) {
                let (status, body) = get_as(web, cookie, path);
                leaks(&format!("{path} to {who} ({status})"), &body);
            }
        }
        // The stranger is sent to sign in; bob's view of a shared game is his seat.
        let (status, _) = get_as(web, None, &format!("/author/api/games/{}", ids[0]));
        assert_eq!(status, 401);
        let (_, his) = get_as(web, Some(&bob_cookie), &format!("/author/api/games/{}", ids[0]));
        assert!(his.contains("BOB-INFO"), "{his}");
        assert_eq!(get_as(web, Some(&bob_cookie), "/author/bots/alices").0, 404);
        // A forged cookie is no one's.
        let forged = format!("astragal_session={}", "0".repeat(64));
        assert_eq!(get_as(web, Some(&forged), "/author/api/games/1").0, 401);
        // By token: the records and the logs call.
        for (who, c) in [
            ("bob", &mut bob),
            ("the worker", &mut w1),
            ("the admin", &mut admin),
        ] {
            if let Ok(r) = c
                .game_records(GameRecordsRequest {
                    competition: "logs".into(),
                    after_id: 0,
                    limit: 10,
                })
                .await
            {
                for rec in r.into_inner().records {
                    leaks(&format!("a record to {who}"), &rec.json);
                }
            }
        }
        for &id in &ids {
            let bobs = bob
                .game_logs(GameLogsRequest { game_id: id })
                .await
                .unwrap()
                .into_inner();
            assert!(bobs.seats.iter().all(|s| s.bot == "bobs"), "{bobs:?}");
            leaks("the logs call to bob", &format!("{bobs:?}"));
            let refused = w1.game_logs(GameLogsRequest { game_id: id }).await.unwrap_err();
            assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
        }
        // The database: alice's lines are kept apart from the public record.
        let s = Store::open(&store.url).await.unwrap();
        for &id in &ids {
            let (_, rec) = s
                .games()
                .record(ladder::store::GameId(id))
                .await
                .unwrap()
                .unwrap();
            leaks("the stored record", &rec);
        }

        // Sign-out ends the session; a revoked author's session ends with the token.
        let home = get_as(web, Some(&bob_cookie), "/author").1;
        let (status, said) = post_form(
            web,
            &bob_cookie,
            "http://localhost",
            "/author/sign-out",
            &format!("csrf={}", csrf_on(&home)),
        );
        assert_eq!(status, 303, "{said}");
        assert_eq!(get_as(web, Some(&bob_cookie), "/author/bots.json").0, 401);
        admin
            .revoke_author(AuthorRequest { name: "alice".into() })
            .await
            .unwrap();
        assert_eq!(get_as(web, Some(&alice_cookie), "/author/bots.json").0, 401);
        server.stop().await;
    }
}

/// Attack: another site's page (or a script that has no session's token) posts
/// the author's forms with the author's cookie. Without the session's CSRF token,
/// or from another origin, nothing changes; another author's token opens nothing
/// of hers. With both, the form works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authors_forms_refuse_another_site_and_another_session() {
    let store = test_stores("author_forms").await.remove(0);
    let server = serve(&store.url, UploadConfig::default()).await;
    let web = server.web;
    let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    logging_bot(&dir.path().join("b"), "alices", "ALICE");
    submit(
        &mut alice,
        ladder::submission::pack_folder(&dir.path().join("b")).unwrap(),
    )
    .await;
    worker::run(worker_until_idle(&server.url), std::future::pending())
        .await
        .unwrap();
    let (cookie, _) = sign_in(web, ALICE);
    let (bob_cookie, _) = sign_in(web, BOB);
    let page = get_as(web, Some(&cookie), "/author/bots/alices").1;
    assert!(page.contains("data-status=\"active\""), "{page}");
    let csrf = csrf_on(&page);
    let bob_csrf = csrf_on(&get_as(web, Some(&bob_cookie), "/author").1);
    let disable = "/author/bots/alices/status?to=disable";
    for (what, sender, origin, form) in [
        ("no token", cookie.as_str(), "http://localhost", String::new()),
        (
            "a wrong token",
            &cookie,
            "http://localhost",
            format!("csrf={}", "a".repeat(64)),
        ),
        (
            "bob's token",
            &cookie,
            "http://localhost",
            format!("csrf={bob_csrf}"),
        ),
        (
            "another site",
            &cookie,
            "http://evil.example",
            format!("csrf={csrf}"),
        ),
        (
            "bob's session",
            &bob_cookie,
            "http://localhost",
            format!("csrf={bob_csrf}"),
        ),
    ] {
        let (status, said) = post_form(web, sender, origin, disable, &form);
        assert!((400..500).contains(&status), "{what}: {status} {said}");
        let now = get_as(web, Some(&cookie), "/author/bots/alices").1;
        assert!(now.contains("data-status=\"active\""), "{what} changed it");
    }
    // An upload without the token stores nothing.
    let boundary = "XyZ";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"archive\"; filename=\"b.tar.gz\"\r\nContent-Type: application/gzip\r\n\r\nnot an archive\r\n--{boundary}--\r\n"
    );
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let (status, ..) = http_request(
        web,
        "POST",
        "/author/upload",
        &[
            ("Cookie", &cookie),
            ("Origin", "http://localhost"),
            ("Content-Type", &content_type),
        ],
        body.as_bytes(),
    );
    assert_eq!(status, 403);
    let json = get_as(web, Some(&cookie), "/author/bots.json").1;
    assert_eq!(json.matches("\"name\"").count(), 1, "{json}");
    // The real thing.
    let (status, said) = post_form(web, &cookie, "http://localhost", disable, &format!("csrf={csrf}"));
    assert_eq!(status, 303, "{said}");
    let now = get_as(web, Some(&cookie), "/author/bots/alices").1;
    assert!(now.contains("data-status=\"disabled\""), "{now}");
    server.stop().await;
}

/// In headless Chromium, as a person would: alice signs in with her token,
/// uploads her bot's folder as an archive from the page, watches it go from
/// building to active, opens one of its games and reads her bot's private log
/// beside the moves. Then, with no session, the same addresses show none of it.
/// Screenshots (desktop and phone) in `target/test-artifacts/author/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_real_browser_an_author_signs_in_uploads_and_reads_their_logs() {
    use astragal_tests::browser::{Driver, chromium};
    let Some(browser) = chromium() else { return };
    let store = test_stores("author_browser").await.remove(0);
    let server = serve(&store.url, UploadConfig::default()).await;
    let mut admin = worker::connect(&server.url, ADMIN, None).await.unwrap();
    admin
        .register_bot(RegisterBotRequest {
            name: "rnd".into(),
            game: "ur".into(),
            spec: "builtin:random".into(),
            env: vec![],
        })
        .await
        .unwrap();
    admin
        .open_competition(OpenCompetitionRequest {
            name: "seen".into(),
            game: "ur".into(),
            max_games: 4,
            movetime_ms: 2000,
            ..Default::default()
        })
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    logging_bot(&dir.path().join("bot"), "alices", "ALICE");
    let archive = dir.path().join("alices.tar.gz");
    std::fs::write(
        &archive,
        ladder::submission::pack_folder(&dir.path().join("bot")).unwrap(),
    )
    .unwrap();
    let shots = astragal_tests::workspace_root().join("target/test-artifacts/author");
    std::fs::create_dir_all(&shots).unwrap();
    // `localhost`: a secure context to the browser, so it keeps a `Secure` cookie over plain HTTP.
    let base = format!("http://localhost:{}", server.web.port());
    let profile = dir.path().join("profile");
    let (desktop, phone) = ((1280, 900), (390, 844));
    let archive_path = archive.display().to_string();
    let shots3 = shots.clone();
    let shot = move |d: &Driver, name: &str| d.screenshot(&shots3.join(format!("{name}.png")));

    // The browser is driven off the executor: each command waits for its page.
    let (base2, shots2) = (base.clone(), shots.clone());
    let d = tokio::task::spawn_blocking(move || {
        let d = Driver::start(&browser, &profile, desktop)?;
        d.goto(&format!("{base2}/author"));
        assert!(d.url().ends_with("/author/sign-in"), "{}", d.url());
        d.screenshot(&shots2.join("sign-in.png"));
        d.type_into("input[name=token]", ALICE);
        d.click("button[type=submit]");
        let home = d.source_with("Signed in as", 100);
        assert!(home.contains("<b>alice</b>"), "{home}");
        d.type_into("input[type=file]", &archive_path);
        d.click("form[action='/author/upload'] button");
        let uploaded = d.source_with("<h1>Uploaded</h1>", 200);
        assert!(uploaded.contains("data-bot=\"alices\""), "{uploaded}");
        d.goto(&format!("{base2}/author"));
        let building = d.source();
        assert!(building.contains("data-status=\"building\""), "{building}");
        d.screenshot(&shots2.join("building.png"));
        Some(d)
    })
    .await
    .unwrap();
    let Some(d) = d else { return };
    // A second bot that prints a long debug word on stdout at its first move: its
    // check fails, and the report quotes the line.
    let chatty = dir.path().join("chatty");
    std::fs::create_dir_all(&chatty).unwrap();
    std::fs::write(
        chatty.join("astragal.toml"),
        "name = \"chatty\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n",
    )
    .unwrap();
    std::fs::write(
        chatty.join("bot.py"),
        r#"import sys
for line in sys.stdin:
    w = line.split()
    if not w:
        continue
    if w[0] == "astragal":
        print("id name=chatty author=alice")
        print("astragalok version=1")
    elif w[0] == "isready":
        print("readyok")
    elif w[0] == "go":
        print("debug:" + "cell-values-" * 120)
    elif w[0] == "quit":
        break
    sys.stdout.flush()
"#,
    )
    .unwrap();
    let mut as_alice = worker::connect(&server.url, ALICE, None).await.unwrap();
    submit(&mut as_alice, ladder::submission::pack_folder(&chatty).unwrap()).await;

    // A worker builds, checks and plays it.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut cfg = worker_until_idle(&server.url);
    cfg.exit_when_idle = false;
    let worker = tokio::spawn(worker::run(cfg, async move {
        let _ = stopped.await;
    }));
    let base2 = base.clone();
    let (d, game) = tokio::task::spawn_blocking(move || {
        // Reloads until the page says what the worker did (bounded: a hang is a
        // failure, not a wait for ever).
        let until = |d: &Driver, path: &str, what: &str| -> String {
            for _ in 0..600 {
                d.goto(&format!("{base2}{path}"));
                let page = d.source();
                if page.contains(what) {
                    return page;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            panic!("{path} never showed {what}");
        };
        until(&d, "/author", "data-status=\"active\"");
        shot(&d, "active");
        let bot = until(&d, "/author/bots/alices", "href=\"/author/games/");
        let at = bot.find("href=\"/author/games/").unwrap() + "href=\"/author/games/".len();
        let game: String = bot[at..].chars().take_while(char::is_ascii_digit).collect();
        shot(&d, "bot");
        // A long check report wraps inside the page, its advice in view.
        let report = until(&d, "/author/bots/chatty", "cell-values-cell-values");
        assert!(report.contains("Check report"), "{report}");
        let off = d.overflowing();
        assert!(off.is_empty(), "the check report runs off the page: {off:?}");
        shot(&d, "rejected-report");
        d.goto(&format!("{base2}/author/games/{game}"));
        let page = d.source();
        assert!(
            page.contains("Private logs") && page.contains("ALICE-STDERR") && page.contains("ALICE-INFO"),
            "{page}"
        );
        // Her info lines beside her moves, in the viewer: the ply after her first
        // move with one, as her logs' JSON says.
        d.goto(&format!("{base2}/author/api/games/{game}"));
        let raw = d.source();
        let json = &raw[raw.find('{').unwrap()..=raw.rfind('}').unwrap()];
        let logs: serde_json::Value = serde_json::from_str(json).unwrap();
        let first = logs["seats"][0]["info"][0][0].as_u64().expect("an info line") + 1;
        // From another page: a change of the fragment alone reloads nothing.
        d.goto(&format!("{base2}/author"));
        d.goto(&format!("{base2}/author/games/{game}#{first}"));
        let shown = d.source();
        assert!(shown.contains("class=\"info\">info ALICE-INFO"), "{shown}");
        shot(&d, "game-desktop");
        d.resize(phone);
        d.goto(&format!("{base2}/author"));
        d.goto(&format!("{base2}/author/games/{game}#{first}"));
        shot(&d, "game-phone");
        d.goto(&format!("{base2}/author"));
        shot(&d, "home-phone");
        d.goto(&format!("{base2}/author/bots/chatty"));
        let off = d.overflowing();
        assert!(
            off.is_empty(),
            "the check report runs off a phone's page: {off:?}"
        );
        shot(&d, "rejected-report-phone");
        d.resize(desktop);
        // A stranger: no session.
        d.forget_cookies();
        for path in [
            format!("/author/games/{game}"),
            format!("/games/{game}"),
            "/author".into(),
        ] {
            d.goto(&format!("{base2}{path}"));
            let page = d.source();
            assert!(
                !page.contains("ALICE-STDERR") && !page.contains("ALICE-INFO"),
                "{path}: {page}"
            );
        }
        assert!(d.url().ends_with("/author/sign-in"), "{}", d.url());
        d.goto(&format!("{base2}/games/{game}"));
        shot(&d, "stranger-public-game");
        (d, game)
    })
    .await
    .unwrap();
    assert!(!game.is_empty());
    let _ = stop.send(());
    worker.await.unwrap().unwrap();

    // A challenge whose opponent the host took out of play before a game of
    // it: her page says so, with why (issue 58: it showed 0 / 10 for ever).
    admin
        .register_bot(RegisterBotRequest {
            name: "gone".into(),
            game: "ur".into(),
            spec: "builtin:first".into(),
            env: vec![],
        })
        .await
        .unwrap();
    let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
    alice
        .challenge(ChallengeRequest {
            bot: "alices".into(),
            opponent: "gone".into(),
            games: 10,
        })
        .await
        .unwrap();
    admin
        .set_bot_status(SetBotStatusRequest {
            name: "gone".into(),
            status: BotStatus::Disabled.into(),
            reason: String::new(),
        })
        .await
        .unwrap();
    let base2 = base.clone();
    tokio::task::spawn_blocking(move || {
        d.goto(&format!("{base2}/author"));
        d.type_into("input[name=token]", ALICE);
        d.click("button[type=submit]");
        let home = d.source_with("Your challenges", 100);
        assert!(
            home.contains("0 / 10") && home.contains("withdrawn: gone is disabled"),
            "{home}"
        );
        d.screenshot(&shots.join("challenge-withdrawn.png"));
    })
    .await
    .unwrap();
    server.stop().await;
}

/// An author asks for unrated games of their bot against a bot they name: they
/// are played beside an open ladder (not starved by it), counted against the
/// host's daily cap, listed on the author's page with their private logs, and
/// on no public ranking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_challenge_plays_unrated_games_within_the_hosts_cap() {
    for store in test_stores("author_challenges").await {
        let uploads = UploadConfig {
            challenge_games_per_day: 6,
            ..UploadConfig::default()
        };
        let server = serve(&store.url, uploads).await;
        let web = server.web;
        let mut admin = worker::connect(&server.url, ADMIN, None).await.unwrap();
        let mut alice = worker::connect(&server.url, ALICE, None).await.unwrap();
        let bob = worker::connect(&server.url, BOB, None).await.unwrap();
        for (name, spec) in [("rnd", "builtin:random"), ("first", "builtin:first")] {
            admin
                .register_bot(RegisterBotRequest {
                    name: name.into(),
                    game: "ur".into(),
                    spec: spec.into(),
                    env: vec![],
                })
                .await
                .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        logging_bot(&dir.path().join("b"), "alices", "ALICE");
        submit(
            &mut alice,
            ladder::submission::pack_folder(&dir.path().join("b")).unwrap(),
        )
        .await;
        worker::run(worker_until_idle(&server.url), std::future::pending())
            .await
            .unwrap();
        admin
            .open_competition(OpenCompetitionRequest {
                name: "main".into(),
                game: "ur".into(),
                max_games: 20,
                movetime_ms: 2000,
                ..Default::default()
            })
            .await
            .unwrap();
        let ask = |bot: &str, opponent: &str, games| ChallengeRequest {
            bot: bot.into(),
            opponent: opponent.into(),
            games,
        };
        let asked = alice
            .challenge(ask("alices", "rnd", 4))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((asked.games, asked.opponent.as_str()), (4, "rnd"));
        // Past the cap: 4 of 6 asked, 2 left.
        let over = alice.challenge(ask("alices", "first", 4)).await.unwrap_err();
        assert_eq!(over.code(), Code::FailedPrecondition, "{over:?}");
        assert!(over.message().contains("2 more"), "{}", over.message());
        for (who, c, request, code) in [
            (
                "bob with alice's bot",
                bob.clone(),
                ask("alices", "rnd", 2),
                Code::PermissionDenied,
            ),
            (
                "alice against no bot",
                alice.clone(),
                ask("alices", "nobody", 2),
                Code::NotFound,
            ),
            (
                "alice against herself",
                alice.clone(),
                ask("alices", "alices", 2),
                Code::InvalidArgument,
            ),
            (
                "alice, too many at once",
                alice.clone(),
                ask("alices", "rnd", 1000),
                Code::InvalidArgument,
            ),
        ] {
            let mut c = c;
            let refused = c.challenge(request).await.unwrap_err();
            assert_eq!(refused.code(), code, "{who}: {refused:?}");
        }
        let workers_token = worker::connect(&server.url, WORKER, None).await.unwrap();
        let mut w = workers_token;
        assert_eq!(
            w.challenge(ask("alices", "rnd", 2)).await.unwrap_err().code(),
            Code::PermissionDenied
        );

        // One worker plays everything: the ladder's 10 groups and the challenge's 2.
        let played = worker::run(worker_until_idle(&server.url), std::future::pending())
            .await
            .unwrap();
        assert_eq!(played, 12, "{}", store.kind);
        let mine = alice
            .my_challenges(MyChallengesRequest {})
            .await
            .unwrap()
            .into_inner()
            .challenges;
        assert_eq!(mine.len(), 1);
        assert_eq!((mine[0].played, mine[0].game_ids.len()), (4, 4), "{mine:?}");
        // Its games are alice's against rnd, with her private logs.
        for &id in &mine[0].game_ids {
            let logs = alice
                .game_logs(GameLogsRequest { game_id: id })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(logs.seats.len(), 1);
            assert!(
                logs.seats[0]
                    .info
                    .iter()
                    .any(|i| i.line.starts_with("ALICE-INFO"))
            );
            let rec = admin
                .game_records(GameRecordsRequest {
                    competition: mine[0].competition.clone(),
                    after_id: id - 1,
                    limit: 1,
                })
                .await
                .unwrap()
                .into_inner()
                .records;
            let rec: referee::GameRecord = serde_json::from_str(&rec[0].json).unwrap();
            let mut seats: Vec<&str> = rec.seats.iter().map(|s| s.entrant.as_deref().unwrap()).collect();
            seats.sort_unstable();
            assert_eq!(seats, ["alices", "rnd"]);
        }
        // Unrated: on no public ranking; the ladder counts its own games only.
        let (_, front) = get_as(web, None, "/api/standings.json");
        assert!(!front.contains(&mine[0].competition), "{front}");
        let (_, bot) = get_as(web, None, "/bots/alices.json");
        let bot: serde_json::Value = serde_json::from_str(&bot).unwrap();
        let comps: Vec<&str> = bot["competitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["competition"].as_str().unwrap())
            .collect();
        assert_eq!(comps, ["main"], "{bot}");
        let main_games: u64 = bot["competitions"][0]["games"].as_u64().unwrap();
        assert!(main_games <= 20, "{main_games}");
        // Listed on her page, each game linked to its private logs.
        let (cookie, _) = sign_in(web, ALICE);
        let home = get_as(web, Some(&cookie), "/author").1;
        assert!(home.contains("alices v rnd") && home.contains("4 / 4"), "{home}");
        for id in &mine[0].game_ids {
            assert!(home.contains(&format!("href=\"/author/games/{id}\"")), "{home}");
        }
        // From the page too: the form asks, within what is left of the cap.
        let page = get_as(web, Some(&cookie), "/author/bots/alices").1;
        let csrf = csrf_on(&page);
        let ask_at = "/author/bots/alices/challenge";
        let (status, said) = post_form(
            web,
            &cookie,
            "http://localhost",
            ask_at,
            &format!("csrf={csrf}&opponent=first&games=4"),
        );
        assert_eq!(status, 400, "{said}");
        assert!(said.contains("2 more"), "{said}");
        let (status, said) = post_form(
            web,
            &cookie,
            "http://localhost",
            ask_at,
            &format!("csrf={csrf}&opponent=first&games=2"),
        );
        assert_eq!(status, 303, "{said}");
        let home = get_as(web, Some(&cookie), "/author").1;
        assert!(
            home.contains("alices v first") && home.contains("0 / 2"),
            "{home}"
        );
        server.stop().await;
    }
}

/// The upload form streams its file into the same path as `ladder submit`: an
/// upload that falls behind the host's floor is cut, saying so (the red team:
/// a form trickled at a byte a second was read whole first, held for minutes,
/// and counted against no cap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_upload_form_is_cut_like_any_upload() {
    let store = test_stores("author_form_floor").await.remove(0);
    let uploads = UploadConfig {
        floor: app::UploadFloor {
            bytes_per_s: 16 * 1024,
            grace: Duration::from_millis(300),
        },
        ..UploadConfig::default()
    };
    let server = serve(&store.url, uploads).await;
    let web = server.web;
    let said = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let (cookie, _) = sign_in(web, ALICE);
        let csrf = csrf_on(&get_as(web, Some(&cookie), "/author").1);
        let boundary = "TRICKLEBOUNDARY";
        let head = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n--{boundary}\r\n\
             Content-Disposition: form-data; name=\"archive\"; filename=\"b.tgz\"\r\n\
             Content-Type: application/gzip\r\n\r\n\x1f"
        );
        // A body of a megabyte announced; its first bytes sent, then nothing.
        let mut s = std::net::TcpStream::connect(web).unwrap();
        write!(
            s,
            "POST /author/upload HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost\r\nCookie: {cookie}\r\n\
             Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{head}",
            head.len() + (1 << 20)
        )
        .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        answer
    })
    .await
    .unwrap();
    assert!(said.starts_with("HTTP/1.1 400"), "{said}");
    assert!(said.contains("slower than 16 KiB/s"), "{said}");
    server.stop().await;
}
