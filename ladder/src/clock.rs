//! The time the ladder's decisions read: the system's, or one a test sets and
//! moves (the seam through which a test walks a season past its deadline
//! without waiting for it).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Milliseconds since the Unix epoch, from the system or from a hand a test holds.
/// Clones share one hand.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system's time.
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A clock that reads `start_ms` until it is moved.
    pub fn manual(start_ms: i64) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(start_ms))),
        }
    }

    /// Now, in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match &self.manual {
            Some(at) => at.load(Ordering::SeqCst),
            None => system_ms(),
        }
    }

    /// Moves a manual clock on by `by` (the system's clock is not ours to move:
    /// nothing happens).
    pub fn advance(&self, by: Duration) {
        if let Some(at) = &self.manual {
            at.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
        }
    }
}

/// The system's time in milliseconds since the Unix epoch (0 before it).
pub fn system_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_its_clones_share_it() {
        let clock = Clock::manual(1_000);
        let twin = clock.clone();
        assert_eq!(clock.now_ms(), 1_000);
        twin.advance(Duration::from_secs(2));
        assert_eq!(clock.now_ms(), 3_000);
        let system = Clock::system();
        system.advance(Duration::from_secs(3600));
        assert!((system.now_ms() - system_ms()).abs() < 60_000);
    }
}
