//! Game records: one JSON object per game, one game per line (JSON Lines).
//!
//! A record holds everything needed to replay its game: engine version, game id,
//! canonical options, seed, starting position (if any), the seats, every move with
//! the time it took, the faults, the termination and the outcome.

use crate::fault::{Fault, FaultKind};
use engine::Outcome;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::Path;

/// Version of the record format. Bump on any change that old readers misread.
pub const RECORD_SCHEMA: u32 = 1;

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// By the game's rules.
    Normal,
    /// By the game's length cap.
    Cap,
    /// One or more seats faulted.
    Forfeit,
}

impl std::fmt::Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Termination::Normal => "normal",
            Termination::Cap => "cap",
            Termination::Forfeit => "forfeit",
        })
    }
}

/// A seat as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatRecord {
    /// Name the bot announced (or the spec's short name).
    pub name: String,
    /// The `--bot` spec.
    pub spec: String,
    /// The entrant's name in a ladder or tournament, when it plays in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrant: Option<String>,
    /// Replies to old requests that were discarded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_replies: u64,
}

/// One decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveRecord {
    /// Who decided.
    pub seat: usize,
    /// The move, in the game's notation.
    #[serde(rename = "move")]
    pub mv: String,
    /// Milliseconds from the flushed request to the reply.
    pub ms: u64,
    /// Played by the referee for a seat that had faulted (3+ seats).
    #[serde(default, skip_serializing_if = "is_false")]
    pub fallback: bool,
    /// Info lines the bot sent meanwhile (kept, never scored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<String>,
}

/// A fault as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// The seat.
    pub seat: usize,
    /// What kind.
    pub kind: FaultKind,
    /// What happened.
    pub detail: String,
    /// Moves recorded before it.
    pub at_move: usize,
}

/// Where a game stands in a mirrored match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pairing {
    /// The group: games of a group share the seed.
    pub group: u64,
    /// Seat rotation within the group: seat `s` is played by entrant `(s + rotation) % seats`.
    pub rotation: usize,
}

/// One game.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    /// [`RECORD_SCHEMA`].
    pub schema: u32,
    /// Engine version that played it.
    pub engine: String,
    /// Game id.
    pub game: String,
    /// Canonical options.
    pub options: Vec<String>,
    /// Seed.
    pub seed: u64,
    /// Starting position, when not the game's own start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_position: Option<String>,
    /// The seats in order.
    pub seats: Vec<SeatRecord>,
    /// Place in a mirrored match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<Pairing>,
    /// Every decision in order.
    pub moves: Vec<MoveRecord>,
    /// Faults in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultRecord>,
    /// How it ended.
    pub termination: Termination,
    /// Places and scores.
    pub outcome: Outcome,
    /// The last position.
    pub final_position: String,
    /// Wall time of the game loop (first request to last move), in microseconds.
    #[serde(default)]
    pub play_us: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Places and termination from the game's own outcome (if it finished) and the
/// faults: seats that did not fault keep their order among themselves; faulted seats
/// come after them, the earliest fault last.
pub fn final_outcome(seats: usize, game: Option<&Outcome>, faults: &[FaultRecord]) -> (Outcome, Termination) {
    if faults.is_empty()
        && let Some(o) = game
    {
        let t = if o.capped {
            Termination::Cap
        } else {
            Termination::Normal
        };
        return (o.clone(), t);
    }
    let faulted: Vec<usize> = faults.iter().map(|f| f.seat).collect();
    let standing: Vec<usize> = (0..seats).filter(|s| !faulted.contains(s)).collect();
    let mut ranks = vec![0u8; seats];
    for &s in &standing {
        let better = match game {
            Some(o) => standing.iter().filter(|&&t| o.ranks[t] < o.ranks[s]).count(),
            None => 0,
        };
        ranks[s] = 1 + better as u8;
    }
    for (i, &s) in faulted.iter().enumerate() {
        ranks[s] = (seats - i) as u8;
    }
    let scores = game.map(|o| o.scores.clone()).unwrap_or_else(|| vec![0; seats]);
    let capped = game.is_some_and(|o| o.capped);
    (
        Outcome {
            ranks,
            scores,
            capped,
        },
        Termination::Forfeit,
    )
}

impl FaultRecord {
    /// A recorded fault.
    pub fn new(seat: usize, fault: &Fault, at_move: usize) -> FaultRecord {
        FaultRecord {
            seat,
            kind: fault.kind,
            detail: fault.detail.clone(),
            at_move,
        }
    }
}

/// Appends one record as a line and flushes, so that a game once finished is
/// never lost to a later crash.
///
/// # Errors
/// I/O errors.
pub fn append(path: &Path, record: &GameRecord) -> std::io::Result<()> {
    let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(line.as_bytes())?;
    file.flush()
}

/// Reads every record of a file.
///
/// # Errors
/// I/O errors, or a line that is not a record (with its line number).
pub fn read_all(path: &Path) -> Result<Vec<GameRecord>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let rec: GameRecord = serde_json::from_str(&line)
            .map_err(|e| format!("{}:{}: not a game record: {e}", path.display(), i + 1))?;
        if rec.schema > RECORD_SCHEMA {
            return Err(format!(
                "{}:{}: record schema {} is newer than this referee's {RECORD_SCHEMA}",
                path.display(),
                i + 1,
                rec.schema
            ));
        }
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(seat: usize) -> FaultRecord {
        FaultRecord {
            seat,
            kind: FaultKind::Timeout,
            detail: String::new(),
            at_move: 3,
        }
    }

    #[test]
    fn faulted_seats_are_ranked_last_earliest_fault_lowest() {
        let game = Outcome {
            ranks: vec![1, 2, 3, 4],
            scores: vec![9, 7, 5, 3],
            capped: false,
        };
        let (o, t) = final_outcome(4, Some(&game), &[fault(0), fault(2)]);
        assert_eq!(t, Termination::Forfeit);
        assert_eq!(o.ranks, vec![4, 1, 3, 2]);
        let (o, _) = final_outcome(2, None, &[fault(1)]);
        assert_eq!(o.ranks, vec![1, 2]);
        let (o, t) = final_outcome(2, Some(&game_two()), &[]);
        assert_eq!((o.ranks, t), (vec![2, 1], Termination::Normal));
    }

    fn game_two() -> Outcome {
        Outcome {
            ranks: vec![2, 1],
            scores: vec![0, 1],
            capped: false,
        }
    }

    #[test]
    fn ties_among_standing_seats_are_kept() {
        let game = Outcome {
            ranks: vec![1, 1, 3],
            scores: vec![5, 5, 1],
            capped: true,
        };
        let (o, t) = final_outcome(3, Some(&game), &[]);
        assert_eq!((o.ranks.clone(), t), (vec![1, 1, 3], Termination::Cap));
        let (o, _) = final_outcome(3, Some(&game), &[fault(1)]);
        assert_eq!(o.ranks, vec![1, 3, 2]);
    }
}
