//! Seats and sets of seats.

use std::fmt;

/// A seat at the table, numbered from 0 in turn order.
pub type Seat = usize;

/// The most seats any game supports.
pub const MAX_SEATS: usize = 6;

/// A small set of seats (a bit mask), used to say who must decide now.
///
/// An empty set means nobody must decide: the game is over.
///
/// ```
/// use engine::SeatSet;
/// let both = SeatSet::single(0).with(1);
/// assert!(both.contains(1));
/// assert_eq!(both.iter().collect::<Vec<_>>(), vec![0, 1]);
/// assert!(SeatSet::EMPTY.is_empty());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeatSet(u8);

impl SeatSet {
    /// No seat.
    pub const EMPTY: SeatSet = SeatSet(0);

    /// The set holding only `seat`.
    pub const fn single(seat: Seat) -> SeatSet {
        SeatSet(1 << seat)
    }

    /// Seats `0..n`.
    pub const fn first_n(n: usize) -> SeatSet {
        SeatSet(((1u16 << n) - 1) as u8)
    }

    /// This set with `seat` added.
    #[must_use]
    pub const fn with(self, seat: Seat) -> SeatSet {
        SeatSet(self.0 | (1 << seat))
    }

    /// This set with `seat` removed.
    #[must_use]
    pub const fn without(self, seat: Seat) -> SeatSet {
        SeatSet(self.0 & !(1 << seat))
    }

    /// Whether `seat` is in the set.
    pub const fn contains(self, seat: Seat) -> bool {
        seat < 8 && self.0 & (1 << seat) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many seats are in the set.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The lowest seat in the set.
    pub const fn first(self) -> Option<Seat> {
        if self.0 == 0 {
            None
        } else {
            Some(self.0.trailing_zeros() as Seat)
        }
    }

    /// The seats in increasing order.
    pub fn iter(self) -> impl Iterator<Item = Seat> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let seat = bits.trailing_zeros() as Seat;
            bits &= bits - 1;
            Some(seat)
        })
    }
}

impl fmt::Debug for SeatSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<Seat> for SeatSet {
    fn from_iter<I: IntoIterator<Item = Seat>>(iter: I) -> Self {
        iter.into_iter().fold(SeatSet::EMPTY, SeatSet::with)
    }
}
