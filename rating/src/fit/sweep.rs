//! Exact one-sided bounds for separated players.
//!
//! A player that never lost to anyone outside its own group above the core has no
//! finite estimate, only a lower bound: the rating at which what it did — placing
//! ahead of each of those players in every game — had probability 2.5%. With one
//! opponent of known rating that is the Clopper–Pearson bound of a sweep (`n` wins
//! in `n` games: `p ≥ 0.025^(1/n)`); opponents of different strength and more seats
//! follow from Plackett–Luce's choice property (a player is ahead of a set `T` with
//! probability `e^θ / (e^θ + Σ_T e^θj)`). A player that never won is bounded above
//! the same way, from the chance that every such opponent placed ahead of it.
//!
//! Whatever the true rating, the bound lies beyond it at most 2.5% of the time (it
//! lies beyond it exactly when the sweep had at most that chance) — unlike the
//! profile likelihood's bound, which for `n`-0 lies beyond the truth up to 14.6% of
//! the time.
//!
//! - **Opponents** enter at the end of their range that makes the bound less
//!   extreme: a core player at its estimate, a separated one on the same side at its
//!   own bound (so a chain is bounded outwards from the core, and each link ranks
//!   beyond the one it beat), one separated the other way not at all (it could be
//!   arbitrarily far, and then beating it says nothing). Players of the bot's own
//!   group do not enter: their games say where it stands among them, not above the
//!   rest.
//! - **Mirrored groups** share their dice, so their games are not independent: a
//!   group counts as one trial, with the mean of its games' log-probabilities (for a
//!   pair against one opponent, the chance of winning one game). That is exact when
//!   the games of a group always agree and errs on the safe side when they do not.

use super::{MAX_SEATS, Results, unpack};
use crate::elo::normal_cdf;
use crate::separation::{Classes, Separation};
use std::collections::HashMap;

/// The chance, at the bound, of what a separated player did.
pub(super) const TAIL: f64 = 0.025;

/// One game's evidence: its weight and the opponents that enter its probability.
struct Term {
    weight: f64,
    opponents: Vec<u32>,
}

/// An independent unit (a mirrored group, or the games of one ranking when games
/// are independent): its games' terms, and how many trials it stands for.
struct Unit {
    terms: Vec<Term>,
    trials: f64,
}

/// Bounds (natural units, before anchoring) and likelihoods of superiority.
pub(super) struct SeparatedBounds {
    /// Per player: the fit's value, or for a separated player its bound.
    pub value: Vec<f64>,
    /// LOS of a separated player over another, each unordered pair once.
    pub los: HashMap<(usize, usize), f64>,
}

