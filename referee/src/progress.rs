//! Progress of a long run (`referee match`, `ladder tournament`, `ladder sprt`,
//! `ladder worker`), in the manner of fastchess: on a terminal a bar with games/s
//! and the time left, and interim standings every so many games; plain lines when
//! the output is a file or a pipe. And Ctrl-C: the first stops starting games (the
//! ones under way finish and are recorded), the second leaves at once.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Shows progress on stderr.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: Option<u64>,
    what: &'static str,
    started: Instant,
    last_line: Instant,
    /// Interim standings every this many games (0: never).
    standings_every: u64,
    next_standings: u64,
    next_line: u64,
}

/// How often a run without a terminal prints a line, at most.
const QUIET_FOR: Duration = Duration::from_secs(30);

impl Progress {
    /// Progress of `total` units (`None`: open-ended, as a worker's) named `what`
    /// ("games"), with standings every `standings_every` units (0: never). A bar
    /// when stderr is a terminal, else plain lines.
    pub fn new(total: Option<u64>, what: &'static str, standings_every: u64) -> Progress {
        Progress::with_terminal(total, what, standings_every, std::io::stderr().is_terminal())
    }

    /// As [`Progress::new`], saying whether stderr is a terminal.
    pub fn with_terminal(
        total: Option<u64>,
        what: &'static str,
        standings_every: u64,
        terminal: bool,
    ) -> Progress {
        let bar = terminal.then(|| {
            let bar = match total {
                Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            };
            let template = if total.is_some() {
                format!("{{bar:30}} {{pos}}/{{len}} {what}  {{per_sec}}  ETA {{eta}}  {{msg}}")
            } else {
                format!("{{spinner}} {{pos}} {what}  {{per_sec}}  {{elapsed}}  {{msg}}")
            };
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        let now = Instant::now();
        Progress {
            bar,
            total,
            what,
            started: now,
            last_line: now,
            standings_every,
            next_standings: standings_every,
            next_line: total.map_or(u64::MAX, |n| (n / 10).max(1)),
        }
    }

    /// `done` units are done; `standings` gives the interim table when one is due.
    pub fn update(&mut self, done: u64, standings: impl FnOnce() -> String) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        } else if done >= self.next_line || self.last_line.elapsed() >= QUIET_FOR || Some(done) == self.total
        {
            eprintln!("{}", self.line(done));
            self.last_line = Instant::now();
            while self.next_line <= done {
                self.next_line = self
                    .next_line
                    .saturating_add(self.total.map_or(u64::MAX, |n| (n / 10).max(1)));
            }
        }
        if self.standings_every > 0 && done >= self.next_standings && Some(done) != self.total {
            self.println(&format!(
                "after {done} {}:\n{}",
                self.what,
                standings().trim_end()
            ));
            while self.next_standings <= done {
                self.next_standings += self.standings_every;
            }
        }
    }

    /// A plain progress line: `120/300 games, 35.2 games/s, 5 s left`.
    pub fn line(&self, done: u64) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = done as f64 / secs.max(1e-9);
        match self.total {
            Some(total) => {
                let left = total.saturating_sub(done) as f64 / rate.max(1e-9);
                format!(
                    "{done}/{total} {}, {rate:.1} {}/s, {} left",
                    self.what,
                    self.what,
                    if done == 0 { "?".into() } else { human_secs(left) }
                )
            }
            None => format!(
                "{done} {}, {rate:.1} {}/s, {} so far",
                self.what,
                self.what,
                human_secs(secs)
            ),
        }
    }

    /// Prints `text` above the bar (or as it is, without a terminal).
    pub fn println(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{text}")),
            None => eprintln!("{text}"),
        }
    }

    /// Takes the bar away, leaving the terminal clean for the final table.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn human_secs(s: f64) -> String {
    if !s.is_finite() {
        return "?".into();
    }
    let s = s.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Installs the Ctrl-C handler of a long run and returns its flag: the first
/// Ctrl-C sets it (start no new game; the ones under way finish and are kept), the
/// second exits at once with status 130. Call once per process.
///
/// # Errors
/// When a handler is already installed.
pub fn stop_on_ctrl_c(what: &'static str) -> Result<Arc<AtomicBool>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            eprintln!("\nstopped at once; games under way are lost, everything recorded is kept");
            std::process::exit(130);
        }
        eprintln!("\nstopping: no new {what} start; the ones under way finish and are recorded (Ctrl-C again to quit now)");
    })
    .map_err(|e| format!("cannot catch Ctrl-C: {e}"))?;
    Ok(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_say_done_rate_and_time_left() {
        let p = Progress::with_terminal(Some(300), "games", 0, false);
        let line = p.line(120);
        assert!(line.starts_with("120/300 games, "), "{line}");
        assert!(line.contains(" games/s, ") && line.ends_with(" left"), "{line}");
        assert_eq!(p.line(0).split(", ").last(), Some("? left"));
        let open = Progress::with_terminal(None, "games", 0, false);
        assert!(open.line(7).starts_with("7 games, "), "{}", open.line(7));
        assert_eq!(human_secs(59.4), "59 s");
        assert_eq!(human_secs(61.0), "1 min 1 s");
        assert_eq!(human_secs(7322.0), "2 h 2 min");
    }

    #[test]
    fn standings_come_every_n_games_but_not_at_the_end() {
        let mut p = Progress::with_terminal(Some(10), "games", 4, false);
        let mut asked = Vec::new();
        for done in 1..=10 {
            p.update(done, || {
                asked.push(done);
                String::new()
            });
        }
        assert_eq!(asked, [4, 8]);
    }
}
