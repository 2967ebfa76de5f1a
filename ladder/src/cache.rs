//! Standings kept per competition, so that the scheduler and the web page never fit
//! ratings per request.
//!
//! A competition's standings are refit when games have arrived since the last fit
//! and either enough have arrived to matter (5%, at least 20) or the last fit is a
//! few seconds old. The fit runs on tokio's blocking pool (it is CPU work), and one
//! refit per competition runs at a time: callers that find a fresh entry never wait,
//! and callers that find a stale one while a refit is running wait for its result
//! instead of fitting again.

use crate::standings::{self, Standings};
use crate::store::{CompetitionRow, Store};
use crate::tournament::TournamentError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How old standings may get while games keep arriving.
pub const MAX_AGE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
struct Entry {
    /// Games in the fit.
    games: i64,
    /// The competition's newest game key when it was fit.
    newest: i64,
    at: Instant,
    standings: Arc<Standings>,
}

/// Standings per competition.
#[derive(Debug)]
pub struct StandingsCache {
    store: Store,
    entries: Mutex<HashMap<i64, Entry>>,
    /// One refit at a time per competition.
    refits: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
    max_age: Duration,
}

impl StandingsCache {
    /// A cache over `store`.
    pub fn new(store: Store) -> StandingsCache {
        StandingsCache::with_max_age(store, MAX_AGE)
    }

    /// A cache whose entries, while games arrive, are refit after `max_age`.
    pub fn with_max_age(store: Store, max_age: Duration) -> StandingsCache {
        StandingsCache {
            store,
            entries: Mutex::new(HashMap::new()),
            refits: Mutex::new(HashMap::new()),
            max_age,
        }
    }

    fn fresh(&self, id: i64, newest: i64, current: bool) -> Option<Arc<Standings>> {
        let entries = self.entries.lock().ok()?;
        let e = entries.get(&id)?;
        // Keys are shared by all competitions: the difference is at most the games
        // new to this one (a count would walk every game; this is one index probe).
        let new = newest - e.newest;
        let stale = new > 0 && (current || new >= (e.games / 20).max(20) || e.at.elapsed() >= self.max_age);
        (!stale).then(|| e.standings.clone())
    }

    /// Drops every cached fit: games were removed (a voided worker), which the
    /// count of new games cannot see.
    pub fn forget_all(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
    }

    /// The standings of `c`, refit if stale (the page, the scheduler).
    ///
    /// # Errors
    /// The store, or results the fit refuses.
    pub async fn get(&self, c: &CompetitionRow) -> Result<Arc<Standings>, TournamentError> {
        self.standings(c, false).await
    }

    /// The standings of `c` as last fit, at once: a stale fit starts a refit in
    /// the background (one at a time) rather than making the caller wait. Waits
    /// only for the first fit of a competition. For the scheduler, which holds
    /// its lock while it reads these and must not hold every lease up behind a
    /// fit of a million games.
    ///
    /// # Errors
    /// The store, or results the fit refuses (first fit only).
    pub async fn latest(self: &Arc<Self>, c: &CompetitionRow) -> Result<Arc<Standings>, TournamentError> {
        let last = self
            .entries
            .lock()
            .ok()
            .and_then(|e| e.get(&c.id).map(|e| e.standings.clone()));
        let Some(last) = last else {
            return self.get(c).await;
        };
        let newest = self.store.newest_game(c.id).await?;
        let running = self
            .refits
            .lock()
            .ok()
            .and_then(|r| r.get(&c.id).map(|gate| gate.try_lock().is_err()))
            .unwrap_or(false);
        if !running && self.fresh(c.id, newest, false).is_none() {
            let (cache, c) = (self.clone(), c.clone());
            tokio::spawn(async move {
                if let Err(e) = cache.get(&c).await {
                    tracing::warn!(competition = %c.name, "refitting the standings: {e}");
                }
            });
        }
        Ok(last)
    }

    /// The standings of `c` over every game recorded now (an explicit query).
    ///
    /// # Errors
    /// The store, or results the fit refuses.
    pub async fn current(&self, c: &CompetitionRow) -> Result<Arc<Standings>, TournamentError> {
        self.standings(c, true).await
    }

