//! Which worker reported what, and whether one stands out.
//!
//! Replay checks everything a record can prove. What it cannot (a worker that says
//! a bot timed out when it did not, or that runs another program under a bot's name)
//! shows as a worker whose games fault more often than everyone else's on the same
//! bots. As fishtest looks at each worker's residuals, this compares each worker's
//! rate of games with each fault kind against the pooled rate of all other workers,
//! with a two-proportion z score, and flags a worker far above the rest.

use std::collections::BTreeMap;

/// A z score above this flags the worker (about 1 in 700 by chance, per kind).
pub const FLAG_Z: f64 = 3.0;
/// Fewest faulted games of a kind before that kind can flag a worker.
pub const FLAG_MIN_GAMES: u64 = 5;

/// One stored game of a group a worker reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedGame<K> {
    /// The worker that reported it.
    pub worker: i64,
    /// Its group.
    pub group: i64,
    /// The kinds of its faults (in any order; a kind may repeat).
    pub kinds: Vec<K>,
}

/// One fault kind in one worker's games.
#[derive(Debug, Clone, PartialEq)]
pub struct KindRate<K> {
    /// The fault kind.
    pub kind: K,
    /// This worker's games with it.
    pub games: u64,
    /// Their share of this worker's games.
    pub rate: f64,
    /// The share among all other workers' games.
    pub others_rate: f64,
    /// Two-proportion z score of the difference (0 when either side has no games).
    pub z: f64,
}

/// One worker's account.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerAudit<K> {
    /// Worker id.
    pub worker: i64,
    /// Groups it reported that are stored.
    pub groups: u64,
    /// Games in them.
    pub games: u64,
    /// Per fault kind seen anywhere.
    pub kinds: Vec<KindRate<K>>,
    /// Why it stands out; empty when it does not.
    pub flag: String,
}

/// What one worker reported: its groups, its games, and its games per fault kind.
type Reported<K> = (std::collections::BTreeSet<i64>, u64, BTreeMap<K, u64>);

/// Audits every worker in `workers` from the stored games of the groups they
/// reported.
pub fn audit<K: Ord + Clone + std::fmt::Display>(
    workers: &[i64],
    games: &[ReportedGame<K>],
) -> Vec<WorkerAudit<K>> {
    let mut per_worker: BTreeMap<i64, Reported<K>> =
        workers.iter().map(|&w| (w, Default::default())).collect();
    let mut all_kinds: BTreeMap<K, u64> = BTreeMap::new();
    for game in games {
        let entry = per_worker.entry(game.worker).or_default();
        entry.0.insert(game.group);
        entry.1 += 1;
        let mut seen: Vec<&K> = game.kinds.iter().collect();
        seen.sort_unstable();
        seen.dedup();
        for k in seen {
            *entry.2.entry(k.clone()).or_default() += 1;
            *all_kinds.entry(k.clone()).or_default() += 1;
        }
    }
    let total_games: u64 = per_worker.values().map(|e| e.1).sum();
    per_worker
        .into_iter()
        .filter(|(w, _)| workers.contains(w))
        .map(|(worker, (groups, n, kinds))| {
            let others_n = total_games - n;
            let mut flags = Vec::new();
            let rates = all_kinds
                .iter()
                .map(|(kind, &all)| {
                    let mine = kinds.get(kind).copied().unwrap_or(0);
                    let rate = mine as f64 / n.max(1) as f64;
                    let others_rate = (all - mine) as f64 / others_n.max(1) as f64;
                    let z = two_proportion_z(mine, n, all - mine, others_n);
                    if z > FLAG_Z && mine >= FLAG_MIN_GAMES {
                        flags.push(format!(
                            "{kind} in {:.1}% of its games against {:.1}% for the others (z {z:.1})",
                            100.0 * rate,
                            100.0 * others_rate
                        ));
                    }
                    KindRate {
                        kind: kind.clone(),
                        games: mine,
                        rate,
                        others_rate,
                        z,
                    }
                })
                .collect();
            WorkerAudit {
                worker,
                groups: groups.len() as u64,
                games: n,
                kinds: rates,
                flag: flags.join("; "),
            }
        })
        .collect()
}

/// One worker's leases: groups it was given, and those whose lease ran out in
/// its hands (the group then went to another worker, with a new seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseCount {
    /// Worker id.
    pub worker: i64,
    /// Groups leased to it.
    pub leased: u64,
    /// Of those, leases that ran out.
    pub expired: u64,
}

/// How one worker's leases compare with the others'.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseAudit {
    /// Worker id.
    pub worker: i64,
    /// Its share of leases that ran out.
    pub rate: f64,
    /// The share among all other workers' leases.
    pub others_rate: f64,
    /// Two-proportion z score of the difference.
    pub z: f64,
    /// Why it stands out; empty when it does not.
    pub flag: String,
}

