//! Each gRPC seat has a keeper thread beside its connection; a finished game must
//! take them all away. Alone in its own test binary, so that the threads it
//! counts are its own.

use astragal_tests::GrpcServer;
use referee::{GameSetup, LogPlace};
use std::time::{Duration, Instant};

/// Threads of this process with `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.trim_end() == name)
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn grpc_games_leave_no_keeper_thread_behind() {
    let server = GrpcServer::start(|listener| {
        bots::grpc::serve_on(
            listener,
            std::sync::Arc::new(|| bots::builtin("first", &[]).unwrap()),
            std::future::pending(),
        )
    });
    let seat = server.spec();
    let limits = referee::Limits {
        // Kept at once after every call: the keepers hold their runtimes when
        // the games end.
        remote_keep: Duration::ZERO,
        ..astragal_tests::fast_limits()
    };
    // Spartan hands every call to a keeper; Ur drives them on the game's thread.
    for (i, game) in ["spartan", "ur"].into_iter().cycle().take(20).enumerate() {
        let setup = GameSetup {
            game: game.into(),
            options: vec![],
            seed: i as u64,
            position: None,
            pairing: None,
        };
        let rec = referee::play_game(
            &setup,
            &[seat.clone(), seat.clone()],
            &limits,
            &LogPlace::default(),
        )
        .unwrap();
        assert!(rec.faults.is_empty(), "{game}: {:?}", rec.faults);
    }
    // Keepers end as soon as they see their session gone; give them a moment to
    // be scheduled, no more.
    let until = Instant::now() + Duration::from_secs(20);
    while threads_named("referee-grpc") > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        threads_named("referee-grpc"),
        0,
        "keeper threads outlive their games"
    );
}
