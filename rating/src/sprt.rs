//! Statistics of mirrored pairs: pentanomial counts, Elo with error and LOS, and the
//! sequential probability ratio test that answers "is A stronger than B".
//!
//! A mirrored pair is two games on the same seed with the seats swapped. Its score
//! for A is 0, ½, 1, 1½ or 2 points: five outcomes, the **pentanomial**. The pairs are
//! independent while the two games within one are not (they share the dice), so the
//! variance is taken over pairs — that is why it is smaller, and honest, compared to
//! counting the games as independent.
//!
//! # The sequential test
//! The log-likelihood ratio is the exact generalized one (GSPRT): under each
//! hypothesis the pentanomial distribution is the maximum-likelihood one among all
//! distributions whose expected score (logistic Elo) or whose t-value (normalized
//! Elo) is the hypothesis', and the LLR is the log ratio of the two likelihoods. This
//! is how fishtest decides (M. Van den Bergh's derivation: under a constraint on the
//! mean, the maximizing distribution is `p̂ᵢ / (1 + x (aᵢ - s))` for the root `x` of a
//! secular equation). Empty cells get a small weight (10⁻³ of a pair) so that a sweep
//! still has a finite, deciding LLR. The bounds are Wald's, moved inwards by the
//! overshoot measured so far on this run (Siegmund's correction, as fishtest does), so
//! that the error rates are near their nominal values even when one pair moves the
//! LLR a lot.

pub mod estimate;

pub use crate::elo::{elo_of_score, expected_score, normal_cdf};

/// Beyond this an Elo difference is the clamp of [`elo_of_score`], not a number.
const MAX_ELO: f64 = 3000.0;

/// The chance left outside a one-sided exact bound.
const TAIL: f64 = 0.025;

/// Weight given to an empty pentanomial cell before the LLR is computed.
const EMPTY_CELL: f64 = 1e-3;

/// Normalized Elo per unit of t-value per game: `800 / ln 10`.
pub const NELO_PER_T: f64 = 800.0 / std::f64::consts::LN_10;

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
    /// Half-width of the 95% interval (infinite when an end is).
    pub ci95: f64,
    /// The interval's lower end; `-∞` when the score's interval reaches 0.
    pub lower: f64,
    /// The interval's upper end; `+∞` when the score's interval reaches 1 (a
    /// near-sweep: no finite Elo is too high for it, so only `lower` means anything).
    pub upper: f64,
    /// Probability that the difference is above zero.
    pub los: f64,
}

