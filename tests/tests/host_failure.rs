//! A worker whose own limits make a bot's start fail (EPERM, EMFILE: a limit it
//! may not set, no descriptors left) charged every bot with a spawn fault and got
//! each suspended. Such a failure is now the worker's: it reports nothing of the
//! group and stops, naming it. Its own test binary: it lowers this process's own
//! hard limit on open files, which cannot be raised again.

use ladder::worker::{WorkerError, leased_group, play_lease};
use proto::ladder::{Entrant, LeaseReply};
use referee::sandbox::Sandbox;

fn lease(spec: &str) -> LeaseReply {
    LeaseReply {
        has_work: true,
        author_log_bytes: 0,
        lease: "a-lease".into(),
        group_id: 1,
        competition: "c".into(),
        game: "ur".into(),
        options: vec![],
        seed: 7,
        group_no: 0,
        entrants: vec![
            Entrant {
                bot: "process".into(),
                spec: spec.into(),
                env: vec![],
                artifact_sha256: String::new(),
            },
            Entrant {
                bot: "first".into(),
                spec: "builtin:first".into(),
                env: vec![],
                artifact_sha256: String::new(),
            },
        ],
        time: "movetime=2000".parse().unwrap(),
        expires_in_ms: 60_000,
        groups_in_progress: false,
        retry_after_ms: 0,
        independent_seeds: false,
    }
}

#[test]
fn a_start_that_fails_for_the_hosts_reasons_is_the_workers_fault_never_the_bots() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let bot = format!("{} --mode good", env!("CARGO_BIN_EXE_hostile_bot"));
    // A program that is not there is the bot's own fault, charged to it.
    let missing = play_lease(
        &leased_group(lease("/nonexistent/astragal-bot")).unwrap(),
        None,
        &Sandbox::default(),
        &mut referee::game::BotPool::reusing(),
    )
    .expect("the group is played and charged to the bot");
    assert!(missing[0].contains("\"spawn\""), "{}", missing[0]);
    // Below the bots' limit on open files, every start fails with EPERM: the
    // worker's failure.
    let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let hard = soft.clamp(64, 1024);
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let sandbox = Sandbox {
        open_files: hard + 1,
        ..Sandbox::default()
    };
    match play_lease(
        &leased_group(lease(&bot)).unwrap(),
        None,
        &sandbox,
        &mut referee::game::BotPool::reusing(),
    ) {
        Err(e @ WorkerError::Host(_)) => {
            let said = e.to_string();
            assert!(
                said.contains("the host could not start") && said.contains("stops"),
                "{said}"
            );
        }
        other => panic!("the bot was charged with the host's failure: {other:?}"),
    }
}
