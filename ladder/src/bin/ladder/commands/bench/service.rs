//! `ladder bench-service`: a real `ladder serve` on loopback and N simulated
//! workers in this process (each with its own token and connection; each leases,
//! plays with in-process bots, reports), for a fixed time per number of workers.
//! Prints what a host sizing a server needs: groups and games per second, lease
//! and report latency, and the server's own CPU per game.

use ladder::app::GroupReport;
use ladder::worker::{Api, Taken, channel, client_on, connect, play_lease};
use proto::ladder::{AddWorkerRequest, OpenCompetitionRequest, RegisterBotRequest};
use referee::game::BotPool;
use referee::sandbox::{Level, Sandbox};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchServiceConfig {
    /// `sqlite` (a new file in a temporary folder) or a PostgreSQL URL, on whose
    /// server a new database is made for the run and dropped after it.
    pub db: String,
    /// The `ladder` program to run as the server.
    pub server_program: PathBuf,
    /// Simulated workers, one row each.
    pub workers: Vec<usize>,
    /// Measured time per row, after the warm-up.
    pub seconds: f64,
    /// Warm-up per row (connections, the scheduler's first batches).
    pub warmup: f64,
    /// Groups per lease and report call.
    pub batch: usize,
    /// The game, played by random bots.
    pub game: String,
    /// Random bots registered.
    pub bots: usize,
    /// Connections the simulated workers share at most (each worker keeps its
    /// own token and leases; HTTP/2 carries several workers' calls on one).
    pub connections: usize,
    /// `ladder serve` processes on the one database, the workers spread over them.
    pub servers: usize,
}

/// One row: a number of workers.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BenchServiceRow {
    /// Simulated workers.
    pub workers: usize,
    /// Groups recorded per second.
    pub groups_per_s: f64,
    /// Games recorded per second.
    pub games_per_s: f64,
    /// Time the server took to serve lease calls that returned groups, from
    /// when it let them in (the call's latency less its wait in line), median
    /// and 99th percentile (ms).
    pub lease_ms: (f64, f64),
    /// Those calls' wait in line (`queued_ms`), median and 99th percentile (ms):
    /// how long a worker waits for its turn when the server has more workers
    /// than work.
    pub lease_queued_ms: (f64, f64),
    /// Share of lease calls answered "ask again" (`retry_after_ms`): their
    /// poll ran out in line, or no group was ready yet.
    pub leases_told_to_wait: f64,
    /// Report call latency, median and 99th percentile (ms).
    pub report_ms: (f64, f64),
    /// The server process's CPU time per recorded game (µs).
    pub server_cpu_us_per_game: f64,
    /// The whole machine's busy share over the row (server, database, workers).
    pub machine_busy: f64,
    /// Connections the workers shared.
    pub connections: usize,
    /// Games each worker had recorded over the row: fewest, 10th percentile,
    /// median, most.
    pub games_per_worker: (u64, u64, u64, u64),
    /// Workers that recorded no game over the row.
    pub workers_without_games: usize,
}

/// A whole run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchServiceReport {
    /// `sqlite` or `postgres`.
    pub database: String,
    /// The game.
    pub game: String,
    /// Groups per call.
    pub batch: usize,
    /// Cores on this machine.
    pub cores: usize,
    /// Servers on the one database.
    pub servers: usize,
    /// Games stored at the end.
    pub games_stored: u64,
    /// Games the servers answered `Recorded` for, over the whole run: equal to
    /// the games stored, or some were stored twice or lost.
    pub games_recorded: u64,
    /// The database's size at the end (SQLite: its files; PostgreSQL:
    /// `pg_database_size`), in bytes.
    pub database_bytes: u64,
    /// One row per number of workers.
    pub rows: Vec<BenchServiceRow>,
}

