//! A season from announcement to verified winners, on SQLite and (with
//! ASTRAGAL_PG_URL) PostgreSQL: the host opens it with `ladder admin open
//! --deadline`, authors upload and one chooses an older version as her entry,
//! the clock is moved past the deadline through the store's clock (no waiting),
//! an upload after the deadline is kept out, two `ladder worker`s play the
//! finals, the season closes, and `ladder verify` checks the public record —
//! and names what differs in a record tampered four ways.

use astragal_tests::author_pages::{csrf_on, get_as, post_form, sign_in};
use astragal_tests::in_process::{InProcessServer, config, lease_groups_ready};
use astragal_tests::{ladder, output_text as text, test_stores, workspace_root};
use ladder::app::{self, UploadConfig};
use ladder::clock::Clock;
use ladder::season::verify::{VerifyError, verify};
use ladder::season::{Phase, SeasonLine};
use ladder::store::Store;
use ladder::worker;
use proto::ladder::*;
use std::time::Duration;

const ADMIN: &str = "admin-token-season-0123";
const WORKERS: [&str; 2] = ["worker-token-season-one", "worker-token-season-two"];
const ALICE: &str = "author-token-season-alice";
const BOB: &str = "author-token-season-bob-0";

/// A Python bot's folder (the starter, with `tag` making its files its own),
/// packed as `ladder submit` packs it.
fn bot_folder(name: &str, tag: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let starter = std::fs::read_to_string(workspace_root().join("bots/starters/python/bot.py")).unwrap();
    std::fs::write(dir.path().join("bot.py"), format!("{starter}\n# {tag}\n")).unwrap();
    std::fs::write(
        dir.path().join("astragal.toml"),
        format!("name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n"),
    )
    .unwrap();
    ladder::submission::pack_folder(dir.path()).unwrap()
}

async fn submit(c: &mut worker::Client, bytes: Vec<u8>) -> String {
    let chunks: Vec<UploadChunk> = bytes
        .chunks(100_000)
        .map(|d| UploadChunk { data: d.to_vec() })
        .collect();
    let reply = c.submit(tokio_stream::iter(chunks)).await.unwrap().into_inner();
    reply.bots[0].name.clone()
}

/// A worker process until the server has nothing left to build, check or play,
/// offering authors' bots `runtimes` (`none`: the host's bots only).
fn work(url: &str, token: &str, runtimes: &str) -> std::process::Output {
    ladder(
        &[
            "worker",
            "--server",
            url,
            "--exit-when-idle",
            // The containment of bots is not what this test is about.
            "--sandbox",
            "none",
            "--allow-unsandboxed",
            "--runtimes",
            runtimes,
            "--concurrency",
            "2",
        ],
        &[("ASTRAGAL_WORKER_TOKEN", token)],
    )
}

async fn work_async(url: &str, token: &'static str) {
    let url = url.to_owned();
    let o = tokio::task::spawn_blocking(move || work(&url, token, "python3"))
        .await
        .unwrap();
    assert!(o.status.success(), "worker: {}", text(&o));
}

