//! A control group per bot process, where the machine lets the referee make one:
//! it limits the memory and the process count of the bot's whole tree, caps its
//! CPU at its share (`--bot-cores`), freezes the whole tree while the bot is not
//! to act, says when the kernel killed it for memory, counts its CPU time, and
//! finds every process it started, wherever it went (a `setsid`, a double fork).
//!
//! Both cgroup versions: v1 (a directory per controller, as on this project's CI
//! machines) and v2 (one directory, when the referee's own group lets it enable the
//! controllers below it). On a hybrid machine (v1 controllers with the v2
//! hierarchy mounted beside them at `/sys/fs/cgroup/unified`) a bot also gets a
//! v2 group, for the freezer and the kill: v2's freezer takes a tree at once and a
//! frozen process still dies of `SIGKILL`, where v1's is about twenty times slower
//! and holds a frozen process from its kill. Children are made next to nothing
//! else: under the referee's own group, one per bot, removed when the bot ends.

use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ROOT: &str = "/sys/fs/cgroup";
/// Where a hybrid machine mounts the v2 hierarchy, under [`ROOT`].
const HYBRID_V2: &str = "unified";
/// The period of a bot's CPU cap: its share of a core is given in each 100 ms.
const CPU_PERIOD_US: u64 = 100_000;

/// What the machine's cgroups give this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupSupport {
    /// v2 (one hierarchy) or v1.
    pub unified: bool,
    /// The referee's own memory group, under which bots' groups are made.
    memory: Option<PathBuf>,
    /// The referee's own pids group (v1; the same as `memory` on v2).
    pids: Option<PathBuf>,
    /// The referee's own CPU accounting group (v1; the same as `memory` on v2).
    cpu: Option<PathBuf>,
    /// The group under which bots' CPU caps are set (v1's `cpu` controller, or
    /// v2's `cpu.max`).
    cpu_cap: Option<PathBuf>,
    /// The referee's own group in the v2 hierarchy, under which bots' groups are
    /// frozen and killed (the same as `memory` on v2; under
    /// `/sys/fs/cgroup/unified` on a hybrid machine).
    freezer: Option<PathBuf>,
}

impl CgroupSupport {
    /// Whether bots' memory can be limited (and a `memory` fault told).
    pub fn memory(&self) -> bool {
        self.memory.is_some()
    }

    /// The group under which bots' memory groups are made.
    pub fn memory_parent(&self) -> Option<&PathBuf> {
        self.memory.as_ref()
    }

    /// Whether bots' CPU time is counted (so that a kept process near its CPU-time
    /// limit is restarted between games).
    pub fn cpu(&self) -> bool {
        self.cpu.is_some()
    }

    /// Whether bots' process counts can be limited.
    pub fn pids(&self) -> bool {
        self.pids.is_some()
    }

    /// Whether a bot's CPU can be capped at its share (`--bot-cores`).
    pub fn cpu_cap(&self) -> bool {
        self.cpu_cap.is_some()
    }

    /// Whether a bot's whole tree can be frozen while it is not to act.
    pub fn freezer(&self) -> bool {
        self.freezer.is_some()
    }

    /// What a host cannot be promised on this machine, one sentence each: said
    /// once when a program that starts bots begins.
    pub fn not_promised(support: Option<&CgroupSupport>) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !support.is_some_and(CgroupSupport::freezer) {
            missing.push(
                "a bot that is not to act is not frozen (no cgroup v2 freezer here): \
                 its processes can spend CPU while its opponent thinks",
            );
        }
        if !support.is_some_and(CgroupSupport::cpu_cap) {
            missing.push(
                "a bot's CPU is not capped at --bot-cores (no cgroup CPU controller here): \
                 a bot to act can take every core",
            );
        }
        if !support.is_some_and(CgroupSupport::memory) {
            missing.push("a bot's memory is limited per process only (no cgroup memory controller here)");
        }
        missing
    }

    /// What this machine gives, found once (by making and removing a group).
    pub fn probe() -> &'static Option<CgroupSupport> {
        static SUPPORT: OnceLock<Option<CgroupSupport>> = OnceLock::new();
        SUPPORT.get_or_init(|| {
            let support = probe()?;
            let mut parents: Vec<&PathBuf> = [
                &support.memory,
                &support.pids,
                &support.cpu,
                &support.cpu_cap,
                &support.freezer,
            ]
            .into_iter()
            .flatten()
            .collect();
            parents.sort();
            parents.dedup();
            for parent in parents {
                clean_stale(parent);
            }
            Some(support)
        })
    }
}

