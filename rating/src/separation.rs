//! Which players the results separate from the rest.
//!
//! Draw an arrow from `a` to `b` whenever `a` placed ahead of `b` in some game (a
//! shared place draws both arrows). The maximum-likelihood ratings are all finite
//! exactly when every player can reach every other along the arrows. Otherwise the
//! players fall into groups that can; the largest (by games) is the **core**. A player
//! that can reach the core but not be reached from it never lost to it — its rating
//! above the core has no upper end; one reached from the core that cannot reach it
//! never won against it.

use std::collections::VecDeque;

/// On which side a separated player's rating is unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Separation {
    /// It never placed behind anyone outside a set of players above the core: its
    /// rating has a lower bound only.
    NeverLost,
    /// Never ahead of anyone outside a set below the core: an upper bound only.
    NeverWon,
}

/// What the results separate: each player's separation and the strongly connected
/// group of players it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classes {
    /// Per player: `None` for the core, for a player without games and for one not
    /// connected to the core at all.
    pub separated: Vec<Option<Separation>>,
    /// Per player, a number shared by exactly the players that can reach each other
    /// (a separated player's own group: its games against them bound nothing).
    pub component: Vec<usize>,
    /// The core's component number (`usize::MAX` when nobody played).
    pub core: usize,
}

/// The separation of each of `n` players, from the packed rankings (best first) of
/// the games and the players' game counts.
pub fn classify(n: usize, orders: impl Iterator<Item = u128>, games: &[u64]) -> Classes {
    let mut ahead: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut order = [0u32; crate::order::MAX_SEATS];
    for key in orders {
        let m = crate::order::unpack(key, &mut order);
        for a in 0..m {
            for b in a + 1..m {
                ahead[order[a] as usize].push(order[b]);
            }
        }
    }
    for list in &mut ahead {
        list.sort_unstable();
        list.dedup();
    }
    let mut behind: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (a, list) in ahead.iter().enumerate() {
        for &b in list {
            behind[b as usize].push(a as u32);
        }
    }
    let played: Vec<usize> = (0..n).filter(|&i| games[i] > 0).collect();
    let component = components(&ahead, &behind);
    if played.is_empty() {
        return Classes {
            separated: vec![None; n],
            component,
            core: usize::MAX,
        };
    }
    // The core: the component with the most games. Among components with as many,
    // the one no other of them placed behind (a bot that beat another in their
    // only pair is the core, whichever was stored first); only components that
    // never met are told apart by their lowest player index.
    let mut weight = vec![0u64; n];
    for &i in &played {
        weight[component[i]] += games[i];
    }
    let heaviest = played.iter().map(|&i| weight[component[i]]).max().unwrap_or(0);
    let mut tied: Vec<usize> = played
        .iter()
        .map(|&i| component[i])
        .filter(|&c| weight[c] == heaviest)
        .collect();
    tied.sort_unstable();
    tied.dedup();
    let members_of =
        |c: usize| -> Vec<usize> { played.iter().copied().filter(|&i| component[i] == c).collect() };
    let lowest = |c: usize| {
        played
            .iter()
            .copied()
            .find(|&i| component[i] == c)
            .unwrap_or(usize::MAX)
    };
    let core = tied
        .iter()
        .copied()
        .filter(|&c| {
            let above = reach(&behind, &members_of(c));
            !tied
                .iter()
                .any(|&o| o != c && played.iter().any(|&i| component[i] == o && above[i]))
        })
        .min_by_key(|&c| lowest(c))
        .or_else(|| tied.iter().copied().min_by_key(|&c| lowest(c)))
        .unwrap_or(0);
    let members: Vec<usize> = played.iter().copied().filter(|&i| component[i] == core).collect();
    let below_core = reach(&ahead, &members);
    let above_core = reach(&behind, &members);
    let separated = (0..n)
        .map(|i| {
            if games[i] == 0 || component[i] == core {
                None
            } else if above_core[i] && !below_core[i] {
                Some(Separation::NeverLost)
            } else if below_core[i] && !above_core[i] {
                Some(Separation::NeverWon)
            } else {
                // Not connected to the core at all: nothing to bound it against.
                None
            }
        })
        .collect();
    Classes {
        separated,
        component,
        core,
    }
}

