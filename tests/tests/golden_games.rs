//! Whole games pinned in `tests/data/golden_games.txt`: game, options, seed, the
//! number of decisions and the final position. If the rules, the RNG or the dice
//! reduction change, these fail, because every recorded game would replay
//! differently. Regenerate deliberately with `ASTRAGAL_BLESS=1 cargo test -p
//! astragal-tests --test golden_games` and say so in the changelog.

use astragal_tests::{CASES, CheckedPlayout};
use std::fmt::Write as _;

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/golden_games.txt");

fn current() -> String {
    let mut out = String::from("# game | options | seed | decisions | outcome | final position\n");
    for (id, opts, seats) in CASES {
        for seed in [7u64, 2026] {
            let g = engine::with_game(
                id,
                CheckedPlayout {
                    options: opts,
                    seats: *seats,
                    seed,
                    apply_every_move: false,
                },
            )
            .expect("known game");
            let opts = if opts.is_empty() {
                "-".to_owned()
            } else {
                opts.join(",")
            };
            writeln!(
                out,
                "{id} | {opts} | {seed} | {} | {} | {}",
                g.moves.len(),
                g.outcome,
                g.final_position
            )
            .unwrap();
        }
    }
    out
}

#[test]
fn games_replay_exactly_as_recorded() {
    let now = current();
    if std::env::var_os("ASTRAGAL_BLESS").is_some() {
        std::fs::write(FILE, &now).expect("write golden file");
        return;
    }
    let recorded = std::fs::read_to_string(FILE).expect("tests/data/golden_games.txt exists");
    for (want, got) in recorded.lines().zip(now.lines()) {
        assert_eq!(got, want, "a pinned game changed");
    }
    assert_eq!(
        recorded.lines().count(),
        now.lines().count(),
        "cases were added or removed: bless deliberately"
    );
}
