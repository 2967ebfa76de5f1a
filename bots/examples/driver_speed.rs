//! How long the stdio driver takes per request, without pipes: feeds `go` lines
//! from memory to `first` and `random`, and prints microseconds per request.
//!
//! `cargo run --release -p astragal-bots --example driver_speed -- --game uptick`
use engine::AnyGame;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let game_id = args
        .iter()
        .position(|a| a == "--game")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "ur".into());
    let game: Box<dyn AnyGame> = engine::new_game(&game_id, &[] as &[&str], None, 1).expect("game");
    let seat = game.to_act().first().expect("someone to act");
    let mut legal = String::new();
    game.write_legal_moves(seat, &mut legal);
    let mut line = String::new();
    proto::text::write_go(
        &mut line,
        1,
        seat,
        None,
        None,
        Some(1000),
        &legal,
        &game.observation_json(seat),
    );
    let n = 100_000;
    let input: String = std::iter::repeat_n(format!("{line}\n"), n).collect();
    for name in ["first", "random"] {
        let mut bot = bots::builtin(name, &[]).expect("bot");
        let mut out = Vec::with_capacity(n * 32);
        let start = Instant::now();
        bots::driver::serve(bot.as_mut(), "x", input.as_bytes(), &mut out).expect("serve");
        let us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!(
            "{game_id}: {name}: {us:.2} us per request ({} bytes each)",
            line.len()
        );
    }
}
