//! Sign-in slowed after failures: a token bucket per address (an IPv6 address
//! by its /64, what one machine is usually given) and per token tried. Each
//! failure takes one from both of its buckets; a bucket refills one every
//! [`SignInLimits::refill`] up to [`SignInLimits::burst`]; a sign-in whose
//! address or token has an empty bucket is not tried, and is told how long to
//! wait (HTTP 429 with `Retry-After`). Before, 1,000 wrong tokens were tried in
//! 1.3 s with no slowing.
//!
//! Memory is bounded: each map keeps at most [`MAX_KEYS`] buckets; past it the
//! buckets that refilled are forgotten, and if none did, all of that map's are
//! (the other map still holds: a flood of tokens from one address is stopped
//! by its address's bucket).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

/// How many failed sign-ins are let through, and how fast the allowance comes
/// back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInLimits {
    /// Failures in a row let through from one address, or with one token.
    pub burst: u32,
    /// One more failure is let through per this long.
    pub refill: Duration,
}

impl Default for SignInLimits {
    /// Five failures, then one every 12 s (300 an hour at most per address).
    fn default() -> SignInLimits {
        SignInLimits {
            burst: 5,
            refill: Duration::from_secs(12),
        }
    }
}

/// Most buckets one map keeps.
pub const MAX_KEYS: usize = 65_536;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Failures still let through, as of `at_ms`.
    level: f64,
    /// By the ladder's clock ([`crate::clock::Clock`]), so a test moves it.
    at_ms: i64,
}

/// The two maps of buckets.
#[derive(Debug)]
pub struct SignInThrottle {
    limits: SignInLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    addresses: HashMap<IpAddr, Bucket>,
    tokens: HashMap<[u8; 32], Bucket>,
}

/// The address a bucket is kept for: an IPv4 address, or an IPv6 address's
/// first 64 bits (an IPv4 address mapped into IPv6 as itself).
fn address_key(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

fn token_key(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

impl SignInThrottle {
    /// A throttle with these limits and no failures yet.
    pub fn new(limits: SignInLimits) -> SignInThrottle {
        SignInThrottle {
            limits,
            state: Mutex::new(State::default()),
        }
    }

    /// A bucket's level at `now_ms` (a clock set back refills nothing).
    fn level(&self, b: &Bucket, now_ms: i64) -> f64 {
        let burst = f64::from(self.limits.burst);
        let elapsed_s = now_ms.saturating_sub(b.at_ms).max(0) as f64 / 1000.0;
        let refilled = elapsed_s / self.limits.refill.as_secs_f64().max(1e-9);
        (b.level + refilled).min(burst)
    }

    /// How long until a bucket at `level` lets one more through.
    fn wait(&self, level: f64) -> Duration {
        self.limits.refill.mul_f64((1.0 - level).max(0.0))
    }

    /// Whether a sign-in from `addr` with `token` may be tried at `now_ms`
    /// (the ladder's clock); if not, how long to wait.
    ///
    /// # Errors
    /// The wait, when the address's or the token's bucket is empty.
    pub fn check(&self, addr: IpAddr, token: &str, now_ms: i64) -> Result<(), Duration> {
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let by_address = state
            .addresses
            .get(&address_key(addr))
            .map(|b| self.level(b, now_ms));
        let by_token = state.tokens.get(&token_key(token)).map(|b| self.level(b, now_ms));
        let lowest = by_address
            .into_iter()
            .chain(by_token)
            .fold(f64::INFINITY, f64::min);
        if lowest < 1.0 {
            Err(self.wait(lowest))
        } else {
            Ok(())
        }
    }

    /// A failed sign-in from `addr` with `token` at `now_ms`: one less from both.
    pub fn failed(&self, addr: IpAddr, token: &str, now_ms: i64) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let State { addresses, tokens } = &mut *state;
        self.take(addresses, address_key(addr), now_ms);
        self.take(tokens, token_key(token), now_ms);
    }

    fn take<K: std::hash::Hash + Eq>(&self, map: &mut HashMap<K, Bucket>, key: K, now_ms: i64) {
        if map.len() >= MAX_KEYS && !map.contains_key(&key) {
            let burst = f64::from(self.limits.burst);
            map.retain(|_, b| self.level(b, now_ms) < burst);
            if map.len() >= MAX_KEYS {
                map.clear();
            }
        }
        let level = map
            .get(&key)
            .map_or(f64::from(self.limits.burst), |b| self.level(b, now_ms));
        map.insert(
            key,
            Bucket {
                level: (level - 1.0).max(0.0),
                at_ms: now_ms,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// An address is let through `burst` failures, then told to wait, and let
    /// through one more per `refill`; other addresses are not held by it, nor
    /// are addresses in another /64; the same /64 is one address.
    #[test]
    fn an_address_is_slowed_after_its_failures_and_only_it() {
        let limits = SignInLimits {
            burst: 3,
            refill: Duration::from_secs(10),
        };
        let t = SignInThrottle::new(limits);
        let start = 1_700_000_000_000_i64;
        let a = ip("203.0.113.7");
        for k in 0..3 {
            assert_eq!(t.check(a, &format!("wrong{k}"), start), Ok(()), "failure {k}");
            t.failed(a, &format!("wrong{k}"), start);
        }
        let wait = t.check(a, "another", start).unwrap_err();
        assert_eq!(wait, Duration::from_secs(10));
        assert_eq!(t.check(a, "another", start + 4_000), Err(Duration::from_secs(6)));
        assert_eq!(t.check(a, "another", start + 10_000), Ok(()));
        // A clock set back refills nothing.
        assert_eq!(t.check(a, "another", start - 5_000), Err(Duration::from_secs(10)));
        assert_eq!(t.check(ip("203.0.113.8"), "another", start), Ok(()));
        // IPv6: the /64 is the address.
        let v6 = ip("2001:db8:1:2::1");
        for k in 0..3 {
            t.failed(v6, &format!("six{k}"), start);
        }
        assert!(t.check(ip("2001:db8:1:2:ffff::9"), "x", start).is_err());
        assert_eq!(t.check(ip("2001:db8:1:3::1"), "x", start), Ok(()));
        // An IPv4 address mapped into IPv6 is itself.
        assert!(t.check(ip("::ffff:203.0.113.7"), "x", start).is_err());
    }

    /// One token tried and failed from many addresses is slowed by the token's
    /// own bucket.
    #[test]
    fn a_token_is_slowed_after_its_failures_from_any_address() {
        let t = SignInThrottle::new(SignInLimits {
            burst: 2,
            refill: Duration::from_secs(60),
        });
        let now = 1_700_000_000_000_i64;
        t.failed(ip("198.51.100.1"), "leaked", now);
        t.failed(ip("198.51.100.2"), "leaked", now);
        assert_eq!(
            t.check(ip("198.51.100.3"), "leaked", now),
            Err(Duration::from_secs(60))
        );
        assert_eq!(t.check(ip("198.51.100.3"), "other", now), Ok(()));
    }

    /// Past [`MAX_KEYS`] buckets a map forgets, never grows.
    #[test]
    fn the_maps_stay_bounded() {
        let t = SignInThrottle::new(SignInLimits::default());
        let now = 1_700_000_000_000_i64;
        for k in 0..(MAX_KEYS as u32 + 10) {
            t.failed(IpAddr::V4(k.into()), &k.to_string(), now);
        }
        let state = t.state.lock().unwrap();
        assert!(state.addresses.len() <= MAX_KEYS && state.tokens.len() <= MAX_KEYS);
    }
}
