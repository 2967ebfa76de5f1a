//! Turning a bot's command line into what is started: the program found, relative
//! paths resolved, the environment made, the scratch directory, the bubblewrap
//! wrapper, and what the child does to itself between fork and exec.

use super::cgroup::BotCgroup;
use super::{Level, Sandbox, SandboxError};
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `PATH` every bot gets, and where a program named without a `/` is looked
/// up: the system's, whatever the referee's own is.
pub const BOT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What a bot sees of `/etc` under isolation: what programs need to start (the
/// dynamic linker's cache, Debian's alternatives, TLS settings Node reads), and
/// nothing with a secret in it.
const ETC_SHOWN: &[&str] = &[
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
];

/// The system's program directories, shown read-only under isolation.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Where a bot's scratch directory is under isolation (a private, size-limited
/// tmpfs that goes when the sandbox does).
const ISOLATED_SCRATCH: &str = "/tmp";

/// Where a bot's own folder ([`Home`]) is under isolation, whatever its path on
/// the host: the host's layout stays the host's, and a build and the bot it makes
/// see their folder at the same path (a virtual environment's absolute paths hold).
pub const HOME_IN_SANDBOX: &str = "/bot";

/// Trees of the host no bot is ever shown by naming them: a word that names one
/// (or a path under one) is left as it is, so `/proc` and `/dev` mean the
/// sandbox's own, and `/sys` and `/run` are not there.
const NEVER_SHOWN: &[&str] = &["/proc", "/sys", "/dev", "/run"];

/// A bot command ready to start: what to run, and what to undo when it ends.
#[derive(Debug)]
pub struct Prepared {
    /// The command to spawn (`bwrap … -- program args` under isolation).
    pub command: Command,
    /// The bot's own control group, if the machine gives one.
    pub cgroup: Option<BotCgroup>,
    /// The host directory made for the bot (level `none`), removed when it ends.
    pub scratch: Option<ScratchDir>,
    /// The user id it runs as, held until it ends (isolated, when run as root).
    pub uid: Option<super::uid::SandboxUid>,
    /// The system-call filter bubblewrap reads (isolated): its descriptor is
    /// passed to the child, and only to it.
    _seccomp: Option<std::os::fd::OwnedFd>,
    /// Limits the child sets on itself.
    child: ChildPlan,
}

/// What the child does to itself between fork and exec: only system calls on
/// values computed before the fork.
#[derive(Debug, Clone)]
struct ChildPlan {
    cgroup_fds: Vec<RawFd>,
    file_size: u64,
    open_files: u64,
    cpu_seconds: u64,
    /// The data segment limit, only where no cgroup limits memory.
    data: Option<u64>,
    parent: i32,
    /// A descriptor the child keeps across exec (bubblewrap's `--seccomp`).
    inherit: Option<RawFd>,
    /// Where a kernel without `close_range` has the child stop marking
    /// descriptors close-on-exec: this process's limit of open files.
    descriptors_to_mark: RawFd,
}

impl Prepared {
    /// Sets the child's own limits and death with its parent, between fork and exec.
    #[allow(unsafe_code)]
    pub fn install_child_setup(&mut self) {
        use std::os::unix::process::CommandExt;
        let plan = self.child.clone();
        // SAFETY: the closure makes only async-signal-safe system calls on values
        // prepared before the fork; it allocates nothing.
        unsafe {
            self.command.pre_exec(move || plan.apply());
        }
    }
}

impl ChildPlan {
    #[allow(unsafe_code)]
    fn apply(&self) -> io::Result<()> {
        use nix::libc;
        for &fd in &self.cgroup_fds {
            // `0` is the writing process: the child joins its group before exec,
            // so everything it starts is in it too.
            // SAFETY: write(2) of a static byte to an open descriptor.
            if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        let limit = |resource, soft: u64, hard: u64| {
            let r = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            // SAFETY: setrlimit(2) on a stack value.
            if unsafe { libc::setrlimit(resource, &r) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        };
        limit(libc::RLIMIT_CORE, 0, 0)?;
        limit(libc::RLIMIT_FSIZE, self.file_size, self.file_size)?;
        limit(libc::RLIMIT_NOFILE, self.open_files, self.open_files)?;
        // SIGXCPU at the limit, SIGKILL a second later if it is caught.
        limit(
            libc::RLIMIT_CPU,
            self.cpu_seconds,
            self.cpu_seconds.saturating_add(1),
        )?;
        if let Some(data) = self.data {
            limit(libc::RLIMIT_DATA, data, data)?;
        }
        // Nothing this process was handed by whatever started it (a supervisor's
        // socket, a script's `exec 7<secret`) reaches a bot: every descriptor
        // past stderr closes at exec, but the one bubblewrap reads its filter from.
        // SAFETY: close_range(2) and fcntl(2) on this process's own descriptors.
        unsafe {
            let marked = libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if marked != 0 {
                // A kernel before 5.11: one by one, up to this process's limit.
                for fd in 3..self.descriptors_to_mark {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            if let Some(fd) = self.inherit
                && libc::fcntl(fd, libc::F_SETFD, 0) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        // Death with the referee (strictly, with the thread that started it; the
        // referee keeps a bot only on the thread that started it).
        // SAFETY: prctl(2) and getppid(2) take and return plain integers.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != self.parent {
                // The referee died before the line above.
                libc::_exit(1);
            }
        }
        Ok(())
    }
}

/// A host directory for one bot (level `none`), removed with everything in it.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    fn create() -> io::Result<ScratchDir> {
        use std::os::unix::fs::DirBuilderExt;
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
        let name = hex::encode(bytes);
        static CLEANED: std::sync::Once = std::sync::Once::new();
        CLEANED.call_once(remove_stale_scratch);
        // Named after this process, so a later referee can tell one that `kill -9`
        // left behind.
        let path = std::env::temp_dir().join(format!("astragal-bot-{}-{name}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(ScratchDir(path))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Scratch directories a referee killed with `kill -9` left behind (a bot's files,
/// 225 MB seen): removed once per process, before the first is made.
fn remove_stale_scratch() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| super::cgroup::maker(n, "astragal-bot-"))
        else {
            continue;
        };
        if !super::cgroup::alive(pid) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where a program named without a `/` is, on [`BOT_PATH`].
fn on_bot_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    BOT_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The command's words with paths made absolute, and the directories they are in
/// (to be shown to an isolated bot).
struct Resolved {
    program: PathBuf,
    args: Vec<String>,
    shown: Vec<PathBuf>,
}

/// Whether `path` (absolute, real) is or lies under a tree no bot is shown.
fn never_shown(path: &Path) -> bool {
    NEVER_SHOWN.iter().any(|t| path.starts_with(t))
}

/// Resolves a command line against `start_dir`: a program with a `/` is a path; a
/// program without one is looked up on [`BOT_PATH`]; an argument that names an
/// existing file or folder becomes its absolute path (the bot starts in a scratch
/// folder, where a relative one would name nothing).
///
/// For an isolated bot (`contain`), the folder of every named file and every
/// named folder is shown to it, so what may be named is narrow: a regular file
/// or a folder, never the whole file system, and never through a link that leads
/// out of its folder (its folder is reached through no link, and a file that is a
/// link points inside that folder; `data -> /` showed the whole machine). A word
/// naming `/proc`, `/sys`, `/dev` or `/run` (or under them) shows nothing and
/// stays as it is: the bot has its own `/proc` and `/dev`. Links inside a shown
/// folder need no check: the bot resolves them in its own mount namespace, where
/// only what is shown exists.
fn resolve(
    words: &[String],
    start_dir: &Path,
    contain: bool,
    read_only: &[PathBuf],
) -> Result<Resolved, String> {
    let (program, rest) = words.split_first().ok_or("an empty command")?;
    let mut shown = Vec::new();
    let program = if program.contains('/') {
        let (folder, path) = program_path(program, &start_dir.join(program), contain, read_only)?;
        shown.push(folder);
        path
    } else {
        on_bot_path(program)
            .ok_or_else(|| format!("{program:?} is not on the bots' PATH ({BOT_PATH}); give its path"))?
    };
    let mut args = Vec::with_capacity(rest.len());
    for word in rest {
        if word.starts_with('-') {
            args.push(word.clone());
            continue;
        }
        let candidate = start_dir.join(word);
        let is_file = candidate.is_file();
        // A folder too, with or without a `/`: `java -cp classes Main` named one,
        // and the bot, started in its scratch folder, found no `classes` there.
        if !(is_file || candidate.is_dir()) {
            args.push(word.clone());
            continue;
        }
        if contain {
            match contained(word, &candidate, is_file)? {
                Some((folder, path)) => {
                    shown.push(folder);
                    args.push(path.to_string_lossy().into_owned());
                }
                None => args.push(word.clone()),
            }
            continue;
        }
        let Ok(path) = std::fs::canonicalize(&candidate) else {
            args.push(word.clone());
            continue;
        };
        let dir = if is_file {
            path.parent().map(Path::to_owned)
        } else {
            Some(path.clone())
        };
        shown.extend(dir);
        args.push(path.to_string_lossy().into_owned());
    }
    shown.sort();
    shown.dedup();
    Ok(Resolved { program, args, shown })
}

/// A program named by its path: the folder to show and the path to start, kept as
/// named (only `.` and `..` taken away), not where its links lead. A virtual
/// environment's `bin/python` is a link to the base interpreter, which finds the
/// environment only from the path it was started by (`pyvenv.cfg` beside it or one
/// folder up); started by the link's target it is the bare interpreter.
///
/// Under isolation the program's folder must be reached through no link, and a
/// program that is a link must lead inside that folder or into the system's
/// directories, which every bot sees anyway. The folder shown is the program's,
/// or, for a virtual environment's program, the environment's, whose packages are
/// a folder beside `bin`. A link may also lead into a folder the host shows every
/// bot (`read_only`, `--sandbox-ro`): an interpreter installed outside `/usr`.
fn program_path(
    program: &str,
    candidate: &Path,
    contain: bool,
    read_only: &[PathBuf],
) -> Result<(PathBuf, PathBuf), String> {
    let named = lexical(candidate);
    let real = std::fs::canonicalize(&named).map_err(|e| format!("no program at {program:?}: {e}"))?;
    let folder = named.parent().map_or_else(|| PathBuf::from("/"), Path::to_owned);
    let venv = folder
        .parent()
        .filter(|up| up.join("pyvenv.cfg").is_file())
        .map_or_else(|| folder.clone(), Path::to_owned);
    if !contain {
        return Ok((venv, named));
    }
    if never_shown(&named) || never_shown(&real) {
        return Err(format!(
            "{program:?}: no bot is started from {}",
            NEVER_SHOWN.join(", ")
        ));
    }
    let real_folder =
        std::fs::canonicalize(&folder).map_err(|e| format!("{program:?}: its folder cannot be read: {e}"))?;
    if real_folder != folder {
        return Err(format!(
            "{program:?} is reached through a link: an isolated bot is shown the folders its command names, \
             never where a link leads (name the real path)"
        ));
    }
    if real_folder == Path::new("/") {
        return Err(format!(
            "{program:?}: an isolated bot is shown the folder of each path its command names, and this one's \
             is the whole file system (put the bot's files in a folder of their own)"
        ));
    }
    let seen =
        SYSTEM_DIRS.iter().any(|d| real.starts_with(d)) || read_only.iter().any(|d| real.starts_with(d));
    if !real.starts_with(&real_folder) && !seen {
        return Err(format!(
            "{program:?} is a link that leads out of its folder (to {}), which an isolated bot is never \
             shown; a link may lead into the system's directories ({}) or a folder given with --sandbox-ro",
            real.display(),
            SYSTEM_DIRS.join(", ")
        ));
    }
    Ok((venv, named))
}

/// Resolves the command of an isolated bot with a folder of its own: nothing it
/// names is shown, because its folder (at [`HOME_IN_SANDBOX`]) and the system's
/// directories are all it sees. A program with a `/` is a path in its folder; an
/// absolute argument must lie in it too, since a path anywhere else names
/// nothing the bot can see (refused, naming it, rather than left to fail later).
fn resolve_in_home(words: &[String], home: &Path) -> Result<Resolved, String> {
    let (program, rest) = words.split_first().ok_or("an empty command")?;
    let inside = |word: &str| -> Result<PathBuf, String> {
        let rel = lexical(Path::new(word));
        if rel.is_absolute() || word.split('/').any(|p| p == "..") {
            return Err(outside_home(word));
        }
        Ok(rel)
    };
    let program = if program.contains('/') {
        let rel = inside(program)?;
        if std::fs::symlink_metadata(home.join(&rel)).is_err() {
            return Err(format!("no program at {program:?} in the bot's folder"));
        }
        Path::new(HOME_IN_SANDBOX).join(rel)
    } else {
        on_bot_path(program)
            .ok_or_else(|| format!("{program:?} is not on the bots' PATH ({BOT_PATH}); give its path"))?
    };
    for word in rest {
        if word.starts_with('/') && !in_home_path(word) {
            return Err(outside_home(word));
        }
    }
    Ok(Resolved {
        program,
        args: rest.to_vec(),
        shown: Vec::new(),
    })
}

/// Whether an absolute word names the bot's own folder as the bot sees it.
fn in_home_path(word: &str) -> bool {
    let path = lexical(Path::new(word));
    path.starts_with(HOME_IN_SANDBOX) && !word.split('/').any(|p| p == "..")
}

fn outside_home(word: &str) -> String {
    format!(
        "{word:?} names a path outside the bot's folder; an isolated bot with a folder of its own sees \
         only that folder (at {HOME_IN_SANDBOX}, where it starts) and the system's directories: \
         name a path inside it"
    )
}

/// The words of an uploaded bot's command (`run` or `build`) that no sandbox
/// would take: an absolute program, or a path outside its folder. The ladder
/// refuses them at upload with the same reason a spawn would give.
///
/// # Errors
/// The reason, naming the word.
pub fn check_home_command(words: &[String]) -> Result<(), String> {
    let Some((program, rest)) = words.split_first() else {
        return Err("an empty command".into());
    };
    if program.starts_with('/') {
        return Err(format!(
            "{program:?} is an absolute program path; name a runtime's program (`python3`) or a path \
             in the bot's folder (`./bot`)"
        ));
    }
    if program.contains('/') && program.split('/').any(|p| p == "..") {
        return Err(outside_home(program));
    }
    for word in rest {
        if word.starts_with('/') && !in_home_path(word) {
            return Err(outside_home(word));
        }
    }
    Ok(())
}

/// `path` with `.` and `..` taken away by their names, without asking the file
/// system (so without following a link).
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// For an isolated bot: the folder to show for the path `word` names (`candidate`,
/// absolute) and the path to give the bot; `None` where it names a tree no bot
/// is shown (the word then stays as it is); or why it is refused.
fn contained(word: &str, candidate: &Path, is_file: bool) -> Result<Option<(PathBuf, PathBuf)>, String> {
    let named = lexical(candidate);
    let folder = if is_file {
        named.parent().map_or_else(|| PathBuf::from("/"), Path::to_owned)
    } else {
        named.clone()
    };
    let real_folder =
        std::fs::canonicalize(&folder).map_err(|e| format!("{word:?}: its folder cannot be read: {e}"))?;
    if never_shown(&named) || never_shown(&real_folder) {
        return Ok(None);
    }
    if real_folder != folder {
        return Err(format!(
            "{word:?} is reached through a link: an isolated bot is shown the folders its command names, \
             never where a link leads (name the real path)"
        ));
    }
    if real_folder == Path::new("/") {
        return Err(format!(
            "{word:?}: an isolated bot is shown the folder of each path its command names, and this one's \
             is the whole file system (put the bot's files in a folder of their own)"
        ));
    }
    let real = std::fs::canonicalize(&named).map_err(|e| format!("no file at {word:?}: {e}"))?;
    if !real.starts_with(&real_folder) {
        return Err(format!(
            "{word:?} is a link that leads out of its folder, which an isolated bot is never shown"
        ));
    }
    Ok(Some((real_folder, real)))
}

/// The JDKs' settings folders in `/etc` (`/etc/java-17-openjdk`): names only,
/// read once.
fn java_settings() -> &'static [String] {
    static FOUND: OnceLock<Vec<String>> = OnceLock::new();
    FOUND.get_or_init(|| {
        let mut dirs: Vec<String> = std::fs::read_dir("/etc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.starts_with("java-") && name.ends_with("-openjdk"))
            .map(|name| format!("/etc/{name}"))
            .collect();
        dirs.sort();
        dirs
    })
}

/// Where bubblewrap is, if installed.
fn bwrap_path() -> Option<PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let host_path = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&host_path)
                .chain(BOT_PATH.split(':').map(PathBuf::from))
                .map(|dir| dir.join("bwrap"))
                .find(|p| p.is_file())
        })
        .clone()
}

fn running_as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A bot's own folder (an uploaded bot's, unpacked by a worker): its command is
/// resolved in it, and it runs in it. Read-only for a bot that plays; for a
/// build, which makes what the bot will play, a writable copy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Home {
    /// The folder, absolute and reached through no link.
    pub dir: PathBuf,
    /// Whether the bot may write in it (a build).
    pub writable: bool,
}