impl std::fmt::Display for BenchServiceReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "ladder bench-service: {} between random bots through `ladder serve` on {}, {} groups per call, {} cores shared by server, database and workers",
            self.game, self.database, self.batch, self.cores
        )?;
        writeln!(
            f,
            "{:>8} {:>6} {:>9} {:>9} {:>18} {:>20} {:>7} {:>18} {:>16} {:>8} {:>26}",
            "workers",
            "conns",
            "groups/s",
            "games/s",
            "lease p50/p99 ms",
            "in line p50/p99 ms",
            "waited",
            "report p50/p99 ms",
            "server CPU/game",
            "busy",
            "games/worker min/p10/p50/max"
        )?;
        for r in &self.rows {
            let (lo, p10, mid, hi) = r.games_per_worker;
            writeln!(
                f,
                "{:>8} {:>6} {:>9.0} {:>9.0} {:>18} {:>20} {:>6.0}% {:>18} {:>13.0} us {:>7.0}% {:>26}",
                r.workers,
                r.connections,
                r.groups_per_s,
                r.games_per_s,
                format!("{:.2} / {:.2}", r.lease_ms.0, r.lease_ms.1),
                format!("{:.0} / {:.0}", r.lease_queued_ms.0, r.lease_queued_ms.1),
                r.leases_told_to_wait * 100.0,
                format!("{:.2} / {:.2}", r.report_ms.0, r.report_ms.1),
                r.server_cpu_us_per_game,
                r.machine_busy * 100.0,
                format!("{lo} / {p10} / {mid} / {hi}")
            )?;
        }
        write!(
            f,
            "{} games stored in all, {} answered recorded to the workers, through {} server{}; the database holds {:.1} MB ({:.0} bytes a game)",
            self.games_stored,
            self.games_recorded,
            self.servers,
            if self.servers == 1 { "" } else { "s" },
            self.database_bytes as f64 / 1e6,
            self.database_bytes as f64 / self.games_stored.max(1) as f64
        )
    }
}

const ADMIN: &str = "bench-admin-token-not-a-secret";

/// The server process, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(program: &PathBuf, db: &str) -> anyhow::Result<Server> {
    let mut child = Command::new(program)
        .args(["serve", "--db", db, "--listen", "127.0.0.1:0"])
        .env("ASTRAGAL_ADMIN_TOKEN", ADMIN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", program.display()))?;
    let stderr = child.stderr.take().ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(addr) = line.strip_prefix("ladder: gRPC on ") {
                    break addr.trim().to_owned();
                }
            }
            _ => {
                let _ = child.kill();
                anyhow::bail!("the server stopped before it listened (is --db {db} usable?)");
            }
        }
    };
    // Keep reading its stderr so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Ok(Server {
        child,
        url: format!("http://{addr}"),
    })
}

/// User and system CPU seconds of a process so far.
fn process_cpu(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command (which may hold spaces) start after the last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| f.get(i).and_then(|v| v.parse::<f64>().ok()))
        .sum();
    // Linux gives these in USER_HZ, which its ABI fixes at 100.
    ticks / 100.0
}

/// (busy, total) jiffies of the whole machine.
fn machine_cpu() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return (0.0, 0.0);
    };
    let Some(line) = stat.lines().next() else {
        return (0.0, 0.0);
    };
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: f64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0.0) + v.get(4).copied().unwrap_or(0.0);
    (total - idle, total)
}

/// A PostgreSQL URL with another database name.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let (scheme, rest) = base.split_once("://").unwrap_or(("postgres", base));
    let host = rest.split_once('/').map_or(rest, |(h, _)| h);
    match query {
        Some(q) => format!("{scheme}://{host}/{name}?{q}"),
        None => format!("{scheme}://{host}/{name}"),
    }
}

async fn pg_admin(url: &str, sql: &str) -> anyhow::Result<()> {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(())
}

/// The size of the database at `url`, its files checkpointed (SQLite) or as
/// PostgreSQL counts it.
async fn database_bytes(url: &str) -> anyhow::Result<u64> {
    use sqlx::{Connection, Row};
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await?;
    let bytes = if let Some(path) = url.strip_prefix("sqlite:") {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await?;
        std::fs::metadata(path.split('?').next().unwrap_or(path))?.len()
    } else {
        let size: i64 = sqlx::query("SELECT pg_database_size(current_database())")
            .fetch_one(&mut conn)
            .await?
            .try_get(0)?;
        size as u64
    };
    conn.close().await?;
    Ok(bytes)
}

pub(crate) fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    f64::from(sorted[i]) / 1000.0
}

