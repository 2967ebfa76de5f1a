//! `referee check-bot`: a compliance check for bot authors — handshake, ping,
//! request ids, legal replies, speed, and leaving on `quit`.

use crate::clock::Limits;
use crate::fault::{Fault, FaultKind};
use crate::game::{BotPool, GameSetup, LogPlace, SeatSetup, play_game_in};
use crate::player::Player;
use crate::spec::BotSpec;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Instant;

/// What one check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Seen to pass.
    Ok,
    /// Seen to fail.
    Fail,
    /// Nothing was seen that could tell (e.g. no move was made): neither passed
    /// nor failed, and never reported as ok.
    NotChecked,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct CheckItem {
    /// What was found.
    pub status: Status,
    /// What was checked.
    pub check: String,
    /// What was seen.
    pub detail: String,
}

/// The whole report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// The game checked on, with its options (`ur`, `cuatto seats=3`): the report
    /// names it, so that reports of several games can be told apart.
    pub game: String,
    /// Lines in order.
    pub items: Vec<CheckItem>,
}

impl CheckReport {
    fn push(&mut self, ok: bool, what: &str, detail: impl Into<String>) {
        self.push_status(if ok { Status::Ok } else { Status::Fail }, what, detail);
    }

    fn push_status(&mut self, status: Status, what: &str, detail: impl Into<String>) {
        self.items.push(CheckItem {
            status,
            check: what.into(),
            detail: detail.into(),
        });
    }

    /// Whether the bot passed: no check failed, and it was seen to play.
    pub fn passed(&self) -> bool {
        self.items.iter().all(|i| i.status != Status::Fail)
            && self
                .items
                .iter()
                .any(|i| i.check == "games" && i.status == Status::Ok)
    }

    /// The report for people.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "check-bot on {}", crate::text::escaped(&self.game));
        for i in &self.items {
            let _ = writeln!(
                s,
                "{} {:<10} {}",
                match i.status {
                    Status::Ok => "ok  ",
                    Status::Fail => "FAIL",
                    Status::NotChecked => "--  ",
                },
                i.check,
                i.detail
                    .lines()
                    .map(crate::text::escaped)
                    .collect::<Vec<_>>()
                    .join("\n           ")
            );
        }
        let count = |st| self.items.iter().filter(|i| i.status == st).count();
        let _ = write!(s, "{}/{} checks passed", count(Status::Ok), self.items.len());
        if count(Status::NotChecked) > 0 {
            let _ = write!(
                s,
                ", {} not checked (nothing seen to check)",
                count(Status::NotChecked)
            );
        }
        let _ = writeln!(
            s,
            " on {}: {}",
            crate::text::escaped(&self.game),
            if self.passed() { "PASSED" } else { "FAILED" }
        );
        s
    }

    /// The report as one JSON object: `passed` and `items`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({ "game": self.game, "passed": self.passed(), "items": self.items })
    }
}

/// What usually makes a bot miss its handshake, said where it happens.
pub const HANDSHAKE_HINTS: &str = "Usual causes:\n\
- output not flushed: the referee waits for each line; flush after every line \
(Python: print(..., flush=True); C: fflush(stdout); Java: System.out.flush())\n\
- input read in blocks: read stdin line by line, never to its end (Python: for line in sys.stdin, or sys.stdin.readline())\n\
- a wrong interpreter or path: bots start with a clean environment and a minimal PATH, \
so use python3 (not python) and absolute paths, and test the command line in a shell first\n\
- a relative path that names nothing: a bot starts in a scratch folder (its HOME and TMPDIR); \
the words of its command that name an existing file or folder where it was launched are made absolute, \
others are not (a path inside a word, as in `-cp=classes`, stays relative: write it as two words)\n\
- the program waits for something else first (a prompt, a file): it must answer `astragal version=1` \
with `id`, `option` lines and `astragalok version=1`";

