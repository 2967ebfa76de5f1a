//! Hand-worked positions of Uptick, set up through the position notation.
//!
//! Boards are written top rank first; `A`-`F` are seat 0's dice showing 1-6,
//! `a`-`f` seat 1's, digits count empty cells.

use engine::games::uptick::{Uptick, UptickOptions};
use engine::{Game, GameRng, PlayError};

/// A position with `to_move` to move after the other seat's move, 40 moves in.
/// The counts must add up: each seat's dice on the board, in reserve and lost
/// make 8, and a seat's captures hold 1 to 6 pips per die the other lost.
fn pos(board: &str, to_move: u8, reserve: &str, captured: &str) -> Uptick {
    let last = 1 - to_move;
    let text =
        format!("board={board} to_move={to_move} reserve={reserve} captured={captured} last={last} turn=40");
    Uptick::from_position(&UptickOptions::default(), &text, GameRng::from_seed(0))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn moves(g: &Uptick, seat: usize) -> Vec<String> {
    let mut out = Vec::new();
    g.legal_moves(seat, &mut out);
    out.iter().map(ToString::to_string).collect()
}

fn play(g: &mut Uptick, seat: usize, mv: &str) -> Result<(), PlayError> {
    let m = g.parse_move(mv).unwrap();
    g.play(seat, &m)
}

// A lone seat-1 two on d4 (rank 4, file d).
const TWO_ON_D4: &str = "8/8/8/8/3b4/8/8/8";

#[test]
fn a_placement_may_not_freeze_an_opposing_die() {
    let g = pos(TWO_ON_D4, 0, "8,7", "0,0");
    let all = moves(&g, 0);
    // Next to the 2: values 1 and 2 only. Far away: any value.
    assert!(all.contains(&"c3=2".to_owned()) && !all.contains(&"c3=3".to_owned()));
    assert!(all.contains(&"a1=6".to_owned()));
    let e = play(&mut g.clone(), 0, "e5=3").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("freeze")),
        "{e}"
    );
    // A placed die may itself be frozen: a 1 next to the 2.
    let mut g2 = g.clone();
    play(&mut g2, 0, "e5=1").unwrap();
    let obs = serde_json::to_value(g2.observation(0)).unwrap();
    let e5 = obs["dice"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["cell"] == "e5")
        .unwrap();
    assert_eq!(e5["frozen"], true);
}

#[test]
fn a_die_jumps_its_own_dice_but_not_opposing_ones() {
    // Seat 0: a 3 on a1 and a 1 on b2. Seat 1: a 1 on a2 (lower, so nobody freezes us).
    let g = pos("8/8/8/8/8/8/aA6/C7", 0, "6,7", "0,0");
    let all = moves(&g, 0);
    // Diagonal a1-b2-c3-d4: over our own 1 to c3 and d4, but not onto it.
    assert!(
        all.contains(&"a1-c3".to_owned()) && all.contains(&"a1-d4".to_owned()),
        "{all:?}"
    );
    assert!(!all.contains(&"a1-b2".to_owned()), "cannot land on an own die");
    // Up the a-file: seat 1's die on a2 can be taken but not jumped.
    assert!(
        all.contains(&"a1-a2".to_owned()) && !all.contains(&"a1-a3".to_owned()),
        "{all:?}"
    );
    let e = play(&mut g.clone(), 0, "a1-a4").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("not opposing")),
        "{e}"
    );
    // Beyond the die's value is out of reach.
    assert!(!all.contains(&"a1-e5".to_owned()));
}

#[test]
fn frozen_dice_do_not_move_and_opposing_dice_block_the_line() {
    // Our 3 on a1 is frozen by seat 1's 4 on a2 (we still have a die to place).
    let g = pos("8/8/8/8/8/8/d7/C7", 0, "7,7", "0,0");
    assert!(!moves(&g, 0).iter().any(|m| m.starts_with("a1-")));
    let e = play(&mut g.clone(), 0, "a1-b1").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("frozen")),
        "{e}"
    );
    // Our 3 on a1, seat 1's 1 on c1: it may take c1 but not pass it to d1.
    let g = pos("8/8/8/8/8/8/8/C1a5", 0, "7,7", "0,0");
    let all = moves(&g, 0);
    assert!(
        all.contains(&"a1-c1".to_owned()) && !all.contains(&"a1-d1".to_owned()),
        "{all:?}"
    );
}

#[test]
fn a_capture_keeps_the_captured_value_and_the_mover_upticks() {
    // Our 2 on a1 takes seat 1's... a 1 on a3 (not adjacent, so nobody is frozen).
    let mut g = pos("8/8/8/8/8/a7/8/B7", 0, "7,7", "0,0");
    play(&mut g, 0, "a1-a3").unwrap();
    assert_eq!(g.position().split(' ').next().unwrap(), "board=8/8/8/8/8/C7/8/8");
    let obs = serde_json::to_value(g.observation(1)).unwrap();
    assert_eq!(obs["captured"], serde_json::json!([1, 0]));
}

