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
//! - **A separated group is placed as one**: players that reach each other (top
//!   beat mid and lost to it once, mid beat the rest) stand among themselves where
//!   their own games put them, and the group is placed from all its members' games
//!   outside it. A member that met nobody outside (top) is bounded through the
//!   others, never left at -∞, and what each gets does not depend on the order the
//!   players were stored in.
//! - **Opponents** enter at the end of their range that makes the bound less
//!   extreme: a core player at its estimate, moved inwards by the estimates'
//!   uncertainty relative to the anchor (the bound moves by 1.96 standard errors of
//!   the weighted sum of the core estimates it rests on); a separated one on the
//!   same side at its own bound (so a chain is bounded outwards from the core); one
//!   separated the other way not at all (it could be arbitrarily far, and then
//!   beating it says nothing). Players of the bot's own group do not enter: their
//!   games say where it stands among them, not above the rest.
//! - **Ranks and LOS** come from the even-chance point (the same search at 50%
//!   instead of 2.5%, opponents at their own even-chance points): LOS over a
//!   player is above 50% exactly when that point is above the player's, so the
//!   order never contradicts it.
//! - **Mirrored groups** share their dice, so their games are not independent: a
//!   group counts as one trial, with the mean of its games' log-probabilities (for a
//!   pair against one opponent, the chance of winning one game). That is exact when
//!   the games of a group always agree and errs on the safe side when they do not.

use super::{MAX_SEATS, Results, unpack};
use crate::separation::{Classes, Separation};
use std::collections::HashMap;

/// The chance, at the bound, of what a separated player did.
pub(super) const TAIL: f64 = 0.025;

/// One game's evidence about one member of a separated group: its weight, the
/// member, and the players outside the group that enter its probability.
struct Term {
    weight: f64,
    member: u32,
    opponents: Vec<u32>,
}

/// An independent unit (a mirrored group, or the games of one ranking when games
/// are independent): its games' terms, and how many trials it stands for.
struct Unit {
    terms: Vec<Term>,
    trials: f64,
}

/// Players that reach each other and are separated from the core together: they
/// are placed as one, each at the group's place plus where it stands among them.
struct Group {
    component: usize,
    side: Separation,
    members: Vec<usize>,
    units: Vec<Unit>,
}

/// Bounds (natural units, before anchoring), even-chance points and likelihoods
/// of superiority.
pub(super) struct SeparatedBounds {
    /// Per player: the fit's value, or for a separated player its bound.
    pub value: Vec<f64>,
    /// Per player: the fit's value, or for a separated player the rating at which
    /// its record had an even chance (opponents separated on its side at theirs).
    pub middle: Vec<f64>,
    /// LOS of a separated player over a player of another group, each unordered
    /// pair once.
    pub los: HashMap<(usize, usize), f64>,
}

/// The bound of every separated group, computed from the core outwards. `theta`
/// holds the core's fit and, for separated players, where each stands within its
/// own group (centred there).
///
/// `cov` is the covariance of the core's estimates relative to the anchor: a
/// bound is moved outwards-in by 1.96 standard errors of the core estimates it
/// was computed from (to first order, the weights its core opponents had in it),
/// so that a thinly measured core does not let it claim more than it may. The
/// even-chance points take the estimates as they are.
pub(super) fn separated_bounds(
    results: &Results,
    classes: &Classes,
    theta: &[f64],
    cov: &[f64],
) -> SeparatedBounds {
    let groups = gather(results, classes);
    let value = place(&groups, classes, theta, TAIL.ln(), Some(cov));
    let middle = place(&groups, classes, theta, 0.5f64.ln(), None);
    let n = theta.len();
    let group_of: HashMap<usize, usize> = groups.iter().enumerate().map(|(k, g)| (g.component, k)).collect();
    // Which groups each group was measured against, directly or along a chain.
    let direct: Vec<Vec<usize>> = groups
        .iter()
        .map(|g| {
            let mut to: Vec<usize> = g
                .units
                .iter()
                .flat_map(|u| &u.terms)
                .flat_map(|t| &t.opponents)
                .filter(|&&j| measured_by(classes, g, j as usize) && classes.separated[j as usize].is_some())
                .map(|&j| group_of[&classes.component[j as usize]])
                .collect();
            to.sort_unstable();
            to.dedup();
            to
        })
        .collect();
    let reaches = |from: usize, to: usize| -> bool {
        let mut seen = vec![false; groups.len()];
        let mut stack = vec![from];
        while let Some(g) = stack.pop() {
            for &h in &direct[g] {
                if h == to {
                    return true;
                }
                if !seen[h] {
                    seen[h] = true;
                    stack.push(h);
                }
            }
        }
        false
    };
    // The chance, seen from group `g`, that its member `i` is above rating `x`.
    let over = |g: &Group, i: usize, x: f64| -> f64 {
        let p = chance(g, x - theta[i], &middle, theta, classes).exp();
        match g.side {
            Separation::NeverLost => 1.0 - p,
            Separation::NeverWon => p,
        }
    };
    let mut los = HashMap::new();
    let with_games = |j: usize| results.games[j] > 0;
    for g in &groups {
        for &i in &g.members {
            if !middle[i].is_finite() {
                continue;
            }
            for j in (0..n).filter(|&j| with_games(j) && classes.component[j] != g.component) {
                match classes.separated[j] {
                    None if classes.component[j] == classes.core => {
                        los.insert((i, j), over(g, i, middle[j]));
                    }
                    None => {}
                    Some(_) if i < j && middle[j].is_finite() => {
                        let h = &groups[group_of[&classes.component[j]]];
                        let (gi, hi) = (group_of[&g.component], group_of[&h.component]);
                        // Along a chain, the bot further out was measured against
                        // the other: its record says it. Otherwise both records
                        // speak, alike.
                        let l = if reaches(gi, hi) {
                            over(g, i, middle[j])
                        } else if reaches(hi, gi) {
                            1.0 - over(h, j, middle[i])
                        } else {
                            0.5 * (over(g, i, middle[j]) + 1.0 - over(h, j, middle[i]))
                        };
                        los.insert((i, j), l);
                    }
                    Some(_) => {}
                }
            }
        }
    }
    SeparatedBounds { value, middle, los }
}

