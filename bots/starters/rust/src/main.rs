//! A starter bot for astragal, in Rust, speaking the text protocol.
//!
//! Copy this folder and change `choose`. The protocol is in docs/protocol.md; each
//! game's observation is documented in docs/rules/<game>.md. This bot plays the
//! Game of Ur with a one-move heuristic (it beats the built-in `first`) and any
//! other game with a pseudo-random legal move.

use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, Write};

const NAME: &str = "starter-rust";
const BIRDS: [&str; 5] = ["swallow", "storm", "raven", "rooster", "eagle"];

/// A protocol line as (command, fields); `obs=` takes the rest of the line.
/// (Quoted values only come in `setoption`, which this bot ignores.)
fn parse(line: &str) -> (&str, HashMap<&str, &str>) {
    let (head, obs) = match line.split_once(" obs=") {
        Some((h, o)) => (h, Some(o)),
        None => (line, None),
    };
    let mut words = head.split(' ');
    let command = words.next().unwrap_or("");
    let mut fields: HashMap<&str, &str> = words.filter_map(|w| w.split_once('=')).collect();
    if let Some(obs) = obs {
        fields.insert("obs", obs);
    }
    (command, fields)
}

/// How good a move of the Game of Ur looks, from the observation alone.
fn ur_score(obs: &Value, mv: &str) -> f64 {
    if mv == "gamble" {
        return -1.0;
    }
    let seat = obs["seat"].as_u64().unwrap_or(0) as usize;
    let pieces = |s: usize| -> Vec<u64> {
        obs["pieces"][s]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default()
    };
    let (from, to) = match mv.split_once(':') {
        Some((bird, to)) => (
            BIRDS
                .iter()
                .position(|b| *b == bird)
                .map_or(0, |i| pieces(seat).get(i).copied().unwrap_or(0)),
            to,
        ),
        None => {
            let (f, t) = mv.split_once('-').unwrap_or(("0", "0"));
            (f.parse().unwrap_or(0), t)
        }
    };
    if to == "off" {
        return 20.0;
    }
    let to: u64 = to.parse().unwrap_or(0);
    let mut score = to as f64 / 20.0;
    if (5..=12).contains(&to) && pieces(1 - seat.min(1)).contains(&to) {
        score += 12.0; // a capture sends the other piece home
    }
    if [4, 8, 14].contains(&to) {
        score += 8.0; // rosettes are safe and pay
    }
    if from == 0 {
        score += 4.0; // enter pieces while the roll allows
    }
    if (5..=12).contains(&from) && from != 8 {
        score += 2.0; // leave the shared row, where pieces are taken
    }
    let theirs = pieces(1 - seat.min(1));
    if (5..=12).contains(&to) && to != 8 && theirs.iter().any(|&t| (1..=4).contains(&to.wrapping_sub(t))) {
        score -= 3.0; // within reach of a piece behind
    }
    score
}

/// A small generator (xorshift), seeded from each game's salt.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn choose<'a>(game: &str, obs: &Value, legal: &[&'a str], rng: &mut Rng) -> &'a str {
    if game == "ur" {
        let mut best = legal[0];
        for &m in legal {
            if ur_score(obs, m) > ur_score(obs, best) {
                best = m;
            }
        }
        return best;
    }
    legal[rng.below(legal.len())]
}

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut game = String::new();
    let mut rng = Rng(1);
    for line in stdin.lock().lines() {
        let line = line?;
        let (command, f) = parse(line.trim_end_matches('\r'));
        match command {
            "astragal" => writeln!(out, "id name={NAME} author=you\nastragalok version=1")?,
            "newgame" => {
                game = f.get("game").unwrap_or(&"").to_string();
                rng = Rng(f.get("salt").and_then(|s| s.parse().ok()).unwrap_or(0) | 1);
            }
            "isready" => writeln!(out, "readyok")?,
            "go" => {
                let obs: Value = serde_json::from_str(f.get("obs").unwrap_or(&"{}")).unwrap_or(Value::Null);
                let legal: Vec<&str> = f.get("legal").unwrap_or(&"").split(',').collect();
                let mv = choose(&game, &obs, &legal, &mut rng);
                writeln!(out, "move id={} move={mv}", f.get("id").unwrap_or(&"0"))?;
            }
            "quit" => return Ok(()),
            // Everything else (played, gameover, setoption, new commands) is ignored.
            _ => {}
        }
        // The referee waits for each line.
        out.flush()?;
    }
    Ok(())
}