/// Whether a process of this id is alive (a zombie counts: its group is not
/// empty yet either).
pub(crate) fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The referee process id in the name of a group or directory it made
/// (`PREFIX<pid>-<n>`), if the name is one.
pub(crate) fn maker(name: &str, prefix: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix(prefix)?.split_once('-')?;
    (!rest.is_empty()).then_some(())?;
    pid.parse().ok()
}

/// Groups that a referee killed with `kill -9` left (no destructor ran): every
/// process in them is killed and the groups removed. Done once per process, at
/// the first probe; a live referee's groups are never touched.
fn clean_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| maker(n, "astragal-")) else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let dir = entry.path();
        // A frozen group's processes die of SIGKILL on v2; thawed first all the same.
        let _ = fs::write(dir.join("cgroup.freeze"), "0");
        let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for p in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
        }
        let until = Instant::now() + Duration::from_millis(500);
        while fs::remove_dir(&dir).is_err() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        tracing::info!("removed the cgroup {} a killed referee left", dir.display());
    }
}

/// Our own group in each hierarchy, from `/proc/self/cgroup`.
fn own_groups() -> Vec<(String, PathBuf)> {
    let Ok(text) = fs::read_to_string("/proc/self/cgroup") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some((
                controllers.to_owned(),
                PathBuf::from(path.trim_start_matches('/')),
            ))
        })
        .collect()
}

/// Whether a group can be made under `parent` and has `file` (a controller's).
fn can_make_under(parent: &Path, file: &str) -> bool {
    let trial = parent.join(format!("astragal-probe-{}", std::process::id()));
    if fs::create_dir(&trial).is_err() {
        return false;
    }
    let ok = trial.join(file).exists();
    let _ = fs::remove_dir(&trial);
    ok
}

fn probe() -> Option<CgroupSupport> {
    let groups = own_groups();
    let own_v2 = groups.iter().find(|(c, _)| c.is_empty()).map(|(_, p)| p.clone());
    let unified = Path::new(ROOT).join("cgroup.controllers").exists();
    if unified {
        let dir = Path::new(ROOT).join(own_v2?);
        let memory = can_make_under(&dir, "memory.max").then(|| dir.clone());
        let pids = can_make_under(&dir, "pids.max").then(|| dir.clone());
        let cpu = can_make_under(&dir, "cpu.stat").then(|| dir.clone());
        let cpu_cap = can_make_under(&dir, "cpu.max").then(|| dir.clone());
        let freezer = can_make_under(&dir, "cgroup.freeze").then(|| dir.clone());
        if memory.is_none() && pids.is_none() {
            return None;
        }
        return Some(CgroupSupport {
            unified,
            memory,
            pids,
            cpu,
            cpu_cap,
            freezer,
        });
    }
    let v1 = |controller: &str, file: &str| {
        let (_, own) = groups
            .iter()
            .find(|(c, _)| c.split(',').any(|c| c == controller))?;
        let dir = Path::new(ROOT).join(controller).join(own);
        can_make_under(&dir, file).then_some(dir)
    };
    let memory = v1("memory", "memory.limit_in_bytes");
    let pids = v1("pids", "pids.max");
    let cpu = v1("cpuacct", "cpuacct.usage");
    let cpu_cap = v1("cpu", "cpu.cfs_quota_us");
    // A hybrid machine: the v2 hierarchy beside v1's controllers, for the freezer.
    let freezer = own_v2.and_then(|own| {
        let dir = Path::new(ROOT).join(HYBRID_V2).join(own);
        can_make_under(&dir, "cgroup.freeze").then_some(dir)
    });
    if memory.is_none() && pids.is_none() {
        return None;
    }
    Some(CgroupSupport {
        unified,
        memory,
        pids,
        cpu,
        cpu_cap,
        freezer,
    })
}

