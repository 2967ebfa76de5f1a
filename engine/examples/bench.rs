//! Random playouts in process: games per second and decisions per second.
//!
//! ```text
//! cargo run --release -p astragal-engine --example bench -- --game ur
//! cargo run --release -p astragal-engine --example bench -- --game all --seconds 3
//! cargo run --release -p astragal-engine --example bench -- --game ur --opt rules=finkel
//! ```

use clap::Parser;
use engine::playout::random_playout;
use engine::registry::resolve_setup;
use engine::{Game, GameRng, GameVisitor};
use std::time::{Duration, Instant};

/// Measure the engine's speed with random players (one core).
#[derive(Parser)]
struct Args {
    /// Game id, or `all`.
    #[arg(long, default_value = "all")]
    game: String,
    /// Game option key=value (repeatable).
    #[arg(long = "opt")]
    opts: Vec<String>,
    /// Number of seats (the game's default when absent).
    #[arg(long)]
    seats: Option<usize>,
    /// How long to play each game, in seconds.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Stop after this many games instead of after `--seconds` (for instruction
    /// counts under callgrind, which are repeatable where wall time is not).
    #[arg(long)]
    games: Option<u64>,
    /// First seed; game i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

struct Bench<'a> {
    games: Option<u64>,
    opts: &'a [String],
    seats: Option<usize>,
    budget: Duration,
    seed: u64,
}

impl GameVisitor for Bench<'_> {
    type Output = Result<(), engine::SetupError>;
    fn visit<G: Game>(self) -> Self::Output {
        let (options, values, seats) = resolve_setup::<G, _>(self.opts, self.seats)?;
        let mut chooser = GameRng::from_seed(self.seed ^ 0x5eed);
        let mut moves = Vec::new();
        let (mut games, mut decisions) = (0u64, 0u64);
        let start = Instant::now();
        while self.games.map_or(start.elapsed() < self.budget, |n| games < n) {
            let mut game = G::new(&options, seats, GameRng::from_seed(self.seed + games));
            decisions += random_playout(&mut game, &mut chooser, &mut moves);
            games += 1;
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{:<8} seats={} {:<60} games={:>8} games/s={:>10.0} decisions/s={:>12.0} decisions/game={:.1}",
            G::ID,
            seats,
            values.canonical().join(" "),
            games,
            games as f64 / secs,
            decisions as f64 / secs,
            decisions as f64 / games as f64
        );
        Ok(())
    }
}

fn main() {
    let args = Args::parse();
    let ids: Vec<&str> = if args.game == "all" {
        engine::GAME_IDS.to_vec()
    } else {
        vec![args.game.as_str()]
    };
    for id in ids {
        let bench = Bench {
            games: args.games,
            opts: &args.opts,
            seats: args.seats,
            budget: Duration::from_secs_f64(args.seconds),
            seed: args.seed,
        };
        if let Err(e) = engine::with_game(id, bench).and_then(|r| r) {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