/// Where an isolated build's source is shown, read-only; it runs in a bounded
/// area of its own at [`HOME_IN_SANDBOX`], filled from here.
pub const BUILD_SOURCE_IN_SANDBOX: &str = "/src";

/// How an isolated build is run: its folder copied into its bounded area, the
/// build's own output (both streams) to stderr, and, if it succeeds, the folder
/// as it left it written to stdout as a tar stream. Exit 124: something in it
/// cannot be packed (said on stderr); 125: the area could not be filled.
const BUILD_SCRIPT: &str = r#"find /src -mindepth 1 -maxdepth 1 -exec cp -a -t /bot/ {} + || { echo "astragal: the build's folder could not be filled (out of room in its area?)" >&2; exit 125; }
cd /bot || exit 125
"$@" 1>&2
status=$?
[ "$status" -eq 0 ] || exit "$status"
odd=$(find . \( -type s -o -type p -o -type b -o -type c \) -print 2>/dev/null | head -n 1)
if [ -n "$odd" ]; then
  echo "astragal: the built folder holds $odd, a socket, pipe or device, which cannot be packed" >&2
  exit 124
fi
exec tar --format=gnu --hard-dereference --numeric-owner --owner=0 --group=0 -cf - ."#;

/// The exit status of [`BUILD_SCRIPT`] when the built folder holds something
/// that cannot be packed.
pub const BUILD_UNPACKABLE: i32 = 124;

