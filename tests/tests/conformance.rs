//! Every registered game, a spread of options, many seeds: the engine's promises
//! hold at every state, and a game replays from its seed and moves alone.

use astragal_tests::{CASES, CheckedPlayout, workspace_root};
use std::collections::HashMap;

/// Each game's published observation schema, `docs/schemas/<id>.observation.json`.
fn observation_schemas() -> HashMap<&'static str, jsonschema::Validator> {
    engine::GAME_IDS
        .into_iter()
        .map(|id| {
            let path = workspace_root().join(format!("docs/schemas/{id}.observation.json"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
            let validator = jsonschema::validator_for(&schema)
                .unwrap_or_else(|e| panic!("{} is not a valid JSON Schema: {e}", path.display()));
            (id, validator)
        })
        .collect()
}

/// Checks every seat's observation, exactly as the referee sends it, against the schema.
fn check_observations(schema: &jsonschema::Validator, game: &dyn engine::AnyGame, what: &str) -> usize {
    let seats = game.seats();
    for seat in 0..seats {
        let text = game.observation_json(seat);
        let obs: serde_json::Value = serde_json::from_str(&text).expect("observations are JSON");
        let errors: Vec<String> = schema
            .iter_errors(&obs)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what}: seat {seat}'s observation does not match docs/schemas: {errors:#?}\n{text}"
        );
    }
    seats
}

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
    let schemas = observation_schemas();
    let (mut decisions, mut observations) = (0, 0);
    for (id, opts, seats) in CASES {
        let schema = &schemas[id];
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
            let what = format!("{id} {opts:?} seed {seed}");
            observations += check_observations(schema, game.as_ref(), &what);
            for (seat, mv) in &played.moves {
                assert!(
                    game.to_act().contains(*seat),
                    "{id} seed {seed}: replay diverged before {mv}"
                );
                game.play(*seat, mv)
                    .unwrap_or_else(|e| panic!("{id} seed {seed}: replaying {mv}: {e}"));
                observations += check_observations(schema, game.as_ref(), &what);
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
    assert!(
        observations > 2 * decisions,
        "only {observations} observations were checked"
    );
}

#[test]
fn the_schemas_refuse_a_field_they_do_not_describe_and_a_missing_one() {
    let schemas = observation_schemas();
    for id in engine::GAME_IDS {
        let game = engine::new_game::<&str>(id, &[], None, 7).unwrap();
        let obs: serde_json::Value = serde_json::from_str(&game.observation_json(0)).unwrap();
        assert!(schemas[id].is_valid(&obs), "{id}");
        let mut extra = obs.clone();
        extra["renamed_field"] = 1.into();
        assert!(
            !schemas[id].is_valid(&extra),
            "{id}: an undocumented field passed"
        );
        for field in obs.as_object().unwrap().keys() {
            let mut missing = obs.clone();
            missing.as_object_mut().unwrap().remove(field);
            assert!(!schemas[id].is_valid(&missing), "{id}: {field} is not required");
        }
    }
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
