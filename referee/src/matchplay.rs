//! Matches: many games between the same entrants, in mirrored groups (the same seed
//! with the seats rotated, so every entrant meets the same dice from every seat).

use crate::clock::Limits;
use crate::game::{BotPool, GameSetup, LogPlace, SeatSetup, play_game_in};
use crate::record::{self, GameRecord, Pairing};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

/// A match to play.
#[derive(Debug, Clone)]
pub struct MatchConfig {
    /// Game id.
    pub game: String,
    /// Game options.
    pub options: Vec<String>,
    /// One entrant per seat.
    pub entrants: Vec<SeatSetup>,
    /// Games wanted; rounded up to whole mirrored groups.
    pub games: u64,
    /// Games played at once.
    pub concurrency: usize,
    /// Seed of group 0 (group g uses seed + g).
    pub seed: u64,
    /// Deadlines.
    pub limits: Limits,
    /// Append records here.
    pub record: Option<PathBuf>,
    /// Bots' stderr logs here.
    pub log_dir: Option<PathBuf>,
    /// Start every bot process anew for each game, instead of keeping each one
    /// that ends a game cleanly for its entrant's next game on the same thread.
    pub fresh_bots: bool,
}

/// One entrant's results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntrantStats {
    /// Name.
    pub name: String,
    /// Games played.
    pub games: u64,
    /// Games ranked alone in first place.
    pub wins: u64,
    /// Games sharing first place.
    pub draws: u64,
    /// Other games.
    pub losses: u64,
    /// Sum of places.
    pub rank_sum: u64,
    /// Sum of scores.
    pub score_sum: i64,
    /// Faults.
    pub faults: u64,
}

impl EntrantStats {
    /// Average place.
    pub fn avg_rank(&self) -> f64 {
        self.rank_sum as f64 / self.games.max(1) as f64
    }

    /// Points per game as a percentage: win 1, shared first 1/k, else 0.
    pub fn score_percent(&self) -> f64 {
        100.0 * (self.wins as f64 + self.draws as f64 * 0.5) / self.games.max(1) as f64
    }
}

/// What a match produced.
#[derive(Debug, Clone, Default)]
pub struct MatchSummary {
    /// Per entrant, in entrant order.
    pub entrants: Vec<EntrantStats>,
    /// Games played.
    pub games: u64,
    /// Decisions made.
    pub decisions: u64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Games that ended by a fault.
    pub forfeits: u64,
}

impl MatchSummary {
    /// Adds one game.
    pub fn add(&mut self, rec: &GameRecord) {
        let n = rec.seats.len();
        let pairing = rec.pairing.unwrap_or(Pairing {
            group: 0,
            rotation: 0,
        });
        self.games += 1;
        self.decisions += rec.moves.len() as u64;
        if rec.termination == record::Termination::Forfeit {
            self.forfeits += 1;
        }
        for seat in 0..n {
            let e = &mut self.entrants[entrant_at(pairing, seat, n)];
            if e.name.is_empty() {
                e.name = rec.seats[seat].name.clone();
            }
            let rank = rec.outcome.ranks[seat];
            let firsts = rec.outcome.ranks.iter().filter(|&&r| r == 1).count();
            e.games += 1;
            match (rank, firsts) {
                (1, 1) => e.wins += 1,
                (1, _) => e.draws += 1,
                _ => e.losses += 1,
            }
            e.rank_sum += u64::from(rank);
            e.score_sum += rec.outcome.scores[seat];
            e.faults += rec.faults.iter().filter(|f| f.seat == seat).count() as u64;
        }
    }

    /// The summary as a table.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<28} {:>6} {:>6} {:>6} {:>6} {:>8} {:>9} {:>10} {:>7}\n",
            "bot", "games", "wins", "draws", "losses", "score%", "avg.rank", "avg.score", "faults"
        );
        for e in &self.entrants {
            s.push_str(&format!(
                "{:<28} {:>6} {:>6} {:>6} {:>6} {:>7.1}% {:>9.2} {:>10.2} {:>7}\n",
                e.name,
                e.games,
                e.wins,
                e.draws,
                e.losses,
                e.score_percent(),
                e.avg_rank(),
                e.score_sum as f64 / e.games.max(1) as f64,
                e.faults
            ));
        }
        s.push_str(&format!(
            "{} games, {} decisions, {} forfeits, {:.1} s ({:.1} games/s)\n",
            self.games,
            self.decisions,
            self.forfeits,
            self.seconds,
            self.games as f64 / self.seconds.max(1e-9)
        ));
        s
    }
}

