//! A bot that daemonizes (`setsid` and a double fork) in every game, for 1,000
//! games: no such process outlives its game, and the referee's descriptors and
//! threads stay flat. In its own test binary so that no other test's threads or
//! descriptors move the counts. Needs cgroups (level `none`) or bubblewrap
//! (`isolated`); says why and skips where the machine has neither.

use referee::matchplay::{MatchConfig, run_match};
use referee::sandbox::{CgroupSupport, Level, Sandbox};
use referee::{BotSpec, SeatSetup};

const ATTACKER: &str = env!("CARGO_BIN_EXE_attack_bot");

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// Processes on the machine whose command line is `sleep <tag>`.
fn daemons(tag: &str) -> usize {
    let wanted = format!("sleep\0{tag}\0");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c == wanted.as_bytes())
        .count()
}

fn daemonizing_games(level: Level, games: u64, tag: &str) {
    let cfg = MatchConfig {
        game: "ur".into(),
        options: vec![],
        entrants: vec![
            SeatSetup::new(BotSpec::Process {
                command: format!("{ATTACKER} --attack daemon --tag {tag}"),
            }),
            SeatSetup::new(BotSpec::parse("builtin:first").unwrap()),
        ],
        games,
        concurrency: 2,
        seed: 1,
        limits: referee::Limits {
            sandbox: Sandbox::at(level),
            ..astragal_tests::fast_limits()
        },
        record: None,
        log_dir: None,
        // A new process, and so a new daemon, in every game.
        fresh_bots: true,
        ..MatchConfig::default()
    };
    let summary = run_match(cfg, |_, rec| {
        assert!(rec.faults.is_empty(), "{:?}", rec.faults);
        std::ops::ControlFlow::Continue(())
    })
    .expect("the match runs");
    assert_eq!(summary.games, games);
}

#[test]
fn daemons_never_outlive_their_game_and_the_referee_leaks_nothing() {
    let isolated = Sandbox::at(Level::Isolated).check();
    let cgroups = CgroupSupport::probe().is_some();
    let mut levels = Vec::new();
    if cgroups {
        levels.push(Level::None);
    } else {
        astragal_tests::skipped(
            "level none",
            "no cgroups here, and a process group cannot catch a setsid",
        );
    }
    match isolated {
        Ok(()) => levels.push(Level::Isolated),
        Err(e) => {
            astragal_tests::skipped("level isolated", &e.to_string());
        }
    }
    for level in levels {
        let tag = format!("{}{}", 41_000 + std::process::id() % 1000, level as u8);
        // Warm up: the first games start the threads and pools a run keeps.
        daemonizing_games(level, 10, &tag);
        let (fds, threads) = (count("/proc/self/fd"), count("/proc/self/task"));
        daemonizing_games(level, 1000, &tag);
        assert_eq!(daemons(&tag), 0, "{level}: a daemon outlived its game");
        let (fds_after, threads_after) = (count("/proc/self/fd"), count("/proc/self/task"));
        assert!(fds_after <= fds + 2, "{level}: descriptors {fds} -> {fds_after}");
        assert!(
            threads_after <= threads + 2,
            "{level}: threads {threads} -> {threads_after}"
        );
    }
}
