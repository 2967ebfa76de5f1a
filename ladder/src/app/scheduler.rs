//! The background scheduler: keeps groups ready so a lease never schedules.

use super::error::ServiceError;
use super::tally::Tally;
use crate::app::cache::StandingsCache;
use crate::store::{
    BotId, BotRow, BotStatus, CompetitionFormat, CompetitionId, CompetitionRow, CompetitionStatus, GroupId,
    GroupStatus, Store,
};
use rating::schedule::Candidate;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// Chooses who plays next and stores the groups; one per server.
pub struct Scheduler {
    pub(super) store: Store,
    pub(super) standings: Arc<StandingsCache>,
    // Scheduling reads then writes; one at a time per server keeps it simple (with
    // several servers the group-number key settles races). Per competition, what
    // has been scheduled so far.
    pub(super) tallies: Mutex<HashMap<CompetitionId, Tally>>,
    /// Groups asked for in leases on this server so far: the demand the backlog
    /// follows (what was asked, not what was had, so a backlog run dry grows).
    pub(super) wanted: std::sync::atomic::AtomicU64,
    /// Rung by a lease that found too few groups ready.
    pub(super) wake: tokio::sync::Notify,
    /// Looks at the backlog begun so far: a lease waits for a look begun after
    /// its own query, since one begun before may have missed what it asks for.
    pub(super) looks_begun: std::sync::atomic::AtomicU64,
    /// Told after every look at the backlog, for leases waiting on one.
    pub(super) looks: tokio::sync::watch::Sender<Look>,
}

/// What the scheduler's last look at the backlog found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Look {
    /// Groups were ready, or it stored some: a lease that found none should ask
    /// again. False: every open competition is full or has too few bots.
    pub(super) could_schedule: bool,
    /// Its place among the looks begun (`Scheduler::looks_begun` once begun).
    pub(super) begun: u64,
}

impl Scheduler {
    /// A scheduler over `store` that has looked at nothing yet; `standings`
    /// is the cache the pairing reads.
    pub(super) fn new(store: Store, standings: Arc<StandingsCache>) -> Scheduler {
        Scheduler {
            store,
            standings,
            tallies: Mutex::new(HashMap::new()),
            wanted: std::sync::atomic::AtomicU64::new(0),
            wake: tokio::sync::Notify::new(),
            looks_begun: std::sync::atomic::AtomicU64::new(0),
            looks: tokio::sync::watch::Sender::new(Look::default()),
        }
    }

    /// The first look begun after `asked_after` looks had begun, once it ends,
    /// if one ends within `wait`. A look begun earlier may have read the
    /// competitions before the asker's own query, so it does not answer it.
    pub(super) async fn look_begun_after(
        looked: &mut tokio::sync::watch::Receiver<Look>,
        asked_after: u64,
        wait: Duration,
    ) -> Option<Look> {
        match tokio::time::timeout(wait, looked.wait_for(|l| l.begun > asked_after)).await {
            Ok(Ok(look)) => Some(*look),
            // None in time, or the scheduler stopped.
            Ok(Err(_)) | Err(_) => None,
        }
    }

    /// Forgets what was scheduled, so the next batch reads it again: after
    /// groups were withdrawn, which no longer count.
    pub async fn forget(&self) {
        self.tallies.lock().await.clear();
    }

    /// What the scheduler knows of each bot: its rating from the standings cache
    /// (refit as games arrive, on the blocking pool, never under a lock the
    /// scheduler holds) and its games from the tally, played or scheduled, so a
    /// new bot is not put into every group at once.
    pub(super) async fn candidates(
        &self,
        c: &CompetitionRow,
        bots: &[BotRow],
        tally: &Tally,
    ) -> Result<Vec<Candidate>, ServiceError> {
        let st = self
            .standings
            .latest(c)
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        let by_name: HashMap<&str, &rating::standings::Standing> =
            st.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        Ok(bots
            .iter()
            .map(|b| {
                let (elo, sd) = by_name
                    .get(b.name.as_str())
                    .filter(|r| !r.unrated)
                    // An unrated bot (it played only bots without a finite rating)
                    // is placed as a newcomer is.
                    .map_or((0.0, rating::fit::PRIOR_SD_ELO), |r| {
                        // A separated bot (never lost, or never won) has a bound,
                        // not an interval: uncertain, but less so than a newcomer.
                        let sd = if r.ci95.is_finite() {
                            r.ci95 / 1.959964
                        } else {
                            400.0
                        };
                        (r.elo, sd)
                    });
                Candidate {
                    id: b.id.0,
                    elo,
                    sd,
                    games: tally.games.get(&b.id.0).copied().unwrap_or(0),
                }
            })
            .collect())
    }

