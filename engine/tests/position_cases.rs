//! Positions no game can reach, and move texts the games never write: each case is
//! refused with an error that names the field and the rule. Every case starts from
//! a position that is accepted, so a refusal is the change's doing.

use engine::game_from_position;

/// `base` is accepted; with `field=value` put in place of its field it is
/// refused, with an error holding every one of `needles`.
fn refused(id: &str, options: &[&str], base: &str, change: &str, needles: &[&str]) {
    game_from_position(id, options, base, 1).unwrap_or_else(|e| panic!("{id} base {base:?} refused: {e}"));
    let key = change.split_once('=').expect("key=value").0;
    let mut found = false;
    let mut fields: Vec<String> = base
        .split(' ')
        .map(|f| {
            if f.split_once('=').map(|(k, _)| k) == Some(key) {
                found = true;
                change.to_owned()
            } else {
                f.to_owned()
            }
        })
        .collect();
    if !found {
        fields.push(change.to_owned());
    }
    let text = fields.join(" ");
    match game_from_position(id, options, &text, 1) {
        Ok(g) => panic!("{id} {options:?}: {text:?} accepted as {:?}", g.position()),
        Err(e) => {
            let e = e.to_string();
            for needle in needles {
                assert!(
                    e.contains(needle),
                    "{id}: {change}: {e:?} does not say {needle:?}"
                );
            }
        }
    }
}

const UR: &str =
    "to_move=0 phase=primary roll=2 seat0=0,0,0,0,0 seat1=0,0,0,0,0 counters=15,15 pool=20 turn=1";
const UR_WON: &str =
    "to_move=0 phase=over roll=- seat0=15,15,15,15,15 seat1=0,0,0,0,0 counters=40,10 pool=0 turn=30";
const FINKEL: &str =
    "to_move=0 phase=roll roll=3 seat0=0,0,0,0,0,0,0 seat1=0,0,0,0,0,0,0 counters=0,0 pool=0 turn=1";

#[test]
fn ur_counters_only_change_hands_and_a_finished_game_agrees_with_its_end() {
    refused(
        "ur",
        &[],
        UR,
        "counters=9223372036854775807,0",
        &["counters", "add up to 50"],
    );
    refused("ur", &[], UR, "counters=15,16", &["add up to 50"]);
    refused("ur", &[], UR, "pool=9223372036854775807", &["add up to 50"]);
    refused(
        "ur",
        &["rules=finkel"],
        FINKEL,
        "counters=1,0",
        &["add up to 0", "finkel"],
    );
    refused("ur", &["rules=finkel"], FINKEL, "pool=3", &["add up to 0"]);
    refused("ur", &[], UR_WON, "seat1=15,15,15,15,15", &["both seats"]);
    refused("ur", &[], UR_WON, "counters=20,10", &["add up to 50"]);
    let pool_not_taken = UR_WON.replace("counters=40,10 pool=0", "counters=20,10 pool=20");
    let e = game_from_position("ur", &[] as &[&str], &pool_not_taken, 1)
        .map(|g| g.position())
        .unwrap_err();
    assert!(e.to_string().contains("took the pool"), "{e}");
    refused("ur", &[], UR, "turn=0", &["turn", "from 1"]);
    refused("ur", &[], UR, "turn=4294967295", &["turn", "max_turns"]);
    refused(
        "ur",
        &["max_turns=20"],
        UR,
        "turn=21",
        &["turn", "max_turns (20)"],
    );
}

const UPTICK: &str = "board=8/8/8/8/8/8/8/C7 to_move=0 reserve=7,7 captured=3,0 last=1 turn=4";

#[test]
fn uptick_counts_add_up_and_runs_cannot_overflow() {
    refused(
        "uptick",
        &[],
        UPTICK,
        "captured=9223372036854775807,0",
        &["captured", "1 to 6 pips"],
    );
    refused(
        "uptick",
        &[],
        UPTICK,
        "captured=7,0",
        &["captured", "1 to 6 pips"],
    );
    refused(
        "uptick",
        &[],
        UPTICK,
        "captured=0,0",
        &["captured", "1 to 6 pips"],
    );
    refused(
        "uptick",
        &[],
        UPTICK,
        "captured=3,1",
        &["captured", "0 to 0 pips"],
    );
    refused(
        "uptick",
        &[],
        UPTICK,
        "reserve=8,7",
        &["seat 0", "more than the 8"],
    );
    refused(
        "uptick",
        &[],
        UPTICK,
        "reserve=7,9",
        &["seat 1", "more than the 8"],
    );
    refused("uptick", &[], UPTICK, "turn=1", &["takes 2 moves"]);
    refused("uptick", &[], UPTICK, "turn=1001", &["turn", "max_turns"]);
    refused("uptick", &[], UPTICK, "last=-", &["last"]);
    for board in [
        "18446744073709551615/8/8/8/8/8/8/C7",
        "18446744073709551616/8/8/8/8/8/8/C7",
        "8/8/8/8/8/8/8/C18446744073709551615",
        "8/8/8/8/8/8/8/C4294967296",
        "8/8/8/8/8/8/8/C07",
        "8/8/8/8/8/8/8/C0007",
        "8/8/8/8/8/8/8/C0.......",
    ] {
        refused("uptick", &[], UPTICK, &format!("board={board}"), &["board"]);
    }
}