/// Prepares `command` (split as a shell would, without a shell) to run as a bot
/// under `sandbox`, with `env` on top of the fixed environment.
///
/// # Errors
/// A message for a spawn fault: bad quoting, a program that is not there,
/// isolation this machine cannot give, a scratch directory that cannot be made.
pub fn prepare(command: &str, env: &[(String, String)], sandbox: &Sandbox) -> Result<Prepared, String> {
    prepare_in(command, env, sandbox, None)
}

/// [`prepare`], for a bot with a folder of its own: the command is resolved in
/// `home` and runs there (isolated, `home` is the one folder of the host's it
/// sees besides the system's).
///
/// # Errors
/// As [`prepare`], and a home that is not a folder or is reached through a link.
pub fn prepare_in(
    command: &str,
    env: &[(String, String)],
    sandbox: &Sandbox,
    home: Option<&Home>,
) -> Result<Prepared, String> {
    let words = shlex::split(command)
        .filter(|w| !w.is_empty())
        .ok_or("bad quoting")?;
    let start_dir = match home {
        Some(h) => {
            let real =
                std::fs::canonicalize(&h.dir).map_err(|e| format!("its folder cannot be read: {e}"))?;
            if real != h.dir || !real.is_dir() {
                return Err("its folder is not a folder reached through no link".into());
            }
            real
        }
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    let isolated = sandbox.level == Level::Isolated;
    let mut resolved = match home {
        Some(h) if isolated => resolve_in_home(&words, &h.dir)?,
        _ => resolve(&words, &start_dir, isolated, &sandbox.read_only)?,
    };
    if isolated && home.is_some_and(|h| h.writable) {
        // A build: the script fills its area, runs it, and packs what it made.
        let mut args = vec![
            "-c".to_owned(),
            BUILD_SCRIPT.to_owned(),
            "build".to_owned(),
            resolved.program.to_string_lossy().into_owned(),
        ];
        args.append(&mut resolved.args);
        resolved.program = PathBuf::from("/bin/sh");
        resolved.args = args;
    }
    let cgroup = BotCgroup::create(sandbox.memory, sandbox.processes, sandbox.cpu_millicores);
    let (mut cmd, scratch, uid, seccomp) = match sandbox.level {
        Level::None => {
            let scratch =
                ScratchDir::create().map_err(|e| format!("cannot make a scratch directory: {e}"))?;
            let mut cmd = Command::new(&resolved.program);
            cmd.args(&resolved.args)
                .current_dir(home.map_or(scratch.path(), |h| h.dir.as_path()));
            cmd.env_clear().envs(fixed_env(scratch.path()));
            (cmd, Some(scratch), None, None)
        }
        Level::Isolated => {
            let bwrap = bwrap_path().ok_or("bubblewrap (`bwrap`), which is not installed")?;
            let uid = if running_as_root() {
                Some(super::uid::SandboxUid::take(sandbox.uids)?)
            } else {
                None
            };
            if let (Some(h), Some(uid)) = (home.filter(|h| h.writable), &uid) {
                give_folder(&h.dir, uid.uid())
                    .map_err(|e| format!("cannot hand its folder to the build: {e}"))?;
            }
            let seccomp = seccomp_fd().map_err(|e| format!("cannot pass the system-call filter: {e}"))?;
            let mut cmd = Command::new(bwrap);
            cmd.args(bwrap_args(sandbox, &resolved.shown, home, seccomp.as_raw_fd()));
            if let Some(uid) = &uid {
                cmd.args(drop_to(uid.uid()));
            }
            cmd.arg(&resolved.program).args(&resolved.args);
            cmd.env_clear().envs(fixed_env(Path::new(ISOLATED_SCRATCH)));
            (cmd, None, uid, Some(seccomp))
        }
    };
    cmd.envs(sandbox.env.iter().chain(env).map(|(k, v)| (k, v)));
    let limits_memory = cgroup.as_ref().is_some_and(BotCgroup::limits_memory);
    let child = ChildPlan {
        cgroup_fds: cgroup.as_ref().map(BotCgroup::join_fds).unwrap_or_default(),
        file_size: sandbox.file_size,
        open_files: sandbox.open_files,
        cpu_seconds: sandbox.cpu_seconds,
        data: (!limits_memory).then_some(sandbox.memory),
        parent: std::process::id() as i32,
        inherit: seccomp.as_ref().map(AsRawFd::as_raw_fd),
        descriptors_to_mark: nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(1024, |(soft, _)| soft.min(1 << 20) as RawFd),
    };
    Ok(Prepared {
        command: cmd,
        cgroup,
        scratch,
        uid,
        _seccomp: seccomp,
        child,
    })
}

/// The system-call filter in a pipe, for bubblewrap to read to its end.
fn seccomp_fd() -> io::Result<std::os::fd::OwnedFd> {
    use std::io::Write;
    static PROGRAM: OnceLock<Vec<u8>> = OnceLock::new();
    let program = PROGRAM.get_or_init(super::seccomp::program);
    // Close-on-exec here: only the child it is meant for clears it, between fork
    // and exec, so bots started at the same time on other threads never hold it.
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)?;
    // A few hundred bytes: the pipe takes them without a reader.
    std::fs::File::from(write).write_all(program)?;
    Ok(read)
}

