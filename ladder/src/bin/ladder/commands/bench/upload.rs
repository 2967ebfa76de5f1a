//! `ladder bench-upload`: what an author's upload costs, through a server and a
//! worker in this process (SQLite in a temporary folder): the upload of a Python
//! bot padded to a size, its build and check, its first game; then a worker's
//! games per second with that bot from its warm cache against the same program
//! registered by the host, in turn.

use anyhow::{Context, bail};
use ladder::app::{self, ServiceConfig, UploadConfig};
use ladder::store::{BotStatus, Store};
use ladder::worker::{self, WorkerConfig, WorkerUploads};
use referee::sandbox::Sandbox;
use std::time::{Duration, Instant};

pub(crate) struct BenchUploadConfig {
    /// The bot's size, in MiB (random bytes: what does not compress).
    pub(crate) mib: u64,
    /// Games per measured run of throughput.
    pub(crate) games: u64,
    /// Runs of each kind, in turn.
    pub(crate) rounds: usize,
    pub(crate) sandbox: Sandbox,
    /// An object store for the files, else the database.
    pub(crate) artifacts: Option<String>,
}

const ADMIN: &str = "bench-upload-admin-token";
const WORKER: &str = "bench-upload-worker-token";
const AUTHOR: &str = "bench-upload-author-token";

