//! Statistics of mirrored pairs: pentanomial counts, Elo with error and LOS, and the
//! sequential probability ratio test that answers "is A stronger than B".
//!
//! A mirrored pair is two games on the same seed with the seats swapped. Its score
//! for A is 0, ½, 1, 1½ or 2 points: five outcomes, the **pentanomial**. The pairs are
//! independent while the two games within one are not (they share the dice), so the
//! variance is taken over pairs — that is why it is smaller, and honest, compared to
//! counting the games as independent.

pub use crate::elo::{elo_of_score, expected_score, normal_cdf};

/// Mirrored-pair outcomes for one side: `counts[k]` pairs scored `k/2` points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pentanomial {
    /// Pairs scoring 0, ½, 1, 1½, 2.
    pub counts: [u64; 5],
}

/// An Elo estimate with its 95% interval and likelihood of superiority.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct EloEstimate {
    /// Elo difference.
    pub elo: f64,
    /// Half-width of the 95% interval.
    pub ci95: f64,
    /// Probability that the difference is above zero.
    pub los: f64,
}

impl Pentanomial {
    /// Adds a pair scored `half_points` (0..=4) half-points.
    ///
    /// # Panics
    /// `half_points > 4`.
    pub fn add(&mut self, half_points: usize) {
        self.counts[half_points] += 1;
    }

    /// Pairs counted.
    pub fn pairs(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Mean score per game and the variance of one pair's mean score.
    fn moments(&self) -> (f64, f64) {
        let n = self.pairs() as f64;
        if n == 0.0 {
            return (0.5, 0.0);
        }
        let mean = (0..5)
            .map(|k| self.counts[k] as f64 * k as f64 / 4.0)
            .sum::<f64>()
            / n;
        let var = (0..5)
            .map(|k| self.counts[k] as f64 * (k as f64 / 4.0 - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, var)
    }

    /// Mean share of the points.
    pub fn score(&self) -> f64 {
        self.moments().0
    }

    /// Elo difference with its 95% interval (from the pairs' variance) and LOS.
    pub fn elo(&self) -> EloEstimate {
        let (mean, var) = self.moments();
        let n = self.pairs().max(1) as f64;
        let se = (var / n).sqrt();
        let lo = elo_of_score(mean - 1.959964 * se);
        let hi = elo_of_score(mean + 1.959964 * se);
        EloEstimate {
            elo: elo_of_score(mean),
            ci95: (hi - lo) / 2.0,
            los: if se > 0.0 {
                normal_cdf((mean - 0.5) / se)
            } else if mean > 0.5 {
                1.0
            } else if mean < 0.5 {
                0.0
            } else {
                0.5
            },
        }
    }

    /// For a clean sweep (every pair won, or every pair lost), the Elo the sweeping
    /// side is at least, at 97.5% confidence (exact binomial: a side that wins a
    /// pair with probability p sweeps n pairs with probability pⁿ, so p ≥ 0.025^(1/n)).
    /// Sweeps have no finite estimate, so this is what to quote for them.
    pub fn sweep_bound(&self) -> Option<f64> {
        let n = self.pairs();
        if n == 0 {
            return None;
        }
        let p_low = 0.025f64.powf(1.0 / n as f64);
        if self.counts[4] == n {
            Some(elo_of_score(p_low))
        } else if self.counts[0] == n {
            Some(-elo_of_score(p_low))
        } else {
            None
        }
    }

    /// Log-likelihood ratio of H1 (`elo1`) against H0 (`elo0`), logistic Elo, from
    /// the pentanomial mean and variance (fishtest's approximation of the GSPRT).
    pub fn llr(&self, elo0: f64, elo1: f64) -> f64 {
        let (mean, var) = self.moments();
        if var <= 0.0 {
            return 0.0;
        }
        let (s0, s1) = (expected_score(elo0), expected_score(elo1));
        self.pairs() as f64 * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)
    }
}

/// What a sequential test has decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SprtDecision {
    /// Keep playing.
    Continue,
    /// H0 accepted: A is not `elo1` stronger (it is at most `elo0`).
    H0,
    /// H1 accepted: A is `elo1` stronger than B (rather than `elo0`).
    H1,
}

/// A GSPRT between `elo0` and `elo1` with error rates `alpha` and `beta`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sprt {
    /// Elo under H0.
    pub elo0: f64,
    /// Elo under H1.
    pub elo1: f64,
    /// Lower bound: accept H0 at or below `ln(beta / (1 - alpha))`.
    pub lower: f64,
    /// Upper bound: accept H1 at or above `ln((1 - beta) / alpha)`.
    pub upper: f64,
}