    /// Schedules up to `want` groups, each in the open competition with the fewest
    /// groups that can take one. Returns how many it stored.
    pub(super) async fn schedule_batch(&self, want: usize) -> Result<usize, ServiceError> {
        let mut tallies = self.tallies.lock().await;
        struct Open {
            c: CompetitionRow,
            candidates: Vec<Candidate>,
            picks: Vec<Vec<i64>>,
            room: u64,
        }
        let mut open = Vec::new();
        // A season's ladder plays nothing new once its deadline passed, though its
        // freeze may wait for builds: the finalists are picked on the games before.
        let past_deadline = self.store.seasons().seasons_past_deadline().await?;
        for c in self.store.competitions().all().await? {
            if past_deadline.contains(&c.id) {
                continue;
            }
            // A season's finals are placed by the season alone (their seeds are
            // committed to before they start).
            if c.status != CompetitionStatus::Open || c.format == CompetitionFormat::Finals {
                continue;
            }
            let tally = tallies.entry(c.id).or_default();
            for g in self
                .store
                .groups()
                .groups_after(c.id, GroupId(tally.read_from(self.store.now_ms())))
                .await?
            {
                if g.status != GroupStatus::Withdrawn {
                    tally.add(g.id.0, &rating_keys(&g.bots), c.seats as u64);
                }
            }
            let room = if c.max_games > 0 {
                (c.max_games as u64)
                    .div_ceil(c.seats as u64)
                    .saturating_sub(tally.groups)
            } else {
                u64::MAX
            };
            if room == 0 {
                continue;
            }
            let mut bots = self.store.competitions().entrants(c.id).await?;
            bots.retain(|b| b.status == BotStatus::Active);
            let candidates = self.candidates(&c, &bots, tally).await?;
            open.push(Open {
                c,
                candidates,
                picks: Vec::new(),
                room,
            });
        }
        // Authors' challenges come after the ladder's own groups: a tenth of a
        // batch (at least one group) goes to them first, the rest only when no
        // ladder can take a group. So they never starve, nor crowd a ladder out.
        let challenge_share = (want / 10).max(1);
        let mut challenge_picks = 0;
        for _ in 0..want {
            let challenge_first = challenge_picks < challenge_share;
            let Some(o) = open
                .iter_mut()
                .filter(|o| o.room > o.picks.len() as u64)
                .min_by_key(|o| {
                    let challenge = o.c.format == CompetitionFormat::Challenge;
                    (
                        challenge != challenge_first,
                        tallies[&o.c.id].groups + o.picks.len() as u64,
                        o.c.id,
                    )
                })
            else {
                break;
            };
            if o.c.format == CompetitionFormat::Challenge {
                challenge_picks += 1;
            }
            let tally = tallies
                .get_mut(&o.c.id)
                .ok_or_else(|| ServiceError::Internal("no tally".into()))?;
            let seats = o.c.seats as u64;
            let Some(ids) = rating::schedule::pick(&o.candidates, seats as usize, &tally.met) else {
                o.room = 0;
                continue;
            };
            // With 3+ seats, the orientation that evens out who follows whom.
            let ids = referee::seating::balanced_order_by(ids, &tally.follows);
            // Counted at once so the next pick of this batch sees it.
            tally.count(&ids, seats, 1);
            for c in o.candidates.iter_mut().filter(|c| ids.contains(&c.id)) {
                c.games += seats;
            }
            o.picks.push(ids);
        }
        let mut stored = 0;
        for o in open.into_iter().filter(|o| !o.picks.is_empty()) {
            let tally = tallies
                .get_mut(&o.c.id)
                .ok_or_else(|| ServiceError::Internal("no tally".into()))?;
            let seats = o.c.seats as u64;
            // Taken back, then counted as stored (by key, so a refresh skips them).
            for ids in &o.picks {
                tally.count(ids, seats, -1);
            }
            let picks: Vec<Vec<BotId>> = o
                .picks
                .iter()
                .map(|ids| ids.iter().map(|&id| BotId(id)).collect())
                .collect();
            let groups = self.store.groups().schedule_many(&o.c, &picks).await?;
            for g in &groups {
                tally.add(g.id.0, &rating_keys(&g.bots), seats);
            }
            stored += groups.len();
        }
        Ok(stored)
    }

    /// Keeps about two seconds of leases' asking worth of groups ready (at least
    /// [`BACKLOG_MIN`]), so a lease is one query and never waits for the scheduler;
    /// looks every [`BACKLOG_EVERY`] or when a lease found too few. Ends with `stop`.
    pub async fn keep_ahead(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        // When (the store's clock, ms) the rate was last measured, and the demand then.
        let mut last = (self.store.now_ms(), 0u64);
        let mut rate = 0.0f64;
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(BACKLOG_EVERY) => {}
            }
            let begun = self.looks_begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let wanted = self.wanted.load(std::sync::atomic::Ordering::Relaxed);
            let now_ms = self.store.now_ms();
            let secs = (now_ms - last.0) as f64 / 1000.0;
            if secs >= 0.05 {
                // Groups leased per second, smoothed over a few looks.
                let now = (wanted - last.1) as f64 / secs;
                rate = if rate == 0.0 { now } else { 0.7 * rate + 0.3 * now };
                last = (now_ms, wanted);
            }
            // Two seconds of demand: a fleet's leases arrive in bursts (every
            // worker of a batch comes back at once), and a lease that finds the
            // backlog empty waits for the next look.
            let target = ((2.0 * rate) as usize).max(BACKLOG_MIN);
            let ready = match self.store.games().groups_ready().await {
                Ok(n) => n as usize,
                Err(e) => {
                    tracing::warn!("the scheduler cannot count the groups ready: {e}");
                    continue;
                }
            };
            let mut could_schedule = ready > 0;
            if ready < target / 2 {
                let want = (target - ready).min(16 * BACKLOG_MIN);
                match self.schedule_batch(want).await {
                    Ok(stored) => could_schedule |= stored > 0,
                    Err(e) => {
                        // Told as "ask again": a passing database fault is not the end.
                        could_schedule = true;
                        tracing::warn!("the scheduler failed: {e}");
                    }
                }
            }
            self.looks.send_replace(Look {
                could_schedule,
                begun,
            });
        }
    }
}