/// One bot's groups (one directory on v2, one per controller on v1).
#[derive(Debug)]
pub struct BotCgroup {
    /// The directories made, each removed at the end.
    dirs: Vec<PathBuf>,
    /// Each directory's `cgroup.procs`, open for the child to write itself into
    /// between fork and exec (no allocation there).
    procs: Vec<OwnedFd>,
    /// Where the kernel counts kills for memory.
    memory_events: Option<PathBuf>,
    /// Where the kernel counts CPU time.
    cpu_usage: Option<PathBuf>,
    /// `cgroup.kill` (v2, Linux 5.14+).
    kill: Option<PathBuf>,
    /// The v2 group's `cgroup.freeze` and `cgroup.events`, open: written and read
    /// twice a decision, so never opened again.
    freeze: Option<Freezer>,
    unified: bool,
}

/// A v2 group's freezer, its files open.
#[derive(Debug)]
struct Freezer {
    /// `cgroup.freeze`: `1` freezes the whole tree, `0` thaws it.
    control: fs::File,
    /// `cgroup.events`: says `frozen 1` once every process of the tree is.
    events: fs::File,
}

impl BotCgroup {
    /// Makes a group for one bot with these limits (`cpu_millicores`: its CPU
    /// cap, 1000 for one core), or `None` where the machine has no cgroups for
    /// the referee.
    pub fn create(memory: u64, processes: u64, cpu_millicores: u64) -> Option<BotCgroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let support = CgroupSupport::probe().as_ref()?;
        let name = format!(
            "astragal-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = BotCgroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            memory_events: None,
            cpu_usage: None,
            kill: None,
            freeze: None,
            unified: support.unified,
        };
        let quota = cpu_millicores.saturating_mul(CPU_PERIOD_US) / 1000;
        if support.unified {
            let parent = support.memory.as_ref().or(support.pids.as_ref())?;
            let dir = parent.join(&name);
            group.add_dir(&dir)?;
            if support.memory.is_some() {
                write_value(&dir.join("memory.max"), memory)?;
                // No swap: the limit is the limit.
                let _ = write_value(&dir.join("memory.swap.max"), 0);
                group.memory_events = Some(dir.join("memory.events"));
            }
            if support.pids.is_some() {
                write_value(&dir.join("pids.max"), processes)?;
            }
            if support.cpu.is_some() {
                group.cpu_usage = Some(dir.join("cpu.stat"));
            }
            if support.cpu_cap.is_some() {
                write_text(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
            }
            if support.freezer.is_some() {
                group.freeze = Some(Freezer::open(&dir)?);
            }
            group.kill = Some(dir.join("cgroup.kill")).filter(|k| k.exists());
            return Some(group);
        }
        if let Some(parent) = &support.memory {
            let dir = parent.join(&name);
            group.add_dir(&dir)?;
            write_value(&dir.join("memory.limit_in_bytes"), memory)?;
            // Where swap is accounted, it is limited too (memory plus swap).
            let _ = write_value(&dir.join("memory.memsw.limit_in_bytes"), memory);
            group.memory_events = Some(dir.join("memory.oom_control"));
        }
        if let Some(parent) = &support.pids {
            let dir = parent.join(&name);
            group.add_dir(&dir)?;
            write_value(&dir.join("pids.max"), processes)?;
        }
        if let Some(parent) = &support.cpu {
            let dir = parent.join(&name);
            if group.add_dir(&dir).is_some() {
                group.cpu_usage = Some(dir.join("cpuacct.usage"));
            }
        }
        if let Some(parent) = &support.cpu_cap {
            let dir = parent.join(&name);
            group.add_dir(&dir)?;
            write_value(&dir.join("cpu.cfs_period_us"), CPU_PERIOD_US)?;
            write_value(&dir.join("cpu.cfs_quota_us"), quota)?;
        }
        if let Some(parent) = &support.freezer {
            let dir = parent.join(&name);
            group.add_dir(&dir)?;
            group.freeze = Some(Freezer::open(&dir)?);
            group.kill = Some(dir.join("cgroup.kill")).filter(|k| k.exists());
        }
        Some(group)
    }

    fn add_dir(&mut self, dir: &Path) -> Option<()> {
        fs::create_dir(dir).ok()?;
        self.dirs.push(dir.to_owned());
        let file = fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .ok()?;
        self.procs.push(file.into());
        Some(())
    }

    /// The descriptors the child writes `0` (itself) into before it execs.
    pub fn join_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Whether the memory limit is enforced by this group.
    pub fn limits_memory(&self) -> bool {
        self.memory_events.is_some()
    }

