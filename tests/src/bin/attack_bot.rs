//! A bot that attacks its host, one way per `--attack`, for the sandbox tests. It
//! plays the first legal move, and at its first request of each game it tries the
//! attack and writes what it found to stderr as `ATTACK <name>: escaped|contained
//! <detail>`; the tests read that from its stderr log and check the host too.
//!
//! Attacks: `env --secret S` (an environment value equal to S), `proc` (another process
//! whose command line holds [`OTHERS_MARKER`], or any process's memory),
//! `kill-others` (kill -9 every process it can see, and -1), `kill-parent`,
//! `daemon --tag N` (setsid and double fork into `sleep N`), `processes` (start 500),
//! `memory` (touch 4 GiB), `file-size` (write 1 GiB), `write --target PATH`
//! (repeatable: append to PATH, or make a file in it if it is a directory),
//! `read --secret S --read=PATH` (repeatable: read PATH, escaped if it holds S),
//! `network --port P` (connect to 127.0.0.1:P), `remember` (leave a file in its
//! home and /tmp, and say if one was there already), `burn --seconds S` (compute),
//! `memorize` (Spartan Yahtzee: keep every army's revealed first-turn dice, in
//! memory, in its working directory and in /tmp, and at the first request of each
//! game say whether its own secret first roll is one it saw before: the mark of a
//! process that played the other game of its mirrored group), `clock` (Spartan
//! Yahtzee: time the gap between its first reroll's answer and its second reroll's
//! request, and once the next turn reveals the other army's dice, write
//! `GAP plague|other <microseconds>`: whether the other army held only Plague),
//! `signal` (Spartan Yahtzee: a live channel between its processes, through file
//! locks on files every sandbox shares: once the first turn is revealed, it holds
//! locks that spell its own first roll under a key made of the other army's roll,
//! for as long as it lives; at the first request of each game it reads what is
//! spelled under its own secret first roll, which is where a process of it that
//! played the other rotation of the group, if still alive, spelled the roll the
//! other army holds now; after the reveal it says whether that was right),
//! `relay` (`signal`, and a thread that copies what every other live process of
//! it spells and holds the copy while it lives: a word passes from process to
//! process across groups, threads and runs on one machine for as long as one
//! of them is alive).
//! `cache` (the same words, in the page cache of a large file every sandbox
//! shows: they outlive the process that spelled them, and every process; see
//! `PageCache`).
//! `unix --socket PATH` (repeatable: connect to a Unix socket of the host's),
//! `syscalls` (ptrace and process_vm_readv on a child of its own, a user
//! namespace, io_uring, keyctl, userfaultfd, a Unix socket: escaped if any works),
//! `uid` (says the user id it runs as), `fds --secret S` (escaped if a
//! descriptor it holds leads to a file whose path holds S).
//! `hog --ticks PATH` (at its first request, 16 helpers, each in a session of its
//! own, compute for ever and append a byte to PATH every few milliseconds: what
//! runs while its opponent thinks), `victim --ticks PATH` (at every request, reads
//! PATH's length, computes about 20 ms (`--work-ms`), reads it again, and writes `TICKS n`:
//! how far the hog's helpers got while it was to act), `wide --ms W` (at its
//! first request, 4 helpers compute for W ms of wall time while it waits, then
//! it writes `WIDE cpu_ms=C wall_ms=W`: the CPU its whole tree got).
//! It names itself `attack-<attack>-<pid>`.

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The string the sandbox tests put in the opponent's command line.
pub const OTHERS_MARKER: &str = "opponent-marker-7f3a";

fn report(attack: &str, escaped: bool, detail: &str) {
    let verdict = if escaped { "escaped" } else { "contained" };
    eprintln!("ATTACK {attack}: {verdict} {detail}");
}

