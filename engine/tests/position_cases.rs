//! Positions no game can reach, and move texts the games never write: each case is
//! refused with an error that names the field and the rule. Every case starts from
//! a position that is accepted, so a refusal is the change's doing.

use engine::game_from_position;

/// `base` is accepted; with `field=value` put in place of its field it is
/// refused, with an error holding every one of `needles`.
fn refused(id: &str, options: &[&str], base: &str, change: &str, needles: &[&str]) {
    game_from_position(id, options, base, 1).unwrap_or_else(|e| panic!("{id} base {base:?} refused: {e}"));
    // `change` may hold several fields, each put in place of its own.
    let mut fields: Vec<String> = base.split(' ').map(str::to_owned).collect();
    for change in change.split(' ') {
        let key = change.split_once('=').expect("key=value").0;
        match fields
            .iter_mut()
            .find(|f| f.split_once('=').map(|(k, _)| k) == Some(key))
        {
            Some(field) => *field = change.to_owned(),
            None => fields.push(change.to_owned()),
        }
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
    let blocked = CUATTO.replace("team0=0,0,0,0,0,0", "team0=0,0,0,0,5,5");
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
    let over = "turn=7 phase=over hp=1,0 merc=- dice0=- dice1=- resting=0,0 grave=1,1 pending0=- pending1=- reveal=12/12/- sudden=0:3";
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

/// `text` is refused with an error holding every one of `needles`.
fn refused_text(id: &str, options: &[&str], text: &str, needles: &[&str]) {
    match game_from_position(id, options, text, 1) {
        Ok(g) => panic!("{id} {options:?}: {text:?} accepted as {:?}", g.position()),
        Err(e) => {
            let e = e.to_string();
            for needle in needles {
                assert!(
                    e.contains(needle),
                    "{id}: {text:?}: {e:?} does not say {needle:?}"
                );
            }
        }
    }
}

/// A position of a seeded game of `id` whose text contains `wanted`.
fn seeded_position(id: &str, options: &[&str], wanted: &str) -> String {
    let mut chooser = engine::GameRng::from_seed(64);
    (0..3000)
        .flat_map(|seed| {
            engine::position_check::playout_positions(id, options, 2, seed, &mut chooser, usize::MAX)
        })
        .find(|p| p.contains(wanted))
        .unwrap_or_else(|| panic!("no {id} position with {wanted:?}"))
}

#[test]
fn numbers_are_read_only_as_the_engine_writes_them() {
    refused("ur", &[], UR, "roll=+2", &["\"roll\"", "roll=2"]);
    refused("ur", &[], UR, "roll=02", &["\"roll\"", "roll=2"]);
    refused("ur", &[], UR_WON, "roll=banana", &["\"roll\"", "roll=-"]);
    refused("ur", &[], UR_WON, "roll=", &["\"roll\"", "roll=-"]);
    let spots = "to_move=0 dice=3,5 finished=- turn=1 team0=0,0,0,0,0,5 team1=0,0,0,0,0,0";
    refused(
        "cuatto",
        &[],
        spots,
        "team0=0,0,0,0,0,+5",
        &["team0", "team0=0,0,0,0,0,5"],
    );
    refused(
        "cuatto",
        &[],
        spots,
        "team0=0,0,0,0,0,05",
        &["team0", "team0=0,0,0,0,0,5"],
    );
    let bridge = "to_move=0 dice=3,5 finished=- turn=1 team0=b1s,b2p,b3,b4,b5,b6 team1=b1s,b2p,b3,b4,b5,b6";
    refused(
        "cuatto",
        &["setup=full"],
        bridge,
        "team0=b01s,b2p,b3,b4,b5,b6",
        &["team0", "team0=b1s,b2p,b3,b4,b5,b6"],
    );
    let blocks =
        "round=1 starter=0 to_move=0 phase=block:0 turn=0 totals=0,0 collected=-,- sky=9/9/9/9/9/9/9/9/9";
    refused(
        "utara",
        &["blocks=true"],
        blocks,
        "phase=block:+0",
        &["phase", "phase=block:0"],
    );
    // The Mercenary in a reveal, and a sudden death, from seeded games.
    let reveal = seeded_position("spartan", &[], "/0:");
    let at = reveal.find("/0:").unwrap();
    refused_text(
        "spartan",
        &[],
        &format!("{}/+0:{}", &reveal[..at], &reveal[at + 3..]),
        &["reveal"],
    );
    let sudden = seeded_position("spartan", &[], "sudden=0:");
    refused_text(
        "spartan",
        &[],
        &sudden.replace("sudden=0:", "sudden=0:+"),
        &["sudden"],
    );
    // The rng's key and word position, in every game.
    for id in engine::GAME_IDS {
        let game = engine::new_game(id, &[] as &[&str], None, 3).unwrap();
        let text = game.position();
        let Some((head, rng)) = text.rsplit_once(" rng=") else {
            continue;
        };
        let (key, word) = rng.split_once(':').expect("rng=<key>:<word>");
        let word: u128 = word.parse().unwrap();
        for bad in [
            format!("{key}:+{word}"),
            format!("{key}:0{word}"),
            format!("{key}:{}", word + (1u128 << 68)),
            format!("{}:{word}", key.to_uppercase()),
        ] {
            refused_text(
                id,
                &[],
                &format!("{head} rng={bad}"),
                &["rng", &format!("rng={rng}")],
            );
        }
    }
}

#[test]
fn a_state_has_one_spelling() {
    // Unsorted lists.
    refused(
        "ur",
        &["rules=finkel"],
        FINKEL,
        "seat0=3,0,0,0,0,0,0",
        &["seat0", "seat0=0,0,0,0,0,0,3"],
    );
    refused(
        "cuatto",
        &[],
        CUATTO,
        "team0=0,0,0,0,5,0",
        &["team0", "team0=0,0,0,0,0,5"],
    );
    refused("cuatto", &[], CUATTO, "dice=5,3", &["dice", "dice=3,5"]);
    refused(
        "spartan",
        &[],
        SPARTAN,
        "dice0=2123456666",
        &["dice0", "dice0=1223456666"],
    );
    let reveal = seeded_position("spartan", &[], "reveal=1");
    let faces = reveal
        .split(' ')
        .find_map(|f| f.strip_prefix("reveal="))
        .unwrap()
        .to_owned();
    let first = faces.split('/').next().unwrap();
    if first.len() > 1 && first.chars().any(|c| c != '1') {
        let unsorted: String = first.chars().rev().collect();
        refused_text("spartan", &[], &reveal.replacen(first, &unsorted, 1), &["reveal"]);
    }
    // Empty lists are written `-`.
    refused("cuatto", &[], CUATTO, "finished=", &["finished", "finished=-"]);
    refused(
        "utara",
        &[],
        UTARA,
        "collected=,",
        &["collected", "collected=-,-"],
    );
    // Fields in the engine's order, one space apart.
    let swapped = UR.replacen("to_move=0 phase=primary", "phase=primary to_move=0", 1);
    refused_text("ur", &[], &swapped, &["to_move", "to_move=0"]);
    refused_text("ur", &[], &UR.replacen(' ', "  ", 1), &["phase=primary"]);
    refused_text("ur", &[], &UR.replacen(' ', "\t", 1), &["to_move"]);
    refused_text("ur", &[], &format!("{UR} "), &["position field"]);
    refused_text("ur", &[], &format!(" {UR}"), &["to_move=0"]);
}

#[test]
fn states_no_game_reaches_are_refused_with_their_reason() {
    // Ur: a primary roll is offered only with a move to play.
    refused("ur", &[], UR, "roll=1", &["primary roll 1 has no move"]);
    // Cuatto: a strong checker landing hits the other teams' strong ones.
    let strong = "to_move=0 dice=3,5 finished=- turn=1 team0=b2p,b3,b4,b5,b6,7s team1=b1p,b3,b4,b5,b6,8s";
    refused(
        "cuatto",
        &["setup=full"],
        strong,
        "team1=b1p,b3,b4,b5,b6,7s",
        &["strong checker on position 7"],
    );
    // Utara: Moons stay on the sky unless moon=full; rounds and collections take turns.
    game_from_position(
        "utara",
        &[] as &[&str],
        &UTARA
            .replace("turn=0", "turn=1")
            .replace("collected=-,-", "collected=CC,-"),
        1,
    )
    .expect("moon=full collects Moons");
    for moon in ["moon=half", "moon=dark"] {
        refused(
            "utara",
            &[moon],
            UTARA,
            "turn=1 collected=CC,-",
            &["collected", "moon=full"],
        );
    }
    refused("utara", &[], UTARA, "collected=N,-", &["first turn of round 1"]);
    refused("utara", &[], UTARA, "round=2", &["turn", "round 2 needs turn 1"]);
    // Spartan: turn 1 before its reveal is the start of the game.
    refused("spartan", &[], SPARTAN, "hp=5,5", &["turn 1 before its reveal"]);
    refused("spartan", &[], SPARTAN, "merc=0", &["turn 1 before its reveal"]);
    refused(
        "spartan",
        &[],
        SPARTAN,
        "grave=8,8 dice0=66 dice1=66",
        &["turn 1 before its reveal"],
    );
    refused(
        "spartan",
        &[],
        SPARTAN,
        "resting=1,0 dice0=122345666",
        &["turn 1 before its reveal"],
    );
    refused(
        "spartan",
        &[],
        SPARTAN,
        "reveal=3444444444/3444444444/-",
        &["reveal", "turn 1 comes before"],
    );
    // After turn 1: the last reveal against the turn, resting dice, graveyard,
    // Mercenary and hit points.
    let second = "turn=2 phase=reroll1 hp=10,10 merc=- dice0=6 dice1=6 resting=9,9 grave=0,0 pending0=- pending1=- reveal=3444444444/3444444444/- sudden=-";
    refused(
        "spartan",
        &[],
        second,
        "reveal=-",
        &["reveal", "every turn ends with a reveal"],
    );
    refused(
        "spartan",
        &[],
        second,
        "reveal=344444444/3444444444/-",
        &["reveal", "ten dice each"],
    );
    refused(
        "spartan",
        &[],
        second,
        "reveal=3444444444/3444444444/0:3",
        &["reveal", "no Mercenary"],
    );
    refused(
        "spartan",
        &[],
        second,
        "resting=8,9 dice0=66",
        &["resting", "seat 0 showed 9"],
    );
    refused("spartan", &[], second, "grave=1,0 dice0=-", &["grave", "0 to 0"]);
    refused("spartan", &[], second, "merc=0", &["merc", "merc=-"]);
    refused("spartan", &[], second, "hp=9,10", &["hp", "lost 0 HP"]);
    let later = second.replace("turn=2", "turn=9");
    game_from_position("spartan", &[] as &[&str], &later, 1).expect("a later turn");
    refused(
        "spartan",
        &[],
        &later,
        "reveal=1/-/- resting=1,0 dice0=666666666 dice1=6666666666",
        &["resting", "seat 0 showed 0"],
    );
    refused(
        "spartan",
        &[],
        &later,
        "reveal=1/-/- resting=0,0 grave=0,0 dice0=6666666666 dice1=6666666666",
        &["grave", "1 to 10"],
    );
    let hit = "reveal=2222244444/-/- resting=5,0 merc=0 dice0=66666 dice1=6666666666";
    refused(
        "spartan",
        &[],
        &later,
        &format!("{hit} hp=10,6"),
        &["hp", "seat 1 lost 5 HP"],
    );
    refused(
        "spartan",
        &[],
        &later,
        &format!("{hit} hp=10,5 merc=-"),
        &["merc", "merc=0"],
    );
    let hit_text = later
        .replace("reveal=3444444444/3444444444/-", "reveal=2222244444/-/-")
        .replace("resting=9,9", "resting=5,0")
        .replace("merc=-", "merc=0")
        .replace("dice0=6 dice1=6", "dice0=66666 dice1=6666666666")
        .replace("hp=10,10", "hp=10,5");
    game_from_position("spartan", &[] as &[&str], &hit_text, 1).expect("what that reveal leaves");
}
