//! Reading a pipe without falling asleep at once.
//!
//! A bot that blocks in `read(2)` the moment it has answered goes to sleep, and on
//! a machine where an idle core halts at once (many virtual machines), the
//! referee's next request must then wake that core: measured on such a machine,
//! that doubles a round trip. [`SpinRead`] first polls the descriptor without
//! sleeping for a short while (a fast referee's next request usually comes within
//! it), yielding the core between polls, and only then blocks.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

/// A spin that pays off for a bot that answers in microseconds on such a machine.
pub const FAST_SPIN: Duration = Duration::from_micros(50);

/// A reader that polls its file for up to `spin` before each blocking read.
#[derive(Debug)]
pub struct SpinRead {
    file: File,
    spin: Duration,
}

impl SpinRead {
    /// Reads standard input through its own descriptor (a duplicate: standard
    /// input's flags are left alone, and nothing else may read standard input).
    ///
    /// # Errors
    /// If standard input cannot be duplicated.
    pub fn stdin(spin: Duration) -> io::Result<SpinRead> {
        Ok(SpinRead::new(io::stdin().as_fd().try_clone_to_owned()?, spin))
    }

    /// Reads `fd` (a pipe, a file, a terminal...).
    pub fn new(fd: OwnedFd, spin: Duration) -> SpinRead {
        SpinRead {
            file: File::from(fd),
            spin,
        }
    }

    /// Whether the file has something to read (or has ended) right now.
    fn ready(&self) -> bool {
        let mut fds = [nix::poll::PollFd::new(
            self.file.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        matches!(nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO), Ok(n) if n > 0)
    }
}

impl Read for SpinRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.spin.is_zero() && !self.ready() {
            let until = Instant::now() + self.spin;
            while Instant::now() < until && !self.ready() {
                // Let the referee have this core if it shares it with us.
                std::thread::yield_now();
            }
        }
        self.file.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    fn pipe(spin: Duration) -> (BufReader<SpinRead>, io::PipeWriter) {
        let (r, w) = io::pipe().unwrap();
        (BufReader::new(SpinRead::new(r.into(), spin)), w)
    }

    #[test]
    fn reads_what_is_there_then_the_end() {
        for spin in [Duration::ZERO, FAST_SPIN] {
            let (mut r, mut w) = pipe(spin);
            w.write_all(b"one\ntwo\n").unwrap();
            drop(w);
            let lines: Vec<String> = r.by_ref().lines().map(Result::unwrap).collect();
            assert_eq!(lines, ["one", "two"], "spin {spin:?}");
            assert_eq!(
                r.read_line(&mut String::new()).unwrap(),
                0,
                "the end stays the end"
            );
        }
    }

    #[test]
    fn sleeps_until_a_late_line_comes() {
        // The line comes long after the spin: the read must block, not return empty.
        let (mut r, mut w) = pipe(Duration::from_micros(10));
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            w.write_all(b"late\n").unwrap();
        });
        let mut line = String::new();
        assert_eq!(r.read_line(&mut line).unwrap(), 5);
        assert_eq!(line, "late\n");
        writer.join().unwrap();
    }
}
