//! The ladder's statistics at their edges, as `ladder ratings` shows them: results
//! of chosen mirrored pairs stored through the store, read back through the real
//! command (issue 62). Bounds that do not depend on the order bots or groups were
//! stored in, no bot ranked from the prior, ranks that agree with LOS, no `0 ± 0`
//! beside an exact range, and one LOS for one record in `ladder ratings` and
//! `ladder sprt`.

use astragal_tests::{binary, test_stores, workspace_root};
use ladder::store::{BotId, CompetitionFormat, NewCompetition, NewGame, Seeding, Store};
use serde_json::Value;
use std::process::{Command, Output};

fn ladder(args: &[&str]) -> Output {
    Command::new(binary("ladder"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("ladder runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A mirrored pair of `a` and `b`: `a` scores `points` half-points (4 both
/// games, 2 a split, 0 none), winning the first game of a split.
#[derive(Clone, Copy)]
struct Pair {
    a: &'static str,
    b: &'static str,
    points: u32,
}

fn pairs(a: &'static str, b: &'static str, points: u32, count: usize) -> Vec<Pair> {
    vec![Pair { a, b, points }; count]
}

/// `c` and `d` trade pairs: 2–0 each way once in four, split otherwise.
fn mixed(c: &'static str, d: &'static str, count: usize) -> Vec<Pair> {
    (0..count)
        .map(|k| Pair {
            a: c,
            b: d,
            points: [4, 0, 2, 2][k % 4],
        })
        .collect()
}

/// Stores `bots` in this order (so their ids follow it) and `groups` in this
/// order, then reads the standings through `ladder ratings --json` and as text.
fn ratings(tag: &str, bots: &[&str], groups: &[Pair]) -> (Value, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let t = rt.block_on(test_stores(tag)).remove(0);
    rt.block_on(async {
        let store = Store::open(&t.url).await.unwrap();
        let mut ids = std::collections::HashMap::new();
        for name in bots {
            let b = store
                .bots()
                .register_bot(name, "ur", "builtin:random", &[])
                .await
                .unwrap();
            ids.insert(*name, b.id);
        }
        let c = store
            .competitions()
            .create_competition(&NewCompetition {
                name: "edges".into(),
                game: "ur".into(),
                options: vec![],
                seats: 2,
                format: CompetitionFormat::Ladder,
                seed: 1,
                max_games: 0,
                time: referee::TimeControl::move_time(100).expect("in range"),
                config: String::new(),
                seeding: Seeding::Mirrored,
            })
            .await
            .unwrap();
        for name in bots {
            store.competitions().add_entrant(c.id, ids[name]).await.unwrap();
        }
        let picks: Vec<Vec<BotId>> = groups.iter().map(|p| vec![ids[p.a], ids[p.b]]).collect();
        let mut stored = store.groups().schedule_many(&c, &picks).await.unwrap();
        stored.sort_by_key(|g| g.group_no);
        assert_eq!(stored.len(), groups.len());
        let mut games = Vec::new();
        for (g, p) in stored.iter().zip(groups) {
            assert_eq!(g.bots, vec![ids[p.a], ids[p.b]]);
            // a's result in each game: both, the first only, or neither.
            let a_wins = [p.points >= 2, p.points == 4];
            for (rotation, won) in a_wins.into_iter().enumerate() {
                let seated = referee::seating::seated(&g.bots, rotation);
                let a_seat = usize::from(seated[0] != ids[p.a]);
                let mut ranks = vec![2, 2];
                ranks[if won { a_seat } else { 1 - a_seat }] = 1;
                games.push(NewGame {
                    logs: Vec::new(),
                    competition_id: c.id,
                    group_id: g.id,
                    rotation: rotation as i64,
                    ranks,
                    bots: seated,
                    termination: referee::Termination::Normal,
                    record: "{}".into(),
                    faults: vec![],
                });
            }
        }
        store.groups().record_games(&games, 2).await.unwrap();
    });
    let json = ladder(&["ratings", "--db", &t.url, "--json"]);
    assert!(json.status.success(), "{}", text(&json));
    let table = ladder(&["ratings", "--db", &t.url]);
    assert!(table.status.success(), "{}", text(&table));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    (v["edges"].clone(), text(&table))
}

fn row<'a>(st: &'a Value, name: &str) -> &'a Value {
    st["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {st}"))
}

fn names(st: &Value) -> Vec<String> {
    st["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

fn elo(st: &Value, name: &str) -> f64 {
    row(st, name)["elo"]
        .as_f64()
        .unwrap_or_else(|| panic!("{name} has no Elo: {st}"))
}

/// Every pair row names the better-ranked bot first: its LOS is at least 50%.
fn assert_ranks_agree_with_los(st: &Value, table: &str) {
    for p in st["pairs"].as_array().unwrap() {
        if let Some(los) = p["los"].as_f64() {
            assert!(
                los >= 0.5,
                "{} ranks above {} with LOS {los}:\n{table}",
                p["a"],
                p["b"]
            );
        }
    }
}

/// Top beat mid in 4 of 5 pairs; mid beat c and d in all 40 games; c and d
/// traded 20 pairs.
fn split_leaders() -> Vec<Pair> {
    [
        pairs("top", "mid", 4, 4),
        pairs("top", "mid", 0, 1),
        pairs("mid", "c", 4, 10),
        pairs("mid", "d", 4, 10),
        mixed("c", "d", 20),
    ]
    .concat()
}

#[test]
fn bounds_do_not_depend_on_the_order_bots_or_groups_were_stored_in() {
    let groups = split_leaders();
    let mut reversed = groups.clone();
    reversed.reverse();
    let (first, table) = ratings("edges-order-1", &["top", "mid", "c", "d"], &groups);
    let (second, _) = ratings("edges-order-2", &["mid", "top", "c", "d"], &groups);
    let (third, _) = ratings("edges-order-3", &["d", "c", "mid", "top"], &reversed);
    for name in ["top", "mid", "c", "d"] {
        let x = elo(&first, name);
        assert!(x.is_finite(), "{name}: {x}\n{table}");
        for other in [&second, &third] {
            assert!((x - elo(other, name)).abs() < 1e-6, "{name}: {x} against {other}");
            assert_eq!(row(&first, name)["separated"], row(other, name)["separated"]);
        }
    }
    assert_eq!(names(&first), names(&second));
    assert_eq!(names(&first), names(&third));
    // Top and mid are one group above c and d: top, with no game outside it,
    // stands where the group stands plus what it did to mid.
    assert_eq!(row(&first, "top")["separated"], "never_lost");
    assert_eq!(row(&first, "mid")["separated"], "never_lost");
    assert!(elo(&first, "top") > elo(&first, "mid"), "{table}");
    assert_eq!(names(&first)[..2], ["top", "mid"]);
    assert!(!table.contains("-inf") && !table.contains("inf "), "{table}");
    // Top against mid, both of one group: a finite difference from their pairs.
    let tm = st_pair(&first, "top", "mid");
    assert!(tm["fit_se"].as_f64().is_some_and(f64::is_finite), "{tm}");
    assert_ranks_agree_with_los(&first, &table);
}

fn st_pair<'a>(st: &'a Value, a: &str, b: &str) -> &'a Value {
    st["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["a"] == a && p["b"] == b || p["a"] == b && p["b"] == a)
        .unwrap_or_else(|| panic!("no pair {a} {b}: {st}"))
}

#[test]
fn a_bot_that_only_lost_to_a_separated_bot_is_not_ranked_from_the_prior() {
    // x beat c and d in every pair; c and d traded pairs; y lost its only 4 games,
    // all to x.
    let field = [
        pairs("x", "c", 4, 10),
        pairs("x", "d", 4, 10),
        mixed("c", "d", 20),
    ]
    .concat();
    let with_y = [field.clone(), pairs("x", "y", 4, 2)].concat();
    let (st, table) = ratings("edges-unrated", &["x", "y", "c", "d"], &with_y);
    let (without, _) = ratings("edges-unrated-without", &["x", "c", "d"], &field);
    let y = row(&st, "y");
    assert_eq!(y["unrated"], true, "{table}");
    assert!(y["elo"].is_null() && y["ci95"].is_null(), "{y}");
    assert_eq!(names(&st).last().map(String::as_str), Some("y"), "{table}");
    assert!(table.contains("unrated"), "{table}");
    // The others are as they were without y.
    for name in ["x", "c", "d"] {
        assert!(
            (elo(&st, name) - elo(&without, name)).abs() < 1e-6,
            "{name}: {} with y, {} without\n{table}",
            elo(&st, name),
            elo(&without, name)
        );
    }
    assert!((elo(&st, "c") + elo(&st, "d")).abs() < 1e-6, "{table}");
}

#[test]
fn a_chain_after_a_short_sweep_ranks_as_its_los_says() {
    // mid beat c and d in 5 pairs each; top swept mid in 5 pairs: top's bound is
    // below mid's (5 pairs bound little), yet LOS says top is the stronger.
    let groups = [
        pairs("mid", "c", 4, 5),
        pairs("mid", "d", 4, 5),
        mixed("c", "d", 20),
        pairs("top", "mid", 4, 5),
    ]
    .concat();
    let (st, table) = ratings("edges-chain", &["mid", "top", "c", "d"], &groups);
    assert_eq!(names(&st)[..2], ["top", "mid"], "{table}");
    let tm = st_pair(&st, "top", "mid");
    assert_eq!(tm["a"], "top");
    // 5 pairs won at equal strength: 1/32.
    assert!(
        (tm["los"].as_f64().unwrap() - (1.0 - 1.0 / 32.0)).abs() < 1e-9,
        "{tm}"
    );
    assert_ranks_agree_with_los(&st, &table);
    // Three pairs as well.
    let short = [
        pairs("mid", "c", 4, 10),
        pairs("mid", "d", 4, 10),
        mixed("c", "d", 20),
        pairs("top", "mid", 4, 3),
    ]
    .concat();
    let (st, table) = ratings("edges-chain-3", &["mid", "top", "c", "d"], &short);
    assert_eq!(names(&st)[..2], ["top", "mid"], "{table}");
    assert_ranks_agree_with_los(&st, &table);
}

#[test]
fn pairs_that_all_split_beside_a_separated_bot_read_no_zero_interval() {
    // c and d split every one of 10 pairs and otherwise only lost to x.
    let groups = [
        pairs("c", "d", 2, 10),
        pairs("x", "c", 4, 10),
        pairs("x", "d", 4, 10),
    ]
    .concat();
    let (st, table) = ratings("edges-splits", &["x", "c", "d"], &groups);
    for name in ["c", "d"] {
        let ci = row(&st, name)["ci95"].as_f64().unwrap();
        assert!(ci > 50.0, "{name}: ± {ci}\n{table}");
    }
    let cd = st_pair(&st, "c", "d");
    assert!(cd["fit_se"].as_f64().unwrap() > 25.0, "{cd}");
    assert!(!table.contains("± 0 "), "{table}");
    // The pairs column's exact range for 10 splits: ±111.
    assert!(table.contains("+0 ± 111"), "{table}");
}

/// `ladder sprt` between a bot that wins every Uptick game and one that loses
/// them, `games` games, and `ladder tournament` of the same, read by `ladder
/// ratings`: one record, one LOS.
#[test]
fn ratings_and_the_sprt_give_one_los_for_one_record() {
    for games in ["2", "6"] {
        let sprt = ladder(&[
            "sprt",
            "--game",
            "uptick",
            "--bot",
            "greedy=builtin:greedy",
            "--vs",
            "random=builtin:random",
            "--seed",
            "1",
            "--max-games",
            games,
        ]);
        let out = text(&sprt);
        assert!(sprt.status.success(), "{out}");
        let pairs: u64 = games.parse::<u64>().unwrap() / 2;
        assert!(out.contains(&format!("0-0-0-0-{pairs}")), "{out}");
        let sprt_los: f64 = out
            .split("LOS ")
            .nth(1)
            .and_then(|s| s.split('%').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no LOS in {out}"));
        let dir = std::env::temp_dir().join(format!("edges-los-{}-{games}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("t.db");
        let db = db.to_str().unwrap();
        let t = ladder(&[
            "tournament",
            "--game",
            "uptick",
            "--bot",
            "greedy=builtin:greedy",
            "--bot",
            "random=builtin:random",
            "--games",
            games,
            "--seed",
            "1",
            "--db",
            db,
        ]);
        assert!(t.status.success(), "{}", text(&t));
        let r = ladder(&["ratings", "--db", db, "--json"]);
        assert!(r.status.success(), "{}", text(&r));
        let v: Value = serde_json::from_slice(&r.stdout).unwrap();
        let st = v.as_object().unwrap().values().next().unwrap();
        let p = &st["pairs"][0];
        assert_eq!(p["pentanomial"]["counts"][4], pairs, "{st}");
        let ratings_los = 100.0 * p["los"].as_f64().unwrap();
        assert!(
            (ratings_los - sprt_los).abs() < 0.05,
            "{games} games: ratings {ratings_los:.1}%, sprt {sprt_los:.1}%\n{out}"
        );
        // The confidence at which the exact bound reaches zero: 1 - 2^-pairs.
        assert!((ratings_los - 100.0 * (1.0 - 0.5f64.powi(pairs as i32))).abs() < 0.05);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
