//! What a bot process is allowed: its environment, its files, its resources, and
//! how far it can see. See `docs/security.md` for the threat model.
//!
//! Every bot process, at every level, gets a clean environment (a fixed `PATH`,
//! `LANG`, `HOME` at its scratch directory, and only what the host passed for that
//! bot), a private scratch directory as its working directory (removed when it
//! ends), resource limits (rlimits, and a cgroup where the machine gives one), death
//! with the referee, and the kill of everything it started when it ends.
//!
//! [`Level::Isolated`] runs it under bubblewrap (the sandbox Flatpak uses) rather
//! than home-made namespace code: its own pid, network, IPC and UTS namespaces, a
//! file system built from the system's program directories and the bot's own files,
//! all read-only, a size-limited private `/tmp`, no new privileges, a system-call
//! filter, and, when the referee runs as root, an unprivileged user of its own.

mod build;
mod cgroup;
mod command;
mod seccomp;
mod uid;

pub use build::{Built, Finished, build, run_to_end};
pub use cgroup::{BotCgroup, CgroupSupport};
pub use command::{
    BOT_PATH, HOME_IN_SANDBOX, Home, Prepared, ScratchDir, check_home_command, prepare, prepare_in,
};
pub use command::{BUILD_SOURCE_IN_SANDBOX, BUILD_UNPACKABLE};
pub use uid::{LOCK_DIR as UID_LOCK_DIR, SandboxUid, UidRange};

use crate::cli::number_in;
use std::fmt;
use std::str::FromStr;

/// How far a bot process is contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Level {
    /// A developer's own bots: a clean environment, a scratch directory, limits, and
    /// the kill of the whole process tree, but the host's file system, network and
    /// processes in view.
    #[default]
    None,
    /// Strangers' bots: bubblewrap namespaces, a read-only file system of system
    /// directories and the bot's own files, no network, no other process in view.
    Isolated,
}

impl FromStr for Level {
    type Err = String;

    fn from_str(s: &str) -> Result<Level, String> {
        match s {
            "none" => Ok(Level::None),
            "isolated" => Ok(Level::Isolated),
            _ => Err(format!("sandbox level {s:?} is neither `none` nor `isolated`")),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::None => "none",
            Level::Isolated => "isolated",
        })
    }
}

/// One MiB.
pub const MIB: u64 = 1024 * 1024;

/// The containment of every bot process a referee starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// How far bots are contained.
    pub level: Level,
    /// Memory of the bot's whole process tree, in bytes (a cgroup limit; exceeding
    /// it is a `memory` fault). Without a cgroup, the data segment of each process.
    pub memory: u64,
    /// Processes and threads of the bot's whole tree (a cgroup limit; none without one).
    pub processes: u64,
    /// Largest file the bot may write, in bytes; also the size of its scratch
    /// directory under isolation.
    pub file_size: u64,
    /// Open files per process.
    pub open_files: u64,
    /// CPU seconds per process: a backstop to the clock for a bot that computes
    /// while it is not asked. A kept process that has used half of it is restarted
    /// between games where a cgroup counts it.
    pub cpu_seconds: u64,
    /// The CPU a bot's whole tree may use while it is to act, in thousandths of
    /// a core (a cgroup cap: `cpu.max`, or v1's CFS quota): its share, which no
    /// bot can exceed by starting processes. Builds get the same.
    pub cpu_millicores: u64,
    /// More directories a bot sees, read-only, under isolation (an interpreter
    /// outside the system directories, say).
    pub read_only: Vec<std::path::PathBuf>,
    /// Paths an isolated bot must never see even where they lie in a directory it
    /// is shown (the referee's records and logs): masked by an empty file or
    /// directory.
    pub hidden: Vec<std::path::PathBuf>,
    /// The user ids isolated bots and builds run as, one each, when the referee
    /// runs as root.
    pub uids: UidRange,
    /// The bytes an isolated build may write, everything it makes included: a
    /// tmpfs of this size (its pages count against its memory too).
    pub build_area: u64,
    /// Variables the host gives every process it contains, bots and builds alike,
    /// after the fixed ones and before a seat's own (`ladder worker
    /// --python-engine` puts its package folder on `PYTHONPATH` this way).
    pub env: Vec<(String, String)>,
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox {
            level: Level::None,
            memory: 1024 * MIB,
            processes: 64,
            file_size: 64 * MIB,
            open_files: 256,
            cpu_seconds: 3600,
            cpu_millicores: 1000,
            read_only: Vec::new(),
            hidden: Vec::new(),
            uids: UidRange::default(),
            build_area: 256 * MIB,
            env: Vec::new(),
        }
    }
}

