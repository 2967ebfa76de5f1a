//! `ladder worker`: lease groups, play them in the sandbox, report.
use super::{Connection, Role, runtime, shutdown_signal};
use anyhow::{Context, bail};
use clap::Args;
use referee::cli::number_in;
use referee::sandbox::{Level, SandboxArgs};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct WorkerArgs {
    #[command(flatten)]
    pub(crate) connection: Connection,
    /// Groups played at once.
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 1024))]
    pub(crate) concurrency: usize,
    /// Groups each of the --concurrency tasks leases per call (1 to 64). A task
    /// plays its groups' first games, and leases more batches while no other
    /// thread or program on this machine waits to start a new rotation (up to 64
    /// groups), before it plays their later rotations and reports them: every
    /// bot process on the machine quits between rotations. With quick bots, 8 to
    /// 32 cut the round trips to the server. The worker renews its leases while
    /// it plays, however long a batch takes.
    #[arg(long, default_value_t = 1, value_parser = |s: &str| number_in(s, 1usize, 64))]
    pub(crate) batch: usize,
    /// Name in this worker's own log lines (the server knows it by its token).
    #[arg(long, default_value = "worker")]
    pub(crate) name: String,
    /// Stop after this many groups.
    #[arg(long, value_parser = |s: &str| number_in(s, 1u64, u64::MAX))]
    pub(crate) max_groups: Option<u64>,
    /// Stop when the server has nothing to play.
    #[arg(long)]
    pub(crate) exit_when_idle: bool,
    /// Write each bot's stderr (capped) to files in this directory.
    #[arg(long)]
    pub(crate) log_dir: Option<PathBuf>,
    /// Run bots with `--sandbox none`. A worker runs programs that strangers
    /// registered, so it isolates them unless the host says this too.
    #[arg(long)]
    pub(crate) allow_unsandboxed: bool,
    /// The runtimes this machine offers authors' uploaded bots, comma-separated
    /// (native, python3, python3-engine, node, java, cc, cargo): this worker
    /// builds, checks and plays only uploaded bots of these. Default: those whose
    /// programs are on the bots' PATH here (python3-engine only with
    /// --python-engine). `none`: only the host's own bots.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub(crate) runtimes: Option<Vec<String>>,
    /// A folder holding the engine's Python package (its `astragal_engine`
    /// folder), made from this release with `pip install --target DIR ./python`:
    /// shown read-only to every bot and build, and put on their PYTHONPATH, so
    /// this worker can offer the runtime `python3-engine` (bots that simulate
    /// games with the rules the referee plays, like the searching Python
    /// starter). Checked before it is offered: the package imports and is of
    /// this worker's engine version.
    #[arg(long, value_name = "DIR")]
    pub(crate) python_engine: Option<PathBuf>,
    /// Where uploaded bots' folders are kept between runs (default: a new
    /// temporary folder each run).
    #[arg(long, value_name = "DIR")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// How much of uploaded bots' folders is kept, in MiB; the least recently
    /// used go first.
    #[arg(long, value_name = "MIB", default_value_t = 2048, value_parser = |s: &str| number_in(s, 1u64, 1 << 30))]
    pub(crate) cache_size: u64,
    /// The certificate authority (PEM file) that bots served by their authors
    /// over `grpcs://` must show a certificate of. Without it, a certificate must
    /// chain to the system's root certificates.
    #[arg(long, value_name = "FILE")]
    pub(crate) grpc_ca: Option<PathBuf>,
    /// A range of addresses (CIDR, such as 10.20.0.0/16 or fd00::/8) where
    /// authors' self-served bots (`runtime = "remote"`) may be dialled although
    /// it is not public; repeatable. An author names the address this worker
    /// dials, and the worker is not sandboxed, so it resolves the name once and
    /// refuses loopback, private (10/8, 172.16/12, 192.168/16, 100.64/10,
    /// fc00::/7), link-local, multicast, reserved and documentation ranges
    /// (IPv4-mapped IPv6 forms included) and this machine's own addresses;
    /// otherwise an author could reach services on this machine or its network,
    /// and read from the check report which ports answer (it says only "could
    /// not connect", whatever failed). Allow a range only where authors' bots
    /// really run on your own network (or loopback, 127.0.0.0/8, for a test).
    /// Bots you register yourself (`ladder admin register-bot`) are dialled
    /// wherever you said.
    #[arg(long, value_name = "CIDR")]
    pub(crate) remote_allow: Vec<referee::dial::IpRange>,
    /// The bytes an uploaded bot's build may write, in MiB, everything it makes
    /// included: a private tmpfs in its sandbox (its pages count as its memory),
    /// never this machine's disk. The built folder must also pass the ladder's
    /// upload limits.
    #[arg(long, value_name = "MIB", default_value_t = referee::sandbox::Sandbox::default().build_area >> 20, value_parser = |s: &str| number_in(s, 1u64, 1 << 20))]
    pub(crate) build_area: u64,
    /// Once asked to stop (SIGTERM, Ctrl-C), how many seconds the games in hand
    /// may go on to be played and reported. Then whatever is still held, groups
    /// and a build, is given back to the server: the groups are dealt again at
    /// once with new seeds, and another worker takes the build. It is not left
    /// to run out. 0 gives everything back at once. Keep it under your
    /// orchestrator's grace period (Kubernetes: 30 s by default).
    #[arg(long, value_name = "SECONDS", default_value_t = 20.0,
          value_parser = |s: &str| number_in(s, 0.0, 86_400.0))]
    pub(crate) stop_within: f64,
    /// Address for your monitoring: `/metrics` (this worker's games, faults by
    /// kind, bot folders from its cache or fetched, bot start times, groups
    /// held) in Prometheus' text format, and `/healthz`; none if absent.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
    /// Containment of bots (default here: isolated).
    #[command(flatten)]
    pub(crate) sandbox: SandboxArgs,
}