fn values(args: &[String], key: &str) -> Vec<String> {
    args.windows(2)
        .filter(|w| w[0] == key)
        .map(|w| w[1].clone())
        .collect()
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Tries the attack; returns `info` lines to send with the move.
fn attack(name: &str, args: &[String]) -> Vec<String> {
    let mut said = Vec::new();
    let me = std::process::id();
    let secret = values(args, "--secret").pop().unwrap_or_default();
    // What the tests put in the other bot's command line (and so in the referee's):
    // never in this bot's own, so that finding it means seeing another process.
    let marker = OTHERS_MARKER;
    match name {
        "env" => {
            let found: Vec<String> = std::env::vars()
                .filter(|(_, v)| !secret.is_empty() && v.contains(&secret))
                .map(|(k, _)| k)
                .collect();
            let names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
            report(
                name,
                !found.is_empty(),
                &format!("found in {found:?}; all: {names:?}"),
            );
        }
        "proc" => {
            let mut seen = Vec::new();
            let mut escaped = Vec::new();
            for pid in pids().into_iter().filter(|&p| p != me) {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                if cmdline.contains(marker) {
                    escaped.push(format!("cmdline of {pid}: {cmdline}"));
                }
                // Reading another process's memory needs ptrace rights over it.
                if let Ok(mut mem) = std::fs::File::open(format!("/proc/{pid}/mem")) {
                    let mut byte = [0u8; 1];
                    if mem.read(&mut byte).is_ok() {
                        escaped.push(format!("memory of {pid}"));
                    }
                }
                seen.push(format!("{pid}={}", cmdline.split(' ').next().unwrap_or("")));
            }
            report(name, !escaped.is_empty(), &format!("{escaped:?}; saw {seen:?}"));
        }
        "kill-others" => {
            let mut killed = Vec::new();
            for pid in pids().into_iter().filter(|&p| p != me) {
                let ok = Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if ok {
                    killed.push(pid);
                }
            }
            // What it could reach; the test checks that the others played on. Then
            // every process it may signal, itself included.
            report(name, false, &format!("signalled {killed:?}"));
            let _ = Command::new("kill")
                .args(["-9", "-1"])
                .stderr(Stdio::null())
                .status();
        }
        "kill-parent" => {
            let parent = std::os::unix::process::parent_id();
            let ok = Command::new("kill")
                .args(["-9", &parent.to_string()])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            report(name, false, &format!("kill -9 {parent}: {ok}"));
        }
        "daemon" => {
            let tag = values(args, "--tag").pop().unwrap_or_else(|| "4177".into());
            // The shell forks a child that makes a new session and runs sleep, and
            // exits: the sleep is an orphan in its own session and process group.
            let ok = Command::new("sh")
                .args(["-c", &format!("setsid sleep {tag} </dev/null >/dev/null 2>&1 &")])
                .status()
                .is_ok_and(|s| s.success());
            report(name, false, &format!("daemonized: {ok}"));
        }
        "processes" => {
            let mut children = Vec::new();
            for _ in 0..500 {
                match Command::new("sleep").arg("60").spawn() {
                    Ok(c) => children.push(c),
                    Err(_) => break,
                }
            }
            report(
                name,
                children.len() >= 500,
                &format!("started {}", children.len()),
            );
            std::mem::forget(children);
        }
        "memory" => {
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            for i in 0..64 {
                blocks.push(vec![1u8; 64 << 20]);
                eprintln!("holding {} MiB", (i + 1) * 64);
            }
            report(name, true, &format!("held {} MiB", blocks.len() * 64));
        }
        "file-size" => {
            let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
            let chunk = vec![b'x'; 1 << 20];
            let mut written = 0usize;
            if let Ok(mut f) = std::fs::File::create(format!("{home}/big")) {
                for _ in 0..1024 {
                    if f.write_all(&chunk).is_err() {
                        break;
                    }
                    written += 1;
                }
            }
            report(name, written >= 1024, &format!("wrote {written} MiB"));
        }
        "write" => {
            for target in values(args, "--target") {
                let path = std::path::Path::new(&target);
                let result = if path.is_dir() {
                    std::fs::write(path.join("attack-was-here"), b"x")
                } else {
                    std::fs::OpenOptions::new()
                        .append(true)
                        .open(path)
                        .and_then(|mut f| f.write_all(b"attack was here\n"))
                };
                report(name, result.is_ok(), &format!("{target}: {result:?}"));
            }
        }
        "read" => {
            // Paths come as `--read=PATH`: a word that starts with `-` is never
            // resolved by the referee, so naming it shows nothing.
            for target in args.iter().filter_map(|a| a.strip_prefix("--read=")) {
                let got = std::fs::read(target).map(|b| String::from_utf8_lossy(&b).into_owned());
                let escaped = got
                    .as_ref()
                    .is_ok_and(|t| !secret.is_empty() && t.contains(&secret));
                // What it read goes out on an `info` line, for the public record.
                if let Ok(text) = &got {
                    said.push(format!("read {}", text.trim()));
                }
                report(name, escaped, &format!("{target}: {:?}", got.map(|t| t.len())));
            }
        }
        "network" => {
            let port = values(args, "--port").pop().unwrap_or_default();
            let addr = format!("127.0.0.1:{port}");
            let result = addr.parse().map_err(|e| format!("{e}")).and_then(|a| {
                std::net::TcpStream::connect_timeout(&a, Duration::from_secs(2)).map_err(|e| e.to_string())
            });
            report(name, result.is_ok(), &format!("{addr}: {:?}", result.map(|_| ())));
        }
        "unix" => {
            // A socket file of the host's (a database's, say) that it names: any
            // connection is an escape, whatever answers.
            for path in values(args, "--socket") {
                let result = std::os::unix::net::UnixStream::connect(&path);
                report(name, result.is_ok(), &format!("{path}: {:?}", result.map(|_| ())));
            }
        }
        "syscalls" => {
            let tried = forbidden_calls();
            let escaped: Vec<&String> = tried.iter().filter(|t| t.ends_with(": done")).collect();
            report(name, !escaped.is_empty(), &tried.join("; "));
        }
        "fds" => {
            // What it was handed besides its pipes: anything whose target names
            // the secret (a host file opened by whatever started the referee).
            let mut open = Vec::new();
            for entry in std::fs::read_dir("/proc/self/fd").into_iter().flatten().flatten() {
                let target = std::fs::read_link(entry.path()).unwrap_or_default();
                open.push(format!(
                    "{}->{}",
                    entry.file_name().to_string_lossy(),
                    target.display()
                ));
            }
            let escaped = !secret.is_empty() && open.iter().any(|o| o.contains(&secret));
            report(name, escaped, &open.join(" "));
        }
        "uid" => {
            report(name, false, &format!("uid={}", nix::unistd::getuid()));
        }
        "remember" => {
            let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
            let places = [
                format!("{home}/memo"),
                "/tmp/astragal-memo".to_owned(),
                "memo".to_owned(),
            ];
            let found: Vec<&String> = places
                .iter()
                .filter(|p| std::path::Path::new(p).exists())
                .collect();
            for p in &places {
                let _ = std::fs::write(p, format!("{me}"));
            }
            report(name, !found.is_empty(), &format!("pid {me} found {found:?}"));
        }
        "burn" => {
            // Computes for a while, as a bot that thinks between requests would.
            let seconds: f64 = values(args, "--seconds")
                .pop()
                .and_then(|s| s.parse().ok())
                .unwrap_or(1.0);
            // CPU time, not wall time: on a loaded machine a second of wall time can be
            // far less of the CPU, and the tests count what the sandbox counts.
            let start = cpu_seconds();
            let mut x = 1u64;
            while cpu_seconds() - start < seconds {
                for _ in 0..100_000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
            }
            report(name, false, &format!("burned {seconds} s ({x})"));
        }
        "hog" => {
            static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if STARTED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                return Vec::new();
            }
            let ticks = values(args, "--ticks").pop().unwrap_or_default();
            let me = std::env::current_exe().expect("its own program");
            for _ in 0..16 {
                let _ = Command::new(&me)
                    .args(["--hog-helper", &ticks])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn();
            }
            report(name, false, "helpers started");
        }
        "wide" => {
            let ms: u64 = values(args, "--ms")
                .pop()
                .and_then(|s| s.parse().ok())
                .unwrap_or(500);
            let me = std::env::current_exe().expect("its own program");
            let mut helpers: Vec<_> = (0..4)
                .filter_map(|_| {
                    Command::new(&me)
                        .args(["--wide-helper", &ms.to_string()])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .spawn()
                        .ok()
                })
                .collect();
            for h in &mut helpers {
                let _ = h.wait();
            }
            let used = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
                .map(|u| {
                    let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() * 1000 + tv.tv_usec() / 1000;
                    t(u.user_time()) + t(u.system_time())
                })
                .unwrap_or(-1);
            eprintln!("WIDE cpu_ms={used} wall_ms={ms} helpers={}", helpers.len());
        }
        _ => report(name, false, "unknown attack"),
    }
    said
}

