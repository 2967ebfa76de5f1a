//! The deterministic randomized position test: positions taken from random
//! playouts of every game, mutated field by field and character by character. Every
//! mutation the notation accepts must be a consistent state (see
//! `engine::position_check`). Runs in the debug build, so an overflow panics.

use engine::GameRng;
use engine::position_check::{MAX_PLIES, check_position};

/// Game id, options, seats: the setups whose positions are mutated.
const SETUPS: &[(&str, &[&str], usize)] = &[
    ("ur", &[], 2),
    ("ur", &["rules=finkel"], 2),
    ("ur", &["astragal=bone", "max_turns=40"], 2),
    ("uptick", &[], 2),
    ("uptick", &["size=4", "reserve=3", "max_turns=60"], 2),
    ("utara", &[], 2),
    (
        "utara",
        &["blocks=true", "sun=high", "moon=half", "scoring=advanced"],
        3,
    ),
    (
        "utara",
        &[
            "dice=2",
            "sky=3x3",
            "blocks=true",
            "moon=dark",
            "stormy=true",
            "sun=rising",
        ],
        2,
    ),
    ("cuatto", &[], 4),
    (
        "cuatto",
        &["setup=full", "doubles=true", "exact_exit=true", "length=12"],
        3,
    ),
    ("cuatto", &["max_turns=50"], 2),
    ("spartan", &[], 2),
    ("spartan", &["max_turns=3"], 2),
];

/// Numbers that break careless arithmetic, and spellings a strict reader refuses.
const EDGE_VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "9",
    "10",
    "-1",
    "-",
    "255",
    "256",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "+1",
    "01",
    "-0",
    "",
    "1,1",
    "0,0",
    "0,0,0",
    "x",
];

/// Positions from random playouts: every state of `games` games.
fn playout_positions(
    id: &str,
    options: &[&str],
    seats: usize,
    games: u64,
    chooser: &mut GameRng,
) -> Vec<String> {
    let mut out = Vec::new();
    for seed in 0..games {
        let mut game = engine::new_game(id, options, Some(seats), seed).unwrap();
        out.push(game.position());
        while game.outcome().is_none() {
            for seat in game.to_act().iter() {
                let moves = game.legal_moves(seat);
                let mv = &moves[chooser.below(moves.len() as u32) as usize];
                game.play(seat, mv).unwrap();
            }
            out.push(game.position());
        }
    }
    out
}

fn pick<'a, T>(items: &'a [T], rng: &mut GameRng) -> &'a T {
    &items[rng.below(items.len() as u32) as usize]
}

/// One random change to a position: a field's value swapped for an edge value or
/// for the same field of another position, one item of a list changed, a character
/// changed, added or dropped, or a field dropped or repeated.
fn mutate(position: &str, others: &[String], rng: &mut GameRng) -> String {
    let mut fields: Vec<String> = position.split(' ').map(str::to_owned).collect();
    let at = rng.below(fields.len() as u32) as usize;
    let (key, value) = fields[at]
        .split_once('=')
        .map_or((fields[at].clone(), String::new()), |(k, v)| {
            (k.to_owned(), v.to_owned())
        });
    let new_value = match rng.below(8) {
        0 | 1 => pick(EDGE_VALUES, rng).to_string(),
        2 | 3 => {
            let other = pick(others, rng);
            let found = other
                .split(' ')
                .find_map(|f| f.strip_prefix(&format!("{key}=")).map(str::to_owned));
            found.unwrap_or(value)
        }
        4 => {
            let mut items: Vec<String> = value.split(',').map(str::to_owned).collect();
            let i = rng.below(items.len() as u32) as usize;
            items[i] = pick(EDGE_VALUES, rng).to_string();
            items.join(",")
        }
        5 | 6 => {
            let mut chars: Vec<char> = value.chars().collect();
            let alphabet: Vec<char> = "0123456789-,/:#abcdefNESWOC.".chars().collect();
            let i = rng.below(chars.len() as u32 + 1) as usize;
            match rng.below(3) {
                0 if i < chars.len() => chars[i] = *pick(&alphabet, rng),
                1 if i < chars.len() => {
                    chars.remove(i);
                }
                _ => chars.insert(i, *pick(&alphabet, rng)),
            }
            chars.into_iter().collect()
        }
        _ => {
            if rng.coin() {
                fields.remove(at);
            } else {
                let copy = fields[at].clone();
                fields.push(copy);
            }
            return fields.join(" ");
        }
    };
    fields[at] = format!("{key}={new_value}");
    // A second change now and then reaches states one change cannot.
    let mutated = fields.join(" ");
    if rng.below(4) == 0 {
        mutate(&mutated, others, rng)
    } else {
        mutated
    }
}

#[test]
fn every_accepted_mutation_of_a_real_position_is_consistent() {
    let mut rng = GameRng::from_seed(18);
    let mut failures = Vec::new();
    // A panic is a failure like any other: collect them all, with their positions.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for &(id, options, seats) in SETUPS {
        let mut positions = playout_positions(id, options, seats, 6, &mut rng);
        // A few thousand per game, spread over the game's setups.
        let per_setup = 9000 / SETUPS.iter().filter(|s| s.0 == id).count();
        let (mut accepted, mut tried) = (0, 0);
        for i in 0..per_setup {
            let base = positions[rng.below(positions.len() as u32) as usize].clone();
            let mut text = mutate(&base, &positions, &mut rng);
            if i % 3 == 0 {
                // Without its rng, as people write positions.
                text = engine::game::strip_rng(&text);
            }
            tried += 1;
            let with_options: Vec<&str> = options.to_vec();
            let checked =
                std::panic::catch_unwind(|| check_position(id, &with_options, &text, i as u64, MAX_PLIES))
                    .unwrap_or_else(|panic| {
                        let what = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        Err(engine::position_check::Violation {
                            position: text.clone(),
                            what: format!("panicked: {what}"),
                        })
                    });
            match checked {
                Ok(true) => {
                    accepted += 1;
                    if positions.len() < 20_000 {
                        positions.push(text);
                    }
                }
                Ok(false) => {}
                Err(v) => failures.push(format!("{id} {options:?}: {:?}: {}", v.position, v.what)),
            }
        }
        eprintln!("{id} {options:?}: {accepted} of {tried} mutations accepted");
        if accepted == 0 {
            failures.push(format!(
                "{id} {options:?}: no mutation accepted, so nothing was tested"
            ));
        }
    }
    std::panic::set_hook(default_hook);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