/// `ladder author enter VERSION`, as the author whose token is in `token_file`.
fn enter_by_cli(url: &str, token_file: &std::path::Path, version: &str) -> std::process::Output {
    ladder(
        &[
            "author",
            "--server",
            url,
            "--token-file",
            &token_file.to_string_lossy(),
            "enter",
            version,
        ],
        &[],
    )
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || astragal_tests::http_get(addr, &path))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_season_runs_from_announcement_to_verified_winners_and_a_tampered_record_fails() {
    for t in test_stores("season").await {
        let clock = Clock::manual(ladder::clock::system_ms());
        let store = Store::open(&t.url).await.unwrap().with_clock(clock.clone());
        for (i, token) in WORKERS.iter().enumerate() {
            store
                .workers()
                .add_worker(&format!("w{i}"), &app::token_hash(token))
                .await
                .unwrap();
        }
        store
            .authors()
            .add_author("alice", &app::token_hash(ALICE), 2)
            .await
            .unwrap();
        store
            .authors()
            .add_author("bob", &app::token_hash(BOB), 2)
            .await
            .unwrap();
        let server =
            InProcessServer::start(store.clone(), config(ADMIN, UploadConfig::default()), true).await;
        let url = server.url.clone();
        let mut admin = worker::connect(&url, ADMIN, None).await.unwrap();
        let mut alice = worker::connect(&url, ALICE, None).await.unwrap();
        let mut bob = worker::connect(&url, BOB, None).await.unwrap();

        // The host's bot, and the season: entries close in a day; the top three
        // meet in the finals, every pair in two groups.
        admin
            .register_bot(RegisterBotRequest {
                name: "first".into(),
                game: "ur".into(),
                spec: "builtin:first".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        let deadline = clock.now_ms() + 86_400_000;
        let deadline_text = ladder::season::utc(deadline);
        let admin_open = ladder(
            &[
                "admin",
                "--server",
                &url,
                "open",
                "spring",
                "--game",
                "ur",
                "--max-games",
                "12",
                "--deadline",
                &deadline_text,
                "--finals-top",
                "3",
                "--finals-groups",
                "2",
            ],
            &[("ASTRAGAL_ADMIN_TOKEN", ADMIN)],
        );
        assert!(admin_open.status.success(), "{}", text(&admin_open));
        assert!(
            text(&admin_open).contains("season, open"),
            "{}",
            text(&admin_open)
        );

        // Submissions: alice uploads two versions and enters her first; bob one.
        let lucky = submit(&mut alice, bot_folder("lucky", "v1")).await;
        let plucky = submit(&mut bob, bot_folder("plucky", "v1")).await;
        work_async(&url, WORKERS[0]).await;
        let lucky2 = submit(&mut alice, bot_folder("lucky", "v2")).await;
        work_async(&url, WORKERS[0]).await;
        assert_eq!(
            (lucky.as_str(), lucky2.as_str(), plucky.as_str()),
            ("lucky", "lucky@2", "plucky")
        );
        let page = get(server.web, "/competitions/spring.json").await.1;
        let view: serde_json::Value = serde_json::from_str(&page).unwrap();
        assert_eq!(view["season"]["phase"], "open", "{page}");
        assert!(
            view["season"]["closes_in"]
                .as_str()
                .is_some_and(|s| s.starts_with("23 h") || s.starts_with("1 d")),
            "{page}"
        );
        // Without a choice alice's entry is her newest version…
        let entries = |v: &serde_json::Value| -> Vec<String> {
            v["season"]["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(entries(&view), ["first", "lucky@2", "plucky"], "{page}");
        // …and her choice, made with the CLI, is her older one.
        let token_file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(token_file.path(), ALICE).unwrap();
        let enter = enter_by_cli(&url, token_file.path(), "lucky");
        assert!(enter.status.success(), "{}", text(&enter));
        assert!(
            text(&enter).contains("lucky is your entry in spring"),
            "{}",
            text(&enter)
        );
        let view: serde_json::Value =
            serde_json::from_str(&get(server.web, "/competitions/spring.json").await.1).unwrap();
        assert_eq!(entries(&view), ["first", "lucky", "plucky"]);
        // One row per entry: alice's versions share one row of the standings.
        let rows: Vec<&str> = view["standings"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(
            !(rows.contains(&"lucky") && rows.contains(&"lucky@2")),
            "{rows:?}"
        );
        // Her page says which version is her entry, and its button enters another.
        let (cookie, _) = sign_in(server.web, ALICE);
        let web = server.web;
        let (status, home) = tokio::task::spawn_blocking({
            let cookie = cookie.clone();
            move || get_as(web, Some(&cookie), "/author")
        })
        .await
        .unwrap();
        assert_eq!(status, 200);
        assert!(
            home.contains("Your season entries") && home.contains("data-entry=\"lucky\""),
            "{home}"
        );
        assert!(home.contains("you chose it"), "{home}");
        let (_, v2_page) = tokio::task::spawn_blocking({
            let cookie = cookie.clone();
            move || get_as(web, Some(&cookie), "/author/bots/lucky@2")
        })
        .await
        .unwrap();
        assert!(v2_page.contains("Make this my entry in spring"), "{v2_page}");
        let csrf = csrf_on(&v2_page);
        let (status, said) = tokio::task::spawn_blocking({
            let cookie = cookie.clone();
            move || {
                post_form(
                    web,
                    &cookie,
                    "http://localhost",
                    "/author/bots/lucky@2/enter",
                    &format!("csrf={csrf}&season=spring"),
                )
            }
        })
        .await
        .unwrap();
        assert_eq!(status, 303, "{said}");
        let view: serde_json::Value =
            serde_json::from_str(&get(server.web, "/competitions/spring.json").await.1).unwrap();
        assert_eq!(entries(&view), ["first", "lucky@2", "plucky"]);
        // Back to her first version, with the CLI again.
        let enter = enter_by_cli(&url, token_file.path(), "lucky@1");
        assert!(enter.status.success(), "{}", text(&enter));
        if let Some(browser) = astragal_tests::browser::chromium() {
            let dir = tempfile::tempdir().unwrap();
            let png = workspace_root().join("target/screenshots");
            std::fs::create_dir_all(&png).unwrap();
            let page = format!("http://{}/competitions/spring", server.web);
            astragal_tests::browser::screenshot(
                &browser,
                dir.path(),
                &page,
                (980, 1200),
                &png.join(format!("season-open-{}.png", t.kind)),
            );
        }
        // Bob cannot choose alice's version.
        let stolen = bob
            .enter_season(EnterSeasonRequest {
                competition: "spring".into(),
                bot: "lucky".into(),
            })
            .await;
        assert!(stolen.is_err_and(|s| s.message().contains("no version named")));
        // Choices of one author sent at once: each is taken (the last to land
        // is the entry), none fails on the other's row.
        let at_once: Vec<_> = (0..8)
            .map(|i| {
                let mut client = alice.clone();
                let bot = if i % 2 == 0 { "lucky@2" } else { "lucky" };
                tokio::spawn(async move {
                    client
                        .enter_season(EnterSeasonRequest {
                            competition: "spring".into(),
                            bot: bot.into(),
                        })
                        .await
                })
            })
            .collect();
        for call in at_once {
            let reply = call.await.unwrap();
            assert!(reply.is_ok(), "{reply:?}");
        }
        alice
            .enter_season(EnterSeasonRequest {
                competition: "spring".into(),
                bot: "lucky".into(),
            })
            .await
            .unwrap();

        // The deadline passes (the clock is moved, not waited for).
        clock.advance(Duration::from_secs(86_400 + 60));
        let late = submit(&mut bob, bot_folder("plucky", "late")).await;
        assert_eq!(late, "plucky@2");
        let too_late = alice
            .enter_season(EnterSeasonRequest {
                competition: "spring".into(),
                bot: "lucky@2".into(),
            })
            .await;
        assert!(too_late.is_err_and(|s| s.message().contains("deadline") && s.message().contains("passed")));
        // The test moves the season on itself; the server's own look, once a
        // second, may have done it first: each step happens once either way.
        app::seasons::advance(&store).await.unwrap();
        let season = store
            .seasons()
            .season(competition_id(&store).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(season.phase, Phase::Finals);
        let commitment = season.commitment.clone().unwrap();
        let page = get(server.web, "/competitions/spring").await.1;
        assert!(
            page.contains(&commitment),
            "the commitment is on the page before the finals"
        );
        assert!(
            !page.contains(&season.master_seed.as_ref().unwrap().to_hex()),
            "the master seed is not"
        );
        let (status, early) = get(server.web, "/competitions/spring/season.jsonl").await;
        assert_eq!(status, 200);
        assert!(!early.contains(&season.master_seed.as_ref().unwrap().to_hex()));
        let early_check = verify(&early, None);
        assert!(
            matches!(early_check, Err(VerifyError::NotClosed(_))),
            "{early_check:?}"
        );

        // The finals: the three entries, bob's late version kept out (it is
        // built, and plays nothing of this season).
        let view: serde_json::Value =
            serde_json::from_str(&get(server.web, "/competitions/spring.json").await.1).unwrap();
        let mut names = entries(&view);
        names.sort();
        assert_eq!(names, ["first", "lucky", "plucky"]);
        let (a, b) = tokio::join!(work_async(&url, WORKERS[0]), work_async(&url, WORKERS[1]));
        let ((), ()) = (a, b);
        app::seasons::advance(&store).await.unwrap();
        let season = store
            .seasons()
            .season(competition_id(&store).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(season.phase, Phase::Closed, "{}", t.kind);
        let finals = store
            .competitions()
            .competition("spring-finals")
            .await
            .unwrap()
            .unwrap();
        let played: Vec<String> = store
            .games()
            .records(finals.id, Default::default(), 1000)
            .await
            .unwrap()
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        assert_eq!(
            played.len(),
            12,
            "three pairs, two groups each, two games a group"
        );
        assert!(
            played
                .iter()
                .all(|r| !r.contains("plucky@2") && !r.contains("lucky@2"))
        );

        // Closed: the master seed and the final standings are public.
        let page = get(server.web, "/competitions/spring").await.1;
        assert!(page.contains(&season.master_seed.as_ref().unwrap().to_hex()));
        assert!(page.contains("Final standings"));
        let (_, record) = get(server.web, "/competitions/spring/season.jsonl").await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("season.jsonl");
        std::fs::write(&file, &record).unwrap();
        let file_arg = file.to_string_lossy().into_owned();
        let ok = ladder(&["verify", &file_arg, "--commitment", &commitment], &[]);
        assert!(ok.status.success(), "{}", text(&ok));
        assert!(
            text(&ok).starts_with("verified: spring — 6 finals groups in 1 round, 12 games"),
            "{}",
            text(&ok)
        );
        let by_url = format!("http://{}/competitions/spring/season.jsonl", server.web);
        let ok = ladder(&["verify", &by_url], &[]);
        assert!(ok.status.success(), "{}", text(&ok));
        // A commitment other than the one noted before the finals is refused.
        let other = ladder(&["verify", &file_arg, "--commitment", &"0".repeat(64)], &[]);
        assert_eq!(other.status.code(), Some(2), "{}", text(&other));
        assert!(text(&other).contains("not to 0000"), "{}", text(&other));

        tampered_records_are_caught(&record);
        server.stop().await;
    }
}

async fn competition_id(store: &Store) -> ladder::store::CompetitionId {
    store
        .competitions()
        .competition("spring")
        .await
        .unwrap()
        .unwrap()
        .id
}

/// The record's lines as JSON values, and back.
fn lines(record: &str) -> Vec<serde_json::Value> {
    record.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn joined(lines: &[serde_json::Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn tampered_records_are_caught(record: &str) {
    assert!(verify(record, None).is_ok());
    let original = lines(record);
    let games: Vec<usize> = (0..original.len())
        .filter(|&i| original[i]["kind"] == "game")
        .collect();
    assert_eq!(games.len(), 12);

    // A game's result changed: the outcome no longer follows from the moves.
    let mut changed = original.clone();
    let ranks = changed[games[3]]["record"]["outcome"]["ranks"]
        .as_array()
        .unwrap()
        .clone();
    let swapped: Vec<serde_json::Value> = ranks.iter().rev().cloned().collect();
    assert_ne!(ranks, swapped, "a game with a winner");
    changed[games[3]]["record"]["outcome"]["ranks"] = swapped.into();
    let e = verify(&joined(&changed), None).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Game { line, why, .. } if *line == games[3] + 1 && why.contains("replay")),
        "{e}"
    );

    // Two games' seeds swapped (each game dealt the other group's dice).
    let mut swapped = original.clone();
    let (a, b) = (games[0], games[4]);
    let seed_a = swapped[a]["record"]["seed"].clone();
    swapped[a]["record"]["seed"] = swapped[b]["record"]["seed"].clone();
    swapped[b]["record"]["seed"] = seed_a;
    let e = verify(&joined(&swapped), None).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Game { line, why, .. } if *line == a + 1 && why.contains("derives seed")),
        "{e}"
    );

    // A game left out.
    let mut missing = original.clone();
    missing.remove(games[7]);
    let e = verify(&joined(&missing), None).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Missing(why) if why.contains("is missing")),
        "{e}"
    );

    // An entry changed after the commitment (other files under the same name).
    let mut entry = original.clone();
    entry[0]["finalists"][1]["artifact_sha256"] = "ab".repeat(32).into();
    let e = verify(&joined(&entry), None).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Commitment(why) if why.contains("entries digest")),
        "{e}"
    );
    // Even with the digest and commitment rewritten to match, every seed differs.
    let SeasonLine::Season(mut head) = serde_json::from_value::<SeasonLine>(entry[0].clone()).unwrap() else {
        panic!("the first line is the season");
    };
    let master = ladder::season::seal::MasterSeed::from_hex(head.master_seed.as_deref().unwrap()).unwrap();
    let digest = ladder::season::seal::entries_digest(&head.finalists);
    head.entries_digest = hex::encode(digest);
    let terms = ladder::season::seal::terms(
        &head.game,
        &head.options,
        head.seats,
        head.seeding.as_str(),
        &head.plan,
    );
    head.commitment = ladder::season::seal::commitment(&master, &digest, &terms);
    entry[0] = serde_json::to_value(SeasonLine::Season(head)).unwrap();
    let e = verify(&joined(&entry), None).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Game { why, .. } if why.contains("derives seed") || why.contains("running")),
        "{e}"
    );

    // The terms changed (more groups than announced): the commitment noted
    // before the finals no longer opens.
    let noted = original[0]["commitment"].as_str().unwrap().to_owned();
    let mut terms = original.clone();
    terms[0]["plan"]["groups"] = 3.into();
    let e = verify(&joined(&terms), Some(&noted)).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Commitment(why) if why.contains("commit to")),
        "{e}"
    );

    // The finalists' seed order changed, every game's seats renamed to match
    // and the standings recomputed: the winner would change hands, but the
    // digest binds the order.
    let mut relabelled = original.clone();
    let finalists = relabelled[0]["finalists"].as_array().unwrap().clone();
    let (a_name, b_name) = (
        finalists[0]["name"].as_str().unwrap().to_owned(),
        finalists[1]["name"].as_str().unwrap().to_owned(),
    );
    relabelled[0]["finalists"][0] = finalists[1].clone();
    relabelled[0]["finalists"][1] = finalists[0].clone();
    for &i in &games {
        for seat in relabelled[i]["record"]["seats"].as_array_mut().unwrap() {
            let other = match seat["entrant"].as_str() {
                Some(n) if n == a_name => Some((b_name.clone(), finalists[1]["artifact_sha256"].clone())),
                Some(n) if n == b_name => Some((a_name.clone(), finalists[0]["artifact_sha256"].clone())),
                _ => None,
            };
            if let Some((name, artifact)) = other {
                seat["entrant"] = name.into();
                seat["artifact"] = artifact;
            }
        }
    }
    let e = verify(&joined(&relabelled), None).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Commitment(why) if why.contains("entries digest")),
        "{e}"
    );

    // One game of a group dealt differently from the rest of its group.
    let mut split = original.clone();
    let second = games[1];
    assert_eq!(
        split[second]["group"], split[games[0]]["group"],
        "a group's two games are side by side"
    );
    split[second]["deal"] = 1.into();
    let e = verify(&joined(&split), None).unwrap_err();
    assert!(
        matches!(&e, VerifyError::Game { why, .. } if why.contains("another game of its group")),
        "{e}"
    );

    // The published standings edited.
    let mut standings = original.clone();
    let last = standings.len() - 1;
    standings[last]["rows"][0]["score"] = 99.9.into();
    let e = verify(&joined(&standings), None).unwrap_err();
    assert!(matches!(&e, VerifyError::Standings(_)), "{e}");

    random_tampering_never_changes_the_verdict(record);
}

