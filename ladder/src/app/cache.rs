//! Standings kept per competition, so that the scheduler and the web page never fit
//! ratings per request.
//!
//! A competition's standings are refit when games have arrived since the last fit
//! and either enough have arrived to matter (5%, at least 20) or the last fit is a
//! few seconds old. The fit runs on tokio's blocking pool (it is CPU work), and one
//! refit per competition runs at a time: callers that find a fresh entry never wait,
//! and callers that find a stale one while a refit is running wait for its result
//! instead of fitting again.

use crate::local::tournament::TournamentError;
use crate::store::{BotId, CompetitionId, CompetitionRow, GameId, RatingPoint, Store};
use rating::standings::Standings;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How old standings may get while games keep arriving.
pub const MAX_AGE: Duration = Duration::from_secs(2);

/// What the pages read besides the standings, counted in the same read as the
/// fit, so a bot's page never reads every result.
#[derive(Debug, Default)]
pub struct ResultIndex {
    /// Wins, draws and losses of a bot against another, keyed (bot, opponent).
    pub against: HashMap<(BotId, BotId), [u64; 3]>,
    /// Games each bot played.
    pub games: HashMap<BotId, u64>,
}

/// A competition's standings and result index, as of one fit.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The standings.
    pub standings: Arc<Standings>,
    /// Each bot's games and results against the others.
    pub index: Arc<ResultIndex>,
}

/// Below this many games the pages see every game (a fit is quick); above, the
/// last fit, refit in the background.
pub const PAGE_EXACT_GAMES: u64 = 5_000;

/// A rating point is kept when the competition has grown by this share since the
/// last one (at least [`POINT_MIN_GAMES`]), or [`POINT_MAX_AGE_MS`] has passed.
const POINT_GROWTH: i64 = 20;
const POINT_MIN_GAMES: i64 = 20;
const POINT_MAX_AGE_MS: i64 = 3_600_000;

