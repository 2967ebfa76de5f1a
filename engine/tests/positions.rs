//! The deterministic randomized position test: positions taken from random
//! playouts of every game, mutated field by field and character by character. Every
//! mutation the notation accepts must be a consistent state (see
//! `engine::position_check`). Runs in the debug build, so an overflow panics.

use engine::GameRng;
use engine::position_check::{MAX_PLIES, SETUPS, check_position, playout_positions};

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
        let mut positions: Vec<String> = (0..6)
            .flat_map(|seed| playout_positions(id, options, seats, seed, &mut rng, usize::MAX))
            .collect();
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

#[test]
fn a_mutated_move_is_refused_or_is_exactly_a_move_the_game_writes() {
    let mut rng = GameRng::from_seed(1818);
    let alphabet: Vec<char> = "0123456789+-:=x ,abcdefghoNESWswallowreroll".chars().collect();
    for &(id, options, seats) in SETUPS {
        let mut game = engine::new_game(id, options, Some(seats), 3).unwrap();
        let mut tried = 0;
        while game.outcome().is_none() {
            let seat = game.to_act().first().unwrap();
            let legal = game.legal_moves(seat);
            for _ in 0..20 {
                let mut chars: Vec<char> = pick(&legal, &mut rng).chars().collect();
                let i = rng.below(chars.len() as u32 + 1) as usize;
                match rng.below(3) {
                    0 if i < chars.len() => chars[i] = *pick(&alphabet, &mut rng),
                    1 if i < chars.len() => {
                        chars.remove(i);
                    }
                    _ => chars.insert(i, *pick(&alphabet, &mut rng)),
                }
                let text: String = chars.into_iter().collect();
                let mut copy = game.clone_box();
                tried += 1;
                // Whatever the text, the state is unchanged unless it was a legal
                // move, and a legal move is one of the texts the game lists.
                match copy.play(seat, &text) {
                    Ok(_) => assert!(
                        legal.contains(&text),
                        "{id}: {text:?} played but not listed in {legal:?}"
                    ),
                    Err(_) => assert_eq!(
                        copy.position(),
                        game.position(),
                        "{id}: {text:?} refused, state changed"
                    ),
                }
            }
            let mv = pick(&legal, &mut rng).clone();
            game.play(seat, &mv).unwrap();
        }
        assert!(tried > 0, "{id} {options:?}");
    }
}

#[test]
fn fuzz_inputs_drawn_at_random_keep_every_promise() {
    // The fuzz targets' own entry point, on inputs from a fixed seed: what
    // `cargo fuzz` explores at length, `cargo test` samples every run.
    let mut rng = GameRng::from_seed(1819);
    for id in engine::GAME_IDS {
        for _ in 0..300 {
            let len = 11 + 3 * rng.below(6) as usize;
            let mut data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            data[1] |= 1; // a mutated playout position
            engine::position_check::check_fuzz_input(id, &data);
        }
    }
}
