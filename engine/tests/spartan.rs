//! Hand-worked turns of Spartan Yahtzee, set up through the position notation.

use engine::games::spartan::{Spartan, SpartanOptions};
use engine::{Game, GameRng, PlayError};

/// A second-reroll position of turn 4; both seats still to decide. The reveal
/// of turn 3 is one that leaves these HP, resting dice, graveyard and Mercenary:
/// Plague dice for the graveyard, Hoplites for the resting dice, Warriors for
/// the Mercenary.
fn pos(hp: &str, merc: &str, dice0: &str, dice1: &str, resting: &str, grave: &str, seed: u64) -> Spartan {
    let pair = |t: &str| -> [i64; 2] {
        let v: Vec<i64> = t.split(',').map(|n| n.parse().unwrap()).collect();
        [v[0], v[1]]
    };
    let (hps, rest, buried) = (pair(hp), pair(resting), pair(grave));
    let holder = match merc {
        "0" => std::cmp::Ordering::Greater,
        "1" => std::cmp::Ordering::Less,
        _ => std::cmp::Ordering::Equal,
    };
    let free = |p: usize| 10 - rest[p] - buried[p];
    let (w0, w1) = (0..=free(0))
        .flat_map(|w0| (0..=free(1)).map(move |w1| (w0, w1)))
        .find(|&(w0, w1)| {
            let damage = [(w1 - rest[0]).max(0), (w0 - rest[1]).max(0)];
            w0.cmp(&w1) == holder && (0..2).all(|p| hps[p] <= 10 - damage[p])
        })
        .expect("a reveal that leaves this position");
    let faces = |p: usize, w: i64| {
        let text = "1".repeat(buried[p] as usize) + &"2".repeat(w as usize) + &"4".repeat(rest[p] as usize);
        if text.is_empty() { "-".to_owned() } else { text }
    };
    let text = format!(
        "turn=4 phase=reroll2 hp={hp} merc={merc} dice0={dice0} dice1={dice1} resting={resting} grave={grave} pending0=- pending1=- reveal={}/{}/- sudden=-",
        faces(0, w0),
        faces(1, w1)
    );
    Spartan::from_position(&SpartanOptions::default(), &text, GameRng::from_seed(seed))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn obs(g: &Spartan, seat: usize) -> serde_json::Value {
    serde_json::to_value(g.observation(seat)).unwrap()
}

fn stand_both(g: &mut Spartan) {
    let stand = g.parse_move("stand").unwrap();
    for seat in g.to_act().iter().collect::<Vec<_>>() {
        g.play(seat, &stand).unwrap();
    }
}

#[test]
fn the_reveal_deals_damage_at_the_same_time_and_sorts_the_dice() {
    // Seat 0: plague x2, warriors 2,2,3,3, hoplite 4, phalanx 5,5, necromancer 6.
    // Seat 1: warriors 2x5 + 3x3, hoplite 4, necromancer 6.
    let mut g = pos("10,10", "-", "1122334556", "2222233346", "0,0", "0,0", 1);
    stand_both(&mut g);
    let o = obs(&g, 0);
    let r = &o["last_reveal"];
    assert_eq!(r["attack"], serde_json::json!([4, 8]));
    assert_eq!(r["defence"], serde_json::json!([5, 1]));
    assert_eq!(r["damage"], serde_json::json!([3, 3]));
    assert_eq!(o["hp"], serde_json::json!([7, 7]));
    // Two plague dice went to the graveyard and the necromancer brought both back.
    assert_eq!(o["graveyard"], serde_json::json!([0, 0]));
    // Defenders rest: seat 0's 4,5,5 and seat 1's 4.
    assert_eq!(o["resting"], serde_json::json!([3, 1]));
    assert_eq!(o["in_hand"], serde_json::json!([7, 9]));
    // Strictly more warriors (8 > 4): seat 1 takes the Mercenary for the next turn.
    assert_eq!(o["mercenary"], 1);
    assert_eq!(o["turn"], 5);
    assert_eq!(o["phase"], "reroll1");
}

#[test]
fn a_plague_heavy_turn_locks_and_buries_dice() {
    // Seat 0 rolled eight plagues; it has a 2 and a 3 it may reroll, the 1s never.
    let mut g = pos("10,10", "-", "1111111123", "2233445566", "0,0", "0,0", 2);
    let plague = g.parse_move("reroll:1").unwrap();
    let e = g.play(0, &plague).unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("plague")),
        "{e}"
    );
    let too_many = g.parse_move("reroll:22").unwrap();
    assert!(g.play(0, &too_many).is_err(), "holds only one 2");
    stand_both(&mut g);
    let o = obs(&g, 0);
    assert_eq!(o["graveyard"], serde_json::json!([8, 0]));
    assert_eq!(o["in_hand"][0], 2, "only two dice left to roll");
    // An army whose every die shows plague is still asked, with `stand` its only
    // move: whether it is asked must not tell the other army what it rolled.
    let mut g = pos("10,10", "-", "11", "2233445566", "0,0", "8,0", 2);
    assert_eq!(g.to_act().iter().collect::<Vec<_>>(), vec![0, 1]);
    let mut only = Vec::new();
    g.legal_moves(0, &mut only);
    assert_eq!(
        only.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["stand"]
    );
    // The step waits for it: seat 1 alone does not resolve it.
    let stand = g.parse_move("stand").unwrap();
    g.play(1, &stand).unwrap();
    assert_eq!(g.to_act().iter().collect::<Vec<_>>(), vec![0]);
}

