//! A user id of its own for every isolated sandbox running at once on a machine,
//! so that a path that leaks into one (a folder shown by mistake, a `/proc` entry)
//! still opens no other sandbox's files, memory or pipes: the kernel's own checks
//! between users, rather than a list of things to hide.
//!
//! The ids come from a range the host gives every program that starts bots
//! (`--sandbox-uids`), and each is held by a lock on its own file under
//! [`LOCK_DIR`] for as long as its sandbox lives: machine-wide, so two workers, a
//! worker and a local tournament never hand out one id twice, and a process that
//! dies lets go of its ids with its descriptors.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Where the locks are: a folder only root may write, on a file system that goes
/// with the machine's boot.
pub const LOCK_DIR: &str = "/run/astragal/sandbox-uids";

/// A range of user ids that belong to no one else on the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidRange {
    /// The first id.
    pub first: u32,
    /// How many.
    pub count: u32,
}

impl Default for UidRange {
    /// Far above the ids of people (below 60,000), systemd's dynamic users
    /// (61,184-65,519) and the usual sub-id ranges of containers (from 100,000 in
    /// steps of 65,536).
    fn default() -> UidRange {
        UidRange {
            first: 2_000_000_000,
            count: 65_536,
        }
    }
}

impl fmt::Display for UidRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.first + (self.count - 1))
    }
}

impl FromStr for UidRange {
    type Err = String;

    /// `FIRST-LAST`, both included.
    fn from_str(s: &str) -> Result<UidRange, String> {
        let (first, last) = s
            .split_once('-')
            .ok_or_else(|| format!("{s:?} is not FIRST-LAST (e.g. 2000000000-2000065535)"))?;
        let number = |t: &str| {
            t.parse::<u32>()
                .map_err(|_| format!("{s:?}: {t:?} is not a user id"))
        };
        let (first, last) = (number(first)?, number(last)?);
        if first < 65_536 {
            return Err(format!(
                "{s:?} starts among the ids of people and system services (below 65536); \
                 give a range no account uses"
            ));
        }
        if last < first {
            return Err(format!("{s:?} ends before it starts"));
        }
        if last >= u32::MAX - 1 {
            return Err(format!("{s:?} reaches the ids the kernel keeps for itself"));
        }
        Ok(UidRange {
            first,
            count: last - first + 1,
        })
    }
}

/// One id, held until dropped.
#[derive(Debug)]
pub struct SandboxUid {
    uid: u32,
    /// The locked file: the lock goes with it.
    _lock: nix::fcntl::Flock<File>,
}

impl SandboxUid {
    /// The id.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Takes the lowest id of `range` that no live sandbox on this machine holds.
    ///
    /// # Errors
    /// The lock folder cannot be made (not root), or every id is taken.
    pub fn take(range: UidRange) -> Result<SandboxUid, String> {
        SandboxUid::take_in(Path::new(LOCK_DIR), range)
    }

    fn take_in(dir: &Path, range: UidRange) -> Result<SandboxUid, String> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        for offset in 0..range.count {
            let uid = range.first + offset;
            let path: PathBuf = dir.join(uid.to_string());
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(SandboxUid { uid, _lock: lock }),
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => continue,
                Err((_, e)) => return Err(format!("cannot lock {}: {e}", path.display())),
            }
        }
        Err(format!(
            "every user id of {range} is held by a running sandbox; give a larger --sandbox-uids"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_as_first_to_last_and_bad_ones_say_why() {
        let r: UidRange = "2000000000-2000000009".parse().unwrap();
        assert_eq!((r.first, r.count), (2_000_000_000, 10));
        assert_eq!(r.to_string(), "2000000000-2000000009");
        assert_eq!(
            UidRange::default().to_string().parse::<UidRange>(),
            Ok(UidRange::default())
        );
        for (bad, says) in [
            ("2000000000", "FIRST-LAST"),
            ("1000-2000", "below 65536"),
            ("3000000000-2000000000", "ends before"),
            ("x-2000000000", "not a user id"),
            ("4000000000-4294967295", "kernel"),
        ] {
            let e = bad.parse::<UidRange>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn sandboxes_alive_at_once_hold_different_ids_and_a_dropped_one_is_taken_again() {
        let dir = std::env::temp_dir().join(format!("astragal-uids-{}", std::process::id()));
        let range = UidRange {
            first: 3_000_000_000,
            count: 3,
        };
        let a = SandboxUid::take_in(&dir, range).unwrap();
        let b = SandboxUid::take_in(&dir, range).unwrap();
        let c = SandboxUid::take_in(&dir, range).unwrap();
        let mut ids = vec![a.uid(), b.uid(), c.uid()];
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 3, "{ids:?}");
        let e = SandboxUid::take_in(&dir, range).unwrap_err();
        assert!(e.contains("every user id"), "{e}");
        let freed = b.uid();
        drop(b);
        assert_eq!(SandboxUid::take_in(&dir, range).unwrap().uid(), freed);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