/// Why a sandbox cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// Isolation was asked for and this machine cannot give it.
    #[error("`--sandbox isolated` needs {0}")]
    Unavailable(String),
    /// This process cannot start a bot with the limits asked for: every bot
    /// would fail to start, and the failure would be charged to the bots.
    #[error("bots cannot be started with these limits: {0}")]
    Limits(String),
}

impl Sandbox {
    /// Adds paths bots must not see (records, logs, a database), made absolute;
    /// a path that does not exist yet is kept as given under the current directory.
    pub fn hide(&mut self, paths: impl IntoIterator<Item = std::path::PathBuf>) {
        let here = std::env::current_dir().unwrap_or_default();
        for p in paths {
            let abs = std::fs::canonicalize(&p).unwrap_or_else(|_| here.join(&p));
            self.hidden.push(abs);
        }
    }

    /// A sandbox at `level` with the default limits.
    pub fn at(level: Level) -> Sandbox {
        Sandbox {
            level,
            ..Sandbox::default()
        }
    }

    /// Checks that this machine can give what the level promises, by starting a
    /// contained `true`: call it once before a run, so that a host learns what is
    /// missing before any game rather than as a spawn fault in every game.
    ///
    /// # Errors
    /// [`SandboxError::Unavailable`], saying what is missing (bubblewrap, user
    /// namespaces, `setpriv`).
    pub fn check(&self) -> Result<(), SandboxError> {
        self.check_limits()?;
        // Once per program: what this machine's cgroups cannot promise.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            for missing in CgroupSupport::not_promised(CgroupSupport::probe().as_ref()) {
                tracing::warn!("on this machine {missing}; see docs/security.md, \"CPU\"");
            }
        });
        if self.level == Level::None {
            return Ok(());
        }
        command::check_isolation(self)
    }

    /// Starts `true` with every limit a bot gets. A hard limit of this process's
    /// own below a bot's (`ulimit -Hn 128` against `--bot-open-files 256`) makes
    /// every spawn fail with `EPERM`: said here, naming the limit, before any game.
    ///
    /// # Errors
    /// [`SandboxError::Limits`].
    fn check_limits(&self) -> Result<(), SandboxError> {
        use nix::sys::resource::{Resource, getrlimit};
        let plain = Sandbox {
            level: Level::None,
            ..self.clone()
        };
        let mut trial = prepare("/bin/true", &[], &plain).map_err(SandboxError::Limits)?;
        trial.install_child_setup();
        let started = trial
            .command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let Err(e) = started else {
            return Ok(());
        };
        let wanted = [
            (
                Resource::RLIMIT_NOFILE,
                self.open_files,
                "open files",
                "--bot-open-files",
            ),
            (
                Resource::RLIMIT_FSIZE,
                self.file_size,
                "file size (bytes)",
                "--bot-file-size",
            ),
            (
                Resource::RLIMIT_CPU,
                self.cpu_seconds.saturating_add(1),
                "CPU seconds",
                "--bot-cpu",
            ),
        ];
        let below: Vec<String> = wanted
            .iter()
            .filter_map(|&(resource, want, what, flag)| {
                let (_, hard) = getrlimit(resource).ok()?;
                (hard < want).then(|| {
                    format!("{what}: this process's hard limit is {hard}, a bot's is {want} ({flag}); raise the limit (ulimit -H) or lower {flag}")
                })
            })
            .collect();
        Err(SandboxError::Limits(if below.is_empty() {
            format!("a process with them did not start here ({e})")
        } else {
            below.join("; ")
        }))
    }
}

