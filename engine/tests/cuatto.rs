//! Hand-worked positions of Cuatto, set up through the position notation.

use engine::games::cuatto::{Cuatto, CuattoOptions, Setup};
use engine::{Game, GameRng, PlayError};

fn basic() -> CuattoOptions {
    CuattoOptions::default()
}

fn full() -> CuattoOptions {
    CuattoOptions {
        setup: Setup::Full,
        ..CuattoOptions::default()
    }
}

/// Team 0 to move with `dice`; `teams` lists each team's six checkers.
fn pos(options: &CuattoOptions, dice: &str, teams: &[&str]) -> Cuatto {
    let mut text = format!("to_move=0 dice={dice} finished=- turn=5");
    for (i, t) in teams.iter().enumerate() {
        text.push_str(&format!(" team{i}={t}"));
    }
    Cuatto::from_position(options, &text, GameRng::from_seed(8)).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn moves(g: &Cuatto) -> Vec<String> {
    let mut out = Vec::new();
    g.legal_moves(0, &mut out);
    out.iter().map(ToString::to_string).collect()
}

fn play(g: &mut Cuatto, mv: &str) -> Result<(), PlayError> {
    let m = g.parse_move(mv).unwrap();
    g.play(0, &m)
}

fn team(g: &Cuatto, t: usize) -> Vec<String> {
    serde_json::from_value(serde_json::to_value(g.observation(0)).unwrap()["teams"][t].clone()).unwrap()
}

#[test]
fn two_checkers_of_another_team_block_a_position_but_not_the_way_past() {
    let g = pos(&basic(), "5,6", &["0,0,0,0,0,3", "0,0,0,0,5,5"]);
    let all = moves(&g);
    assert!(!all.contains(&"5:0".to_owned()), "position 5 is blocked: {all:?}");
    assert!(
        all.contains(&"6:0".to_owned()) && all.contains(&"5:3".to_owned()),
        "passing 5 is fine: {all:?}"
    );
    let e = play(&mut g.clone(), "5:0").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("blocked")),
        "{e}"
    );
}

#[test]
fn a_position_holds_four_checkers() {
    // Four teams with one checker each on 4: the fifth team cannot land there.
    let g = pos(
        &basic(),
        "4,6",
        &[
            "0,0,0,0,0,0",
            "0,0,0,0,0,4",
            "0,0,0,0,0,4",
            "0,0,0,0,0,4",
            "0,0,0,0,0,4",
        ],
    );
    let all = moves(&g);
    assert_eq!(all, ["6:0"], "4 is full");
}

#[test]
fn forming_a_block_hits_every_other_team_there_at_once() {
    let mut g = pos(&basic(), "3,6", &["0,0,0,0,4,7", "0,0,0,0,0,7", "0,0,0,0,0,7"]);
    play(&mut g, "3:4").unwrap();
    assert_eq!(team(&g, 0), ["0", "0", "0", "0", "7", "7"]);
    assert_eq!(team(&g, 1), ["0"; 6], "team 1's checker went back to the start");
    assert_eq!(team(&g, 2), ["0"; 6], "and so did team 2's");
    // A single checker arriving does not hit.
    let mut g = pos(&basic(), "3,6", &["0,0,0,0,0,4", "0,0,0,0,0,7"]);
    play(&mut g, "3:4").unwrap();
    assert_eq!(team(&g, 1), ["0", "0", "0", "0", "0", "7"]);
}

#[test]
fn a_pin_holds_other_teams_checkers_but_not_pins() {
    // Team 1's pin on 9 holds team 0's regular checker on 9; team 2's pin on 11
    // does not hold team 0's pin there.
    let g = pos(
        &full(),
        "2,3",
        &["b1s,b3,b4,b5,9,11p", "b1s,b3,b4,b5,b6,9p", "b1s,b3,b4,b5,b6,11p"],
    );
    let all = moves(&g);
    assert!(
        all.iter().all(|m| !m.ends_with(":9")),
        "the regular on 9 is pinned: {all:?}"
    );
    assert!(all.contains(&"2:11p".to_owned()), "pins never pin pins: {all:?}");
    let e = play(&mut g.clone(), "2:9").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("pinned")),
        "{e}"
    );
}