/// What the simulated workers share.
struct Shared {
    stop: AtomicBool,
    measuring: AtomicBool,
    groups: AtomicU64,
    games: AtomicU64,
    lease_us: std::sync::Mutex<Vec<u32>>,
    queued_us: std::sync::Mutex<Vec<u32>>,
    leases: AtomicU64,
    leases_told_to_wait: AtomicU64,
    report_us: std::sync::Mutex<Vec<u32>>,
    /// Games answered `Recorded`, measured or not.
    recorded_games: Arc<AtomicU64>,
    /// Plays at once: one per core, as a worker machine's play threads would.
    plays: tokio::sync::Semaphore,
    failures: AtomicU64,
}

/// Runs until told to stop; hands its client back for the next row, with the
/// games it recorded while the row was measured.
async fn simulated_worker(mut client: Api, batch: usize, shared: Arc<Shared>) -> (Api, u64) {
    let mut mine = 0;
    let none = Sandbox::at(Level::None);
    while !shared.stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        // Only calls sent within the measured time: one sent in the warm-up
        // (when the whole fleet asks at once) is not what the row measures.
        let sent_measuring = shared.measuring.load(Ordering::Relaxed);
        // Every runtime: the lease is measured as the host's own bots pay for
        // it, with no filter by runtime.
        let leased = match client
            .lease_groups(batch as u64, &ladder::submission::all_runtimes())
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("lease failed: {e}");
                shared.failures.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let measuring = sent_measuring && shared.measuring.load(Ordering::Relaxed);
        if measuring {
            shared.leases.fetch_add(1, Ordering::Relaxed);
            if leased.groups.is_empty() {
                if leased.retry_after.is_some() {
                    shared.leases_told_to_wait.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                // Served: the call's time less its wait in line.
                let queued = leased.queued.as_micros() as u64;
                let served = (t.elapsed().as_micros() as u64).saturating_sub(queued);
                if let Ok(mut v) = shared.lease_us.lock() {
                    v.push(served.min(u64::from(u32::MAX)) as u32);
                }
                if let Ok(mut v) = shared.queued_us.lock() {
                    v.push(queued.min(u64::from(u32::MAX)) as u32);
                }
            }
        }
        if leased.groups.is_empty() {
            let wait = leased
                .retry_after
                .unwrap_or_default()
                .clamp(Duration::from_millis(20), Duration::from_secs(5));
            tokio::time::sleep(wait).await;
            continue;
        }
        let Ok(permit) = shared.plays.acquire().await else {
            return (client, mine);
        };
        let none = none.clone();
        let played = tokio::task::spawn_blocking(move || {
            let mut pool = BotPool::reusing();
            leased
                .groups
                .into_iter()
                .map(|lease| {
                    let records = play_lease(&lease, None, &none, &mut pool)?;
                    Ok(GroupReport {
                        lease: lease.lease,
                        group_id: lease.group_id,
                        records,
                        logs: Vec::new(),
                    })
                })
                .collect::<Result<Vec<_>, ladder::worker::WorkerError>>()
        })
        .await;
        drop(permit);
        let reports = match played {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                tracing::warn!("a lease could not be played: {e}");
                shared.failures.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Err(_) => return (client, mine),
        };
        // Every group of a competition has as many games as seats.
        let per_group = reports.first().map_or(0, |r| r.records.len() as u64);
        let t = Instant::now();
        let sent_measuring = shared.measuring.load(Ordering::Relaxed);
        match client.report_groups(&reports).await {
            Ok(outcomes) => {
                let recorded = outcomes.iter().filter(|(_, o)| *o == Taken::Recorded).count() as u64;
                shared
                    .recorded_games
                    .fetch_add(recorded * per_group, Ordering::Relaxed);
                let measuring = shared.measuring.load(Ordering::Relaxed);
                if measuring
                    && sent_measuring
                    && let Ok(mut v) = shared.report_us.lock()
                {
                    v.push(t.elapsed().as_micros() as u32);
                }
                if measuring {
                    shared.groups.fetch_add(recorded, Ordering::Relaxed);
                    shared.games.fetch_add(recorded * per_group, Ordering::Relaxed);
                    mine += recorded * per_group;
                }
            }
            Err(e) => {
                tracing::warn!("report failed: {e}");
                shared.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    (client, mine)
}

/// A store made for one bench run and removed after it: a new SQLite file, or a
/// new database on a PostgreSQL server (the user needs CREATE DATABASE).
pub(crate) struct TempStore {
    /// Its URL.
    pub url: String,
    /// `sqlite` or `postgres`.
    pub kind: &'static str,
    dir: PathBuf,
    admin: Option<(String, String)>,
}

impl TempStore {
    /// A new store as `--db` asks: `sqlite` or a postgres:// server URL.
    pub async fn create(db: &str, tag: &str) -> anyhow::Result<TempStore> {
        let dir = std::env::temp_dir().join(format!("astragal-{tag}-{}", referee::seed::os_seed()));
        if db == "sqlite" {
            std::fs::create_dir_all(&dir)?;
            let url = format!("sqlite:{}", dir.join("bench.db").display());
            Ok(TempStore {
                url,
                kind: "sqlite",
                dir,
                admin: None,
            })
        } else if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            let name = format!("astragal_bench_{:x}", referee::seed::os_seed());
            pg_admin(db, &format!("CREATE DATABASE {name}")).await?;
            Ok(TempStore {
                url: with_database(db, &name),
                kind: "postgres",
                dir,
                admin: Some((db.to_owned(), name)),
            })
        } else {
            anyhow::bail!("--db {db:?}: give `sqlite` or a postgres:// URL");
        }
    }

    /// Removes it.
    pub async fn remove(self) -> anyhow::Result<()> {
        if let Some((admin, name)) = &self.admin {
            pg_admin(admin, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await?;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(())
    }
}

/// Runs the benchmark.
///
/// # Errors
/// The server cannot start, the database cannot be made, or a call fails in set-up.
pub async fn run(cfg: &BenchServiceConfig) -> anyhow::Result<BenchServiceReport> {
    let store = TempStore::create(&cfg.db, "bench-service").await?;
    let result = measure(cfg, &store.url, store.kind).await;
    store.remove().await?;
    result
}

async fn measure(cfg: &BenchServiceConfig, db: &str, database: &str) -> anyhow::Result<BenchServiceReport> {
    anyhow::ensure!(
        cfg.servers == 1 || database == "postgres",
        "--servers {}: several servers share a PostgreSQL database, not SQLite",
        cfg.servers
    );
    // One after another: the first migrates the new database.
    let mut servers = Vec::new();
    for _ in 0..cfg.servers.max(1) {
        servers.push(start_server(&cfg.server_program, db)?);
    }
    let pids: Vec<u32> = servers.iter().map(|s| s.child.id()).collect();
    let servers_cpu = || pids.iter().map(|&p| process_cpu(p)).sum::<f64>();
    let recorded_games = Arc::new(AtomicU64::new(0));
    let mut admin = connect(&servers[0].url, ADMIN, None).await?;
    for k in 0..cfg.bots.max(2) {
        admin
            .register_bot(RegisterBotRequest {
                name: format!("random{k}"),
                game: cfg.game.clone(),
                spec: "builtin:random".into(),
                env: Vec::new(),
            })
            .await?;
    }
    admin
        .open_competition(OpenCompetitionRequest {
            name: "bench".into(),
            game: cfg.game.clone(),
            ..Default::default()
        })
        .await?;
    let most = cfg.workers.iter().copied().max().unwrap_or(1);
    // A server takes 64 calls at once on one connection, and a lease may wait
    // in line for a long poll: past 32 workers a connection, reports would
    // wait for room behind the leases, which no worker machine does.
    anyhow::ensure!(
        most.div_ceil(cfg.connections.max(1)) <= 32,
        "--workers {most} over --connections {}: at most 32 workers share a connection (a server takes 64 calls at once on one)",
        cfg.connections
    );
    let mut channels = Vec::new();
    for k in 0..most.min(cfg.connections.max(1)) {
        channels.push(channel(&servers[k % servers.len()].url, None).await?);
    }
    let mut clients = Vec::with_capacity(most);
    for k in 0..most {
        let token = admin
            .add_worker(AddWorkerRequest {
                name: format!("w{k}"),
            })
            .await?
            .into_inner()
            .token;
        clients.push(Api::on(client_on(channels[k % channels.len()].clone(), &token)?));
    }
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let mut rows = Vec::new();
    for &n in &cfg.workers {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            measuring: AtomicBool::new(false),
            groups: AtomicU64::new(0),
            games: AtomicU64::new(0),
            lease_us: std::sync::Mutex::new(Vec::new()),
            queued_us: std::sync::Mutex::new(Vec::new()),
            leases: AtomicU64::new(0),
            leases_told_to_wait: AtomicU64::new(0),
            report_us: std::sync::Mutex::new(Vec::new()),
            recorded_games: recorded_games.clone(),
            plays: tokio::sync::Semaphore::new(cores),
            failures: AtomicU64::new(0),
        });
        let tasks: Vec<_> = clients
            .drain(..n)
            .map(|c| tokio::spawn(simulated_worker(c, cfg.batch, shared.clone())))
            .collect();
        tokio::time::sleep(Duration::from_secs_f64(cfg.warmup)).await;
        let (cpu0, (busy0, total0)) = (servers_cpu(), machine_cpu());
        shared.measuring.store(true, Ordering::Relaxed);
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs_f64(cfg.seconds)).await;
        shared.measuring.store(false, Ordering::Relaxed);
        let secs = start.elapsed().as_secs_f64();
        let (cpu1, (busy1, total1)) = (servers_cpu(), machine_cpu());
        shared.stop.store(true, Ordering::Relaxed);
        let mut back = Vec::with_capacity(n);
        let mut per_worker = Vec::with_capacity(n);
        for t in tasks {
            let (client, games) = t.await?;
            back.push(client);
            per_worker.push(games);
        }
        per_worker.sort_unstable();
        let at = |p: f64| per_worker[((per_worker.len() - 1) as f64 * p).round() as usize];
        back.append(&mut clients);
        clients = back;
        let sorted = |m: &std::sync::Mutex<Vec<u32>>| {
            let mut v = m.lock().map(|v| v.clone()).unwrap_or_default();
            v.sort_unstable();
            v
        };
        let (lease, queued, report) = (
            sorted(&shared.lease_us),
            sorted(&shared.queued_us),
            sorted(&shared.report_us),
        );
        let games = shared.games.load(Ordering::Relaxed);
        let failures = shared.failures.load(Ordering::Relaxed);
        anyhow::ensure!(
            games > 0,
            "no game was recorded with {n} workers ({failures} calls failed; RUST_LOG=warn shows why)"
        );
        rows.push(BenchServiceRow {
            workers: n,
            groups_per_s: shared.groups.load(Ordering::Relaxed) as f64 / secs,
            games_per_s: games as f64 / secs,
            lease_ms: (percentile(&lease, 0.5), percentile(&lease, 0.99)),
            lease_queued_ms: (percentile(&queued, 0.5), percentile(&queued, 0.99)),
            leases_told_to_wait: shared.leases_told_to_wait.load(Ordering::Relaxed) as f64
                / shared.leases.load(Ordering::Relaxed).max(1) as f64,
            report_ms: (percentile(&report, 0.5), percentile(&report, 0.99)),
            server_cpu_us_per_game: (cpu1 - cpu0) * 1e6 / games as f64,
            machine_busy: if total1 > total0 {
                (busy1 - busy0) / (total1 - total0)
            } else {
                0.0
            },
            connections: n.min(channels.len()),
            games_per_worker: (at(0.0), at(0.1), at(0.5), at(1.0)),
            workers_without_games: per_worker.iter().filter(|&&g| g == 0).count(),
        });
    }
    let games_stored = admin
        .list_competitions(proto::ladder::ListCompetitionsRequest {})
        .await?
        .into_inner()
        .competitions
        .iter()
        .map(|c| c.games)
        .sum();
    drop(servers);
    let database_bytes = database_bytes(db).await?;
    let games_recorded = recorded_games.load(Ordering::Relaxed);
    anyhow::ensure!(
        games_recorded == games_stored,
        "the servers answered recorded for {games_recorded} games and stored {games_stored}"
    );
    Ok(BenchServiceReport {
        database: database.to_owned(),
        game: cfg.game.clone(),
        batch: cfg.batch,
        cores,
        servers: cfg.servers.max(1),
        games_stored,
        games_recorded,
        database_bytes,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_swapped_in_urls() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "b"),
            "postgres://postgres@127.0.0.1:5432/b"
        );
        assert_eq!(with_database("postgres://u@h", "b"), "postgres://u@h/b");
        assert_eq!(
            with_database("postgresql://u@h/x?sslmode=disable", "b"),
            "postgresql://u@h/b?sslmode=disable"
        );
    }

    #[test]
    fn percentiles_are_read_from_sorted_samples() {
        let v: Vec<u32> = (1..=100).map(|x| x * 1000).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