    async fn standings(&self, c: &CompetitionRow, current: bool) -> Result<Arc<Standings>, TournamentError> {
        let newest = self.store.newest_game(c.id).await?;
        if let Some(st) = self.fresh(c.id, newest, current) {
            return Ok(st);
        }
        let gate = self
            .refits
            .lock()
            .map_err(|_| TournamentError::Setup("standings cache poisoned".into()))?
            .entry(c.id)
            .or_default()
            .clone();
        let _refit = gate.lock().await;
        // Another caller may have refit while this one waited.
        let newest = self.store.newest_game(c.id).await?;
        if let Some(st) = self.fresh(c.id, newest, current) {
            return Ok(st);
        }
        let bots: Vec<(i64, String)> = self
            .store
            .entrants(c.id)
            .await?
            .into_iter()
            .map(|b| (b.id, b.name))
            .collect();
        let results = self.store.results(c.id).await?;
        let seats = c.seats as usize;
        let st = tokio::task::spawn_blocking(move || standings::compute(&bots, &results, seats, None))
            .await
            .map_err(|e| TournamentError::Setup(format!("the rating fit failed: {e}")))?
            .map_err(TournamentError::Setup)?;
        let st = Arc::new(st);
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                c.id,
                Entry {
                    games: st.games as i64,
                    newest,
                    at: Instant::now(),
                    standings: st.clone(),
                },
            );
        }
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewCompetition, NewGame};

    async fn game(store: &Store, c: &CompetitionRow, group: i64, bots: &[i64], winner: usize) {
        store.schedule_groups(c, &[(group, bots.to_vec())]).await.unwrap();
        let g = store
            .groups(c.id)
            .await
            .unwrap()
            .into_iter()
            .find(|g| g.group_no == group)
            .unwrap();
        let ranks = if winner == 0 { vec![1, 2] } else { vec![2, 1] };
        let new = NewGame {
            competition_id: c.id,
            group_id: g.id,
            rotation: 0,
            bots: bots.to_vec(),
            ranks,
            termination: "normal".into(),
            record: "{}".into(),
            fault_kinds: String::new(),
        };
        store.record_games(&[new], 2).await.unwrap();
    }

    #[tokio::test]
    async fn standings_are_fit_once_until_games_arrive() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let c = store
            .create_competition(&NewCompetition {
                name: "c".into(),
                game: "ur".into(),
                options: vec![],
                seats: 2,
                format: "ladder".into(),
                seed: 1,
                max_games: 0,
                time: "movetime=100".into(),
                config: String::new(),
            })
            .await
            .unwrap();
        let mut ids = Vec::new();
        for name in ["a", "b"] {
            let bot = store
                .register_bot(name, "ur", "builtin:random", &[])
                .await
                .unwrap();
            store.add_entrant(c.id, bot.id).await.unwrap();
            ids.push(bot.id);
        }
        game(&store, &c, 0, &ids, 0).await;
        let cache = StandingsCache::with_max_age(store.clone(), Duration::from_secs(3600));
        let first = cache.get(&c).await.unwrap();
        assert_eq!(first.games, 1);
        // No new game: the same fit, however often it is asked for.
        for _ in 0..5 {
            assert!(Arc::ptr_eq(&first, &cache.get(&c).await.unwrap()));
        }
        // A few new games: the page may show the older fit (until it is old), an
        // explicit query may not.
        game(&store, &c, 1, &ids, 1).await;
        assert!(Arc::ptr_eq(&first, &cache.get(&c).await.unwrap()));
        let now = cache.current(&c).await.unwrap();
        assert_eq!(now.games, 2);
        assert!(Arc::ptr_eq(&now, &cache.get(&c).await.unwrap()));
        // Enough new games refit the page's standings too.
        for g in 2..30 {
            game(&store, &c, g, &ids, (g % 2) as usize).await;
        }
        assert_eq!(cache.get(&c).await.unwrap().games, 30);
    }
}