#[test]
fn a_six_never_moves() {
    let g = pos("8/8/8/8/8/8/8/F7", 0, "7,8", "0,0");
    assert!(!moves(&g, 0).iter().any(|m| m.starts_with("a1-")));
    let e = play(&mut g.clone(), 0, "a1-a2").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("six")),
        "{e}"
    );
    // A five moves once and becomes a six.
    let mut g = pos("8/8/8/8/8/8/8/E7", 0, "7,8", "0,0");
    play(&mut g, 0, "a1-a6").unwrap();
    assert!(g.position().starts_with("board=8/8/F7/"), "{}", g.position());
}

#[test]
fn a_seat_without_moves_passes_and_two_passes_end_the_game() {
    // Seat 0's only die is a 6; seat 1 has a die in reserve: seat 0 must pass.
    let text = "board=8/8/8/8/8/8/8/F7 to_move=0 reserve=0,1 captured=7,7 last=1 turn=40";
    let e = Uptick::from_position(&UptickOptions::default(), text, GameRng::from_seed(0)).unwrap_err();
    assert!(e.to_string().contains("no legal move"), "{e}");
    // Seat 1 places its last die; seat 0 cannot move, seat 1 can move its new die.
    let mut g = pos("8/8/8/8/8/8/8/F7", 1, "0,1", "7,7");
    play(&mut g, 1, "h8=5").unwrap();
    assert_eq!(g.to_act().first(), Some(1), "seat 0 passed");
    play(&mut g, 1, "h8-h7").unwrap();
    assert_eq!(g.to_act().first(), None, "both pass: over");
    let o = g.outcome().unwrap();
    assert_eq!(o.scores, vec![7, 7]);
    assert_eq!(o.ranks, vec![2, 1], "equal scores: the last to move wins");
}

#[test]
fn higher_capture_total_wins() {
    // Seat 0 has captured 12, seat 1 has 9; nothing can move or be placed.
    let text = "board=8/8/8/8/8/8/8/F6f to_move=0 reserve=0,0 captured=12,9 last=1 turn=30";
    let g = Uptick::from_position(&UptickOptions::default(), text, GameRng::from_seed(0)).unwrap();
    let o = g.outcome().expect("nobody can move: over");
    assert_eq!(o.ranks, vec![1, 2]);
    assert!(!o.capped);
}

#[test]
fn bad_moves_and_positions_name_the_problem() {
    let g = pos(TWO_ON_D4, 0, "8,7", "0,0");
    for bad in ["i1=3", "a1=7", "a0=1", "a1", "zz-a1"] {
        assert!(g.parse_move(bad).is_err(), "{bad}");
    }
    let e = play(&mut g.clone(), 0, "d4=1").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("occupied")),
        "{e}"
    );
    for (board, needle) in [
        ("8/8/8", "8 ranks"),
        ("9/8/8/8/8/8/8/8", "longer than 8 cells"),
        ("8/8/8/8/8/8/8/7x", "'x'"),
    ] {
        let text = format!("board={board} to_move=0 reserve=1,1 captured=0,0 last=- turn=0");
        let e = Uptick::from_position(&UptickOptions::default(), &text, GameRng::from_seed(0)).unwrap_err();
        assert!(e.to_string().contains(needle), "{board}: {e}");
    }
}

#[test]
fn when_the_games_own_end_and_the_cap_come_together_the_games_own_end_decides() {
    // Seat 1's five on h1 makes the 41st and last move the cap allows; after it
    // neither seat can move. The game's own end decides: equal captures, so the
    // last to move wins; it is not a capped draw.
    let options = UptickOptions {
        max_turns: 41,
        ..UptickOptions::default()
    };
    let text = "board=8/8/8/8/8/8/8/F6e to_move=1 reserve=0,0 captured=7,7 last=0 turn=40";
    let mut g = Uptick::from_position(&options, text, GameRng::from_seed(0)).unwrap();
    let m = g.parse_move("h1-h2").unwrap();
    g.play(1, &m).unwrap();
    let o = g.outcome().expect("over");
    assert!(!o.capped, "{o:?}");
    assert_eq!(o.ranks, vec![2, 1], "equal scores: the last to move wins");
    // Reached at the cap with moves left, it is capped: equal scores draw.
    let text = "board=8/8/8/8/8/8/8/E6e to_move=1 reserve=0,0 captured=7,7 last=0 turn=40";
    let mut g = Uptick::from_position(&options, text, GameRng::from_seed(0)).unwrap();
    g.play(1, &g.parse_move("h1-h2").unwrap()).unwrap();
    let o = g.outcome().expect("over at the cap");
    assert!(o.capped, "{o:?}");
    assert_eq!(o.ranks, vec![1, 1]);
}