/// A pair's score per game: 0, ¼, ½, ¾, 1.
const PAIR_SCORE: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// Mean and variance of a distribution on [`PAIR_SCORE`].
pub(crate) fn moments_of(p: &[f64; 5]) -> (f64, f64) {
    let total: f64 = p.iter().sum();
    let mean = (0..5).map(|k| p[k] * PAIR_SCORE[k]).sum::<f64>() / total;
    let var = (0..5).map(|k| p[k] * (PAIR_SCORE[k] - mean).powi(2)).sum::<f64>() / total;
    (mean, var)
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

    /// The same pairs from the other side.
    pub fn reversed(&self) -> Pentanomial {
        let mut counts = self.counts;
        counts.reverse();
        Pentanomial { counts }
    }

    /// Mean score per game and the variance of one pair's mean score.
    fn moments(&self) -> (f64, f64) {
        if self.pairs() == 0 {
            return (0.5, 0.0);
        }
        moments_of(&self.counts.map(|c| c as f64))
    }

    /// Mean share of the points.
    pub fn score(&self) -> f64 {
        self.moments().0
    }

    /// The observed distribution of pairs, empty cells given [`EMPTY_CELL`], and the
    /// number of pairs it stands for.
    pub(crate) fn distribution(&self) -> ([f64; 5], f64) {
        let c = self.counts.map(|c| if c == 0 { EMPTY_CELL } else { c as f64 });
        let n: f64 = c.iter().sum();
        (c.map(|x| x / n), n)
    }

    /// The per-game standard deviation that normalized Elo is measured in:
    /// `sqrt(2 · var(pair score))`, from the regularized distribution.
    pub fn sigma_per_game(&self) -> f64 {
        let (p, _) = self.distribution();
        (2.0 * moments_of(&p).1).sqrt()
    }

    /// Elo difference with its 95% interval (from the pairs' variance) and LOS.
    /// When every pair scored the same there is no variance to measure: the
    /// interval is then the exact one of [`Pentanomial::uniform_range`] (its wider
    /// side), infinite for a sweep — quote [`Pentanomial::sweep_bound`] there.
    pub fn elo(&self) -> EloEstimate {
        let (mean, var) = self.moments();
        let n = self.pairs().max(1) as f64;
        let se = (var / n).sqrt();
        let elo = elo_of_score(mean);
        let (lower, upper) = match self.uniform_range() {
            Some((lo, hi)) => (lo, hi),
            None if self.pairs() == 0 => (f64::NEG_INFINITY, f64::INFINITY),
            None => {
                let (lo, hi) = (mean - 1.959964 * se, mean + 1.959964 * se);
                (
                    if lo <= 0.0 {
                        f64::NEG_INFINITY
                    } else {
                        elo_of_score(lo)
                    },
                    if hi >= 1.0 {
                        f64::INFINITY
                    } else {
                        elo_of_score(hi)
                    },
                )
            }
        };
        let (lower, upper) = (
            if lower <= -MAX_ELO {
                f64::NEG_INFINITY
            } else {
                lower
            },
            if upper >= MAX_ELO { f64::INFINITY } else { upper },
        );
        let ci95 = if self.uniform_range().is_some() {
            (elo - lower).max(upper - elo)
        } else {
            (upper - lower) / 2.0
        };
        EloEstimate {
            elo,
            ci95,
            lower,
            upper,
            los: if se > 0.0 {
                normal_cdf((mean - 0.5) / se)
            } else {
                self.sweep_los()
            },
        }
    }

    /// When every pair scored the same (say all split 1–1), the Elo range such a
    /// record leaves open, each end at 97.5%: if a pair lands in that one cell with
    /// probability `q`, all `n` did with probability `qⁿ`, at least 2.5% only when
    /// `q ≥ 0.025^(1/n)`; the score per game is then within `q·a` and `q·a + 1 - q`
    /// for the cell's score `a`. Exact, whatever the pairs' other outcomes would be;
    /// `None` for a record with two kinds of pair, or none.
    pub fn uniform_range(&self) -> Option<(f64, f64)> {
        let n = self.pairs();
        let cell = self.counts.iter().position(|&c| c == n && n > 0)?;
        let q = TAIL.powf(1.0 / n as f64);
        let a = PAIR_SCORE[cell];
        Some((elo_of_score(q * a), elo_of_score(q * a + 1.0 - q)))
    }

    /// Normalized Elo of the pairs: `(score - ½) / σ_game · 800 / ln 10`.
    pub fn normalized_elo(&self) -> f64 {
        (self.score() - 0.5) / self.sigma_per_game() * NELO_PER_T
    }

    /// LOS when every pair scored the same (a sweep, say), as every table of the
    /// ladder defines it: the confidence at which the exact one-sided bound of
    /// [`Pentanomial::uniform_range`] reaches zero Elo. A pair lands in the
    /// record's cell with probability `q`; all `n` did with probability `qⁿ`; the
    /// bound's end `q·a` (cell score `a` above ½) reaches ½ at `q = ½ / a`, so the
    /// LOS is `1 - (½ / a)ⁿ` (a sweep of `n` pairs: `1 - 2⁻ⁿ`, exactly the rating
    /// fit's for a separated bot: one minus the chance of its record were the two
    /// equal). Below ½ it mirrors; a record of splits says nothing either way.
    fn sweep_los(&self) -> f64 {
        let n = self.pairs();
        let Some(cell) = self.counts.iter().position(|&c| c == n && n > 0) else {
            return 0.5;
        };
        let a = PAIR_SCORE[cell];
        let n = n as f64;
        if a > 0.5 {
            1.0 - (0.5 / a).powf(n)
        } else if a < 0.5 {
            (0.5 / (1.0 - a)).powf(n)
        } else {
            0.5
        }
    }

    /// Who swept, if anyone: every pair won by this side (`Some(true)`), every
    /// pair lost (`Some(false)`).
    pub fn sweep(&self) -> Option<bool> {
        let n = self.pairs();
        if n == 0 {
            None
        } else if self.counts[4] == n {
            Some(true)
        } else if self.counts[0] == n {
            Some(false)
        } else {
            None
        }
    }

    /// For a clean sweep, the Elo the sweeping side is at least better by (positive
    /// when this side swept, negative — an upper bound — when it was swept), at
    /// 97.5% confidence: a side that wins a game with probability p wins a pair
    /// (both games) with probability at most p, so n pairs at most pⁿ, and p ≥
    /// 0.025^(1/n) (exact; a pair counts once, as its games may always agree). The
    /// same bound the ratings' fit gives a separated bot. Sweeps have no finite
    /// estimate, so this is what to quote for them.
    pub fn sweep_bound(&self) -> Option<f64> {
        let won = self.sweep()?;
        let (lo, hi) = self.uniform_range()?;
        Some(if won { lo } else { hi })
    }

    /// The exact generalized log-likelihood ratio of H1 against H0.
    ///
    /// # Errors
    /// Hypotheses that no distribution of pair scores can meet (a normalized Elo so
    /// large that its t-value has no solution).
    pub fn llr(&self, model: EloModel, elo0: f64, elo1: f64) -> Result<f64, StatsError> {
        let (p, n) = self.distribution();
        let (q0, q1) = match model {
            EloModel::Logistic => (
                mle_with_mean(&p, expected_score(elo0))?,
                mle_with_mean(&p, expected_score(elo1))?,
            ),
            EloModel::Normalized => {
                // Per pair, the t-value is √2 times the per-game one.
                let t = |nelo: f64| nelo / NELO_PER_T * std::f64::consts::SQRT_2;
                (mle_with_t_value(&p, t(elo0))?, mle_with_t_value(&p, t(elo1))?)
            }
        };
        Ok(n * (0..5).map(|k| p[k] * (q1[k] / q0[k]).ln()).sum::<f64>())
    }
}

impl EloEstimate {
    /// The estimate in words, as every table shows it: `+478 ± 95`, or for an
    /// interval with an open end the one end that means something (`≥ +300`,
    /// `≤ -300`: the 97.5% one-sided bound), or `unbounded`.
    pub fn text(&self) -> String {
        use crate::elo::signed;
        match (self.lower.is_finite(), self.upper.is_finite()) {
            (true, true) => format!("{} ± {:.0}", signed(self.elo), self.ci95),
            (true, false) => format!("≥ {}", signed(self.lower)),
            (false, true) => format!("≤ {}", signed(self.upper)),
            (false, false) => "unbounded".to_owned(),
        }
    }
}

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// A constraint no distribution of pair scores meets.
    #[error("no distribution of pair scores has {0}")]
    Unreachable(String),
}

/// The root of `Σ pᵢ aᵢ / (1 + x aᵢ) = 0`, where the `aᵢ` straddle zero. The sum falls
/// strictly from `+∞` to `-∞` on the interval where every `1 + x aᵢ > 0`, so the root is
/// unique: Newton's method, kept inside a shrinking bracket.
fn secular_root(a: &[f64; 5], p: &[f64; 5]) -> Option<f64> {
    let (lo_a, hi_a) = a
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    if lo_a >= 0.0 || hi_a <= 0.0 {
        return None;
    }
    let (mut lo, mut hi) = (-1.0 / hi_a, -1.0 / lo_a);
    let mut x = 0.0;
    for _ in 0..200 {
        let (mut f, mut df) = (0.0, 0.0);
        for k in 0..5 {
            let d = 1.0 + x * a[k];
            f += p[k] * a[k] / d;
            df -= p[k] * a[k] * a[k] / (d * d);
        }
        if f > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        if f.abs() < 1e-15 {
            break;
        }
        let newton = x - f / df;
        let next = if newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if (next - x).abs() <= 1e-15 * (1.0 + x.abs()) {
            x = next;
            break;
        }
        x = next;
    }
    Some(x)
}