/// Each group's place (its members at `theta` within it) where its record has
/// log-chance `target`, from the core outwards: opponents separated on the same
/// side enter at their own place for the same target.
fn place(groups: &[Group], classes: &Classes, theta: &[f64], target: f64, cov: Option<&[f64]>) -> Vec<f64> {
    let mut value = theta.to_vec();
    let group_of: HashMap<usize, usize> = groups.iter().enumerate().map(|(k, g)| (g.component, k)).collect();
    let mut done = vec![false; groups.len()];
    // Each pass places the groups whose same-side opponents are placed already;
    // the groups form a chain outwards from the core, so every pass makes
    // progress, and what a group gets depends only on what it was measured
    // against, never on the order of the players.
    loop {
        let ready: Vec<usize> = (0..groups.len())
            .filter(|&k| !done[k])
            .filter(|&k| {
                let g = &groups[k];
                g.units.iter().flat_map(|u| &u.terms).all(|t| {
                    t.opponents.iter().all(|&j| {
                        let j = j as usize;
                        !measured_by(classes, g, j)
                            || classes.separated[j].is_none()
                            || done[group_of[&classes.component[j]]]
                    })
                })
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        let placed: Vec<(usize, f64)> = ready
            .iter()
            .map(|&k| {
                let g = &groups[k];
                let shift = solve(g, &value, theta, classes, target);
                let spread = cov.map_or(0.0, |c| core_spread(g, shift, &value, theta, classes, c));
                let inwards = match g.side {
                    Separation::NeverLost => -1.0,
                    Separation::NeverWon => 1.0,
                };
                (k, shift + inwards * super::BOUND_CORE_Z * spread)
            })
            .collect();
        for (k, shift) in placed {
            for &i in &groups[k].members {
                value[i] = shift + theta[i];
            }
            done[k] = true;
        }
    }
    value
}

/// Each separated group's units: per game, for each member, the players of
/// other groups it placed ahead of (never lost) or behind (never won).
fn gather(results: &Results, classes: &Classes) -> Vec<Group> {
    let n = classes.separated.len();
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    for i in 0..n {
        let Some(side) = classes.separated[i] else {
            continue;
        };
        let c = classes.component[i];
        let k = *group_of.entry(c).or_insert_with(|| {
            groups.push(Group {
                component: c,
                side,
                members: Vec::new(),
                units: Vec::new(),
            });
            groups.len() - 1
        });
        groups[k].members.push(i);
    }
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
                        .entry(group_of[&classes.component[i]])
                        .or_insert(Unit {
                            terms: Vec::new(),
                            trials,
                        })
                        .terms
                        .push(Term {
                            weight,
                            member: i as u32,
                            opponents,
                        });
                }
            }
        }
        let mut units: Vec<(usize, Unit)> = units.into_iter().collect();
        units.sort_unstable_by_key(|u| u.0);
        for (k, unit) in units {
            groups[k].units.push(unit);
        }
    };
    // Every game is in a group (one without is its own), so a group is a unit.
    let mut played: Vec<(&i64, &Vec<(u128, f64)>)> = results.groups.iter().collect();
    played.sort_unstable_by_key(|g| g.0);
    for (_, games) in played {
        add_unit(&mut games.iter().copied(), 1.0);
    }
    // Groups counted by their rankings: one unit standing for that many.
    let mut counted: Vec<(&Vec<(u128, u64)>, &f64)> = results.counted_groups.iter().collect();
    counted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (games, &count) in counted {
        add_unit(&mut games.iter().map(|&(k, w)| (k, f64::from_bits(w))), count);
    }
    groups
}

