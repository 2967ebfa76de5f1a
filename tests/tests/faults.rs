//! Hostile bots against the referee: every misbehaviour ends in a recorded fault of
//! the right kind for that seat, never in a hang, a panic, a zombie or a leaked fd.

use referee::clock::{Limits, TimeControl};
use referee::game::{GameSetup, LogPlace, SeatSetup, play_game};
use referee::{BotSpec, FaultKind, GameRecord, Termination};
use std::time::Duration;

const HOSTILE: &str = env!("CARGO_BIN_EXE_hostile_bot");

fn limits() -> Limits {
    Limits {
        tc: TimeControl::MoveTime(Duration::from_millis(300)),
        margin: Duration::from_millis(100),
        handshake: Duration::from_millis(1500),
        ping: Duration::from_millis(1000),
        quit_grace: Duration::from_millis(200),
    }
}

fn hostile(mode: &str, after: u64) -> SeatSetup {
    SeatSetup::new(BotSpec::Process {
        command: format!("{HOSTILE} --mode {mode} --after {after}"),
    })
}

fn first() -> SeatSetup {
    SeatSetup::new(BotSpec::parse("builtin:first").unwrap())
}

async fn play(game: &str, seats: Vec<SeatSetup>) -> GameRecord {
    let setup = GameSetup {
        game: game.into(),
        options: vec![],
        seed: 5,
        position: None,
        pairing: None,
    };
    // A hang is a failure: no game here may take anywhere near this long.
    tokio::time::timeout(
        Duration::from_secs(60),
        play_game(&setup, &seats, &limits(), &LogPlace::default()),
    )
    .await
    .expect("the referee hung")
    .expect("setup is valid")
}

async fn two_seat_fault(mode: &str, after: u64, kind: FaultKind) -> GameRecord {
    let rec = play("ur", vec![first(), hostile(mode, after)]).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_that_sleeps_times_out() {
    let rec = two_seat_fault("sleep", 2, FaultKind::Timeout).await;
    assert!(rec.faults[0].at_move >= 2, "it played its first moves");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_that_crashes_mid_game() {
    let rec = two_seat_fault("crash", 3, FaultKind::Crash).await;
    assert!(
        rec.faults[0].detail.contains("exit status: 3"),
        "{}",
        rec.faults[0].detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_is_malformed() {
    let rec = two_seat_fault("garbage", 0, FaultKind::Malformed).await;
    assert!(
        rec.faults[0].detail.contains("unknown command \"hello\""),
        "{}",
        rec.faults[0].detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_without_newline_is_not_a_move() {
    two_seat_fault("no-newline", 0, FaultKind::Timeout).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_line_is_cut_at_the_limit() {
    let rec = two_seat_fault("huge-line", 0, FaultKind::LineTooLong).await;
    assert!(rec.faults[0].detail.contains("65536"), "{}", rec.faults[0].detail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flooding_output_is_a_fault() {
    two_seat_fault("flood", 0, FaultKind::Flood).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn illegal_and_unparsable_moves() {
    let rec = two_seat_fault("illegal", 0, FaultKind::Illegal).await;
    assert!(
        rec.faults[0].detail.contains("swallow:14"),
        "{}",
        rec.faults[0].detail
    );
    let rec = two_seat_fault("unparsable", 0, FaultKind::Illegal).await;
    assert!(
        rec.faults[0].detail.contains("cannot parse"),
        "{}",
        rec.faults[0].detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_faults() {
    two_seat_fault("slow-handshake", 0, FaultKind::Handshake).await;
    let rec = two_seat_fault("bad-version", 0, FaultKind::Handshake).await;
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
    )
    .await;
    assert_eq!(rec.faults[0].kind, FaultKind::Spawn);
    assert_eq!(rec.moves.len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_that_never_answers_isready_stalls() {
    two_seat_fault("stall", 0, FaultKind::Stall).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_replies_are_discarded_and_counted() {
    let rec = play("ur", vec![first(), hostile("late", 0)]).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quit_ignored_and_stderr_flooded_still_finish_cleanly() {
    for mode in ["ignore-quit", "flood-stderr"] {
        let rec = play("ur", vec![first(), hostile(mode, 0)]).await;
        assert!(rec.faults.is_empty(), "{mode}: {:?}", rec.faults);
        assert_eq!(rec.termination, Termination::Normal);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_three_or_more_seats_the_game_goes_on_without_the_faulted_seat() {
    let rec = play(
        "cuatto",
        vec![first(), hostile("crash", 4), first(), hostile("garbage", 6)],
    )
    .await;
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
    assert!(rec.moves.last().is_some(), "the game ran to its end");
    referee::replay::replay(&rec).expect("replays");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_games_leave_no_zombie_no_fd_and_no_grandchild() {
    let before = open_fds();
    let modes = ["crash", "ignore-quit", "fork", "garbage", "good"];
    let mut games = 0;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..1000 {
        let mode = modes[i % modes.len()];
        tasks.spawn(async move {
            let setup = GameSetup {
                game: "uptick".into(),
                options: vec!["size=4".into(), "reserve=2".into()],
                seed: i as u64,
                position: None,
                pairing: None,
            };
            let seats = vec![hostile(mode, 1), hostile("good", 0)];
            play_game(&setup, &seats, &limits(), &LogPlace::default())
                .await
                .unwrap()
        });
        if tasks.len() >= 4 {
            tasks.join_next().await.unwrap().unwrap();
            games += 1;
        }
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
        games += 1;
    }
    assert_eq!(games, 1000);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(zombie_children(), 0, "zombies left");
    assert_eq!(leftover_grandchildren(), 0, "a bot's own child outlived its game");
    let after = open_fds();
    assert!(
        after <= before + 8,
        "file descriptors grew from {before} to {after}"
    );
}