/// The most likely distribution of pair scores with expected score `s`, given the
/// observed distribution `p`.
fn mle_with_mean(p: &[f64; 5], s: f64) -> Result<[f64; 5], StatsError> {
    let a = PAIR_SCORE.map(|v| v - s);
    let x = secular_root(&a, p).ok_or_else(|| StatsError::Unreachable(format!("expected score {s}")))?;
    Ok(std::array::from_fn(|k| p[k] / (1.0 + x * a[k])))
}

/// The most likely distribution of pair scores whose t-value `(mean - ½) / sd` is `t`,
/// given the observed distribution `p`: the global maximum, not a local one.
///
/// The likelihood under that constraint can have several local maxima (a
/// draw-heavy record between hypotheses far apart; 0-1-64-1-0 at t-values of 0
/// and 100 normalized Elo), where a fixed-point iteration stops at whichever it
/// meets, or at none. So the maximum is taken in two steps that cannot miss it:
/// for a given mean `μ` the constraint fixes the variance, and with both moments
/// fixed the constraints are linear and the problem concave, with the unique
/// maximum `pᵢ / (1 + λ·gᵢ)` of empirical likelihood (its 2-dimensional dual
/// solved by Newton's method); the mean is then scanned over every value the
/// constraint allows, and each local maximum of the scan refined.
fn mle_with_t_value(p: &[f64; 5], t: f64) -> Result<[f64; 5], StatsError> {
    let unreachable = || StatsError::Unreachable(format!("t-value {t}"));
    if t == 0.0 {
        return mle_with_mean(p, 0.5);
    }
    // The mean is ½ ± d on the side of t. The constraint's variance (d/t)² must
    // lie strictly between the least and the most a distribution on the five
    // scores with that mean can have.
    let mean = |d: f64| 0.5 + d.copysign(t);
    let variance = |d: f64| (d / t).powi(2);
    let feasible = |d: f64| {
        let (mu, v) = (mean(d), variance(d));
        v < mu * (1.0 - mu) && v > least_variance(mu)
    };
    // Where the constraint can be met: a run of feasible points on a geometric
    // scan of d (a small t allows only a narrow range close to ½), each run's
    // ends then found by bisection.
    const COARSE: usize = 400;
    let coarse = |k: usize| 0.5 * 10f64.powf(-12.0 * (1.0 - (k as f64 + 0.5) / COARSE as f64));
    let edge = |mut inside: f64, mut outside: f64| {
        for _ in 0..100 {
            let mid = 0.5 * (inside + outside);
            if feasible(mid) {
                inside = mid;
            } else {
                outside = mid;
            }
        }
        inside
    };
    let mut runs: Vec<(f64, f64)> = Vec::new();
    let mut k = 0;
    while k < COARSE {
        if !feasible(coarse(k)) {
            k += 1;
            continue;
        }
        let first = k;
        while k + 1 < COARSE && feasible(coarse(k + 1)) {
            k += 1;
        }
        let low = edge(coarse(first), if first == 0 { 0.0 } else { coarse(first - 1) });
        let high = edge(coarse(k), if k + 1 < COARSE { coarse(k + 1) } else { 0.5 });
        runs.push((low, high));
        k += 1;
    }
    let solve = |d: f64, start: [f64; 2]| -> Option<(f64, [f64; 2])> {
        if !feasible(d) {
            return None;
        }
        moment_dual(p, mean(d), variance(d), start).or_else(|| moment_dual(p, mean(d), variance(d), [0.0; 2]))
    };
    // The profile is the negated dual: its maxima are the dual's minima. Each run
    // scanned evenly, every local minimum of the scan refined (golden section).
    const SCAN: usize = 400;
    let mut best: Option<(f64, f64, [f64; 2])> = None;
    for &(low, high) in &runs {
        let at = |k: usize| low + (high - low) * (k as f64 + 0.5) / SCAN as f64;
        let mut scan: Vec<(f64, f64, [f64; 2])> = Vec::with_capacity(SCAN);
        let mut lambda = [0.0; 2];
        for k in 0..SCAN {
            if let Some((value, l)) = solve(at(k), lambda) {
                lambda = l;
                scan.push((at(k), value, l));
            }
        }
        for k in 0..scan.len() {
            let (d, value, l) = scan[k];
            let left = k.checked_sub(1).map(|j| scan[j]);
            let right = scan.get(k + 1).copied();
            if left.is_some_and(|s| s.1 < value) || right.is_some_and(|s| s.1 < value) {
                continue;
            }
            let (mut a, mut b) = (left.map_or(low, |s| s.0), right.map_or(high, |s| s.0));
            let ratio = 0.5 * (5f64.sqrt() - 1.0);
            let mut here = (d, value, l);
            for _ in 0..200 {
                if b - a <= 1e-15 * (1.0 + b.abs()) {
                    break;
                }
                let (c, e) = (b - ratio * (b - a), a + ratio * (b - a));
                let (vc, ve) = (solve(c, here.2), solve(e, here.2));
                let c_lower = match (vc, ve) {
                    (Some(x), Some(y)) => x.0 <= y.0,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (None, None) => break,
                };
                if c_lower {
                    b = e;
                } else {
                    a = c;
                }
                for (m, v) in [(c, vc), (e, ve)] {
                    if let Some((f, l)) = v
                        && f < here.1
                    {
                        here = (m, f, l);
                    }
                }
            }
            if best.is_none_or(|b| here.1 < b.1) {
                best = Some(here);
            }
        }
    }
    let (d, _, l) = best.ok_or_else(unreachable)?;
    let (mu, v) = (mean(d), variance(d));
    let mut q: [f64; 5] = std::array::from_fn(|k| {
        let e = PAIR_SCORE[k] - mu;
        p[k] / (1.0 + l[0] * e + l[1] * (e * e - v))
    });
    let total: f64 = q.iter().sum();
    q.iter_mut().for_each(|x| *x /= total);
    Ok(q)
}

/// The least variance of a distribution on the five pair scores with mean `mu`:
/// all of it on the two scores around `mu`.
fn least_variance(mu: f64) -> f64 {
    let k = ((mu * 4.0).floor() as usize).min(3);
    let (lo, hi) = (PAIR_SCORE[k], PAIR_SCORE[k + 1]);
    (mu - lo) * (hi - mu)
}

