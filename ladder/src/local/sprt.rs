//! `ladder sprt`: mirrored pairs between two bots until the GSPRT decides.

use rating::sprt::estimate::{StoppedEstimate, stopped_estimate};
use rating::sprt::{EloModel, Pentanomial, SequentialTest, Sprt, SprtDecision};
use referee::clock::Limits;
use referee::game::{GameSetup, LogPlace, SeatSetup};
use referee::record::Pairing;
use referee::runner::{Finished, GameJob, RunOptions, run_games};
use referee::seating;
use referee::spec::BotSpec;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A test to run.
#[derive(Debug, Clone)]
pub struct SprtConfig {
    /// Game id (two seats).
    pub game: String,
    /// Game options.
    pub options: Vec<String>,
    /// The bot under test, then its opponent.
    pub bots: Vec<(String, BotSpec)>,
    /// Hypotheses and bounds.
    pub test: Sprt,
    /// Give up undecided after this many games.
    pub max_games: u64,
    /// Games at once.
    pub concurrency: usize,
    /// The test's seed: pair g plays `engine::group_seed(seed, g)`.
    pub seed: u64,
    /// Deadlines.
    pub limits: Limits,
    /// Bots' stderr logs.
    pub log_dir: Option<PathBuf>,
    /// Start every bot process anew for each game (else each thread keeps the
    /// processes that end a game cleanly, see [`referee::BotPool`]).
    pub fresh_bots: bool,
    /// The two games of a pair get their own seeds (no mirrored dice); a pair with
    /// a gRPC bot gets them whatever this says.
    pub independent_seeds: bool,
    /// The bot processes are the user's own programs, so their pairs may be
    /// mirrored on this one machine even isolated (`--trusted-bots`); at
    /// `--sandbox none` they are taken as trusted anyway.
    pub trusted_bots: bool,
    /// Set (by a Ctrl-C handler, say) to stop after the games in flight.
    pub stop: Option<Arc<AtomicBool>>,
}

/// How a test ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SprtReport {
    /// The decision (`Continue` = stopped at the game limit or interrupted).
    pub decision: SprtDecision,
    /// Stopped by [`SprtConfig::stop`] before a decision or the game limit.
    pub interrupted: bool,
    /// Final log-likelihood ratio (`None`: it could not be computed, and the test
    /// did not decide on it).
    pub llr: Option<f64>,
    /// The bounds in force at the end (Wald's, moved inwards by the overshoot).
    pub bounds: (f64, f64),
    /// The pairs, from the tested bot's side.
    pub pentanomial: Pentanomial,
    /// The stopping-aware Elo estimate (in the test's model), once a pair is in.
    pub estimate: Option<StoppedEstimate>,
    /// Games that ended by a fault.
    pub forfeits: u64,
    /// Wall time.
    pub seconds: f64,
}

/// One line of the running state: LLR and bounds, pairs, Elo.
pub fn progress_line(test: &SequentialTest, games: u64, max_games: u64) -> String {
    let c = test.pentanomial.counts;
    let (lower, upper) = test.bounds();
    let elo = pairs_elo_text(&test.pentanomial, test.test.model);
    format!(
        "{games}/{max_games} games  LLR {} [{lower:.2}, {upper:.2}]  pairs {}-{}-{}-{}-{}  {elo}",
        llr_text(test.llr, true),
        c[0],
        c[1],
        c[2],
        c[3],
        c[4]
    )
}

/// An LLR to two places, or a word saying there is none (never a 0 that is not one).
pub fn llr_text(llr: Option<f64>, signed: bool) -> String {
    match llr {
        Some(v) if signed => format!("{v:+.2}"),
        Some(v) => format!("{v:.2}"),
        None => "not computable".to_owned(),
    }
}

