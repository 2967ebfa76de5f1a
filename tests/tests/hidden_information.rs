//! What a seat can learn beyond its observation. (That no process plays two games
//! of one mirrored group is tested with the `referee match` command, in `cli.rs`.)

/// The drawing a person at a seat is shown (`referee play --bot human`) is the same
/// for every state that seat cannot tell apart: the other seats' secrets (Spartan
/// Yahtzee's dice in hand, whether the other army has decided) never show.
struct DrawingsHideSecrets<'a> {
    options: &'a [&'a str],
    seats: Option<usize>,
}

impl engine::GameVisitor for DrawingsHideSecrets<'_> {
    type Output = usize;
    fn visit<G: engine::Game>(self) -> usize {
        let (options, _, seats) = engine::registry::resolve_setup::<G, _>(self.options, self.seats).unwrap();
        let mut checked = 0;
        for seed in 0..4 {
            let mut game = G::new(&options, seats, engine::GameRng::from_seed(seed));
            let mut chooser = engine::GameRng::from_seed(seed + 100);
            let mut moves = Vec::new();
            for _ in 0..400 {
                let to_act = game.to_act();
                if to_act.is_empty() {
                    break;
                }
                for seat in 0..game.seats() {
                    let drawn = game.render_for(seat);
                    for k in 0..3 {
                        let other = game.determinize(seat, &mut engine::GameRng::from_seed(seed * 10 + k));
                        assert_eq!(
                            other.render_for(seat),
                            drawn,
                            "{}: seat {seat} sees a difference it must not know\n{}",
                            G::ID,
                            game.position()
                        );
                        checked += 1;
                    }
                }
                // One seat of the step decides; in a simultaneous step the other
                // seat's drawing is then checked with that decision pending.
                let seat = to_act.iter().next().unwrap();
                moves.clear();
                game.legal_moves(seat, &mut moves);
                let mv = moves[chooser.below(moves.len() as u32) as usize].clone();
                game.play(seat, &mv).unwrap();
            }
        }
        checked
    }
}

#[test]
fn a_person_is_shown_only_what_their_seat_may_know() {
    for (id, options, seats) in astragal_tests::CASES {
        let checked = engine::with_game(
            id,
            DrawingsHideSecrets {
                options,
                seats: *seats,
            },
        )
        .unwrap();
        assert!(checked > 100, "{id}: only {checked} drawings checked");
    }
}

/// Two `random` built-ins with different seeds over mirrored Ur games: seat A's
/// share of the points, each game played in process as `referee match` plays it.
fn random_vs_random_share(groups: u64) -> f64 {
    let bot = |seed: u64| {
        referee::SeatSetup::new(referee::BotSpec::parse(&format!("builtin:random?seed={seed}")).unwrap())
    };
    let (a, b) = (bot(1), bot(5));
    let limits = astragal_tests::fast_limits();
    let mut points = 0.0;
    for group in 0..groups {
        let setup = referee::GameSetup {
            game: "ur".into(),
            options: vec![],
            seed: engine::group_seed(2026, group),
            position: None,
            pairing: None,
        };
        for (seats, a_seat) in [([a.clone(), b.clone()], 0), ([b.clone(), a.clone()], 1)] {
            let rec = referee::play_game(&setup, &seats, &limits, &referee::LogPlace::default()).unwrap();
            points += match rec.outcome.ranks[a_seat] {
                1 if rec.outcome.is_draw() => 0.5,
                1 => 1.0,
                _ => 0.0,
            };
        }
    }
    points / (2 * groups) as f64
}

#[test]
fn random_bots_are_random_in_every_game() {
    // Each game used to restart a bot's stream from its seed, so a seed was one
    // fixed policy: seed 1 scored 45.8% against seed 5 over 20,000 games. Streams
    // now differ by game and seat; 2,000 games hold the share within ±3% (about
    // 2.7 standard errors for independent games; mirrored pairs only narrow it).
    let share = random_vs_random_share(1000);
    assert!(
        (share - 0.5).abs() < 0.03,
        "random seed 1 scored {:.1}% against seed 5",
        100.0 * share
    );
}

