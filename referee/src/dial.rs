//! Where a gRPC bot may be dialled.
//!
//! A host's own gRPC bots are dialled where the host said ([`Dial::Anywhere`]).
//! An address a stranger named (an author's self-served bot on a ladder worker,
//! which is not sandboxed) is another matter: dialled as given, it would reach
//! the worker's loopback and the host's private network, and its failures would
//! tell a listening service from a closed port. So such a seat
//! ([`Dial::PublicOnly`]) is resolved once, dialled only at addresses that are
//! neither special-purpose ([`special`]) nor the machine's own, unless the host
//! allows their range ([`crate::Limits::remote_allow`]), and connected to the
//! very address checked ([`CheckedConnector`]) while TLS still verifies the host
//! name. Whatever fails is told as [`COULD_NOT_CONNECT`] alone.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};

/// How far the address of a gRPC seat is trusted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dial {
    /// The host named it (`--bot grpc://...`, `ladder admin register-bot`):
    /// dialled as given.
    #[default]
    Anywhere,
    /// A stranger named it (an author's uploaded remote bot): resolved once,
    /// dialled only at a public address or one in [`crate::Limits::remote_allow`],
    /// and any failure to connect is told as [`COULD_NOT_CONNECT`] alone.
    PublicOnly,
}

/// All a [`Dial::PublicOnly`] seat's author is told of a connection that did not
/// happen, whatever the reason (an address refused, a closed port, a timeout, a
/// certificate): so a check report cannot map the host's network.
pub const COULD_NOT_CONNECT: &str = "could not connect";

/// A range of IP addresses, `ADDRESS/PREFIX` (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpRange {
    network: IpAddr,
    prefix: u8,
}

/// Why a range was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// No `/PREFIX`.
    #[error("{0:?} is not ADDRESS/PREFIX (such as 10.0.0.0/8 or fd00::/8)")]
    NoPrefix(String),
    /// The address part is not an IP address.
    #[error("{0:?} is not an IPv4 or IPv6 address")]
    Address(String),
    /// The prefix is not a number of bits the address has.
    #[error("{text:?}: the prefix is a number of bits from 0 to {max}")]
    Prefix {
        /// The range as given.
        text: String,
        /// The address's bits.
        max: u8,
    },
    /// The address has bits set past the prefix: probably not the range meant.
    #[error("{text:?} has bits set past its /{prefix}: the range is {network}")]
    HostBits {
        /// The range as given.
        text: String,
        /// Its prefix.
        prefix: u8,
        /// The range those bits would make.
        network: IpRange,
    },
}

impl IpRange {
    const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> IpRange {
        IpRange {
            network: IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
            prefix,
        }
    }

    const fn v6(segments: [u16; 8], prefix: u8) -> IpRange {
        let [a, b, c, d, e, f, g, h] = segments;
        IpRange {
            network: IpAddr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h)),
            prefix,
        }
    }

    /// The range `network/prefix`.
    ///
    /// # Errors
    /// A prefix longer than the address, or bits set in `network` past it.
    pub fn new(network: IpAddr, prefix: u8) -> Result<IpRange, RangeError> {
        let text = format!("{network}/{prefix}");
        let max = bits(network);
        if prefix > max {
            return Err(RangeError::Prefix { text, max });
        }
        // A range written in IPv4-mapped IPv6 (`::ffff:10.0.0.0/104`) is the IPv4
        // range it names, as the addresses it is compared with are.
        let (network, prefix) = match network {
            IpAddr::V6(v6) if prefix >= 96 && v6.to_ipv4_mapped().is_some() => {
                (network.to_canonical(), prefix - 96)
            }
            _ => (network, prefix),
        };
        let masked = mask(network, prefix);
        if masked != network {
            return Err(RangeError::HostBits {
                text,
                prefix,
                network: IpRange {
                    network: masked,
                    prefix,
                },
            });
        }
        Ok(IpRange { network, prefix })
    }

    /// Whether `ip` (or the IPv4 address an IPv4-mapped `ip` stands for) is in
    /// the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        ip.is_ipv4() == self.network.is_ipv4() && mask(ip, self.prefix) == self.network
    }
}