/// CPU time this process has used (user and system), from `/proc/self/stat`.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name (which may hold spaces) come the fields from the 3rd;
    // utime and stime are the 14th and 15th, in clock ticks of 1/100 s on Linux.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |k: usize| fields.get(k).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// What the `memorize` attack keeps: every first-turn roll revealed to it.
#[derive(Default)]
struct Memory {
    rolls: std::collections::HashSet<String>,
}

impl Memory {
    const FILES: [&str; 2] = ["memo-rolls", "/tmp/astragal-memo-rolls"];

    /// Sees one request's observation (Spartan).
    fn see(&mut self, obs: &str) {
        let Ok(obs) = serde_json::from_str::<serde_json::Value>(obs) else {
            return;
        };
        let turn = obs["turn"].as_u64().unwrap_or(0);
        let decided_before = obs["phase"] != "reroll1";
        if turn == 1 && !decided_before {
            let mine = roll_key(&obs["your_dice"]);
            let on_disk = Memory::FILES.iter().flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            });
            let known = self.rolls.contains(&mine) || on_disk.into_iter().any(|r| r == mine);
            report(
                "memorize",
                known,
                &format!(
                    "pid {} first roll {mine} {}",
                    std::process::id(),
                    if known { "seen before" } else { "new" }
                ),
            );
        }
        if turn == 2 && !decided_before {
            for army in obs["last_reveal"]["dice"].as_array().into_iter().flatten() {
                let key = roll_key(army);
                for f in Memory::FILES {
                    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(f) {
                        let _ = writeln!(file, "{key}");
                    }
                }
                self.rolls.insert(key);
            }
        }
    }
}

