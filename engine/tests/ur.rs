//! Hand-worked positions of the Game of Ur, set up through the position notation.

use engine::games::ur::{Phase, Rules, Ur, UrOptions};
use engine::{Game, GameRng, PlayError};

fn tablet() -> UrOptions {
    UrOptions::default()
}

fn finkel() -> UrOptions {
    UrOptions {
        rules: Rules::Finkel,
        ..UrOptions::default()
    }
}

/// A tablet position: seat 0 to move in `phase` with `roll`.
fn pos(phase: &str, roll: u8, seat0: &str, seat1: &str, counters: &str, pool: i64) -> Ur {
    let text = format!(
        "to_move=0 phase={phase} roll={roll} seat0={seat0} seat1={seat1} counters={counters} pool={pool} turn=1"
    );
    Ur::from_position(&tablet(), &text, GameRng::from_seed(5)).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn legal(g: &Ur) -> Vec<String> {
    let mut moves = Vec::new();
    g.legal_moves(0, &mut moves);
    moves.iter().map(ToString::to_string).collect()
}

fn play(g: &mut Ur, mv: &str) -> Result<(), PlayError> {
    let m = g.parse_move(mv).unwrap();
    g.play(0, &m)
}

#[test]
fn swallow_launches_on_two_to_any_of_houses_one_to_three() {
    let g = pos("primary", 2, "0,0,0,0,0", "0,0,0,0,0", "15,15", 20);
    assert_eq!(legal(&g), ["swallow:1", "swallow:2", "swallow:3", "gamble"]);
    let mut g2 = g.clone();
    play(&mut g2, "swallow:3").unwrap();
    assert_eq!(g2.pieces(0), [3, 0, 0, 0, 0]);
    // The swallow cannot launch to a house it is not allowed.
    let e = play(&mut g.clone(), "swallow:4").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("entry house")),
        "{e}"
    );
}

#[test]
fn a_launch_takes_an_opposing_piece_off_the_entry_house_and_exchanges_nothing() {
    // Converted 5: the storm-bird launches onto house 5 where seat 1's raven stands.
    let mut g = pos("converted", 5, "0,0,0,0,0", "0,0,5,0,0", "15,15", 20);
    assert_eq!(legal(&g), ["storm:5"]);
    play(&mut g, "storm:5").unwrap();
    assert_eq!(g.pieces(0), [0, 5, 0, 0, 0]);
    assert_eq!(g.pieces(1), [0, 0, 0, 0, 0], "the raven goes back unlaunched");
    assert_eq!(g.counters(), ([15, 15], 20));
}

#[test]
fn a_launch_onto_an_own_piece_is_illegal() {
    // Roll 6 would launch the raven onto house 6, where our own swallow stands.
    let g = pos("converted", 6, "6,0,0,0,0", "0,0,0,0,0", "15,15", 20);
    let moves = legal(&g);
    assert!(!moves.contains(&"raven:6".to_owned()), "{moves:?}");
    assert_eq!(moves, ["swallow:12"]);
    let e = play(&mut g.clone(), "raven:6").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("own piece")),
        "{e}"
    );
}

#[test]
fn an_occupied_rosette_cannot_be_entered() {
    // Our swallow on 5 would land on 8 with a 3, but seat 1's eagle holds the rosette.
    // (The storm-bird on 1 has a move: a primary roll is offered only with one.)
    let g = pos("primary", 3, "5,1,0,0,0", "0,0,0,0,8", "15,15", 20);
    assert!(!legal(&g).contains(&"swallow:8".to_owned()), "{:?}", legal(&g));
    let e = play(&mut g.clone(), "swallow:8").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("rosette is occupied")),
        "{e}"
    );
}

#[test]
fn landing_on_a_rosette_collects_from_the_pool() {
    let mut g = pos("primary", 3, "0,0,1,0,0", "0,0,0,0,0", "15,15", 20);
    play(&mut g, "raven:4").unwrap();
    assert_eq!(g.counters(), ([19, 15], 16), "the raven collects 4");
}

#[test]
fn an_empty_pool_pays_nothing_and_a_short_pool_pays_what_it_has() {
    // Counters only change hands: the 50 are with the players or in the pool.
    let mut g = pos("primary", 3, "0,0,0,0,1", "0,0,0,0,0", "25,25", 0);
    play(&mut g, "eagle:4").unwrap();
    assert_eq!(g.counters(), ([25, 25], 0));
    let mut g = pos("primary", 3, "0,0,0,0,1", "0,0,0,0,0", "23,25", 2);
    play(&mut g, "eagle:4").unwrap();
    assert_eq!(
        g.counters(),
        ([25, 25], 0),
        "the eagle wants 5 but the pool holds 2"
    );
}

