//! Which bots meet next in a ladder competition.
//!
//! - A bot with fewer than [`NEW_BOT_GAMES`] games (played or already scheduled) is
//!   seated first, the one with the fewest first: new bots get rated quickly.
//! - Otherwise the first seat goes to the most uncertain rating (widest interval),
//!   fewest games breaking ties.
//! - Each further seat goes to the bot whose game with those already chosen is most
//!   informative: `p(1-p)` (largest for equal ratings) times the summed rating
//!   variances (largest for uncertain ratings), divided by `1 + games they already
//!   had together`, so that opponents vary.
//! - Seats are balanced by construction: every group is mirrored, so each bot plays
//!   each seat of it once.

/// Games before a bot counts as established.
pub const NEW_BOT_GAMES: u64 = 10;

/// What the scheduler knows of a bot.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Bot key.
    pub id: i64,
    /// Rating.
    pub elo: f64,
    /// Standard deviation of the rating (Elo).
    pub sd: f64,
    /// Games played or scheduled.
    pub games: u64,
}

/// Games two bots have had together (played or scheduled), keyed by `(min id, max id)`.
pub type Meetings = std::collections::HashMap<(i64, i64), u64>;

/// Picks `seats` bots for the next group, in seat order; `None` with too few bots.
pub fn pick(candidates: &[Candidate], seats: usize, met: &Meetings) -> Option<Vec<i64>> {
    if candidates.len() < seats || seats == 0 {
        return None;
    }
    let by_games = |a: &&Candidate, b: &&Candidate| a.games.cmp(&b.games).then(a.id.cmp(&b.id));
    let first = candidates
        .iter()
        .filter(|c| c.games < NEW_BOT_GAMES)
        .min_by(by_games)
        .or_else(|| {
            candidates.iter().max_by(|a, b| {
                a.sd.total_cmp(&b.sd)
                    .then(b.games.cmp(&a.games))
                    .then(b.id.cmp(&a.id))
            })
        })?;
    let mut chosen = vec![first];
    while chosen.len() < seats {
        let next = candidates
            .iter()
            .filter(|c| !chosen.iter().any(|x| x.id == c.id))
            .max_by(|a, b| {
                let (ua, ub) = (utility(&chosen, a, met), utility(&chosen, b, met));
                ua.total_cmp(&ub)
                    .then(b.games.cmp(&a.games))
                    .then(b.id.cmp(&a.id))
            })?;
        chosen.push(next);
    }
    Some(chosen.iter().map(|c| c.id).collect())
}

fn utility(chosen: &[&Candidate], b: &Candidate, met: &Meetings) -> f64 {
    chosen
        .iter()
        .map(|c| {
            let p = crate::elo::expected_score(c.elo - b.elo);
            let together = met.get(&(c.id.min(b.id), c.id.max(b.id))).copied().unwrap_or(0);
            p * (1.0 - p) * (c.sd * c.sd + b.sd * b.sd) / (1.0 + together as f64)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: i64, elo: f64, sd: f64, games: u64) -> Candidate {
        Candidate { id, elo, sd, games }
    }

    #[test]
    fn new_bots_play_first() {
        let bots = [c(1, 0.0, 30.0, 500), c(2, 10.0, 30.0, 400), c(3, 0.0, 900.0, 2)];
        assert_eq!(pick(&bots, 2, &Meetings::new()).unwrap()[0], 3);
    }

    #[test]
    fn uncertain_bots_meet_close_opponents() {
        // 2 is the most uncertain; 3 is close to it, 4 far above.
        let bots = [
            c(1, 0.0, 20.0, 900),
            c(2, 200.0, 80.0, 100),
            c(3, 210.0, 20.0, 900),
            c(4, 900.0, 20.0, 900),
        ];
        assert_eq!(pick(&bots, 2, &Meetings::new()).unwrap(), vec![2, 3]);
        assert_eq!(pick(&bots, 3, &Meetings::new()).unwrap()[..2], [2, 3]);
        assert_eq!(pick(&bots[..1], 2, &Meetings::new()), None);
    }

    #[test]
    fn every_pair_gets_played_over_time() {
        // Simulate: equal bots, counting scheduled games; all pairs must appear.
        let mut bots: Vec<Candidate> = (0..5).map(|i| c(i, 0.0, 400.0, 0)).collect();
        let mut met = Meetings::new();
        for _ in 0..60 {
            let g = pick(&bots, 2, &met).unwrap();
            *met.entry((g[0].min(g[1]), g[0].max(g[1]))).or_default() += 2;
            for id in g {
                let b = &mut bots[id as usize];
                b.games += 2;
                b.sd = 400.0 / (b.games as f64).sqrt();
            }
        }
        // All 10 pairs meet, and none far more often than the others.
        assert_eq!(met.len(), 10, "{met:?}");
        assert!(met.values().all(|&g| (8..=16).contains(&g)), "{met:?}");
    }
}
