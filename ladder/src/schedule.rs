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

/// What the scheduler counts of one competition's groups (played or not), kept by
/// reading only the groups it has not seen yet, its own and other servers': a
/// scheduling decision costs the same at the millionth group as at the tenth.
#[derive(Debug, Default)]
pub struct Tally {
    /// Highest group key counted.
    cursor: i64,
    /// When the tally last read back over the overlap.
    overlap_read: Option<std::time::Instant>,
    /// Keys counted within [`Tally::OVERLAP`] below the cursor: another server's
    /// group can commit after one with a higher key was read, so each refresh
    /// reads that far back and skips what it has.
    recent: std::collections::BTreeSet<i64>,
    /// Groups counted.
    pub groups: u64,
    /// Games per bot.
    pub games: std::collections::HashMap<i64, u64>,
    /// Games per pair of bots.
    pub met: Meetings,
    /// Who sat right after whom (3+ seats).
    pub follows: referee::seating::Follows,
}

impl Tally {
    /// How far back (in group keys) a refresh reads again.
    pub const OVERLAP: i64 = 4096;

    /// How often a refresh reads back over the overlap; in between it reads only
    /// keys above the cursor (a late commit is a matter of milliseconds).
    pub const OVERLAP_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

    /// The key after which a refresh reads now: above the cursor, or over the
    /// overlap when that was last done [`Tally::OVERLAP_EVERY`] ago.
    pub fn read_from(&mut self) -> i64 {
        if self
            .overlap_read
            .is_none_or(|t| t.elapsed() >= Self::OVERLAP_EVERY)
        {
            self.overlap_read = Some(std::time::Instant::now());
            self.forgotten_below()
        } else {
            self.cursor
        }
    }

    /// Keys at or below this are never counted again.
    fn forgotten_below(&self) -> i64 {
        (self.cursor - Self::OVERLAP).max(0)
    }

    /// Counts a group of `seats`-seat games, unless counted already.
    pub fn add(&mut self, id: i64, bots: &[i64], seats: u64) {
        if id <= self.forgotten_below() || !self.recent.insert(id) {
            return;
        }
        self.count(bots, seats, 1);
        self.groups += 1;
        if id > self.cursor {
            self.cursor = id;
            let keep = self.forgotten_below();
            // Ids at or below `keep` are never read again.
            self.recent = self.recent.split_off(&(keep + 1));
        }
    }

    /// Adds (`by` 1) or takes back (`by` -1) a group's games, without a key: the
    /// scheduler's own picks within one batch, before they are stored.
    pub fn count(&mut self, bots: &[i64], seats: u64, by: i64) {
        let change = |v: &mut u64| *v = v.saturating_add_signed(by * seats as i64);
        for (i, &a) in bots.iter().enumerate() {
            change(self.games.entry(a).or_default());
            for &b in &bots[i + 1..] {
                change(self.met.entry((a.min(b), a.max(b))).or_default());
            }
        }
        referee::seating::count_follows(&mut self.follows, bots, by);
    }
}

fn utility(chosen: &[&Candidate], b: &Candidate, met: &Meetings) -> f64 {
    chosen
        .iter()
        .map(|c| {
            let p = crate::rating::expected_score(c.elo - b.elo);
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

    #[test]
    fn a_tally_counts_each_group_once_even_when_read_again() {
        let mut t = Tally::default();
        t.add(1, &[10, 11], 2);
        t.add(3, &[10, 12], 2);
        // A refresh reads from the overlap again: nothing counts twice.
        assert_eq!(t.read_from(), 0);
        assert_eq!(t.read_from(), 3, "the overlap is read again only now and then");
        t.add(1, &[10, 11], 2);
        t.add(3, &[10, 12], 2);
        // Another server's group with a lower key, committed late, still counts.
        t.add(2, &[11, 12], 2);
        assert_eq!(t.groups, 3);
        assert_eq!(t.games[&10], 4);
        assert_eq!(t.games[&11], 4);
        assert_eq!(t.met[&(10, 11)], 2);
        assert_eq!(t.met[&(11, 12)], 2);
        // Far along, old keys are forgotten and below the read point.
        t.add(Tally::OVERLAP + 10, &[10, 11], 2);
        assert_eq!(t.forgotten_below(), 10);
        t.add(5, &[10, 11], 2);
        assert_eq!(t.groups, 4);
        assert!(t.recent.iter().all(|&id| id > 10), "{:?}", t.recent);
        // A pick taken back leaves the counts as they were.
        t.count(&[10, 11, 12], 3, 1);
        t.count(&[10, 11, 12], 3, -1);
        assert_eq!(t.games[&10], 6);
        assert_eq!(t.met[&(10, 11)], 4);
        assert!(t.follows.values().all(|&v| v == 0));
    }
}