/// The bot's stderr at the moment it failed, for the report: the last lines.
fn stderr_tail(path: &std::path::Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(600)..]);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn handshake_failure(f: &Fault, stderr: Option<String>) -> String {
    let mut s = f.to_string();
    // A bot that said something wrong is told what; one that said nothing, or
    // left, gets the usual causes.
    let silent = matches!(f.kind, FaultKind::Timeout | FaultKind::Crash)
        || (f.kind == FaultKind::Handshake && f.detail.contains("within"));
    if silent {
        s.push('\n');
        s.push_str(HANDSHAKE_HINTS);
    }
    // A crash's fault already quotes the end of stderr (on one line); the report
    // shows it once, with its line breaks.
    if let Some(err) = stderr {
        if let Some((before, _)) = s.split_once("; stderr ends: ") {
            s = before.to_owned();
        }
        let _ = write!(s, "\nthe bot's stderr ended with:\n{err}");
    }
    s
}

/// Checks a bot on `games` games of `game` (at least one per seat, against
/// `builtin:random` in the other seats).
pub fn check_bot(
    seat: &SeatSetup,
    game: &str,
    options: &[String],
    limits: &Limits,
    games: u64,
) -> CheckReport {
    let mut report = CheckReport {
        game: std::iter::once(game)
            .chain(options.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        items: Vec::new(),
    };
    let Some(seats) = check_conversation(&mut report, seat, game, options, limits) else {
        return report;
    };
    let played = games.max(seats as u64);
    match play_checked_games(seat, game, options, limits, seats, played) {
        Ok(seen) => seen.report(&mut report, played, matches!(seat.spec, BotSpec::Grpc { .. })),
        Err(e) => report.push(false, "game", e),
    }
    report
}

/// The handshake, the name, a ping and a quit, each an item of `report`; the
/// game's seats, or `None` when the bot could not be started or the game is
/// unknown (nothing more can be checked).
fn check_conversation(
    report: &mut CheckReport,
    seat: &SeatSetup,
    game: &str,
    options: &[String],
    limits: &Limits,
) -> Option<usize> {
    let start = Instant::now();
    let log = std::env::temp_dir().join(format!(
        "astragal-check-{}-{:x}.stderr.log",
        std::process::id(),
        crate::seed::os_seed()
    ));
    let started = Player::start(seat, limits, crate::transport::StderrTo::file(log.clone()));
    let tail = stderr_tail(&log);
    let _ = std::fs::remove_file(&log);
    let player = match started {
        Ok(p) => p,
        Err(f) => {
            report.push(false, "handshake", handshake_failure(&f, tail));
            return None;
        }
    };
    let h = &player.hello;
    let options_text: Vec<String> = h.options.iter().map(|o| o.name.clone()).collect();
    report.push(
        true,
        "handshake",
        format!(
            "in {} ms: name {:?}, author {:?}, options [{}]",
            start.elapsed().as_millis(),
            h.name.clone().unwrap_or_default(),
            h.author.clone().unwrap_or_default(),
            options_text.join(", ")
        ),
    );
    report.push(
        h.name.is_some(),
        "name",
        if h.name.is_some() {
            "announced"
        } else {
            "no `id name=...` sent"
        },
    );
    let Ok(info) = engine::game_info(game) else {
        report.push(false, "game", format!("unknown game {game:?}"));
        return None;
    };
    let seats = info.default_seats.max(2);
    let mut player = player;
    let t = Instant::now();
    let table = crate::session::Table {
        game,
        seats,
        seat: 0,
        options,
        bot_salt: crate::seed::os_seed(),
    };
    match player.new_game(&table, limits.ping) {
        Ok(()) => report.push(
            true,
            "ping",
            format!("newgame + isready answered in {} ms", t.elapsed().as_millis()),
        ),
        Err(f) => report.push(false, "ping", f.to_string()),
    }
    let remote = matches!(seat.spec, BotSpec::Grpc { .. });
    let t = Instant::now();
    let left = player.shutdown(limits.quit_grace);
    if remote {
        report.push(
            true,
            "quit",
            "not applicable: a gRPC server lives on between games",
        );
    } else {
        report.push(
            left,
            "quit",
            if left {
                format!("exited {} ms after quit", t.elapsed().as_millis())
            } else {
                format!(
                    "still running {} ms after quit: killed",
                    limits.quit_grace.as_millis()
                )
            },
        );
    }
    Some(seats)
}

/// Plays `played` games, the bot in every seat in turn against the random bot,
/// one after another in one process, as a match plays them; what was seen of
/// the bot, or why a game could not be played.
fn play_checked_games(
    seat: &SeatSetup,
    game: &str,
    options: &[String],
    limits: &Limits,
    seats: usize,
    played: u64,
) -> Result<GamesSeen, String> {
    let random = SeatSetup::new(BotSpec::parse("builtin:random").unwrap_or(BotSpec::Human));
    let mut seen = GamesSeen::default();
    // Game after game in the same process, as a match plays them.
    let mut pool = BotPool::reusing();
    for g in 0..played {
        let my_seat = (g as usize) % seats;
        let table: Vec<SeatSetup> = (0..seats)
            .map(|s| {
                if s == my_seat {
                    seat.clone()
                } else {
                    random.clone()
                }
            })
            .collect();
        let setup = GameSetup {
            game: game.into(),
            options: options.to_vec(),
            seed: crate::seed::os_seed(),
            position: None,
            pairing: None,
        };
        let rec = match play_game_in(&setup, &table, limits, &LogPlace::default(), &mut pool) {
            Ok(r) => r,
            Err(e) => return Err(e.to_string()),
        };
        seen.late += rec.seats[my_seat].late_replies + rec.seats[my_seat].early_replies;
        for m in rec.moves.iter().filter(|m| m.seat == my_seat && !m.fallback) {
            seen.moves += 1;
            seen.total_us += m.us;
            seen.max_us = seen.max_us.max(m.us);
        }
        for f in rec.faults.iter().filter(|f| f.seat == my_seat) {
            let said = format!("{} {}", f.kind, f.detail);
            match seen.faults.iter_mut().find(|(text, _)| *text == said) {
                Some((_, games)) => games.push(g + 1),
                None => seen.faults.push((said, vec![g + 1])),
            }
        }
    }
    Ok(seen)
}

/// What the check saw of the bot over its games.
#[derive(Default)]
struct GamesSeen {
    /// Its own moves (not the referee's fallbacks), their time in all and at most.
    moves: u64,
    total_us: u64,
    max_us: u64,
    /// Replies to old request ids, or sent before their request.
    late: u64,
    /// Each distinct fault, with the games (from 1) it came in.
    faults: Vec<(String, Vec<u64>)>,
}

impl GamesSeen {
    /// The items "games", "ids" and "speed"; `remote`: a gRPC bot, timed with
    /// the network.
    fn report(&self, report: &mut CheckReport, played: u64, remote: bool) {
        let (moves, total_us, max_us, late) = (self.moves, self.total_us, self.max_us, self.late);
        let faults = &self.faults;
        if !faults.is_empty() {
            // One line per distinct fault, with the games it came in.
            let lines: Vec<String> = faults
                .iter()
                .map(|(text, games)| {
                    let list: Vec<String> = games.iter().map(u64::to_string).collect();
                    let which = if games.len() == 1 { "game" } else { "games" };
                    format!("{which} {}: {text}", list.join(", "))
                })
                .collect();
            report.push(false, "games", lines.join("\n"));
        } else if moves == 0 {
            report.push(
                false,
                "games",
                format!("{played} games, but the bot was never asked to move"),
            );
        } else {
            report.push(
                true,
                "games",
                format!(
                    "{played} games from every seat, one after another in one process, {moves} legal moves"
                ),
            );
        }
        // Ids and speed only from what was seen: no move, nothing to say.
        if moves == 0 {
            report.push_status(Status::NotChecked, "ids", "no legal move was made");
            report.push_status(Status::NotChecked, "speed", "no move was timed");
        } else {
            report.push(
                late == 0,
                "ids",
                if late == 0 {
                    format!("all {moves} replies echoed their request id")
                } else {
                    format!("{late} replies to old request ids or sent before their request")
                },
            );
            report.push(
                true,
                "speed",
                format!(
                    "{:.2} ms per move on average, {:.2} ms at most ({moves} moves{})",
                    total_us as f64 / moves as f64 / 1000.0,
                    max_us as f64 / 1000.0,
                    if remote {
                        ", timed at the referee: the network included"
                    } else {
                        ""
                    }
                ),
            );
        }
    }
}
