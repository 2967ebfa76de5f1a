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

/// Longest fault detail kept in a record, in bytes: a detail can quote what a bot
/// sent (a move, the end of its stderr), and a record must stay small whatever a
/// bot sends.
pub const FAULT_DETAIL_KEPT: usize = 1024;

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

impl std::str::FromStr for Termination {
    type Err = String;

    /// The word [`Termination`]'s `Display` writes.
    fn from_str(s: &str) -> Result<Termination, String> {
        match s {
            "normal" => Ok(Termination::Normal),
            "cap" => Ok(Termination::Cap),
            "forfeit" => Ok(Termination::Forfeit),
            _ => Err(format!("{s:?} is not a termination (normal, cap or forfeit)")),
        }
    }
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
    /// The `--bot` spec; empty (and not written) for a seat shown by a public
    /// name, whose spec is the host's ([`crate::setup::SeatSetup::shown_as`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spec: String,
    /// The entrant's name in a ladder or tournament, when it plays in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrant: Option<String>,
    /// The SHA-256 of the files the bot ran from (an author's upload, as a
    /// ladder keeps it): the exact bot, to play the game again with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// Replies to old requests that were discarded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_replies: u64,
    /// Replies sent before their request (so not answers to it) that were discarded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub early_replies: u64,
}

/// One decision. Equality ignores `us`, which records do not keep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MoveRecord {
    /// Who decided.
    pub seat: usize,
    /// The move, in the game's notation.
    #[serde(rename = "move")]
    pub mv: String,
    /// Milliseconds from the flushed request to the reply.
    pub ms: u64,
    /// The same in microseconds, in memory only (records keep whole milliseconds):
    /// `check-bot` reports the speed of bots that answer in under a millisecond.
    #[serde(skip)]
    pub us: u64,
    /// Played by the referee for a seat that had faulted (3+ seats).
    #[serde(default, skip_serializing_if = "is_false")]
    pub fallback: bool,
    /// Info lines the bot sent meanwhile (kept, never scored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<String>,
}

impl PartialEq for MoveRecord {
    fn eq(&self, other: &Self) -> bool {
        let Self {
            seat,
            mv,
            ms,
            us: _,
            fallback,
            info,
        } = self;
        (seat, mv, ms, fallback, info) == (&other.seat, &other.mv, &other.ms, &other.fallback, &other.info)
    }
}

impl Eq for MoveRecord {}

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
    /// Charged while seating the players, before any request (a program that did
    /// not start, a handshake or ready check that failed): then at move 0, and the
    /// seat need not have been to act.
    #[serde(default, skip_serializing_if = "is_false")]
    pub setup: bool,
}

impl FaultKind {
    /// Whether a fault of this kind can happen while a player is seated: before the
    /// game's first request.
    pub fn can_happen_in_setup(self) -> bool {
        !matches!(self, FaultKind::Timeout | FaultKind::Illegal)
    }

    /// Whether a fault of this kind can happen only in setup (older records carry no
    /// `setup` flag; these kinds say it).
    pub fn only_in_setup(self) -> bool {
        matches!(self, FaultKind::Spawn | FaultKind::Handshake | FaultKind::Stall)
    }
}

/// What one seat's author may read of a game and no one else: never part of the
/// record, which is public.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatPrivateLog {
    /// The end of what the bot wrote to stderr during the game.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Bytes of stderr before `stderr` that were not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stderr_dropped: u64,
    /// Each fault of the seat in full (kind, public detail and its private part),
    /// where it had a private part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
}

impl SeatPrivateLog {
    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.stderr.is_empty() && self.stderr_dropped == 0 && self.faults.is_empty()
    }
}

/// Where a game stands in a mirrored match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pairing {
    /// The group: games of a mirrored group share the seed.
    pub group: u64,
    /// Seat rotation within the group: seat `s` is played by entrant `(s + rotation) % seats`.
    pub rotation: usize,
    /// Whether the group's games share one seed (mirrored), or each rotation
    /// was dealt its own (`"mirrored": false`): then the group's games are
    /// independent, and no statistic pairs them. Records from before the field
    /// were all mirrored.
    #[serde(default = "mirrored_by_default", skip_serializing_if = "is_true")]
    pub mirrored: bool,
}

fn mirrored_by_default() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
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
    /// Seed. Written as a number; read as a number or a decimal string (the form
    /// the ladder's web API gives it, as JavaScript would round the number).
    #[serde(deserialize_with = "number_or_string")]
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

/// A `u64` given as a JSON number or as a string of decimal digits.
fn number_or_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Text(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("seed {t:?} is out of range"))),
        Either::Text(t) => Err(serde::de::Error::custom(format!("seed {t:?} is not a number"))),
    }
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
            detail: crate::text::capped(&fault.full_detail(), FAULT_DETAIL_KEPT),
            at_move,
            setup: false,
        }
    }

    /// A fault charged while seating the players.
    pub fn in_setup(seat: usize, fault: &Fault) -> FaultRecord {
        FaultRecord {
            setup: true,
            ..FaultRecord::new(seat, fault, 0)
        }
    }

    /// Whether it was charged in setup (the flag, or a kind that only happens there).
    pub fn is_setup(&self) -> bool {
        self.setup || self.kind.only_in_setup()
    }
}