/// Fewest groups the background scheduler keeps ready.
pub const BACKLOG_MIN: usize = 256;

/// How often the background scheduler looks at the backlog.
pub const BACKLOG_EVERY: Duration = Duration::from_millis(200);

/// Bots as the rating crate's player keys (the schedule and the tally count
/// them so).
fn rating_keys(bots: &[BotId]) -> Vec<i64> {
    bots.iter().map(|b| b.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewCompetition;

    /// A look that began before a lease's query and ends after the lease began
    /// waiting does not answer the lease ("nothing to schedule" from it was a
    /// false "no work"); the next look does.
    #[tokio::test(start_paused = true)]
    async fn only_a_look_begun_after_the_query_answers_a_lease() {
        let looks = tokio::sync::watch::Sender::new(Look::default());
        let mut looked = looks.subscribe();
        // The lease read 1 look begun; that look ends now.
        let under_way = Look {
            could_schedule: false,
            begun: 1,
        };
        looks.send_replace(under_way);
        let wait = crate::app::LEASE_WAIT;
        assert_eq!(Scheduler::look_begun_after(&mut looked, 1, wait).await, None);
        let next = Look {
            could_schedule: true,
            begun: 2,
        };
        looks.send_replace(next);
        assert_eq!(
            Scheduler::look_begun_after(&mut looked, 1, wait).await,
            Some(next)
        );
        // A look that began after the query and ended before the wait answers at once.
        assert_eq!(
            Scheduler::look_begun_after(&mut looked, 1, wait).await,
            Some(next)
        );
        drop(looks);
        assert_eq!(
            Scheduler::look_begun_after(&mut looked, 2, wait).await,
            None,
            "stopped"
        );
    }

    /// A challenge takes a tenth of a batch while a ladder can take the rest, and
    /// the whole batch once no ladder can.
    #[tokio::test]
    async fn a_challenge_comes_after_the_ladder_but_is_never_starved() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let author = store.authors().add_author("alice", "hash", 3).await.unwrap();
        let mut ids = Vec::new();
        for name in ["a", "b", "c"] {
            ids.push(
                store
                    .bots()
                    .register_bot(name, "ur", "builtin:random", &[])
                    .await
                    .unwrap()
                    .id,
            );
        }
        let mut ladder = NewCompetition::two_seat_ur("ladder");
        ladder.max_games = 40;
        let ladder = store.competitions().open_competition(&ladder).await.unwrap();
        let mut asked = NewCompetition::two_seat_ur("challenge");
        asked.max_games = 40;
        let challenge = store
            .challenges()
            .open_challenge(&asked, author.id, ids[0], ids[1], 1000)
            .await
            .unwrap();
        let scheduler = Scheduler::new(store.clone(), Arc::new(StandingsCache::new(store.clone())));
        let count = |c: CompetitionId| {
            let store = store.clone();
            async move { store.groups().of_competition(c).await.unwrap().len() }
        };
        assert_eq!(scheduler.schedule_batch(10).await.unwrap(), 10);
        assert_eq!((count(ladder.id).await, count(challenge.id).await), (9, 1));
        assert_eq!(scheduler.schedule_batch(10).await.unwrap(), 10);
        assert_eq!((count(ladder.id).await, count(challenge.id).await), (18, 2));
        // The ladder fills (40 games: 20 groups); the challenge takes the rest.
        assert_eq!(scheduler.schedule_batch(10).await.unwrap(), 10);
        assert_eq!((count(ladder.id).await, count(challenge.id).await), (20, 10));
        assert_eq!(scheduler.schedule_batch(20).await.unwrap(), 10);
        assert_eq!((count(ladder.id).await, count(challenge.id).await), (20, 20));
        // Its groups are its two bots alone: a third bot of the game is no entrant.
        for g in store.groups().of_competition(challenge.id).await.unwrap() {
            let mut bots = g.bots.clone();
            bots.sort_unstable();
            assert_eq!(bots, [ids[0], ids[1]]);
        }
    }
}