/// The bound of every separated player, computed from the core outwards.
pub(super) fn separated_bounds(
    results: &Results,
    orders: &[(u128, f64)],
    classes: &Classes,
    theta: &[f64],
    cov: &[f64],
) -> SeparatedBounds {
    let n = theta.len();
    let sep = &classes.separated;
    let evidence = gather(results, orders, classes);
    let mut value = theta.to_vec();
    let mut done = vec![false; n];
    let mut processed: Vec<usize> = Vec::new();
    // Each pass bounds the players whose same-side opponents are bounded already;
    // the groups form a chain outwards from the core, so every pass makes progress.
    loop {
        let ready: Vec<usize> = (0..n)
            .filter(|&i| sep[i].is_some() && !done[i])
            .filter(|&i| {
                evidence[i].iter().flat_map(|u| &u.terms).all(|t| {
                    t.opponents
                        .iter()
                        .all(|&j| sep[j as usize] != sep[i] || done[j as usize])
                })
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        for &i in &ready {
            let side = sep[i].unwrap_or(Separation::NeverLost);
            value[i] = solve(&evidence[i], side, &value, classes, i);
            done[i] = true;
            processed.push(i);
        }
    }
    let mut los = HashMap::new();
    let rank: HashMap<usize, usize> = processed.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    for &i in &processed {
        for j in (0..n).filter(|&j| j != i && results.games[j] > 0) {
            if classes.component[j] == classes.component[i] {
                // Within the bot's own group the fit's difference is finite.
                if i < j {
                    let var = cov[i * n + i] + cov[j * n + j] - 2.0 * cov[i * n + j];
                    los.insert((i, j), normal_cdf((theta[i] - theta[j]) / var.max(1e-300).sqrt()));
                }
                continue;
            }
            // Each pair once: by the player bounded later (further out).
            if rank.get(&j).is_some_and(|&k| k > rank[&i]) {
                continue;
            }
            let side = sep[i].unwrap_or(Separation::NeverLost);
            // The chance of i's record were it exactly as strong as j.
            let p = chance(&evidence[i], side, value[j], &value, classes, i).exp();
            los.insert(
                (i, j),
                match side {
                    Separation::NeverLost => 1.0 - p,
                    Separation::NeverWon => p,
                },
            );
        }
    }
    SeparatedBounds { value, los }
}

/// Each separated player's units: per game, the players of other groups it placed
/// ahead of (never lost) or behind (never won).
fn gather(results: &Results, orders: &[(u128, f64)], classes: &Classes) -> Vec<Vec<Unit>> {
    let n = classes.separated.len();
    let mut evidence: Vec<Vec<Unit>> = (0..n).map(|_| Vec::new()).collect();
    let mut add_unit = |games: &mut dyn Iterator<Item = (u128, f64)>, trials: f64| {
        let mut units: HashMap<usize, Unit> = HashMap::new();
        let mut order = [0u32; MAX_SEATS];
        for (key, weight) in games {
            let m = unpack(key, &mut order);
            for at in 0..m {
                let i = order[at] as usize;
                let Some(side) = classes.separated[i] else {
                    continue;
                };
                let others = match side {
                    Separation::NeverLost => &order[at + 1..m],
                    Separation::NeverWon => &order[..at],
                };
                let opponents: Vec<u32> = others
                    .iter()
                    .copied()
                    .filter(|&j| classes.component[j as usize] != classes.component[i])
                    .collect();
                if !opponents.is_empty() {
                    units
                        .entry(i)
                        .or_insert(Unit {
                            terms: Vec::new(),
                            trials,
                        })
                        .terms
                        .push(Term { weight, opponents });
                }
            }
        }
        let mut units: Vec<(usize, Unit)> = units.into_iter().collect();
        units.sort_unstable_by_key(|u| u.0);
        for (i, unit) in units {
            evidence[i].push(unit);
        }
    };
    if results.grouped == results.total && results.group_count() > 0.0 {
        let mut groups: Vec<(&i64, &Vec<(u128, f64)>)> = results.groups.iter().collect();
        groups.sort_unstable_by_key(|g| g.0);
        for (_, games) in groups {
            add_unit(&mut games.iter().copied(), 1.0);
        }
        // Groups counted by their rankings: one unit standing for that many.
        let mut counted: Vec<(&Vec<(u128, u64)>, &f64)> = results.counted_groups.iter().collect();
        counted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (games, &count) in counted {
            add_unit(&mut games.iter().map(|&(k, w)| (k, f64::from_bits(w))), count);
        }
    } else {
        // Independent games: a ranking seen `weight` times is that many trials.
        for &(key, weight) in orders {
            add_unit(&mut std::iter::once((key, 1.0)), weight);
        }
    }
    evidence
}

/// The log-probability of `i`'s record at rating `d`.
fn chance(units: &[Unit], side: Separation, d: f64, value: &[f64], classes: &Classes, i: usize) -> f64 {
    let counts = |j: u32| measured_by(classes, side, i, j as usize);
    let mut total = 0.0;
    let mut strengths = [0f64; MAX_SEATS];
    for unit in units {
        let (mut sum, mut games) = (0.0, 0.0);
        for term in &unit.terms {
            let mut k = 0;
            for &j in term.opponents.iter().filter(|&&j| counts(j)) {
                strengths[k] = value[j as usize];
                k += 1;
            }
            if k == 0 {
                continue;
            }
            let lp = match side {
                Separation::NeverLost => ahead_of_all(d, &strengths[..k]),
                Separation::NeverWon => behind_all(d, &strengths[..k]),
            };
            sum += term.weight * lp;
            games += term.weight;
        }
        if games > 0.0 {
            total += sum / games * unit.trials;
        }
    }
    total
}

/// `ln P(first among {d} ∪ others)`, Plackett–Luce.
fn ahead_of_all(d: f64, others: &[f64]) -> f64 {
    -others.iter().map(|&v| (v - d).exp()).sum::<f64>().ln_1p()
}

/// `ln P(last among {d} ∪ others)`: with the exponential-race form of
/// Plackett–Luce, `Σ_{A ⊆ others} (-1)^|A| λ / (λ + Σ_A λj)`.
fn behind_all(d: f64, others: &[f64]) -> f64 {
    if let [v] = others {
        return -(d - v).exp().ln_1p();
    }
    let m = others.iter().copied().fold(d, f64::max);
    let own = (d - m).exp();
    let rates: Vec<f64> = others.iter().map(|&v| (v - m).exp()).collect();
    let mut p = 0.0;
    for subset in 0u32..1 << rates.len() {
        let sum: f64 = (0..rates.len())
            .filter(|&k| subset & (1 << k) != 0)
            .map(|k| rates[k])
            .sum();
        let sign = if subset.count_ones() % 2 == 0 { 1.0 } else { -1.0 };
        p += sign * own / (own + sum);
    }
    p.max(f64::MIN_POSITIVE).ln()
}

/// Whether opponent `j` enters `i`'s probability: a core player, or one separated
/// on `i`'s side (already bounded); not one unconnected to the core (nothing to
/// measure against) nor one separated the other way (it could be arbitrarily far).
fn measured_by(classes: &Classes, side: Separation, i: usize, j: usize) -> bool {
    match classes.separated[j] {
        None => classes.component[j] == classes.core,
        Some(s) => s == side && j != i,
    }
}

/// The rating at which `i`'s record has probability [`TAIL`]; unbounded (±∞) when
/// none of its games is against a player with a rating to measure it by.
fn solve(units: &[Unit], side: Separation, value: &[f64], classes: &Classes, i: usize) -> f64 {
    let target = TAIL.ln();
    let evidence = units
        .iter()
        .flat_map(|u| &u.terms)
        .flat_map(|t| &t.opponents)
        .any(|&j| measured_by(classes, side, i, j as usize));
    if !evidence {
        return match side {
            Separation::NeverLost => f64::NEG_INFINITY,
            Separation::NeverWon => f64::INFINITY,
        };
    }
    let (lo, hi) = value
        .iter()
        .fold((0.0f64, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    // The record's chance rises with the rating for a player that never lost and
    // falls for one that never won; far enough out it is certain either way.
    let (mut low, mut high) = (lo - 60.0, hi + 60.0);
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        let too_likely = chance(units, side, mid, value, classes, i) > target;
        match (side, too_likely) {
            (Separation::NeverLost, true) | (Separation::NeverWon, false) => high = mid,
            _ => low = mid,
        }
        if high - low < 1e-10 {
            break;
        }
    }
    0.5 * (low + high)
}