#[test]
fn passing_two_rosettes_pays_twice() {
    // The eagle on 3 moves 10 to 13, over the rosettes on 4 and 8: 2 x 5 paid.
    let mut g = pos("converted", 10, "0,0,0,0,3", "0,0,0,0,0", "15,15", 20);
    play(&mut g, "eagle:13").unwrap();
    assert_eq!(g.pieces(0)[4], 13);
    assert_eq!(g.counters(), ([5, 15], 30));
}

#[test]
fn a_player_who_cannot_pay_in_full_pays_what_they_have() {
    let mut g = pos("converted", 10, "0,0,0,0,3", "0,0,0,0,0", "7,15", 28);
    play(&mut g, "eagle:13").unwrap();
    assert_eq!(g.counters(), ([0, 15], 35), "owes 10, holds 7, never negative");
}

#[test]
fn a_capture_on_a_shared_house_sends_the_piece_back_and_pays_as_a_move() {
    // Storm-bird 6 -> 9 passes the rosette on 8 (pays 4) and takes the rooster on 9.
    let mut g = pos("primary", 3, "0,6,0,0,0", "0,0,0,9,0", "15,15", 20);
    play(&mut g, "storm:9").unwrap();
    assert_eq!(g.pieces(0), [0, 9, 0, 0, 0]);
    assert_eq!(g.pieces(1), [0, 0, 0, 0, 0]);
    assert_eq!(g.counters(), ([11, 15], 24));
}

#[test]
fn own_houses_are_never_shared() {
    // Seat 1's piece on its own house 2 does not block our swallow landing on our 2.
    let mut g = pos("primary", 1, "1,0,0,0,0", "2,0,0,0,0", "15,15", 20);
    play(&mut g, "swallow:2").unwrap();
    assert_eq!(g.pieces(1), [2, 0, 0, 0, 0]);
}

#[test]
fn bearing_off_needs_the_exact_roll_and_pays_for_the_last_rosette() {
    // (The eagle on 1 has a move: a primary roll is offered only with one.)
    let g = pos("primary", 4, "12,15,15,15,1", "0,0,0,0,0", "15,15", 20);
    assert!(
        !legal(&g).contains(&"swallow:off".to_owned()),
        "12 + 4 overshoots 15"
    );
    let e = play(&mut g.clone(), "swallow:off").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("exact")),
        "{e}"
    );
    // With a 3 the swallow bears off, passes the rosette on 14 (pays 3) and wins the pool.
    let mut g = pos("primary", 3, "12,15,15,15,15", "0,0,0,0,0", "15,15", 20);
    play(&mut g, "swallow:off").unwrap();
    assert_eq!(g.phase(), Phase::Over);
    assert_eq!(
        g.counters(),
        ([35, 15], 0),
        "pays 3 into the pool, then takes all 23"
    );
    let o = g.outcome().unwrap();
    assert_eq!(o.ranks, vec![1, 2]);
    assert_eq!(o.scores, vec![35, 15]);
    assert!(!o.capped);
}

#[test]
fn the_gamble_either_converts_the_roll_or_passes_the_turn() {
    // Seat 0 holds a primary 1 that it could play, but gambles. Across RNG states
    // both answers happen; "yes" means the converted 5 must be played.
    let (mut yes, mut no) = (0, 0);
    for seed in 0..64 {
        let text =
            "to_move=0 phase=primary roll=1 seat0=1,0,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1";
        let mut g = Ur::from_position(&tablet(), text, GameRng::from_seed(seed)).unwrap();
        play(&mut g, "gamble").unwrap();
        match g.phase() {
            Phase::Converted(5) if g.turn() == 1 => {
                yes += 1;
                assert_eq!(g.to_act().first(), Some(0));
                let moves = legal(&g);
                assert_eq!(moves, ["swallow:6", "storm:5"]);
                assert!(!moves.contains(&"gamble".to_owned()), "no second gamble");
            }
            _ => {
                no += 1;
                assert!(g.turn() > 1, "a no ends turn 1");
                assert_eq!(g.pieces(0), [1, 0, 0, 0, 0]);
            }
        }
    }
    assert!(yes > 10 && no > 10, "yes={yes} no={no}");
}