/// Elo from the pairs alone, in words: the estimate with its interval and LOS, or for
/// a sweep the exact bound.
pub fn pairs_elo_text(p: &Pentanomial, model: EloModel) -> String {
    let e = p.elo();
    let los = 100.0 * e.los;
    // A near-sweep's interval has an open end: only the other end says anything.
    let elo = match (e.lower.is_finite(), e.upper.is_finite()) {
        (true, true) => format!("Elo {:+.1} ± {:.1} (95%)", e.elo, e.ci95),
        (true, false) => format!("Elo {:+.1}, ≥ {:+.1} (97.5%; no upper end)", e.elo, e.lower),
        (false, true) => format!("Elo {:+.1}, ≤ {:+.1} (97.5%; no lower end)", e.elo, e.upper),
        (false, false) => format!("Elo {:+.1}, no finite interval", e.elo),
    };
    match (p.sweep().zip(p.sweep_bound()), model) {
        (Some((true, b)), _) => format!("a sweep: Elo ≥ {b:+.1} (97.5%), LOS {los:.1}%"),
        (Some((false, b)), _) => format!("swept: Elo ≤ {b:+.1} (97.5%), LOS {los:.1}%"),
        (None, EloModel::Logistic) => format!("{elo}, LOS {los:.1}%"),
        (None, EloModel::Normalized) => format!("nElo {:+.1}, {elo}, LOS {los:.1}%", p.normalized_elo()),
    }
}

impl SprtReport {
    /// The report as text.
    pub fn text(&self, cfg: &SprtConfig) -> String {
        let c = self.pentanomial.counts;
        let unit = match cfg.test.model {
            EloModel::Logistic => "Elo",
            EloModel::Normalized => "nElo",
        };
        let verdict = match self.decision {
            SprtDecision::H1 => format!(
                "H1 accepted: {} is stronger than {} by about {} {unit} or more",
                cfg.bots[0].0, cfg.bots[1].0, cfg.test.elo1
            ),
            SprtDecision::H0 => format!(
                "H0 accepted: {} is not {} {unit} stronger than {}",
                cfg.bots[0].0, cfg.test.elo1, cfg.bots[1].0
            ),
            SprtDecision::Continue if self.interrupted => format!(
                "interrupted, undecided after {} games",
                2 * self.pentanomial.pairs()
            ),
            SprtDecision::Continue => format!(
                "undecided after {} games (--max-games)",
                2 * self.pentanomial.pairs()
            ),
        };
        let plain = pairs_elo_text(&self.pentanomial, cfg.test.model);
        let estimate = match (self.estimate, self.decision, self.pentanomial.sweep()) {
            (Some(e), SprtDecision::H0 | SprtDecision::H1, None) => format!(
                "{unit} {:+.1} [{:+.1}, {:+.1}] (95%, stopping-aware), LOS {:.1}%\nfrom the pairs alone: {plain}",
                e.elo,
                e.lower,
                e.upper,
                100.0 * e.los
            ),
            // A sweep has no finite estimate; a test stopped by its game limit or by
            // hand did not stop on its LLR, so the plain estimate is the unbiased one.
            _ => plain,
        };
        format!(
            "{verdict}\nLLR {} (bounds {:.2}, {:.2}; Wald's {:.2}, {:.2}; {unit} {} against {}, {} model)\n{} pairs, pentanomial 0-½-1-1½-2: {}-{}-{}-{}-{}; forfeits {}\n{estimate}; {:.1} s\n",
            llr_text(self.llr, false),
            self.bounds.0,
            self.bounds.1,
            cfg.test.lower,
            cfg.test.upper,
            cfg.test.elo0,
            cfg.test.elo1,
            cfg.test.model,
            self.pentanomial.pairs(),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            self.forfeits,
            self.seconds
        )
    }
}

