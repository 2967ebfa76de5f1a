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

/// The commands a page gives for `ladder` and `referee`: each line of its
/// shell blocks (continuations joined, comments dropped) and each inline code
/// span that starts with one of the programs (wrapped over lines in the text).
fn commands_of(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut shell = false;
    let mut joined = String::new();
    for line in page.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            in_block = !in_block;
            shell = in_block && matches!(info.trim(), "sh" | "bash" | "shell" | "");
            continue;
        }
        if in_block {
            if !shell {
                continue;
            }
            let (body, more) = match line.trim_end().strip_suffix('\\') {
                Some(b) => (b, true),
                None => (line, false),
            };
            joined.push_str(body);
            joined.push(' ');
            if !more {
                out.push(std::mem::take(&mut joined));
            }
        }
    }
    // Inline spans: a page's prose wraps them, so they are read from the page
    // with its line breaks made spaces, outside its blocks.
    let prose: String = page
        .split("```")
        .step_by(2)
        .collect::<Vec<_>>()
        .join(" ")
        .replace('\n', " ");
    for span in prose.split('`').skip(1).step_by(2) {
        if ["ladder ", "referee ", "target/release/"]
            .iter()
            .any(|p| span.starts_with(p))
        {
            out.push(span.to_owned());
        }
    }
    out
}

/// `--help` of `program` with its subcommand path, cached.
fn help_of(cache: &mut std::collections::HashMap<Vec<String>, String>, path: &[String]) -> String {
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let out = Command::new(binary(&path[0]))
                .args(&path[1..])
                .arg("--help")
                .output()
                .unwrap();
            assert!(out.status.success(), "{} --help failed", path.join(" "));
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .clone()
}

/// The subcommands a `--help` lists.
fn subcommands(help: &str) -> Vec<String> {
    help.split("Commands:\n")
        .nth(1)
        .unwrap_or("")
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// Why `command` does not parse as the programs' `--help` says, if it does not:
/// every subcommand exists and every flag is one its (sub)command takes.
fn misuse(cache: &mut std::collections::HashMap<Vec<String>, String>, command: &str) -> Option<String> {
    // A comment is not part of the command; `...` and `[--flag X]` stand for more.
    let command = command.split(" # ").next().unwrap_or(command);
    let command = command.replace(['[', ']'], " ");
    let words = shlex::split(&command)?;
    let start = words.iter().position(|w| {
        let name = w.rsplit('/').next().unwrap_or(w);
        name == "ladder" || name == "referee"
    })?;
    let program = words[start]
        .rsplit('/')
        .next()
        .unwrap_or(&words[start])
        .to_owned();
    let mut path = vec![program];
    let mut rest = words[start + 1..].iter().peekable();
    while let Some(word) = rest.next() {
        if word == "..." || word == "|" || word == "&&" || word == ">" {
            if word != "..." {
                break;
            }
            continue;
        }
        let help = help_of(cache, &path);
        if let Some(flag) = word.strip_prefix("--") {
            let name = flag.split('=').next().unwrap_or(flag);
            let line = help
                .lines()
                .find(|l| l.trim_start().split([' ', ',']).any(|w| w == format!("--{name}")));
            let Some(line) = line else {
                return Some(format!("`{}` takes no --{name}", path.join(" ")));
            };
            // A flag with a value takes the next word, unless given with `=`.
            if !flag.contains('=') && line.contains(&format!("--{name} <")) {
                rest.next();
            }
            continue;
        }
        if word.starts_with('-') {
            continue;
        }
        if subcommands(&help).contains(word) {
            path.push(word.clone());
        }
    }
    None
}

/// Every `ladder` and `referee` command in the hosting guide, the starter kits'
/// READMEs and the Python package's parses as the programs say (`--help`): no flag a command does
/// not take (`ladder serve --web`, `referee check-bot --bot`), no subcommand
/// that does not exist.
#[test]
fn every_command_in_the_hosting_guide_and_the_starters_is_one_the_programs_take() {
    let mut pages = vec![
        "docs/hosting.md".to_owned(),
        "bots/starters/README.md".to_owned(),
        "python/README.md".to_owned(),
    ];
    for kit in std::fs::read_dir(workspace_root().join("bots/starters")).unwrap() {
        let readme = kit.unwrap().path().join("README.md");
        if readme.is_file() {
            pages.push(
                readme
                    .strip_prefix(workspace_root())
                    .unwrap()
                    .display()
                    .to_string(),
            );
        }
    }
    let mut cache = std::collections::HashMap::new();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for page in &pages {
        for command in commands_of(&read(page)) {
            if let Some(why) = misuse(&mut cache, &command) {
                wrong.push(format!("{page}: `{}`: {why}", command.trim()));
            }
            checked += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked >= 40, "the pages' commands were found ({checked})");
}

/// The checker finds what it is for: a flag of another command, a misplaced bot.
#[test]
fn the_command_checker_catches_the_mistakes_it_was_made_for() {
    let mut cache = std::collections::HashMap::new();
    for bad in [
        "ladder serve --db sqlite:x.db --web 0.0.0.0:8080",
        "referee check-bot --game ur --bot \"python3 bot.py\"",
        "ladder admin open x --game ur --no-such-flag",
    ] {
        assert!(misuse(&mut cache, bad).is_some(), "{bad} passed");
    }
    for good in [
        "ladder serve --db sqlite:x.db --http 0.0.0.0:8080",
        "referee check-bot \"python3 bot.py\" --game ur",
        "ladder admin --server http://x:1 gc --dry-run",
    ] {
        assert_eq!(misuse(&mut cache, good), None, "{good}");
    }
}
