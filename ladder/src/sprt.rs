//! `ladder sprt`: mirrored pairs between two bots until the GSPRT decides.

use crate::stats::{Pentanomial, Sprt, SprtDecision};
use referee::clock::Limits;
use referee::game::{BotPool, GameSetup, LogPlace, SeatSetup, play_game_in};
use referee::record::Pairing;
use referee::spec::BotSpec;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

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
    /// Seed of pair 0; pair g plays seed + g.
    pub seed: u64,
    /// Deadlines.
    pub limits: Limits,
    /// Bots' stderr logs.
    pub log_dir: Option<PathBuf>,
    /// Start every bot process anew for each game (else each thread keeps the
    /// processes that end a game cleanly, see [`BotPool`]).
    pub fresh_bots: bool,
}

/// How a test ended.
#[derive(Debug, Clone)]
pub struct SprtReport {
    /// The decision (`Continue` = stopped at the game limit).
    pub decision: SprtDecision,
    /// Final log-likelihood ratio.
    pub llr: f64,
    /// The pairs, from the tested bot's side.
    pub pentanomial: Pentanomial,
    /// Games that ended by a fault.
    pub forfeits: u64,
    /// Wall time.
    pub seconds: f64,
}

impl SprtReport {
    /// The report as text.
    pub fn text(&self, cfg: &SprtConfig) -> String {
        let e = self.pentanomial.elo();
        let c = self.pentanomial.counts;
        let verdict = match self.decision {
            SprtDecision::H1 => format!(
                "H1 accepted: {} is stronger than {} by about {} Elo",
                cfg.bots[0].0, cfg.bots[1].0, cfg.test.elo1
            ),
            SprtDecision::H0 => format!(
                "H0 accepted: {} is not {} Elo stronger than {}",
                cfg.bots[0].0, cfg.test.elo1, cfg.bots[1].0
            ),
            SprtDecision::Continue => format!(
                "undecided after {} games (--max-games)",
                2 * self.pentanomial.pairs()
            ),
        };
        format!(
            "{verdict}\nLLR {:.2} (bounds {:.2}, {:.2}; elo0 {}, elo1 {})\n{} pairs, pentanomial 0-½-1-1½-2: {}-{}-{}-{}-{}; forfeits {}\nElo {:+.1} ± {:.1} (95%), LOS {:.1}%, {:.1} s\n",
            self.llr,
            cfg.test.lower,
            cfg.test.upper,
            cfg.test.elo0,
            cfg.test.elo1,
            self.pentanomial.pairs(),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            self.forfeits,
            e.elo,
            e.ci95,
            100.0 * e.los,
            self.seconds
        )
    }
}

/// Runs the test. Pairs are played whole on one thread each, and enter the test in
/// the order they finish.
///
/// # Errors
/// A game that is not for two seats, or a setup the game refuses.
pub fn run(cfg: &SprtConfig, mut progress: impl FnMut(u64, u64)) -> anyhow::Result<SprtReport> {
    if cfg.bots.len() != 2 {
        anyhow::bail!("the SPRT compares two bots");
    }
    engine::new_game(&cfg.game, &cfg.options, Some(2), 0)
        .map_err(|e| anyhow::anyhow!("the SPRT needs a two-seat game: {e}"))?;
    let max_pairs = cfg.max_games.div_ceil(2).max(1);
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = std::time::Instant::now();
    let (tx, rx) = mpsc::channel::<anyhow::Result<(usize, u64)>>();
    let mut penta = Pentanomial::default();
    let mut forfeits = 0;
    let mut decision = SprtDecision::Continue;
    let mut llr = 0.0;
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..cfg.concurrency.max(1) {
            let (tx, next, stop) = (tx.clone(), &next, &stop);
            scope.spawn(move || {
                let mut pool = BotPool::new(!cfg.fresh_bots);
                while !stop.load(Ordering::Relaxed) {
                    let pair = next.fetch_add(1, Ordering::Relaxed);
                    if pair >= max_pairs {
                        return;
                    }
                    if tx.send(play_pair(cfg, pair, &mut pool)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for result in rx {
            let (half_points, pair_forfeits) = match result {
                Ok(x) => x,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            };
            penta.add(half_points);
            forfeits += pair_forfeits;
            progress(2 * penta.pairs(), 2 * max_pairs);
            (decision, llr) = cfg.test.decide(&penta);
            if decision != SprtDecision::Continue {
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
        Ok(())
    })?;
    Ok(SprtReport {
        decision,
        llr,
        pentanomial: penta,
        forfeits,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Plays both seatings of one seed; returns the tested bot's half-points and forfeits.
fn play_pair(cfg: &SprtConfig, pair: u64, pool: &mut BotPool) -> anyhow::Result<(usize, u64)> {
    let mut half = 0;
    let mut forfeits = 0;
    for rotation in 0..2 {
        let setup = GameSetup {
            game: cfg.game.clone(),
            options: cfg.options.clone(),
            seed: cfg.seed.wrapping_add(pair),
            position: None,
            pairing: Some(Pairing {
                group: pair,
                rotation,
            }),
        };
        let seats: Vec<SeatSetup> = (0..2)
            .map(|s| SeatSetup::new(cfg.bots[(s + rotation) % 2].1.clone()))
            .collect();
        let logs = LogPlace {
            dir: cfg.log_dir.clone(),
            tag: format!("sprt-g{pair}r{rotation}-"),
        };
        let rec = play_game_in(&setup, &seats, &cfg.limits, &logs, pool)?;
        // Seat s holds bot (s + rotation) % 2, so the tested bot (0) is in seat (2 - rotation) % 2.
        let seat = (2 - rotation) % 2;
        let (mine, theirs) = (rec.outcome.ranks[seat], rec.outcome.ranks[1 - seat]);
        half += match mine.cmp(&theirs) {
            std::cmp::Ordering::Less => 2,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Greater => 0,
        };
        forfeits += u64::from(rec.termination == referee::Termination::Forfeit);
    }
    Ok((half, forfeits))
}
