//! `--bot human`: a person at the terminal plays a seat. They are shown only what
//! their seat may know (`render_for`), told in words what happened since their
//! last move, can ask for `help` (with a legend of the board's letters), see long
//! move lists grouped, and get a plain result line.

use crate::fault::{Fault, FaultKind};
use crate::session::{Ask, GameOver, Table};
use std::io::{BufRead, Write};

/// Lists longer than this are shown grouped (`a1=1/2/3/4/5/6`), without numbers.
const NUMBERED_UP_TO: usize = 30;

/// One person's seat, game after game.
#[derive(Debug, Default)]
pub struct HumanSeat {
    seat: usize,
    seats: usize,
    game: String,
    /// Other seats' public moves since this seat's last move.
    since: Vec<(usize, String)>,
    /// The observation at this seat's last move, to say what changed since.
    last_obs: Option<serde_json::Value>,
}

impl HumanSeat {
    /// A game starts: says which seat is yours.
    pub fn new_game(&mut self, table: &Table<'_>) {
        *self = HumanSeat {
            seat: table.seat,
            seats: table.seats,
            game: table.game.to_owned(),
            ..HumanSeat::default()
        };
        let others: Vec<String> = (0..table.seats)
            .filter(|&s| s != table.seat)
            .map(|s| format!("seat {s}"))
            .collect();
        eprintln!(
            "\nA game of {} starts. You are seat {} ({}); the other seats: {}. Type `help` at any prompt.",
            table.game,
            table.seat,
            seat_colour(table.game, table.seat),
            others.join(", ")
        );
    }

    /// Another seat's public move.
    pub fn played(&mut self, seat: usize, mv: &str) {
        self.since.push((seat, mv.to_owned()));
    }

    /// Asks the person for a move.
    ///
    /// # Errors
    /// The terminal closed.
    pub fn ask(&mut self, ask: &Ask<'_>) -> Result<String, Fault> {
        let legal = ask.game.legal_moves(ask.seat);
        let obs: Option<serde_json::Value> = serde_json::from_str(&ask.game.observation_json(ask.seat)).ok();
        let mut err = std::io::stderr();
        let _ = write!(err, "{}", self.news(obs.as_ref()));
        self.last_obs = obs;
        // Only what this seat may know: the whole state is for `referee show` after the game.
        let _ = writeln!(err, "\n{}", ask.game.render_for(ask.seat));
        let _ = write!(err, "{}", moves_text(&legal));
        let stdin = std::io::stdin();
        loop {
            let _ = write!(err, "\nyou (seat {}), your move: ", ask.seat);
            let _ = err.flush();
            let mut line = String::new();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => return Err(Fault::new(FaultKind::Crash, "the terminal closed")),
                Ok(_) => {}
            }
            let t = line.trim();
            match t {
                "help" | "?" => {
                    let _ = write!(err, "{}", help_text(&self.game));
                    continue;
                }
                "moves" => {
                    let _ = write!(err, "{}", moves_text(&legal));
                    continue;
                }
                "board" => {
                    let _ = writeln!(err, "\n{}", ask.game.render_for(ask.seat));
                    continue;
                }
                _ => {}
            }
            if legal.len() <= NUMBERED_UP_TO
                && let Ok(n) = t.parse::<usize>()
                && (1..=legal.len()).contains(&n)
            {
                return Ok(legal[n - 1].clone());
            }
            // People may type any spelling the game reads (`c3xf6`); the bot protocol
            // and the record get the game's own.
            if let Ok(mv) = ask.game.read_move(t)
                && legal.contains(&mv)
            {
                return Ok(mv);
            }
            let starting: Vec<&String> = legal
                .iter()
                .filter(|m| !t.is_empty() && m.starts_with(t))
                .collect();
            match starting.as_slice() {
                [only] => return Ok((*only).clone()),
                [] => {
                    let _ = write!(
                        err,
                        "{t:?} is not a legal move (`moves` lists them, `help` explains)."
                    );
                }
                many => {
                    let shown: Vec<&str> = many.iter().take(12).map(|s| s.as_str()).collect();
                    let _ = write!(
                        err,
                        "{t:?} could be {}{}: type more of it.",
                        shown.join(", "),
                        if many.len() > shown.len() { ", …" } else { "" }
                    );
                }
            }
        }
    }

    /// What happened since this seat was last asked: the other seats' moves, and each
    /// field of its observation that changed (its own move included).
    fn news(&mut self, obs: Option<&serde_json::Value>) -> String {
        let mut s = String::new();
        let moves = std::mem::take(&mut self.since);
        let changes = match (&self.last_obs, obs) {
            (Some(old), Some(new)) => {
                let mut said = events_in_words(&self.game, self.seat, old, new);
                said.extend(obs_changes(old, new));
                said
            }
            _ => Vec::new(),
        };
        if moves.is_empty() && changes.is_empty() {
            return s;
        }
        s.push_str("\nSince you were last asked (your own move included):\n");
        for (seat, mv) in moves {
            s.push_str(&format!("  seat {seat} played {mv}\n"));
        }
        for c in changes {
            s.push_str(&format!("  {c}\n"));
        }
        s
    }

    /// The game is over: a plain result line.
    pub fn game_over(&self, over: &GameOver) {
        eprintln!("\n{}", result_line(self.seat, self.seats, &self.game, over));
    }
}