#[test]
fn both_armies_are_asked_at_every_step_whatever_they_rolled() {
    // Over whole random games: at the start of every reroll step both seats are to
    // act, so who is asked (and how often) never depends on the dice.
    let mut steps = 0;
    for seed in 0..200 {
        let mut g = Spartan::new(&SpartanOptions::default(), 2, GameRng::from_seed(seed));
        let mut chooser = GameRng::from_seed(seed + 1000);
        while g.outcome().is_none() {
            assert_eq!(
                g.to_act().len(),
                2,
                "seed {seed}: a step begins with both seats asked"
            );
            steps += 1;
            for seat in [0, 1] {
                let mut moves = Vec::new();
                g.legal_moves(seat, &mut moves);
                let mv = moves[chooser.below(moves.len() as u32) as usize];
                g.play(seat, &mv).unwrap();
            }
        }
    }
    assert!(steps > 1000, "{steps} steps");
}

#[test]
fn each_necromancer_revives_up_to_two_dice() {
    // Graveyard 5, five dice in hand: 1,1,6,6,6. Plague first (grave 7), then three
    // necromancers bring back six: one stays buried.
    let mut g = pos("10,10", "-", "11666", "2233445566", "0,0", "5,0", 3);
    stand_both(&mut g);
    assert_eq!(obs(&g, 0)["graveyard"], serde_json::json!([1, 0]));
    // With an empty graveyard a necromancer does nothing.
    let mut g = pos("10,10", "-", "6666666666", "2233445566", "0,0", "0,0", 3);
    stand_both(&mut g);
    assert_eq!(obs(&g, 0)["graveyard"], serde_json::json!([0, 0]));
}

#[test]
fn resting_defenders_skip_one_turn_then_return() {
    // Seat 0 rolls all defenders: they rest through the next turn.
    let mut g = pos("10,10", "-", "4444455555", "2222222222", "0,0", "0,0", 4);
    stand_both(&mut g);
    let o = obs(&g, 0);
    assert_eq!(o["resting"][0], 10);
    assert_eq!(o["in_hand"][0], 0, "nothing to roll this turn");
    assert!(o["your_dice"].as_array().unwrap().is_empty());
    // Play the turn through; afterwards they are back in hand (minus this turn's
    // new defenders, of which there are none: seat 0 rolled nothing).
    while obs(&g, 0)["turn"] == 5 {
        stand_both(&mut g);
    }
    let o = obs(&g, 0);
    assert_eq!(o["resting"][0], 0);
    assert_eq!(o["in_hand"][0], 10 - o["graveyard"][0].as_u64().unwrap());
}

#[test]
fn the_mercenary_adds_a_d4_then_goes_back_and_is_awarded_again() {
    for seed in 0..20 {
        // Seat 0 holds it; warriors 2 vs 5.
        let mut g = pos("10,9", "0", "2244445555", "2223344444", "0,0", "0,0", seed);
        stand_both(&mut g);
        let o = obs(&g, 0);
        let r = &o["last_reveal"];
        assert_eq!(r["mercenary"]["seat"], 0);
        let roll = r["mercenary"]["roll"].as_i64().unwrap();
        assert!((1..=4).contains(&roll));
        assert_eq!(r["attack"][0].as_i64().unwrap(), 2 + roll);
        assert_eq!(
            o["mercenary"], 1,
            "used, back to the centre, then won by 5 warriors > 2"
        );
    }
    // Equal warriors: it stays in the centre.
    let mut g = pos("10,9", "0", "2344445555", "2344445555", "0,0", "0,0", 9);
    stand_both(&mut g);
    assert!(obs(&g, 0)["mercenary"].is_null());
}

