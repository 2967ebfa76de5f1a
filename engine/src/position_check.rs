//! What every accepted position must satisfy, checked by the randomized position
//! test (`engine/tests/positions.rs`) and the position fuzz targets (`engine/fuzz`):
//! a position the notation accepts round-trips, gives every seat to act a legal
//! move, and plays to its end within a bounded number of moves.

use crate::registry::{AnyGame, game_from_position, new_game};
use crate::rng::GameRng;

/// Game id, options and seats of the setups whose positions the randomized test
/// and the fuzz targets mutate: every option that changes what a position may
/// hold is on in one of them.
pub const SETUPS: &[(&str, &[&str], usize)] = &[
    ("ur", &[], 2),
    ("ur", &["rules=finkel"], 2),
    ("ur", &["astragal=bone", "max_turns=40"], 2),
    ("uptick", &[], 2),
    ("uptick", &["size=4", "reserve=3", "max_turns=60"], 2),
    ("utara", &[], 2),
    (
        "utara",
        &["blocks=true", "sun=high", "moon=half", "scoring=advanced"],
        3,
    ),
    (
        "utara",
        &[
            "dice=2",
            "sky=3x3",
            "blocks=true",
            "moon=dark",
            "stormy=true",
            "sun=rising",
        ],
        2,
    ),
    ("cuatto", &[], 4),
    (
        "cuatto",
        &["setup=full", "doubles=true", "exact_exit=true", "length=12"],
        3,
    ),
    ("cuatto", &["max_turns=50"], 2),
    ("spartan", &[], 2),
    ("spartan", &["max_turns=3"], 2),
];

/// The states of a game played with random legal moves from `seed`, chosen by
/// `chooser`: its positions from the start to the end, at most `limit` of them.
pub fn playout_positions(
    id: &str,
    options: &[&str],
    seats: usize,
    seed: u64,
    chooser: &mut GameRng,
    limit: usize,
) -> Vec<String> {
    let Ok(mut game) = new_game(id, options, Some(seats), seed) else {
        return Vec::new();
    };
    let mut out = vec![game.position()];
    while game.outcome().is_none() && out.len() < limit {
        for seat in game.to_act().iter() {
            let moves = game.legal_moves(seat);
            let mv = &moves[chooser.below(moves.len() as u32) as usize];
            if game.play(seat, mv).is_err() {
                return out;
            }
        }
        out.push(game.position());
    }
    out
}

/// One fuzz input for game `id`, checked; panics on a broken promise (what the
/// fuzz targets in `engine/fuzz` call).
///
/// The first byte picks one of the game's [`SETUPS`]. If the second is even, the
/// rest is the position text itself; if odd, the next nine bytes pick a state
/// of a random playout (its seed, and how far in), and the bytes after them
/// edit its text three at a time (replace, insert or delete one character).
/// Either way, lines after the first are moves (`<seat> <move>`) tried on the
/// position before it is checked.
pub fn check_fuzz_input(id: &str, data: &[u8]) {
    let setups: Vec<_> = SETUPS.iter().filter(|s| s.0 == id).collect();
    let (Some(&pick), Some(&mode)) = (data.first(), data.get(1)) else {
        return;
    };
    let &(_, options, seats) = setups[usize::from(pick) % setups.len()];
    let text = if mode % 2 == 0 {
        String::from_utf8_lossy(&data[2..]).into_owned()
    } else {
        let Some(head) = data.get(2..11) else {
            return;
        };
        let seed = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
        let mut chooser = GameRng::from_seed(seed);
        let positions = playout_positions(id, options, seats, seed, &mut chooser, 1 + usize::from(head[8]));
        let Some(mut text) = positions.last().cloned() else {
            return;
        };
        const ALPHABET: &[u8] = b"0123456789-,/:=# abcdefhNESWOCpsx.";
        for edit in data[11..].chunks_exact(3) {
            let at = usize::from(edit[1]) % (text.len() + 1);
            let ch = char::from(ALPHABET[usize::from(edit[2]) % ALPHABET.len()]);
            match edit[0] % 3 {
                0 if at < text.len() => text.replace_range(at..=at, ch.encode_utf8(&mut [0; 4])),
                1 if at < text.len() => {
                    text.remove(at);
                }
                _ => text.insert(at, ch),
            }
        }
        text
    };
    let mut lines = text.lines();
    let position = lines.next().unwrap_or_default();
    let Ok(mut game) = game_from_position(id, options, position, 7) else {
        return;
    };
    // Canonical only: an accepted text is exactly what the engine writes for the
    // state it read (parse, write, parse is the identity).
    let written = if position.split_whitespace().any(|f| f.starts_with("rng=")) {
        game.position()
    } else {
        crate::game::strip_rng(&game.position())
    };
    assert_eq!(
        written, position,
        "{id} {options:?}: accepted text is not the canonical one"
    );
    for line in lines {
        let Some((seat, mv)) = line.split_once(' ') else {
            continue;
        };
        let Ok(seat) = seat.parse::<usize>() else { continue };
        let _ = game.play(seat, mv);
    }
    if let Err(v) = check_position(id, options, &game.position(), 7, MAX_PLIES) {
        panic!("{id} {options:?}: {:?}: {}", v.position, v.what);
    }
}