fn bits(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// `ip` with every bit past the first `prefix` cleared.
fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

impl FromStr for IpRange {
    type Err = RangeError;

    fn from_str(text: &str) -> Result<IpRange, RangeError> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| RangeError::NoPrefix(text.to_owned()))?;
        let network: IpAddr = addr.parse().map_err(|_| RangeError::Address(addr.to_owned()))?;
        let prefix_error = || RangeError::Prefix {
            text: text.to_owned(),
            max: bits(network),
        };
        // Digits only: no sign, no space, no leading `+`.
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(prefix_error());
        }
        let prefix: u8 = prefix.parse().map_err(|_| prefix_error())?;
        IpRange::new(network, prefix).map_err(|e| match e {
            RangeError::HostBits { prefix, network, .. } => RangeError::HostBits {
                text: text.to_owned(),
                prefix,
                network,
            },
            RangeError::Prefix { max, .. } => RangeError::Prefix {
                text: text.to_owned(),
                max,
            },
            other => other,
        })
    }
}

impl fmt::Display for IpRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// IPv4 ranges that are no public host's (IANA's special-purpose registry, RFC 6890
/// and after), and what each is.
const SPECIAL_V4: &[(IpRange, &str)] = &[
    (IpRange::v4(0, 0, 0, 0, 8), "\"this network\" (unspecified)"),
    (IpRange::v4(10, 0, 0, 0, 8), "private"),
    (IpRange::v4(100, 64, 0, 0, 10), "shared address space (CGNAT)"),
    (IpRange::v4(127, 0, 0, 0, 8), "loopback"),
    (IpRange::v4(169, 254, 0, 0, 16), "link-local"),
    (IpRange::v4(172, 16, 0, 0, 12), "private"),
    (IpRange::v4(192, 0, 0, 0, 24), "IETF protocol assignments"),
    (IpRange::v4(192, 0, 2, 0, 24), "documentation"),
    (IpRange::v4(192, 88, 99, 0, 24), "6to4 relay anycast (deprecated)"),
    (IpRange::v4(192, 168, 0, 0, 16), "private"),
    (IpRange::v4(198, 18, 0, 0, 15), "benchmarking"),
    (IpRange::v4(198, 51, 100, 0, 24), "documentation"),
    (IpRange::v4(203, 0, 113, 0, 24), "documentation"),
    (IpRange::v4(224, 0, 0, 0, 4), "multicast"),
    // 255.255.255.255, the broadcast address, is in it.
    (IpRange::v4(240, 0, 0, 0, 4), "reserved (and broadcast)"),
];

/// IPv6 ranges that are no public host's, before the rule that every public
/// address is in 2000::/3.
const SPECIAL_V6: &[(IpRange, &str)] = &[
    (IpRange::v6([0; 8], 128), "unspecified"),
    (IpRange::v6([0, 0, 0, 0, 0, 0, 0, 1], 128), "loopback"),
    (
        IpRange::v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),
        "local-use IPv4/IPv6 translation",
    ),
    (
        IpRange::v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
        "private (unique local)",
    ),
    (IpRange::v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), "link-local"),
    (IpRange::v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), "multicast"),
    (
        IpRange::v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),
        "IETF protocol assignments (Teredo among them)",
    ),
    (
        IpRange::v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
        "documentation",
    ),
    (IpRange::v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), "documentation"),
];

/// Every public IPv6 address is in it; the rest is reserved.
const GLOBAL_UNICAST_V6: IpRange = IpRange::v6([0x2000, 0, 0, 0, 0, 0, 0, 0], 3);
/// IPv6 addresses that carry an IPv4 address a gateway forwards to: NAT64's
/// well-known prefix (the IPv4 address in the last 32 bits) and 6to4 (in bits
/// 16 to 48).
const NAT64_V6: IpRange = IpRange::v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96);
const SIX_TO_FOUR_V6: IpRange = IpRange::v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16);