/// `max_λ Σ pᵢ ln(1 + λ·gᵢ)` for `gᵢ = (aᵢ - μ, (aᵢ - μ)² - v)`, from `start`: the
/// log-likelihood the moment constraints cost (the most likely distribution with
/// mean `μ` and variance `v` is `pᵢ / (1 + λ·gᵢ)`), and `λ`. `None` when Newton's
/// method does not settle (no distribution with every cell positive has them).
fn moment_dual(p: &[f64; 5], mu: f64, v: f64, start: [f64; 2]) -> Option<(f64, [f64; 2])> {
    let g: [[f64; 2]; 5] = std::array::from_fn(|k| {
        let e = PAIR_SCORE[k] - mu;
        [e, e * e - v]
    });
    let value = |l: [f64; 2]| -> Option<f64> {
        let mut f = 0.0;
        for k in 0..5 {
            let d = 1.0 + l[0] * g[k][0] + l[1] * g[k][1];
            if d <= 0.0 {
                return None;
            }
            f += p[k] * d.ln();
        }
        Some(f)
    };
    let mut l = if value(start).is_some() { start } else { [0.0; 2] };
    let mut f = value(l)?;
    for _ in 0..100 {
        let (mut grad, mut h) = ([0.0; 2], [[0.0; 2]; 2]);
        for k in 0..5 {
            let d = 1.0 + l[0] * g[k][0] + l[1] * g[k][1];
            for a in 0..2 {
                grad[a] += p[k] * g[k][a] / d;
                for b in 0..2 {
                    h[a][b] += p[k] * g[k][a] * g[k][b] / (d * d);
                }
            }
        }
        // Ascent: λ + H⁻¹ ∇ (H is minus the Hessian, positive definite).
        let det = h[0][0] * h[1][1] - h[0][1] * h[1][0];
        if det.is_nan() || det <= 0.0 {
            return None;
        }
        let step = [
            (h[1][1] * grad[0] - h[0][1] * grad[1]) / det,
            (h[0][0] * grad[1] - h[1][0] * grad[0]) / det,
        ];
        let mut s = 1.0;
        let next = loop {
            let cand = [l[0] + s * step[0], l[1] + s * step[1]];
            match value(cand) {
                Some(fc) if fc >= f - 1e-15 => break Some((cand, fc)),
                _ if s < 1e-12 => break None,
                _ => s *= 0.5,
            }
        };
        let (cand, fc) = next?;
        let moved = (cand[0] - l[0]).abs() + (cand[1] - l[1]).abs();
        l = cand;
        f = fc;
        if l[0].abs().max(l[1].abs()) > 1e12 {
            return None;
        }
        if moved < 1e-13 * (1.0 + l[0].abs() + l[1].abs()) || grad[0].abs() + grad[1].abs() < 1e-15 {
            return Some((f, l));
        }
    }
    let (mut grad, mut size) = ([0.0; 2], 0.0);
    for k in 0..5 {
        let d = 1.0 + l[0] * g[k][0] + l[1] * g[k][1];
        grad[0] += p[k] * g[k][0] / d;
        grad[1] += p[k] * g[k][1] / d;
        size += p[k] * (g[k][0].abs() + g[k][1].abs()) / d;
    }
    (grad[0].abs() + grad[1].abs() < 1e-9 * size.max(1e-300)).then_some((f, l))
}

/// The scale the hypotheses are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EloModel {
    /// Logistic Elo: the expected score is `1 / (1 + 10^(-elo/400))`, whatever the
    /// draws.
    Logistic,
    /// Normalized Elo: the score's distance from ½ in units of its own standard
    /// deviation per game (times `800 / ln 10`, so that it matches logistic Elo when
    /// there are no draws and the bots are close). Independent of how drawish a game
    /// is, so one pair of bounds fits every game; fishtest's default.
    #[default]
    Normalized,
}

/// A name that is no [`EloModel`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an Elo model: use normalized or logistic")]
pub struct UnknownEloModel(pub String);

impl std::str::FromStr for EloModel {
    type Err = UnknownEloModel;

    fn from_str(s: &str) -> Result<EloModel, UnknownEloModel> {
        match s {
            "logistic" => Ok(EloModel::Logistic),
            "normalized" => Ok(EloModel::Normalized),
            _ => Err(UnknownEloModel(s.to_owned())),
        }
    }
}

/// Hypotheses or error rates a test cannot be built on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HypothesisError {
    #[error("elo0 ({elo0}) must be below elo1 ({elo1})")]
    Order { elo0: f64, elo1: f64 },
    #[error("{name} must be in (0, 0.5], not {rate}")]
    Rate { name: &'static str, rate: f64 },
    #[error(
        "normalized Elo hypotheses must be within ±{MAX_NORMALIZED_ELO} (use --model logistic for larger gaps)"
    )]
    NormalizedTooWide,
}

impl std::fmt::Display for EloModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EloModel::Logistic => "logistic",
            EloModel::Normalized => "normalized",
        })
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
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Sprt {
    /// Elo under H0.
    pub elo0: f64,
    /// Elo under H1.
    pub elo1: f64,
    /// The scale of `elo0` and `elo1`.
    pub model: EloModel,
    /// False positive rate.
    pub alpha: f64,
    /// False negative rate.
    pub beta: f64,
    /// Lower bound: accept H0 at or below `ln(beta / (1 - alpha))`.
    pub lower: f64,
    /// Upper bound: accept H1 at or above `ln((1 - beta) / alpha)`.
    pub upper: f64,
}

/// Largest normalized Elo a hypothesis may name: beyond it the t-value constraint has
/// no solution for some observed distributions.
pub const MAX_NORMALIZED_ELO: f64 = 150.0;