const UTARA: &str =
    "round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0 collected=-,- sky=9/9/9/9/9/9/9/9/O0N07";

#[test]
fn utara_phases_agree_with_the_options_and_counts_with_the_seats() {
    refused("utara", &[], UTARA, "turn=4294967295", &["turn", "max_turns"]);
    refused(
        "utara",
        &["max_turns=5"],
        UTARA,
        "turn=5",
        &["turn", "max_turns (5)"],
    );
    refused(
        "utara",
        &[],
        UTARA,
        "sky=9/9/9/9/9/9/9/9/O0N018446744073709551615",
        &["sky", "longer than 9"],
    );
    refused(
        "utara",
        &[],
        UTARA,
        "sky=9/9/9/9/9/9/9/9/O0N007",
        &["sky", "leading zeros"],
    );
    refused("utara", &[], UTARA, "phase=sun:a1", &["phase=sun", "sun=high"]);
    refused(
        "utara",
        &[],
        UTARA,
        "phase=continue",
        &["phase=continue", "moon=half"],
    );
    refused(
        "utara",
        &[],
        UTARA,
        "sky=9/9/9/9/9/9/9/9/O0N0#6",
        &["blocks=false"],
    );
    refused("utara", &[], UTARA, "totals=9223372036854775807,0", &["totals"]);
    refused("utara", &[], UTARA, "totals=1,0", &["totals", "0 to 0"]);
    refused("utara", &[], UTARA, "starter=1", &["seat 0 starts round 1"]);
    // With one die each, three on the sky are one too many.
    let small = "round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0 collected=-,- sky=N0N0N1/3/3";
    let o = &["dice=1", "sky=3x3"];
    refused(
        "utara",
        o,
        &small.replace("N0N0N1", "N0N11"),
        "sky=N0N0N1/3/3",
        &["seat 0", "brings 1"],
    );
    refused(
        "utara",
        o,
        &small.replace("N0N0N1", "N0N11"),
        "collected=N,-",
        &["played with 2 x 1"],
    );
    // The hang: with blocks=false a block phase would place a block the roll has
    // no room for; it is refused before anything is rolled.
    let tight = "round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0 collected=-,- sky=N0N0/N1N1";
    refused(
        "utara",
        &["dice=2", "sky=2x2"],
        tight,
        "phase=block:0",
        &["blocks=true"],
    );
}

#[test]
fn a_utara_position_says_how_many_seats_it_has() {
    let ranks = ["11"; 10].join("/");
    let text = format!(
        "round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0,0 collected=-,-,- sky={ranks}/N010"
    );
    let g = game_from_position("utara", &[] as &[&str], &text, 1).expect("a 3-seat position with defaults");
    assert_eq!(g.seats(), 3);
    assert_eq!(
        g.observation(0)["round"],
        serde_json::json!([1, 3]),
        "one round per player"
    );
    // Given the sky size, the rounds still follow the seats.
    let text9 = format!(
        "round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0,0 collected=-,-,- sky={}/N08",
        ["9"; 8].join("/")
    );
    let g = game_from_position("utara", &["sky=9x9"], &text9, 1).unwrap();
    assert_eq!(g.observation(0)["round"], serde_json::json!([1, 3]));
    // players= must agree with the position.
    let e = game_from_position("utara", &["players=2"], &text, 1)
        .map(|g| g.seats())
        .unwrap_err();
    assert!(e.to_string().contains("players"), "{e}");
    assert!(game_from_position("utara", &["players=3"], &text, 1).is_ok());
}

const CUATTO: &str = "to_move=0 dice=3,5 finished=- turn=1 team0=0,0,0,0,0,0 team1=0,0,0,0,0,0";