/// The most moves any accepted position may take to reach its end, whatever is
/// played: above every game's cap (Uptick's `max_turns` of 1,000,000 moves is the
/// longest) so that only a position that never ends trips it.
pub const MAX_PLIES: u64 = 1_100_000;

/// A broken promise of an accepted position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The position text as given.
    pub position: String,
    /// What went wrong.
    pub what: String,
}

/// Sets up `position` for game `id` with `options` and, if it is accepted, checks
/// it: its position text reads back as the same state, it is over exactly when
/// nobody is to act, every seat to act has a legal move, and random legal moves
/// (chosen from `seed`) bring it to an end within `max_plies`.
///
/// Returns `Ok(false)` for a refused position, `Ok(true)` for an accepted one
/// that keeps every promise.
///
/// # Errors
/// The first promise the accepted position breaks.
pub fn check_position(
    id: &str,
    options: &[&str],
    position: &str,
    seed: u64,
    max_plies: u64,
) -> Result<bool, Violation> {
    let Ok(mut game) = game_from_position(id, options, position, seed) else {
        return Ok(false);
    };
    let fail = |what: String| Violation {
        position: position.to_owned(),
        what,
    };
    let mut chooser = GameRng::from_seed(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut plies = 0u64;
    loop {
        check_state(id, options, game.as_ref()).map_err(&fail)?;
        if game.outcome().is_some() {
            return Ok(true);
        }
        if plies >= max_plies {
            return Err(fail(format!("still not over after {plies} moves")));
        }
        for seat in game.to_act().iter() {
            let moves = game.legal_moves(seat);
            let mv = &moves[chooser.below(moves.len() as u32) as usize];
            game.play(seat, mv)
                .map_err(|e| fail(format!("legal move {mv:?} of seat {seat} refused: {e}")))?;
            if game.outcome().is_some() {
                break;
            }
        }
        plies += 1;
    }
}

/// The promises of one state (see [`check_position`]).
fn check_state(id: &str, options: &[&str], game: &dyn AnyGame) -> Result<(), String> {
    let text = game.position();
    let again = game_from_position(id, options, &text, 0)
        .map_err(|e| format!("its own position {text:?} is refused: {e}"))?;
    if again.position() != text {
        return Err(format!(
            "position {text:?} reads back as a different state {:?}",
            again.position()
        ));
    }
    let to_act = game.to_act();
    match (game.outcome(), to_act.is_empty()) {
        (Some(_), false) => return Err(format!("over, yet {to_act:?} are to act in {text:?}")),
        (None, true) => return Err(format!("not over, yet nobody is to act in {text:?}")),
        _ => {}
    }
    for seat in to_act.iter() {
        if seat >= game.seats() {
            return Err(format!(
                "seat {seat} is to act in a {}-seat game: {text:?}",
                game.seats()
            ));
        }
        if game.legal_moves(seat).is_empty() {
            return Err(format!("seat {seat} is to act with no legal move in {text:?}"));
        }
    }
    Ok(())
}
