//! Every position met in seeded games is one the notation accepts: the full
//! position, the one without its `rng` (as people write them) and every seat's
//! public position (what bots rebuild their state from), each reading back as the
//! same text. 10,000 games per game, spread over the setups of
//! `engine::position_check::SETUPS`.

use engine::GameRng;
use engine::game::strip_rng;
use engine::position_check::SETUPS;

const GAMES_PER_GAME: u64 = 10_000;

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

#[test]
fn every_position_of_ten_thousand_seeded_games_per_game_is_accepted() {
    let mut failures = Vec::new();
    for id in engine::GAME_IDS {
        let setups: Vec<_> = SETUPS.iter().filter(|s| s.0 == id).collect();
        let mut positions = 0u64;
        for seed in 0..GAMES_PER_GAME {
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
                        Err(e) => {
                            failures.push(format!("{id} {options:?} seed {seed}: {text:?} refused: {e}"))
                        }
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
        eprintln!("{id}: {positions} positions of {GAMES_PER_GAME} games read back");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