/// Who can be reached from `start` along `edges`.
fn reach(edges: &[Vec<u32>], start: &[usize]) -> Vec<bool> {
    let mut seen = vec![false; edges.len()];
    let mut queue: VecDeque<usize> = start.iter().copied().collect();
    for &s in start {
        seen[s] = true;
    }
    while let Some(a) = queue.pop_front() {
        for &b in &edges[a] {
            if !seen[b as usize] {
                seen[b as usize] = true;
                queue.push_back(b as usize);
            }
        }
    }
    seen
}

/// Strongly connected components (Kosaraju, without recursion): a component number
/// per player.
fn components(ahead: &[Vec<u32>], behind: &[Vec<u32>]) -> Vec<usize> {
    let n = ahead.len();
    let mut finished = Vec::with_capacity(n);
    let mut visited = vec![false; n];
    for root in 0..n {
        if visited[root] {
            continue;
        }
        visited[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&w) = ahead[v].get(*next) {
                *next += 1;
                if !visited[w as usize] {
                    visited[w as usize] = true;
                    stack.push((w as usize, 0));
                }
            } else {
                finished.push(v);
                stack.pop();
            }
        }
    }
    let mut component = vec![usize::MAX; n];
    for &root in finished.iter().rev() {
        if component[root] != usize::MAX {
            continue;
        }
        component[root] = root;
        let mut stack = vec![root];
        while let Some(v) = stack.pop() {
            for &w in &behind[v] {
                if component[w as usize] == usize::MAX {
                    component[w as usize] = root;
                    stack.push(w as usize);
                }
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::order::pack as key;

    #[test]
    fn a_player_that_never_lost_and_one_that_never_won_are_found() {
        // 0 beats everyone; 1 and 2 trade wins; 3 loses to everyone; 4 never played.
        let orders = [
            key(&[0, 1]),
            key(&[0, 2]),
            key(&[1, 2]),
            key(&[2, 1]),
            key(&[1, 3]),
            key(&[2, 3]),
            key(&[0, 3]),
        ];
        let s = classify(5, orders.into_iter(), &[3, 4, 4, 3, 0]).separated;
        assert_eq!(
            s,
            vec![
                Some(Separation::NeverLost),
                None,
                None,
                Some(Separation::NeverWon),
                None
            ]
        );
    }

    #[test]
    fn a_chain_above_the_core_and_a_shared_place_connect_as_they_should() {
        // 0 beats 1, 1 beats the core {2, 3}; 4 shares a place with 2 (both orders).
        let orders = [
            key(&[0, 1]),
            key(&[1, 2]),
            key(&[2, 3]),
            key(&[3, 2]),
            key(&[2, 4]),
            key(&[4, 2]),
        ];
        let s = classify(5, orders.into_iter(), &[1, 2, 5, 2, 2]).separated;
        assert_eq!(s[0], Some(Separation::NeverLost));
        assert_eq!(s[1], Some(Separation::NeverLost));
        assert_eq!(&s[2..], &[None, None, None]);
        // Three seats: 0 is first in every game, 2 last in every game.
        let three = [
            key(&[0, 1, 2]),
            key(&[0, 3, 2]),
            key(&[0, 1, 3]),
            key(&[3, 1, 2]),
            key(&[1, 3, 2]),
        ];
        let s = classify(4, three.into_iter(), &[3, 5, 4, 4]).separated;
        assert_eq!(
            s,
            vec![
                Some(Separation::NeverLost),
                None,
                Some(Separation::NeverWon),
                None
            ]
        );
    }

    #[test]
    fn connected_results_separate_nobody() {
        let orders = [key(&[0, 1]), key(&[1, 2]), key(&[2, 0])];
        assert_eq!(
            classify(3, orders.into_iter(), &[2, 2, 2]).separated,
            vec![None; 3]
        );
    }
}
