//! Hostile bots against the sandbox (docs/security.md): each attack is tried by a
//! bot run through the `referee` program as a host runs it, and must be contained
//! and recorded, the honest opponent unaffected. Each test says which level it
//! needs; where this machine cannot give that (no bubblewrap, no cgroups), it says
//! why and skips.

use astragal_tests::attacks::{self, CACHE_CHANCE_HITS, RELAY_CHANCE_HITS, hits_of};
use referee::sandbox::{CgroupSupport, Level, Sandbox};
use std::path::PathBuf;
use std::process::Command;

const ATTACKER: &str = env!("CARGO_BIN_EXE_attack_bot");
const HONEST: &str = env!("CARGO_BIN_EXE_hostile_bot");
/// Put in the honest bot's command line (so in the referee's too); never in the
/// attacker's (see `attack_bot.rs`).
const OTHERS_MARKER: &str = "opponent-marker-7f3a";

/// Whether `--sandbox isolated` works here; if not, says why the test is skipped.
fn isolation(test: &str) -> bool {
    match Sandbox::at(Level::Isolated).check() {
        Ok(()) => true,
        Err(e) => astragal_tests::skipped(test, &e.to_string()),
    }
}

/// The levels a test of both runs at: `none` always, `isolated` where this machine
/// gives it (else it says why it is skipped).
fn levels(test: &str) -> Vec<Level> {
    let mut levels = vec![Level::None];
    if isolation(&format!("{test}/isolated")) {
        levels.push(Level::Isolated);
    }
    levels
}

/// Whether cgroups limit bots here; if not, says why the test is skipped.
fn cgroups(test: &str, memory: bool) -> bool {
    let ok = CgroupSupport::probe()
        .as_ref()
        .is_some_and(|c| if memory { c.memory() } else { c.pids() });
    ok || astragal_tests::skipped(
        test,
        &format!(
            "this machine gives the referee no cgroup {} controller",
            if memory { "memory" } else { "pids" }
        ),
    )
}

/// A fresh directory for one test's records and logs.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("astragal-sandbox-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a run of the referee left: its output, the attack reports from the
/// attacker's stderr logs, and the records.
struct Run {
    ok: bool,
    output: String,
    reports: Vec<String>,
    records: Vec<serde_json::Value>,
}

impl Run {
    /// Every report of `attack` (one a game where the attack runs every game).
    fn reports_of(&self, attack: &str) -> Vec<&String> {
        let prefix = format!("ATTACK {attack}: ");
        self.reports.iter().filter(|r| r.starts_with(&prefix)).collect()
    }