/// Runs the test. A pair enters the test when both of its games are in, in the order
/// pairs complete.
///
/// # Errors
/// A game that is not for two seats, or a setup the game refuses.
pub fn run(
    cfg: &SprtConfig,
    mut progress: impl FnMut(&SequentialTest, u64, u64),
) -> Result<SprtReport, SprtError> {
    if cfg.bots.len() != 2 {
        return Err(SprtError::Bots(cfg.bots.len()));
    }
    engine::new_game(&cfg.game, &cfg.options, Some(2), 0).map_err(SprtError::Game)?;
    let max_pairs = cfg.max_games.div_ceil(2).max(1);
    let specs: Vec<String> = cfg.bots.iter().map(|(_, spec)| spec.to_string()).collect();
    let start = std::time::Instant::now();
    let mut test = SequentialTest::new(cfg.test);
    let mut forfeits = 0;
    let mut interrupted = false;
    let mut failure = None;
    // Pairs with one game in: the tested bot's half-points and forfeits so far.
    let mut halves: HashMap<u64, (usize, u64)> = HashMap::new();
    let seeding = crate::store::Seeding::of_group(
        if cfg.independent_seeds {
            crate::store::Seeding::Independent
        } else {
            crate::store::Seeding::Mirrored
        },
        specs.iter().map(String::as_str),
        crate::dealing::processes_of(&cfg.limits.sandbox, cfg.trusted_bots),
    );
    let job = |k: u64| -> Option<GameJob<Pairing>> {
        let pairing = Pairing {
            group: k / 2,
            rotation: (k % 2) as usize,
            mirrored: seeding == crate::store::Seeding::Mirrored,
        };
        (pairing.group < max_pairs).then(|| GameJob {
            setup: GameSetup {
                game: cfg.game.clone(),
                options: cfg.options.clone(),
                seed: seeding.game_seed(engine::group_seed(cfg.seed, pairing.group), pairing.rotation),
                position: None,
                pairing: Some(pairing),
            },
            seats: seating::seated(&[0, 1], pairing.rotation)
                .into_iter()
                .map(|b| SeatSetup::new(cfg.bots[b].1.clone()))
                .collect(),
            logs: LogPlace {
                dir: cfg.log_dir.clone(),
                tag: format!("sprt-g{}r{}-", pairing.group, pairing.rotation),
                names: seating::seated(&[0, 1], pairing.rotation)
                    .into_iter()
                    .map(|b| cfg.bots[b].0.clone())
                    .collect(),
                author_tail: 0,
            },
            tag: pairing,
        })
    };
    let options = RunOptions {
        stop: cfg.stop.clone(),
        threads: cfg.concurrency,
        keep_bots: !cfg.fresh_bots,
        batch: 1,
    };
    run_games(options, &cfg.limits, job, |batch| {
        if cfg.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
            interrupted = true;
            return ControlFlow::Break(());
        }
        for Finished { tag, result } in batch {
            let rec = match result {
                Ok(rec) => rec,
                Err(e) => {
                    failure = Some(SprtError::Game(e));
                    return ControlFlow::Break(());
                }
            };
            // The tested bot (entrant 0) sits where the seating rule put it.
            let seat = (0..2)
                .find(|&s| seating::entrant_index(tag.rotation, s, 2) == 0)
                .unwrap_or(0);
            let (mine, theirs) = (rec.outcome.ranks[seat], rec.outcome.ranks[1 - seat]);
            let half = match mine.cmp(&theirs) {
                std::cmp::Ordering::Less => 2,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Greater => 0,
            };
            let forfeit = u64::from(rec.termination == referee::Termination::Forfeit);
            let Some((other_half, other_forfeit)) = halves.remove(&tag.group) else {
                halves.insert(tag.group, (half, forfeit));
                continue;
            };
            forfeits += forfeit + other_forfeit;
            let decision = test.add(half + other_half);
            progress(&test, 2 * test.pentanomial.pairs(), 2 * max_pairs);
            if decision != SprtDecision::Continue {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(SprtReport {
        decision: test.decision,
        interrupted,
        llr: test.llr,
        bounds: test.bounds(),
        pentanomial: test.pentanomial,
        estimate: stopped_estimate(&cfg.test, &test.pentanomial),
        forfeits,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Why a test could not run.
#[derive(Debug, thiserror::Error)]
pub enum SprtError {
    /// Not two bots.
    #[error("the SPRT compares two bots, not {0}")]
    Bots(usize),
    /// The game refuses the setup (it is not for two seats, say).
    #[error("the SPRT needs a two-seat game: {0}")]
    Game(engine::SetupError),
}
