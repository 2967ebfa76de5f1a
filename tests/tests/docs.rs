//! The documents say what the programs do: each rules page's observation table and
//! example, and the transcript in `docs/protocol.md`, are checked against (or made
//! from) real runs, so they cannot go stale.
//!
//! `ASTRAGAL_BLESS=1 cargo test -p astragal-tests --test docs` rewrites the generated
//! parts after a deliberate change.

use astragal_tests::{binary, workspace_root};
use std::process::Command;

fn read(path: &str) -> String {
    std::fs::read_to_string(workspace_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of section `## {title}` of a markdown page, up to the next `## `.
fn section<'a>(page: &'a str, title: &str) -> Option<&'a str> {
    let start = page.find(&format!("\n## {title}\n"))? + 1;
    let rest = &page[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 4);
    Some(&rest[..end])
}

/// Every field path a schema describes: `dice`, `dice[].cell`, `last_reveal.dice`.
fn schema_fields(schema: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for (name, prop) in schema["properties"].as_object().expect("properties") {
        out.push(name.clone());
        let (inner, sep) = if prop["type"] == "array" {
            (&prop["items"]["properties"], "[].")
        } else {
            (&prop["properties"], ".")
        };
        if let Some(inner) = inner.as_object() {
            out.extend(inner.keys().map(|k| format!("{name}{sep}{k}")));
        }
    }
    out
}

#[test]
fn every_rules_page_documents_its_observation_with_a_real_example() {
    for id in engine::GAME_IDS {
        let page = read(&format!("docs/rules/{id}.md"));
        let section = section(&page, "Observation")
            .unwrap_or_else(|| panic!("docs/rules/{id}.md has no `## Observation` section"));
        let schema: serde_json::Value =
            serde_json::from_str(&read(&format!("docs/schemas/{id}.observation.json"))).expect("JSON");
        for field in schema_fields(&schema) {
            assert!(
                section.contains(&format!("| `{field}` |")),
                "docs/rules/{id}.md's observation table has no row for `{field}`"
            );
        }
        // The example: valid, and exactly what the engine shows in that position.
        let example = section
            .split("```json\n")
            .nth(1)
            .and_then(|s| s.split("\n```").next())
            .unwrap_or_else(|| panic!("docs/rules/{id}.md's observation has no ```json example"));
        let example: serde_json::Value = serde_json::from_str(example)
            .unwrap_or_else(|e| panic!("docs/rules/{id}.md's example is not JSON: {e}"));
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        assert!(
            validator.is_valid(&example),
            "{id}: the example does not match the schema"
        );
        let position = example["position"].as_str().expect("position");
        let seat = example["seat"].as_u64().expect("seat") as usize;
        let game = engine::game_from_position::<&str>(id, &[], position, 1)
            .unwrap_or_else(|e| panic!("{id}: the example's position is refused: {e}"));
        let shown: serde_json::Value = serde_json::from_str(&game.observation_json(seat)).unwrap();
        assert_eq!(
            shown, example,
            "{id}: the example is not the observation of its position"
        );
    }
}

/// Runs `referee play` with the wire traced and returns seat 0's side of the
/// conversation, as `referee:`/`bot:` lines. Seat 0 is the Python example bot;
/// the other seats are `astragal-bot --bot random` (both deterministic given the
/// seed, through `salt`).
fn seat0_conversation(game: &str, opts: &[&str], seats: usize, seed: u64) -> Vec<String> {
    let python = "python3 bots/python/random_bot.py";
    let rust = format!("{} --bot random", binary("astragal-bot").display());
    let mut cmd = Command::new(binary("referee"));
    cmd.current_dir(workspace_root())
        .env("RUST_LOG", "referee::wire=trace")
        .args([
            "play",
            "--game",
            game,
            "--seed",
            &seed.to_string(),
            "--movetime",
            "5000",
            "--bot",
            python,
        ]);
    for _ in 1..seats {
        cmd.args(["--bot", &rust]);
    }
    for o in opts {
        cmd.args(["--opt", o]);
    }
    let out = cmd.output().expect("referee runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let suffix = format!(" bot={python}");
    String::from_utf8(out.stderr)
        .expect("UTF-8")
        .lines()
        .filter_map(|l| l.split_once("referee::wire: ").map(|(_, rest)| rest))
        .filter_map(|l| l.strip_suffix(&suffix))
        .map(|l| match l.split_at(2) {
            ("> ", text) => format!("referee: {text}"),
            ("< ", text) => format!("bot:     {text}"),
            _ => panic!("unexpected wire line {l:?}"),
        })
        .collect()
}

fn generated_transcript() -> String {
    let mut s = String::from(
        "Seat 0's side of a real game, `referee play --game ur --seed 4 --opt max_turns=6 --bot \"python3 bots/python/random_bot.py\" --bot \"astragal-bot --bot random\"` (a six-turn cap keeps it short), captured with `RUST_LOG=referee::wire=trace`:\n\n```\n",
    );
    for line in seat0_conversation("ur", &["max_turns=6"], 2, 4) {
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str("```\n\nThe first `go` of the same bot in seat 0 of each other game, with its default options and seed 7:\n");
    for id in engine::GAME_IDS.into_iter().filter(|id| *id != "ur") {
        let seats = engine::game_info(id).expect("known").default_seats;
        let go = seat0_conversation(id, &[], seats, 7)
            .into_iter()
            .find(|l| l.starts_with("referee: go "))
            .unwrap_or_else(|| panic!("{id}: seat 0 was never asked"));
        s.push_str(&format!("\n{id}:\n\n```\n{go}\n```\n"));
    }
    s
}

const BEGIN: &str = "<!-- transcript: generated by tests/tests/docs.rs -->\n";
const END: &str = "<!-- end of transcript -->\n";

#[test]
fn the_protocol_transcript_is_what_the_referee_sends() {
    if !astragal_tests::on_path("python3") {
        astragal_tests::skipped("the protocol transcript", "no python3");
        return;
    }
    let path = workspace_root().join("docs/protocol.md");
    let doc = std::fs::read_to_string(&path).expect("docs/protocol.md");
    let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/protocol.md has no transcript markers ({BEGIN:?} … {END:?})");
    };
    let current = &doc[b + BEGIN.len()..e];
    let fresh = generated_transcript();
    if current != fresh {
        if std::env::var_os("ASTRAGAL_BLESS").is_some() {
            let updated = format!("{}{BEGIN}{fresh}{}", &doc[..b], &doc[e..]);
            std::fs::write(&path, updated).expect("write docs/protocol.md");
        } else {
            let differs = current
                .lines()
                .zip(fresh.lines())
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("documented: {a}\nsent:       {b}"))
                .unwrap_or_else(|| "the lengths differ".into());
            panic!(
                "docs/protocol.md's transcript is stale:\n{differs}\nIf the change is deliberate: ASTRAGAL_BLESS=1 cargo test -p astragal-tests --test docs"
            );
        }
    }
}
