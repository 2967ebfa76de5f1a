//! Hand-worked skies of Utara, set up through the position notation.
//!
//! Skies are written top rank (north) first; `N E S W` are directional dice, `O` a
//! Sun, `C` a Moon, each followed by its owner's seat; `#` a block; numbers count
//! empty cells.

use engine::games::utara::{MoonStyle, SunStyle, Utara, UtaraOptions, days, score, tides};
use engine::{Game, GameRng, PlayError};

fn opts(moon: MoonStyle, sun: SunStyle) -> UtaraOptions {
    UtaraOptions {
        width: 5,
        height: 5,
        moon,
        sun,
        ..UtaraOptions::for_seats(2)
    }
}

fn full() -> UtaraOptions {
    opts(MoonStyle::Full, SunStyle::Basic)
}

fn sky(options: &UtaraOptions, sky: &str) -> Utara {
    let text = format!("round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0 collected=-,- sky={sky}");
    Utara::from_position(options, &text, GameRng::from_seed(4)).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn obs(g: &Utara) -> serde_json::Value {
    serde_json::to_value(g.observation(0)).unwrap()
}

fn play(g: &mut Utara, seat: usize, mv: &str) -> Result<(), PlayError> {
    let m = g.parse_move(mv).unwrap();
    g.play(seat, &m)
}

fn sky_of(g: &Utara) -> String {
    let pos = g.position();
    pos.split(' ')
        .find_map(|f| f.strip_prefix("sky="))
        .unwrap()
        .to_owned()
}

#[test]
fn a_chain_turns_at_every_directional_die_and_leaves_the_sky() {
    // East from a1 hits the North on d1; North hits the West on d4; West hits the
    // South on b4; South runs off the bottom edge. Three turns, four dice.
    let mut g = sky(&full(), "4N0/1S01W01/5/5/E02N11");
    play(&mut g, 0, "a1").unwrap();
    let o = obs(&g);
    assert_eq!(o["collected"][0], "NESW");
    assert_eq!(sky_of(&g), "4N0/5/5/5/5", "only the North on e5 is left");
    assert_eq!(o["to_move"], 1);
}

#[test]
fn a_path_with_nothing_in_its_way_leaves_at_once() {
    let mut g = sky(&full(), "4N0/5/5/5/W04");
    play(&mut g, 0, "e5").unwrap();
    assert_eq!(obs(&g)["collected"][0], "N");
    // Only directional dice start a path.
    let mut g = sky(&full(), "4N0/5/C04/5/W04");
    let e = play(&mut g, 0, "a3").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("North, East")),
        "{e}"
    );
}

// East from a1 meets the Moon (or Sun) on c1, then the North on e1; a West on a5
// keeps the round going.
const MOON_ROW: &str = "W04/5/5/5/E01C01N0";
const SUN_ROW: &str = "W04/5/5/5/E01O01N0";

#[test]
fn a_full_moon_is_collected_and_the_path_goes_on() {
    let mut g = sky(&full(), MOON_ROW);
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "NEC");
    assert_eq!(sky_of(&g), "W04/5/5/5/5");
}

#[test]
fn a_dark_moon_ends_path_and_turn_and_stays() {
    let mut g = sky(&opts(MoonStyle::Dark, SunStyle::Basic), MOON_ROW);
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "E");
    assert_eq!(sky_of(&g), "W04/5/5/5/2C01N0");
    assert_eq!(g.to_act().first(), Some(1));
}

#[test]
fn a_half_moon_ends_the_path_but_the_player_may_go_on_or_stop() {
    let mut g = sky(&opts(MoonStyle::Half, SunStyle::Basic), MOON_ROW);
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "E");
    assert_eq!(obs(&g)["phase"], "continue");
    let mut moves = Vec::new();
    g.legal_moves(0, &mut moves);
    let moves: Vec<String> = moves.iter().map(ToString::to_string).collect();
    assert_eq!(moves, ["e1", "a5", "stop"]);
    let mut stop = g.clone();
    play(&mut stop, 0, "stop").unwrap();
    assert_eq!(stop.to_act().first(), Some(1));
    play(&mut g, 0, "e1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "NE", "a second path in the same turn");
    // `stop` is only open after a Half Moon.
    let mut fresh = sky(&opts(MoonStyle::Half, SunStyle::Basic), MOON_ROW);
    assert!(play(&mut fresh, 0, "stop").is_err());
}

#[test]
fn a_basic_sun_is_collected_and_the_path_goes_on() {
    let mut g = sky(&full(), SUN_ROW);
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "NEO");
}

// North from a1 meets the Sun on a3. Beyond it, north, an East on a5; east of
// the Sun, a West on e3.
const SUN_CROSS: &str = "E04/5/O03W1/5/N04";

