//! Iterations per second of the `mcts` bot on every game: plays games of mcts
//! against random in process and times each search.
//!
//! `cargo run --release -p astragal-bots --example search_bench -- [--iterations N] [--games N] [--game ID]`

use bots::{Bot, MctsBot, View};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_owned())
    };
    let iterations: u64 = arg("--iterations", "1000").parse().expect("--iterations N");
    let games: u64 = arg("--games", "4").parse().expect("--games N");
    let only = arg("--game", "all");
    println!(
        "{:<10} {:>10} {:>12} {:>14} {:>12}",
        "game", "decisions", "iterations", "iterations/s", "ms/decision"
    );
    for id in engine::GAME_IDS {
        if only != "all" && only != *id {
            continue;
        }
        let (mut decisions, mut iters, mut secs) = (0u64, 0u64, 0.0f64);
        for seed in 0..games {
            let mut game = engine::new_game(id, &[] as &[&str], None, seed).expect("game");
            let options = game.options().to_vec();
            let seats = game.seats();
            let mut mcts = MctsBot::new(seed, iterations);
            let mut random = bots::builtin("random", &[("seed".into(), seed.to_string())]).expect("random");
            mcts.new_game(id, seats, 0, &options);
            random.new_game(id, seats, 1, &options);
            while let Some(seat) = game.to_act().first() {
                let legal = game.legal_moves(seat);
                let legal_refs: Vec<&str> = legal.iter().map(String::as_str).collect();
                let obs = game.observation(seat);
                let view = View {
                    game: id,
                    seat,
                    seats,
                    options: &options,
                    observation: &obs,
                    legal: &legal_refs,
                    time_ms: None,
                    movetime_ms: None,
                };
                let mv = if seat == 0 {
                    mcts.last = Default::default();
                    let mv = mcts.choose(&view);
                    if mcts.last.iterations > 0 {
                        decisions += 1;
                        iters += mcts.last.iterations;
                        secs += mcts.last.seconds;
                    }
                    mv
                } else {
                    random.choose(&view)
                };
                game.play(seat, &mv).expect("bots play legal moves");
            }
        }
        println!(
            "{:<10} {:>10} {:>12} {:>14.0} {:>12.2}",
            id,
            decisions,
            iters,
            iters as f64 / secs.max(1e-9),
            1000.0 * secs / decisions.max(1) as f64
        );
    }
}