/// The command-line flags that set a [`Sandbox`], shared by every command that
/// starts bots (`referee play|match|check-bot|bench`, `ladder tournament|worker`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SandboxArgs {
    /// How bot processes are contained: `none` (a clean environment, a private
    /// scratch directory, the limits below, and the kill of everything a bot started;
    /// for your own bots) or `isolated` (also: no network, no other process in
    /// view, a read-only file system of system directories and the bot's own files,
    /// a system-call filter, a user of its own when run as root; needs
    /// bubblewrap). Default: `none`, but `isolated` for `ladder worker`. See
    /// docs/security.md.
    #[arg(long, value_name = "LEVEL")]
    pub sandbox: Option<Level>,
    /// Memory of a bot's whole process tree, in MiB; going past it is a `memory` fault
    /// (needs cgroups; elsewhere it limits each process's data segment).
    #[arg(long, value_name = "MIB", default_value_t = Sandbox::default().memory / MIB, value_parser = |s: &str| number_in(s, 16u64, 1 << 20))]
    pub bot_memory: u64,
    /// Processes and threads of a bot's whole tree (needs cgroups).
    #[arg(long, value_name = "N", default_value_t = Sandbox::default().processes, value_parser = |s: &str| number_in(s, 1u64, 100_000))]
    pub bot_processes: u64,
    /// Largest file a bot may write, in MiB (also the size of its scratch directory
    /// when isolated).
    #[arg(long, value_name = "MIB", default_value_t = Sandbox::default().file_size / MIB, value_parser = |s: &str| number_in(s, 0u64, 1 << 20))]
    pub bot_file_size: u64,
    /// Open files per bot process.
    #[arg(long, value_name = "N", default_value_t = Sandbox::default().open_files, value_parser = |s: &str| number_in(s, 8u64, 1 << 20))]
    pub bot_open_files: u64,
    /// CPU seconds per bot process, a backstop to the clock.
    #[arg(long, value_name = "SECONDS", default_value_t = Sandbox::default().cpu_seconds, value_parser = |s: &str| number_in(s, 1u64, 86_400))]
    pub bot_cpu: u64,
    /// The CPU a bot may use while it is to act, in cores (`1`, `0.5`, `2`): a
    /// cap on its whole process tree, however many processes it starts (needs
    /// cgroups). A bot not to act is frozen and uses none. Run no more games at
    /// once than the machine has cores for their acting seats: see
    /// docs/security.md, "CPU".
    #[arg(long, value_name = "CORES", default_value = "1", value_parser = parse_cores)]
    pub bot_cores: u64,
    /// A directory isolated bots may read (repeatable), e.g. an interpreter installed
    /// outside /usr. The folder of each file or folder your own bot's command
    /// names is shown anyway (never /proc, /sys, /dev or /run); an uploaded bot
    /// sees only its own folder.
    #[arg(long = "sandbox-ro", value_name = "DIR")]
    pub read_only: Vec<std::path::PathBuf>,
    /// The user ids isolated bots and builds run as when this program runs as
    /// root: each sandbox running on the machine takes one of its own for its
    /// life, so no sandbox can open another's files or memory. Give a range no
    /// account or container on the machine uses; every program that starts bots
    /// on one machine should be given the same range.
    #[arg(long = "sandbox-uids", value_name = "FIRST-LAST", default_value_t = UidRange::default())]
    pub uids: UidRange,
}

impl SandboxArgs {
    /// The sandbox these flags ask for; `default` is the level without `--sandbox`.
    ///
    /// # Errors
    /// A limit of 0, or a `--sandbox-ro` directory that is not there.
    pub fn sandbox(&self, default: Level) -> Result<Sandbox, String> {
        for (name, value) in [
            ("--bot-memory", self.bot_memory),
            ("--bot-processes", self.bot_processes),
            ("--bot-file-size", self.bot_file_size),
            ("--bot-open-files", self.bot_open_files),
            ("--bot-cpu", self.bot_cpu),
        ] {
            if value == 0 {
                return Err(format!("{name} 0 would stop every bot; give a positive value"));
            }
        }
        let read_only = self
            .read_only
            .iter()
            .map(|d| {
                std::fs::canonicalize(d)
                    .ok()
                    .filter(|p| p.is_dir())
                    .ok_or_else(|| format!("--sandbox-ro {}: no such directory", d.display()))
            })
            .collect::<Result<_, _>>()?;
        let mib = |v: u64| v.saturating_mul(MIB);
        Ok(Sandbox {
            level: self.sandbox.unwrap_or(default),
            memory: mib(self.bot_memory),
            processes: self.bot_processes,
            file_size: mib(self.bot_file_size),
            open_files: self.bot_open_files,
            cpu_seconds: self.bot_cpu,
            cpu_millicores: self.bot_cores,
            read_only,
            hidden: Vec::new(),
            uids: self.uids,
            build_area: Sandbox::default().build_area,
            env: Vec::new(),
        })
    }
}

/// The most cores `--bot-cores` takes.
pub const MAX_BOT_CORES: u64 = 1024;