#[test]
#[ignore = "the issue's full size: 20,000 games, a few seconds"]
fn random_bots_are_within_two_percent_over_20000_mirrored_games() {
    let share = random_vs_random_share(10_000);
    eprintln!(
        "random seed 1 scored {:.2}% against seed 5 over 20,000 games",
        100.0 * share
    );
    assert!((share - 0.5).abs() < 0.02, "{:.2}%", 100.0 * share);
}

#[test]
fn a_spartan_seat_is_asked_twice_a_turn_whatever_the_other_army_rolled() {
    // Request ids count each seat's own requests, so they carry nothing when the
    // count itself carries nothing: both seats decide both rerolls of every turn.
    let seats = [
        referee::SeatSetup::new(referee::BotSpec::parse("builtin:random").unwrap()),
        referee::SeatSetup::new(referee::BotSpec::parse("builtin:first").unwrap()),
    ];
    for seed in 0..60 {
        let setup = referee::GameSetup {
            game: "spartan".into(),
            options: vec![],
            seed,
            position: None,
            pairing: None,
        };
        let rec = referee::play_game(
            &setup,
            &seats,
            &astragal_tests::fast_limits(),
            &referee::LogPlace::default(),
        )
        .unwrap();
        let turns: usize = rec
            .final_position
            .split(' ')
            .find_map(|f| f.strip_prefix("turn="))
            .unwrap()
            .parse()
            .unwrap();
        for seat in [0, 1] {
            let asked = rec.moves.iter().filter(|m| m.seat == seat).count();
            assert_eq!(
                asked,
                2 * turns,
                "seed {seed}: seat {seat} asked {asked} times in {turns} turns"
            );
        }
    }
}

#[test]
fn the_wait_before_a_spartan_request_does_not_tell_what_the_other_army_rolled() {
    // Both armies hold one die, so the other army often holds only Plague (once not
    // asked at all: its opponent's next request came at once, not after its 20 ms
    // of thought). The attacker times the gap before each second-reroll request and
    // classes it by the other army's revealed dice. 8 games of 20 turns.
    let dir = std::env::temp_dir().join(format!("astragal-gap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Turn 2, after a first reveal that buried nine Plague dice each.
    let position = "turn=2 phase=reroll1 hp=9,9 merc=- dice0=3 dice1=4 resting=0,0 grave=9,9 pending0=- pending1=- reveal=1111111112/1111111112/- sudden=-";
    for seed in 0..8 {
        let out = std::process::Command::new(astragal_tests::binary("referee"))
            .args([
                "play",
                "--game",
                "spartan",
                "--opt",
                "max_turns=20",
                "--seed",
                &seed.to_string(),
                "--position",
                position,
            ])
            .arg("--bot")
            .arg(format!("{} --attack clock", env!("CARGO_BIN_EXE_attack_bot")))
            .arg("--bot")
            .arg(format!("{} --mode ponder", env!("CARGO_BIN_EXE_hostile_bot")))
            .arg("--log-dir")
            .arg(dir.join(seed.to_string()))
            .current_dir(astragal_tests::workspace_root())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (mut plague, mut other) = (Vec::new(), Vec::new());
    let logs = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten());
    for entry in logs {
        for line in std::fs::read_to_string(entry.path()).unwrap_or_default().lines() {
            let mut words = line.split_whitespace();
            if words.next() != Some("GAP") {
                continue;
            }
            let class = words.next().unwrap_or_default();
            let us: f64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(f64::NAN);
            if class == "plague" {
                plague.push(us)
            } else {
                other.push(us)
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    assert!(
        plague.len() >= 5 && other.len() >= 5,
        "{} plague, {} other gaps",
        plague.len(),
        other.len()
    );
    let (p, o) = (median(&mut plague), median(&mut other));
    eprintln!(
        "median gap {p:.0} us (other army all Plague, {} samples), {o:.0} us otherwise ({})",
        plague.len(),
        other.len()
    );
    // Both wait for the other army's 20 ms; a seat not asked would answer at once.
    assert!(
        (0.5..2.0).contains(&(p / o)),
        "median gap {p:.0} us when the other army held only Plague, {o:.0} us otherwise ({} and {} samples)",
        plague.len(),
        other.len()
    );
}