/// Which entrant plays `seat` in a game of a mirrored match. Rotation `r` seats
/// entrant `(seat + r) % n`; with 3+ seats, odd groups also reverse the entrants'
/// order, so that each entrant sits right after each other one equally often (in
/// games where the next player takes what you leave, that order alone decides).
pub fn entrant_at(pairing: Pairing, seat: usize, n: usize) -> usize {
    let k = (seat + pairing.rotation) % n;
    if n >= 3 && pairing.group % 2 == 1 {
        n - 1 - k
    } else {
        k
    }
}

/// Plays a match on `concurrency` threads, one game per thread at a time.
/// `progress(done, total, record)` is called (on the calling thread) as each game
/// ends, after its record is appended.
///
/// # Errors
/// A setup the game refuses (checked before any game starts), or a record file
/// that cannot be written (the games already recorded stay).
pub fn run_match(
    cfg: MatchConfig,
    mut progress: impl FnMut(u64, u64, &GameRecord),
) -> anyhow::Result<MatchSummary> {
    let n = cfg.entrants.len();
    crate::game::create_game(
        &GameSetup {
            game: cfg.game.clone(),
            options: cfg.options.clone(),
            seed: cfg.seed,
            position: None,
            pairing: None,
        },
        n,
    )?;
    if let Some(dir) = &cfg.log_dir {
        std::fs::create_dir_all(dir)?;
    }
    let groups = cfg.games.div_ceil(n as u64).max(1);
    let total = groups * n as u64;
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut summary = MatchSummary {
        entrants: vec![EntrantStats::default(); n],
        ..MatchSummary::default()
    };
    let start = std::time::Instant::now();
    let (tx, rx) = mpsc::channel::<Result<GameRecord, engine::SetupError>>();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..cfg.concurrency.max(1) {
            let (tx, cfg, next, stop) = (tx.clone(), &cfg, &next, &stop);
            scope.spawn(move || {
                // Each thread keeps its own bots: a process plays one game at a time.
                let mut pool = BotPool::new(!cfg.fresh_bots);
                while !stop.load(Ordering::Relaxed) {
                    let job = next.fetch_add(1, Ordering::Relaxed);
                    if job >= total {
                        return;
                    }
                    let (group, rotation) = (job / n as u64, (job % n as u64) as usize);
                    let setup = GameSetup {
                        game: cfg.game.clone(),
                        options: cfg.options.clone(),
                        seed: cfg.seed.wrapping_add(group),
                        position: None,
                        pairing: Some(Pairing { group, rotation }),
                    };
                    let seats: Vec<SeatSetup> = (0..n)
                        .map(|s| cfg.entrants[entrant_at(Pairing { group, rotation }, s, n)].clone())
                        .collect();
                    let logs = LogPlace {
                        dir: cfg.log_dir.clone(),
                        tag: format!("g{group}r{rotation}-"),
                    };
                    let result = play_game_in(&setup, &seats, &cfg.limits, &logs, &mut pool);
                    if tx.send(result).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut done = 0;
        for result in rx {
            let rec = match result {
                Ok(rec) => rec,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e.into());
                }
            };
            if let Some(path) = &cfg.record
                && let Err(e) = record::append(path, &rec)
            {
                stop.store(true, Ordering::Relaxed);
                return Err(anyhow::anyhow!("cannot write {}: {e}", path.display()));
            }
            done += 1;
            summary.add(&rec);
            progress(done, total, &rec);
        }
        Ok(())
    })?;
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_groups_reverse_the_order_with_three_seats_or_more() {
        let at = |group, rotation, seat, n| entrant_at(Pairing { group, rotation }, seat, n);
        assert_eq!((0..3).map(|s| at(0, 0, s, 3)).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!((0..3).map(|s| at(1, 0, s, 3)).collect::<Vec<_>>(), [2, 1, 0]);
        assert_eq!((0..3).map(|s| at(1, 1, s, 3)).collect::<Vec<_>>(), [1, 0, 2]);
        // Two seats: rotations already cover both orders.
        assert_eq!((0..2).map(|s| at(1, 1, s, 2)).collect::<Vec<_>>(), [1, 0]);
    }
}
