//! A finishing order (best first) packed into one integer key: the fit counts
//! identical rankings once with a weight, and the separation test walks them.
//! Its own module so that both depend on it and neither on the other.

/// Most seats a game may have.
pub const MAX_SEATS: usize = 7;

/// Most players the packed ranking keys can name.
pub const MAX_PLAYERS: usize = 1 << 16;

pub(crate) fn pack(order: &[u32]) -> u128 {
    let mut key = order.len() as u128;
    for (j, &p) in order.iter().enumerate() {
        key |= u128::from(p) << (4 + 16 * j);
    }
    key
}

pub(crate) fn unpack(key: u128, out: &mut [u32; MAX_SEATS]) -> usize {
    let m = (key & 0xf) as usize;
    for (j, slot) in out.iter_mut().enumerate().take(m) {
        *slot = ((key >> (4 + 16 * j)) & 0xffff) as u32;
    }
    m
}
