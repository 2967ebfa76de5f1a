//! Every registered game, a spread of options, many seeds: the engine's promises
//! hold at every state, and a game replays from its seed and moves alone.

use astragal_tests::{CASES, CheckedPlayout};

#[test]
fn every_game_is_covered() {
    for id in engine::GAME_IDS {
        assert!(
            CASES.iter().any(|(g, ..)| *g == id),
            "no conformance case for {id}"
        );
    }
}

#[test]
fn random_playouts_keep_every_promise_and_replay_exactly() {
    let mut decisions = 0;
    for (id, opts, seats) in CASES {
        for seed in 0..12 {
            let played = engine::with_game(
                id,
                CheckedPlayout {
                    options: opts,
                    seats: *seats,
                    seed,
                    apply_every_move: seed < 3,
                },
            )
            .unwrap();
            decisions += played.moves.len();
            // Replay through the text interface the referee uses.
            let mut game = engine::new_game(id, opts, *seats, seed).unwrap();
            for (seat, mv) in &played.moves {
                assert!(
                    game.to_act().contains(*seat),
                    "{id} seed {seed}: replay diverged before {mv}"
                );
                game.play(*seat, mv)
                    .unwrap_or_else(|e| panic!("{id} seed {seed}: replaying {mv}: {e}"));
            }
            assert_eq!(
                game.position(),
                played.final_position,
                "{id} {opts:?} seed {seed}"
            );
            assert_eq!(
                serde_json::to_string(&game.outcome().unwrap()).unwrap(),
                played.outcome
            );
        }
    }
    assert!(decisions > 5_000, "only {decisions} decisions were checked");
}

#[test]
fn a_different_seed_gives_a_different_game() {
    // Guards against a seed that is silently ignored, in every game of chance.
    for id in engine::GAME_IDS
        .into_iter()
        .filter(|id| engine::game_info(id).is_ok_and(|i| i.nature.chance))
    {
        let a = engine::with_game(
            id,
            CheckedPlayout {
                options: &[],
                seats: None,
                seed: 1,
                apply_every_move: false,
            },
        );
        let b = engine::with_game(
            id,
            CheckedPlayout {
                options: &[],
                seats: None,
                seed: 2,
                apply_every_move: false,
            },
        );
        assert_ne!(a.unwrap().moves, b.unwrap().moves);
    }
}

#[test]
fn the_smoke_playouts_reach_their_budget() {
    let stats = astragal_tests::smoke(2_000);
    assert!(
        stats.decisions >= 2_000 * CASES.len() as u64 && stats.games > 0,
        "{stats:?}"
    );
}
