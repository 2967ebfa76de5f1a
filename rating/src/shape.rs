//! A group's results as a canonical key, so that a store can count groups by
//! shape and the standings can be fit from the counts alone.
//!
//! Everything the standings read of a finished group — which bots took which
//! places in each of its games, and whether a fault ended a game — is in its
//! shape, and nothing else is: not the seats (the fit and the tables do not see
//! them), not the rotation, not the keys. So groups with one shape count as one
//! row with a number, and a competition of a million games keeps as many rows
//! as it has distinct shapes (for two-seat mirrored games, about four per pair
//! of bots).
//!
//! The text form is games joined by `;`, each game its seats as `bot:place`
//! ordered by bot and joined by `,`, with `!` after a game a fault ended; games
//! in order. `3:1,5:2;3:2,5:1!` is a group of two games between bots 3 and 5,
//! each won once, the second ended by a fault.

use std::fmt;
use std::str::FromStr;

/// One game of a shape: `(bot, place)` by bot, and whether a fault ended it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShapeGame {
    /// `(bot id, place)`, ordered by bot id.
    pub seats: Vec<(i64, u32)>,
    /// A seat's fault ended the game.
    pub forfeit: bool,
}

/// A finished group's results, canonical: equal for groups the standings
/// cannot tell apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupShape {
    /// Its games, ordered.
    pub games: Vec<ShapeGame>,
}

/// A shape's text that does not parse, or describes no game.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("group shape {text:?}: {problem}")]
pub struct ShapeError {
    /// The text, cut to 80 characters.
    pub text: String,
    /// What is wrong.
    pub problem: String,
}

impl GroupShape {
    /// The shape of a group whose games are `(bots by seat, places by seat,
    /// forfeit)`.
    pub fn of<'a>(games: impl IntoIterator<Item = (&'a [i64], &'a [u32], bool)>) -> GroupShape {
        let mut games: Vec<ShapeGame> = games
            .into_iter()
            .map(|(bots, ranks, forfeit)| {
                let mut seats: Vec<(i64, u32)> = bots.iter().copied().zip(ranks.iter().copied()).collect();
                seats.sort_unstable();
                ShapeGame { seats, forfeit }
            })
            .collect();
        games.sort_unstable();
        GroupShape { games }
    }
}

impl fmt::Display for GroupShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, g) in self.games.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            for (j, (bot, place)) in g.seats.iter().enumerate() {
                if j > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{bot}:{place}")?;
            }
            if g.forfeit {
                f.write_str("!")?;
            }
        }
        Ok(())
    }
}

impl FromStr for GroupShape {
    type Err = ShapeError;

    /// Parses the text form; only canonical text (as [`GroupShape`]'s `Display`
    /// writes it) is accepted, so one shape never has two rows.
    fn from_str(text: &str) -> Result<GroupShape, ShapeError> {
        let fail = |problem: String| ShapeError {
            text: text.chars().take(80).collect(),
            problem,
        };
        if text.is_empty() {
            return Err(fail("no games".into()));
        }
        let mut games = Vec::new();
        for game in text.split(';') {
            let (body, forfeit) = match game.strip_suffix('!') {
                Some(body) => (body, true),
                None => (game, false),
            };
            let mut seats = Vec::new();
            for seat in body.split(',') {
                let (bot, place) = seat
                    .split_once(':')
                    .ok_or_else(|| fail(format!("seat {seat:?} is not bot:place")))?;
                let bot: i64 = bot
                    .parse()
                    .map_err(|_| fail(format!("bot {bot:?} is not a number")))?;
                let place: u32 = place
                    .parse()
                    .ok()
                    .filter(|p| *p >= 1)
                    .ok_or_else(|| fail(format!("place {place:?} is not a number from 1")))?;
                seats.push((bot, place));
            }
            if seats.len() < 2 {
                return Err(fail(format!("game {game:?} has fewer than two seats")));
            }
            games.push(ShapeGame { seats, forfeit });
        }
        let shape = GroupShape { games };
        let mut canonical = shape.clone();
        canonical.games.iter_mut().for_each(|g| g.seats.sort_unstable());
        canonical.games.sort_unstable();
        if canonical != shape || shape.to_string() != text {
            return Err(fail("not in canonical order (seats by bot, games sorted)".into()));
        }
        Ok(shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::{Rng, SeedableRng};

    #[test]
    fn a_shape_forgets_seats_and_game_order_and_keeps_places_and_faults() {
        let a = GroupShape::of([
            (&[5, 3][..], &[1, 2][..], false),
            (&[3, 5][..], &[1, 2][..], true),
        ]);
        let b = GroupShape::of([
            (&[3, 5][..], &[1, 2][..], true),
            (&[3, 5][..], &[2, 1][..], false),
        ]);
        assert_eq!(a, b, "the same places in other seats and order");
        assert_eq!(a.to_string(), "3:1,5:2!;3:2,5:1");
        let c = GroupShape::of([
            (&[3, 5][..], &[1, 2][..], false),
            (&[3, 5][..], &[2, 1][..], false),
        ]);
        assert_ne!(a, c, "a fault is part of the shape");
        let tie = GroupShape::of([(&[7, 3, 5][..], &[1, 1, 3][..], false)]);
        assert_eq!(tie.to_string(), "3:1,5:3,7:1");
    }

    #[test]
    fn only_canonical_text_parses() {
        for bad in [
            "",
            "3:1",
            "3:1,5",
            "3:0,5:1",
            "x:1,5:2",
            "5:1,3:2",
            "3:2,5:1;3:1,5:2",
            "3:1,5:2!!",
            "3:1,5:2;",
            "3:+1,5:2",
        ] {
            let e = bad.parse::<GroupShape>().expect_err(bad);
            assert!(e.to_string().contains("group shape"), "{e}");
        }
    }

    #[test]
    fn random_shapes_round_trip_through_their_text() {
        let mut rng = ChaCha8Rng::seed_from_u64(39);
        for _ in 0..2000 {
            let seats = 2 + (rng.next_u32() % 4) as usize;
            let games = 1 + (rng.next_u32() % 4) as usize;
            let bots: Vec<i64> = (0..seats)
                .map(|s| s as i64 * 7 + i64::from(rng.next_u32() % 5))
                .collect();
            let list: Vec<(Vec<i64>, Vec<u32>, bool)> = (0..games)
                .map(|r| {
                    let seated = (0..seats).map(|s| bots[(s + r) % seats]).collect();
                    let ranks = (0..seats).map(|_| 1 + rng.next_u32() % seats as u32).collect();
                    (seated, ranks, rng.next_u32() % 5 == 0)
                })
                .collect();
            let shape = GroupShape::of(list.iter().map(|(b, r, f)| (&b[..], &r[..], *f)));
            let text = shape.to_string();
            assert_eq!(text.parse::<GroupShape>().as_ref(), Ok(&shape), "{text}");
        }
    }
}