/// Waits for `ready` to hold, looking every 10 ms, at most `limit`.
async fn until<F, Fut>(limit: Duration, what: &str, mut ready: F) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let start = Instant::now();
    while !ready().await? {
        if start.elapsed() > limit {
            bail!("{what}: not within {} s", limit.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(start.elapsed())
}

pub(crate) async fn run(cfg: &BenchUploadConfig) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let db = format!("sqlite:{}", dir.path().join("bench.sqlite").display());
    let store = Store::open(&db).await?;
    store.workers().add_worker("w1", &app::token_hash(WORKER)).await?;
    store
        .authors()
        .add_author("bench", &app::token_hash(AUTHOR), 10)
        .await?;
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://127.0.0.1:{}", grpc.local_addr()?.port());
    let service = ServiceConfig {
        uploads: UploadConfig {
            objects: match &cfg.artifacts {
                Some(place) => Some(std::sync::Arc::new(app::objects::ObjectArtifacts::open(place)?)),
                None => None,
            },
            ..UploadConfig::default()
        },
        ..ServiceConfig::new(ADMIN)
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(ladder::serve::run(
        grpc,
        None,
        ladder::serve::Transport::default(),
        store.clone(),
        service,
        async move {
            let _ = stopped.await;
        },
    ));

    // The bot: the Python starter kit, a build that makes what plays, and
    // random padding.
    let bot = dir.path().join("bot");
    std::fs::create_dir(&bot)?;
    let starter = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bots/starters/python/bot.py");
    std::fs::copy(&starter, bot.join("bot.py")).with_context(|| format!("{}", starter.display()))?;
    std::fs::write(
        bot.join("astragal.toml"),
        "name = \"padded\"\ngames = [\"ur\"]\nruntime = \"python3\"\nbuild = \"cp bot.py play.py\"\nrun = \"python3 play.py\"\n",
    )?;
    let mut padding = vec![0u8; (cfg.mib << 20) as usize];
    getrandom::fill(&mut padding).map_err(|e| anyhow::anyhow!("no random source: {e}"))?;
    std::fs::write(bot.join("padding.bin"), &padding)?;

    let mut author = worker::connect(&url, AUTHOR, None).await?;
    let t = Instant::now();
    let packed = ladder::submission::pack_folder(&bot)?;
    let chunks: Vec<proto::ladder::UploadChunk> = packed
        .chunks(1 << 20)
        .map(|c| proto::ladder::UploadChunk { data: c.to_vec() })
        .collect();
    author
        .submit(tokio_stream::iter(chunks))
        .await
        .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
    let upload = t.elapsed();

    let cache = dir.path().join("cache");
    let worker_cfg = |max_groups: Option<u64>| WorkerConfig {
        server: url.clone(),
        token: WORKER.into(),
        ca_pem: None,
        name: "bench".into(),
        concurrency: 1,
        batch: 8,
        max_groups,
        exit_when_idle: false,
        log_dir: None,
        sandbox: cfg.sandbox.clone(),
        progress: false,
        stop_within: Duration::ZERO,
        uploads: WorkerUploads {
            runtimes: vec!["python3".into()],
            cache_dir: Some(cache.clone()),
            cache_bytes: 4 << 30,
            grpc_ca: None,
            remote_allow: Vec::new(),
        },
    };
    let (halt, halted) = tokio::sync::oneshot::channel::<()>();
    let working = tokio::spawn(worker::run(worker_cfg(None), async move {
        let _ = halted.await;
    }));
    let built = until(Duration::from_secs(900), "the build and check", || async {
        let b = store.bots().bot("padded").await?.context("the bot")?;
        if matches!(b.status, BotStatus::BuildFailed | BotStatus::Rejected) {
            bail!("the bot was {}: {}", b.status, b.status_reason);
        }
        Ok(b.status == BotStatus::Active)
    })
    .await?;
    // The host's own copy of the same program, by command line.
    let play = dir.path().join("host-play.py");
    std::fs::copy(bot.join("bot.py"), &play)?;
    let mut admin = worker::connect(&url, ADMIN, None).await?;
    let register = |name: &str, spec: String| proto::ladder::RegisterBotRequest {
        name: name.into(),
        game: "ur".into(),
        spec,
        env: vec![],
    };
    admin
        .register_bot(register("rnd", "builtin:random".into()))
        .await
        .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
    let open = |name: String, games: u64| proto::ladder::OpenCompetitionRequest {
        name,
        game: "ur".into(),
        max_games: games,
        movetime_ms: 2000,
        ..Default::default()
    };
    admin
        .open_competition(open("first".into(), 2))
        .await
        .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
    let first = store
        .competitions()
        .competition("first")
        .await?
        .context("the competition")?;
    let first_game = until(Duration::from_secs(300), "the first game", || async {
        Ok(store.shapes().game_count(first.id).await? > 0)
    })
    .await?;
    let _ = halt.send(());
    working.await??;

    // Throughput, in turn: the uploaded bot from the warm cache, then the
    // host's command for the same program, each against random.
    admin
        .register_bot(register("host", format!("python3 {}", play.display())))
        .await
        .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..cfg.rounds {
        for (k, who) in ["padded", "host"].iter().enumerate() {
            let other = if *who == "padded" { "host" } else { "padded" };
            admin
                .set_bot_status(proto::ladder::SetBotStatusRequest {
                    name: other.into(),
                    status: proto::ladder::BotStatus::Disabled.into(),
                    reason: String::new(),
                })
                .await
                .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
            admin
                .set_bot_status(proto::ladder::SetBotStatusRequest {
                    name: (*who).into(),
                    status: proto::ladder::BotStatus::Active.into(),
                    reason: String::new(),
                })
                .await
                .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
            let name = format!("{who}-{round}");
            admin
                .open_competition(open(name.clone(), cfg.games))
                .await
                .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
            let t = Instant::now();
            let groups = worker::run(worker_cfg(Some(cfg.games / 2)), std::future::pending()).await?;
            let secs = t.elapsed().as_secs_f64();
            rates[k].push(2.0 * groups as f64 / secs);
            admin
                .close_competition(proto::ladder::CloseCompetitionRequest { name })
                .await
                .map_err(|s| anyhow::anyhow!("{}", s.message()))?;
        }
    }
    let _ = stop.send(());
    served.await??;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (uploaded, host) = (median(&mut rates[0]), median(&mut rates[1]));
    println!(
        "a Python bot of {} MiB (random padding), sandbox {:?}, files in {}:",
        cfg.mib,
        cfg.sandbox.level,
        cfg.artifacts.as_deref().unwrap_or("the store (SQLite)")
    );
    println!(
        "  upload (pack + send + check + store): {:>8.0} ms",
        upload.as_secs_f64() * 1000.0
    );
    println!(
        "  build and check (check-bot, 4 games): {:>7.0} ms",
        built.as_secs_f64() * 1000.0
    );
    println!(
        "  first game recorded after it opened:  {:>7.0} ms",
        first_game.as_secs_f64() * 1000.0
    );
    println!(
        "games/s against random, {} games a run, median of {} runs in turn: uploaded (warm cache) {uploaded:.1}, host's command {host:.1} ({:+.1}%)",
        cfg.games,
        cfg.rounds,
        100.0 * (uploaded / host - 1.0)
    );
    println!("  every run: uploaded {:?}, host {:?}", rates[0], rates[1]);
    drop(dir);
    Ok(())
}
