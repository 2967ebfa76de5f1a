//! The Elo estimate at the end of a sequential test.
//!
//! A test that stops when the LLR leaves its bounds stops early on lucky runs, so the
//! plain mean of its pairs is biased away from the middle. The estimate here is the
//! one fishtest shows (M. Van den Bergh's method): the LLR is treated as a Brownian
//! motion with drift between the two bounds, and for a candidate Elo the question is
//! how likely a test at that Elo ends "worse" than this one did (it fails sooner,
//! passes later, or a pass becomes a fail). The median-unbiased estimate is the Elo
//! where that probability is ½; the interval's ends are where it is 2.5% and 97.5%;
//! the LOS is its value at Elo 0. The Brownian model is a good approximation while the
//! Elo difference is small; far from the bounds it is only a guide.

use crate::sprt::{EloModel, NELO_PER_T, Pentanomial, Sprt, expected_score, moments_of, normal_cdf};

/// The stopping-aware estimate, in the test's Elo model.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StoppedEstimate {
    /// Median-unbiased Elo.
    pub elo: f64,
    /// Lower end of the 95% interval.
    pub lower: f64,
    /// Upper end of the 95% interval.
    pub upper: f64,
    /// Probability that the tested bot is the stronger.
    pub los: f64,
}

/// Where the search for an Elo stops (logistic Elo).
const SEARCH_LIMIT: f64 = 1000.0;

/// The estimate for a test that saw `pentanomial`; `None` before the first pair.
pub fn stopped_estimate(test: &Sprt, pentanomial: &Pentanomial) -> Option<StoppedEstimate> {
    if pentanomial.pairs() == 0 {
        return None;
    }
    let path = LlrPath::new(test, pentanomial);
    let elo_in_model = |logistic: f64| match test.model {
        EloModel::Logistic => logistic,
        EloModel::Normalized => (expected_score(logistic) - 0.5) / path.sigma_per_game * NELO_PER_T,
    };
    Some(StoppedEstimate {
        elo: elo_in_model(path.elo_at(0.5)),
        lower: elo_in_model(path.elo_at(0.975)),
        upper: elo_in_model(path.elo_at(0.025)),
        los: path.worse_outcome(0.0),
    })
}

/// The test's LLR as a Brownian motion: the point where it stopped, and its drift and
/// variance per pair for a given true score.
struct LlrPath {
    lower: f64,
    upper: f64,
    /// Expected score per game under H0 and H1.
    s0: f64,
    s1: f64,
    /// Variance of one pair's score per game.
    variance: f64,
    sigma_per_game: f64,
    /// Pairs (in the regularized count) at the stop, and the LLR there.
    time: f64,
    llr: f64,
}

impl LlrPath {
    fn new(test: &Sprt, pentanomial: &Pentanomial) -> LlrPath {
        let (distribution, n) = pentanomial.distribution();
        let (mean, variance) = moments_of(&distribution);
        let sigma_per_game = pentanomial.sigma_per_game();
        let score_of = |elo: f64| match test.model {
            EloModel::Logistic => expected_score(elo),
            EloModel::Normalized => elo / NELO_PER_T * sigma_per_game + 0.5,
        };
        let mut path = LlrPath {
            lower: test.lower,
            upper: test.upper,
            s0: score_of(test.elo0),
            s1: score_of(test.elo1),
            variance,
            sigma_per_game,
            time: n,
            llr: 0.0,
        };
        // The LLR's Brownian approximation at the observed mean; where it lies past a
        // bound, the path is taken to have crossed there, at the time its slope gives.
        let slope = path.drift(mean);
        path.llr = n * slope;
        if path.llr < path.lower {
            path.time = path.lower / slope;
            path.llr = path.lower;
        } else if path.llr > path.upper {
            path.time = path.upper / slope;
            path.llr = path.upper;
        }
        path
    }

    /// Drift of the LLR per pair when the true expected score is `s`.
    fn drift(&self, s: f64) -> f64 {
        (s - (self.s0 + self.s1) / 2.0) * (self.s1 - self.s0) / self.variance
    }

    /// The probability that a test at logistic Elo `elo` ends worse than this one:
    /// the LOS at Elo 0.
    fn worse_outcome(&self, elo: f64) -> f64 {
        let motion = Brownian {
            lower: self.lower,
            upper: self.upper,
            drift: self.drift(expected_score(elo)),
            variance: (self.s1 - self.s0).powi(2) / self.variance,
        };
        motion.passes_right_of(self.time, self.llr).clamp(0.0, 1.0)
    }

    /// The logistic Elo at which [`LlrPath::worse_outcome`] is `target`: a stronger
    /// bot makes a worse outcome less likely, so it falls with the Elo, and bisection
    /// finds it; the search limit when there is no such Elo within it.
    fn elo_at(&self, target: f64) -> f64 {
        let (mut lo, mut hi) = (-SEARCH_LIMIT, SEARCH_LIMIT);
        if self.worse_outcome(lo) <= target {
            return lo;
        }
        if self.worse_outcome(hi) >= target {
            return hi;
        }
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if self.worse_outcome(mid) > target {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi - lo < 1e-9 {
                break;
            }
        }
        0.5 * (lo + hi)
    }
}

/// Brownian motion from 0 with drift, absorbed at `lower < 0 < upper`.
struct Brownian {
    lower: f64,
    upper: f64,
    drift: f64,
    variance: f64,
}

