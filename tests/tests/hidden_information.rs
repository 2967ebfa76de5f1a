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