#[test]
fn cuatto_rankings_blocks_and_dice_are_ones_the_rules_make() {
    let done = "to_move=1 dice=- finished=0 turn=9 team0=off,off,off,off,off,off team1=0,0,0,0,0,0";
    game_from_position("cuatto", &[] as &[&str], done, 1).expect("team 0 finished first");
    refused("cuatto", &[], done, "finished=0,0", &["finished", "listed twice"]);
    refused("cuatto", &[], done, "dice=3,5", &["dice=-"]);
    let blocked = CUATTO.replace("team0=0,0,0,0,0,0", "team0=5,5,0,0,0,0");
    refused(
        "cuatto",
        &[],
        &blocked,
        "team1=5,5,0,0,0,0",
        &["each have two or more", "position 5"],
    );
    refused(
        "cuatto",
        &[],
        &blocked,
        "team1=5,0,0,0,0,0",
        &["would have been hit"],
    );
    refused("cuatto", &[], CUATTO, "dice=3,3,3", &["dice", "doubles=true"]);
    refused("cuatto", &[], CUATTO, "dice=4,4,4,4", &["dice", "doubles=true"]);
    game_from_position(
        "cuatto",
        &["doubles=true"],
        &CUATTO.replace("dice=3,5", "dice=3,3,3"),
        1,
    )
    .expect("three of a double's four left");
    refused(
        "cuatto",
        &["doubles=true"],
        CUATTO,
        "dice=3,3,4",
        &["dice", "all alike"],
    );
    refused("cuatto", &[], CUATTO, "turn=0", &["turn", "from 1"]);
    refused("cuatto", &[], CUATTO, "turn=4294967296", &["turn"]);
}

const SPARTAN: &str = "turn=1 phase=reroll1 hp=10,10 merc=- dice0=1223456666 dice1=1223455566 resting=0,0 grave=0,0 pending0=- pending1=- reveal=- sudden=-";

#[test]
fn spartan_hp_turns_and_dice_stay_in_range() {
    refused(
        "spartan",
        &[],
        SPARTAN,
        "hp=11,10",
        &["hp", "start at 10 HP and never gain"],
    );
    refused("spartan", &[], SPARTAN, "hp=9223372036854775807,10", &["hp"]);
    refused("spartan", &[], SPARTAN, "turn=0", &["turn", "from 1"]);
    refused("spartan", &[], SPARTAN, "turn=201", &["turn", "max_turns (200)"]);
    refused("spartan", &[], SPARTAN, "grave=9223372036854775807,0", &["grave"]);
    refused("spartan", &[], SPARTAN, "resting=0,11", &["resting"]);
    let over = "turn=7 phase=over hp=1,0 merc=- dice0=- dice1=- resting=0,0 grave=0,0 pending0=- pending1=- reveal=- sudden=0:3";
    game_from_position("spartan", &[] as &[&str], over, 1).expect("a sudden death won by seat 0");
    refused("spartan", &[], over, "sudden=1:3", &["sudden", "winner"]);
    refused("spartan", &[], over, "sudden=0:0", &["sudden"]);
    refused("spartan", &[], over, "hp=0,0", &["sudden"]);
    refused(
        "spartan",
        &[],
        &over.replace("sudden=0:3", "sudden=-"),
        "hp=0,0",
        &["no sudden death"],
    );
}

#[test]
fn moves_are_read_only_as_the_games_write_them() {
    /// Game, options, position, a legal move there, other spellings of moves.
    type Case<'a> = (&'a str, &'a [&'a str], &'a str, &'a str, &'a [&'a str]);
    let cases: &[Case<'_>] = &[
        (
            "ur",
            &[],
            UR,
            "swallow:1",
            &[
                "swallow:+1",
                "swallow:01",
                " swallow:1",
                "swallow:1 ",
                "Swallow:1",
            ],
        ),
        (
            "ur",
            &["rules=finkel"],
            FINKEL,
            "0-3",
            &["+0-+3", "0-+3", "00-3", "0-03", "0 - 3"],
        ),
        (
            "uptick",
            &[],
            UPTICK,
            "a2=3",
            &["a02=3", "a2=+3", "a2=03", "A2=3", "a2 =3"],
        ),
        ("uptick", &[], UPTICK, "a1-a2", &["a1xa2", "a01-a2", "a1-a+2"]),
        ("utara", &[], UTARA, "b1", &["b01", "b+1", "B1", " b1"]),
        ("cuatto", &[], CUATTO, "3:0", &["03:0", "+3:0", "3:00", "3:+0"]),
        (
            "spartan",
            &[],
            SPARTAN,
            "reroll:2",
            &["reroll:02", "reroll:+2", "REROLL:2"],
        ),
    ];
    for &(id, options, position, good, bad) in cases {
        let g = game_from_position(id, options, position, 1).unwrap();
        let seat = g.to_act().first().unwrap();
        assert!(
            g.legal_moves(seat).contains(&good.to_owned()),
            "{id}: {good} is legal"
        );
        g.clone_box()
            .play(seat, good)
            .unwrap_or_else(|e| panic!("{id}: {good}: {e}"));
        for text in bad {
            let e = g.clone_box().play(seat, text).unwrap_err();
            assert!(matches!(e, engine::MoveError::Parse(_)), "{id}: {text:?}: {e}");
        }
    }
}

#[test]
fn the_human_seat_may_type_other_spellings_and_gets_the_games_own() {
    let g = game_from_position("uptick", &[] as &[&str], UPTICK, 1).unwrap();
    assert_eq!(g.read_move("a1xa2").unwrap(), "a1-a2");
    assert_eq!(g.read_move(" a2=3 ").unwrap(), "a2=3");
    assert!(g.read_move("a9=3").is_err());
}
