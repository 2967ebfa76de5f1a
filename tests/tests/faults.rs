//! Hostile bots against the referee: every misbehaviour ends in a recorded fault of
//! the right kind for that seat, never in a hang, a panic, a zombie or a leaked fd.

use referee::clock::Limits;
use referee::game::{BotPool, GameSetup, LogPlace, SeatSetup, play_game, play_game_in};
use referee::{BotSpec, FaultKind, GameRecord, Termination};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const HOSTILE: &str = env!("CARGO_BIN_EXE_hostile_bot");

fn limits() -> Limits {
    astragal_tests::fast_limits()
}

fn hostile(mode: &str, after: u64) -> SeatSetup {
    SeatSetup::new(BotSpec::Process {
        command: format!("{HOSTILE} --mode {mode} --after {after}"),
    })
}

fn first() -> SeatSetup {
    SeatSetup::new(BotSpec::parse("builtin:first").unwrap())
}

/// A game of Ur from the start with this seed.
fn ur_setup(seed: u64) -> GameSetup {
    GameSetup {
        game: "ur".into(),
        options: vec![],
        seed,
        position: None,
        pairing: None,
    }
}

fn play(game: &str, seats: Vec<SeatSetup>) -> GameRecord {
    astragal_tests::play_guarded(game, &seats, 5)
}

fn two_seat_fault(mode: &str, after: u64, kind: FaultKind) -> GameRecord {
    let rec = play("ur", vec![first(), hostile(mode, after)]);
    assert_eq!(rec.faults.len(), 1, "{mode}: {:?}", rec.faults);
    assert_eq!(
        (rec.faults[0].seat, rec.faults[0].kind),
        (1, kind),
        "{mode}: {}",
        rec.faults[0].detail
    );
    assert_eq!(rec.termination, Termination::Forfeit);
    assert_eq!(rec.outcome.ranks, vec![1, 2], "the faulted seat loses");
    referee::replay::replay(&rec).expect("a forfeited game replays too");
    rec
}

#[test]
fn a_bot_that_sleeps_times_out() {
    let rec = two_seat_fault("sleep", 2, FaultKind::Timeout);
    assert!(rec.faults[0].at_move >= 2, "it played its first moves");
}

#[test]
fn a_bot_that_crashes_mid_game() {
    let rec = two_seat_fault("crash", 3, FaultKind::Crash);
    assert!(
        rec.faults[0].detail.contains("exit status: 3"),
        "{}",
        rec.faults[0].detail
    );
}

#[test]
fn garbage_is_malformed() {
    let rec = two_seat_fault("garbage", 0, FaultKind::Malformed);
    assert!(
        rec.faults[0].detail.contains("unknown command \"hello\""),
        "{}",
        rec.faults[0].detail
    );
}

#[test]
fn a_line_without_newline_is_not_a_move() {
    two_seat_fault("no-newline", 0, FaultKind::Timeout);
}

#[test]
fn a_100_mb_line_is_cut_at_the_limit() {
    let rec = two_seat_fault("huge-line", 0, FaultKind::LineTooLong);
    assert!(rec.faults[0].detail.contains("65536"), "{}", rec.faults[0].detail);
}

#[test]
fn flooding_output_is_a_fault() {
    two_seat_fault("flood", 0, FaultKind::Flood);
}

#[test]
fn illegal_and_unparsable_moves() {
    let rec = two_seat_fault("illegal", 0, FaultKind::Illegal);
    assert!(
        rec.faults[0].detail.contains("swallow:14"),
        "{}",
        rec.faults[0].detail
    );
    let rec = two_seat_fault("unparsable", 0, FaultKind::Illegal);
    assert!(
        rec.faults[0].detail.contains("cannot parse"),
        "{}",
        rec.faults[0].detail
    );
}

#[test]
fn handshake_faults() {
    two_seat_fault("slow-handshake", 0, FaultKind::Handshake);
    let rec = two_seat_fault("bad-version", 0, FaultKind::Handshake);
    assert!(
        rec.faults[0].detail.contains("version 2"),
        "{}",
        rec.faults[0].detail
    );
    let rec = play(
        "ur",
        vec![
            first(),
            SeatSetup::new(BotSpec::Process {
                command: "/no/such/bot".into(),
            }),
        ],
    );
    assert_eq!(rec.faults[0].kind, FaultKind::Spawn);
    assert_eq!(rec.moves.len(), 0);
}

