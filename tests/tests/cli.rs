//! The `referee` command as users run it, with the example bots in every language.

use astragal_tests::{binary, on_path, workspace_root};
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn referee(args: &[&str]) -> Output {
    Command::new(binary("referee"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("referee runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("astragal-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn rust_bot() -> String {
    format!("{} --bot random", binary("astragal-bot").display())
}

#[test]
fn play_records_and_replay_checks_the_record() {
    let rec = temp("play.jsonl");
    let o = referee(&[
        "play",
        "--game",
        "ur",
        "--seed",
        "42",
        "--bot",
        "builtin:random",
        "--bot",
        &rust_bot(),
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ur seed 42"), "{}", text(&o));
    let o = referee(&["replay", rec.to_str().unwrap()]);
    assert!(
        o.status.success() && text(&o).contains("1 games replayed identically, 0 lines refused"),
        "{}",
        text(&o)
    );
    let o = referee(&["show", rec.to_str().unwrap()]);
    assert!(
        o.status.success() && text(&o).contains("result (normal)"),
        "{}",
        text(&o)
    );
    // A record whose moves were edited no longer replays, and the command says so.
    let original = std::fs::read_to_string(&rec).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(original.trim()).unwrap();
    value["outcome"]["ranks"] = serde_json::json!([2, 2]);
    std::fs::write(&rec, format!("{value}\n")).unwrap();
    let o = referee(&["replay", rec.to_str().unwrap()]);
    assert!(!o.status.success(), "a forged outcome must fail: {}", text(&o));
    assert!(text(&o).contains("outcome differs"), "{}", text(&o));
}

#[test]
fn the_same_seed_and_bots_give_the_same_game() {
    let (a, b) = (temp("same-a.jsonl"), temp("same-b.jsonl"));
    for path in [&a, &b] {
        let o = referee(&[
            "play",
            "--game",
            "cuatto",
            "--seed",
            "9",
            "--bot",
            "builtin:random?seed=3",
            "--bot",
            "builtin:first",
            "--bot",
            "builtin:random",
            "--record",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let moves = |p: &std::path::Path| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(std::fs::read_to_string(p).unwrap().trim()).unwrap();
        v["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["move"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(moves(&a), moves(&b));
}

#[test]
fn a_game_can_start_from_a_position() {
    // Uptick four moves in, one die each placed: seat 0 to move, its 2 on a1 can
    // take the 1 on a3.
    let position = "board=8/8/8/8/8/a7/8/B7 to_move=0 reserve=7,7 captured=0,0 last=1 turn=4";
    let rec = temp("position.jsonl");
    let o = referee(&[
        "play",
        "--game",
        "uptick",
        "--position",
        position,
        "--bot",
        "builtin:first",
        "--bot",
        "builtin:first",
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&rec).unwrap().trim()).unwrap();
    assert_eq!(v["start_position"], position);
    assert!(referee(&["replay", rec.to_str().unwrap()]).status.success());
    let o = referee(&[
        "play",
        "--game",
        "uptick",
        "--position",
        "board=8/8",
        "--bot",
        "builtin:first",
        "--bot",
        "builtin:first",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("expected 8 ranks"),
        "{}",
        text(&o)
    );
}

#[test]
fn bad_input_gets_a_clear_error() {
    let cases: [(&[&str], &str); 6] = [
        (
            &[
                "play",
                "--game",
                "chess",
                "--bot",
                "builtin:random",
                "--bot",
                "builtin:random",
            ],
            "unknown game \"chess\"",
        ),
        (
            &["play", "--game", "ur", "--bot", "builtin:random"],
            "game ur is for 2 to 2 seats, not 1",
        ),
        (
            &[
                "play",
                "--game",
                "ur",
                "--opt",
                "rules=modern",
                "--bot",
                "builtin:random",
                "--bot",
                "builtin:random",
            ],
            "expected one of tablet|finkel",
        ),
        (
            &[
                "play",
                "--game",
                "ur",
                "--bot",
                "builtin:deep",
                "--bot",
                "builtin:random",
            ],
            "no built-in bot \"deep\"",
        ),
        (
            &[
                "play",
                "--game",
                "ur",
                "--tc",
                "fast",
                "--bot",
                "builtin:random",
                "--bot",
                "builtin:random",
            ],
            "base+increment",
        ),
        (&["show", "/no/such/file.jsonl"], "/no/such/file.jsonl"),
    ];
    for (args, needle) in cases {
        let o = referee(args);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(text(&o).contains(needle), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
}

#[test]
fn games_lists_every_game_and_option() {
    let o = referee(&["games"]);
    assert!(o.status.success());
    for id in engine::GAME_IDS {
        assert!(
            text(&o).contains(&format!("{id} —")),
            "{id} missing: {}",
            text(&o)
        );
    }
    assert!(text(&o).contains("exact_exit"));
}

#[test]
fn a_human_plays_at_the_terminal() {
    let mut child = Command::new(binary("referee"))
        .args([
            "play",
            "--game",
            "uptick",
            "--opt",
            "size=3",
            "--opt",
            "reserve=2",
            "--bot",
            "human",
            "--bot",
            "builtin:first",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A wrong answer first, then always the first listed move.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"nonsense\n").unwrap();
    for _ in 0..50 {
        let _ = stdin.write_all(b"1\n");
    }
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("is not one of the moves above"), "{}", text(&o));
    assert!(text(&o).contains("seat 0 human"), "{}", text(&o));
}

#[test]
fn a_match_prints_a_summary_per_bot() {
    let rec = temp("match.jsonl");
    let o = referee(&[
        "match",
        "--game",
        "spartan",
        "--games",
        "6",
        "--concurrency",
        "2",
        "--bot",
        "builtin:random",
        "--bot",
        &rust_bot(),
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("6 games"), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(&rec).unwrap().lines().count(),
        6,
        "every game recorded"
    );
    let o = referee(&["replay", rec.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_match_keeps_bot_processes_between_games_unless_told_not_to() {
    let bot = format!("{} --mode keepable", env!("CARGO_BIN_EXE_hostile_bot"));
    // Kept: one process per rotation (a process never plays two games of one
    // mirrored group). Fresh: one per game.
    for (fresh, processes) in [(false, 2), (true, 6)] {
        let rec = temp(&format!("keep-{fresh}.jsonl"));
        let mut args = vec![
            "match",
            "--game",
            "ur",
            "--games",
            "6",
            "--bot",
            "builtin:first",
            "--bot",
            &bot,
        ];
        args.extend(["--record", rec.to_str().unwrap()]);
        if fresh {
            args.push("--fresh-bots");
        }
        let o = referee(&args);
        assert!(o.status.success(), "{}", text(&o));
        let records = referee::record::read_all(&rec).unwrap();
        assert_eq!(records.len(), 6);
        // The keepable bot names itself after its process id.
        let names: std::collections::BTreeSet<&str> = records
            .iter()
            .flat_map(|r| r.seats.iter().map(|s| s.name.as_str()))
            .filter(|n| n.starts_with("hostile-keepable-"))
            .collect();
        assert_eq!(names.len(), processes, "fresh_bots={fresh}: {names:?}");
        // The process that played rotation 1 of a group never saw rotation 0 of it.
        let keepable = |r: &referee::GameRecord| {
            r.seats
                .iter()
                .find(|s| s.name.starts_with("hostile-keepable-"))
                .map(|s| s.name.clone())
        };
        for group in 0..3 {
            let of = |rotation| {
                records
                    .iter()
                    .find(|r| {
                        r.pairing
                            .is_some_and(|p| p.group == group && p.rotation == rotation)
                    })
                    .and_then(keepable)
            };
            assert_ne!(of(0), of(1), "group {group}: one process played both rotations");
        }
    }
}

#[test]
fn check_bot_passes_a_good_bot_and_fails_a_bad_one() {
    let o = referee(&["check-bot", &rust_bot(), "--game", "ur", "--games", "2"]);
    assert!(
        o.status.success() && text(&o).contains("7/7 checks passed"),
        "{}",
        text(&o)
    );
    let o = referee(&[
        "check-bot",
        "python3 -c 'import sys; print(\"hello\")'",
        "--game",
        "ur",
    ]);
    assert!(!o.status.success());
    assert!(text(&o).contains("FAIL handshake"), "{}", text(&o));
}

/// Every example bot plays every game through the referee, without a fault.
#[test]
fn every_example_bot_plays_every_game() {
    let mut bots = vec![
        "python3 bots/python/random_bot.py".to_owned(),
        "python3 bots/python/heuristic_bot.py".to_owned(),
        rust_bot(),
        format!("{} --bot first", binary("astragal-bot").display()),
    ];
    if on_path("node") {
        bots.push("node bots/js/random_bot.js".to_owned());
    } else {
        eprintln!("node is not on PATH: the JavaScript bot is not tested here (.ci/run installs node)");
    }
    for game in engine::GAME_IDS {
        let seats = engine::game_info(game).unwrap().default_seats;
        for (i, bot) in bots.iter().enumerate() {
            let mut args = vec!["play", "--game", game, "--seed", "3"];
            let others = bots[(i + 1) % bots.len()].clone();
            let table: Vec<String> = (0..seats)
                .map(|s| if s == 0 { bot.clone() } else { others.clone() })
                .collect();
            for b in &table {
                args.push("--bot");
                args.push(b);
            }
            let o = referee(&args);
            assert!(o.status.success(), "{game} {bot}: {}", text(&o));
            assert!(!text(&o).contains("fault"), "{game} {bot}: {}", text(&o));
        }
    }
}

/// The number after `prefix` on the line that starts with it.
fn figure(out: &str, prefix: &str, after: &str) -> f64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{out}"));
    let rest = &line[line
        .find(after)
        .unwrap_or_else(|| panic!("no {after:?} in {line:?}"))
        + after.len()..];
    let number: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number
        .parse()
        .unwrap_or_else(|_| panic!("no number after {after:?} in {line:?}"))
}

#[test]
fn bench_reports_every_figure() {
    // Tiny sizes: this checks the report, not the machine (figures are for people,
    // and timing assertions would be flaky).
    let o = referee(&[
        "bench",
        "--game",
        "utara",
        "--decisions",
        "400",
        "--games",
        "4",
        "--rounds",
        "1",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(figure(&out, "protocol:", "protocol:") > 0.0, "{out}");
    assert!(figure(&out, "raw pipes:", "raw pipes:") > 0.0, "{out}");
    // One round: the median is that round's ratio.
    assert_eq!(
        figure(&out, "protocol / raw:", "protocol / raw:"),
        figure(&out, "protocol / raw:", "per-round ratios:"),
        "{out}"
    );
    let work = figure(&out, "referee's own work:", "work:");
    assert!(work > 0.0 && work < 10_000.0, "{out}");
    assert!(
        figure(&out, "raw pipes pausing", "before each round trip:") > 0.0,
        "{out}"
    );
    assert!(
        figure(&out, "raw pipes pausing", "protocol / that:") > 0.0,
        "{out}"
    );
    assert!(figure(&out, "whole games:", "whole games:") > 0.0, "{out}");
    // The request size is that of a real Utara request, observation and all.
    assert!(figure(&out, "protocol:", "request ~") > 200.0, "{out}");
}