#[test]
fn a_pin_landing_on_a_strong_checker_pins_it() {
    let mut g = pos(&full(), "2,5", &["b1s,b3,b4,b5,b6,8p", "b1,b3,b4,b5,b6p,10s"]);
    play(&mut g, "2:8p").unwrap();
    assert_eq!(
        team(&g, 1),
        ["b1", "b3", "b4", "b5", "b6p", "10s"],
        "a pin never hits"
    );
    // Now team 1's strong checker on 10 cannot move while the pin is there.
    let text = format!(
        "to_move=1 dice=1,2 finished=- turn=6 team0={} team1={}",
        team(&g, 0).join(","),
        team(&g, 1).join(",")
    );
    let g1 = Cuatto::from_position(&full(), &text, GameRng::from_seed(1)).unwrap();
    let mut out = Vec::new();
    g1.legal_moves(1, &mut out);
    assert!(
        out.iter()
            .all(|m| m.to_string() != "1:10s" && m.to_string() != "2:10s"),
        "{out:?}"
    );
}

#[test]
fn a_strong_checker_ignores_blocks_and_hits_pins_and_strong_checkers() {
    // Team 1 holds 12 with a block of two; team 0's strong on 8 lands there with a 4.
    let mut g = pos(&full(), "4,6", &["b2p,b3,b4,b5,b6,8s", "b1s,b2p,b3,b4,12,12"]);
    play(&mut g, "4:8s").unwrap();
    assert_eq!(
        team(&g, 1),
        ["b1s", "b2p", "b3", "b4", "b5", "b6"],
        "both hit, back to the lowest free slots"
    );
    // Landing on another team's strong checker (7 -> 9) hits it.
    let mut g = pos(
        &full(),
        "1,2",
        &["b2p,b3,b4,b5,b6,7s", "b2p,b3,b4,b5,b6,9s", "b1s,b3,b4,b5,b6,10p"],
    );
    play(&mut g, "2:7s").unwrap();
    assert_eq!(team(&g, 1), ["b1s", "b2p", "b3", "b4", "b5", "b6"]);
    // Landing on another team's pin (9 -> 10) hits it too.
    play(&mut g, "1:9s").unwrap();
    assert_eq!(team(&g, 2), ["b1s", "b2p", "b3", "b4", "b5", "b6"]);
}

#[test]
fn a_block_never_hits_a_strong_checker() {
    // Team 0 forms a block of two on 9, where team 1's strong checker stands.
    let mut g = pos(&full(), "3,6", &["b1s,b2p,b3,b4,6,9", "b2p,b3,b4,b5,b6,9s"]);
    play(&mut g, "3:6").unwrap();
    assert_eq!(team(&g, 0), ["b1s", "b2p", "b3", "b4", "9", "9"]);
    assert_eq!(
        team(&g, 1),
        ["b2p", "b3", "b4", "b5", "b6", "9s"],
        "the strong checker stays"
    );
}

#[test]
fn bridge_slots_are_single_and_cannot_be_passed() {
    // Start of the full setup: only the front checker (b6) can leave the bridge.
    let g = pos(&full(), "1,3", &["b1s,b2p,b3,b4,b5,b6", "b1s,b2p,b3,b4,b5,b6"]);
    assert_eq!(moves(&g), ["1:b6", "3:b6"]);
    // With b6 gone, b5 may step to b6 or go past it onto the board.
    let g = pos(&full(), "1,3", &["b1s,b2p,b3,b4,b5,2", "b1s,b2p,b3,b4,b5,b6"]);
    assert_eq!(moves(&g), ["1:b5", "1:2", "3:b5", "3:2"]);
}

#[test]
fn a_hit_checker_returns_to_the_lowest_free_bridge_slot() {
    // Team 1's regulars sit on 5 and 11; slots b1, b2 hold its strong and pin; b3..b6 are
    // partly free. Team 0 forms a block on 5.
    let mut g = pos(&full(), "1,6", &["b1s,b2p,b3,b4,4,5", "b1s,b2p,b4,b6,5,11"]);
    play(&mut g, "1:4").unwrap();
    assert_eq!(
        team(&g, 1),
        ["b1s", "b2p", "b3", "b4", "b6", "11"],
        "back to b3, the lowest free slot"
    );
}