/// What the `signal` and `relay` attacks keep.
#[derive(Default)]
struct Signal {
    /// The attack's name, in its reports.
    name: &'static str,
    /// This game's own first roll.
    first_roll: Option<String>,
    /// What was spelled under it when the game began (0: nothing).
    heard: u16,
    /// The locks it holds, for as long as it lives.
    held: Vec<nix::fcntl::Flock<std::fs::File>>,
}

impl Signal {
    const SLOTS: usize = 16;
    const BITS: usize = 16;

    /// Files every sandbox shows, the same inodes for all: the host's programs.
    fn files() -> Vec<std::path::PathBuf> {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir("/usr/bin")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_file()))
            .collect();
        files.sort();
        files.truncate(Signal::SLOTS * Signal::BITS);
        files
    }

    /// A roll's 16-bit mark, never 0.
    fn mark(roll: &str) -> u16 {
        let mut h: u32 = 0x811c_9dc5;
        for b in roll.bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        ((h ^ (h >> 16)) as u16) | 1
    }

    /// What is spelled in `slot`: a bit is set where another process holds a lock.
    fn read(slot: usize) -> u16 {
        use nix::fcntl::{Flock, FlockArg};
        let files = Signal::files();
        let mut value = 0u16;
        for bit in 0..Signal::BITS {
            let Some(path) = files.get(slot * Signal::BITS + bit) else {
                return 0;
            };
            let Ok(file) = std::fs::File::open(path) else {
                continue;
            };
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => drop(lock.unlock()),
                Err(_) => value |= 1 << bit,
            }
        }
        value
    }

    /// Spells `value` in `slot`, for as long as this process lives.
    fn spell(&mut self, slot: usize, value: u16) {
        self.held.extend(Signal::hold(slot, value));
    }

    /// Shared locks that spell `value` in `slot`, held as long as they are kept.
    fn hold(slot: usize, value: u16) -> Vec<nix::fcntl::Flock<std::fs::File>> {
        use nix::fcntl::{Flock, FlockArg};
        let files = Signal::files();
        let mut held = Vec::new();
        for bit in 0..Signal::BITS {
            if value & (1 << bit) == 0 {
                continue;
            }
            let Some(Ok(file)) = files.get(slot * Signal::BITS + bit).map(std::fs::File::open) else {
                continue;
            };
            if let Ok(lock) = Flock::lock(file, FlockArg::LockSharedNonblock) {
                held.push(lock);
            }
        }
        held
    }

    /// Sees a request's observation (Spartan).
    fn request(&mut self, obs: &str) {
        let Ok(obs) = serde_json::from_str::<serde_json::Value>(obs) else {
            return;
        };
        let (turn, first_step) = (obs["turn"].as_u64().unwrap_or(0), obs["phase"] == "reroll1");
        if turn == 1 && first_step {
            let mine = roll_key(&obs["your_dice"]);
            self.heard = Signal::read(usize::from(Signal::mark(&mine)) % Signal::SLOTS);
            self.first_roll = Some(mine);
        }
        if turn == 2 && first_step {
            let Some(mine) = self.first_roll.take() else {
                return;
            };
            let seat = obs["seat"].as_u64().unwrap_or(0) as usize;
            let theirs = roll_key(&obs["last_reveal"]["dice"][1 - seat]);
            let right = self.heard != 0 && self.heard == Signal::mark(&theirs);
            report(
                self.name,
                right,
                &format!(
                    "pid {} heard {:#06x}, the other army rolled {theirs}",
                    std::process::id(),
                    self.heard
                ),
            );
            self.spell(
                usize::from(Signal::mark(&theirs)) % Signal::SLOTS,
                Signal::mark(&mine),
            );
        }
    }
}