#[test]
fn a_yes_with_no_converted_move_passes_the_turn() {
    // Only the swallow, on 13; converted 6 cannot be played and nothing launches on 6
    // because the raven is already off. Every gamble ends turn 1 (a later turn may
    // come back to seat 0, if seat 1 has nothing to play).
    for seed in 0..32 {
        let text = "to_move=0 phase=primary roll=2 seat0=13,15,15,15,15 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1";
        let mut g = Ur::from_position(&tablet(), text, GameRng::from_seed(seed)).unwrap();
        play(&mut g, "gamble").unwrap();
        assert!(g.turn() > 1, "seed {seed}: {:?}", g.phase());
    }
}

#[test]
fn wrong_seat_and_finished_game_are_refused() {
    let mut g = pos("primary", 2, "0,0,0,0,0", "0,0,0,0,0", "15,15", 20);
    let m = g.parse_move("swallow:1").unwrap();
    assert!(matches!(g.play(1, &m), Err(PlayError::NotToAct { seat: 1, .. })));
    assert!(matches!(g.play(2, &m), Err(PlayError::NoSuchSeat(2))));
    let over =
        "to_move=0 phase=over roll=- seat0=15,15,15,15,15 seat1=0,0,0,0,0 counters=40,10 pool=0 turn=9";
    let mut g = Ur::from_position(&tablet(), over, GameRng::from_seed(1)).unwrap();
    assert_eq!(g.play(0, &m), Err(PlayError::GameOver));
}

#[test]
fn the_cap_ends_the_game_on_counters() {
    let opts = UrOptions {
        max_turns: 1,
        ..UrOptions::default()
    };
    let text = "to_move=0 phase=primary roll=2 seat0=0,0,0,0,0 seat1=0,0,0,0,0 counters=16,14 pool=20 turn=1";
    let mut g = Ur::from_position(&opts, text, GameRng::from_seed(1)).unwrap();
    play(&mut g, "swallow:1").unwrap();
    let o = g.outcome().expect("the cap ends the game");
    assert!(o.capped);
    assert_eq!(o.ranks, vec![1, 2]);
}

#[test]
fn bad_positions_are_refused_with_the_reason() {
    let cases = [
        (
            "to_move=0 phase=primary roll=5 seat0=0,0,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1",
            "phase",
        ),
        (
            "to_move=0 phase=primary roll=2 seat0=0,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1",
            "5 pieces",
        ),
        (
            "to_move=0 phase=primary roll=2 seat0=6,0,0,0,0 seat1=6,0,0,0,0 counters=15,15 pool=20 turn=1",
            "shared house 6",
        ),
        (
            "to_move=0 phase=primary roll=2 seat0=3,3,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1",
            "two own pieces",
        ),
        (
            "to_move=0 phase=primary roll=2 seat0=0,0,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20",
            "turn",
        ),
        (
            "to_move=0 phase=primary roll=2 seat0=0,0,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1 x=1",
            "unknown field",
        ),
        (
            "to_move=0 phase=converted roll=10 seat0=13,15,15,15,15 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1",
            "no move",
        ),
    ];
    for (text, needle) in cases {
        let e = Ur::from_position(&tablet(), text, GameRng::from_seed(1)).unwrap_err();
        assert!(e.to_string().contains(needle), "{text}: {e}");
    }
}

#[test]
fn move_notation_errors_are_parse_errors() {
    let g = pos("primary", 2, "0,0,0,0,0", "0,0,0,0,0", "15,15", 20);
    for bad in ["", "sparrow:3", "swallow:16", "swallow", "3-"] {
        assert!(g.parse_move(bad).is_err(), "{bad:?}");
    }
}

// ---- rules=finkel ----

