//! The scheduler's running count of one competition's groups.

use rating::schedule::Meetings;

/// What the scheduler counts of one competition's groups (played or not), kept by
/// reading only the groups it has not seen yet, its own and other servers': a
/// scheduling decision costs the same at the millionth group as at the tenth.
#[derive(Debug, Default)]
pub struct Tally {
    /// Highest group key counted.
    cursor: i64,
    /// When (the store's clock, ms) the tally last read back over the overlap.
    overlap_read: Option<i64>,
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

    /// The key after which a refresh at `now_ms` (the store's clock) reads:
    /// above the cursor, or over the overlap when that was last done
    /// [`Tally::OVERLAP_EVERY`] ago.
    pub fn read_from(&mut self, now_ms: i64) -> i64 {
        let every = Self::OVERLAP_EVERY.as_millis() as i64;
        if self.overlap_read.is_none_or(|t| now_ms - t >= every) {
            self.overlap_read = Some(now_ms);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_counts_each_group_once_even_when_read_again() {
        let mut t = Tally::default();
        t.add(1, &[10, 11], 2);
        t.add(3, &[10, 12], 2);
        // A refresh reads from the overlap again: nothing counts twice.
        assert_eq!(t.read_from(1_000), 0);
        assert_eq!(
            t.read_from(1_001),
            3,
            "the overlap is read again only now and then"
        );
        let again = 1_000 + Tally::OVERLAP_EVERY.as_millis() as i64;
        assert_eq!(t.read_from(again - 1), 3);
        assert_eq!(t.read_from(again), 0, "and once OVERLAP_EVERY has passed");
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