impl Sprt {
    /// A test with Wald's bounds.
    ///
    /// # Errors
    /// `elo0 >= elo1`, error rates outside (0, ½], or a normalized hypothesis beyond
    /// ±[`MAX_NORMALIZED_ELO`].
    pub fn new(
        model: EloModel,
        elo0: f64,
        elo1: f64,
        alpha: f64,
        beta: f64,
    ) -> Result<Sprt, HypothesisError> {
        if elo0.partial_cmp(&elo1) != Some(std::cmp::Ordering::Less) {
            return Err(HypothesisError::Order { elo0, elo1 });
        }
        for (name, rate) in [("alpha", alpha), ("beta", beta)] {
            if !(rate > 0.0 && rate <= 0.5) {
                return Err(HypothesisError::Rate { name, rate });
            }
        }
        if model == EloModel::Normalized && elo0.abs().max(elo1.abs()) > MAX_NORMALIZED_ELO {
            return Err(HypothesisError::NormalizedTooWide);
        }
        Ok(Sprt {
            elo0,
            elo1,
            model,
            alpha,
            beta,
            lower: (beta / (1.0 - alpha)).ln(),
            upper: ((1.0 - beta) / alpha).ln(),
        })
    }

    /// The LLR of the pairs so far.
    ///
    /// # Errors
    /// When it cannot be computed: `new` keeps the hypotheses where the constraint
    /// has a solution for every record, so this is never expected; it is an error
    /// rather than a 0 so that nothing decides on, or shows, an LLR that is not one.
    pub fn llr(&self, p: &Pentanomial) -> Result<f64, StatsError> {
        p.llr(self.model, self.elo0, self.elo1)
    }
}

/// The running record of how far the LLR jumped past its lowest and highest values
/// so far: Siegmund's estimate of the expected overshoot at each bound is
/// `E[jump²] / (2 E[jump])` over those record-breaking jumps.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Overshoot {
    low: f64,
    low_sum: f64,
    low_squares: f64,
    high: f64,
    high_sum: f64,
    high_squares: f64,
}

impl Overshoot {
    fn record(&mut self, llr: f64) {
        if llr < self.low {
            let d = llr - self.low;
            self.low_sum += d;
            self.low_squares += d * d;
            self.low = llr;
        }
        if llr > self.high {
            let d = llr - self.high;
            self.high_sum += d;
            self.high_squares += d * d;
            self.high = llr;
        }
    }

    /// Expected overshoot below the lower and above the upper bound.
    pub fn estimates(&self) -> (f64, f64) {
        let lo = if self.low_sum != 0.0 {
            -self.low_squares / self.low_sum / 2.0
        } else {
            0.0
        };
        let hi = if self.high_sum != 0.0 {
            self.high_squares / self.high_sum / 2.0
        } else {
            0.0
        };
        (lo, hi)
    }
}

/// A running test: pairs arrive one at a time, and each may decide it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SequentialTest {
    /// The test.
    pub test: Sprt,
    /// Pairs so far.
    pub pentanomial: Pentanomial,
    /// LLR after the last pair; `None` when it could not be computed (the test
    /// then waits for the next pair rather than deciding on a made-up value).
    pub llr: Option<f64>,
    /// What the test says.
    pub decision: SprtDecision,
    overshoot: Overshoot,
}

impl SequentialTest {
    /// A test with no pairs yet.
    pub fn new(test: Sprt) -> SequentialTest {
        SequentialTest {
            test,
            pentanomial: Pentanomial::default(),
            llr: Some(0.0),
            decision: SprtDecision::Continue,
            overshoot: Overshoot::default(),
        }
    }

    /// Adds one pair (`half_points` 0..=4 for the tested side) and decides.
    pub fn add(&mut self, half_points: usize) -> SprtDecision {
        self.pentanomial.add(half_points);
        self.llr = self.test.llr(&self.pentanomial).ok();
        if let Some(llr) = self.llr {
            self.overshoot.record(llr);
        }
        self.decision = self.decide();
        self.decision
    }

    /// The bounds in force now: Wald's, moved inwards by the overshoot expected at
    /// each.
    pub fn bounds(&self) -> (f64, f64) {
        let (lo, hi) = self.overshoot.estimates();
        (self.test.lower + lo, self.test.upper - hi)
    }

    fn decide(&self) -> SprtDecision {
        let (lower, upper) = self.bounds();
        let Some(llr) = self.llr else {
            return SprtDecision::Continue;
        };
        if llr > upper {
            SprtDecision::H1
        } else if llr < lower {
            SprtDecision::H0
        } else {
            SprtDecision::Continue
        }
    }
}

/// Distribution of pair scores (0, ½, 1, 1½, 2 points) with expected score `s` per
/// game: two independent games with 20% draws, or (`draw_heavy`) 70% even pairs (1
/// point) and the rest such independent pairs with the score that makes up `s`.
pub fn pair_distribution(s: f64, draw_heavy: bool) -> [f64; 5] {
    let independent = |s: f64| {
        let d = 0.2f64.min(2.0 * s.min(1.0 - s));
        let (w, l) = (s - d / 2.0, 1.0 - s - d / 2.0);
        let game = [l, d, w];
        let mut pair = [0.0; 5];
        for (i, a) in game.iter().enumerate() {
            for (j, b) in game.iter().enumerate() {
                pair[i + j] += a * b;
            }
        }
        pair
    };
    if !draw_heavy {
        return independent(s);
    }
    // (Fewer even pairs far from ½, where 70% would leave no room for the score.)
    let q = 0.7f64.min(1.8 * s.min(1.0 - s));
    let mut pair = independent((s - 0.5 * q) / (1.0 - q));
    pair.iter_mut().for_each(|p| *p *= 1.0 - q);
    pair[2] += q;
    pair
}

/// What simulated tests decided.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimulatedRuns {
    /// Tests that accepted H0.
    pub h0: u64,
    /// Tests that accepted H1.
    pub h1: u64,
    /// Average pairs a test played.
    pub mean_pairs: f64,
}