#[test]
fn sun_styles_rising_setting_and_high() {
    // Basic: straight on to the East on a5, which runs off the east edge.
    let mut g = sky(&opts(MoonStyle::Full, SunStyle::Basic), SUN_CROSS);
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "NEO");
    assert_eq!(sky_of(&g), "5/5/4W1/5/5");
    // Rising: the Sun goes East, hits the West on e3, which runs back west and off.
    let mut g = sky(&opts(MoonStyle::Full, SunStyle::Rising), SUN_CROSS);
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "NWO");
    assert_eq!(sky_of(&g), "E04/5/5/5/5");
    // Setting: the Sun goes West and leaves at once.
    let mut g = sky(&opts(MoonStyle::Full, SunStyle::Setting), SUN_CROSS);
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "NO");
    assert_eq!(sky_of(&g), "E04/5/4W1/5/5");
    // High: the player chooses, in the middle of the path.
    let mut g = sky(&opts(MoonStyle::Full, SunStyle::High), SUN_CROSS);
    play(&mut g, 0, "a1").unwrap();
    let o = obs(&g);
    assert_eq!(
        (o["phase"].as_str(), o["sun_cell"].as_str()),
        (Some("sun"), Some("a3"))
    );
    assert_eq!(o["collected"][0], "N");
    let mut west = g.clone();
    play(&mut west, 0, "west").unwrap();
    assert_eq!(obs(&west)["collected"][0], "NO");
    play(&mut g, 0, "east").unwrap();
    assert_eq!(obs(&g)["collected"][0], "NWO");
    // Nothing but east or west answers a High Sun.
    let mut g = sky(&opts(MoonStyle::Full, SunStyle::High), SUN_CROSS);
    play(&mut g, 0, "a1").unwrap();
    assert!(play(&mut g.clone(), 0, "a5").is_err());
}

#[test]
fn a_block_ends_the_path_and_the_turn_and_never_moves() {
    let blocks = UtaraOptions {
        blocks: true,
        ..full()
    };
    let mut g = sky(&blocks, "4W0/5/#4/5/N04");
    play(&mut g, 0, "a1").unwrap();
    assert_eq!(obs(&g)["collected"][0], "N");
    assert_eq!(sky_of(&g), "4W0/5/#4/5/5");
    assert_eq!(g.to_act().first(), Some(1));
}

#[test]
fn blocks_are_placed_in_turn_order_before_the_roll() {
    let o = UtaraOptions {
        blocks: true,
        rounds: 2,
        ..full()
    };
    let text = "round=2 starter=1 to_move=1 phase=block:0 turn=8 totals=7,3 collected=-,- sky=5/5/5/5/5";
    let mut g = Utara::from_position(&o, text, GameRng::from_seed(3)).unwrap();
    let mut moves = Vec::new();
    g.legal_moves(1, &mut moves);
    assert_eq!(moves.len(), 25);
    play(&mut g, 1, "block:c3").unwrap();
    assert_eq!(g.to_act().first(), Some(0), "then the next seat");
    let e = play(&mut g, 0, "block:c3").unwrap_err();
    assert!(
        matches!(e, PlayError::Illegal { why, .. } if why.contains("already")),
        "{e}"
    );
    play(&mut g, 0, "block:d3").unwrap();
    let ob = obs(&g);
    assert_eq!(ob["phase"], "start");
    assert_eq!(ob["to_move"], 1, "the starter opens the round");
    assert_eq!(ob["blocks"], serde_json::json!(["c3", "d3"]));
    assert_eq!(
        ob["dice"].as_array().unwrap().len(),
        20,
        "2 x 10 dice rolled around the blocks"
    );
}

#[test]
fn the_rulebooks_worked_example_scores_30_and_18() {
    // Faces by index: 1 N, 2 E, 3 S, 4 W, 5 Sun, 6 Moon.
    let first = [0, 1, 2, 1, 3, 0, 3];
    assert_eq!((days(&first), tides(&first)), (1, 3));
    assert_eq!(score(&first, true), 30);
    assert_eq!(score(&first, false), 10);
    let second = [0, 0, 2, 1, 1, 2, 2];
    assert_eq!((days(&second), tides(&second)), (1, 1));
    assert_eq!(score(&second, true), 18);
}

#[test]
fn days_and_tides_edge_cases() {
    // Suns fill a Day but every Day needs one real directional die.
    assert_eq!(days(&[0, 0, 0, 0, 0, 4, 0]), 0);
    assert_eq!(days(&[0, 1, 0, 0, 0, 3, 0]), 1);
    assert_eq!(days(&[0, 1, 0, 0, 0, 7, 0]), 1, "a second Day would be all Suns");
    assert_eq!(days(&[0, 2, 2, 2, 2, 0, 0]), 2);
    assert_eq!(days(&[0, 2, 2, 2, 1, 1, 0]), 2);
    // Moons fill a Tide of one direction, never make one alone.
    assert_eq!(tides(&[0, 0, 0, 0, 0, 0, 3]), 0);
    assert_eq!(tides(&[0, 0, 0, 0, 1, 0, 2]), 1);
    assert_eq!(
        tides(&[0, 0, 0, 0, 1, 0, 5]),
        1,
        "a second W tide needs a second W"
    );
    assert_eq!(tides(&[0, 3, 0, 0, 0, 0, 4]), 2, "N+C+C and N+C+C beat N+N+N");
    assert_eq!(tides(&[0, 2, 2, 0, 0, 0, 2]), 2);
    // A die may count in a Day and a Tide at once.
    let both = [0, 3, 1, 1, 1, 0, 0];
    assert_eq!((days(&both), tides(&both)), (1, 1));
    // Suns do not make Tides and Moons do not make Days.
    assert_eq!(days(&[0, 1, 1, 1, 0, 0, 5]), 0);
    assert_eq!(tides(&[0, 1, 0, 0, 0, 5, 0]), 0);
}