/// Randomized tampering, from a fixed seed: a value changed anywhere, lines
/// dropped, repeated or swapped, bits flipped, the text cut. The check never
/// panics, and whatever it still accepts reports exactly what the true record
/// does (an edit it lets through changed nothing that counts).
fn random_tampering_never_changes_the_verdict(record: &str) {
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::{Rng, SeedableRng};
    let truth = verify(record, None).unwrap();
    let original = lines(record);
    let mut rng = ChaCha8Rng::seed_from_u64(63);
    let mut below = |n: usize| rng.next_u32() as usize % n.max(1);
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..300 {
        let text = match round % 4 {
            0 => {
                let mut changed = original.clone();
                let at = below(changed.len());
                tamper_one_value(&mut changed[at], &mut below);
                joined(&changed)
            }
            1 => {
                let mut changed = original.clone();
                let (i, j) = (below(changed.len()), below(changed.len()));
                match below(3) {
                    0 => drop(changed.remove(i)),
                    1 => changed.insert(i, changed[j].clone()),
                    _ => changed.swap(i, j),
                }
                joined(&changed)
            }
            2 => {
                let mut bytes = record.as_bytes().to_vec();
                for _ in 0..=below(3) {
                    let at = below(bytes.len());
                    bytes[at] ^= 1 << below(8);
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
            _ => {
                let mut cut = below(record.len());
                while !record.is_char_boundary(cut) {
                    cut -= 1;
                }
                record[..cut].to_owned()
            }
        };
        match verify(&text, None) {
            Ok(v) => {
                assert_eq!(v, truth, "round {round}: a tampered record verified otherwise");
                accepted += 1;
            }
            Err(_) => refused += 1,
        }
    }
    // Most edits touch something that counts.
    assert!(refused > accepted, "{refused} refused, {accepted} accepted");
}

/// Changes one leaf of `value`, reached by random steps: a number moved by one,
/// a string changed, a flag flipped.
fn tamper_one_value(value: &mut serde_json::Value, below: &mut impl FnMut(usize) -> usize) {
    use serde_json::Value;
    match value {
        Value::Array(items) if !items.is_empty() => {
            let at = below(items.len());
            tamper_one_value(&mut items[at], below);
        }
        Value::Object(fields) if !fields.is_empty() => {
            let at = below(fields.len());
            let key = fields.keys().nth(at).unwrap().clone();
            tamper_one_value(&mut fields[&key], below);
        }
        Value::Number(n) => {
            *value = match (n.as_u64(), n.as_f64()) {
                (Some(u), _) => (u ^ 1).into(),
                (None, Some(f)) => (f + 0.5).into(),
                _ => 0.into(),
            }
        }
        Value::String(text) => {
            if text.is_empty() {
                text.push('x');
            } else {
                text.pop();
            }
        }
        Value::Bool(b) => *b = !*b,
        other => *other = 1.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finals_add_rounds_until_separated_or_capped_and_a_group_given_back_is_dealt_its_next_derived_seed() {
    for t in test_stores("season_rounds").await {
        let clock = Clock::manual(ladder::clock::system_ms());
        let store = Store::open(&t.url).await.unwrap().with_clock(clock.clone());
        store
            .workers()
            .add_worker("w0", &app::token_hash(WORKERS[0]))
            .await
            .unwrap();
        let server =
            InProcessServer::start(store.clone(), config(ADMIN, UploadConfig::default()), true).await;
        let url = server.url.clone();
        let mut admin = worker::connect(&url, ADMIN, None).await.unwrap();
        for (name, spec) in [
            ("first", "builtin:first"),
            ("random", "builtin:random"),
            ("greedy", "builtin:greedy"),
        ] {
            admin
                .register_bot(RegisterBotRequest {
                    name: name.into(),
                    game: "ur".into(),
                    spec: spec.into(),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
        // A plan that cannot be kept is refused before anything is stored.
        let refused = admin
            .open_competition(OpenCompetitionRequest {
                name: "bad".into(),
                game: "ur".into(),
                deadline_ms: Some(clock.now_ms() + 1000),
                finals_top: 3,
                finals_groups: 1,
                finals_max_games: 4,
                ..Default::default()
            })
            .await;
        assert!(refused.is_err_and(|s| s.message().contains("less than one round")));
        let past = admin
            .open_competition(OpenCompetitionRequest {
                name: "bad".into(),
                game: "ur".into(),
                deadline_ms: Some(clock.now_ms() - 1000),
                finals_top: 3,
                finals_groups: 1,
                ..Default::default()
            })
            .await;
        assert!(past.is_err_and(|s| s.message().contains("has passed")));
        let endless = admin
            .open_competition(OpenCompetitionRequest {
                name: "bad".into(),
                game: "ur".into(),
                deadline_ms: Some(clock.now_ms() + 1000),
                finals_top: 3,
                finals_groups: 1,
                finals_until_separated: true,
                ..Default::default()
            })
            .await;
        assert!(endless.is_err_and(|s| s.message().contains("need a cap")));
        admin
            .open_competition(OpenCompetitionRequest {
                name: "autumn".into(),
                game: "ur".into(),
                max_games: 6,
                deadline_ms: Some(clock.now_ms() + 3_600_000),
                finals_top: 3,
                finals_groups: 1,
                finals_until_separated: true,
                finals_max_games: 30,
                ..Default::default()
            })
            .await
            .unwrap();
        // Its finals' name stays free for them.
        let taken = admin
            .open_competition(OpenCompetitionRequest {
                name: "autumn-finals".into(),
                game: "ur".into(),
                ..Default::default()
            })
            .await;
        assert!(taken.is_err_and(|s| s.message().contains("finals")));
        let o = work(&url, WORKERS[0], "none");
        assert!(o.status.success(), "{}", text(&o));
        clock.advance(Duration::from_secs(3_601));
        app::seasons::advance(&store).await.unwrap();
        let id = store
            .competitions()
            .competition("autumn")
            .await
            .unwrap()
            .unwrap()
            .id;
        let season = store.seasons().season(id).await.unwrap().unwrap();
        assert_eq!(season.phase, Phase::Finals);

        // A worker leases a finals group and gives it back: the group is dealt
        // again, its seed the next derived one (deal 1), never one from
        // nowhere.
        let mut w0 = worker::connect(&url, WORKERS[0], None).await.unwrap();
        // Asked again while the server says to, as a worker does.
        let lease = lease_groups_ready(&mut w0, 1).await;
        let held = &lease[0];
        let master = season.master_seed.clone().unwrap();
        let digest =
            ladder::season::seal::digest_from_hex(season.entries_digest.as_deref().unwrap()).unwrap();
        let group_no = store
            .groups()
            .group(ladder::store::GroupId(held.group_id))
            .await
            .unwrap()
            .unwrap()
            .group_no as u64;
        assert_eq!(
            held.seed,
            ladder::season::seal::group_seed(&master, &digest, group_no, 0)
        );
        w0.return_leases(RenewLeasesRequest {
            lease: held.lease.clone(),
            group_ids: vec![held.group_id],
        })
        .await
        .unwrap();
        let again = store
            .groups()
            .group(ladder::store::GroupId(held.group_id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            again.seed as u64,
            ladder::season::seal::group_seed(&master, &digest, group_no, 1)
        );

        // Rounds follow one another until the top three separate or the next
        // would pass 30 games.
        // The server moves seasons on too, once a second: a round is added by
        // whichever call comes first, so it is counted in the finals' groups.
        let finals_id = season.finals_id.unwrap();
        let mut rounds = 0;
        loop {
            let before = store.groups().of_competition(finals_id).await.unwrap().len();
            let o = work(&url, WORKERS[0], "none");
            assert!(o.status.success(), "{}", text(&o));
            let moved = app::seasons::advance(&store).await.unwrap();
            rounds += 1;
            if store.seasons().season(id).await.unwrap().unwrap().phase == Phase::Closed {
                break;
            }
            let after = store.groups().of_competition(finals_id).await.unwrap().len();
            assert!(
                after > before || rounds < 2,
                "{moved:?}: {before} groups, then {after}"
            );
            assert!(rounds <= 5, "a round is 6 games: the cap of 30 allows five");
        }
        let (_, record) = get(server.web, "/competitions/autumn/season.jsonl").await;
        let v = verify(&record, season.commitment.as_deref()).unwrap();
        // Six games of three finalists decide nothing: more rounds were played,
        // and a record without its last round (standings refit to match) is not
        // the plan's.
        assert!(v.rounds >= 2, "{v:?}");
        let all = lines(&record);
        let last_round = (v.rounds - 1) * 3;
        let mut cut: Vec<serde_json::Value> = all
            .iter()
            .filter(|l| l["kind"] != "game" || l["group"].as_u64().unwrap() < last_round)
            .cloned()
            .collect();
        let kept: Vec<ladder::season::FinalsGame> = cut
            .iter()
            .filter(|l| l["kind"] == "game")
            .map(
                |l| match serde_json::from_value::<SeasonLine>(l.clone()).unwrap() {
                    SeasonLine::Game(g) => g,
                    _ => unreachable!(),
                },
            )
            .collect();
        let SeasonLine::Season(head) = serde_json::from_value::<SeasonLine>(all[0].clone()).unwrap() else {
            panic!("the season line first");
        };
        let names: Vec<String> = head.finalists.iter().map(|f| f.name.clone()).collect();
        let seated: Vec<(ladder::season::FinalsGame, Vec<usize>)> = kept
            .into_iter()
            .map(|g| {
                let by_seat = g
                    .record
                    .seats
                    .iter()
                    .map(|s| {
                        names
                            .iter()
                            .position(|n| Some(n.as_str()) == s.entrant.as_deref())
                            .unwrap()
                    })
                    .collect();
                (g, by_seat)
            })
            .collect();
        let refit = ladder::season::final_standings(&names, 2, &seated).unwrap();
        let end = cut.len() - 1;
        cut[end] = serde_json::to_value(SeasonLine::Standings(refit)).unwrap();
        let e = verify(&joined(&cut), None).unwrap_err();
        assert!(
            matches!(&e, VerifyError::Missing(why) if why.contains("asks for a round")),
            "{e}"
        );
        assert_eq!(v.games % 6, 0, "whole rounds only: {v:?}");
        assert!(v.games <= 30, "{v:?}");
        assert_eq!(v.redeals, 1, "{v:?}");
        let SeasonLine::Standings(fs) = serde_json::from_str(record.lines().last().unwrap()).unwrap() else {
            panic!("the record ends with the standings");
        };
        let apart = fs.rows.windows(2).take(2).all(|w| match (w[0].elo, w[1].elo) {
            (Some(a), Some(b)) => a - w[0].ci95.unwrap_or(0.0) > b + w[1].ci95.unwrap_or(0.0),
            _ => false,
        });
        assert!(apart || v.games == 30, "stopped early without separation: {fs:?}");
        assert!(!apart || v.games < 30 || rounds == 5, "{fs:?}");

        // The pages, in a real browser: the closed season and its finals.
        if let Some(browser) = astragal_tests::browser::chromium() {
            let dir = tempfile::tempdir().unwrap();
            let png = workspace_root().join("target/screenshots");
            std::fs::create_dir_all(&png).unwrap();
            let page = format!("http://{}/competitions/autumn", server.web);
            let dom = astragal_tests::browser::dom(&browser, dir.path(), &page);
            assert!(
                dom.contains("data-fact=\"phase\"") && dom.contains("closed"),
                "{dom}"
            );
            assert!(
                dom.contains("Final standings") && dom.contains("LOS over next"),
                "{dom}"
            );
            assert!(dom.contains(&season.master_seed.as_ref().unwrap().to_hex()));
            astragal_tests::browser::screenshot(
                &browser,
                dir.path(),
                &page,
                (980, 1400),
                &png.join(format!("season-closed-{}.png", t.kind)),
            );
            astragal_tests::browser::screenshot(
                &browser,
                dir.path(),
                &page,
                (390, 1600),
                &png.join(format!("season-closed-phone-{}.png", t.kind)),
            );
        }
        server.stop().await;
    }
}
