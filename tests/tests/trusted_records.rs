//! What a dishonest worker or a hostile bot could put in a record, refused: faults
//! the game contradicts, mangled records of every shape (an error, never a panic),
//! move texts other than the referee's own, and a torn last line in a record file.

use astragal_tests::{binary, forged_faults, play_guarded};
use engine::MoveError;
use referee::record::{self, GameRecord};
use referee::replay::{ReplayError, replay};
use referee::{BotSpec, SeatSetup};

/// A small deterministic generator for the mangling (the test must repeat).
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn builtin(name: &str) -> SeatSetup {
    SeatSetup::new(BotSpec::parse(&format!("builtin:{name}")).unwrap())
}

fn genuine(game: &str, seed: u64) -> GameRecord {
    let rec = play_guarded(game, &[builtin("random"), builtin("first")], seed);
    replay(&rec).expect("a genuine record replays");
    rec
}

#[test]
fn every_forged_fault_is_refused_by_replay() {
    for (game, seed) in [
        ("ur", 3),
        ("uptick", 4),
        ("spartan", 5),
        ("cuatto", 6),
        ("utara", 7),
    ] {
        let rec = genuine(game, seed);
        for (what, forged) in forged_faults(&rec) {
            let e = replay(&forged).expect_err(what);
            assert!(
                matches!(e, ReplayError::Fault { .. } | ReplayError::Unfinished { .. }),
                "{game}: {what}: refused for another reason: {e}"
            );
        }
    }
}

#[test]
fn faults_the_referee_really_charges_replay() {
    // A timeout, a setup fault, and fallbacks for a faulted seat of three.
    let hostile = |mode: &str| {
        SeatSetup::new(BotSpec::Process {
            command: format!("{} --mode {mode} --after 3", binary("hostile_bot").display()),
        })
    };
    let slow = play_guarded("ur", &[builtin("first"), hostile("sleep")], 9);
    assert_eq!(slow.faults.len(), 1, "{:?}", slow.faults);
    replay(&slow).unwrap();
    let missing = SeatSetup::new(BotSpec::Process {
        command: "/no/such/bot".into(),
    });
    let spawn = play_guarded("ur", &[missing, builtin("first")], 9);
    assert!(spawn.faults[0].setup, "{:?}", spawn.faults);
    replay(&spawn).unwrap();
    let three = play_guarded(
        "cuatto",
        &[builtin("first"), hostile("illegal"), builtin("random")],
        9,
    );
    assert!(three.moves.iter().any(|m| m.fallback), "fallbacks were played");
    replay(&three).unwrap();
    // The fallbacks are checked: another legal move in their place is refused.
    let mut swapped = three.clone();
    let i = swapped.moves.iter().position(|m| m.fallback).unwrap();
    swapped.moves[i].fallback = false;
    assert!(replay(&swapped).is_err());
}

