//! The ladder's standings come from a running tally (finished groups counted
//! by shape, updated in each report's transaction), and equal the standings fit
//! from every record: after reports, with groups still unfinished, after a
//! worker is voided, and after a store from before the tally counts it once.

use astragal_tests::test_stores;
use ladder::app::cache::StandingsCache;
use ladder::store::{
    BotId, CompetitionFormat, CompetitionRow, LeaseAsk, LeaseReport, NewCompetition, NewGame, Seeding, Store,
    WorkerId, token_hash,
};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use rating::standings::{self, Standings};
use std::sync::Arc;

const BOTS: usize = 7;

fn competition(name: &str, seats: i64) -> NewCompetition {
    NewCompetition {
        name: name.into(),
        game: if seats == 2 { "ur" } else { "cuatto" }.into(),
        options: vec![],
        seats,
        format: CompetitionFormat::Ladder,
        seed: 1,
        max_games: 0,
        time: referee::TimeControl::move_time(100).expect("in range"),
        config: String::new(),
        seeding: Seeding::Mirrored,
    }
}

/// Places for one game of `bots`: by strength (a higher id is stronger) and
/// chance, with ties.
fn places(rng: &mut ChaCha8Rng, bots: &[BotId]) -> Vec<u32> {
    let scores: Vec<u32> = bots
        .iter()
        .map(|b| (rng.next_u32() % 100) / 25 + (b.0 as u32 % BOTS as u32) / 2)
        .collect();
    scores
        .iter()
        .map(|s| 1 + scores.iter().filter(|o| *o > s).count() as u32)
        .collect()
}

/// Plays `groups` groups of `c` through leases and reports, half by worker `w1`
/// and half by `w2`; one group in ten is left with only its first game stored.
async fn play(
    store: &Store,
    c: &CompetitionRow,
    bots: &[BotId],
    workers: &[(String, WorkerId); 2],
    groups: usize,
    rng: &mut ChaCha8Rng,
) {
    let seats = c.seats as usize;
    let picks: Vec<Vec<BotId>> = (0..groups)
        .map(|_| {
            let mut pool = bots.to_vec();
            (0..seats)
                .map(|_| pool.remove(rng.next_u32() as usize % pool.len()))
                .collect()
        })
        .collect();
    store.groups().schedule_many(c, &picks).await.unwrap();
    let mut turn = 0;
    let mut rests = Vec::new();
    loop {
        let (name, id) = &workers[turn % 2];
        turn += 1;
        let now = store.now_ms();
        let leased = store
            .groups()
            .lease_many(&LeaseAsk::new(name, "lease"), now, now + 600_000, 16, 1000)
            .await
            .unwrap();
        if leased.is_empty() {
            break;
        }
        let mut all = Vec::new();
        for g in &leased {
            let games: Vec<NewGame> = (0..seats)
                .map(|rotation| {
                    let seated = referee::seating::seated(&g.bots, rotation);
                    let forfeit = rng.next_u32().is_multiple_of(25);
                    NewGame {
                        logs: Vec::new(),
                        competition_id: c.id,
                        group_id: g.id,
                        rotation: rotation as i64,
                        ranks: places(rng, &seated),
                        bots: seated,
                        termination: if forfeit {
                            referee::Termination::Forfeit
                        } else {
                            referee::Termination::Normal
                        },
                        record: "{}".into(),
                        faults: vec![],
                    }
                })
                .collect();
            all.push((g.id, games));
        }
        let (partial, whole): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|_| rng.next_u32().is_multiple_of(10));
        let reports: Vec<LeaseReport<'_>> = whole
            .iter()
            .map(|(id, games)| LeaseReport {
                group_id: *id,
                token: "lease",
                games,
                starts: &[],
            })
            .collect();
        store
            .groups()
            .complete_leases(&reports, Some(*id), 0)
            .await
            .unwrap();
        // Unfinished: one game stored, as a local run stores them as they end.
        let mut firsts = Vec::new();
        for (_, mut games) in partial {
            firsts.push(games.remove(0));
            rests.push(games);
        }
        store.groups().record_games(&firsts, c.seats).await.unwrap();
    }
    // Half of those finished by a later batch (the group is tallied then).
    let later: Vec<NewGame> = rests.into_iter().step_by(2).flatten().collect();
    assert!(later.len() > 20);
    store.groups().record_games(&later, c.seats).await.unwrap();
}