impl Sprt {
    /// A test with fishtest's bounds.
    pub fn new(elo0: f64, elo1: f64, alpha: f64, beta: f64) -> Sprt {
        Sprt {
            elo0,
            elo1,
            lower: (beta / (1.0 - alpha)).ln(),
            upper: ((1.0 - beta) / alpha).ln(),
        }
    }

    /// The decision on the pairs so far, with the log-likelihood ratio.
    pub fn decide(&self, p: &Pentanomial) -> (SprtDecision, f64) {
        let llr = p.llr(self.elo0, self.elo1);
        let d = if llr >= self.upper {
            SprtDecision::H1
        } else if llr <= self.lower {
            SprtDecision::H0
        } else {
            SprtDecision::Continue
        };
        (d, llr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    #[test]
    fn normal_cdf_matches_tables() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-1.0) - 0.158655).abs() < 1e-6);
        assert!((normal_cdf(3.0) - 0.998650).abs() < 1e-6);
    }

    #[test]
    fn a_hand_worked_pentanomial() {
        // 10 pairs: 1 x 0, 2 x 0.25, 4 x 0.5, 2 x 0.75, 1 x 1 per game -> mean 0.5.
        let p = Pentanomial {
            counts: [1, 2, 4, 2, 1],
        };
        assert_eq!(p.pairs(), 10);
        let e = p.elo();
        assert!(e.elo.abs() < 1e-9 && (e.los - 0.5).abs() < 1e-6, "{e:?}");
        // variance: (2*0.0625*... ) = (1*.25 + 2*.0625 + 0 + 2*.0625 + 1*.25)/10 = 0.075
        let se = (0.075f64 / 10.0).sqrt();
        let want = (elo_of_score(0.5 + 1.959964 * se) - elo_of_score(0.5 - 1.959964 * se)) / 2.0;
        assert!((e.ci95 - want).abs() < 1e-9 && e.ci95 > 100.0);
        // 3 of 4 points per pair every time: 75%, +190.85 Elo, no variance.
        let sure = Pentanomial {
            counts: [0, 0, 0, 5, 0],
        };
        assert!((sure.elo().elo - 190.85).abs() < 0.01);
        assert_eq!(sure.elo().los, 1.0);
    }

    #[test]
    fn a_sweep_has_a_bound_not_an_estimate() {
        // 50 pairs all won: p >= 0.025^(1/50) = 0.92888, i.e. at least +446 Elo.
        let b = Pentanomial {
            counts: [0, 0, 0, 0, 50],
        }
        .sweep_bound()
        .unwrap();
        assert!((b - 446.4).abs() < 0.1, "{b}");
        assert!(
            Pentanomial {
                counts: [50, 0, 0, 0, 0]
            }
            .sweep_bound()
            .unwrap()
                < -440.0
        );
        assert_eq!(
            Pentanomial {
                counts: [0, 0, 0, 1, 49]
            }
            .sweep_bound(),
            None
        );
    }

    #[test]
    fn sprt_bounds_are_fishtests() {
        let s = Sprt::new(0.0, 10.0, 0.05, 0.05);
        assert!((s.upper - 2.944439).abs() < 1e-6);
        assert!((s.lower + 2.944439).abs() < 1e-6);
    }

    /// Plays simulated mirrored pairs where A's true edge is `elo` and returns the
    /// decision.
    fn run_sprt(elo: f64, seed: u64) -> SprtDecision {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let s = Sprt::new(0.0, 20.0, 0.05, 0.05);
        let p_win = expected_score(elo);
        let mut p = Pentanomial::default();
        for _ in 0..200_000 {
            let mut points = 0;
            for _ in 0..2 {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                points += if u < p_win { 2 } else { 0 };
            }
            p.add(points);
            let (d, _) = s.decide(&p);
            if d != SprtDecision::Continue {
                return d;
            }
        }
        SprtDecision::Continue
    }

    #[test]
    fn sprt_accepts_the_true_hypothesis_nearly_always() {
        // alpha = beta = 5%: over 40 runs each, expect ~2 wrong answers; allow 6.
        let wrong_h1 = (0..40).filter(|&s| run_sprt(0.0, s) == SprtDecision::H1).count();
        let wrong_h0 = (0..40)
            .filter(|&s| run_sprt(20.0, 100 + s) == SprtDecision::H0)
            .count();
        assert!(wrong_h1 <= 6, "accepted H1 at elo 0 in {wrong_h1}/40");
        assert!(wrong_h0 <= 6, "accepted H0 at elo 20 in {wrong_h0}/40");
        // And a large edge is decided for H1 every time.
        assert!((0..10).all(|s| run_sprt(100.0, 500 + s) == SprtDecision::H1));
    }
}