/// Makes a build's writable folder, and all in it, the build's own: owned by its
/// user and closed to every other (`0700`), so no other sandbox's user can read
/// or write it whatever it is shown.
fn give_folder(dir: &Path, uid: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let owner = Some(nix::unistd::Uid::from_raw(uid));
    let group = Some(nix::unistd::Gid::from_raw(uid));
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        let meta = std::fs::symlink_metadata(&at)?;
        // A link is given itself, never what it points at.
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            &at,
            owner,
            group,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(io::Error::from)?;
        if meta.is_dir() {
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o700))?;
            for entry in std::fs::read_dir(&at)? {
                stack.push(entry?.path());
            }
        }
    }
    Ok(())
}

fn fixed_env(scratch: &Path) -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", BOT_PATH.into()),
        ("LANG", "C.UTF-8".into()),
        ("HOME", scratch.into()),
        ("TMPDIR", scratch.into()),
    ]
}

/// bubblewrap's arguments: new namespaces for everything but the user (which it
/// makes itself when not root), the system directories and the bot's own files
/// read-only (its home at [`HOME_IN_SANDBOX`]), a fresh `/proc` and `/dev`, a
/// private size-limited `/tmp`, and the system-call filter read from `seccomp`.
fn bwrap_args(sandbox: &Sandbox, shown: &[PathBuf], home: Option<&Home>, seccomp: RawFd) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |words: &[&str]| a.extend(words.iter().map(OsString::from));
    push(&[
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "bot",
    ]);
    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        match std::fs::read_link(path) {
            Ok(target) => push(&["--symlink", &target.to_string_lossy(), dir]),
            Err(_) if path.is_dir() => push(&["--ro-bind", dir, dir]),
            Err(_) => {}
        }
    }
    push(&["--perms", "0755", "--dir", "/etc"]);
    for file in ETC_SHOWN {
        push(&["--ro-bind-try", file, file]);
    }
    // A JDK's settings (Debian's `/etc/java-17-openjdk`, linked from the JDK's
    // `conf`): without them `java` and `javac` stop at their first class.
    for dir in java_settings() {
        push(&["--ro-bind", dir, dir]);
    }
    push(&["--proc", "/proc", "--dev", "/dev"]);
    let size = sandbox.file_size.to_string();
    push(&["--perms", "1777", "--size", &size, "--tmpfs", ISOLATED_SCRATCH]);
    // POSIX shared memory and semaphores (Python's multiprocessing locks): the
    // sandbox's own, as bounded as its `/tmp`.
    push(&["--perms", "1777", "--size", &size, "--tmpfs", "/dev/shm"]);
    let mut extra: Vec<&Path> = shown.iter().map(PathBuf::as_path).collect();
    extra.extend(sandbox.read_only.iter().map(PathBuf::as_path));
    extra.retain(|dir| !SYSTEM_DIRS.iter().any(|s| dir.starts_with(s)));
    // The directories leading to each bind are made by bubblewrap, private to root
    // unless told otherwise: the bot's user must be able to walk through them.
    let mut ancestors: Vec<&Path> = extra.iter().flat_map(|d| d.ancestors().skip(1)).collect();
    ancestors.retain(|a| a.parent().is_some() && *a != Path::new(ISOLATED_SCRATCH));
    ancestors.sort();
    ancestors.dedup();
    for dir in ancestors {
        push(&["--perms", "0755", "--dir", &dir.to_string_lossy()]);
    }
    for dir in &extra {
        let dir = dir.to_string_lossy();
        push(&["--ro-bind", &dir, &dir]);
    }
    // What the host keeps from bots, where it lies in a directory shown to them.
    for hidden in sandbox
        .hidden
        .iter()
        .filter(|h| extra.iter().any(|d| h.starts_with(d)))
    {
        let path = hidden.to_string_lossy();
        if hidden.is_dir() {
            push(&["--tmpfs", &path]);
        } else if hidden.exists() {
            push(&["--ro-bind", "/dev/null", &path]);
        }
    }
    match home {
        // A build writes only in a tmpfs of its own, bounded in bytes; its source
        // is beside it, read-only, and nothing it writes reaches the host's disk.
        Some(h) if h.writable => {
            let area = sandbox.build_area.to_string();
            push(&["--ro-bind", &h.dir.to_string_lossy(), BUILD_SOURCE_IN_SANDBOX]);
            push(&["--perms", "0777", "--size", &area, "--tmpfs", HOME_IN_SANDBOX]);
        }
        Some(h) => push(&["--ro-bind", &h.dir.to_string_lossy(), HOME_IN_SANDBOX]),
        None => {}
    }
    let chdir = if home.is_some() {
        HOME_IN_SANDBOX
    } else {
        ISOLATED_SCRATCH
    };
    push(&["--seccomp", &seccomp.to_string(), "--chdir", chdir, "--"]);
    a
}

