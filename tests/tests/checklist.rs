//! Adding a game: every table that lists the games must list it, and what a game
//! declares about itself must be what it does. The checklist these tests enforce is
//! "Adding a game" in `docs/architecture.md`.

use astragal_tests::CASES;
use engine::registry::resolve_setup;
use engine::{Game, GameRng, GameVisitor};
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
}

/// Whether `bots::search::heuristic` reads this game's observation.
struct HasHeuristic;
impl GameVisitor for HasHeuristic {
    type Output = bool;
    fn visit<G: Game>(self) -> bool {
        let (options, _, seats) = resolve_setup::<G, &str>(&[], None).expect("default options");
        let game = G::new(&options, seats, GameRng::from_seed(1));
        bots::search::heuristic::<G>(&game.observation(0), 0).is_some()
    }
}

#[test]
fn every_game_is_in_every_table() {
    let golden = std::fs::read_to_string(repo().join("tests/data/golden_games.txt")).expect("golden games");
    let mut missing = Vec::new();
    for id in engine::GAME_IDS {
        let mut lacks = |table: &str, ok: bool| {
            if !ok {
                missing.push(format!("{id} is missing from {table}"));
            }
        };
        let info = engine::game_info(id);
        lacks(
            "engine::registry::with_game (the registry)",
            info.as_ref().is_ok_and(|i| i.id == id),
        );
        lacks(
            &format!("docs/rules/{id}.md (its rules page)"),
            repo().join(format!("docs/rules/{id}.md")).is_file(),
        );
        lacks(
            &format!("docs/schemas/{id}.observation.json (its observation's JSON Schema)"),
            repo()
                .join(format!("docs/schemas/{id}.observation.json"))
                .is_file(),
        );
        lacks(
            &format!("engine/tests/{id}.rs (hand-worked positions)"),
            repo().join(format!("engine/tests/{id}.rs")).is_file(),
        );
        lacks(
            "astragal_tests::CASES (the conformance cases)",
            CASES.iter().any(|(g, ..)| *g == id),
        );
        lacks(
            "tests/data/golden_games.txt (pinned games)",
            golden
                .lines()
                .any(|l| l.split('|').next().is_some_and(|g| g.trim() == id)),
        );
        lacks(
            "bots::search::heuristic (the built-in bots' heuristic)",
            engine::with_game(id, HasHeuristic).unwrap_or(false),
        );
        let shown = info.as_ref().map(|i| i.presentation);
        lacks(
            "its Game::PRESENTATION legend (what a person's board means: `referee play --bot human`)",
            shown.is_ok_and(|p| !p.legend.trim().is_empty()),
        );
        lacks(
            &format!("engine/src/games/draw/{id}.js (its board in the viewer, setting DRAW.{id})"),
            repo().join(format!("engine/src/games/draw/{id}.js")).is_file()
                && shown.is_ok_and(|p| p.drawing.contains(&format!("DRAW.{id} = "))),
        );
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// What a random game shows of the game's nature.
struct Observed {
    /// Two seeds gave different games.
    chance: bool,
    /// Some step asked more than one seat.
    simultaneous: bool,
    /// Some seat's public position differed from the full one (the RNG aside).
    hidden: bool,
}

struct Watch<'a> {
    options: &'a [&'a str],
    seats: Option<usize>,
}

impl GameVisitor for Watch<'_> {
    type Output = Observed;
    fn visit<G: Game>(self) -> Observed {
        let (options, _, seats) = resolve_setup::<G, _>(self.options, self.seats).expect("options");
        let mut seen = Observed {
            chance: false,
            simultaneous: false,
            hidden: false,
        };
        let mut histories = Vec::new();
        for seed in 0..6u64 {
            let mut game = G::new(&options, seats, GameRng::from_seed(seed));
            let mut chooser = GameRng::from_seed(99);
            let mut moves = Vec::new();
            let mut history = Vec::new();
            for _ in 0..5_000 {
                let to_act = game.to_act();
                if to_act.is_empty() {
                    break;
                }
                seen.simultaneous |= to_act.len() > 1;
                let full = game.position_without_rng();
                seen.hidden |= (0..game.seats()).any(|s| game.public_position(s) != full);
                let seat = to_act.iter().next().expect("a seat to act");
                moves.clear();
                game.legal_moves(seat, &mut moves);
                let mv = moves[chooser.below(moves.len() as u32) as usize].clone();
                history.push(mv.to_string());
                game.play(seat, &mv).expect("a legal move plays");
            }
            histories.push(history);
        }
        seen.chance = histories.windows(2).any(|w| w[0] != w[1]);
        seen
    }
}

