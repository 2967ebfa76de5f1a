//! Seeds the referee picks itself.
//!
//! A seed decides every die of a game, so one a bot could guess is one it can
//! play against: seeds the system picks are 64 bits from the operating system's
//! random source, never a count or a clock, and each is written in the record (and
//! printed) so the game can be replayed. A host who gives `--seed` gets exactly that
//! game (or match) again.

/// 64 bits from the operating system's random source.
///
/// # Panics
/// If the operating system has no random source to give (then no seed is safe, and
/// no game should start).
pub fn os_seed() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source is unavailable");
    u64::from_le_bytes(bytes)
}

/// The seed a run plays from: the host's `--seed`, or else one from the operating
/// system. A match's group `g` plays [`engine::group_seed`]`(seed, g)`, so the
/// records show only group seeds, and the host, who is shown this one, can play the
/// whole run again.
pub fn seed_or_random(given: Option<u64>) -> u64 {
    given.unwrap_or_else(os_seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_seeds_differ_and_given_seeds_stay() {
        let drawn: std::collections::HashSet<u64> = (0..64).map(|_| os_seed()).collect();
        assert_eq!(drawn.len(), 64);
        assert_eq!(seed_or_random(Some(9)), 9);
        assert_ne!(seed_or_random(None), seed_or_random(None));
    }
}