/// Reads `--bot-cores`: a positive number of cores with at most three decimals
/// (`1`, `0.5`, `2.25`), in thousandths of a core.
///
/// # Errors
/// Not such a number, 0, or more than [`MAX_BOT_CORES`].
pub fn parse_cores(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a number of cores such as 1, 0.5 or 2");
    let (whole, frac) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    if whole.is_empty() && frac.is_empty() || frac.len() > 3 {
        return Err(bad());
    }
    let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
    if !digits(whole) || !digits(frac) {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let frac: u64 = format!("{frac:0<3}").parse().map_err(|_| bad())?;
    if whole > MAX_BOT_CORES || whole == MAX_BOT_CORES && frac > 0 {
        return Err(format!("{text} cores is more than {MAX_BOT_CORES}"));
    }
    let milli = whole * 1000 + frac;
    if milli < 10 {
        return Err(format!("{text} cores would starve every bot; give at least 0.01"));
    }
    Ok(milli)
}

/// How many games may run at once so that every seat to act has its share of
/// a core: `cores` of the machine, each game asking `acting` seats at once, each
/// taking `millicores`. At least one.
pub fn games_with_cores(cores: usize, acting: usize, millicores: u64) -> usize {
    let per_game = (acting.max(1) as u64).saturating_mul(millicores.max(1));
    ((cores as u64).saturating_mul(1000) / per_game).max(1) as usize
}

/// A warning when `concurrency` games at once, each asking `acting` seats at
/// once with `millicores` each, need more cores than this machine has: the
/// seats to act would share cores, and their clocks would run while they wait.
pub fn concurrency_warning(concurrency: usize, acting: usize, millicores: u64) -> Option<String> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let fits = games_with_cores(cores, acting, millicores);
    (concurrency > fits).then(|| {
        format!(
            "--concurrency {concurrency} runs up to {} seats to act at once, {} cores each, on {cores} cores: \
             they would share cores and lose time on their clocks; at most {fits} games at once give each its share \
             (lower --concurrency or --bot-cores)",
            concurrency * acting.max(1),
            millicores as f64 / 1000.0,
        )
    })
}

/// Reads `--bot-env` values, `N:KEY=VALUE`, into (bot number, key, value).
///
/// # Errors
/// A value not of that shape, or a key that is not a plain variable name.
pub fn parse_bot_env(text: &str) -> Result<(usize, String, String), String> {
    let (n, kv) = text
        .split_once(':')
        .ok_or_else(|| format!("--bot-env {text:?} is not N:KEY=VALUE"))?;
    let n = n
        .parse()
        .map_err(|_| format!("--bot-env {text:?}: {n:?} is not a bot number"))?;
    let (k, v) = parse_env_pair(kv).map_err(|e| format!("--bot-env {text:?}: {e}"))?;
    Ok((n, k, v))
}

