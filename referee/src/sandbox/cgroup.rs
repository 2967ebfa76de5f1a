//! A control group per bot process, where the machine lets the referee make one:
//! it limits the memory and the process count of the bot's whole tree, says when the
//! kernel killed it for memory, counts its CPU time, and finds every process it
//! started, wherever it went (a `setsid`, a double fork).
//!
//! Both cgroup versions: v1 (a directory per controller, as on this project's CI
//! machines) and v2 (one directory, when the referee's own group lets it enable the
//! controllers below it). Children are made next to nothing else: under the
//! referee's own group, one per bot, removed when the bot ends.

use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ROOT: &str = "/sys/fs/cgroup";

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

    /// What this machine gives, found once (by making and removing a group).
    pub fn probe() -> &'static Option<CgroupSupport> {
        static SUPPORT: OnceLock<Option<CgroupSupport>> = OnceLock::new();
        SUPPORT.get_or_init(|| {
            let support = probe()?;
            let mut parents: Vec<&PathBuf> = [&support.memory, &support.pids, &support.cpu]
                .into_iter()
                .flatten()
                .collect();
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
    let unified = Path::new(ROOT).join("cgroup.controllers").exists();
    if unified {
        let (_, own) = groups.iter().find(|(c, _)| c.is_empty())?;
        let dir = Path::new(ROOT).join(own);
        let memory = can_make_under(&dir, "memory.max").then(|| dir.clone());
        let pids = can_make_under(&dir, "pids.max").then(|| dir.clone());
        let cpu = can_make_under(&dir, "cpu.stat").then(|| dir.clone());
        if memory.is_none() && pids.is_none() {
            return None;
        }
        return Some(CgroupSupport {
            unified,
            memory,
            pids,
            cpu,
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
    if memory.is_none() && pids.is_none() {
        return None;
    }
    Some(CgroupSupport {
        unified,
        memory,
        pids,
        cpu,
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
    unified: bool,
}

impl BotCgroup {
    /// Makes a group for one bot with these limits, or `None` where the machine
    /// has no cgroups for the referee.
    pub fn create(memory: u64, processes: u64) -> Option<BotCgroup> {
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
            unified: support.unified,
        };
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

    /// Kills every process in the group, however it left its parent; returns
    /// whether the group is empty.
    pub fn kill_all(&self, wait: Duration) -> bool {
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

fn write_value(path: &Path, value: u64) -> Option<()> {
    let mut file = fs::OpenOptions::new().write(true).open(path).ok()?;
    file.write_all(value.to_string().as_bytes()).ok()
}
