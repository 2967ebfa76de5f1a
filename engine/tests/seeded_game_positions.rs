//! Every position met in seeded games is one the notation accepts: the full
//! position, the one without its `rng` (as people write them) and every seat's
//! public position (what bots rebuild their state from), each reading back as the
//! same text. 10,000 games per game, spread over the setups of
//! `engine::position_check::SETUPS`: the first 2,000 of each game in the
//! default tier (a test per game, so they run side by side), the other 8,000
//! behind `--ignored`.

use engine::GameRng;
use engine::game::strip_rng;
use engine::position_check::SETUPS;

/// Seeds every run plays, per game.
const DEFAULT_GAMES: std::ops::Range<u64> = 0..2_000;
/// The rest of the 10,000, played with `--ignored`.
const MORE_GAMES: std::ops::Range<u64> = 2_000..10_000;

/// Reads `text` for game `id` and returns the position it writes back (with its
/// rng when `text` has one).
fn read_back(id: &str, options: &[&str], text: &str) -> Result<String, String> {
    let game = engine::game_from_position(id, options, text, 1).map_err(|e| e.to_string())?;
    Ok(if text.contains(" rng=") {
        game.position()
    } else {
        strip_rng(&game.position())
    })
}

/// The positions of game `id`'s games played from `seeds` that do not read
/// back as themselves (at most about 20).
fn positions_not_read_back(id: &str, seeds: std::ops::Range<u64>) -> Vec<String> {
    let mut failures = Vec::new();
    let games = seeds.end - seeds.start;
    let setups: Vec<_> = SETUPS.iter().filter(|s| s.0 == id).collect();
    let mut positions = 0u64;
    for seed in seeds {
        let &(_, options, seats) = setups[seed as usize % setups.len()];
        let mut chooser = GameRng::from_seed(seed ^ 0x5eed);
        let mut game = engine::new_game(id, options, Some(seats), seed).expect("a setup of the list");
        loop {
            let full = game.position();
            let mut texts = vec![strip_rng(&full), full];
            // Public positions change only with the seat for games with secrets.
            for seat in 0..game.seats() {
                let public = game.public_position(seat);
                if !texts.contains(&public) {
                    texts.push(public);
                }
            }
            for text in &texts {
                positions += 1;
                match read_back(id, options, text) {
                    Ok(again) if again == *text => {}
                    Ok(again) => failures.push(format!(
                        "{id} {options:?} seed {seed}: {text:?} reads back as {again:?}"
                    )),
                    Err(e) => failures.push(format!("{id} {options:?} seed {seed}: {text:?} refused: {e}")),
                }
            }
            if game.outcome().is_some() || failures.len() > 20 {
                break;
            }
            for seat in game.to_act().iter() {
                let moves = game.legal_moves(seat);
                let mv = &moves[chooser.below(moves.len() as u32) as usize];
                game.play(seat, mv).expect("a legal move");
            }
        }
        if failures.len() > 20 {
            break;
        }
    }
    eprintln!("{id}: {positions} positions of {games} games read back");
    failures
}

fn assert_read_back(id: &str, seeds: std::ops::Range<u64>) {
    let failures = positions_not_read_back(id, seeds);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_position_of_seeded_utara_games_is_accepted() {
    assert_read_back("utara", DEFAULT_GAMES);
}

#[test]
fn every_position_of_seeded_ur_games_is_accepted() {
    assert_read_back("ur", DEFAULT_GAMES);
}

#[test]
fn every_position_of_seeded_uptick_games_is_accepted() {
    assert_read_back("uptick", DEFAULT_GAMES);
}

#[test]
fn every_position_of_seeded_cuatto_games_is_accepted() {
    assert_read_back("cuatto", DEFAULT_GAMES);
}

#[test]
fn every_position_of_seeded_spartan_games_is_accepted() {
    assert_read_back("spartan", DEFAULT_GAMES);
}

/// Every game of the list has its test above.
#[test]
fn every_game_has_its_seeded_positions_test() {
    let this = include_str!("seeded_game_positions.rs");
    for id in engine::GAME_IDS {
        assert!(
            this.contains(&format!("assert_read_back(\"{id}\", DEFAULT_GAMES)")),
            "no seeded-positions test for {id}"
        );
    }
}

/// The other 8,000 games of each game (`cargo test -- --ignored`).
#[test]
#[ignore = "8,000 more games per game: a long run"]
fn every_position_of_eight_thousand_more_seeded_games_per_game_is_accepted() {
    let failures: Vec<String> = engine::GAME_IDS
        .iter()
        .flat_map(|id| positions_not_read_back(id, MORE_GAMES))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