/// The special-purpose range `ip` lies in, if any, and what it is: loopback,
/// private, link-local, multicast, unspecified, broadcast, documentation and
/// other reserved ranges, in IPv4 and IPv6; an IPv4-mapped address (and one
/// carried by NAT64 or 6to4) is judged as the IPv4 address it reaches.
pub fn special(ip: IpAddr) -> Option<(IpRange, &'static str)> {
    match ip.to_canonical() {
        IpAddr::V4(v4) => SPECIAL_V4
            .iter()
            .find(|(range, _)| range.contains(IpAddr::V4(v4)))
            .copied(),
        IpAddr::V6(v6) => {
            let ip = IpAddr::V6(v6);
            let n = u128::from(v6);
            if NAT64_V6.contains(ip) {
                return special(IpAddr::V4(Ipv4Addr::from(n as u32)));
            }
            if SIX_TO_FOUR_V6.contains(ip) {
                return special(IpAddr::V4(Ipv4Addr::from((n >> 80) as u32)));
            }
            SPECIAL_V6
                .iter()
                .find(|(range, _)| range.contains(ip))
                .copied()
                .or_else(|| {
                    (!GLOBAL_UNICAST_V6.contains(ip))
                        .then_some((GLOBAL_UNICAST_V6, "outside the global unicast range"))
                })
        }
    }
}

/// Why an address is not dialled for a [`Dial::PublicOnly`] seat.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A special-purpose address.
    #[error("{ip} is {what} ({range})")]
    Special {
        /// The address.
        ip: IpAddr,
        /// What its range is.
        what: &'static str,
        /// The range.
        range: IpRange,
    },
    /// An address of one of this machine's interfaces.
    #[error("{0} is an address of this machine")]
    Own(IpAddr),
}

/// Whether a [`Dial::PublicOnly`] seat may be dialled at `ip`: yes in a range the
/// host allows; else not at a special-purpose address, nor at one of `own`
/// (this machine's addresses, canonical).
///
/// # Errors
/// Why not.
pub fn check_public(ip: IpAddr, allowed: &[IpRange], own: &[IpAddr]) -> Result<(), Refused> {
    let ip = ip.to_canonical();
    if allowed.iter().any(|r| r.contains(ip)) {
        return Ok(());
    }
    if let Some((range, what)) = special(ip) {
        return Err(Refused::Special { ip, what, range });
    }
    if own.contains(&ip) {
        return Err(Refused::Own(ip));
    }
    Ok(())
}

/// This machine's own addresses, those of every interface, canonical: a public
/// one reaches this machine's services as surely as loopback does.
///
/// # Errors
/// The interfaces cannot be listed.
pub fn own_addresses() -> io::Result<Vec<IpAddr>> {
    let mut own = Vec::new();
    for iface in nix::ifaddrs::getifaddrs().map_err(io::Error::from)? {
        let Some(addr) = iface.address else { continue };
        if let Some(v4) = addr.as_sockaddr_in() {
            own.push(IpAddr::V4(v4.ip()));
        } else if let Some(v6) = addr.as_sockaddr_in6() {
            own.push(IpAddr::V6(v6.ip()).to_canonical());
        }
    }
    Ok(own)
}

/// Why a [`Dial::PublicOnly`] seat has no address to dial (for the host's log;
/// its author reads [`COULD_NOT_CONNECT`]).
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The URL has no host.
    #[error("no host in the address")]
    NoHost,
    /// The name did not resolve.
    #[error("{host} does not resolve: {source}")]
    Resolve {
        /// The name.
        host: String,
        /// Why.
        source: io::Error,
    },
    /// This machine's addresses could not be read, so none is dialled.
    #[error("this machine's own addresses cannot be read: {0}")]
    OwnAddresses(io::Error),
    /// Every address the name resolved to is refused.
    #[error("{host} resolves only to refused addresses: {}", list(.refused))]
    Refused {
        /// The name.
        host: String,
        /// Each address and why.
        refused: Vec<Refused>,
    },
}