#[test]
fn a_bot_that_never_answers_isready_stalls() {
    two_seat_fault("stall", 0, FaultKind::Stall);
}

#[test]
fn late_replies_are_discarded_and_counted() {
    let rec = play("ur", vec![first(), hostile("late", 0)]);
    assert!(rec.faults.is_empty(), "{:?}", rec.faults);
    assert!(rec.seats[1].late_replies > 0);
    let info = rec
        .moves
        .iter()
        .filter(|m| m.seat == 1)
        .flat_map(|m| m.info.iter())
        .count();
    assert!(info > 0, "info lines are recorded");
}

#[test]
fn moves_sent_before_their_request_are_discarded_and_counted() {
    // The bot answers, then at once writes an answer to the request it guesses
    // comes next. Had the referee taken it, the next move would be recorded at
    // 0 ms and the bot's real answer would be a late reply.
    let rec = play("ur", vec![first(), hostile("early", 0)]);
    assert!(rec.faults.is_empty(), "{:?}", rec.faults);
    let seat = &rec.seats[1];
    let asked = rec.moves.iter().filter(|m| m.seat == 1).count() as u64;
    assert!(asked > 2, "{asked} moves");
    // Every guess after the first request was discarded as early: one a request but
    // the last (whose guess arrives when no request follows, and goes unread).
    assert!(
        seat.early_replies >= asked - 1,
        "{} early of {asked}",
        seat.early_replies
    );
    assert_eq!(seat.late_replies, 0, "the real answers were taken");
}

#[test]
fn quit_ignored_and_stderr_flooded_still_finish_cleanly() {
    for mode in ["ignore-quit", "flood-stderr"] {
        let rec = play("ur", vec![first(), hostile(mode, 0)]);
        assert!(rec.faults.is_empty(), "{mode}: {:?}", rec.faults);
        assert_eq!(rec.termination, Termination::Normal);
    }
}