fn assert_close(tally: &Standings, records: &Standings, when: &str) {
    assert_eq!(tally.games, records.games, "{when}: games");
    assert_eq!(tally.rows.len(), records.rows.len(), "{when}");
    let close = |x: f64, y: f64| x == y || (x - y).abs() <= 1e-9 * x.abs().max(1.0);
    for (a, b) in tally.rows.iter().zip(&records.rows) {
        assert_eq!(
            (&a.name, a.games, a.wins, a.draws, a.losses, a.forfeits),
            (&b.name, b.games, b.wins, b.draws, b.losses, b.forfeits),
            "{when}"
        );
        for (x, y, what) in [
            (a.elo, b.elo, "Elo"),
            (a.ci95, b.ci95, "interval"),
            (a.score, b.score, "score"),
            (a.avg_rank, b.avg_rank, "average place"),
        ] {
            assert!(
                close(x, y),
                "{when}: {}'s {what}: {x} from the tally, {y} from the records",
                a.name
            );
        }
    }
    assert_eq!(tally.pairs.len(), records.pairs.len(), "{when}");
    for (a, b) in tally.pairs.iter().zip(&records.pairs) {
        assert_eq!((&a.a, &a.b, a.pentanomial), (&b.a, &b.b, b.pentanomial), "{when}");
        assert!(close(a.fit_se, b.fit_se), "{when}: {a:?} against {b:?}");
    }
}

/// The standings the server's cache serves, against a fit of every record.
async fn compare(store: &Store, c: &CompetitionRow, when: &str) -> Standings {
    let cache = Arc::new(StandingsCache::new(store.clone()));
    let tally = cache.current(c).await.unwrap();
    let bots: Vec<(i64, String)> = store
        .competitions()
        .entrants(c.id)
        .await
        .unwrap()
        .into_iter()
        .map(|b| (b.id.0, b.name))
        .collect();
    let records = store.games().results(c.id).await.unwrap();
    let from_records = standings::compute(&bots, &records, c.seats as usize, None).unwrap();
    assert!(tally.games > 1000, "{when}: {} games", tally.games);
    assert_close(&tally, &from_records, when);
    from_records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standings_from_the_tally_equal_a_fit_of_every_record() {
    for t in test_stores("tally").await {
        let store = Store::open(&t.url).await.unwrap();
        let mut bots = Vec::new();
        for i in 0..BOTS {
            let b = store
                .bots()
                .register_bot(&format!("b{i}"), "ur", "builtin:random", &[])
                .await
                .unwrap();
            bots.push(b.id);
        }
        let two = store
            .competitions()
            .create_competition(&competition("two", 2))
            .await
            .unwrap();
        let three = store
            .competitions()
            .create_competition(&competition("three", 3))
            .await
            .unwrap();
        for c in [&two, &three] {
            for &b in &bots {
                store.competitions().add_entrant(c.id, b).await.unwrap();
            }
        }
        let mut workers = Vec::new();
        for name in ["w1", "w2"] {
            let w = store.workers().add_worker(name, &token_hash(name)).await.unwrap();
            workers.push((w.name, w.id));
        }
        let workers: [(String, WorkerId); 2] = workers.try_into().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(39);
        play(&store, &two, &bots, &workers, 1500, &mut rng).await;
        play(&store, &three, &bots, &workers, 700, &mut rng).await;
        let tallied = store.shapes().tallied(two.id).await.unwrap();
        assert!(
            !tallied.unfinished.is_empty(),
            "{}: some groups unfinished",
            t.kind
        );
        assert!(
            tallied.shapes.len() < 300,
            "{}: {} shapes for 1,500 groups of 7 bots",
            t.kind,
            tallied.shapes.len()
        );
        let before = compare(&store, &two, &format!("{}, two seats", t.kind)).await;
        compare(&store, &three, &format!("{}, three seats", t.kind)).await;
        // The tally was folded into one row per shape by the reads above.
        let again = store.shapes().tallied(two.id).await.unwrap();
        assert_eq!(again.rows_read, again.shapes.len(), "{}: folded", t.kind);

        // A voided worker's groups leave the tally with their games.
        let (groups, games) = store.workers().void_worker("w2").await.unwrap();
        assert!(
            groups > 100 && games > 200,
            "{groups} groups, {games} games voided"
        );
        let after = compare(&store, &two, &format!("{}, w2 voided", t.kind)).await;
        assert!(after.games < before.games);
        compare(&store, &three, &format!("{}, w2 voided, three seats", t.kind)).await;

        // A store from before the tally: no rows, its competitions marked. It
        // counts them when it opens, once.
        drop(store);
        {
            use sqlx::Connection;
            sqlx::any::install_default_drivers();
            let mut conn = sqlx::AnyConnection::connect(&t.url).await.unwrap();
            sqlx::query("DELETE FROM fit_tally")
                .execute(&mut conn)
                .await
                .unwrap();
            sqlx::query("UPDATE competitions SET tally_pending = 1")
                .execute(&mut conn)
                .await
                .unwrap();
            let _ = conn.close().await;
        }
        let store = Store::open(&t.url).await.unwrap();
        compare(&store, &two, &format!("{}, counted on opening", t.kind)).await;
        compare(
            &store,
            &three,
            &format!("{}, counted on opening, three seats", t.kind),
        )
        .await;
        drop(store);
        let store = Store::open(&t.url).await.unwrap();
        compare(&store, &two, &format!("{}, opened again", t.kind)).await;
    }
}