fn list(refused: &[Refused]) -> String {
    refused
        .iter()
        .map(Refused::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Resolves `host` once and keeps the addresses a [`Dial::PublicOnly`] seat may
/// be dialled at, in the resolver's order. A name that resolves to some refused
/// addresses keeps the others (refused ones are logged).
///
/// # Errors
/// No host, no answer, or nothing but refused addresses.
pub async fn resolve_public(
    host: &str,
    port: u16,
    allowed: &[IpRange],
) -> Result<Vec<SocketAddr>, DialError> {
    // A URI writes an IPv6 address in brackets; the resolver takes it bare.
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.is_empty() {
        return Err(DialError::NoHost);
    }
    let found = tokio::net::lookup_host((bare, port))
        .await
        .map_err(|source| DialError::Resolve {
            host: bare.to_owned(),
            source,
        })?;
    let own = own_addresses().map_err(DialError::OwnAddresses)?;
    let (mut kept, mut refused) = (Vec::new(), Vec::new());
    for addr in found {
        match check_public(addr.ip(), allowed, &own) {
            Ok(()) if !kept.contains(&addr) => kept.push(addr),
            Ok(()) => {}
            Err(why) => refused.push(why),
        }
    }
    if kept.is_empty() {
        return Err(DialError::Refused {
            host: bare.to_owned(),
            refused,
        });
    }
    if !refused.is_empty() {
        tracing::warn!(host = bare, "not dialled: {}", list(&refused));
    }
    Ok(kept)
}

/// A connector that dials the addresses it was given and no other, whatever
/// host the channel's URI names: the URI keeps the bot's host name for TLS (the
/// name sent and the certificate checked), while the connection goes to an
/// address that was checked. A name whose DNS answer changes later (rebinding)
/// is never looked up again, on a reconnection either.
#[derive(Debug, Clone)]
pub struct CheckedConnector {
    addrs: Arc<[SocketAddr]>,
}

impl CheckedConnector {
    /// Dials `addrs`, in order, until one connects.
    pub fn new(addrs: Vec<SocketAddr>) -> CheckedConnector {
        CheckedConnector { addrs: addrs.into() }
    }
}

type Dialled = hyper_util::rt::TokioIo<tokio::net::TcpStream>;

impl tower_service::Service<tonic::transport::Uri> for CheckedConnector {
    type Response = Dialled;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Dialled>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: tonic::transport::Uri) -> Self::Future {
        let addrs = Arc::clone(&self.addrs);
        Box::pin(async move {
            let mut last = io::Error::new(io::ErrorKind::AddrNotAvailable, "no address to dial");
            for addr in addrs.iter() {
                match tokio::net::TcpStream::connect(addr).await {
                    Ok(stream) => {
                        stream.set_nodelay(true)?;
                        return Ok(hyper_util::rt::TokioIo::new(stream));
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn range(text: &str) -> IpRange {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn ranges_are_read_with_their_edges_and_refused_naming_the_problem() {
        let r = range("172.16.0.0/12");
        assert!(!r.contains(ip("172.15.255.255")));
        assert!(r.contains(ip("172.16.0.0")));
        assert!(r.contains(ip("172.31.255.255")));
        assert!(!r.contains(ip("172.32.0.0")));
        // An IPv4 range holds the IPv4-mapped forms of its addresses, not an IPv6
        // address that merely shares the bits.
        assert!(r.contains(ip("::ffff:172.20.1.1")));
        assert!(!r.contains(ip("::ac14:101")));
        assert_eq!(range("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert!(range("0.0.0.0/0").contains(ip("255.255.255.255")));
        assert!(!range("0.0.0.0/0").contains(ip("::1")));
        assert!(range("::/0").contains(ip("2001:db8::1")));
        assert!(range("10.1.2.3/32").contains(ip("10.1.2.3")));
        assert!(!range("10.1.2.3/32").contains(ip("10.1.2.4")));
        assert!(range("fd00::/8").contains(ip("fd12:3456::1")));
        assert!(!range("fd00::/8").contains(ip("fe00::1")));
        // A mapped range is the IPv4 range it names.
        assert_eq!(range("::ffff:10.0.0.0/104"), range("10.0.0.0/8"));
        assert!(range("::ffff:10.0.0.0/104").contains(ip("10.9.9.9")));

        for (text, says) in [
            (
                "10.0.0.0/33",
                "\"10.0.0.0/33\": the prefix is a number of bits from 0 to 32",
            ),
            (
                "::/129",
                "\"::/129\": the prefix is a number of bits from 0 to 128",
            ),
            ("10.0.0.0/-1", "from 0 to 32"),
            ("10.0.0.0/+8", "from 0 to 32"),
            ("10.0.0.0/", "from 0 to 32"),
            ("10.0.0.0/999999999999", "from 0 to 32"),
            (
                "10.0.0.1/8",
                "\"10.0.0.1/8\" has bits set past its /8: the range is 10.0.0.0/8",
            ),
            ("172.16.0.0/11", "the range is 172.0.0.0/11"),
            ("fd00::1/8", "the range is fd00::/8"),
            ("10.0.0.0", "\"10.0.0.0\" is not ADDRESS/PREFIX"),
            ("ten/8", "\"ten\" is not an IPv4 or IPv6 address"),
            ("10.0.0/8", "\"10.0.0\" is not an IPv4 or IPv6 address"),
            ("", "is not ADDRESS/PREFIX"),
        ] {
            let err = text.parse::<IpRange>().unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn special_addresses_are_refused_and_public_ones_dialled() {
        let refused = |text: &str| check_public(ip(text), &[], &[]).is_err();
        // Every refused range, at its first and last address, with a public
        // neighbour on each side where there is one.
        for (first, last, before, after) in [
            ("0.0.0.0", "0.255.255.255", None, Some("1.0.0.0")),
            (
                "10.0.0.0",
                "10.255.255.255",
                Some("9.255.255.255"),
                Some("11.0.0.0"),
            ),
            (
                "100.64.0.0",
                "100.127.255.255",
                Some("100.63.255.255"),
                Some("100.128.0.0"),
            ),
            (
                "127.0.0.0",
                "127.255.255.255",
                Some("126.255.255.255"),
                Some("128.0.0.0"),
            ),
            (
                "169.254.0.0",
                "169.254.255.255",
                Some("169.253.255.255"),
                Some("169.255.0.0"),
            ),
            (
                "172.16.0.0",
                "172.31.255.255",
                Some("172.15.255.255"),
                Some("172.32.0.0"),
            ),
            (
                "192.0.0.0",
                "192.0.0.255",
                Some("191.255.255.255"),
                Some("192.0.1.0"),
            ),
            ("192.0.2.0", "192.0.2.255", Some("192.0.1.255"), Some("192.0.3.0")),
            (
                "192.88.99.0",
                "192.88.99.255",
                Some("192.88.98.255"),
                Some("192.88.100.0"),
            ),
            (
                "192.168.0.0",
                "192.168.255.255",
                Some("192.167.255.255"),
                Some("192.169.0.0"),
            ),
            (
                "198.18.0.0",
                "198.19.255.255",
                Some("198.17.255.255"),
                Some("198.20.0.0"),
            ),
            (
                "198.51.100.0",
                "198.51.100.255",
                Some("198.51.99.255"),
                Some("198.51.101.0"),
            ),
            (
                "203.0.113.0",
                "203.0.113.255",
                Some("203.0.112.255"),
                Some("203.0.114.0"),
            ),
            ("224.0.0.0", "239.255.255.255", Some("223.255.255.255"), None),
            ("240.0.0.0", "255.255.255.255", None, None),
            ("::", "::", None, None),
            ("::1", "::1", None, None),
            ("fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None, None),
            ("fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None, None),
            ("ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", None, None),
            (
                "2001::",
                "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff",
                Some("2000:ffff::"),
                Some("2001:200::"),
            ),
            (
                "2001:db8::",
                "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
                Some("2001:db7::"),
                Some("2001:db9::"),
            ),
            (
                "3fff::",
                "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff",
                Some("3ffe::"),
                None,
            ),
            ("64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", None, None),
        ] {
            assert!(refused(first), "{first}");
            assert!(refused(last), "{last}");
            for public in before.into_iter().chain(after) {
                assert!(!refused(public), "{public} is public");
            }
        }
        for (text, says) in [
            ("127.0.0.1", "127.0.0.1 is loopback (127.0.0.0/8)"),
            ("10.255.255.1", "10.255.255.1 is private (10.0.0.0/8)"),
            ("172.16.0.0", "172.16.0.0 is private (172.16.0.0/12)"),
            ("100.100.100.100", "shared address space (CGNAT) (100.64.0.0/10)"),
            ("169.254.169.254", "link-local (169.254.0.0/16)"),
            ("255.255.255.255", "reserved (and broadcast) (240.0.0.0/4)"),
            ("0.0.0.0", "unspecified"),
            ("::", ":: is unspecified (::/128)"),
            ("::1", "::1 is loopback (::1/128)"),
            ("fd12::1", "private (unique local) (fc00::/7)"),
            ("fe80::1", "link-local (fe80::/10)"),
            ("ff02::1", "multicast (ff00::/8)"),
            // IPv4-mapped forms are judged as the IPv4 address they reach.
            ("::ffff:127.0.0.1", "127.0.0.1 is loopback (127.0.0.0/8)"),
            ("::ffff:10.0.0.1", "10.0.0.1 is private (10.0.0.0/8)"),
            ("::ffff:192.168.1.1", "192.168.1.1 is private (192.168.0.0/16)"),
            ("::ffff:169.254.169.254", "link-local"),
            // NAT64 and 6to4 lead to the IPv4 address they carry.
            ("64:ff9b::a00:1", "64:ff9b::a00:1 is private (10.0.0.0/8)"),
            ("2002:7f00:1::", "loopback (127.0.0.0/8)"),
            // The old IPv4-compatible form, and anything else outside 2000::/3.
            ("::127.0.0.1", "outside the global unicast range (2000::/3)"),
            ("4000::1", "outside the global unicast range (2000::/3)"),
        ] {
            let err = check_public(ip(text), &[], &[]).unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "::ffff:8.8.8.8",
            "2606:4700:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(check_public(ip(public), &[], &[]), Ok(()), "{public}");
        }
    }

    #[test]
    fn the_hosts_ranges_are_dialled_and_its_own_addresses_are_not() {
        let own = [ip("203.0.114.7"), ip("2a01:4f8::7")];
        assert_eq!(
            check_public(ip("203.0.114.7"), &[], &own)
                .unwrap_err()
                .to_string(),
            "203.0.114.7 is an address of this machine"
        );
        assert!(check_public(ip("::ffff:203.0.114.7"), &[], &own).is_err());
        assert!(check_public(ip("2a01:4f8::7"), &[], &own).is_err());
        assert_eq!(check_public(ip("203.0.114.8"), &[], &own), Ok(()));
        let allowed = [range("127.0.0.0/8"), range("10.1.0.0/16")];
        for ok in ["127.0.0.1", "::ffff:127.0.0.1", "10.1.255.255"] {
            assert_eq!(check_public(ip(ok), &allowed, &own), Ok(()), "{ok}");
        }
        for still in ["10.2.0.0", "::1", "192.168.1.1"] {
            assert!(check_public(ip(still), &allowed, &own).is_err(), "{still}");
        }
        // A range may hold the machine's own public address, on purpose.
        assert_eq!(
            check_public(ip("203.0.114.7"), &[range("203.0.114.0/24")], &own),
            Ok(())
        );
        assert!(own_addresses().is_ok());
    }

    #[test]
    fn a_name_is_resolved_once_and_only_allowed_addresses_are_kept() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let refused = rt.block_on(resolve_public("127.0.0.1", 9, &[])).unwrap_err();
        assert!(refused.to_string().contains("127.0.0.1 is loopback"), "{refused}");
        let mapped = rt
            .block_on(resolve_public("[::ffff:127.0.0.1]", 9, &[]))
            .unwrap_err();
        assert!(mapped.to_string().contains("127.0.0.1 is loopback"), "{mapped}");
        let kept = rt
            .block_on(resolve_public("127.0.0.1", 9, &[range("127.0.0.0/8")]))
            .unwrap();
        assert_eq!(kept, [SocketAddr::from(([127, 0, 0, 1], 9))]);
        assert!(matches!(
            rt.block_on(resolve_public("", 9, &[])),
            Err(DialError::NoHost)
        ));
    }
}