#[test]
fn the_lowest_scorer_starts_the_next_round_and_totals_carry() {
    let o = UtaraOptions { rounds: 2, ..full() };
    // Seat 0 has collected 3 this round, seat 1 one; seat 1 takes the last path (1 die).
    let text = "round=1 starter=0 to_move=1 phase=start turn=7 totals=0,0 collected=NNE,S sky=5/5/5/5/N04";
    let mut g = Utara::from_position(&o, text, GameRng::from_seed(5)).unwrap();
    play(&mut g, 1, "a1").unwrap();
    let ob = obs(&g);
    assert_eq!(ob["totals"], serde_json::json!([3, 2]));
    assert_eq!(ob["round"], serde_json::json!([2, 2]));
    assert_eq!(ob["to_move"], 1, "seat 1 scored least");
    assert_eq!(ob["collected"], serde_json::json!(["", ""]));
    assert_eq!(ob["dice"].as_array().unwrap().len(), 20, "a fresh sky");
    // In the last round the game ends; ranking by totals.
    let text = "round=2 starter=1 to_move=1 phase=start turn=9 totals=3,2 collected=-,NN sky=5/5/5/5/N04";
    let mut g = Utara::from_position(&o, text, GameRng::from_seed(5)).unwrap();
    play(&mut g, 1, "a1").unwrap();
    let out = g.outcome().expect("over");
    assert_eq!(out.scores, vec![3, 5]);
    assert_eq!(out.ranks, vec![2, 1]);
}

#[test]
fn a_stormy_sky_is_rolled_again_after_every_turn() {
    let o = UtaraOptions {
        stormy: true,
        ..full()
    };
    let mut changed = 0;
    for seed in 0..10 {
        let text = "round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0 collected=-,- sky=S0N0W0E0C0/5/5/5/N04";
        let mut g = Utara::from_position(&o, text, GameRng::from_seed(seed)).unwrap();
        play(&mut g, 0, "a1").unwrap();
        // a1's North runs into the South on a5 and that runs back south and off.
        assert_eq!(obs(&g)["collected"][0], "NS");
        if obs(&g)["phase"] == "start" {
            assert_eq!(
                obs(&g)["dice"].as_array().unwrap().len(),
                4,
                "the four dice left are rolled again"
            );
            if sky_of(&g) != "1N0W0E0C0/5/5/5/5" {
                changed += 1;
            }
        }
    }
    assert!(
        changed >= 5,
        "the storm moved the dice in only {changed} of 10 games"
    );
}

#[test]
fn bad_positions_and_moves_name_the_problem() {
    let g = sky(&full(), "4N0/5/5/5/W04");
    for bad in ["f1", "a6", "block:", "north", ""] {
        assert!(g.parse_move(bad).is_err(), "{bad:?}");
    }
    for (sky_text, needle) in [
        ("5/5/5/5", "5 ranks"),
        ("6/5/5/5/5", "longer than 5 cells"),
        ("X0/5/5/5/5", "not a face"),
        ("N4/5/5/5/5", "owner"),
        ("5/5/5/5/C04", "no directional die"),
    ] {
        let text =
            format!("round=1 starter=0 to_move=0 phase=start turn=0 totals=0,0 collected=-,- sky={sky_text}");
        let e = Utara::from_position(&full(), &text, GameRng::from_seed(1)).unwrap_err();
        assert!(e.to_string().contains(needle), "{sky_text}: {e}");
    }
}

#[test]
fn options_resolve_the_default_sky_and_refuse_a_sky_too_small() {
    let g = engine::new_game("utara", &["dice=10"], Some(2), 1).unwrap();
    let o: serde_json::Value = g.observation(0);
    assert_eq!(o["sky"], serde_json::json!([9, 9]), "ceil(sqrt(4 x 20)) = 9");
    assert_eq!(o["round"][1], 2, "one round per player");
    let g = engine::new_game("utara", &[] as &[&str], Some(6), 1).unwrap();
    assert_eq!(g.observation(0)["sky"], serde_json::json!([16, 16]));
    let e = engine::new_game("utara", &["sky=4x4"], Some(2), 1).unwrap_err();
    assert!(e.to_string().contains("at least 20 cells"), "{e}");
    let e = engine::new_game("utara", &["sky=9by9"], Some(2), 1).unwrap_err();
    assert!(e.to_string().contains("WxH"), "{e}");
    let e = engine::new_game("utara", &[] as &[&str], Some(7), 1).unwrap_err();
    assert!(e.to_string().contains("2 to 6 seats"), "{e}");
}