#[test]
fn both_at_zero_go_to_sudden_death() {
    let mut wins = [0; 2];
    for seed in 0..40 {
        let mut g = pos("1,1", "-", "2222222222", "3333333333", "0,0", "0,0", seed);
        stand_both(&mut g);
        let out = g.outcome().expect("over");
        let o = obs(&g, 0);
        let winner = o["sudden_death_winner"]
            .as_u64()
            .expect("a sudden death was played") as usize;
        assert_eq!(out.ranks[winner], 1);
        assert_eq!(out.ranks[1 - winner], 2);
        assert_eq!(out.scores[winner], 1, "the winner stands at 1 HP");
        assert_eq!(out.scores[1 - winner], 0);
        assert!(o["sudden_death_rolls"].as_u64().unwrap() >= 1);
        wins[winner] += 1;
    }
    assert!(wins[0] > 5 && wins[1] > 5, "{wins:?}");
    // One army at 0 simply loses: seat 0 attacks 5 into no defence, and its
    // phalanxes (defence 10) stop seat 1's ten warriors.
    let mut g = pos("5,1", "-", "2222255555", "2222222222", "0,0", "0,0", 1);
    stand_both(&mut g);
    let out = g.outcome().unwrap();
    assert_eq!(out.ranks, vec![1, 2]);
    assert!(obs(&g, 0)["sudden_death_winner"].is_null());
    assert_eq!(obs(&g, 0)["sudden_death_rolls"], 0, "no sudden death was played");
}

#[test]
fn before_the_reveal_a_seat_sees_nothing_of_the_other_army() {
    let a = pos("10,10", "-", "1122334556", "2222233346", "0,0", "0,0", 1);
    let mut b = pos("10,10", "-", "1122334556", "5555566666", "0,0", "0,0", 1);
    // Seat 1 has also decided in b: that must not show either.
    let mv = b.parse_move("reroll:66666").unwrap();
    b.play(1, &mv).unwrap();
    let (ja, jb) = (obs(&a, 0).to_string(), obs(&b, 0).to_string());
    assert_eq!(ja, jb, "seat 0's view depends on seat 1's dice or decision");
    assert!(ja.contains("\"your_dice\":[1,1,2,2,3,3,4,5,5,6]"), "{ja}");
    // And the other way round: seat 1 sees its own dice.
    assert!(
        obs(&b, 1)
            .to_string()
            .contains("\"your_dice\":[5,5,5,5,5,6,6,6,6,6]")
    );
}

#[test]
fn the_order_of_simultaneous_answers_does_not_matter() {
    let base = pos("10,10", "-", "1122334556", "2222233346", "0,0", "0,0", 11);
    let (m0, m1) = (
        base.parse_move("reroll:23").unwrap(),
        base.parse_move("reroll:2222").unwrap(),
    );
    let mut x = base.clone();
    x.play(0, &m0).unwrap();
    x.play(1, &m1).unwrap();
    let mut y = base.clone();
    y.play(1, &m1).unwrap();
    y.play(0, &m0).unwrap();
    assert_eq!(x.position(), y.position());
    // A seat that has decided is not asked again in the same step.
    let mut z = base.clone();
    z.play(0, &m0).unwrap();
    assert!(matches!(z.play(0, &m0), Err(PlayError::NotToAct { .. })));
}

#[test]
fn move_notation() {
    let g = pos("10,10", "-", "1122334556", "2222233346", "0,0", "0,0", 1);
    let mut moves = Vec::new();
    g.legal_moves(0, &mut moves);
    // Faces 2,2,3,3,4,5,5,6: 3*3*2*3*2 multisets.
    assert_eq!(moves.len(), 108);
    assert_eq!(moves[0].to_string(), "stand");
    assert_eq!(moves[1].to_string(), "reroll:6");
    for bad in ["reroll:", "reroll:7", "roll", "reroll:2x"] {
        assert!(g.parse_move(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_drawn_sudden_death_is_told_apart_from_none() {
    let text = "turn=4 phase=over hp=0,0 merc=- dice0=- dice1=- resting=0,0 grave=9,9 pending0=- pending1=- reveal=12/12/- sudden=draw:100";
    let g = Spartan::from_position(&SpartanOptions::default(), text, GameRng::from_seed(1)).unwrap();
    let o = obs(&g, 1);
    assert!(o["sudden_death_winner"].is_null());
    assert_eq!(o["sudden_death_rolls"], 100);
    let mut fast = String::new();
    g.write_observation(1, &mut fast);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&fast).unwrap(), o);
}