/// The `relay` attack: words as byte-range read locks on one file every sandbox
/// shows, at offset `key << 16 | value` (a lock may lie past the file's end), so
/// any number of words live side by side; and a thread that copies every word
/// another process holds onto a descriptor of its own, for as long as it lives.
/// A word so passes from process to process, across groups, threads and runs on
/// the machine, while any process of the bot is alive anywhere on it.
struct Relay {
    /// Its own words (one per game played), held while it lives.
    spoken: std::fs::File,
}

impl Relay {
    /// Keys: a roll's mark, cut to 12 bits so a thread can look at every one.
    const KEYS: u64 = 1 << 12;

    fn file() -> Option<std::fs::File> {
        ["/usr/bin/env", "/bin/sh"]
            .iter()
            .find_map(|p| std::fs::File::open(p).ok())
    }

    fn start() -> Relay {
        std::thread::spawn(|| {
            let (Some(copies), Some(look)) = (Relay::file(), Relay::file()) else {
                return;
            };
            loop {
                for key in 0..Relay::KEYS {
                    let mut from = key << 16;
                    while let Some(at) = Relay::other_lock(&look, from, (key + 1) << 16) {
                        Relay::lock(&copies, at);
                        from = at + 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Relay {
            spoken: Relay::file().expect("a file every sandbox shows"),
        }
    }

    /// A lock record of `kind` over `[from, from + len)`.
    fn range(kind: i32, from: u64, len: u64) -> nix::libc::flock {
        nix::libc::flock {
            l_type: kind as i16,
            l_whence: nix::libc::SEEK_SET as i16,
            l_start: from as i64,
            l_len: len as i64,
            l_pid: 0,
        }
    }

    /// The offset of a read lock that another descriptor holds in `[from, to)`.
    fn other_lock(file: &std::fs::File, from: u64, to: u64) -> Option<u64> {
        use nix::fcntl::{FcntlArg, fcntl};
        let mut probe = Relay::range(nix::libc::F_WRLCK, from, to - from);
        let r = fcntl(file, FcntlArg::F_OFD_GETLK(&mut probe));
        (r.is_ok() && probe.l_type != nix::libc::F_UNLCK as i16).then(|| (probe.l_start as u64).max(from))
    }

    /// A read lock on one byte at `at`, held by `file`'s descriptor.
    fn lock(file: &std::fs::File, at: u64) {
        use nix::fcntl::{FcntlArg, fcntl};
        let _ = fcntl(
            file,
            FcntlArg::F_OFD_SETLK(&Relay::range(nix::libc::F_RDLCK, at, 1)),
        );
    }

    fn key(roll: &str) -> u64 {
        u64::from(Signal::mark(roll)) % Relay::KEYS
    }
}

impl WordChannel for Relay {
    const NAME: &'static str = "relay";

    fn hear(&self, roll: &str) -> Option<u16> {
        let key = Relay::key(roll);
        // Any descriptor of this process's other than `spoken` sees the words
        // of every other process, and what its own thread copied.
        Relay::file()
            .and_then(|f| Relay::other_lock(&f, key << 16, (key + 1) << 16))
            .map(|at| (at & 0xffff) as u16)
    }

    fn spell(&mut self, roll: &str, word: u16) {
        Relay::lock(&self.spoken, Relay::key(roll) << 16 | u64::from(word));
    }
}

/// A way for words to pass between a bot's processes, each word under a key
/// made from a roll.
trait WordChannel {
    /// The attack's name, in its reports.
    const NAME: &'static str;
    /// The word under `roll`'s key, if any.
    fn hear(&self, roll: &str) -> Option<u16>;
    /// Leaves `word` under `roll`'s key.
    fn spell(&mut self, roll: &str, word: u16);
}

/// The relay attacks' play over a channel (Spartan): at the first request of a
/// game it hears the word under its own secret first roll, which is where a
/// process that played the other rotation of the group spelled the roll the
/// other army holds now; after the reveal it reports whether that was right
/// and spells, under the roll the other army had, the roll this army had.
struct Eavesdropper<C> {
    channel: C,
    first_roll: Option<String>,
    heard: Option<u16>,
}

impl<C: WordChannel> Eavesdropper<C> {
    fn new(channel: C) -> Self {
        Eavesdropper {
            channel,
            first_roll: None,
            heard: None,
        }
    }

    /// Sees a request's observation.
    fn request(&mut self, obs: &str) {
        let Ok(obs) = serde_json::from_str::<serde_json::Value>(obs) else {
            return;
        };
        let (turn, first_step) = (obs["turn"].as_u64().unwrap_or(0), obs["phase"] == "reroll1");
        if turn == 1 && first_step {
            let mine = roll_key(&obs["your_dice"]);
            self.heard = self.channel.hear(&mine);
            self.first_roll = Some(mine);
        }
        if turn == 2 && first_step {
            let Some(mine) = self.first_roll.take() else {
                return;
            };
            let seat = obs["seat"].as_u64().unwrap_or(0) as usize;
            let theirs = roll_key(&obs["last_reveal"]["dice"][1 - seat]);
            let heard = self.heard.take();
            report(
                C::NAME,
                heard == Some(Signal::mark(&theirs)),
                &format!("heard {heard:?}, the other army rolled {theirs}"),
            );
            self.channel.spell(&theirs, Signal::mark(&mine));
        }
    }
}

/// The `cache` attack: words in the kernel's page cache, which outlives every
/// process. The bot picks the largest file every sandbox shows (the host's
/// libraries, read-only) and gives each key 17 of its pages: a marker and 16
/// bits. To spell, it evicts the key's pages (`posix_fadvise(DONTNEED)`) and
/// reads in the marker and the pages of the bits that are 1; to hear, it asks
/// of each page whether it is cached (`preadv2(RWF_NOWAIT)`: `EAGAIN` if not),
/// which brings nothing in. Readahead is off on its descriptor
/// (`POSIX_FADV_RANDOM`), so a page read is the page alone. A word so passes
/// from a process that died to any process on the machine that comes after.
struct PageCache {
    file: std::fs::File,
    /// The first page of key 0.
    base: u64,
}

impl PageCache {
    const KEYS: u64 = 64;
    const PAGE: u64 = 4096;
    /// Pages a key holds: its marker (page 16) and its 16 bits.
    const PAGES: u64 = 17;

    /// The largest file (by size, then name) in the host's library and program
    /// folders, and where its middle span of pages begins.
    fn open() -> Option<PageCache> {
        let span = PageCache::KEYS * PageCache::PAGES * PageCache::PAGE;
        let mut best: Option<(u64, std::path::PathBuf)> = None;
        for dir in [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib",
            "/usr/bin",
        ] {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = e.path();
                let Ok(m) = path.symlink_metadata() else { continue };
                if m.is_file()
                    && m.len() >= 2 * span
                    && best.as_ref().is_none_or(|(l, p)| (m.len(), &path) > (*l, p))
                {
                    best = Some((m.len(), path));
                }
            }
        }
        let (len, path) = best?;
        let file = std::fs::File::open(path).ok()?;
        nix::fcntl::posix_fadvise(&file, 0, 0, nix::fcntl::PosixFadviseAdvice::POSIX_FADV_RANDOM).ok()?;
        Some(PageCache {
            file,
            base: ((len - span) / 2) & !(PageCache::PAGE - 1),
        })
    }

    fn page(&self, key: u64, bit: u64) -> u64 {
        self.base + (key * PageCache::PAGES + bit) * PageCache::PAGE
    }

    /// Whether the page at `at` is in the page cache (read without bringing it in).
    #[allow(unsafe_code)]
    fn cached(&self, at: u64) -> bool {
        use std::os::fd::AsRawFd;
        let mut byte = [0u8; 1];
        let iov = nix::libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        // SAFETY: one iovec over a live one-byte buffer, on a descriptor this
        // value owns (nix has no preadv2).
        let n =
            unsafe { nix::libc::preadv2(self.file.as_raw_fd(), &iov, 1, at as i64, nix::libc::RWF_NOWAIT) };
        n == 1
    }

    /// Reads in the page at `at`.
    fn touch(&self, at: u64) {
        let mut byte = [0u8; 1];
        let _ = std::os::unix::fs::FileExt::read_at(&self.file, &mut byte, at);
    }

    fn key(roll: &str) -> u64 {
        u64::from(Signal::mark(roll)) % PageCache::KEYS
    }
}

impl WordChannel for PageCache {
    const NAME: &'static str = "cache";

    fn hear(&self, roll: &str) -> Option<u16> {
        let key = PageCache::key(roll);
        self.cached(self.page(key, 16)).then(|| {
            (0..16u64)
                .filter(|&bit| self.cached(self.page(key, bit)))
                .fold(0u16, |v, bit| v | 1 << bit)
        })
    }

    fn spell(&mut self, roll: &str, word: u16) {
        let key = PageCache::key(roll);
        let _ = nix::fcntl::posix_fadvise(
            &self.file,
            self.page(key, 0) as i64,
            (PageCache::PAGES * PageCache::PAGE) as i64,
            nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
        );
        for bit in 0..16 {
            if word & (1 << bit) != 0 {
                self.touch(self.page(key, bit));
            }
        }
        self.touch(self.page(key, 16));
    }
}

/// What the `clock` attack keeps: when it answered its first reroll, and the gap
/// before the second, waiting for the reveal that classes it.
#[derive(Default)]
struct Clock {
    answered: Option<std::time::Instant>,
    gap_us: Option<u128>,
}

impl Clock {
    /// Sees a request's observation as it arrives (Spartan).
    fn request(&mut self, obs: &str) {
        let Ok(obs) = serde_json::from_str::<serde_json::Value>(obs) else {
            return;
        };
        if obs["phase"] == "reroll2" {
            self.gap_us = self.answered.take().map(|t| t.elapsed().as_micros());
        } else if let Some(gap) = self.gap_us.take() {
            let theirs = &obs["last_reveal"]["dice"][1 - obs["seat"].as_u64().unwrap_or(0) as usize];
            let plague = theirs
                .as_array()
                .into_iter()
                .flatten()
                .all(|d| d.as_u64() == Some(1));
            eprintln!("GAP {} {gap}", if plague { "plague" } else { "other" });
        }
    }

    /// Its answer to the first reroll went out.
    fn answered(&mut self, obs: &str) {
        if obs.contains("\"phase\":\"reroll1\"") {
            self.answered = Some(std::time::Instant::now());
        }
    }
}

/// A roll as sorted faces, whatever order it came in.
fn roll_key(dice: &serde_json::Value) -> String {
    let mut faces: Vec<u64> = dice
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_u64())
        .collect();
    faces.sort_unstable();
    faces.iter().map(|f| f.to_string()).collect()
}

/// Tries the calls a sandbox refuses, each as harmlessly as it can be made: what
/// each gave (`name: done` where it worked, else its error).
#[allow(unsafe_code)]
fn forbidden_calls() -> Vec<String> {
    use nix::libc;
    let said = |name: &str, r: libc::c_long| {
        if r >= 0 {
            format!("{name}: done")
        } else {
            format!("{name}: {}", std::io::Error::last_os_error())
        }
    };
    let mut out = Vec::new();
    // A child of its own to reach into: what ptrace and process_vm_readv allow a
    // process over its descendants, the way to another process of the same user.
    let child = Command::new("sleep").arg("30").spawn();
    if let Ok(child) = &child {
        let pid = child.id() as libc::pid_t;
        // SAFETY: ptrace(2) and process_vm_readv(2) with plain values and local buffers.
        unsafe {
            let r = libc::ptrace(libc::PTRACE_ATTACH, pid, 0, 0);
            out.push(said("ptrace", r));
            let mut buf = [0u8; 8];
            let local = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let remote = libc::iovec {
                iov_base: 0x400000 as *mut libc::c_void,
                iov_len: buf.len(),
            };
            let r = libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) as libc::c_long;
            // EFAULT is a read the kernel allowed at an address not mapped.
            let allowed = r >= 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT);
            out.push(if allowed {
                "process_vm_readv: done".to_owned()
            } else {
                said("process_vm_readv", r)
            });
        }
    }
    if let Ok(mut child) = child {
        let _ = child.kill();
        let _ = child.wait();
    }
    // SAFETY: each call takes plain integers or a zeroed local struct.
    unsafe {
        out.push(said(
            "unshare(user)",
            libc::unshare(libc::CLONE_NEWUSER) as libc::c_long,
        ));
        let mut params = [0u8; 120];
        out.push(said(
            "io_uring_setup",
            libc::syscall(libc::SYS_io_uring_setup, 1, params.as_mut_ptr()),
        ));
        // KEYCTL_GET_KEYRING_ID of the session keyring.
        out.push(said("keyctl", libc::syscall(libc::SYS_keyctl, 0, -3, 0)));
        // UFFD_USER_MODE_ONLY: what an unprivileged process may ask for.
        out.push(said("userfaultfd", libc::syscall(libc::SYS_userfaultfd, 1)));
        let r = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
        out.push(said("socket(unix)", r as libc::c_long));
        if r >= 0 {
            libc::close(r);
        }
    }
    out
}

/// A hog's helper: its own session (so its own scheduler group too), computing
/// for ever and appending a byte to `ticks` every few milliseconds of work.
fn hog_helper(ticks: &str) -> ! {
    let _ = nix::unistd::setsid();
    let mut x = 1u64;
    loop {
        for _ in 0..2_000_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).create(true).open(ticks) {
            let _ = f.write_all(&[b'0' + (x % 10) as u8]);
        }
    }
}