pub(crate) fn run(a: WorkerArgs) -> anyhow::Result<ExitCode> {
    let mut sandbox = worker_sandbox(&a)?;
    if let Some(dir) = &a.log_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    }
    let runtimes = kept_runtimes(a.runtimes, a.python_engine.is_some(), &sandbox)?;
    // The worker's own files are masked wherever they lie in a folder a bot is shown.
    sandbox.hide(
        a.log_dir
            .iter()
            .cloned()
            .chain(a.connection.token_file.iter().cloned())
            .chain(a.cache_dir.iter().cloned()),
    );
    let rt = runtime()?;
    let cfg = ladder::worker::WorkerConfig {
        token: a.connection.token(Role::Worker)?,
        ca_pem: a.connection.ca_pem()?,
        server: a.connection.server,
        name: a.name,
        concurrency: a.concurrency,
        batch: a.batch,
        max_groups: a.max_groups,
        exit_when_idle: a.exit_when_idle,
        log_dir: a.log_dir,
        sandbox,
        progress: true,
        uploads: ladder::worker::WorkerUploads {
            runtimes,
            cache_dir: a.cache_dir,
            cache_bytes: a.cache_size << 20,
            grpc_ca: match &a.grpc_ca {
                Some(path) => Some(
                    std::fs::read(path)
                        .map_err(|e| anyhow::anyhow!("reading --grpc-ca {}: {e}", path.display()))?
                        .into(),
                ),
                None => None,
            },
            remote_allow: a.remote_allow,
        },
        stop_within: std::time::Duration::from_secs_f64(a.stop_within),
    };
    if let Some(addr) = &a.metrics {
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(addr))
            .with_context(|| format!("cannot listen on {addr}"))?;
        eprintln!(
            "ladder worker: metrics on http://{}/metrics",
            listener.local_addr()?
        );
        let _entered = rt.enter();
        ladder::worker::holdings::serve_metrics(listener);
    }
    let n = rt.block_on(ladder::worker::run(cfg, shutdown_signal()))?;
    eprintln!("ladder worker: {n} groups reported");
    // A build cut short by a stop may still run on a blocking thread: its
    // sandbox dies with this process, which does not wait for it.
    rt.shutdown_background();
    Ok(ExitCode::SUCCESS)
}