/// Changes one random part of a record's JSON.
fn mangle(value: &mut serde_json::Value, rng: &mut SplitMix64) {
    use serde_json::Value;
    // Walk to a random node.
    let mut node = value;
    loop {
        let children = match node {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if children == 0 || rng.below(3) == 0 {
            break;
        }
        let pick = rng.below(children as u64) as usize;
        node = match node {
            Value::Object(m) => m.values_mut().nth(pick).unwrap(),
            Value::Array(a) => &mut a[pick],
            _ => unreachable!(),
        };
    }
    let numbers = [
        0i128,
        1,
        2,
        7,
        -1,
        255,
        256,
        u32::MAX as i128,
        u64::MAX as i128,
        i64::MIN as i128,
    ];
    *node = match rng.below(9) {
        0 => serde_json::json!(
            numbers[rng.below(numbers.len() as u64) as usize]
                .to_string()
                .parse::<f64>()
                .unwrap()
        ),
        1 => match numbers[rng.below(numbers.len() as u64) as usize] {
            n if n >= 0 => serde_json::json!(n as u64),
            n => serde_json::json!(n as i64),
        },
        2 => Value::Null,
        3 => Value::String("\u{1b}[2J swallow:99 \u{0}".into()),
        4 => Value::Array(vec![]),
        5 => match node.take() {
            Value::Array(mut a) if !a.is_empty() => {
                let copy = a[rng.below(a.len() as u64) as usize].clone();
                a.push(copy);
                Value::Array(a)
            }
            Value::Array(mut a) => {
                a.reverse();
                Value::Array(a)
            }
            Value::Object(mut m) => {
                if let Some(k) = m.keys().nth(rng.below(m.len().max(1) as u64) as usize).cloned() {
                    m.remove(&k);
                }
                Value::Object(m)
            }
            other => other,
        },
        6 => Value::Bool(rng.below(2) == 0),
        7 => serde_json::json!({"seat": 7, "kind": "timeout", "detail": "", "at_move": 3}),
        _ => match node.take() {
            Value::String(s) => Value::String(format!("{s}0")),
            Value::Number(n) => serde_json::json!(n.as_u64().map_or(0, |v| v.wrapping_add(1))),
            other => other,
        },
    };
}

#[test]
fn mangled_records_are_refused_with_a_reason_and_never_panic() {
    let sources: Vec<GameRecord> = [
        ("ur", 1),
        ("uptick", 2),
        ("spartan", 3),
        ("cuatto", 4),
        ("utara", 5),
    ]
    .into_iter()
    .map(|(g, s)| genuine(g, s))
    .collect();
    let mut rng = SplitMix64::new(0x5eed);
    let (mut refused, mut parsed) = (0, 0);
    for round in 0..3000 {
        let source = &sources[round % sources.len()];
        let mut value = serde_json::to_value(source).unwrap();
        for _ in 0..1 + rng.below(3) {
            mangle(&mut value, &mut rng);
        }
        let text = value.to_string();
        let Ok(rec) = serde_json::from_str::<GameRecord>(&text) else {
            continue;
        };
        parsed += 1;
        let result = std::panic::catch_unwind(|| replay(&rec));
        match result {
            Err(_) => panic!("replay panicked on {text}"),
            Ok(Err(e)) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
            Ok(Ok(())) => {
                // Accepted: then it is the same game (only what replay does not
                // judge, such as times, info or names, may differ).
                assert_eq!(
                    (
                        &rec.moves.iter().map(|m| (&m.mv, m.seat)).collect::<Vec<_>>(),
                        &rec.faults.len(),
                        &rec.outcome
                    ),
                    (
                        &source.moves.iter().map(|m| (&m.mv, m.seat)).collect::<Vec<_>>(),
                        &source.faults.len(),
                        &source.outcome
                    ),
                    "{text}"
                );
            }
        }
    }
    assert!(parsed > 250 && refused > 80, "{parsed} parsed, {refused} refused");
}

/// Other spellings of a move text: spaces and tabs around it, zeros and plus
/// signs before its numbers, its letters in upper case.
fn respellings(mv: &str) -> Vec<String> {
    let mut out = vec![
        format!(" {mv}"),
        format!("{mv} "),
        format!("\t{mv}"),
        mv.to_uppercase(),
    ];
    let digits: Vec<usize> = mv
        .char_indices()
        .filter(|&(i, c)| c.is_ascii_digit() && !mv[..i].ends_with(|p: char| p.is_ascii_digit()))
        .map(|(i, _)| i)
        .collect();
    for &i in &digits {
        out.push(format!("{}0{}", &mv[..i], &mv[i..]));
        out.push(format!("{}+{}", &mv[..i], &mv[i..]));
    }
    out.retain(|s| s != mv);
    out
}

#[test]
fn only_the_referees_own_move_text_is_taken() {
    let mut rng = SplitMix64::new(77);
    let mut tried = 0;
    for (game, options, seats) in astragal_tests::CASES {
        let options: Vec<String> = options.iter().map(|s| (*s).to_owned()).collect();
        let mut g = engine::new_game(game, &options, *seats, rng.next()).unwrap();
        for _ in 0..60 {
            let to_act = g.to_act();
            let Some(seat) = to_act.iter().next() else { break };
            let legal = g.legal_moves(seat);
            for mv in legal.iter().take(8) {
                for other in respellings(mv) {
                    let mut copy = g.clone_box();
                    match copy.play(seat, &other) {
                        Err(MoveError::Parse(_)) => tried += 1,
                        Err(e) => panic!("{game}: {other:?} for {mv:?}: refused as {e}, not as a spelling"),
                        Ok(_) => panic!("{game}: {other:?} was taken for {mv:?}"),
                    }
                }
            }
            let pick = &legal[rng.below(legal.len() as u64) as usize];
            g.play(seat, pick).unwrap();
        }
    }
    assert!(tried > 1000, "{tried} respellings tried");
}

#[test]
fn a_torn_last_line_costs_that_line_only() {
    let dir = std::env::temp_dir().join(format!("astragal-torn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("games.jsonl");
    let _ = std::fs::remove_file(&path);
    let a = genuine("ur", 11);
    let b = genuine("uptick", 12);
    record::append(&path, &a).unwrap();
    // A crash while appending: half a record, no line break.
    let whole = serde_json::to_string(&b).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &whole.as_bytes()[..whole.len() / 2]))
        .unwrap();
    record::append(&path, &b).unwrap();
    let lines = record::read_lines(&path).unwrap();
    assert_eq!(lines.records.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(lines.bad.len(), 1);
    assert_eq!(lines.bad[0].0, 2);

    // `referee replay` replays the good lines, names the bad one, and fails.
    let o = std::process::Command::new(binary("referee"))
        .args(["replay", path.to_str().unwrap()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("games.jsonl:2:"), "{out}");
    assert!(
        out.contains("2 games replayed identically, 1 lines refused"),
        "{out}"
    );

    // An empty file is an error, not "0 games".
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let o = std::process::Command::new(binary("referee"))
        .args(["replay", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("empty"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_record_of_an_older_engine_replays_or_names_the_engine_it_needs() {
    // Tablet Ur did not change in 0.2.0: a record made by 0.1.0 replays.
    let mut rec = genuine("ur", 3);
    rec.engine = "0.1.0".into();
    replay(&rec).expect("an unchanged game replays whatever engine made it");
    // Finkel Ur counts turns differently since 0.2.0, so a 0.1.0 record's final
    // position (its turn count) is not what this engine reaches.
    let setup = referee::GameSetup {
        game: "ur".into(),
        options: vec!["rules=finkel".into()],
        seed: 11,
        position: None,
        pairing: None,
    };
    let seats = [builtin("random"), builtin("first")];
    let mut rec = referee::play_game(
        &setup,
        &seats,
        &astragal_tests::fast_limits(),
        &referee::LogPlace::default(),
    )
    .unwrap();
    replay(&rec).expect("a genuine record replays");
    let turn = |p: &str| {
        p.split(' ')
            .find_map(|f| f.strip_prefix("turn="))
            .unwrap()
            .to_owned()
    };
    let now = turn(&rec.final_position);
    let then = (now.parse::<u32>().unwrap() + 9).to_string();
    rec.final_position = rec
        .final_position
        .replace(&format!("turn={now}"), &format!("turn={then}"));
    rec.engine = "0.1.0".into();
    let e = replay(&rec).unwrap_err();
    assert!(matches!(e, ReplayError::EngineVersion { .. }), "{e}");
    let text = e.to_string();
    for needle in [
        "made by engine 0.1.0",
        "engine 0.1.x",
        "a turn is all of a player's rolls",
        "final position differs",
    ] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
    // The same difference in a record of this engine is just a difference.
    rec.engine = engine::ENGINE_VERSION.into();
    let e = replay(&rec).unwrap_err();
    assert!(matches!(e, ReplayError::Position { .. }), "{e}");
}