/// A wide bot's helper: computes for `ms` of wall time, then exits.
fn wide_helper(ms: &str) {
    let until = std::time::Instant::now() + Duration::from_millis(ms.parse().unwrap_or(500));
    let mut x = 1u64;
    while std::time::Instant::now() < until {
        for _ in 0..10_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
    }
    // Kept, so the loop is not optimised away.
    std::hint::black_box(x);
}

/// Bytes in the hog's tick file now.
fn ticks_now(path: &str) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(ticks) = values(&args, "--hog-helper").pop() {
        hog_helper(&ticks);
    }
    if let Some(ms) = values(&args, "--wide-helper").pop() {
        wide_helper(&ms);
    }
    let mut memory = Memory::default();
    let mut clock = Clock::default();
    let name = values(&args, "--attack").pop().unwrap_or_default();
    let mut signal = Signal {
        name: "signal",
        ..Signal::default()
    };
    let mut relay = (name == "relay").then(|| Eavesdropper::new(Relay::start()));
    let mut cache = if name == "cache" {
        PageCache::open().map(Eavesdropper::new)
    } else {
        None
    };
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut attacked_this_game = false;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{k}=")).map(str::to_owned))
                .unwrap_or_default()
        };
        match line.split_whitespace().next().unwrap_or("") {
            "astragal" => {
                // Named after its process, so tests can tell a kept process from a new one.
                let _ = writeln!(
                    out,
                    "id name=attack-{name}-{}\nastragalok version=1",
                    std::process::id()
                );
            }
            "isready" => {
                let _ = writeln!(out, "readyok");
            }
            "newgame" => attacked_this_game = false,
            "go" => {
                let obs = line.split_once(" obs=").map_or("", |(_, obs)| obs);
                if name == "memorize" {
                    memory.see(obs);
                } else if name == "clock" {
                    clock.request(obs);
                } else if name == "signal" {
                    signal.request(obs);
                } else if let Some(relay) = relay.as_mut() {
                    relay.request(obs);
                    // A legal think time: games long enough for words to cross.
                    std::thread::sleep(Duration::from_millis(3));
                } else if let Some(cache) = cache.as_mut() {
                    cache.request(obs);
                } else if name == "victim" {
                    let ticks = values(&args, "--ticks").pop().unwrap_or_default();
                    let before = ticks_now(&ticks);
                    let mut x = 1u64;
                    let work: u64 = values(&args, "--work-ms")
                        .pop()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(20);
                    let until = std::time::Instant::now() + Duration::from_millis(work);
                    while std::time::Instant::now() < until {
                        for _ in 0..10_000 {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        }
                    }
                    eprintln!("TICKS {} ({})", ticks_now(&ticks) - before, x % 2);
                } else if !attacked_this_game {
                    attacked_this_game = true;
                    for info in attack(&name, &args) {
                        let _ = writeln!(out, "info {info}");
                    }
                }
                let first = field("legal").split(',').next().unwrap_or("").to_owned();
                let _ = writeln!(out, "move id={} move={first}", field("id"));
                let _ = out.flush();
                if name == "clock" {
                    clock.answered(line.split_once(" obs=").map_or("", |(_, obs)| obs));
                }
            }
            "quit" => return,
            _ => {}
        }
        let _ = out.flush();
    }
}
