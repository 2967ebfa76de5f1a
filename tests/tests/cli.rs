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
    // A wrong answer, a call for help, then always the first listed move.
    let input = format!("nonsense\nhelp\n{}", "1\n".repeat(400));
    let (o, out) = human_game(&["--game", "ur", "--seed", "4"], &input);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("You are seat 0 (upper-case letters)"), "{out}");
    assert!(out.contains("\"nonsense\" is not a legal move"), "{out}");
    assert!(out.contains("S swallow, T storm"), "help shows the legend: {out}");
    assert!(
        out.contains("Since you were last asked (your own move included):\n  seat 1 played "),
        "{out}"
    );
    assert!(out.contains("Game over: you "), "a plain result line: {out}");
    assert!(out.contains("seat 0 human"), "{out}");
}

/// `referee play` with a person in seat 0 (typing `input`) against `first`.
fn human_game(game: &[&str], input: &str) -> (Output, String) {
    let mut child = Command::new(binary("referee"))
        .arg("play")
        .args(game)
        .args(["--bot", "human", "--bot", "builtin:first"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The game may end before all is read: the rest is not needed.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let out = text(&o);
    (o, out)
}

/// A person in a match never meets the same dice twice (no mirrored groups: a
/// person remembers), and learns the match's seed, which foretells every die, only
/// once the match is over. Before, the seed was printed before game 1 and each
/// group dealt its dice to the person twice.
#[test]
fn a_person_in_a_match_sees_each_deal_once_and_the_seed_at_the_end() {
    let rec = temp("human-match.jsonl");
    // Both streams into one pipe, so the order of what was said is kept.
    let (mut said, writer) = std::io::pipe().unwrap();
    let mut child = Command::new(binary("referee"))
        .args([
            "match",
            "--game",
            "ur",
            "--games",
            "3",
            "--bot",
            "human",
            "--bot",
            "builtin:first",
        ])
        .arg("--record")
        .arg(&rec)
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all("1\n".repeat(3000).as_bytes());
    drop(stdin);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut said, &mut out).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{out}");
    let records: Vec<referee::GameRecord> = std::fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3, "{out}");
    let seeds: std::collections::HashSet<u64> = records.iter().map(|r| r.seed).collect();
    assert_eq!(seeds.len(), 3, "every game its own dice");
    // The person sat in both seats over the match.
    let human_seats: std::collections::HashSet<usize> = records
        .iter()
        .map(|r| r.seats.iter().position(|s| s.name == "human").unwrap())
        .collect();
    assert_eq!(human_seats.len(), 2, "{human_seats:?}");
    // The seed is said once, after the last game's result.
    let seed_at = out
        .find("match seed ")
        .unwrap_or_else(|| panic!("no seed said: {out}"));
    let last_result = out.rfind("Game over: you ").unwrap_or_else(|| panic!("{out}"));
    assert!(seed_at > last_result, "the seed was said before the end: {out}");
    let _ = std::fs::remove_file(&rec);
}

