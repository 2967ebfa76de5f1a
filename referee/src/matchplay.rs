//! Matches: many games between the same entrants, in mirrored groups (the same seed
//! with the seats rotated, so every entrant meets the same dice from every seat), or
//! with a seed of its own for every game where the entrants cannot be held apart
//! across a group (a gRPC bot is one server that sees every game; a person
//! remembers).

use crate::clock::Limits;
use crate::game::{GameSetup, LogPlace, SeatSetup};
use crate::record::{self, GameRecord, Pairing};
use crate::runner::{GameJob, RunOptions, run_games};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A match to play.
#[derive(Debug, Clone, Default)]
pub struct MatchConfig {
    /// Game id.
    pub game: String,
    /// Game options.
    pub options: Vec<String>,
    /// One entrant per seat.
    pub entrants: Vec<SeatSetup>,
    /// Each entrant's name in the summary (empty: the name its first game shows).
    pub names: Vec<String>,
    /// Start positions (the game's notation): group g starts from
    /// `positions[g % len]`, every rotation of it from the same one, as opening
    /// books are played in chess matches. Empty: the game's own start.
    pub positions: Vec<String>,
    /// Games wanted; rounded up to whole mirrored groups.
    pub games: u64,
    /// Every game its own seed (a group of one game, seats still rotating from
    /// game to game), instead of mirrored groups: for entrants that would see
    /// every game of a group. Costs precision: no two games share dice.
    pub independent_seeds: bool,
    /// Games played at once.
    pub concurrency: usize,
    /// The match's seed: group g plays `engine::group_seed(seed, g)`.
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
    /// Set (by a Ctrl-C handler, say) to start no new game: the games under way
    /// finish and are recorded, and the summary says `interrupted`.
    pub stop: Arc<AtomicBool>,
    /// Games of this match played before (read back from its record file): they
    /// are counted in the summary and not played again.
    pub played_before: Vec<GameRecord>,
}

/// The games of `records` that belong to the match of `game` and `seed`: each with
/// its pairing and its group's seed, one per pairing. A resumed match skips them.
pub fn games_of_match(records: Vec<GameRecord>, game: &str, seed: u64, seats: usize) -> Vec<GameRecord> {
    let mut seen = std::collections::HashSet::new();
    records
        .into_iter()
        .filter(|r| {
            r.game == game
                && r.seats.len() == seats
                && r.pairing.is_some_and(|p| {
                    p.rotation < seats
                        && r.seed == engine::group_seed(seed, p.group)
                        && seen.insert((p.group, p.rotation))
                })
        })
        .collect()
}

/// One entrant's results.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
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
#[derive(Debug, Clone, Default, serde::Serialize)]
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
    /// Games in which a seat could not start or shake hands: not played as asked.
    pub setup_faults: u64,
    /// Games wanted (whole mirrored groups); more than `games` when stopped early.
    pub planned: u64,
    /// Stopped before every planned game was played (Ctrl-C).
    pub interrupted: bool,
    /// Games counted from an earlier run of the same match (`--resume`).
    pub resumed: u64,
}