impl Brownian {
    /// The probability that the path ends "to the right of" the point `(time, y)`:
    /// it is absorbed at the upper bound, or at the lower one after `time`, or is
    /// above `y` at `time`. The eigenfunction series of the absorbed motion converges
    /// fast unless `time` is small against the width or the drift dominates; there,
    /// Siegmund's approximation is used.
    fn passes_right_of(&self, time: f64, y: f64) -> f64 {
        let width = self.upper - self.lower;
        let gamma = self.drift / self.variance;
        if self.variance * time / (width * width) < 1e-2 || (gamma * width).abs() > 15.0 {
            self.siegmund(time, y)
        } else {
            self.series(time, y)
        }
    }

    fn series(&self, time: f64, y: f64) -> f64 {
        use std::f64::consts::PI;
        let (mu, s2) = (self.drift, self.variance);
        let width = self.upper - self.lower;
        let x = -self.lower;
        let y = y - self.lower;
        let gamma = mu / s2;
        let eigen = |n: f64| (n * PI / width).powi(2) * s2 / 2.0 + mu * mu / s2 / 2.0;
        // ∫ e^(γv) sin(nπv/A) dv, times 2/A e^(-γv), evaluated at y.
        let primitive = |n: f64| {
            (2.0 * width * gamma * (PI * n * y / width).sin() - 2.0 * PI * n * (PI * n * y / width).cos())
                / (width * width * gamma * gamma + PI * PI * n * n)
        };
        let lead = (-eigen(1.0) * time - x * gamma + y * gamma).exp();
        let mut sum = 0.0;
        for n in 1..10_000 {
            let n = f64::from(n);
            let decay = (-(eigen(n) - eigen(1.0)) * time).exp();
            let term = decay * primitive(n);
            sum += term * (n * PI * x / width).sin();
            if (lead * term).abs() <= 1e-9 {
                break;
            }
        }
        // The probability of ending at the upper bound at any time.
        let upper_first = if gamma * width > 30.0 {
            (-2.0 * gamma * x).exp()
        } else if (gamma * width).abs() < 1e-8 {
            (width - x) / width
        } else {
            (1.0 - (2.0 * gamma * (width - x)).exp()) / (1.0 - (2.0 * gamma * width).exp())
        };
        upper_first + lead * sum
    }

    fn siegmund(&self, time: f64, y: f64) -> f64 {
        let sd = (time * self.variance).sqrt();
        let offset = self.drift * time;
        let gamma = self.drift / self.variance;
        let (a, b) = (self.lower, self.upper);
        let z = (y - offset) / sd;
        let za = (-y + offset + 2.0 * a) / sd;
        let zb = (y - offset - 2.0 * b) / sd;
        // e^(2γc) Φ(z) with the exponential kept inside when it would overflow
        // (Φ's asymptotic series in the far tail).
        let weighted = |gc: f64, z: f64| {
            if gc >= 5.0 {
                -(-(z * z) / 2.0 + 2.0 * gc).exp() / (2.0 * std::f64::consts::PI).sqrt()
                    * (1.0 / z - 1.0 / z.powi(3))
            } else {
                (2.0 * gc).exp() * normal_cdf(z)
            }
        };
        normal_cdf(z) + weighted(gamma * a, za) - weighted(gamma * b, zb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values computed independently with fishtest's `stat_util.SPRT_elo`
    /// (server/fishtest/stats at b8eecff220b5, Python with SciPy), which reports logistic Elo.
    /// Counts, model, elo0, elo1, and fishtest's Elo, interval ends and LOS.
    type Case = ([u64; 5], EloModel, f64, f64, [f64; 4]);

    #[test]
    fn the_estimate_matches_fishtests() {
        let table: &[Case] = &[
            (
                [10789, 19328, 33806, 19402, 10543],
                EloModel::Logistic,
                -3.0,
                1.0,
                [
                    -0.9925365594552716,
                    -3.488492131294004,
                    1.4885858954857965,
                    0.18803479310880994,
                ],
            ),
            (
                [40, 160, 320, 200, 55],
                EloModel::Logistic,
                0.0,
                10.0,
                [
                    14.195237708957029,
                    1.6812903697791977,
                    26.453844143045146,
                    0.9866700703147508,
                ],
            ),
            (
                [40, 160, 320, 200, 55],
                EloModel::Normalized,
                0.0,
                2.0,
                [
                    15.701319659069483,
                    3.7908909890241067,
                    27.648756260798283,
                    0.9951213695611555,
                ],
            ),
            (
                [120, 480, 900, 470, 90],
                EloModel::Logistic,
                0.0,
                5.0,
                [
                    -5.067048913635959,
                    -12.615068991527892,
                    2.5734260353002902,
                    0.09607767860724836,
                ],
            ),
        ];
        for &(counts, model, elo0, elo1, [elo, lower, upper, los]) in table {
            let p = Pentanomial { counts };
            let test = Sprt::new(model, elo0, elo1, 0.05, 0.05).unwrap();
            let got = stopped_estimate(&test, &p).unwrap();
            let in_model = |logistic: f64| match model {
                EloModel::Logistic => logistic,
                EloModel::Normalized => (expected_score(logistic) - 0.5) / p.sigma_per_game() * NELO_PER_T,
            };
            for (what, g, w) in [
                ("elo", got.elo, in_model(elo)),
                ("lower", got.lower, in_model(lower)),
                ("upper", got.upper, in_model(upper)),
                ("los", got.los, los),
            ] {
                assert!((g - w).abs() < 1e-4, "{counts:?} {model}: {what} {g} against {w}");
            }
        }
        assert_eq!(
            stopped_estimate(
                &Sprt::new(EloModel::Logistic, 0.0, 5.0, 0.05, 0.05).unwrap(),
                &Pentanomial::default()
            ),
            None
        );
    }
}