#[test]
fn stderr_goes_to_a_capped_log_per_bot() {
    let dir = std::env::temp_dir().join(format!("astragal-logs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let setup = ur_setup(5);
    let logs = LogPlace {
        dir: Some(dir.clone()),
        tag: "t-".into(),
        names: Vec::new(),
        author_tail: 0,
    };
    let rec = play_game(&setup, &[first(), hostile("flood-stderr", 0)], &limits(), &logs).unwrap();
    assert!(rec.faults.is_empty(), "{:?}", rec.faults);
    let log = std::fs::read(dir.join("t-seat1.stderr.log")).expect("the bot's stderr log");
    let cap = referee::transport::pipe::STDERR_LOG_CAP as usize;
    assert!(
        log.len() > cap / 2,
        "the log holds what the bot wrote ({} bytes)",
        log.len()
    );
    assert!(log.len() <= cap + 64, "the log is capped ({} bytes)", log.len());
    assert!(log.ends_with(b"[stderr log capped]\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_three_or_more_seats_the_game_goes_on_without_the_faulted_seat() {
    let rec = play(
        "cuatto",
        vec![first(), hostile("crash", 4), first(), hostile("garbage", 6)],
    );
    assert_eq!(rec.faults.len(), 2, "{:?}", rec.faults);
    assert_ne!(rec.termination, Termination::Normal);
    // Faulted seats last; the earlier fault lowest.
    let (early, late) = if rec.faults[0].seat == 1 { (1, 3) } else { (3, 1) };
    assert_eq!(rec.outcome.ranks[early], 4);
    assert_eq!(rec.outcome.ranks[late], 3);
    assert!(rec.outcome.ranks[0] <= 2 && rec.outcome.ranks[2] <= 2);
    assert!(
        rec.moves.iter().any(|m| m.fallback),
        "the referee played for the faulted seats"
    );
    referee::replay::replay(&rec).expect("replays");
}

#[test]
fn simultaneous_seats_are_asked_at_once_and_timed_separately() {
    // Spartan: both seats decide together; one sleeps, the other answers at once.
    let rec = play("spartan", vec![first(), hostile("sleep", 1)]);
    assert_eq!(rec.faults.len(), 1);
    assert_eq!((rec.faults[0].seat, rec.faults[0].kind), (1, FaultKind::Timeout));
    let seat0: Vec<u64> = rec.moves.iter().filter(|m| m.seat == 0).map(|m| m.ms).collect();
    assert!(
        seat0.iter().all(|&ms| ms < 100),
        "seat 0 is not charged seat 1's wait: {seat0:?}"
    );
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn zombie_children() -> usize {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid ...
            let after = stat.rsplit_once(") ").map(|(_, a)| a).unwrap_or("");
            let mut f = after.split_whitespace();
            let (state, ppid) = (f.next(), f.next());
            state == Some("Z") && ppid == Some(me.as_str())
        })
        .count()
}

fn leftover_grandchildren() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| c.starts_with("sleep\u{0}417"))
        .count()
}

#[test]
fn a_thousand_games_leave_no_zombie_no_fd_and_no_grandchild() {
    let before = open_fds();
    let modes = ["crash", "ignore-quit", "fork", "garbage", "good"];
    let next = AtomicUsize::new(0);
    let played = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= 1000 {
                        return;
                    }
                    let setup = GameSetup {
                        game: "uptick".into(),
                        options: vec!["size=4".into(), "reserve=2".into()],
                        seed: i as u64,
                        position: None,
                        pairing: None,
                    };
                    let seats = vec![hostile(modes[i % modes.len()], 1), hostile("good", 0)];
                    play_game(&setup, &seats, &limits(), &LogPlace::default()).unwrap();
                    played.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(played.into_inner(), 1000);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(zombie_children(), 0, "zombies left");
    assert_eq!(leftover_grandchildren(), 0, "a bot's own child outlived its game");
    let after = open_fds();
    assert!(
        after <= before + 8,
        "file descriptors grew from {before} to {after}"
    );
}

/// The process id a `keepable` hostile bot put in its name.
fn pid_in_name(rec: &GameRecord, seat: usize) -> u32 {
    let name = &rec.seats[seat].name;
    name.strip_prefix("hostile-keepable-")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not a keepable bot's name: {name}"))
}

#[test]
fn a_pool_keeps_clean_bots_for_the_next_game_and_replaces_faulted_ones() {
    let dir = std::env::temp_dir().join(format!("astragal-pool-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let seats = [hostile("keepable", 0), hostile("crash-in-second-game", 0)];
    let mut pool = BotPool::reusing();
    let mut game = |seed: u64| {
        let setup = ur_setup(seed);
        let logs = LogPlace {
            dir: Some(dir.clone()),
            tag: format!("g{seed}-"),
            names: Vec::new(),
            author_tail: 0,
        };
        let rec = play_game_in(&setup, &seats, &limits(), &logs, &mut pool).unwrap();
        (rec, pool.idle())
    };
    let (first_game, idle) = game(1);
    assert!(first_game.faults.is_empty(), "{:?}", first_game.faults);
    assert_eq!(idle, 2, "both bots ended cleanly and are kept");
    // The second game is played by the same processes: the crashing one shows it.
    let (second, idle) = game(2);
    assert_eq!(
        pid_in_name(&second, 0),
        pid_in_name(&first_game, 0),
        "the same process"
    );
    assert_eq!(second.faults.len(), 1, "{:?}", second.faults);
    assert_eq!(
        (second.faults[0].seat, second.faults[0].kind),
        (1, FaultKind::Crash)
    );
    assert_eq!(idle, 1, "the crashed bot is not kept; its opponent is");
    // A new process takes the crashed one's place (its first game: no crash).
    let (third, idle) = game(3);
    assert!(third.faults.is_empty(), "{:?}", third.faults);
    assert_eq!(pid_in_name(&third, 0), pid_in_name(&first_game, 0));
    assert_eq!(idle, 2);
    // Dropping the pool quits and reaps what it kept (and waits for its stderr).
    drop(pool);
    let pid = pid_in_name(&first_game, 0);
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        state.is_empty(),
        "the kept bot {pid} is gone after the pool: {state}"
    );
    // Each game's stderr log holds that game's lines only.
    for g in 1..=3 {
        let log = std::fs::read_to_string(dir.join(format!("g{g}-seat0.stderr.log"))).unwrap();
        assert_eq!(
            log,
            format!("newgame number {g} in process {pid}\n"),
            "game {g}'s log"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_kept_bot_that_left_after_its_game_is_replaced_not_blamed() {
    let seats = [first(), hostile("exit-after-game", 0)];
    let mut pool = BotPool::reusing();
    for seed in 1..=3 {
        let setup = ur_setup(seed);
        let rec = play_game_in(&setup, &seats, &limits(), &LogPlace::default(), &mut pool).unwrap();
        assert!(rec.faults.is_empty(), "game {seed}: {:?}", rec.faults);
        assert_eq!(rec.termination, Termination::Normal);
    }
}

/// Attack: a bot's last words on stderr, and the command it was started with, are
/// its owner's. A bot that crashes saying a secret never has it, nor its command,
/// told to the other seat in `gameover`; a seat shown by a public name (a ladder's
/// entrant) has neither in its record either, only what happened; a seat that is
/// the caller's own keeps both in its record, for its owner.
#[test]
fn a_bots_last_words_and_command_reach_only_its_owner() {
    const SECRET: &str = "LASTWORDS-7f3a";
    let dir = std::env::temp_dir().join(format!("astragal-private-{}", std::process::id()));
    for shown in [true, false] {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let crasher = SeatSetup {
            shown_as: shown.then(|| "crasher@1".to_owned()),
            ..SeatSetup::new(BotSpec::Process {
                command: format!("{HOSTILE} --mode crash --after 2 --stderr {SECRET}"),
            })
        };
        let listener = hostile("tell-gameover", 0);
        let logs = LogPlace {
            dir: Some(dir.clone()),
            tag: "t-".into(),
            names: Vec::new(),
            author_tail: 0,
        };
        let rec = play_game(&ur_setup(3), &[crasher, listener], &limits(), &logs).unwrap();
        assert_eq!(rec.faults.len(), 1, "{:?}", rec.faults);
        let fault = &rec.faults[0];
        assert_eq!((fault.seat, fault.kind), (0, FaultKind::Crash), "{fault:?}");
        // What happened is said to anyone.
        assert!(fault.detail.contains("exit status: 3"), "{}", fault.detail);
        let told = std::fs::read_to_string(dir.join("t-seat1.stderr.log")).unwrap();
        let gameover = told
            .lines()
            .find(|l| l.starts_with("gameover"))
            .unwrap_or_else(|| panic!("no gameover told: {told}"));
        assert!(gameover.contains("exit status: 3"), "{gameover}");
        assert!(
            !gameover.contains(SECRET) && !gameover.contains(HOSTILE),
            "{gameover}"
        );
        let recorded = serde_json::to_string(&rec).unwrap();
        if shown {
            assert!(
                !recorded.contains(SECRET) && !recorded.contains("--mode crash"),
                "{recorded}"
            );
            assert_eq!(rec.seats[0].entrant.as_deref(), Some("crasher@1"));
            referee::replay::replay(&rec).expect("a record without specs replays");
        } else {
            assert!(
                fault.detail.contains(SECRET),
                "the owner reads it: {}",
                fault.detail
            );
            assert!(rec.seats[0].spec.contains(HOSTILE));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A seat shown by a public name that cannot start: the record says it could not
/// start and names it, and holds neither its command nor where it was looked for.
#[test]
fn a_shown_seat_that_cannot_start_is_named_never_its_command() {
    let typo = SeatSetup {
        shown_as: Some("typo@3".into()),
        ..SeatSetup::new(BotSpec::Process {
            command: "pyhton3 /srv/secret-dir/bot.py --token=SECRETXYZ".into(),
        })
    };
    let rec = play("ur", vec![typo, first()]);
    let recorded = serde_json::to_string(&rec).unwrap();
    for secret in ["pyhton3", "secret-dir", "SECRETXYZ", "bot.py"] {
        assert!(!recorded.contains(secret), "{secret}: {recorded}");
    }
    assert_eq!(rec.faults[0].kind, FaultKind::Spawn);
    assert_eq!(rec.faults[0].detail, "cannot start");
    assert_eq!(
        rec.seats[0].name, "typo@3",
        "a bot that never spoke is named by its public name"
    );
}