    /// Whether the kernel killed a process of this group for memory.
    pub fn memory_killed(&self) -> bool {
        let Some(path) = &self.memory_events else {
            return false;
        };
        fs::read_to_string(path).is_ok_and(|text| {
            text.lines()
                .filter_map(|l| l.strip_prefix("oom_kill "))
                .any(|n| n.trim().parse::<u64>().is_ok_and(|n| n > 0))
        })
    }

    /// CPU time used by the whole tree so far.
    pub fn cpu_used(&self) -> Option<Duration> {
        let text = fs::read_to_string(self.cpu_usage.as_ref()?).ok()?;
        if self.unified {
            let usec = text
                .lines()
                .find_map(|l| l.strip_prefix("usage_usec "))?
                .trim()
                .parse()
                .ok()?;
            Some(Duration::from_micros(usec))
        } else {
            Some(Duration::from_nanos(text.trim().parse().ok()?))
        }
    }

    /// Whether the whole tree can be frozen.
    pub fn freezes(&self) -> bool {
        self.freeze.is_some()
    }

    /// Freezes (`true`) or thaws the whole tree; returns whether the kernel took
    /// it. Freezing returns at once: [`BotCgroup::wait_frozen`] waits for it.
    pub fn set_frozen(&self, frozen: bool) -> bool {
        use std::os::unix::fs::FileExt;
        let Some(f) = &self.freeze else {
            return false;
        };
        f.control.write_at(if frozen { b"1" } else { b"0" }, 0).is_ok()
    }

    /// Waits until every process of the tree is frozen, or `until`; whether it
    /// is. A tree is frozen within microseconds (each process stops where it
    /// next enters the kernel, or at the interrupt sent to its core).
    pub fn wait_frozen(&self, until: Instant) -> bool {
        use std::os::unix::fs::FileExt;
        let Some(f) = &self.freeze else {
            return false;
        };
        let mut buf = [0u8; 64];
        // A bot blocked on its input stops in microseconds: looked for
        // eagerly at first.
        let spin_until = Instant::now() + Duration::from_micros(200);
        loop {
            let Ok(n) = f.events.read_at(&mut buf, 0) else {
                return false;
            };
            if buf[..n].split(|&b| b == b'\n').any(|l| l == b"frozen 1") {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            if now < spin_until {
                std::thread::yield_now();
                continue;
            }
            // Past the first moments, asleep a millisecond at a time (or until
            // `cgroup.events` changes, which the kernel tells a poll at most
            // every 10 ms): a tree of many busy processes throttled by its
            // quota can take a whole period to stop, and a wait that spun
            // through it cost the machine a core that no bot was charged for.
            let mut fds = [nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(&f.events),
                nix::poll::PollFlags::POLLPRI,
            )];
            let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(1u8));
        }
    }

    /// Kills every process in the group, however it left its parent; returns
    /// whether the group is empty.
    pub fn kill_all(&self, wait: Duration) -> bool {
        // v2 kills a frozen process; thawed first all the same, so that nothing
        // waits on a kernel that does not.
        self.set_frozen(false);
        if let Some(kill) = &self.kill {
            let _ = fs::write(kill, "1");
        }
        let until = Instant::now() + wait;
        loop {
            let mut any = false;
            for dir in &self.dirs {
                let Ok(text) = fs::read_to_string(dir.join("cgroup.procs")) else {
                    continue;
                };
                for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    any = true;
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            if !any {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for BotCgroup {
    fn drop(&mut self) {
        self.kill_all(Duration::from_millis(500));
        self.procs.clear();
        self.freeze = None;
        // A killed process leaves its group when it is reaped, a moment later.
        let until = Instant::now() + Duration::from_millis(500);
        for dir in &self.dirs {
            while fs::remove_dir(dir).is_err() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
            if dir.exists() {
                tracing::warn!("could not remove the bot's cgroup {}", dir.display());
            }
        }
    }
}

impl Freezer {
    fn open(dir: &Path) -> Option<Freezer> {
        Some(Freezer {
            control: fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.freeze"))
                .ok()?,
            events: fs::File::open(dir.join("cgroup.events")).ok()?,
        })
    }
}

fn write_text(path: &Path, text: &str) -> Option<()> {
    let mut file = fs::OpenOptions::new().write(true).open(path).ok()?;
    file.write_all(text.as_bytes()).ok()
}

fn write_value(path: &Path, value: u64) -> Option<()> {
    let mut file = fs::OpenOptions::new().write(true).open(path).ok()?;
    file.write_all(value.to_string().as_bytes()).ok()
}