impl MatchSummary {
    /// Adds one game.
    pub fn add(&mut self, rec: &GameRecord) {
        let n = rec.seats.len();
        let pairing = rec.pairing.unwrap_or(Pairing {
            group: 0,
            rotation: 0,
            mirrored: true,
        });
        self.games += 1;
        self.decisions += rec.moves.len() as u64;
        if rec.termination == record::Termination::Forfeit {
            self.forfeits += 1;
        }
        if rec.faults.iter().any(|f| f.is_setup()) {
            self.setup_faults += 1;
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
                crate::text::escaped(&e.name),
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

/// Which entrant plays `seat` in a game of a mirrored match (the one seating rule,
/// [`crate::seating`], with a match's group orders).
pub fn entrant_at(pairing: Pairing, seat: usize, n: usize) -> usize {
    crate::seating::match_order(n, pairing.group)[crate::seating::entrant_index(pairing.rotation, seat, n)]
}

/// Plays a match on `concurrency` threads, one game per thread at a time.
/// `progress(summary so far, record)` is called (on the calling thread) as each
/// game ends, after its record is appended; when it breaks, no new game starts,
/// the games under way finish and are recorded, and the summary says `interrupted`.
///
/// # Errors
/// A setup the game refuses (checked before any game starts), or a record file
/// that cannot be written (the games already recorded stay).
pub fn run_match(
    cfg: MatchConfig,
    mut progress: impl FnMut(&MatchSummary, &GameRecord) -> ControlFlow<()>,
) -> Result<MatchSummary, MatchError> {
    check_setups(&cfg)?;
    let plan = MatchPlan::of(&cfg);
    let mut summary = MatchSummary {
        entrants: (0..plan.entrants)
            .map(|e| EntrantStats {
                name: cfg.names.get(e).cloned().unwrap_or_default(),
                ..EntrantStats::default()
            })
            .collect(),
        planned: plan.total,
        ..MatchSummary::default()
    };
    let start = std::time::Instant::now();
    let mut done_before = std::collections::HashSet::new();
    for rec in &cfg.played_before {
        if let Some(k) = rec.pairing.and_then(|p| plan.index(p))
            && k < plan.total
            && done_before.insert(k)
        {
            summary.add(rec);
        }
    }
    let skipped = summary.games;
    // The jobs still to play, in order.
    let todo: Vec<u64> = (0..plan.total).filter(|k| !done_before.contains(k)).collect();
    let job = |i: u64| -> Option<GameJob<()>> {
        let &k = todo.get(usize::try_from(i).ok()?)?;
        (!cfg.stop.load(Ordering::Relaxed)).then(|| game_job(&cfg, plan.place(k)))
    };
    let mut failure = None;
    let options = RunOptions {
        stop: Some(cfg.stop.clone()),
        threads: cfg.concurrency,
        keep_bots: !cfg.fresh_bots,
        batch: 1,
    };
    run_games(options, &cfg.limits, job, |batch| {
        for finished in batch {
            let rec = match finished.result {
                Ok(rec) => rec,
                Err(e) => {
                    failure = Some(MatchError::Setup(e));
                    return ControlFlow::Break(());
                }
            };
            if let Some(path) = &cfg.record
                && let Err(e) = record::append(path, &rec)
            {
                failure = Some(MatchError::Io {
                    path: path.clone(),
                    source: e,
                });
                return ControlFlow::Break(());
            }
            summary.add(&rec);
            summary.seconds = start.elapsed().as_secs_f64();
            if progress(&summary, &rec).is_break() {
                cfg.stop.store(true, Ordering::Relaxed);
            }
        }
        ControlFlow::Continue(())
    });
    if let Some(e) = failure {
        return Err(e);
    }
    summary.seconds = start.elapsed().as_secs_f64();
    summary.interrupted = summary.games < plan.total;
    summary.resumed = skipped;
    Ok(summary)
}

/// That every game of the match can be set up (each given position, or the
/// game's start), and its logs' folder made, before any bot starts.
fn check_setups(cfg: &MatchConfig) -> Result<(), MatchError> {
    let positions = cfg.positions.iter().map(Some);
    for position in positions.chain(cfg.positions.is_empty().then_some(None)) {
        crate::game::create_game(
            &GameSetup {
                game: cfg.game.clone(),
                options: cfg.options.clone(),
                seed: cfg.seed,
                position: position.cloned(),
                pairing: None,
            },
            cfg.entrants.len(),
        )?;
    }
    if let Some(dir) = &cfg.log_dir {
        std::fs::create_dir_all(dir).map_err(|e| MatchError::Io {
            path: dir.clone(),
            source: e,
        })?;
    }
    Ok(())
}

/// A match's games and their places: game k is (group k / n, rotation k % n)
/// when mirrored, (group k, rotation k % n) with its own seed.
#[derive(Clone, Copy)]
struct MatchPlan {
    entrants: usize,
    independent_seeds: bool,
    /// Games planned: mirrored matches play whole groups.
    total: u64,
}

impl MatchPlan {
    fn of(cfg: &MatchConfig) -> MatchPlan {
        let n = cfg.entrants.len() as u64;
        MatchPlan {
            entrants: cfg.entrants.len(),
            independent_seeds: cfg.independent_seeds,
            total: if cfg.independent_seeds {
                cfg.games.max(1)
            } else {
                cfg.games.div_ceil(n).max(1) * n
            },
        }
    }

    /// Game `k`'s place.
    fn place(self, k: u64) -> Pairing {
        let n = self.entrants as u64;
        Pairing {
            group: if self.independent_seeds { k } else { k / n },
            rotation: (k % n) as usize,
            mirrored: !self.independent_seeds,
        }
    }

    /// The game at place `p`, if it is one of this match's (a record of
    /// another plan has places this one never gives).
    fn index(self, p: Pairing) -> Option<u64> {
        let n = self.entrants as u64;
        if self.independent_seeds {
            (p.rotation as u64 == p.group % n).then_some(p.group)
        } else {
            Some(p.group * n + p.rotation as u64)
        }
    }
}

/// The game at `pairing`: its seed from the group's, the entrants seated in the
/// group's order and rotated, its logs' names.
fn game_job(cfg: &MatchConfig, pairing: Pairing) -> GameJob<()> {
    let order: Vec<SeatSetup> = crate::seating::match_order(cfg.entrants.len(), pairing.group)
        .into_iter()
        .map(|e| cfg.entrants[e].clone())
        .collect();
    let seats = crate::seating::seated(&order, pairing.rotation);
    GameJob {
        setup: GameSetup {
            game: cfg.game.clone(),
            options: cfg.options.clone(),
            seed: engine::group_seed(cfg.seed, pairing.group),
            position: (!cfg.positions.is_empty())
                .then(|| cfg.positions[(pairing.group % cfg.positions.len() as u64) as usize].clone()),
            pairing: Some(pairing),
        },
        logs: LogPlace {
            dir: cfg.log_dir.clone(),
            tag: format!("g{}r{}-", pairing.group, pairing.rotation),
            names: seats.iter().map(|s| s.spec.short_name()).collect(),
            author_tail: 0,
        },
        seats,
        tag: (),
    }
}

/// Why a match could not be played to its end.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    /// The game refuses the setup (checked before any game starts).
    #[error(transparent)]
    Setup(#[from] engine::SetupError),
    /// A file or folder the match writes (records, logs); the games already
    /// recorded stay.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
}