/// Run as root, bubblewrap makes the namespaces without a user namespace, so the
/// bot would be root outside too: `setpriv` makes it the sandbox's own user, with
/// no capabilities and no way to gain any.
fn drop_to(uid: u32) -> Vec<OsString> {
    [
        "/usr/bin/setpriv".to_owned(),
        format!("--reuid={uid}"),
        format!("--regid={uid}"),
        "--clear-groups".to_owned(),
        "--no-new-privs".to_owned(),
        "--inh-caps=-all".to_owned(),
        "--bounding-set=-all".to_owned(),
        "--".to_owned(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// Starts a contained `true` and says what is missing if it fails.
pub(super) fn check_isolation(sandbox: &Sandbox) -> Result<(), SandboxError> {
    let Some(bwrap) = bwrap_path() else {
        return Err(SandboxError::Unavailable(
            "bubblewrap (`bwrap`), which is not installed (Debian and Ubuntu: `apt-get install bubblewrap`)"
                .into(),
        ));
    };
    if running_as_root() && !Path::new("/usr/bin/setpriv").is_file() {
        return Err(SandboxError::Unavailable(
            "`/usr/bin/setpriv` (util-linux) to run each bot as a user of its own when the referee runs as root".into(),
        ));
    }
    let mut prepared = prepare("true", &[], sandbox).map_err(SandboxError::Unavailable)?;
    prepared.install_child_setup();
    let out = prepared
        .command
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| SandboxError::Unavailable(format!("bubblewrap to start ({}: {e})", bwrap.display())))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(SandboxError::Unavailable(format!(
        "namespaces this machine refuses; bubblewrap says: {} (unprivileged user namespaces may be off: \
         `sysctl kernel.unprivileged_userns_clone=1`, or run the referee as root)",
        said.trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of its own under the system's temporary directory.
    fn folder(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("astragal-resolve-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bot")).unwrap();
        std::fs::create_dir_all(dir.join("private")).unwrap();
        std::fs::write(dir.join("bot/notes.txt"), "notes").unwrap();
        std::fs::write(dir.join("private/token"), "secret").unwrap();
        std::os::unix::fs::symlink("/", dir.join("bot/data")).unwrap();
        std::os::unix::fs::symlink(dir.join("private"), dir.join("bot/cfg")).unwrap();
        std::os::unix::fs::symlink(dir.join("private/token"), dir.join("bot/token.txt")).unwrap();
        std::os::unix::fs::symlink("notes.txt", dir.join("bot/alias.txt")).unwrap();
        std::os::unix::fs::symlink(dir.join("bot"), dir.join("botlink")).unwrap();
        dir
    }

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn an_isolated_bots_named_paths_never_follow_a_link_out_of_their_folder() {
        let dir = folder("links");
        let bot = dir.join("bot");
        for refused in [
            "data/",
            "cfg/",
            "token.txt",
            "../botlink/notes.txt",
            "./cfg/token",
        ] {
            let e = resolve(&words(&format!("cat {refused}")), &bot, true, &[]).err();
            assert!(
                e.as_deref().is_some_and(|e| e.contains("link")),
                "{refused}: {e:?}"
            );
        }
        // A plain file shows its folder; a link inside the folder is fine.
        let r = resolve(&words("cat notes.txt alias.txt ./"), &bot, true, &[]).unwrap();
        assert_eq!(r.shown, vec![bot.clone()]);
        assert_eq!(
            r.args,
            vec![
                bot.join("notes.txt").display().to_string(),
                bot.join("notes.txt").display().to_string(),
                bot.display().to_string(),
            ]
        );
        // `..` is taken by name: it names the real parent of the real folder.
        let r = resolve(&words("cat ../bot/notes.txt"), &bot, true, &[]).unwrap();
        assert_eq!(r.shown, vec![bot.clone()]);
        // Not isolated, nothing is shown, and links are followed as before.
        let r = resolve(&words("cat data/"), &bot, false, &[]).unwrap();
        assert_eq!(r.args, vec!["/".to_owned()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_named_without_a_slash_is_made_absolute_and_shown() {
        // `java -cp classes SpartanBot`: the class name names nothing and stays.
        let dir = std::env::temp_dir().join(format!("astragal-java-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("classes")).unwrap();
        std::fs::write(dir.join("classes/SpartanBot.class"), b"x").unwrap();
        for contain in [false, true] {
            let r = resolve(&words("cat -cp classes SpartanBot"), &dir, contain, &[]).unwrap();
            assert_eq!(
                r.args,
                vec![
                    "-cp".to_owned(),
                    dir.join("classes").display().to_string(),
                    "SpartanBot".to_owned()
                ],
                "isolated: {contain}"
            );
            assert!(r.shown.contains(&dir.join("classes")), "{:?}", r.shown);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn lexical_takes_dots_away_without_the_file_system() {
        assert_eq!(lexical(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(lexical(Path::new("/../a")), PathBuf::from("/a"));
    }
}