/// Appends one record as a line and flushes, so that a game once finished is
/// never lost to a later crash. A file whose last line was torn (a crash while
/// appending) gets a line break first: the torn line stays bad on its own, and this
/// record is not glued to it.
///
/// # Errors
/// I/O errors.
pub fn append(path: &Path, record: &GameRecord) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let json = serde_json::to_string(record).map_err(std::io::Error::other)?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let len = file.metadata()?.len();
    let mut last = [b'\n'];
    if len > 0 {
        file.read_exact_at(&mut last, len - 1)?;
    }
    let mut line = String::with_capacity(json.len() + 2);
    if last[0] != b'\n' {
        line.push('\n');
    }
    line.push_str(&json);
    line.push('\n');
    file.write_all(line.as_bytes())?;
    file.flush()
}

/// The lines of a record file: the records that parse, and each line that does not.
#[derive(Debug, Default)]
pub struct RecordLines {
    /// Records with their line numbers (from 1).
    pub records: Vec<(usize, GameRecord)>,
    /// Lines that are not records: line number and why.
    pub bad: Vec<(usize, String)>,
}

/// Reads every line of a record file, keeping the good ones and naming each bad one
/// (a torn line from a crash costs that line only). Blank lines are skipped.
///
/// # Errors
/// The file cannot be read, or holds no line at all (an empty file is not "0 games").
pub fn read_lines(path: &Path) -> Result<RecordLines, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = RecordLines::default();
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("{}:{}: {e}", path.display(), number + 1))?;
        if n == 0 {
            break;
        }
        number += 1;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_record(&buf) {
            Ok(rec) => out.records.push((number, rec)),
            Err(why) => out.bad.push((number, why)),
        }
    }
    if out.records.is_empty() && out.bad.is_empty() {
        return Err(format!(
            "{}: holds no game records (the file is empty)",
            path.display()
        ));
    }
    Ok(out)
}

/// One line as a record.
fn parse_record(line: &[u8]) -> Result<GameRecord, String> {
    let rec: GameRecord = serde_json::from_slice(line).map_err(|e| format!("not a game record: {e}"))?;
    if rec.schema > RECORD_SCHEMA {
        return Err(format!(
            "record schema {} is newer than this referee's {RECORD_SCHEMA}",
            rec.schema
        ));
    }
    Ok(rec)
}

/// Reads every record of a file, refusing the file at its first bad line.
///
/// # Errors
/// I/O errors, an empty file, or a line that is not a record (with its line number).
pub fn read_all(path: &Path) -> Result<Vec<GameRecord>, String> {
    let lines = read_lines(path)?;
    if let Some((n, why)) = lines.bad.first() {
        return Err(format!("{}:{n}: {why}", path.display()));
    }
    Ok(lines.records.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_reads_as_a_number_or_as_a_string_and_nothing_else() {
        let seed = |v: serde_json::Value| number_or_string(v).map_err(|e| e.to_string());
        assert_eq!(
            seed(serde_json::json!(11436449778045374795u64)),
            Ok(11436449778045374795)
        );
        assert_eq!(
            seed(serde_json::json!("11436449778045374795")),
            Ok(11436449778045374795)
        );
        for bad in [
            serde_json::json!("-1"),
            serde_json::json!(""),
            serde_json::json!("1e3"),
            serde_json::json!("18446744073709551616"),
            serde_json::json!(1.5),
        ] {
            assert!(seed(bad.clone()).is_err(), "{bad} read as a seed");
        }
    }

    #[test]
    fn a_pairing_says_mirrored_by_leaving_the_word_out_and_dealt_apart_in_so_many_words() {
        let mirrored = Pairing {
            group: 3,
            rotation: 1,
            mirrored: true,
        };
        // Mirrored pairings are written as before the field was added, and a
        // pairing of an older record reads as mirrored (all were).
        let text = serde_json::to_string(&mirrored).unwrap();
        assert_eq!(text, r#"{"group":3,"rotation":1}"#);
        assert_eq!(serde_json::from_str::<Pairing>(&text).unwrap(), mirrored);
        let apart = Pairing {
            mirrored: false,
            ..mirrored
        };
        let text = serde_json::to_string(&apart).unwrap();
        assert_eq!(text, r#"{"group":3,"rotation":1,"mirrored":false}"#);
        assert_eq!(serde_json::from_str::<Pairing>(&text).unwrap(), apart);
        assert!(serde_json::from_str::<Pairing>(r#"{"group":3,"rotation":1,"mirrored":"no"}"#).is_err());
    }

    fn fault(seat: usize) -> FaultRecord {
        FaultRecord {
            seat,
            kind: FaultKind::Timeout,
            detail: String::new(),
            at_move: 3,
            setup: false,
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