/// The log-probability of group `g`'s record with the group placed at `shift`
/// (each member at `shift + theta[member]`), opponents at `value`.
fn chance(g: &Group, shift: f64, value: &[f64], theta: &[f64], classes: &Classes) -> f64 {
    let mut total = 0.0;
    let mut strengths = [0f64; MAX_SEATS];
    for unit in &g.units {
        let (mut sum, mut games) = (0.0, 0.0);
        for term in &unit.terms {
            let mut k = 0;
            for &j in term
                .opponents
                .iter()
                .filter(|&&j| measured_by(classes, g, j as usize))
            {
                strengths[k] = value[j as usize];
                k += 1;
            }
            if k == 0 {
                continue;
            }
            let d = shift + theta[term.member as usize];
            let lp = match g.side {
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

/// Whether opponent `j` enters group `g`'s probability: a core player, or one
/// separated on `g`'s side in another group (placed already); not one
/// unconnected to the core (nothing to measure against) nor one separated the
/// other way (it could be arbitrarily far).
fn measured_by(classes: &Classes, g: &Group, j: usize) -> bool {
    match classes.separated[j] {
        None => classes.component[j] == classes.core,
        Some(s) => s == g.side && classes.component[j] != g.component,
    }
}

/// The place at which `g`'s record has log-chance `target`; unbounded (±∞) when
/// none of its games is against a player with a rating to measure it by.
fn solve(g: &Group, value: &[f64], theta: &[f64], classes: &Classes, target: f64) -> f64 {
    let measured: Vec<f64> = g
        .units
        .iter()
        .flat_map(|u| &u.terms)
        .flat_map(|t| &t.opponents)
        .filter(|&&j| measured_by(classes, g, j as usize))
        .map(|&j| value[j as usize])
        .collect();
    if measured.is_empty() {
        return match g.side {
            Separation::NeverLost => f64::NEG_INFINITY,
            Separation::NeverWon => f64::INFINITY,
        };
    }
    // The record's chance rises with the place for a group that never lost and
    // falls for one that never won; far enough out it is certain either way.
    // Bracket from the opponents outwards, doubling, then bisect.
    let start = measured.iter().sum::<f64>() / measured.len() as f64;
    let too_likely = |x: f64| chance(g, x, value, theta, classes) > target;
    let rising = g.side == Separation::NeverLost;
    let (mut low, mut high) = (start - 1.0, start + 1.0);
    let mut step = 1.0;
    // For a rising chance the root is above `low` when `low` is too unlikely.
    while too_likely(low) == rising && step < 1e6 {
        step *= 2.0;
        low -= step;
    }
    step = 1.0;
    while too_likely(high) != rising && step < 1e6 {
        step *= 2.0;
        high += step;
    }
    // To the last bit, so that what a group gets does not depend on where the
    // search started (the opponents' average, summed in the players' order).
    loop {
        let mid = 0.5 * (low + high);
        if mid <= low || mid >= high {
            break mid;
        }
        if too_likely(mid) == rising {
            high = mid;
        } else {
            low = mid;
        }
    }
}

/// The standard error, from the core's estimates, of group `g`'s place `shift`:
/// to first order the place moves with each core opponent `j` by the weight
/// `-(∂chance/∂θj) / (∂chance/∂shift)` (the weights sum to one when only core
/// players were met), so its variance is `wᵀ C w` for the core's covariance `C`
/// relative to the anchor. Zero when the anchor is the only core player met, or
/// the core's average is the anchor and the group met the core evenly.
fn core_spread(g: &Group, shift: f64, value: &[f64], theta: &[f64], classes: &Classes, cov: &[f64]) -> f64 {
    if !shift.is_finite() {
        return 0.0;
    }
    let n = value.len();
    let mut met: Vec<usize> = g
        .units
        .iter()
        .flat_map(|u| &u.terms)
        .flat_map(|t| &t.opponents)
        .map(|&j| j as usize)
        .filter(|&j| classes.separated[j].is_none() && classes.component[j] == classes.core)
        .collect();
    met.sort_unstable();
    met.dedup();
    let h = 1e-5;
    let here = |v: &[f64], s: f64| chance(g, s, v, theta, classes);
    let by_shift = (here(value, shift + h) - here(value, shift - h)) / (2.0 * h);
    if by_shift == 0.0 || !by_shift.is_finite() {
        return 0.0;
    }
    let mut moved = value.to_vec();
    let weights: Vec<f64> = met
        .iter()
        .map(|&j| {
            moved[j] = value[j] + h;
            let up = here(&moved, shift);
            moved[j] = value[j] - h;
            let down = here(&moved, shift);
            moved[j] = value[j];
            -(up - down) / (2.0 * h) / by_shift
        })
        .collect();
    let mut var = 0.0;
    for (a, &i) in met.iter().enumerate() {
        for (b, &j) in met.iter().enumerate() {
            var += weights[a] * weights[b] * cov[i * n + j];
        }
    }
    var.max(0.0).sqrt()
}