fn fpos(roll: u8, seat0: &str, seat1: &str) -> Ur {
    let text =
        format!("to_move=0 phase=roll roll={roll} seat0={seat0} seat1={seat1} counters=0,0 pool=0 turn=1");
    Ur::from_position(&finkel(), &text, GameRng::from_seed(3)).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn finkel_moves_enter_capture_and_respect_the_safe_rosette() {
    let g = fpos(3, "0,0,0,0,0,0,5", "0,0,0,0,0,0,8");
    // 0-3 enters; 5-8 is blocked because seat 1 sits on the shared rosette.
    let mut moves = Vec::new();
    g.legal_moves(0, &mut moves);
    let moves: Vec<String> = moves.iter().map(ToString::to_string).collect();
    assert_eq!(moves, ["0-3"]);
    let mut g = fpos(2, "0,0,0,0,0,0,5", "0,0,0,0,0,0,7");
    let m = g.parse_move("5-7").unwrap();
    g.play(0, &m).unwrap();
    assert_eq!(g.pieces(1), [0; 7], "captured on a shared house");
}

#[test]
fn finkel_rosette_grants_another_roll() {
    for seed in 0..16 {
        let text =
            "to_move=0 phase=roll roll=3 seat0=0,0,0,0,0,0,5 seat1=0,0,0,0,0,0,0 counters=0,0 pool=0 turn=1";
        let mut g = Ur::from_position(&finkel(), text, GameRng::from_seed(seed)).unwrap();
        let m = g.parse_move("5-8").unwrap();
        g.play(0, &m).unwrap();
        // Seat 0 rolls again unless the reroll gives nothing to play.
        if let Phase::Roll(_) = g.phase() {
            let again = g.to_act().first() == Some(0);
            let turn_passed = g.to_act().first() == Some(1);
            assert!(again || turn_passed);
            if again {
                return;
            }
        }
    }
    panic!("in 16 seeds the landing on a rosette never gave seat 0 another roll");
}

#[test]
fn a_finkel_turn_is_all_of_a_players_rolls_and_the_cap_counts_turns() {
    // Turn 5 of at most 5: landing on the rosette gives another roll in the same
    // turn (the cap does not cut it off); the turn passing to seat 1 is turn 6,
    // past the cap, so the game ends there.
    let capped = UrOptions {
        max_turns: 5,
        ..finkel()
    };
    let (mut again, mut passed) = (0, 0);
    for seed in 0..64 {
        let text =
            "to_move=0 phase=roll roll=3 seat0=0,0,0,0,0,0,5 seat1=0,0,0,0,0,0,0 counters=0,0 pool=0 turn=5";
        let mut g = Ur::from_position(&capped, text, GameRng::from_seed(seed)).unwrap();
        let m = g.parse_move("5-8").unwrap();
        g.play(0, &m).unwrap();
        assert_eq!(
            g.turn(),
            5,
            "seed {seed}: a rosette's extra roll is the same turn"
        );
        match g.phase() {
            Phase::Roll(_) => {
                assert_eq!(g.to_act().first(), Some(0), "seed {seed}");
                again += 1;
            }
            Phase::Over => {
                assert!(g.outcome().unwrap().capped, "seed {seed}");
                passed += 1;
            }
            other => panic!("seed {seed}: {other:?}"),
        }
    }
    assert!(
        again > 0 && passed > 0,
        "{again} extra rolls, {passed} turns passed"
    );
    // A turn that passes (no rosette) is a new turn.
    let mut g = fpos(2, "0,0,0,0,0,0,5", "0,0,0,0,0,0,0");
    let m = g.parse_move("5-7").unwrap();
    g.play(0, &m).unwrap();
    assert!(g.turn() >= 2, "turn {}", g.turn());
}

/// The seat whose turn 1 was in a new Finkel game from `seed` (a roll of 0 passes
/// turns on at once, so the seat to act now may be the other one).
fn finkel_first_player(seed: u64) -> usize {
    let g = Ur::new(&finkel(), 2, GameRng::from_seed(seed));
    let to_move = g.to_act().first().unwrap();
    if g.turn() % 2 == 1 { to_move } else { 1 - to_move }
}

#[test]
fn the_first_finkel_player_is_a_coin_toss_from_the_seed() {
    let firsts: Vec<usize> = (0..64).map(finkel_first_player).collect();
    let seat1 = firsts.iter().filter(|&&s| s == 1).count();
    assert!((16..=48).contains(&seat1), "seat 1 started {seat1} of 64 games");
    let again: Vec<usize> = (0..64).map(finkel_first_player).collect();
    assert_eq!(firsts, again, "the same seed, the same first player");
}

#[test]
fn finkel_bears_off_exactly_and_the_last_piece_wins() {
    let mut g = fpos(2, "13,15,15,15,15,15,15", "0,0,0,0,0,0,0");
    let m = g.parse_move("13-off").unwrap();
    g.play(0, &m).unwrap();
    let o = g.outcome().unwrap();
    assert_eq!(o.ranks, vec![1, 2]);
    assert_eq!(o.scores, vec![7, 0]);
    // With a 1 the piece on 13 may only go to 14: bearing off is exact.
    let g = fpos(1, "13,15,15,15,15,15,15", "0,0,0,0,0,0,0");
    let e = g
        .clone()
        .play(0, &engine::games::ur::UrMove::Step { from: 13, to: 15 })
        .unwrap_err();
    assert!(matches!(e, PlayError::Illegal { .. }), "{e}");
}