/// The sandbox the worker's bots and builds run in, checked to work here.
fn worker_sandbox(a: &WorkerArgs) -> anyhow::Result<referee::sandbox::Sandbox> {
    let mut sandbox = a.sandbox.sandbox(Level::Isolated).map_err(anyhow::Error::msg)?;
    sandbox.build_area = a.build_area << 20;
    if let Some(dir) = &a.python_engine {
        let dir = engine_folder(dir)?;
        sandbox
            .env
            .push(("PYTHONPATH".to_owned(), dir.to_string_lossy().into_owned()));
        sandbox.read_only.push(dir);
    }
    if sandbox.level == Level::None && !a.allow_unsandboxed {
        bail!(
            "a worker runs programs strangers registered: it refuses `--sandbox none` unless you also pass \
             --allow-unsandboxed (see docs/security.md)"
        );
    }
    // A worker that cannot start bots as asked would charge every bot with its
    // own failure: it stops here, saying what is missing.
    match sandbox.check() {
        Ok(()) => {}
        Err(e @ referee::sandbox::SandboxError::Unavailable(_)) => {
            return Err(anyhow::Error::new(e).context(
                "bots cannot be isolated on this machine; to run them anyway, pass \
                 `--sandbox none --allow-unsandboxed` (see docs/security.md)",
            ));
        }
        Err(e) => return Err(e.into()),
    }
    // A task plays one game at a time; most games ask one seat at a time (a
    // game whose seats decide at once asks more, and gets less than a core each
    // where this warns already).
    if let Some(w) = referee::sandbox::concurrency_warning(a.concurrency, 1, sandbox.cpu_millicores) {
        tracing::warn!("{w}");
    }
    Ok(sandbox)
}

/// The runtimes this worker offers: those named (`--runtimes`; `none` for
/// none), or those found here, each kept (a tiny program built and run in the
/// builds' sandbox) before it is offered, so a broken toolchain never turns
/// authors' versions into build failures. A named runtime that is not kept
/// stops the worker.
fn kept_runtimes(
    named: Option<Vec<String>>,
    python_engine: bool,
    sandbox: &referee::sandbox::Sandbox,
) -> anyhow::Result<Vec<String>> {
    let declared = named.is_some();
    let runtimes = match named {
        None => ladder::worker::detect_runtimes(python_engine),
        Some(list) if list == ["none"] => Vec::new(),
        Some(list) => {
            let known = ladder::submission::all_runtimes();
            if let Some(bad) = list.iter().find(|r| !known.contains(r)) {
                bail!(
                    "--runtimes: unknown runtime {bad:?}; the ladder knows {}",
                    known.join(", ")
                );
            }
            list
        }
    };
    let mut kept = Vec::with_capacity(runtimes.len());
    for runtime in runtimes {
        match ladder::worker::promise::check_runtime(&runtime, sandbox) {
            Ok(found) => {
                eprintln!("ladder worker: runtime {runtime}: {found}");
                kept.push(runtime);
            }
            Err(why) if declared && runtime == "python3-engine" && !python_engine => bail!(
                "--runtimes: python3-engine needs the engine's package: give --python-engine DIR ({why})"
            ),
            Err(why) if declared => bail!("--runtimes: {runtime} is not kept on this machine: {why}"),
            Err(why) => eprintln!("ladder worker: runtime {runtime} not offered: {why}"),
        }
    }
    eprintln!(
        "ladder worker: uploaded bots of {}",
        if kept.is_empty() {
            "no runtime".to_owned()
        } else {
            kept.join(", ")
        }
    );
    Ok(kept)
}

/// The folder `--python-engine` names, as bots will see it: a real folder
/// (links resolved) that holds the package.
fn engine_folder(dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let real = std::fs::canonicalize(dir)
        .with_context(|| format!("--python-engine {}: no such folder", dir.display()))?;
    if !real.join("astragal_engine").join("__init__.py").is_file() {
        bail!(
            "--python-engine {}: it holds no astragal_engine package; make it with \
             `pip install --target {} ./python` from this release",
            dir.display(),
            dir.display()
        );
    }
    if real.to_str().is_none() {
        bail!("--python-engine {}: its path is not UTF-8", dir.display());
    }
    Ok(real)
}
