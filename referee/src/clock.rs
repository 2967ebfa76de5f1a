//! Time controls. A seat's clock runs from the moment its request is flushed to the
//! moment its reply's newline arrives.

use std::time::Duration;

/// How much time a bot has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeControl {
    /// The same time for every move.
    MoveTime(Duration),
    /// A clock per seat: `base` at the start, `inc` added after each move.
    Clock {
        /// Starting time.
        base: Duration,
        /// Added after each move.
        inc: Duration,
    },
}

/// Longest time per move: an hour (a deadline must stay a time the clock can
/// hold, and no game here needs more).
pub const MAX_MOVE_MS: u64 = 3_600_000;
/// Longest clock: a day.
pub const MAX_CLOCK_SECONDS: f64 = 86_400.0;
/// Largest increment: an hour.
pub const MAX_INCREMENT_SECONDS: f64 = 3_600.0;

impl TimeControl {
    /// A fixed time per move, from 1 ms to [`MAX_MOVE_MS`].
    ///
    /// # Errors
    /// A time outside that range, named.
    pub fn move_time(ms: u64) -> Result<TimeControl, String> {
        if !(1..=MAX_MOVE_MS).contains(&ms) {
            return Err(format!(
                "a time per move of {ms} ms is outside 1..={MAX_MOVE_MS} ms (an hour)"
            ));
        }
        Ok(TimeControl::MoveTime(Duration::from_millis(ms)))
    }

    /// Reads `base+inc` in seconds (`10+0.1`, `60`): a base above 0 and up to a day,
    /// an increment up to an hour.
    ///
    /// # Errors
    /// A message saying the expected form or the range.
    pub fn parse_clock(text: &str) -> Result<TimeControl, String> {
        let secs = |s: &str, max: f64, what: &str| {
            let v = s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    format!("time control {text:?} is not base+increment in seconds, e.g. 10+0.1")
                })?;
            if !(0.0..=max).contains(&v) {
                return Err(format!(
                    "time control {text:?}: the {what} {v} s is outside 0..={max} s"
                ));
            }
            Ok(Duration::from_secs_f64(v))
        };
        let (base, inc) = text.split_once('+').unwrap_or((text, "0"));
        let base = secs(base, MAX_CLOCK_SECONDS, "base")?;
        if base < Duration::from_millis(1) {
            return Err(format!("time control {text:?} gives no time"));
        }
        Ok(TimeControl::Clock {
            base,
            inc: secs(inc, MAX_INCREMENT_SECONDS, "increment")?,
        })
    }
}

/// A time control as one word, as a ladder stores it and a lease carries it:
/// `movetime=MS`, or `tc=BASE+INC` in seconds.
impl std::fmt::Display for TimeControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeControl::MoveTime(t) => write!(f, "movetime={}", t.as_millis()),
            TimeControl::Clock { base, inc } => {
                write!(f, "tc={}+{}", base.as_secs_f64(), inc.as_secs_f64())
            }
        }
    }
}

impl std::str::FromStr for TimeControl {
    type Err = String;

    /// Reads what `Display` writes, with the ranges of [`TimeControl::move_time`]
    /// and [`TimeControl::parse_clock`].
    fn from_str(text: &str) -> Result<TimeControl, String> {
        if let Some(ms) = text.strip_prefix("movetime=") {
            let ms: u64 = ms
                .parse()
                .map_err(|_| format!("time {text:?}: movetime takes whole milliseconds"))?;
            TimeControl::move_time(ms)
        } else if let Some(tc) = text.strip_prefix("tc=") {
            TimeControl::parse_clock(tc)
        } else {
            Err(format!("time {text:?} is neither movetime=MS nor tc=BASE+INC"))
        }
    }
}

/// In JSON, the word `Display` writes.
impl serde::Serialize for TimeControl {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for TimeControl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<TimeControl, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Default for TimeControl {
    fn default() -> Self {
        TimeControl::MoveTime(Duration::from_secs(5))
    }
}

/// All the deadlines the referee enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Time for moves.
    pub tc: TimeControl,
    /// Slack on top of every move deadline, for pipes and scheduling.
    pub margin: Duration,
    /// Time for the handshake (starting the program included).
    pub handshake: Duration,
    /// Time to answer `isready`.
    pub ping: Duration,
    /// Time a bot has to exit after `quit` before it is killed.
    pub quit_grace: Duration,
    /// Time to deliver a message that needs no answer (`gameover`, `quit`) over a
    /// pipe: a bot that does not take a few bytes by then is not waited for.
    pub notice: Duration,
    /// Time for a gRPC call that needs no answer (`GameOver`): a network round
    /// trip, so longer than [`Limits::notice`].
    pub remote_notice: Duration,
    /// How long past a move's deadline the referee waits for a gRPC call to
    /// return, so that the call's own deadline fires first and the fault says the
    /// bot was late rather than that the referee stopped waiting.
    pub remote_slack: Duration,
    /// How long a gRPC seat's connection may go undriven between its calls before
    /// the session's keeper thread keeps it answering (the server's pings, flow control, a
    /// goodbye), so a server that closes silent connections keeps the seat's.
    pub remote_keep: Duration,
    /// How bot processes are contained, and their resource limits.
    pub sandbox: crate::sandbox::Sandbox,
    /// The certificate authority (PEM) a `grpcs://` bot's certificate must chain
    /// to; without one, the system's root certificates.
    pub grpc_ca: Option<std::sync::Arc<[u8]>>,
    /// Ranges a gRPC seat that may be dialled only at public addresses
    /// ([`crate::dial::Dial::PublicOnly`]: an author's uploaded remote bot) may
    /// be dialled at all the same (`ladder worker --remote-allow`): a test's
    /// loopback, a host whose authors' bots run on its own network. Seats the
    /// host named are dialled anywhere, whatever this says.
    pub remote_allow: Vec<crate::dial::IpRange>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            tc: TimeControl::default(),
            margin: Duration::from_millis(100),
            handshake: Duration::from_secs(10),
            ping: Duration::from_secs(5),
            quit_grace: Duration::from_millis(500),
            notice: Duration::from_millis(200),
            remote_notice: Duration::from_millis(500),
            remote_slack: Duration::from_millis(200),
            remote_keep: Duration::from_millis(200),
            sandbox: crate::sandbox::Sandbox::default(),
            grpc_ca: None,
            remote_allow: Vec::new(),
        }
    }
}