/// Whether a fit of `games` games is a new point of the rating history, after the
/// last kept point `(games, at_ms)`.
fn point_due(last: Option<(i64, i64)>, games: i64, now: i64) -> bool {
    match last {
        None => games > 0,
        Some((g, at)) => {
            games > g
                && (games - g >= (g / POINT_GROWTH).max(POINT_MIN_GAMES) || now - at >= POINT_MAX_AGE_MS)
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    /// Games in the fit.
    games: i64,
    /// The competition's newest game key when it was fit.
    newest: GameId,
    /// When it was fit (the store's clock, ms).
    at_ms: i64,
    fit: Fit,
}

/// Standings per competition.
#[derive(Debug)]
pub struct StandingsCache {
    store: Store,
    entries: Mutex<HashMap<CompetitionId, Entry>>,
    /// One refit at a time per competition.
    refits: Mutex<HashMap<CompetitionId, Arc<tokio::sync::Mutex<()>>>>,
    max_age: Duration,
    /// The last rating point kept per competition, `(games, at_ms)`: read from the
    /// store on the first fit.
    points: Mutex<HashMap<CompetitionId, Option<(i64, i64)>>>,
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
            points: Mutex::new(HashMap::new()),
        }
    }

    fn fresh(&self, id: CompetitionId, newest: GameId, current: bool) -> Option<Fit> {
        let entries = self.entries.lock().ok()?;
        let e = entries.get(&id)?;
        // Keys are shared by all competitions: the difference is at most the games
        // new to this one (a count would walk every game; this is one index probe).
        let new = newest.0 - e.newest.0;
        let stale = new > 0
            && (current
                || new >= (e.games / 20).max(20)
                || self.store.now_ms() - e.at_ms >= self.max_age.as_millis() as i64);
        (!stale).then(|| e.fit.clone())
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
        Ok(self.fit(c, false).await?.standings)
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
        Ok(self.last_fit(c, 0).await?.standings)
    }

    /// The fit the pages read. Below [`PAGE_EXACT_GAMES`] games a fit takes
    /// milliseconds, so it covers every game recorded now; above, it is the fit as
    /// last made, at once, as [`Self::latest`] gives it, so that no page waits for
    /// a refit of a large competition (only for its first fit).
    ///
    /// # Errors
    /// The store, or results the fit refuses.
    pub async fn latest_fit(self: &Arc<Self>, c: &CompetitionRow) -> Result<Fit, TournamentError> {
        self.last_fit(c, PAGE_EXACT_GAMES).await
    }

    /// The last fit at once (a stale one refit in the background), unless there
    /// is none or it holds fewer than `exact_below` games: then a fit of every
    /// game now.
    async fn last_fit(
        self: &Arc<Self>,
        c: &CompetitionRow,
        exact_below: u64,
    ) -> Result<Fit, TournamentError> {
        let last = self
            .entries
            .lock()
            .ok()
            .and_then(|e| e.get(&c.id).map(|e| e.fit.clone()));
        let Some(last) = last.filter(|f| f.standings.games >= exact_below) else {
            return self.fit(c, exact_below > 0).await;
        };
        let newest = self.store.games().newest_game(c.id).await?;
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
        Ok(self.fit(c, true).await?.standings)
    }

    async fn fit(&self, c: &CompetitionRow, current: bool) -> Result<Fit, TournamentError> {
        let newest = self.store.games().newest_game(c.id).await?;
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
        let newest = self.store.games().newest_game(c.id).await?;
        if let Some(st) = self.fresh(c.id, newest, current) {
            return Ok(st);
        }
        let bots: Vec<(i64, String)> = self
            .store
            .competitions()
            .entrants(c.id)
            .await?
            .into_iter()
            .map(|b| (b.id.0, b.name))
            .collect();
        // Finished groups by shape and the games in flight: rows as many as
        // the shapes, not the games.
        let tallied = self.store.shapes().tallied(c.id).await?;
        let seats = c.seats as usize;
        let ids: HashMap<String, BotId> = bots.iter().map(|(id, name)| (name.clone(), BotId(*id))).collect();
        let (st, index) = tokio::task::spawn_blocking(move || {
            tallied.standings(&bots, seats, None).map(|st| {
                let games = st
                    .rows
                    .iter()
                    .filter_map(|r| {
                        let (id, _) = bots.iter().find(|(_, name)| *name == r.name)?;
                        Some((BotId(*id), r.games))
                    })
                    .collect();
                let index = ResultIndex {
                    against: tallied.against(),
                    games,
                };
                (st, index)
            })
        })
        .await
        .map_err(|e| TournamentError::Setup(format!("the rating fit failed: {e}")))??;
        let fit = Fit {
            standings: Arc::new(st),
            index: Arc::new(index),
        };
        if let Err(e) = self.keep_point(c.id, &fit.standings, &ids).await {
            // The history misses a point; the standings are still right.
            tracing::warn!(competition = %c.name, "keeping a rating point: {e}");
        }
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                c.id,
                Entry {
                    games: fit.standings.games as i64,
                    newest,
                    at_ms: self.store.now_ms(),
                    fit: fit.clone(),
                },
            );
        }
        Ok(fit)
    }

    /// Keeps this fit as a point of every bot's rating history, if one is due.
    async fn keep_point(
        &self,
        competition_id: CompetitionId,
        st: &Standings,
        ids: &HashMap<String, BotId>,
    ) -> Result<(), TournamentError> {
        let known = self
            .points
            .lock()
            .ok()
            .and_then(|p| p.get(&competition_id).copied());
        let last = match known {
            Some(last) => last,
            None => self.store.games().last_rating_point(competition_id).await?,
        };
        let (games, now) = (st.games as i64, self.store.now_ms());
        if !point_due(last, games, now) {
            if let Ok(mut p) = self.points.lock() {
                p.insert(competition_id, last);
            }
            return Ok(());
        }
        let points: Vec<RatingPoint> = st
            .rows
            .iter()
            .filter(|r| r.games > 0 && r.elo.is_finite())
            .filter_map(|r| {
                Some(RatingPoint {
                    bot_id: *ids.get(&r.name)?,
                    games,
                    at_ms: now,
                    elo: r.elo,
                    ci95: r.ci95.is_finite().then_some(r.ci95),
                })
            })
            .collect();
        self.store
            .games()
            .add_rating_points(competition_id, &points)
            .await?;
        if let Ok(mut p) = self.points.lock() {
            p.insert(competition_id, Some((games, now)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewCompetition, NewGame};

    async fn game(store: &Store, c: &CompetitionRow, group: i64, bots: &[BotId], winner: usize) {
        store
            .groups()
            .schedule_groups(c, &[(group, bots.to_vec())])
            .await
            .unwrap();
        let g = store
            .groups()
            .of_competition(c.id)
            .await
            .unwrap()
            .into_iter()
            .find(|g| g.group_no == group)
            .unwrap();
        let ranks = if winner == 0 { vec![1, 2] } else { vec![2, 1] };
        let new = NewGame {
            logs: Vec::new(),
            competition_id: c.id,
            group_id: g.id,
            rotation: 0,
            bots: bots.to_vec(),
            ranks,
            termination: referee::Termination::Normal,
            record: "{}".into(),
            faults: vec![],
        };
        store.groups().record_games(&[new], 2).await.unwrap();
    }

    /// A store with a two-seat competition of bots `a` and `b`: their keys.
    async fn two_bots() -> (Store, CompetitionRow, Vec<BotId>) {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let c = store
            .competitions()
            .create_competition(&NewCompetition::two_seat_ur("c"))
            .await
            .unwrap();
        let mut ids = Vec::new();
        for name in ["a", "b"] {
            let bot = store
                .bots()
                .register_bot(name, "ur", "builtin:random", &[])
                .await
                .unwrap();
            store.competitions().add_entrant(c.id, bot.id).await.unwrap();
            ids.push(bot.id);
        }
        (store, c, ids)
    }

    #[test]
    fn a_rating_point_is_due_after_a_twentieth_more_games_or_an_hour() {
        assert!(!point_due(None, 0, 0), "no games, no point");
        assert!(point_due(None, 1, 0));
        assert!(
            !point_due(Some((100, 0)), 100, 10 * POINT_MAX_AGE_MS),
            "no new game"
        );
        assert!(!point_due(Some((100, 0)), 119, 1000));
        assert!(point_due(Some((100, 0)), 120, 1000), "at least 20 more");
        assert!(!point_due(Some((10_000, 0)), 10_499, 1000));
        assert!(point_due(Some((10_000, 0)), 10_500, 1000), "a twentieth more");
        assert!(
            point_due(Some((10_000, 0)), 10_001, POINT_MAX_AGE_MS),
            "an hour later"
        );
    }

    #[tokio::test]
    async fn each_fit_that_is_due_keeps_a_rating_point_and_indexes_every_game() {
        let (store, c, ids) = two_bots().await;
        let cache = StandingsCache::with_max_age(store.clone(), Duration::from_secs(3600));
        // a wins 2 of every 3; a fit after every game.
        for g in 0..45 {
            game(&store, &c, g, &ids, usize::from(g % 3 == 2)).await;
            assert_eq!(cache.current(&c).await.unwrap().games, g as u64 + 1);
        }
        let history = store.games().rating_history(c.id, ids[0]).await.unwrap();
        let at: Vec<i64> = history.iter().map(|p| p.games).collect();
        assert_eq!(at, [1, 21, 41], "points after 1 game, then every 20 more");
        assert!(history.last().unwrap().elo > 0.0, "{history:?}");
        let other = store.games().rating_history(c.id, ids[1]).await.unwrap();
        assert!(other.last().unwrap().elo < 0.0, "{other:?}");
        let arc = Arc::new(cache);
        let fit = arc.latest_fit(&c).await.unwrap();
        assert_eq!(fit.index.games[&ids[0]], 45);
        assert_eq!(fit.index.against[&(ids[0], ids[1])], [30, 0, 15]);
        assert_eq!(fit.index.against[&(ids[1], ids[0])], [15, 0, 30]);
    }

    #[tokio::test]
    async fn standings_are_fit_once_until_games_arrive() {
        let (store, c, ids) = two_bots().await;
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
