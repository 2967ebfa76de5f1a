//! Built-in players, and the driver that lets any of them speak the text protocol
//! over stdin/stdout.
//!
//! A bot sees only what a seat may see: its observation (JSON) and its legal moves,
//! exactly what the protocol's `go` carries. So the same bot plays in process
//! (`builtin:random` in the referee) and as a separate program (`astragal-bot --bot
//! random`), and a bot written in any language gets the same information.

pub mod driver;
pub mod grpc;
pub mod search;
pub mod spin;

pub use search::{GreedyBot, Leaf, MctsBot};

use engine::GameRng;
pub use proto::{OptionDecl, OptionType};

/// What a bot is told when it must decide.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The game id.
    pub game: &'a str,
    /// The deciding seat.
    pub seat: usize,
    /// Seats in the game.
    pub seats: usize,
    /// The game's options, `key=value` each.
    pub options: &'a [String],
    /// The seat's observation.
    pub observation: &'a serde_json::Value,
    /// The legal moves, never empty.
    pub legal: &'a [&'a str],
    /// Time left on the bot's clock, if the game has one.
    pub time_ms: Option<u64>,
    /// Fixed time for this move, if any.
    pub movetime_ms: Option<u64>,
}

/// A player.
pub trait Bot: Send {
    /// Its name, as announced in the handshake.
    fn name(&self) -> String;

    /// The options it understands.
    fn options(&self) -> Vec<OptionDecl> {
        Vec::new()
    }

    /// Sets an option.
    ///
    /// # Errors
    /// An unknown option or a bad value, with a message naming it.
    fn set_option(&mut self, name: &str, value: &str) -> Result<(), String> {
        let decl = self.options().into_iter().find(|d| d.name == name);
        match decl {
            None => Err(format!("bot {} has no option {name:?}", self.name())),
            Some(d) => d.check(value),
        }
    }

    /// Whether it reads observations (a bot that does not saves the drivers from
    /// parsing them).
    fn reads_observations(&self) -> bool {
        true
    }

    /// Whether a decision may take long (a search). A bot that answers in
    /// microseconds says no, and the gRPC server then answers on the thread that
    /// took the call rather than handing the thread's other work away first.
    fn thinks_long(&self) -> bool {
        true
    }

    /// A new game starts.
    fn new_game(&mut self, _game: &str, _seats: usize, _seat: usize, _options: &[String]) {}

    /// For the bot's own randomness, a value that differs from game to game and
    /// seat to seat, given after [`Bot::new_game`] (the `salt` of `newgame`, on
    /// every transport). The referee derives it one way from the game's seed and
    /// the seat: a match replays the same, yet it tells nothing of the dice.
    /// Without it (an older referee) a bot counts the games it plays.
    fn salt_game(&mut self, _salt: u64) {}

    /// Picks one of `view.legal`.
    fn choose(&mut self, view: &View<'_>) -> String;
}

/// Plays uniformly at random among the legal moves.
#[derive(Debug)]
pub struct RandomBot {
    seed: u64,
    games: u64,
    rng: GameRng,
}

impl RandomBot {
    /// A random bot drawing from `seed`. Each game draws from `seed` and the
    /// game's salt (see [`Bot::salt_game`]), so games are independent of each
    /// other and a match with built-in bots replays the same.
    pub fn new(seed: u64) -> RandomBot {
        RandomBot {
            seed,
            games: 0,
            rng: GameRng::from_seed(seed),
        }
    }
}

impl Bot for RandomBot {
    fn name(&self) -> String {
        "random".into()
    }

    fn thinks_long(&self) -> bool {
        false
    }

    fn reads_observations(&self) -> bool {
        false
    }

    fn options(&self) -> Vec<OptionDecl> {
        vec![OptionDecl {
            name: "seed".into(),
            kind: OptionType::Spin {
                default: 1,
                min: 0,
                max: i64::MAX,
            },
        }]
    }

    fn set_option(&mut self, name: &str, value: &str) -> Result<(), String> {
        match (name, value.parse::<u64>()) {
            ("seed", Ok(seed)) => {
                *self = RandomBot::new(seed);
                Ok(())
            }
            ("seed", Err(_)) => Err("option seed takes a whole number".into()),
            _ => Err(format!("bot random has no option {name:?}")),
        }
    }