/// How a game is shown to a person, from the engine's registry.
fn presentation(game: &str) -> Option<engine::Presentation> {
    engine::game_info(game).ok().map(|i| i.presentation)
}

/// How the seat is drawn on the board, where the game draws seats apart.
fn seat_colour(game: &str, seat: usize) -> String {
    presentation(game)
        .and_then(|p| (p.seat_mark)(seat))
        .unwrap_or_else(|| "the board shows every seat by number".into())
}

/// What changed between two observations of the same seat: each field other than
/// the bookkeeping ones, old → new.
pub fn obs_changes(old: &serde_json::Value, new: &serde_json::Value) -> Vec<String> {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        return Vec::new();
    };
    new.iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "position" | "seat" | "turn" | "to_move" | "you_decided"
            )
        })
        .filter_map(|(k, v)| {
            let before = old.get(k)?;
            (before != v).then(|| format!("{}: {} → {}", k.replace('_', " "), brief(before), brief(v)))
        })
        .collect()
}

/// The events a person would miss on the board, as sentences: a piece sent back,
/// hit points lost, pips captured (each game says its own).
pub fn events_in_words(
    game: &str,
    me: usize,
    old: &serde_json::Value,
    new: &serde_json::Value,
) -> Vec<String> {
    presentation(game).map_or_else(Vec::new, |p| (p.events_in_words)(me, old, new))
}

/// A JSON value in a line: long ones cut.
fn brief(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.len() <= 60 {
        s
    } else {
        let cut = (0..=57).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        format!("{}…", &s[..cut])
    }
}

/// The legal moves: numbered when few, grouped by what they move (the text before
/// `=`, `:` or `-`) when many.
pub fn moves_text(legal: &[String]) -> String {
    let mut s = String::new();
    if legal.len() <= NUMBERED_UP_TO {
        for (i, m) in legal.iter().enumerate() {
            s.push_str(&format!("{:>3}) {m:<14}", i + 1));
            if (i + 1) % 5 == 0 {
                s.push('\n');
            }
        }
        s.push_str("\nanswer with a number or a move\n");
        return s;
    }
    let groups = group_moves(legal);
    s.push_str(&format!("{} legal moves, grouped:\n", legal.len()));
    let mut width = 0;
    for g in &groups {
        if width + g.len() > 78 {
            s.push('\n');
            width = 0;
        }
        s.push_str(g);
        s.push_str("  ");
        width += g.len() + 2;
    }
    s.push_str("\ntype a move (e.g. ");
    s.push_str(legal.first().map_or("", String::as_str));
    s.push_str("); a unique beginning is enough\n");
    s
}

/// Moves grouped by their head: `a1=1`, `a1=2` → `a1=1/2`.
pub fn group_moves(legal: &[String]) -> Vec<String> {
    let mut groups: Vec<(String, char, Vec<String>)> = Vec::new();
    for m in legal {
        match m.char_indices().find(|(_, c)| matches!(c, '=' | ':' | '-')) {
            Some((i, sep)) => {
                let (head, tail) = (&m[..i], &m[i + sep.len_utf8()..]);
                match groups.iter_mut().find(|(h, s, _)| h == head && *s == sep) {
                    Some((_, _, tails)) => tails.push(tail.to_owned()),
                    None => groups.push((head.to_owned(), sep, vec![tail.to_owned()])),
                }
            }
            None => groups.push((m.clone(), ' ', Vec::new())),
        }
    }
    groups
        .into_iter()
        .map(|(head, sep, tails)| {
            if tails.is_empty() {
                head
            } else {
                format!("{head}{sep}{}", tails.join("/"))
            }
        })
        .collect()
}

/// `help`: how to answer, and what the board's letters mean.
pub fn help_text(game: &str) -> String {
    format!(
        "\nAnswer with one legal move as the game writes it (see docs/rules/{game}.md), or its\n\
         number when the moves are numbered; a unique beginning of a move is enough.\n\
         `moves` lists the moves again, `board` draws the board again, `help` shows this.\n\
         {}\n",
        legend(game)
    )
}

/// What the letters of each game's board mean.
pub fn legend(game: &str) -> &'static str {
    presentation(game).map_or("", |p| p.legend)
}