#[test]
fn a_human_gets_long_move_lists_grouped_and_may_type_a_unique_beginning() {
    // `a` is ambiguous; `c3=6` and later whole moves are not. Cells fill up, so
    // try each in turn: a refused one only costs a line.
    let mut input = String::from("a\n");
    for cell in ["c3", "c2", "c1", "b3", "b2", "b1", "a3", "a2", "a1"] {
        for _ in 0..3 {
            input.push_str(&format!("{cell}=6\n{cell}-\n"));
        }
    }
    let (_, out) = human_game(
        &["--game", "uptick", "--opt", "size=3", "--opt", "reserve=2"],
        &input,
    );
    assert!(out.contains("legal moves, grouped:"), "{out}");
    assert!(out.contains("a1=1/2/3/4/5/6"), "{out}");
    assert!(out.contains("\"a\" could be a1=1, a1=2"), "{out}");
    assert!(out.contains("Game over: you "), "{out}");
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

fn hostile(mode: &str) -> String {
    format!("{} --mode {mode}", binary("hostile_bot").display())
}

#[test]
fn a_match_takes_names_time_controls_per_bot_and_start_positions() {
    let rec = temp("match-named.jsonl");
    let start =
        "to_move=0 phase=primary roll=4 seat0=3,0,9,0,0 seat1=0,0,0,0,11 counters=11,15 pool=24 turn=12";
    let positions = temp("positions.txt");
    std::fs::write(&positions, format!("# one per line\n{start}\n\nto_move=1 phase=primary roll=2 seat0=0,0,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1\n")).unwrap();
    let o = referee(&[
        "match",
        "--game",
        "ur",
        "--games",
        "8",
        "--seed",
        "3",
        "--json",
        "--bot",
        "slow=builtin:random",
        "--bot",
        "builtin:random",
        "--positions-file",
        positions.to_str().unwrap(),
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    let entrants = out["summary"]["entrants"].as_array().unwrap();
    assert_eq!(entrants[0]["name"], "slow");
    assert_eq!(entrants[1]["name"], "random");
    assert_eq!(out["summary"]["games"], 8);
    let starts: Vec<String> = std::fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["start_position"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(
        starts.iter().filter(|s| *s == start).count(),
        4,
        "groups 0 and 2 start there: {starts:?}"
    );
    assert!(
        starts.iter().all(|s| !s.is_empty()),
        "every group starts from a listed position"
    );
    let o = referee(&["replay", rec.to_str().unwrap(), "--json"]);
    let replayed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("replay --json prints JSON");
    assert_eq!(replayed["replayed"], 8, "{replayed}");
    // A line that is not a game: named in `refused`, and the exit status says so.
    std::fs::write(
        &rec,
        format!("{}not a record\n", std::fs::read_to_string(&rec).unwrap()),
    )
    .unwrap();
    let o = referee(&["replay", rec.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let replayed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(replayed["refused"][0]["line"], 9, "{replayed}");
    // Two unnamed copies of one spec are two rows.
    let o = referee(&[
        "match",
        "--game",
        "ur",
        "--games",
        "2",
        "--bot",
        "builtin:random",
        "--bot",
        "builtin:random",
    ]);
    assert!(text(&o).contains("random#2"), "{}", text(&o));
    // A time control for bot 0 only: 20 ms a move is too slow for 5 ms, fine for 5 s.
    let ponder = hostile("ponder");
    let o = referee(&[
        "match",
        "--game",
        "ur",
        "--games",
        "2",
        "--json",
        "--timemargin",
        "0",
        "--bot",
        &ponder,
        "--bot",
        &ponder,
        "--bot-tc",
        "0:5",
    ]);
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let faults: Vec<u64> = out["summary"]["entrants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["faults"].as_u64().unwrap())
        .collect();
    assert!(faults[0] > 0 && faults[1] == 0, "{faults:?}\n{}", text(&o));
    // A position the game refuses stops the match before any game.
    let o = referee(&[
        "match",
        "--game",
        "ur",
        "--bot",
        "builtin:random",
        "--bot",
        "builtin:random",
        "--position",
        "turn=0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn ctrl_c_stops_a_match_with_its_partial_table_and_resume_finishes_it() {
    let rec = temp("interrupted.jsonl");
    let ponder = hostile("ponder"); // 20 ms a move: a game lasts about a second
    let args = |resume: bool| {
        let mut v: Vec<String> = ["match", "--game", "ur", "--games", "6", "--seed", "21", "--json"]
            .into_iter()
            .map(String::from)
            .collect();
        v.extend([
            "--bot".into(),
            ponder.clone(),
            "--bot".into(),
            "builtin:first".into(),
        ]);
        v.extend(["--record".into(), rec.display().to_string()]);
        if resume {
            v.push("--resume".into());
        }
        v
    };
    let child = Command::new(binary("referee"))
        .args(args(false))
        .current_dir(workspace_root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(text(&o).contains("interrupted after"), "{}", text(&o));
    let partial: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the partial summary");
    let played = partial["summary"]["games"].as_u64().unwrap();
    assert!((1..6).contains(&played), "{partial}");
    assert_eq!(
        std::fs::read_to_string(&rec).unwrap().lines().count() as u64,
        played,
        "each finished game recorded"
    );
    // The rest, and the whole: the same as a match played in one go.
    let o = Command::new(binary("referee"))
        .args(args(true))
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let resumed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(resumed["summary"]["games"], 6);
    assert_eq!(resumed["summary"]["resumed"], played);
    assert_eq!(std::fs::read_to_string(&rec).unwrap().lines().count(), 6);
    let _ = std::fs::remove_file(&rec);
    let o = Command::new(binary("referee"))
        .args(args(false))
        .current_dir(workspace_root())
        .output()
        .unwrap();
    let whole: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(resumed["summary"]["entrants"], whole["summary"]["entrants"]);
}

#[test]
fn match_and_play_exit_non_zero_when_a_bot_could_not_start() {
    let o = referee(&[
        "match",
        "--game",
        "ur",
        "--games",
        "2",
        "--bot",
        "builtin:random",
        "--bot",
        "/no/such/bot",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("could not start"), "{}", text(&o));
    let o = referee(&[
        "play",
        "--game",
        "ur",
        "--bot",
        "builtin:random",
        "--bot",
        "/no/such/bot",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).expect("play --json prints the record");
    assert_eq!(rec["faults"][0]["kind"], "spawn");
}

#[test]
fn a_match_keeps_bot_processes_between_games_unless_told_not_to() {
    let bot = format!("{} --mode keepable", env!("CARGO_BIN_EXE_hostile_bot"));
    // Kept: the 3 groups are played in one wave, rotation 0 of each, then
    // (every process quit) rotation 1 of each; a process never lives from one
    // rotation of a group into another: 2 processes. Fresh: one per game.
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

#[test]
fn check_bot_names_the_usual_causes_of_a_silent_handshake() {
    // Answers the handshake, but never flushes: the referee sees nothing.
    let bot = "python3 -c 'import sys\nfor l in sys.stdin:\n    sys.stdout.write(\"id name=x\\nastragalok version=1\\n\")'";
    let o = referee(&["check-bot", bot, "--handshake-timeout", "1500"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("FAIL handshake"), "{out}");
    assert!(out.contains("output not flushed"), "{out}");
    assert!(out.contains("FAILED"), "{out}");
    // What the bot wrote on stderr is shown with it.
    let bot = "python3 -c 'import nosuchmodule'";
    let out = text(&referee(&["check-bot", bot, "--handshake-timeout", "3000"]));
    assert!(out.contains("No module named"), "{out}");
    // Once, with its line breaks, not again inside the fault's one line.
    assert_eq!(out.matches("No module named").count(), 1, "{out}");
    // The report names the game it was made on, first and last.
    let out = text(&referee(&[
        "check-bot",
        bot,
        "--game",
        "cuatto",
        "--opt",
        "seats=3",
    ]));
    assert!(out.starts_with("check-bot on cuatto seats=3\n"), "{out}");
    assert!(out.contains("on cuatto seats=3: FAILED"), "{out}");
}

#[test]
fn check_bot_says_a_debug_line_on_stdout_belongs_on_stderr_once_for_every_game() {
    // Prints a debug line before each move.
    let bot = "python3 -c 'import sys\nfor l in sys.stdin:\n    w = l.split()\n    r = {\"astragal\": \"id name=x\\nastragalok version=1\", \"isready\": \"readyok\"}.get(w[0])\n    r = r or (\"thinking...\\nmove \" + w[1] + \" move=\" + [f for f in w if f.startswith(\"legal=\")][0][6:].split(\",\")[0] if w[0] == \"go\" else None)\n    if r: print(r, flush=True)'";
    let o = referee(&["check-bot", bot, "--games", "4"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("write debug output to stderr"), "{out}");
    // The same fault in every game is said once, with the games it came in.
    assert!(out.contains("games 1, 2, 3, 4: malformed"), "{out}");
    assert_eq!(out.matches("write debug output").count(), 1, "{out}");
}

#[test]
fn check_bot_says_ok_only_for_what_it_saw() {
    // Shakes hands and answers pings, but every move is illegal: no game is played.
    let bot = "python3 -c 'import sys\nfor l in sys.stdin:\n    w = l.split()\n    r = {\"astragal\": \"id name=x\\nastragalok version=1\", \"isready\": \"readyok\"}.get(w[0])\n    r = r or (\"move \" + w[1] + \" move=nonsense\" if w[0] == \"go\" else None)\n    if r: print(r, flush=True)'";
    let o = referee(&["check-bot", bot, "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    assert_eq!(report["passed"], false);
    let status = |check: &str| {
        report["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["check"] == check)
            .map(|i| i["status"].as_str().unwrap().to_owned())
    };
    assert_eq!(status("handshake").as_deref(), Some("ok"));
    assert_eq!(status("games").as_deref(), Some("fail"));
    assert_eq!(status("ids").as_deref(), Some("not_checked"), "{report}");
    assert_eq!(status("speed").as_deref(), Some("not_checked"), "{report}");
    // And a good bot's report in JSON passes.
    let o = referee(&["check-bot", &rust_bot(), "--games", "2", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert!(o.status.success() && report["passed"] == true, "{report}");
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
        astragal_tests::skipped("the JavaScript bot", "node is not on PATH (.ci/run installs it)");
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
    assert!(
        figure(&out, "bare tonic unary echo", "same sizes:") > 0.0,
        "{out}"
    );
    assert!(
        figure(&out, "bare tonic unary echo", "astragal gRPC / echo:") > 0.0,
        "{out}"
    );
    // The request size is that of a real Utara request, observation and all.
    assert!(figure(&out, "protocol:", "request ~") > 200.0, "{out}");
}

/// `referee replay … | head -0` and `ladder ratings … | head -1` panicked (status
/// 101) when the reader closed the pipe. A closed output ends them quietly; and an
/// error prints its chain, never a backtrace, even with `RUST_BACKTRACE` set.
#[test]
fn a_closed_output_ends_quietly_and_errors_never_print_a_backtrace() {
    let rec = temp("closed-pipe.jsonl");
    let o = referee(&[
        "match",
        "--game",
        "ur",
        "--bot",
        "builtin:random",
        "--bot",
        "builtin:first",
        "--games",
        "40",
        "--seed",
        "3",
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let runs: [(std::path::PathBuf, Vec<&str>); 3] = [
        (binary("referee"), vec!["replay", rec.to_str().unwrap()]),
        (binary("referee"), vec!["show", rec.to_str().unwrap()]),
        (
            binary("ladder"),
            vec!["ratings", "--records", rec.to_str().unwrap()],
        ),
    ];
    for (program, args) in &runs {
        // The reading end is closed before the program starts: every write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(program)
            .args(args)
            .current_dir(workspace_root())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    for program in ["referee", "ladder"] {
        let args: &[&str] = if program == "referee" {
            &["replay", "/nonexistent/astragal.jsonl"]
        } else {
            &["ratings", "--records", "/nonexistent/astragal.jsonl"]
        };
        let o = Command::new(binary(program))
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.starts_with(&format!("{program}: ")) && err.contains("/nonexistent/astragal.jsonl"),
            "{err}"
        );
        assert!(!err.to_lowercase().contains("backtrace"), "{err}");
    }
}