/// The [`pair_distribution`] whose Elo, in `model`'s scale, is `elo`. Normalized Elo
/// grows with the score for these families, so its score is found by bisection.
pub fn pair_distribution_at(model: EloModel, elo: f64, draw_heavy: bool) -> [f64; 5] {
    match model {
        EloModel::Logistic => pair_distribution(expected_score(elo), draw_heavy),
        EloModel::Normalized => {
            let nelo = |s: f64| {
                let (mean, var) = moments_of(&pair_distribution(s, draw_heavy));
                (mean - 0.5) / (2.0 * var).sqrt() * NELO_PER_T
            };
            let (mut lo, mut hi) = (1e-6, 1.0 - 1e-6);
            for _ in 0..100 {
                let mid = 0.5 * (lo + hi);
                if nelo(mid) < elo {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            pair_distribution(0.5 * (lo + hi), draw_heavy)
        }
    }
}

/// Runs `runs` simulated tests whose pairs come from [`pair_distribution_at`] the
/// Elo `elo` in the test's own model, spread over the machine's cores; the same seed
/// gives the same counts.
pub fn simulate(test: Sprt, elo: f64, draw_heavy: bool, runs: u64, seed: u64) -> SimulatedRuns {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};
    let dist = pair_distribution_at(test.model, elo, draw_heavy);
    let mut cumulative = [0.0; 5];
    let mut acc = 0.0;
    for k in 0..5 {
        acc += dist[k];
        cumulative[k] = acc;
    }
    let one = |run: u64| -> (SprtDecision, u64) {
        // Each run its own stream: the split over threads does not change the result.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(run);
        let mut t = SequentialTest::new(test);
        loop {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * acc;
            let k = cumulative.iter().position(|&c| u < c).unwrap_or(4);
            let d = t.add(k);
            if d != SprtDecision::Continue {
                return (d, t.pentanomial.pairs());
            }
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let parts: Vec<SimulatedRuns> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                scope.spawn(move || {
                    let mut r = SimulatedRuns::default();
                    for run in (k..runs).step_by(threads as usize) {
                        let (d, pairs) = one(run);
                        match d {
                            SprtDecision::H0 => r.h0 += 1,
                            SprtDecision::H1 => r.h1 += 1,
                            SprtDecision::Continue => {}
                        }
                        r.mean_pairs += pairs as f64;
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("simulation thread panicked"))
            .collect()
    });
    let mut total = SimulatedRuns::default();
    for p in parts {
        total.h0 += p.h0;
        total.h1 += p.h1;
        total.mean_pairs += p.mean_pairs;
    }
    total.mean_pairs /= runs.max(1) as f64;
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_matches_tables() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-12);
        assert!((normal_cdf(1.959964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-1.0) - 0.158_655_253_931_457).abs() < 1e-12);
        assert!((normal_cdf(3.0) - 0.998_650_101_968_37).abs() < 1e-12);
        // The far tail keeps its relative precision.
        assert!((normal_cdf(-10.0) / 7.619_853_024_160_527e-24 - 1.0).abs() < 1e-9);
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
        // variance: (1*.25 + 2*.0625 + 0 + 2*.0625 + 1*.25)/10 = 0.075
        let se = (0.075f64 / 10.0).sqrt();
        let want = (elo_of_score(0.5 + 1.959964 * se) - elo_of_score(0.5 - 1.959964 * se)) / 2.0;
        assert!((e.ci95 - want).abs() < 1e-9 && e.ci95 > 100.0);
        // 3 of 4 points per pair every time: 75%, +190.85 Elo.
        let sure = Pentanomial {
            counts: [0, 0, 0, 5, 0],
        };
        assert!((sure.elo().elo - 190.85).abs() < 0.01);
        assert_eq!(p.reversed().counts, [1, 2, 4, 2, 1]);
        assert_eq!(sure.reversed().counts, [0, 5, 0, 0, 0]);
    }

    #[test]
    fn a_sweep_has_a_bound_not_an_estimate() {
        // 50 pairs all won: p >= 0.025^(1/50) = 0.92888, i.e. at least +446 Elo.
        let won = Pentanomial {
            counts: [0, 0, 0, 0, 50],
        };
        let b = won.sweep_bound().unwrap();
        assert!((b - 446.4).abs() < 0.1, "{b}");
        assert_eq!(won.sweep(), Some(true));
        let lost = won.reversed();
        assert_eq!(lost.sweep(), Some(false));
        assert!((lost.sweep_bound().unwrap() + b).abs() < 1e-9);
        assert_eq!(
            Pentanomial {
                counts: [0, 0, 0, 1, 49]
            }
            .sweep_bound(),
            None
        );
        // The LOS of a sweep comes from the count, not from a zero variance.
        let hundred = Pentanomial {
            counts: [0, 0, 0, 0, 100],
        };
        assert!(hundred.elo().los > 0.999);
        assert!(hundred.reversed().elo().los < 0.001);
        // The LOS is the confidence at which the exact bound reaches zero: one
        // pair won 2–0 has a 50% chance at equal strength (a pair may be one trial),
        // 3 pairs 1/8; four pairs of 1½ points, (½ / ¾)⁴.
        let los = |counts: [u64; 5]| Pentanomial { counts }.elo().los;
        assert!((los([0, 0, 0, 0, 1]) - 0.5).abs() < 1e-12);
        assert!((los([0, 0, 0, 0, 3]) - 0.875).abs() < 1e-12);
        assert!((los([0, 0, 0, 4, 0]) - (1.0 - (2.0f64 / 3.0).powi(4))).abs() < 1e-12);
        assert!((los([0, 4, 0, 0, 0]) - (2.0f64 / 3.0).powi(4)).abs() < 1e-12);
        // Where the bound crosses zero, the LOS crosses 97.5%.
        for n in 1..12 {
            let p = Pentanomial {
                counts: [0, 0, 0, 0, n],
            };
            assert_eq!(p.sweep_bound().unwrap() > 0.0, p.elo().los > 0.975, "{n} pairs");
        }
    }

    #[test]
    fn pairs_that_all_split_read_as_an_exact_range_not_as_zero_plus_minus_zero() {
        // 17 pairs, each 1–1: a pair splits with probability q ≥ 0.025^(1/17) =
        // 0.8052, so the score is within ½ ± (1 - q)/2 = ½ ± 0.0974: ±68.65 Elo.
        let even = Pentanomial {
            counts: [0, 0, 17, 0, 0],
        };
        let (lo, hi) = even.uniform_range().unwrap();
        assert!((hi - 68.65).abs() < 0.01 && (lo + hi).abs() < 1e-9, "{lo} {hi}");
        let e = even.elo();
        assert!(e.elo.abs() < 1e-9 && (e.ci95 - 68.65).abs() < 0.01, "{e:?}");
        // Every pair 1½: the score is at least ¾ q and at most ¾ q + 1 - q.
        let three = Pentanomial {
            counts: [0, 0, 0, 17, 0],
        };
        let (lo, hi) = three.uniform_range().unwrap();
        let q = 0.025f64.powf(1.0 / 17.0);
        assert!(
            (lo - elo_of_score(0.75 * q)).abs() < 1e-9
                && (hi - elo_of_score(0.75 * q + 1.0 - q)).abs() < 1e-9
        );
        assert!(lo < three.elo().elo && three.elo().elo < hi);
        // Mixed records have a variance and no such range.
        assert_eq!(
            Pentanomial {
                counts: [0, 1, 16, 0, 0]
            }
            .uniform_range(),
            None
        );
        assert_eq!(Pentanomial::default().uniform_range(), None);
    }

    #[test]
    fn a_distribution_at_a_normalized_elo_has_that_normalized_elo() {
        for draw_heavy in [false, true] {
            for nelo in [-40.0, 0.0, 5.0, 50.0, 120.0] {
                let p = pair_distribution_at(EloModel::Normalized, nelo, draw_heavy);
                let (mean, var) = moments_of(&p);
                let got = (mean - 0.5) / (2.0 * var).sqrt() * NELO_PER_T;
                assert!((got - nelo).abs() < 1e-6, "{draw_heavy} {nelo}: {got}");
            }
        }
        let logistic = pair_distribution_at(EloModel::Logistic, 100.0, false);
        assert!((moments_of(&logistic).0 - expected_score(100.0)).abs() < 1e-12);
    }

    #[test]
    fn a_normalized_test_of_a_sweep_moves_at_every_pair_and_never_reads_zero() {
        // Before the fixed point allowed for the secular root's rounding, many sweep
        // lengths had no LLR and the test read 0 there.
        for (elo1, side) in [(10.0, 4), (5.0, 0), (100.0, 4)] {
            let mut test =
                SequentialTest::new(Sprt::new(EloModel::Normalized, 0.0, elo1, 0.05, 0.05).unwrap());
            let mut last = 0.0;
            for pairs in 1..=200 {
                if test.decision != SprtDecision::Continue {
                    break;
                }
                test.add(side);
                let llr = test
                    .llr
                    .unwrap_or_else(|| panic!("no LLR after {pairs} pairs of {side}"));
                assert!(
                    if side == 4 { llr > last } else { llr < last },
                    "[0, {elo1}] after {pairs}: {llr} after {last}"
                );
                last = llr;
            }
            assert_ne!(test.decision, SprtDecision::Continue, "[0, {elo1}] undecided");
        }
    }

    #[test]
    fn a_near_sweep_shows_the_end_of_its_interval_that_means_something() {
        // 49 pairs won and one 1½: the normal interval of the score passes 1, so its
        // upper end in Elo is no number (it once read "+478 ± 1630").
        let near = Pentanomial {
            counts: [0, 0, 0, 1, 49],
        };
        let e = near.elo();
        assert!(
            e.upper.is_infinite() && e.lower.is_finite() && e.lower > 300.0,
            "{e:?}"
        );
        assert_eq!(e.text(), format!("≥ {:+.0}", e.lower));
        assert_eq!(near.reversed().elo().text(), format!("≤ {:+.0}", -e.lower));
        let plain = Pentanomial {
            counts: [3, 20, 50, 25, 2],
        };
        let e = plain.elo();
        assert!(
            e.text().contains(" ± ") && e.lower < e.elo && e.elo < e.upper,
            "{e:?}"
        );
        // Nothing at all: no interval.
        assert_eq!(Pentanomial::default().elo().text(), "unbounded");
    }

    #[test]
    fn sprt_bounds_are_walds() {
        let s = Sprt::new(EloModel::Logistic, 0.0, 10.0, 0.05, 0.05).unwrap();
        assert!((s.upper - 2.944439).abs() < 1e-6);
        assert!((s.lower + 2.944439).abs() < 1e-6);
        assert_eq!(
            Sprt::new(EloModel::Logistic, 5.0, 5.0, 0.05, 0.05).unwrap_err(),
            HypothesisError::Order { elo0: 5.0, elo1: 5.0 }
        );
        assert_eq!(
            Sprt::new(EloModel::Logistic, 0.0, 5.0, 0.0, 0.05).unwrap_err(),
            HypothesisError::Rate {
                name: "alpha",
                rate: 0.0
            }
        );
        assert_eq!(
            Sprt::new(EloModel::Normalized, 0.0, 400.0, 0.05, 0.05).unwrap_err(),
            HypothesisError::NormalizedTooWide
        );
        assert_eq!(
            "gaussian".parse::<EloModel>().unwrap_err().to_string(),
            "\"gaussian\" is not an Elo model: use normalized or logistic"
        );
    }

    /// Reference LLRs computed independently: fishtest's `LLRcalc.LLR_logistic` and
    /// `LLR_normalized` (server/fishtest/stats at b8eecff220b5, Python with SciPy), on the
    /// same count vectors and bounds.
    #[test]
    fn the_llr_matches_fishtests_on_a_table_of_counts() {
        #[rustfmt::skip]
        let table: &[([u64; 5], EloModel, f64, f64, f64)] = &[
            ([0, 0, 0, 0, 200], EloModel::Logistic, 0.0, 10.0, 5.673687916750321),
            ([0, 0, 0, 0, 200], EloModel::Logistic, -3.0, 1.0, 2.3092355320301596),
            ([0, 0, 0, 0, 200], EloModel::Logistic, 0.0, 100.0, 49.392739176692615),
            ([0, 0, 0, 0, 200], EloModel::Normalized, 0.0, 10.0, 7.973091887068427),
            ([0, 0, 0, 0, 200], EloModel::Normalized, 0.0, 2.0, 1.6215323636106889),
            ([0, 0, 0, 1, 199], EloModel::Logistic, 0.0, 10.0, 5.6736594497602075),
            ([0, 0, 0, 1, 199], EloModel::Logistic, 0.0, 100.0, 49.39249091615582),
            ([0, 0, 0, 1, 199], EloModel::Normalized, 0.0, 10.0, 7.962939194691246),
            ([0, 0, 0, 0, 10], EloModel::Logistic, 0.0, 100.0, 2.4700282126841584),
            ([0, 0, 0, 0, 10], EloModel::Normalized, -3.0, 1.0, 0.16348522823078457),
            ([10, 0, 0, 0, 0], EloModel::Logistic, 0.0, 10.0, -0.29202386975149536),
            ([10, 0, 0, 0, 0], EloModel::Normalized, 0.0, 10.0, -0.41523135930681965),
            ([1, 2, 4, 2, 1], EloModel::Logistic, 0.0, 100.0, -1.2481371921274782),
            ([1, 2, 4, 2, 1], EloModel::Normalized, -3.0, 1.0, 0.0006627235374732053),
            ([10789, 19328, 33806, 19402, 10543], EloModel::Logistic, 0.0, 10.0, -135.7607137924273),
            ([10789, 19328, 33806, 19402, 10543], EloModel::Logistic, -3.0, 1.0, 2.1310678117940807),
            ([10789, 19328, 33806, 19402, 10543], EloModel::Normalized, 0.0, 10.0, -92.53417765351344),
            ([10789, 19328, 33806, 19402, 10543], EloModel::Normalized, -3.0, 1.0, 0.30086978548354076),
            ([0, 0, 200, 0, 0], EloModel::Logistic, 0.0, 10.0, -5.830128717698321),
            ([0, 0, 200, 0, 0], EloModel::Normalized, 0.0, 10.0, -0.32511373249396675),
            ([3, 20, 50, 25, 2], EloModel::Logistic, 0.0, 100.0, -18.809927725876808),
            ([3, 20, 50, 25, 2], EloModel::Normalized, 0.0, 2.0, 0.02688864929917468),
            ([0, 5, 0, 0, 0], EloModel::Logistic, -3.0, 1.0, -0.05741019348032273),
            ([0, 5, 0, 0, 0], EloModel::Normalized, 0.0, 10.0, -0.14804794846291147),
            ([100, 200, 300, 250, 150], EloModel::Logistic, 0.0, 10.0, 4.8228615632662875),
            ([100, 200, 300, 250, 150], EloModel::Normalized, 0.0, 2.0, 0.9807162033516835),
            ([0, 0, 1, 0, 0], EloModel::Logistic, 0.0, 10.0, -0.025331399648356092),
            ([0, 0, 1, 0, 0], EloModel::Normalized, -3.0, 1.0, 6.747099006238286e-05),
            ([2, 0, 0, 0, 3], EloModel::Logistic, 0.0, 100.0, 0.0834351142103441),
            ([2, 0, 0, 0, 3], EloModel::Normalized, 0.0, 10.0, 0.03656219448607272),
        ];
        for &(counts, model, elo0, elo1, want) in table {
            let got = Pentanomial { counts }.llr(model, elo0, elo1).unwrap();
            let tolerance = 1e-6 * want.abs().max(1.0);
            assert!(
                (got - want).abs() < tolerance,
                "{counts:?} {model} [{elo0}, {elo1}]: {got} against {want}"
            );
        }
    }

    #[test]
    fn a_sweep_decides_where_the_approximation_never_would() {
        // Every pair the same: zero variance, yet the exact LLR grows with every pair.
        let mut test = SequentialTest::new(Sprt::new(EloModel::Logistic, 0.0, 10.0, 0.05, 0.05).unwrap());
        let mut pairs = 0;
        while test.decision == SprtDecision::Continue && pairs < 400 {
            test.add(4);
            pairs += 1;
        }
        assert_eq!(
            test.decision,
            SprtDecision::H1,
            "undecided after {pairs} sweeping pairs"
        );
        // And a run of even pairs (each 1 point of 2) is evidence for H0 at [0, 10].
        let mut even = SequentialTest::new(Sprt::new(EloModel::Logistic, 0.0, 10.0, 0.05, 0.05).unwrap());
        for _ in 0..400 {
            if even.add(2) != SprtDecision::Continue {
                break;
            }
        }
        assert_eq!(even.decision, SprtDecision::H0);
        // One off-pattern pair in a sweep does not blow the LLR up.
        let mut near = Pentanomial {
            counts: [0, 0, 0, 0, 99],
        };
        near.add(3);
        let llr = near.llr(EloModel::Logistic, 0.0, 10.0).unwrap();
        assert!(llr > 2.0 && llr < 3.5, "{llr}");
    }

    #[test]
    fn the_overshoot_moves_the_bounds_inwards() {
        let mut test = SequentialTest::new(Sprt::new(EloModel::Logistic, 0.0, 100.0, 0.05, 0.05).unwrap());
        for h in [4, 0, 4, 4, 0, 2] {
            test.add(h);
        }
        let (lo, hi) = test.bounds();
        assert!(lo > test.test.lower && lo < 0.0, "{lo}");
        assert!(hi < test.test.upper && hi > 0.0, "{hi}");
    }

    #[test]
    fn simulated_error_rates_are_near_their_nominal_five_percent() {
        // 400 runs a side at a wide gap (short tests): a 5% rate gives 20 ± 4.4;
        // 8 to 36 (2% to 9%) is more than three standard deviations each way.
        for draw_heavy in [false, true] {
            let test = Sprt::new(EloModel::Logistic, 0.0, 50.0, 0.05, 0.05).unwrap();
            let false_h1 = simulate(test, 0.0, draw_heavy, 400, 11).h1;
            let false_h0 = simulate(test, 50.0, draw_heavy, 400, 12).h0;
            for (what, n) in [("alpha", false_h1), ("beta", false_h0)] {
                assert!((8..=36).contains(&n), "{what} {n}/400 (draw-heavy {draw_heavy})");
            }
        }
    }

    #[test]
    fn the_pair_distributions_have_the_score_they_claim() {
        for s in [0.3, 0.5, 0.57, 0.64] {
            for heavy in [false, true] {
                let p = pair_distribution(s, heavy);
                assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
                assert!((moments_of(&p).0 - s).abs() < 1e-12, "{s} {heavy}");
            }
        }
    }
}