/// `you won, 15 to 35 — the game's end`.
pub fn result_line(seat: usize, seats: usize, game: &str, over: &GameOver) -> String {
    let rank = over.ranks.get(seat).copied().unwrap_or(0);
    let firsts = over.ranks.iter().filter(|&&r| r == 1).count();
    let verdict = match (rank, firsts, seats) {
        (1, 1, _) => "you won".to_owned(),
        (1, _, _) => format!("you shared first place with {} other seats", firsts - 1),
        (r, _, 2) if r > 1 => "you lost".to_owned(),
        (r, _, _) => format!("you came {}", ordinal(r)),
    };
    let mine = over.scores.get(seat).copied().unwrap_or(0);
    let others: Vec<String> = over
        .scores
        .iter()
        .enumerate()
        .filter(|&(s, _)| s != seat)
        .map(|(_, v)| v.to_string())
        .collect();
    let unit = presentation(game).map_or("", |p| p.score_unit);
    let why = match over.reason.as_str() {
        "normal" => "the game ran to its end".to_owned(),
        "cap" => "the length cap ended it, and the scores decide".to_owned(),
        "forfeit" => format!("a forfeit: {}", over.detail.clone().unwrap_or_default()),
        other => other.to_owned(),
    };
    format!(
        "Game over: {verdict}, {mine} to {}{unit} — {why}.",
        others.join(" and ")
    )
}

fn ordinal(n: u8) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => format!("{n}th"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(ranks: &[u8], scores: &[i64], reason: &str) -> GameOver {
        GameOver {
            ranks: ranks.to_vec(),
            scores: scores.to_vec(),
            reason: reason.into(),
            detail: None,
        }
    }

    #[test]
    fn the_result_is_a_sentence() {
        assert_eq!(
            result_line(0, 2, "ur", &over(&[1, 2], &[35, 15], "normal")),
            "Game over: you won, 35 to 15 (counters, or pieces home) — the game ran to its end."
        );
        assert!(
            result_line(1, 2, "ur", &over(&[1, 2], &[35, 15], "cap"))
                .starts_with("Game over: you lost, 15 to 35")
        );
        assert!(
            result_line(2, 4, "cuatto", &over(&[2, 1, 3, 4], &[0; 4], "normal")).contains("you came third")
        );
    }

    #[test]
    fn long_move_lists_are_grouped_by_what_they_move() {
        let legal: Vec<String> = ["a1=1", "a1=2", "b1=1", "d4-d5", "d4-c4", "gamble"]
            .map(String::from)
            .to_vec();
        assert_eq!(group_moves(&legal), ["a1=1/2", "b1=1", "d4-d5/c4", "gamble"]);
        let many: Vec<String> = (1..=64)
            .flat_map(|c| (1..=6).map(move |v| format!("c{c}={v}")))
            .collect();
        let text = moves_text(&many);
        assert!(text.contains("384 legal moves, grouped"), "{text}");
        assert!(text.contains("c1=1/2/3/4/5/6"), "{text}");
        assert!(text.lines().count() < 40, "{text}");
    }

    #[test]
    fn what_changed_is_said_field_by_field() {
        let old = serde_json::json!({"seat": 0, "turn": 3, "counters": [15, 15], "pieces": [[3, 0], [5, 0]], "position": "x"});
        let new = serde_json::json!({"seat": 0, "turn": 5, "counters": [11, 15], "pieces": [[0, 0], [7, 0]], "position": "y"});
        assert_eq!(
            obs_changes(&old, &new),
            [
                "counters: [15,15] → [11,15]",
                "pieces: [[3,0],[5,0]] → [[0,0],[7,0]]"
            ]
        );
    }

    #[test]
    fn captures_and_losses_are_said_in_words() {
        let old = serde_json::json!({"rules": "tablet", "pieces": [[6, 0, 0, 0, 0], [2, 0, 0, 0, 0]]});
        let new = serde_json::json!({"rules": "tablet", "pieces": [[0, 0, 0, 0, 0], [6, 0, 0, 0, 0]]});
        assert_eq!(
            events_in_words("ur", 0, &old, &new),
            ["your swallow on house 6 was captured and starts again"]
        );
        assert_eq!(
            events_in_words("ur", 1, &old, &new),
            ["seat 0's swallow on house 6 was captured and starts again"]
        );
        let old = serde_json::json!({"hp": [10, 7]});
        let new = serde_json::json!({"hp": [6, 7]});
        assert_eq!(events_in_words("spartan", 0, &old, &new), ["your army lost 4 HP"]);
        let old = serde_json::json!({"captured": [0, 0]});
        let new = serde_json::json!({"captured": [0, 5]});
        assert_eq!(
            events_in_words("uptick", 0, &old, &new),
            ["seat 1 captured a die worth 5 pips"]
        );
    }

    #[test]
    fn every_game_has_a_legend() {
        for id in engine::GAME_IDS {
            assert!(!legend(id).is_empty(), "{id}");
        }
    }
}