    fn report(&self, attack: &str) -> &str {
        let prefix = format!("ATTACK {attack}: ");
        self.reports
            .iter()
            .find_map(|r| r.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no report of {attack}: {}\n{:?}", self.output, self.reports))
    }

    /// The faults of all games as (seat, kind, detail).
    fn faults(&self) -> Vec<(u64, String, String)> {
        self.records
            .iter()
            .flat_map(|r| r["faults"].as_array().cloned().unwrap_or_default())
            .map(|f| {
                (
                    f["seat"].as_u64().unwrap(),
                    f["kind"].as_str().unwrap().to_owned(),
                    f["detail"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

/// Runs `referee <command> --game <game>` with the attacker in seat 0 and the honest
/// bot in seat 1, at `level`, with `extra` arguments and `env` for the referee.
fn attack(
    game: &str,
    dir: &Scratch,
    command: &str,
    level: Level,
    attack: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let record = dir.path("games.jsonl");
    let logs = dir.path("logs");
    let mut cmd = Command::new(astragal_tests::binary("referee"));
    cmd.args([
        command,
        "--game",
        game,
        "--movetime",
        "2000",
        "--sandbox",
        &level.to_string(),
    ])
    .arg("--bot")
    .arg(format!("{ATTACKER} --attack {attack}"))
    .arg("--bot")
    .arg(format!("{HONEST} --mode good --note {OTHERS_MARKER}"))
    .arg("--record")
    .arg(&record)
    .arg("--log-dir")
    .arg(&logs)
    .args(extra)
    .current_dir(astragal_tests::workspace_root());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the referee runs");
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let reports = attacks::reports(&logs, "ATTACK ");
    let records = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record is JSON"))
        .collect();
    Run {
        ok: out.status.success(),
        output,
        reports,
        records,
    }
}

/// The honest seat (1) played on untouched: no fault of its own, and the game was
/// recorded and replays.
fn honest_unaffected(run: &Run) {
    assert!(run.ok, "the referee failed: {}", run.output);
    assert!(!run.records.is_empty(), "no game recorded: {}", run.output);
    let theirs: Vec<_> = run.faults().into_iter().filter(|f| f.0 == 1).collect();
    assert!(theirs.is_empty(), "the honest bot was charged: {theirs:?}");
}

#[test]
fn a_bot_sees_none_of_the_referees_environment_only_what_the_host_gave_it() {
    for level in levels("environment") {
        let dir = Scratch::new(&format!("env-{level}"));
        let run = attack(
            "ur",
            &dir,
            "play",
            level,
            "env --secret s3cret-token",
            &["--bot-env", "0:GIVEN_BY_HOST=yes"],
            &[
                ("ASTRAGAL_ADMIN_TOKEN", "s3cret-token"),
                ("ASTRAGAL_WORKER_TOKEN", "s3cret-token"),
            ],
        );
        let said = run.report("env");
        assert!(said.starts_with("contained"), "{level}: {said}");
        for name in ["\"GIVEN_BY_HOST\"", "\"HOME\"", "\"PATH\"", "\"LANG\""] {
            assert!(said.contains(name), "{level}: {name} missing: {said}");
        }
        assert!(!said.contains("ASTRAGAL_"), "{level}: {said}");
        honest_unaffected(&run);
        assert!(run.faults().is_empty(), "{:?}", run.faults());
    }
}

#[test]
fn an_isolated_bot_cannot_see_other_processes_command_lines_or_memory() {
    if !isolation("proc") {
        return;
    }
    let dir = Scratch::new("proc");
    let run = attack("ur", &dir, "play", Level::Isolated, "proc", &[], &[]);
    let said = run.report("proc");
    assert!(said.starts_with("contained"), "{said}");
    honest_unaffected(&run);
}

#[test]
fn an_isolated_bot_that_names_proc_and_run_sees_only_its_own_processes() {
    if !isolation("proc-named") {
        return;
    }
    // Before, a named folder was shown as it is on the host: `/proc` gave every
    // process's command line and, to a bot of the same user, its memory.
    let dir = Scratch::new("proc-named");
    let run = attack(
        "ur",
        &dir,
        "play",
        Level::Isolated,
        "proc /proc /run /sys /dev /proc/1",
        &[],
        &[],
    );
    let said = run.report("proc");
    assert!(said.starts_with("contained"), "{said}");
    // Its own pid namespace: bubblewrap's init and itself (and `cat`, `sh`: none).
    let seen = said.matches('=').count();
    assert!(seen <= 3, "it saw {seen} processes: {said}");
    honest_unaffected(&run);
    // The whole file system, by naming a file at its root, is refused.
    let run = attack("ur", &dir, "play", Level::Isolated, "proc /", &[], &[]);
    let faults = run.faults();
    assert!(
        faults.iter().any(|f| f.0 == 0 && f.1 == "spawn"),
        "naming / was not a spawn fault: {faults:?} {}",
        run.output
    );
}

#[test]
fn a_bot_holds_nothing_the_referee_was_handed_by_whatever_started_it() {
    // A supervisor's socket, a script's `exec 7<secret`: before, every such
    // descriptor went through bubblewrap into every bot and build.
    for level in levels("fds") {
        let dir = Scratch::new(&format!("fds-{level}"));
        let secret = dir.path("host-secret-4471");
        std::fs::write(&secret, "the host's own").unwrap();
        let logs = dir.path("logs");
        let referee = astragal_tests::binary("referee");
        let script = format!(
            "exec 7<'{secret}' 9>>'{secret}'; exec '{referee}' play --game ur --movetime 2000 \
             --sandbox {level} --bot '{ATTACKER} --attack fds --secret host-secret-4471' \
             --bot '{HONEST} --mode good' --log-dir '{logs}'",
            secret = secret.display(),
            referee = referee.display(),
            logs = logs.display(),
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .current_dir(astragal_tests::workspace_root())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let reports = attacks::reports(&logs, "ATTACK ");
        let said = reports
            .iter()
            .find_map(|r| r.strip_prefix("ATTACK fds: "))
            .unwrap_or_else(|| panic!("no report: {reports:?}"));
        assert!(said.starts_with("contained"), "{level}: {said}");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the host's own");
    }
}

#[test]
fn an_isolated_bot_cannot_connect_to_a_unix_socket_even_in_a_folder_it_is_shown() {
    use std::os::unix::fs::PermissionsExt;
    if !isolation("unix") {
        return;
    }
    let dir = Scratch::new("unix");
    let shared = dir.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(shared.join("book.txt"), "opening book").unwrap();
    let socket = shared.join("db.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    // Open to every user, as PostgreSQL's own socket is.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (book, sock) = (shared.join("book.txt"), socket.display().to_string());
    // The book shows the folder the socket is in; the socket it names directly.
    let run = attack(
        "ur",
        &dir,
        "play",
        Level::Isolated,
        &format!("unix {} --socket {sock}", book.display()),
        &[],
        &[],
    );
    let said = run.report("unix");
    assert!(said.starts_with("contained"), "{said}");
    assert!(listener.accept().is_err(), "a connection came in: {said}");
    honest_unaffected(&run);
}

#[test]
fn an_isolated_bot_is_refused_the_calls_that_reach_past_its_sandbox() {
    if !isolation("syscalls") {
        return;
    }
    let dir = Scratch::new("syscalls");
    let run = attack("ur", &dir, "play", Level::Isolated, "syscalls", &[], &[]);
    let said = run.report("syscalls");
    assert!(said.starts_with("contained"), "{said}");
    // Refused by the filter, each with its error, not left to chance.
    for call in [
        "ptrace",
        "process_vm_readv",
        "unshare(user)",
        "io_uring_setup",
        "keyctl",
        "userfaultfd",
    ] {
        assert!(
            said.contains(&format!("{call}: Operation not permitted")),
            "{call}: {said}"
        );
    }
    assert!(
        said.contains("socket(unix): Address family not supported"),
        "{said}"
    );
    honest_unaffected(&run);
    assert!(run.faults().is_empty(), "{:?}", run.faults());
}

#[test]
fn isolated_bots_playing_at_once_run_as_users_of_their_own() {
    if !isolation("uid") {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        astragal_tests::skipped(
            "uid",
            "bots take users of their own only when the referee runs as root",
        );
        return;
    }
    let dir = Scratch::new("uid");
    let logs = dir.path("logs");
    let out = Command::new(astragal_tests::binary("referee"))
        .args(["match", "--game", "ur", "--games", "4", "--concurrency", "2"])
        .args(["--movetime", "2000", "--sandbox", "isolated"])
        .args(["--sandbox-uids", "2100000000-2100000099"])
        .arg("--bot")
        .arg(format!("{ATTACKER} --attack uid"))
        .arg("--bot")
        .arg(format!("{ATTACKER} --attack uid --seat two"))
        .arg("--log-dir")
        .arg(&logs)
        .current_dir(astragal_tests::workspace_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Per game, the two seats' users differ; every user is of the range.
    let mut by_game: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for entry in std::fs::read_dir(&logs).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let game = name.split("-seat").next().unwrap().to_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        by_game.entry(game).or_default().extend(
            text.lines()
                .filter_map(|l| l.strip_prefix("ATTACK uid: contained uid="))
                .map(|u| u.trim().parse::<u64>().unwrap()),
        );
    }
    let mut games = 0;
    for (game, uids) in &by_game {
        assert_eq!(uids.len(), 2, "{game}: {uids:?}");
        games += 1;
        assert_ne!(uids[0], uids[1], "{game}: two seats of one game shared a user");
        assert!(
            uids.iter().all(|u| (2_100_000_000..2_100_000_100).contains(u)),
            "{game}: {uids:?}"
        );
    }
    assert!(games > 0, "no game's logs held both seats' users");
}

#[test]
fn an_isolated_bot_that_kills_everything_it_sees_kills_only_itself() {
    if !isolation("kill-others") {
        return;
    }
    let dir = Scratch::new("kill");
    let run = attack("ur", &dir, "play", Level::Isolated, "kill-others", &[], &[]);
    let said = run.report("kill-others");
    // It saw nobody outside its own sandbox to signal.
    assert!(
        said.contains("signalled []") || said.contains("signalled [1]"),
        "{said}"
    );
    honest_unaffected(&run);
    let faults = run.faults();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!((faults[0].0, faults[0].1.as_str()), (0, "crash"), "{faults:?}");
}

#[test]
fn an_isolated_bot_cannot_kill_the_referee() {
    if !isolation("kill-parent") {
        return;
    }
    let dir = Scratch::new("parent");
    let run = attack("ur", &dir, "play", Level::Isolated, "kill-parent", &[], &[]);
    assert!(
        run.report("kill-parent").contains(": false"),
        "{}",
        run.report("kill-parent")
    );
    honest_unaffected(&run);
    assert!(run.faults().is_empty(), "{:?}", run.faults());
}

#[test]
fn a_bot_over_its_process_limit_cannot_start_more() {
    if !cgroups("processes", false) {
        return;
    }
    for level in levels("processes") {
        let dir = Scratch::new(&format!("pids-{level}"));
        let run = attack(
            "ur",
            &dir,
            "play",
            level,
            "processes",
            &["--bot-processes", "32"],
            &[],
        );
        let said = run.report("processes");
        let started: usize = said.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(started < 32, "{level}: {said}");
        honest_unaffected(&run);
    }
}

#[test]
fn a_bot_over_its_memory_limit_is_a_memory_fault_with_the_limit() {
    if !cgroups("memory", true) {
        return;
    }
    for level in levels("memory") {
        let dir = Scratch::new(&format!("memory-{level}"));
        let run = attack("ur", &dir, "play", level, "memory", &["--bot-memory", "200"], &[]);
        honest_unaffected(&run);
        let faults = run.faults();
        assert_eq!(faults.len(), 1, "{level}: {faults:?}");
        assert_eq!(
            (faults[0].0, faults[0].1.as_str()),
            (0, "memory"),
            "{level}: {faults:?}"
        );
        assert!(faults[0].2.contains("200 MiB"), "{level}: {}", faults[0].2);
    }
}

#[test]
fn a_bot_writing_past_the_file_size_limit_is_stopped() {
    for level in levels("file-size") {
        let dir = Scratch::new(&format!("fsize-{level}"));
        let run = attack(
            "ur",
            &dir,
            "play",
            level,
            "file-size",
            &["--bot-file-size", "8"],
            &[],
        );
        honest_unaffected(&run);
        let faults = run.faults();
        // Killed by the kernel at the limit (or, under isolation, out of room in
        // its 8 MiB scratch first): never the whole gigabyte.
        if let Some(f) = faults.first() {
            assert_eq!((f.0, f.1.as_str()), (0, "crash"), "{level}: {faults:?}");
            assert!(f.2.contains("file-size limit of 8 MiB"), "{level}: {}", f.2);
        } else {
            let said = run.report("file-size");
            assert!(said.starts_with("contained"), "{level}: {said}");
        }
    }
}

#[test]
fn an_isolated_bot_is_shown_its_own_folder_and_never_where_a_link_leads() {
    if !isolation("links") {
        return;
    }
    let dir = Scratch::new("links");
    let (bot, private) = (dir.path("bot"), dir.path("private"));
    std::fs::create_dir_all(&bot).unwrap();
    std::fs::create_dir_all(&private).unwrap();
    let secret = "host-secret-5d1e";
    let token = private.join("token");
    std::fs::write(&token, secret).unwrap();
    std::fs::write(bot.join("notes.txt"), "the bot's own").unwrap();
    std::os::unix::fs::symlink("/", bot.join("data")).unwrap();
    std::os::unix::fs::symlink(&private, bot.join("cfg")).unwrap();
    std::os::unix::fs::symlink(&token, bot.join("token.txt")).unwrap();
    let reads = [
        token.clone(),
        bot.join("cfg/token"),
        bot.join("token.txt"),
        PathBuf::from(format!("{}/data{}", bot.display(), token.display())),
    ];
    let reads: Vec<String> = reads.iter().map(|p| format!("--read={}", p.display())).collect();
    let reads = reads.join(" ");
    // Links named on the command line are refused before the bot starts: before,
    // `data/` showed the whole machine and `cfg/` the private folder.
    for named in ["data/", "cfg/", "token.txt"] {
        let run = attack(
            "ur",
            &dir,
            "play",
            Level::Isolated,
            &format!("read --secret {secret} {reads} {}/{named}", bot.display()),
            &[],
            &[],
        );
        assert!(
            run.reports_of("read").is_empty(),
            "{named}: the bot ran: {:?}",
            run.reports
        );
        let faults = run.faults();
        assert!(
            faults
                .iter()
                .any(|(seat, kind, detail)| *seat == 0 && kind == "spawn" && detail.contains("link")),
            "{named}: {faults:?}\n{}",
            run.output
        );
    }
    // Its own folder is shown, and the links in it lead nowhere.
    let run = attack(
        "ur",
        &dir,
        "play",
        Level::Isolated,
        &format!(
            "read --secret {secret} {reads} {}",
            bot.join("notes.txt").display()
        ),
        &[],
        &[],
    );
    honest_unaffected(&run);
    let said = run.reports_of("read");
    assert_eq!(said.len(), 4, "{:?}\n{}", run.reports, run.output);
    assert!(said.iter().all(|r| r.contains(": contained ")), "{said:?}");
}

#[test]
fn an_isolated_bot_cannot_write_records_a_database_or_the_host_files() {
    if !isolation("write") {
        return;
    }
    let dir = Scratch::new("write");
    let db = dir.path("ladder.db");
    std::fs::write(&db, b"database").unwrap();
    let record = dir.path("games.jsonl");
    let root = astragal_tests::workspace_root();
    let targets = [record.clone(), db.clone(), root.clone(), std::env::temp_dir()];
    let spec: Vec<String> = targets
        .iter()
        .map(|t| format!("--target {}", t.display()))
        .collect();
    let run = attack(
        "ur",
        &dir,
        "play",
        Level::Isolated,
        &format!("write {}", spec.join(" ")),
        &[],
        &[],
    );
    honest_unaffected(&run);
    let reports: Vec<&String> = run
        .reports
        .iter()
        .filter(|r| r.starts_with("ATTACK write"))
        .collect();
    assert_eq!(reports.len(), targets.len(), "{reports:?}");
    assert!(reports.iter().all(|r| r.contains(": contained ")), "{reports:?}");
    assert_eq!(std::fs::read(&db).unwrap(), b"database");
    assert!(!root.join("attack-was-here").exists());
    assert!(!std::env::temp_dir().join("attack-was-here").exists());
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(!text.contains("attack was here"), "the record was written to");
    // The record it was shown is the empty file that masks it, not the real one.
    assert_eq!(run.records.len(), 1);
}

#[test]
fn an_isolated_bot_reaches_no_network_not_even_loopback() {
    if !isolation("network") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = Scratch::new("network");
    let run = attack(
        "ur",
        &dir,
        "play",
        Level::Isolated,
        &format!("network --port {port}"),
        &[],
        &[],
    );
    let said = run.report("network");
    assert!(said.starts_with("contained"), "{said}");
    assert!(listener.accept().is_err(), "a connection came in");
    honest_unaffected(&run);
}

#[test]
fn a_file_left_in_one_game_is_gone_in_the_next_process() {
    for level in levels("remember") {
        let dir = Scratch::new(&format!("remember-{level}"));
        // Each game's attacker is a new process (isolated, the two games are
        // dealt apart and a kept process would simply remember).
        let run = attack(
            "ur",
            &dir,
            "match",
            level,
            "remember",
            &["--games", "2", "--fresh-bots"],
            &[],
        );
        honest_unaffected(&run);
        assert_eq!(run.records.len(), 2);
        let reports = run.reports_of("remember");
        assert_eq!(reports.len(), 2, "{reports:?}");
        for r in &reports {
            if level == Level::Isolated {
                assert!(r.contains("found []"), "{level}: {r}");
            } else {
                // At `none` the host's /tmp is shared; the scratch directory (its
                // home and working directory) is private.
                assert!(!r.contains("/memo\"") && !r.contains("\"memo\""), "{level}: {r}");
            }
        }
        let _ = std::fs::remove_file("/tmp/astragal-memo");
    }
}

#[test]
fn a_bot_that_memorizes_every_roll_never_meets_one_again_within_its_mirrored_group() {
    // Spartan Yahtzee, four mirrored groups: the attacker keeps every first-turn
    // roll revealed to it, in memory, in its working directory and in /tmp, and at
    // the first request of each game looks its own secret first roll up. A process
    // that had played the other game of the group would find it there (the honest
    // opponent stands, so its first roll is what was revealed).
    for level in levels("memorize") {
        let _ = std::fs::remove_file("/tmp/astragal-memo-rolls");
        let dir = Scratch::new(&format!("memorize-{level}"));
        let run = attack(
            "spartan",
            &dir,
            "match",
            level,
            "memorize",
            // A fixed seed: with a random one, two groups now and then deal the
            // same first roll (about 1 run in 200), which reads as a find.
            &["--games", "8", "--seed", "11"],
            &[],
        );
        honest_unaffected(&run);
        assert_eq!(run.records.len(), 8);
        let reports = run.reports_of("memorize");
        assert_eq!(reports.len(), 8, "one report a game: {reports:?}");
        let found = reports.iter().filter(|r| r.contains("escaped")).count();
        if level == Level::Isolated {
            // Memory is kept only within a rotation, and the disk is private.
            assert_eq!(found, 0, "{level}: {reports:?}");
        } else {
            // The control: at `none` the host's /tmp is shared, so rotation 1 of
            // each group reads rotation 0's rolls there. The lookup works.
            assert_eq!(
                found, 4,
                "{level}: the memorizer should find each group's roll via /tmp: {reports:?}"
            );
        }
        let _ = std::fs::remove_file("/tmp/astragal-memo-rolls");
        if level == Level::Isolated {
            // Two games at a time: still no process of one rotation meets the other.
            let dir = Scratch::new("memorize-concurrent");
            let run = attack(
                "spartan",
                &dir,
                "match",
                level,
                "memorize",
                &["--games", "8", "--concurrency", "2", "--seed", "11"],
                &[],
            );
            honest_unaffected(&run);
            let found: Vec<&String> = run
                .reports_of("memorize")
                .into_iter()
                .filter(|r| r.contains("escaped"))
                .collect();
            assert!(found.is_empty(), "concurrency 2: {found:?}");
            let _ = std::fs::remove_file("/tmp/astragal-memo-rolls");
        }
    }
}

#[test]
fn the_readmes_relative_bot_paths_work_under_isolation() {
    if !isolation("relative paths") {
        return;
    }
    let out = Command::new(astragal_tests::binary("referee"))
        .args([
            "play",
            "--game",
            "ur",
            "--sandbox",
            "isolated",
            "--movetime",
            "5000",
        ])
        .args([
            "--bot",
            "python3 bots/python/heuristic_bot.py",
            "--bot",
            "builtin:random",
        ])
        .current_dir(astragal_tests::workspace_root())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("py-heuristic") && !text.contains("fault"), "{text}");
}

/// A bot started as `VENV/bin/python bot.py` imports what only that virtual
/// environment holds, at every level: the program's path is kept as named (the
/// venv's `python` is a link to the base interpreter, which finds the environment
/// only from that path), and under isolation the environment's folder is shown.
#[test]
fn a_bot_started_by_a_virtual_environments_python_runs_in_that_environment() {
    let dir = Scratch::new("venv");
    let venv = dir.path("venv");
    // The bots' own python3, which an isolated bot sees (one elsewhere needs
    // --sandbox-ro naming its folder).
    let Some(base) = referee::sandbox::BOT_PATH
        .split(':')
        .map(|d| PathBuf::from(d).join("python3"))
        .find(|p| p.is_file())
    else {
        astragal_tests::skipped("virtual environments", "no python3 on the bots' PATH");
        return;
    };
    let made = Command::new(&base)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .expect("python3 runs");
    if !made.status.success() {
        astragal_tests::skipped(
            "virtual environments",
            &format!(
                "python3 -m venv failed (Debian: apt install python3-venv): {}",
                String::from_utf8_lossy(&made.stderr)
            ),
        );
        return;
    }
    let python = venv.join("bin/python");
    let purelib = Command::new(&python)
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        .output()
        .unwrap();
    let purelib = PathBuf::from(String::from_utf8_lossy(&purelib.stdout).trim());
    assert!(purelib.starts_with(&venv), "{}", purelib.display());
    std::fs::create_dir_all(&purelib).unwrap();
    std::fs::write(purelib.join("only_in_this_venv.py"), "NAME = 'from-the-venv'\n").unwrap();
    // The plain starter, named by the module: it cannot start without it.
    let starter =
        std::fs::read_to_string(astragal_tests::workspace_root().join("bots/starters/python/bot.py"))
            .unwrap();
    let bot = starter.replace(
        "NAME = \"starter-python\"",
        "import only_in_this_venv\nNAME = only_in_this_venv.NAME",
    );
    assert_ne!(bot, starter, "the starter names itself otherwise now");
    std::fs::write(dir.path("bot.py"), bot).unwrap();
    for level in levels("virtual environments") {
        let out = Command::new(astragal_tests::binary("referee"))
            .args(["play", "--game", "ur", "--movetime", "5000"])
            .args(["--sandbox", &level.to_string()])
            .arg("--bot")
            .arg(format!("{} {}", python.display(), dir.path("bot.py").display()))
            .args(["--bot", "builtin:random"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("from-the-venv") && !text.contains("fault"),
            "{level}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_missing_program_is_a_spawn_fault_that_says_where_it_looked() {
    let out = Command::new(astragal_tests::binary("referee"))
        .args([
            "play",
            "--game",
            "ur",
            "--bot",
            "no-such-interpreter x.py",
            "--bot",
            "builtin:random",
        ])
        .current_dir(astragal_tests::workspace_root())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("spawn") && text.contains("not on the bots' PATH"),
        "{text}"
    );
    // The result is printed, and the exit status says the game was not played.
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("seat 0 could not start"));
}

/// The seat names of `games` games of Ur played with one reusing pool: the
/// attacker (burning `burn` CPU seconds each game) against a built-in.
fn kept_names(cpu_seconds: u64, burn: f64, games: u64) -> Vec<String> {
    let limits = referee::Limits {
        tc: referee::TimeControl::MoveTime(std::time::Duration::from_secs(5)),
        sandbox: Sandbox {
            cpu_seconds,
            ..Sandbox::default()
        },
        ..astragal_tests::fast_limits()
    };
    let seats = [
        referee::SeatSetup::new(referee::BotSpec::Process {
            command: format!("{ATTACKER} --attack burn --seconds {burn}"),
        }),
        referee::SeatSetup::new(referee::BotSpec::parse("builtin:first").unwrap()),
    ];
    let mut pool = referee::BotPool::reusing();
    (1..=games)
        .map(|seed| {
            let setup = referee::GameSetup {
                game: "ur".into(),
                options: vec![],
                seed,
                position: None,
                pairing: None,
            };
            let rec =
                referee::play_game_in(&setup, &seats, &limits, &referee::LogPlace::default(), &mut pool)
                    .unwrap();
            assert!(rec.faults.is_empty(), "{:?}", rec.faults);
            rec.seats[0].name.clone()
        })
        .collect()
}

#[test]
fn a_kept_process_that_used_half_its_cpu_limit_is_restarted_between_games() {
    let counts_cpu = CgroupSupport::probe().as_ref().is_some_and(|c| c.cpu());
    if !counts_cpu {
        astragal_tests::skipped(
            "cpu",
            "this machine gives the referee no cgroup that counts CPU time",
        );
        return;
    }
    // A budget of 2 s: after a game that burned 1.2 s, a new process.
    let names = kept_names(2, 1.2, 2);
    assert_ne!(names[0], names[1], "the spent process was kept: {names:?}");
    // A budget of 100 s: the same process plays on.
    let names = kept_names(100, 0.2, 2);
    assert_eq!(
        names[0], names[1],
        "a process was restarted needlessly: {names:?}"
    );
}

/// `kill -9` of a referee runs no destructor: its bots' scratch directories
/// (225 MB seen) and cgroups (1,139 found on one machine) stayed. The next
/// referee removes what a dead referee left, and nothing of a live one's.
#[test]
fn what_a_killed_referee_left_is_cleaned_at_the_next_start() {
    // A process id that is surely dead: a child that has been reaped.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let live = std::process::id();
    let tmp = std::env::temp_dir();
    let stale = tmp.join(format!("astragal-bot-{dead}-0123456789abcdef"));
    let kept = tmp.join(format!("astragal-bot-{live}-0123456789abcdef"));
    for dir in [&stale, &kept] {
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/big"), b"left behind").unwrap();
    }
    // Stale cgroups too, where the machine gives the referee some.
    let parent = CgroupSupport::probe()
        .as_ref()
        .and_then(|c| c.memory_parent().cloned());
    let stale_group = parent.as_ref().map(|p| p.join(format!("astragal-{dead}-0")));
    if let Some(g) = &stale_group {
        std::fs::create_dir_all(g).unwrap();
    }
    let o = Command::new(astragal_tests::binary("referee"))
        .args(["play", "--game", "ur", "--bot", "builtin:random", "--bot"])
        .arg(format!("{HONEST} --mode good"))
        .current_dir(astragal_tests::workspace_root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !stale.exists(),
        "a dead referee's scratch directory is still there"
    );
    assert!(kept.exists(), "a live referee's scratch directory was removed");
    let _ = std::fs::remove_dir_all(&kept);
    match stale_group {
        Some(g) => assert!(
            !g.exists(),
            "a dead referee's cgroup is still there: {}",
            g.display()
        ),
        None => {
            astragal_tests::skipped("the cgroup part", "this machine gives the referee no cgroups");
        }
    }
}

/// Runs `args` of the `ladder` program with the `signal` attacker against an honest
/// bot (Spartan Yahtzee, mirrored groups, bots' stderr in `logs`), and returns the
/// attacker's reports.
fn ladder_signal_reports(dir: &Scratch, level: Level, args: &[&str]) -> Vec<String> {
    let logs = dir.path("logs");
    let out = Command::new(astragal_tests::binary("ladder"))
        .args(args)
        .args(["--game", "spartan", "--movetime", "2000", "--seed", "11"])
        .args(["--sandbox", &level.to_string()])
        .arg("--log-dir")
        .arg(&logs)
        .current_dir(astragal_tests::workspace_root())
        .output()
        .expect("ladder runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    attacks::reports(&logs, "ATTACK ")
        .into_iter()
        .filter(|l| l.starts_with("ATTACK signal"))
        .collect()
}

/// Attack: two live processes of one bot can always signal each other; the red
/// team's channel was file locks on files every sandbox shares (`/usr/bin/*`). The
/// process that played rotation 0 of a mirrored group stayed alive (kept for its
/// next game) while rotation 1 was played, and told it the other army's secret
/// first roll (before: 5 of 20 games at concurrency 1 and 4 of 20 at 2, seed 11,
/// isolated; 3 of 20 in a tournament, 5 of 20 in an SPRT). Now every process
/// of a rotation has exited before the next rotation starts, and no two rotations
/// of a group run at once: in `referee match` at concurrency 1 and 2, `ladder
/// tournament` and `ladder sprt`, at both sandbox levels.
#[test]
fn a_live_process_of_one_rotation_never_signals_to_the_next() {
    for level in levels("signal") {
        for concurrency in ["1", "2"] {
            let dir = Scratch::new(&format!("signal-{level}-{concurrency}"));
            let run = attack(
                "spartan",
                &dir,
                "match",
                level,
                "signal",
                &["--games", "20", "--seed", "11", "--concurrency", concurrency],
                &[],
            );
            honest_unaffected(&run);
            let reports = run.reports_of("signal");
            // The attack ran in every game: it heard, after the reveal, whether a
            // process of the other rotation had spelled the other army's roll.
            assert_eq!(reports.len(), 20, "{level} c{concurrency}: {reports:?}");
            let heard: Vec<&String> = reports.into_iter().filter(|r| r.contains("escaped")).collect();
            // Isolated, games are dealt apart and a kept process holds the
            // words of every game it played: chance hits happen (a live
            // channel under mirrored dice heard 20 of 20).
            assert!(
                heard.len() <= attacks::SIGNAL_CHANCE_HITS,
                "{level} c{concurrency}: {heard:?}"
            );
        }
        let attacker = format!("signal={ATTACKER} --attack signal");
        let honest = format!("good={HONEST} --mode good");
        let dir = Scratch::new(&format!("signal-tournament-{level}"));
        let db = dir.path("t.db");
        let reports = ladder_signal_reports(
            &dir,
            level,
            &[
                "tournament",
                "--bot",
                &attacker,
                "--bot",
                &honest,
                "--games",
                "20",
                "--concurrency",
                "2",
                "--db",
                db.to_str().unwrap(),
            ],
        );
        assert_eq!(reports.len(), 20, "tournament {level}: {reports:?}");
        assert!(
            reports.iter().all(|r| r.contains("contained")),
            "tournament {level}: {reports:?}"
        );
        let dir = Scratch::new(&format!("signal-sprt-{level}"));
        let reports = ladder_signal_reports(
            &dir,
            level,
            &[
                "sprt",
                "--bot",
                &attacker,
                "--vs",
                &honest,
                "--max-games",
                "20",
                "--concurrency",
                "2",
            ],
        );
        assert_eq!(reports.len(), 20, "sprt {level}: {reports:?}");
        assert!(
            reports.iter().all(|r| r.contains("contained")),
            "sprt {level}: {reports:?}"
        );
    }
}

/// Attack (issue 59): a bot's live processes copy each other's words (byte-range
/// locks on a file every sandbox shows), so a word outlives its speller while any
/// process of the bot lives anywhere on the machine, and carries a group's
/// rotation 0 dice to its rotation 1 through processes of other groups, other
/// threads, other runs; and the `cache` attacker, whose words sit in the page
/// cache of a large file every sandbox shows and outlive every process (with
/// the rotation gate, issue 81: an isolated `referee match --concurrency 1`
/// heard 10 of 20). Before the machine's rotation gate, `referee match
/// --concurrency 2` (64 games, seed 11, isolated) heard the other army's secret
/// first roll in 16 of its 32 second games, at 4 in 32 of 32, and a second run on
/// the machine relayed for a match at concurrency 1 in 20 of 20. Now a group's
/// next rotation starts only once no bot process lives on the machine. Now
/// (issue 81) no gate: an isolated match deals every game its own seed, so
/// nothing one rotation saw tells anything of the next; at `--sandbox none`
/// the bots are the user's own, mirrored, and not in this threat model.
#[test]
fn a_relay_of_live_processes_or_of_the_page_cache_carries_nothing_from_one_rotation_to_the_next() {
    for level in levels("relay").into_iter().filter(|l| *l == Level::Isolated) {
        // Live words (`relay`), and words in the page cache that outlive every
        // process (`cache`). The page cache keeps words from run to run, so
        // its runs take seeds of their own (from the OS): a run with a seed
        // another run played mirrored hears that run's words (a seed that came
        // back; 3 of 64 seen).
        for (relay, seed, chance) in [
            ("relay", "11", RELAY_CHANCE_HITS),
            ("cache", "", CACHE_CHANCE_HITS),
        ] {
            for concurrency in ["1", "2", "4"].into_iter().skip(usize::from(relay == "relay")) {
                let dir = Scratch::new(&format!("{relay}-{level}-{concurrency}"));
                let mut args = vec!["--games", "64", "--concurrency", concurrency];
                if !seed.is_empty() {
                    args.extend(["--seed", seed]);
                }
                let run = attack("spartan", &dir, "match", level, relay, &args, &[]);
                honest_unaffected(&run);
                let (hits, games) = hits_of(&run.reports, relay);
                assert_eq!(games, 64, "{relay} {level} c{concurrency}: {:?}", run.reports);
                assert!(
                    hits <= chance,
                    "{relay} {level} c{concurrency}: {hits} of 64 games heard: {:?}",
                    run.reports
                );
            }
        }
        // A second run of the same bot on the machine, alive throughout.
        let dir = Scratch::new(&format!("relay-{level}-second-run"));
        let second_run = attacks::SecondRun::start(
            &format!("{ATTACKER} --attack relay"),
            &format!("{HONEST} --mode good"),
            &level.to_string(),
            &dir.path("background-logs"),
        );
        let run = attack(
            "spartan",
            &dir,
            "match",
            level,
            "relay",
            &["--games", "40", "--seed", "11", "--concurrency", "1"],
            &[],
        );
        drop(second_run);
        honest_unaffected(&run);
        let (hits, games) = hits_of(&run.reports, "relay");
        assert_eq!(games, 40, "{level} second run: {:?}", run.reports);
        assert!(
            hits <= RELAY_CHANCE_HITS,
            "{level} beside a second run: {hits} of 20 second games heard: {:?}",
            run.reports
        );
    }
}

/// Whether this machine freezes bots and caps their CPU; if not, says why the
/// test is skipped.
fn cpu_walls(test: &str) -> bool {
    let support = CgroupSupport::probe().as_ref();
    let missing = CgroupSupport::not_promised(support);
    let cpu: Vec<&str> = missing.into_iter().filter(|m| !m.contains("memory")).collect();
    cpu.is_empty() || astragal_tests::skipped(test, &cpu.join("; "))
}

/// Attack (issue 76): a bot that hogs the CPU while its opponent thinks. At its
/// first request it starts 16 helpers, each in a session of its own, that
/// compute for ever and append a byte to a file every few milliseconds; its
/// opponent reads the file's length at each request, computes 20 ms, and reads
/// it again. Before seats were frozen, the helpers ran through the opponent's
/// turns (on a 2-core worker: 17 of 26 games lost on time by an honest bot).
/// Now a seat not to act is frozen, its whole tree, from its reply to its
/// next request: not one byte is written while the opponent thinks, and the
/// file shows the helpers ran in the hog's own turns.
#[test]
fn a_hogs_helpers_get_no_cpu_while_its_opponent_thinks() {
    if !cpu_walls("hog") {
        return;
    }
    let dir = Scratch::new("hog");
    let ticks = dir.path("ticks");
    let ticks = ticks.to_str().unwrap();
    let logs = dir.path("logs");
    let out = Command::new(astragal_tests::binary("referee"))
        .args([
            "match",
            "--game",
            "ur",
            "--movetime",
            "2000",
            "--games",
            "4",
            "--seed",
            "5",
        ])
        .arg("--bot")
        .arg(format!("{ATTACKER} --attack hog --ticks {ticks}"))
        .arg("--bot")
        .arg(format!("{ATTACKER} --attack victim --ticks {ticks}"))
        .arg("--log-dir")
        .arg(&logs)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let turns = attacks::reports(&logs, "TICKS ");
    assert!(
        turns.len() >= 20,
        "the victim was asked {} times: {said}",
        turns.len()
    );
    let ran = std::fs::metadata(ticks).map_or(0, |m| m.len());
    assert!(ran > 0, "the hog's helpers never ran: {turns:?}");
    let during: Vec<&String> = turns.iter().filter(|t| !t.starts_with("TICKS 0 ")).collect();
    assert!(
        during.is_empty(),
        "the hog's helpers computed while the victim thought ({} of {} turns; {ran} ticks in all): {during:?}",
        during.len(),
        turns.len()
    );
}

/// Attack (issue 76): a bot that, when it is to act, computes on four helpers
/// at once for 600 ms of wall time. Its whole tree gets its share
/// (`--bot-cores`), however many processes it starts: at most the share of
/// the wall time, and a period (100 ms) over at the edges. Before, the tree
/// took every core (on 2 cores about 1,200 ms).
#[test]
fn a_bot_to_act_gets_its_cpu_share_and_no_more() {
    if !cpu_walls("wide") {
        return;
    }
    for (cores, most_ms) in [("1", 600 + 200), ("0.5", 300 + 100)] {
        let dir = Scratch::new(&format!("wide-{cores}"));
        let logs = dir.path("logs");
        let out = Command::new(astragal_tests::binary("referee"))
            .args([
                "match",
                "--game",
                "ur",
                "--movetime",
                "5000",
                "--games",
                "2",
                "--seed",
                "3",
            ])
            .args(["--bot-cores", cores])
            .arg("--bot")
            .arg(format!("{ATTACKER} --attack wide --ms 600"))
            .args(["--bot", "builtin:random", "--log-dir"])
            .arg(&logs)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{said}");
        let reports = attacks::reports(&logs, "WIDE ");
        assert_eq!(reports.len(), 2, "{cores} cores: {reports:?} {said}");
        for r in &reports {
            let cpu: i64 = r
                .split_whitespace()
                .find_map(|w| w.strip_prefix("cpu_ms="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(-1);
            assert!(r.contains("helpers=4"), "{r}");
            assert!(
                (0..=most_ms).contains(&cpu),
                "{cores} cores: the tree took {cpu} ms of CPU in 600 ms ({r})"
            );
        }
    }
}
