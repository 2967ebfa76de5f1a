//! Who sits where in a mirrored group: the one seating rule.
//!
//! A group is one seed played once per rotation. Its entrants have an *order* (the
//! seats of rotation 0); rotation `r` seats entrant `order[(s + r) % n]` in seat
//! `s`, so every entrant meets the same dice from every seat. Rotations keep who
//! sits right after whom, which with 3+ seats can decide matches (in Utara the next
//! player takes what you leave), so the order of some groups is reversed: in a
//! match every odd group, in a ladder whichever orientation evens out who has
//! followed whom so far ([`balanced_order`]).

/// The index in the group's order of the entrant that plays `seat` in `rotation`.
pub fn entrant_index(rotation: usize, seat: usize, seats: usize) -> usize {
    (seat + rotation) % seats
}

/// The entrants of each seat in `rotation`, from the group's order.
pub fn seated<T: Clone>(order: &[T], rotation: usize) -> Vec<T> {
    (0..order.len())
        .map(|s| order[entrant_index(rotation, s, order.len())].clone())
        .collect()
}

/// The order of group `group` of a match between fixed entrants: as given, and
/// reversed in odd groups when there are 3+ seats.
pub fn match_order(seats: usize, group: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..seats).collect();
    if seats >= 3 && group % 2 == 1 {
        order.reverse();
    }
    order
}

/// `chosen` (a group's entrants, in the scheduler's order) or its reverse, whichever
/// has its entrants follow each other less often in `earlier` groups' orders: over
/// a competition, each entrant sits right after each other about as often as right
/// before it. Two seats are left as they are (their rotations already cover both).
pub fn balanced_order<'a>(chosen: Vec<i64>, earlier: impl IntoIterator<Item = &'a [i64]>) -> Vec<i64> {
    if chosen.len() < 3 {
        return chosen;
    }
    let mut follows = Follows::new();
    for order in earlier {
        count_follows(&mut follows, order, 1);
    }
    balanced_order_by(chosen, &follows)
}

/// How often each entrant sat right after another in the groups so far, keyed
/// `(before, after)`: what [`balanced_order_by`] evens out.
pub type Follows = std::collections::HashMap<(i64, i64), i64>;

/// Adds one group's seat order to `follows` (`by` -1 takes it back out).
pub fn count_follows(follows: &mut Follows, order: &[i64], by: i64) {
    if order.len() < 3 {
        return;
    }
    for pair in cyclic_pairs(order) {
        *follows.entry(pair).or_default() += by;
    }
}

/// [`balanced_order`] with the counts of the earlier groups already summed, for a
/// scheduler that keeps them as groups arrive.
pub fn balanced_order_by(chosen: Vec<i64>, follows: &Follows) -> Vec<i64> {
    if chosen.len() < 3 {
        return chosen;
    }
    let score = |order: &[i64]| -> i64 {
        cyclic_pairs(order)
            .map(|p| follows.get(&p).copied().unwrap_or(0))
            .sum()
    };
    let mut reversed = chosen.clone();
    reversed.reverse();
    if score(&reversed) < score(&chosen) {
        reversed
    } else {
        chosen
    }
}

/// Each entrant and the one right after it, round the table (turns go round).
pub fn cyclic_pairs(order: &[i64]) -> impl Iterator<Item = (i64, i64)> + '_ {
    (0..order.len()).map(move |i| (order[i], order[(i + 1) % order.len()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_give_every_entrant_every_seat() {
        let order = ["a", "b", "c"];
        assert_eq!(seated(&order, 0), ["a", "b", "c"]);
        assert_eq!(seated(&order, 1), ["b", "c", "a"]);
        assert_eq!(seated(&order, 2), ["c", "a", "b"]);
        for seat in 0..3 {
            let mut who: Vec<usize> = (0..3).map(|r| entrant_index(r, seat, 3)).collect();
            who.sort_unstable();
            assert_eq!(who, [0, 1, 2]);
        }
    }

    #[test]
    fn odd_match_groups_reverse_the_order_with_three_seats_or_more() {
        let at = |group, rotation, n| -> Vec<usize> { seated(&match_order(n, group), rotation) };
        assert_eq!(at(0, 0, 3), [0, 1, 2]);
        assert_eq!(at(1, 0, 3), [2, 1, 0]);
        assert_eq!(at(1, 1, 3), [1, 0, 2]);
        // Two seats: rotations already cover both orders.
        assert_eq!(at(1, 1, 2), [1, 0]);
    }

    #[test]
    fn balanced_orders_even_out_who_follows_whom() {
        // The scheduler keeps choosing the same three bots in the same order.
        let mut orders: Vec<Vec<i64>> = Vec::new();
        for _ in 0..10 {
            let next = balanced_order(vec![1, 2, 3], orders.iter().map(Vec::as_slice));
            orders.push(next);
        }
        let mut follows = std::collections::HashMap::new();
        for o in &orders {
            for p in cyclic_pairs(o) {
                *follows.entry(p).or_insert(0) += 1;
            }
        }
        for (a, b) in [(1, 2), (2, 3), (3, 1)] {
            assert_eq!(follows[&(a, b)], follows[&(b, a)], "{follows:?}");
        }
        assert_eq!(balanced_order(vec![5, 4], [[4i64, 5].as_slice()]), [5, 4]);
    }
}