#[test]
fn exits_past_the_end_or_only_exactly() {
    let opts = CuattoOptions {
        length: 12,
        ..basic()
    };
    let mut g = pos(
        &opts,
        "5,6",
        &["10,off,off,off,off,off", "0,0,0,0,0,0", "0,0,0,0,0,0"],
    );
    play(&mut g, "5:10").unwrap();
    let o = serde_json::to_value(g.observation(0)).unwrap();
    assert_eq!(o["finished"], serde_json::json!([0]), "team 0 is first out");
    assert_eq!(
        g.to_act().first(),
        Some(1),
        "its second die is lost; play goes on"
    );
    let exact = CuattoOptions {
        length: 12,
        exact_exit: true,
        ..basic()
    };
    let g = pos(&exact, "3,5", &["10,off,off,off,off,off", "0,0,0,0,0,0"]);
    assert_eq!(moves(&g), ["3:10"], "only the 3 exits exactly from 10");
}

#[test]
fn finishing_order_ranks_the_teams_and_the_last_team_is_last() {
    let opts = CuattoOptions {
        length: 12,
        ..basic()
    };
    let mut g = pos(&opts, "1,2", &["12,off,off,off,off,off", "0,0,0,0,0,0"]);
    play(&mut g, "1:12").unwrap();
    let o = g.outcome().expect("one team left: over");
    assert_eq!(o.ranks, vec![1, 2]);
    assert_eq!(o.scores, vec![0, 6 * 13], "pips left");
    assert!(!o.capped);
}

#[test]
fn the_cap_ranks_unfinished_teams_by_pips_left() {
    let opts = CuattoOptions {
        length: 12,
        max_turns: 5,
        ..basic()
    };
    let mut g = pos(&opts, "1,2", &["0,0,0,0,0,5", "0,0,0,0,0,9", "0,0,0,0,0,1"]);
    play(&mut g, "1:5").unwrap();
    play(&mut g, "2:6").unwrap();
    let o = g.outcome().expect("turn 5 was the last");
    assert!(o.capped);
    assert_eq!(o.ranks, vec![2, 1, 3], "pips {:?}", o.scores);
}

#[test]
fn a_die_with_no_move_is_lost() {
    // The 6 cannot be played (12 - 6... only checker on 8, exact exit needs 5).
    let opts = CuattoOptions {
        length: 12,
        exact_exit: true,
        ..basic()
    };
    let mut g = pos(&opts, "1,6", &["8,off,off,off,off,off", "0,0,0,0,0,0"]);
    assert_eq!(moves(&g), ["1:8"]);
    play(&mut g, "1:8").unwrap();
    assert_eq!(g.to_act().first(), Some(1), "the 6 is lost, the turn passes");
}

#[test]
fn bad_moves_and_positions_name_the_problem() {
    let g = pos(&basic(), "5,6", &["0,0,0,0,0,3", "0,0,0,0,5,5"]);
    for bad in ["7:0", "5", "5:b7", "5:off", "x:3"] {
        assert!(g.parse_move(bad).is_err(), "{bad}");
    }
    let e = play(&mut g.clone(), "4:3").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("no die")),
        "{e}"
    );
    let e = play(&mut g.clone(), "5:9").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("no checker")),
        "{e}"
    );
    for (teams, needle) in [
        (vec!["0,0,0,0,0", "0,0,0,0,0,0"], "6 checkers"),
        (vec!["0,0,0,0,0,b1", "0,0,0,0,0,0"], "no such spot"),
        (vec!["0,0,0,0,0,0"], "2 to 6 teams"),
    ] {
        let mut text = "to_move=0 dice=5,6 finished=- turn=1".to_owned();
        for (i, t) in teams.iter().enumerate() {
            text.push_str(&format!(" team{i}={t}"));
        }
        let e = Cuatto::from_position(&basic(), &text, GameRng::from_seed(1)).unwrap_err();
        assert!(e.to_string().contains(needle), "{text}: {e}");
    }
}