/// One seat's clock.
#[derive(Debug, Clone, Copy)]
pub struct SeatClock {
    remaining: Duration,
}

impl SeatClock {
    /// A fresh clock.
    pub fn new(tc: &TimeControl) -> SeatClock {
        SeatClock {
            remaining: match tc {
                TimeControl::MoveTime(_) => Duration::ZERO,
                TimeControl::Clock { base, .. } => *base,
            },
        }
    }

    /// Time the bot may use for this move (before the margin).
    pub fn allowance(&self, tc: &TimeControl) -> Duration {
        match tc {
            TimeControl::MoveTime(t) => *t,
            TimeControl::Clock { .. } => self.remaining,
        }
    }

    /// Time left on the clock, if the control has a clock.
    pub fn remaining(&self, tc: &TimeControl) -> Option<Duration> {
        matches!(tc, TimeControl::Clock { .. }).then_some(self.remaining)
    }

    /// Charges a move that took `used`.
    pub fn charge(&mut self, tc: &TimeControl, used: Duration) {
        if let TimeControl::Clock { inc, .. } = tc {
            self.remaining = self.remaining.saturating_sub(used) + *inc;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_text_and_charging() {
        let tc = TimeControl::parse_clock("10+0.5").unwrap();
        assert_eq!(
            tc,
            TimeControl::Clock {
                base: Duration::from_secs(10),
                inc: Duration::from_millis(500)
            }
        );
        let mut c = SeatClock::new(&tc);
        c.charge(&tc, Duration::from_secs(3));
        assert_eq!(c.allowance(&tc), Duration::from_millis(7500));
        c.charge(&tc, Duration::from_secs(60));
        assert_eq!(
            c.remaining(&tc),
            Some(Duration::from_millis(500)),
            "never below zero, then the increment"
        );
        assert!(TimeControl::parse_clock("ten").is_err());
        assert!(TimeControl::parse_clock("0+1").is_err());
        assert_eq!(
            TimeControl::parse_clock("60").unwrap(),
            TimeControl::Clock {
                base: Duration::from_secs(60),
                inc: Duration::ZERO
            }
        );
    }

    #[test]
    fn a_time_control_reads_back_what_it_writes() {
        for text in [
            "movetime=1",
            "movetime=3600000",
            "tc=10+0.1",
            "tc=60+0",
            "tc=0.25+3600",
        ] {
            let tc: TimeControl = text.parse().unwrap();
            assert_eq!(tc.to_string(), text);
            assert_eq!(tc.to_string().parse::<TimeControl>().unwrap(), tc);
        }
        assert_eq!(
            "tc=10+0.10".parse::<TimeControl>().unwrap().to_string(),
            "tc=10+0.1",
            "the same clock however it was written"
        );
        for (bad, says) in [
            ("movetime=0", "outside 1..="),
            ("movetime=1.5", "whole milliseconds"),
            ("movetime=", "whole milliseconds"),
            ("tc=0+1", "gives no time"),
            ("tc=1+1e9", "outside 0..="),
            ("fast", "neither movetime=MS nor tc=BASE+INC"),
            ("10+0.1", "neither movetime=MS nor tc=BASE+INC"),
            ("", "neither movetime=MS nor tc=BASE+INC"),
        ] {
            let err = bad.parse::<TimeControl>().unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }

    #[test]
    fn clocks_outside_their_range_are_refused_by_name() {
        assert!(
            TimeControl::parse_clock("1e300+0")
                .unwrap_err()
                .contains("outside")
        );
        assert!(TimeControl::parse_clock("10+1e300").is_err());
        assert!(TimeControl::move_time(u64::MAX).is_err());
        assert!(TimeControl::parse_clock("10+0.1").is_ok());
    }
}