/// Compares each worker's share of leases that ran out in its hands with the
/// other workers' (a worker that takes groups and lets them lapse, to see their
/// seeds or to hold the competition back, stands out as a faulting one does).
pub fn lease_audit(counts: &[LeaseCount]) -> Vec<LeaseAudit> {
    let (all_leased, all_expired) = counts
        .iter()
        .fold((0, 0), |(l, e), c| (l + c.leased, e + c.expired.min(c.leased)));
    counts
        .iter()
        .map(|c| {
            let expired = c.expired.min(c.leased);
            let (others_n, others_x) = (all_leased - c.leased, all_expired - expired);
            let rate = expired as f64 / c.leased.max(1) as f64;
            let others_rate = others_x as f64 / others_n.max(1) as f64;
            let z = two_proportion_z(expired, c.leased, others_x, others_n);
            let flag = if z > FLAG_Z && expired >= FLAG_MIN_GAMES {
                format!(
                    "{expired} of its {} leases ran out ({:.1}%) against {:.1}% for the others (z {z:.1})",
                    c.leased,
                    100.0 * rate,
                    100.0 * others_rate
                )
            } else {
                String::new()
            };
            LeaseAudit {
                worker: c.worker,
                rate,
                others_rate,
                z,
                flag,
            }
        })
        .collect()
}

/// z of `x1/n1 - x2/n2` with the pooled proportion; 0 without data on a side.
fn two_proportion_z(x1: u64, n1: u64, x2: u64, n2: u64) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 0.0;
    }
    let (p1, p2) = (x1 as f64 / n1 as f64, x2 as f64 / n2 as f64);
    let p = (x1 + x2) as f64 / (n1 + n2) as f64;
    let se = (p * (1.0 - p) * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    if se == 0.0 { 0.0 } else { (p1 - p2) / se }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_whose_leases_run_out_far_more_than_the_others_is_flagged() {
        let count = |worker, leased, expired| LeaseCount {
            worker,
            leased,
            expired,
        };
        // Two honest workers lose 1% of their leases (a restart, a slow link);
        // the third lets a fifth of its own run out.
        let audits = lease_audit(&[count(1, 1000, 10), count(2, 1000, 10), count(3, 500, 100)]);
        assert!(
            audits[0].flag.is_empty() && audits[1].flag.is_empty(),
            "{audits:?}"
        );
        assert!(
            audits[2].flag.contains("100 of its 500 leases ran out"),
            "{audits:?}"
        );
        assert!((audits[2].rate - 0.2).abs() < 1e-9 && (audits[2].others_rate - 0.01).abs() < 1e-9);
        // Too few to say: four lapsed leases of ten flag nothing.
        let few = lease_audit(&[count(1, 1000, 0), count(2, 10, 4)]);
        assert!(few.iter().all(|a| a.flag.is_empty()), "{few:?}");
        // No worker, or no leases yet: nothing to divide by.
        assert!(lease_audit(&[]).is_empty());
        assert_eq!(lease_audit(&[count(1, 0, 0)])[0].z, 0.0);
    }

    fn games(worker: i64, n: u64, faulted: u64, kind: &'static str) -> Vec<ReportedGame<&'static str>> {
        (0..n)
            .map(|i| ReportedGame {
                worker,
                group: worker * 10_000 + i as i64 / 2,
                // A faulted game may list its kind once per seat: it counts once.
                kinds: if i < faulted { vec![kind, kind] } else { vec![] },
            })
            .collect()
    }

    #[test]
    fn a_worker_that_claims_many_more_timeouts_is_flagged_and_honest_ones_are_not() {
        let mut all = games(1, 400, 8, "timeout");
        all.extend(games(2, 400, 10, "timeout"));
        all.extend(games(3, 400, 60, "timeout"));
        let audit = audit(&[1, 2, 3], &all);
        assert_eq!(audit.len(), 3);
        assert!(audit[0].flag.is_empty(), "{:?}", audit[0]);
        assert!(audit[1].flag.is_empty(), "{:?}", audit[1]);
        assert!(audit[2].flag.contains("timeout"), "{:?}", audit[2]);
        assert_eq!((audit[2].groups, audit[2].games), (200, 400));
        let t = &audit[2].kinds[0];
        assert_eq!(t.games, 60);
        assert!((t.rate - 0.15).abs() < 1e-12);
        assert!((t.others_rate - 18.0 / 800.0).abs() < 1e-12);
        // Hand-worked: pooled p = 78/1200, se = sqrt(p(1-p)(1/400+1/800)).
        let p: f64 = 78.0 / 1200.0;
        let z = (0.15 - 18.0 / 800.0) / (p * (1.0 - p) * (1.0 / 400.0 + 1.0 / 800.0)).sqrt();
        assert!((t.z - z).abs() < 1e-9, "{} vs {z}", t.z);
    }

    #[test]
    fn few_games_or_one_worker_flag_nothing() {
        let audit = audit(&[1], &games(1, 50, 50, "crash"));
        assert!(audit[0].flag.is_empty());
        let mut all = games(1, 20, 4, "crash");
        all.extend(games(2, 20, 0, "crash"));
        assert!(super::audit(&[1, 2], &all).iter().all(|a| a.flag.is_empty()));
    }
}