#[test]
fn every_game_is_what_it_declares() {
    for (id, options, seats) in CASES {
        let info = engine::game_info(id).unwrap();
        let seen = engine::with_game(
            id,
            Watch {
                options,
                seats: *seats,
            },
        )
        .unwrap();
        let declared = info.nature;
        assert_eq!(seen.chance, declared.chance, "{id} {options:?}: chance");
        assert_eq!(
            seen.simultaneous, declared.simultaneous,
            "{id} {options:?}: simultaneous moves"
        );
        assert_eq!(
            seen.hidden, declared.hidden_information,
            "{id} {options:?}: hidden information"
        );
    }
}

/// The backticked spans of the section of `docs/architecture.md` headed `heading`.
fn spans_of_section(heading: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).expect("the architecture doc");
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let body = &doc[start + heading.len()..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    body.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// Whether `name` is defined (a fn, type, const, field or module) in a Rust
/// file under `dir`.
fn defined_under(dir: &Path, name: &str) -> bool {
    let forms = [
        format!("fn {name}("),
        format!("fn {name}<"),
        format!("struct {name} "),
        format!("struct {name}<"),
        format!("enum {name} "),
        format!("const {name}:"),
        format!("pub {name}:"),
        format!("mod {name};"),
        // An enum's variant.
        format!("    {name}(String)"),
    ];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                if forms.iter().any(|f| text.contains(f.as_str())) {
                    return true;
                }
            }
        }
    }
    false
}

/// What of the spans is not so: a path (with a `/`) that does not exist (a
/// `<name>` in it is the reader's own), or a Rust item (`a::b`, `Name`) that
/// no file under `ladder/src` or `tests` defines.
fn untrue_spans(spans: &[String]) -> Vec<String> {
    let mut untrue = Vec::new();
    for span in spans {
        if span.contains('<') && span.contains('/') {
            let known = span.split("/<").next().unwrap_or_default();
            if !repo().join(known).exists() {
                untrue.push(format!("{span}: no {known}"));
            }
        } else if span.contains('/') {
            if !repo().join(span).exists() {
                untrue.push(format!("{span}: no such path"));
            }
        } else if span.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            let name = span.rsplit("::").next().unwrap_or(span);
            if !defined_under(&repo().join("ladder/src"), name) && !defined_under(&repo().join("tests"), name)
            {
                untrue.push(format!("{span}: {name} is defined nowhere"));
            }
        }
    }
    untrue
}

#[test]
fn adding_a_front_end_names_only_paths_and_items_that_exist() {
    let spans = spans_of_section("## Adding a front end to the ladder");
    assert!(spans.len() > 15, "the checklist names too little: {spans:?}");
    let untrue = untrue_spans(&spans);
    assert!(
        untrue.is_empty(),
        "the checklist is out of date:\n{}",
        untrue.join("\n")
    );
}

#[test]
fn the_checklist_check_finds_a_missing_path_and_an_undefined_item() {
    let spans: Vec<String> = [
        "ladder/src/app/views.rs",
        "ladder/src/nowhere.rs",
        "LadderService::caller",
        "LadderService::vanish",
        "ladder/src/<name>/mod.rs",
    ]
    .map(str::to_owned)
    .to_vec();
    let untrue = untrue_spans(&spans);
    assert_eq!(untrue.len(), 2, "{untrue:?}");
    assert!(
        untrue[0].contains("nowhere.rs") && untrue[1].contains("vanish"),
        "{untrue:?}"
    );
}