    fn new_game(&mut self, _game: &str, _seats: usize, seat: usize, _options: &[String]) {
        self.games += 1;
        self.rng = game_stream(self.seed, self.games, seat);
    }

    fn salt_game(&mut self, salt: u64) {
        self.rng = salted_stream(self.seed, salt);
    }

    fn choose(&mut self, view: &View<'_>) -> String {
        view.legal[self.rng.below(view.legal.len() as u32) as usize].to_owned()
    }
}

/// A bot's stream for its `games`-th game in one process, at `seat`.
pub(crate) fn game_stream(seed: u64, games: u64, seat: usize) -> GameRng {
    GameRng::from_seed(seed ^ (games << 8) ^ seat as u64)
}

/// A bot's stream for a game with `salt` (see [`Bot::salt_game`]): the seed and
/// the salt each change every draw.
pub(crate) fn salted_stream(seed: u64, salt: u64) -> GameRng {
    let mut mixer = GameRng::from_seed(seed);
    GameRng::from_seed(mixer.next_u64() ^ salt)
}

/// Always plays the first legal move: the smallest possible bot, used to measure
/// the protocol's own cost.
#[derive(Debug, Default)]
pub struct FirstBot;

impl Bot for FirstBot {
    fn name(&self) -> String {
        "first".into()
    }

    fn reads_observations(&self) -> bool {
        false
    }

    fn thinks_long(&self) -> bool {
        false
    }

    fn choose(&mut self, view: &View<'_>) -> String {
        view.legal[0].to_owned()
    }
}

/// Names of the built-in bots.
pub const BUILTIN: &[&str] = &["random", "first", "greedy", "mcts"];

/// A built-in bot by name, with options applied (`key=value`).
///
/// # Errors
/// An unknown name (the message lists the known ones) or a refused option.
pub fn builtin(name: &str, options: &[(String, String)]) -> Result<Box<dyn Bot>, String> {
    let mut bot: Box<dyn Bot> = match name {
        "random" => Box::new(RandomBot::new(1)),
        "first" => Box::new(FirstBot),
        "greedy" => Box::new(GreedyBot::new(1, 8)),
        "mcts" => Box::new(MctsBot::new(1, 1000)),
        _ => {
            return Err(format!(
                "no built-in bot {name:?} (built-in: {})",
                BUILTIN.join(", ")
            ));
        }
    };
    for (k, v) in options {
        bot.set_option(k, v)?;
    }
    Ok(bot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(legal: &'a [&'a str], obs: &'a serde_json::Value) -> View<'a> {
        View {
            game: "ur",
            seat: 0,
            seats: 2,
            options: &[],
            observation: obs,
            legal,
            time_ms: None,
            movetime_ms: None,
        }
    }

    #[test]
    fn random_is_reproducible_per_seed_and_covers_the_moves() {
        let legal = ["m0", "m1", "m2", "m3", "m4"];
        let obs = serde_json::json!({});
        let picks = |seed: u64| {
            let mut b = builtin("random", &[("seed".into(), seed.to_string())]).unwrap();
            b.new_game("ur", 2, 0, &[]);
            (0..200)
                .map(|_| b.choose(&view(&legal, &obs)))
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(3), picks(3));
        assert_ne!(picks(3), picks(4));
        for m in &legal {
            assert!(picks(3).iter().any(|p| p == m), "{m} never chosen");
        }
    }

    #[test]
    fn unknown_bots_and_options_are_named() {
        assert!(
            builtin("deep-blue", &[])
                .err()
                .unwrap()
                .contains("built-in: random, first")
        );
        let e = builtin("random", &[("depth".into(), "3".into())]).err().unwrap();
        assert!(e.contains("no option \"depth\""), "{e}");
        let e = builtin("first", &[("seed".into(), "3".into())]).err().unwrap();
        assert!(e.contains("no option"), "{e}");
        let e = builtin("random", &[("seed".into(), "x".into())]).err().unwrap();
        assert!(e.contains("whole number"), "{e}");
    }
}