/// Reads one `KEY=VALUE`.
///
/// # Errors
/// No `=`, or a key that is not letters, digits and `_` (not starting with a digit).
pub fn parse_env_pair(kv: &str) -> Result<(String, String), String> {
    let (k, v) = kv
        .split_once('=')
        .ok_or_else(|| format!("{kv:?} is not KEY=VALUE"))?;
    let plain = !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Err(format!("{k:?} is not a variable name"));
    }
    Ok((k.to_owned(), v.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bot_env_values_parse_and_bad_ones_say_why() {
        assert_eq!(
            parse_bot_env("1:API_KEY=a=b").unwrap(),
            (1, "API_KEY".to_owned(), "a=b".to_owned())
        );
        assert_eq!(parse_env_pair("X=").unwrap(), ("X".to_owned(), String::new()));
        for (bad, says) in [
            ("API_KEY=1", "not N:KEY=VALUE"),
            ("x:K=V", "not a bot number"),
            ("0:KV", "not KEY=VALUE"),
            ("0:=v", "not a variable name"),
            ("0:1A=v", "not a variable name"),
            ("0:A B=v", "not a variable name"),
        ] {
            let e = parse_bot_env(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn flags_make_a_sandbox_and_refuse_zero_limits() {
        let args = SandboxArgs {
            sandbox: None,
            bot_memory: 10,
            bot_processes: 3,
            bot_file_size: 2,
            bot_open_files: 5,
            bot_cpu: 7,
            bot_cores: 500,
            read_only: vec![],
            uids: UidRange::default(),
        };
        let s = args.sandbox(Level::Isolated).unwrap();
        assert_eq!(s.level, Level::Isolated);
        assert_eq!(
            (s.memory, s.processes, s.file_size, s.open_files, s.cpu_seconds),
            (10 * MIB, 3, 2 * MIB, 5, 7)
        );
        assert_eq!(s.cpu_millicores, 500);
        let zero = SandboxArgs {
            bot_cpu: 0,
            ..args.clone()
        };
        assert!(zero.sandbox(Level::None).unwrap_err().contains("--bot-cpu 0"));
        let missing = SandboxArgs {
            read_only: vec!["/no/such/dir".into()],
            ..args
        };
        assert!(
            missing
                .sandbox(Level::None)
                .unwrap_err()
                .contains("no such directory")
        );
        assert_eq!("isolated".parse::<Level>().unwrap(), Level::Isolated);
        assert!("strict".parse::<Level>().unwrap_err().contains("neither"));
    }

    #[test]
    fn cores_parse_to_thousandths_and_bad_ones_say_why() {
        for (text, milli) in [
            ("1", 1000),
            ("0.5", 500),
            ("2.25", 2250),
            (".75", 750),
            ("0.01", 10),
            ("1024", 1_024_000),
        ] {
            assert_eq!(parse_cores(text), Ok(milli), "{text}");
        }
        for (bad, says) in [
            ("", "not a number"),
            ("one", "not a number"),
            ("1.2345", "not a number"),
            ("-1", "not a number"),
            ("1e3", "not a number"),
            ("0", "starve"),
            ("0.001", "starve"),
            ("1024.5", "more than"),
            ("99999999999999999999", "not a number"),
        ] {
            let e = parse_cores(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn games_at_once_leave_each_seat_to_act_its_share() {
        // Two cores: two turn-based games at a core each, one game of two
        // seats deciding at once, four at half a core.
        assert_eq!(games_with_cores(2, 1, 1000), 2);
        assert_eq!(games_with_cores(2, 2, 1000), 1);
        assert_eq!(games_with_cores(2, 1, 500), 4);
        // Never fewer than one: a single game runs, however large its share.
        assert_eq!(games_with_cores(1, 4, 2000), 1);
        assert!(concurrency_warning(1, 1, 10).is_none());
        let w = concurrency_warning(100_000, 2, 1000).unwrap();
        assert!(
            w.contains("--concurrency 100000") && w.contains("200000 seats"),
            "{w}"
        );
    }

    #[test]
    fn a_level_none_bot_runs_in_a_private_scratch_directory_that_goes_with_it() {
        let prepared = prepare(
            "sh -c 'pwd; echo $HOME'",
            &[("EXTRA".into(), "1".into())],
            &Sandbox::default(),
        )
        .unwrap();
        let scratch = prepared.scratch.as_ref().unwrap().path().to_owned();
        assert!(scratch.is_dir());
        let envs: Vec<_> = prepared.command.get_envs().map(|(k, _)| k.to_owned()).collect();
        for k in ["PATH", "LANG", "HOME", "TMPDIR", "EXTRA"] {
            assert!(envs.iter().any(|e| e == k), "{k} missing: {envs:?}");
        }
        assert_eq!(prepared.command.get_current_dir(), Some(scratch.as_path()));
        drop(prepared);
        assert!(!scratch.exists(), "the scratch directory outlived its bot");
    }

    #[test]
    fn relative_paths_in_a_command_become_absolute() {
        let here = std::env::current_dir().unwrap();
        // `Cargo.toml` exists in the package directory where tests run.
        let p = prepare("sh Cargo.toml --flag word", &[], &Sandbox::default()).unwrap();
        let args: Vec<_> = p
            .command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let abs = std::fs::canonicalize(here.join("Cargo.toml")).unwrap();
        assert_eq!(args, [abs.to_string_lossy().as_ref(), "--flag", "word"]);
        assert!(p.command.get_program().to_string_lossy().ends_with("bin/sh"));
        let e = prepare("./no-such-program", &[], &Sandbox::default()).unwrap_err();
        assert!(e.contains("no program at"), "{e}");
        let e = prepare("no-such-program", &[], &Sandbox::default()).unwrap_err();
        assert!(e.contains("not on the bots' PATH"), "{e}");
        assert!(
            prepare("'unclosed", &[], &Sandbox::default())
                .unwrap_err()
                .contains("quoting")
        );
    }
}
