//! `referee check-bot`: a compliance check for bot authors — handshake, ping,
//! request ids, legal replies, speed, and leaving on `quit`.

use crate::clock::Limits;
use crate::game::{BotPool, GameSetup, LogPlace, SeatSetup, play_game_in};
use crate::player::Player;
use crate::spec::BotSpec;
use std::fmt::Write as _;
use std::time::Instant;

/// One line of the report.
#[derive(Debug, Clone)]
pub struct CheckItem {
    /// Passed.
    pub ok: bool,
    /// What was checked.
    pub what: String,
    /// What was seen.
    pub detail: String,
}

/// The whole report.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    /// Lines in order.
    pub items: Vec<CheckItem>,
}

impl CheckReport {
    fn push(&mut self, ok: bool, what: &str, detail: impl Into<String>) {
        self.items.push(CheckItem {
            ok,
            what: what.into(),
            detail: detail.into(),
        });
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.items.iter().all(|i| i.ok)
    }

    /// The report for people.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for i in &self.items {
            let _ = writeln!(
                s,
                "{} {:<10} {}",
                if i.ok { "ok  " } else { "FAIL" },
                i.what,
                crate::text::escaped(&i.detail)
            );
        }
        let passed = self.items.iter().filter(|i| i.ok).count();
        let _ = writeln!(s, "{passed}/{} checks passed", self.items.len());
        s
    }
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
    let mut report = CheckReport::default();
    let start = Instant::now();
    let player = match Player::start(seat, limits, None) {
        Ok(p) => p,
        Err(f) => {
            report.push(false, "handshake", f.to_string());
            return report;
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
        return report;
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

    let random = SeatSetup::new(BotSpec::parse("builtin:random").unwrap_or(BotSpec::Human));
    let (mut moves, mut total_ms, mut max_ms, mut late, mut faults) = (0u64, 0u64, 0u64, 0u64, Vec::new());
    // Game after game in the same process, as a match plays them.
    let mut pool = BotPool::reusing();
    for g in 0..games.max(seats as u64) {
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
            Err(e) => {
                report.push(false, "game", e.to_string());
                return report;
            }
        };
        late += rec.seats[my_seat].late_replies + rec.seats[my_seat].early_replies;
        for m in rec.moves.iter().filter(|m| m.seat == my_seat && !m.fallback) {
            moves += 1;
            total_ms += m.ms;
            max_ms = max_ms.max(m.ms);
        }
        faults.extend(
            rec.faults
                .iter()
                .filter(|f| f.seat == my_seat)
                .map(|f| format!("game {}: {} {}", g + 1, f.kind, f.detail)),
        );
    }
    report.push(
        faults.is_empty(),
        "games",
        if faults.is_empty() {
            format!(
                "{} games from every seat, one after another in one process, {moves} legal moves",
                games.max(seats as u64)
            )
        } else {
            faults.join("; ")
        },
    );
    report.push(
        late == 0,
        "ids",
        if late == 0 {
            "every reply echoed its request id".to_owned()
        } else {
            format!("{late} replies to old request ids or sent before their request")
        },
    );
    report.push(
        true,
        "speed",
        format!(
            "{:.1} ms per move on average, {max_ms} ms at most",
            total_ms as f64 / moves.max(1) as f64
        ),
    );
    report
}
