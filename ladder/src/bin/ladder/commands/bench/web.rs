//! `ladder bench-web`: every public page of a competition of many games, timed.
//!
//! A new store is filled with a competition of simulated results (bots of
//! spread strengths, mirrored pairs, a share of faulted games) and each bot's
//! rating history; the pages are then served on loopback as `ladder serve`
//! serves them and each is asked for again and again over HTTP. The time of a
//! request is its whole round trip on loopback: the server's time and a little
//! more.

use super::service::{TempStore, percentile};
use ladder::app::cache::StandingsCache;
use ladder::store::{BotId, GameId, NewCompetition, NewGame, RatingPoint, SeatFaults, Seeding, Store};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchWebConfig {
    /// `sqlite` or a postgres:// server URL.
    pub db: String,
    /// Games in the competition.
    pub games: u64,
    /// Bots in it.
    pub bots: usize,
    /// Requests per page.
    pub requests: usize,
    /// Seed of the simulated results.
    pub seed: u64,
}

/// One page's times.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PageTiming {
    /// What was asked for.
    pub page: String,
    /// Median request (ms).
    pub p50_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Slowest (ms).
    pub max_ms: f64,
    /// Size of the answer.
    pub bytes: usize,
}

/// What a run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchWebReport {
    /// `sqlite` or `postgres`.
    pub database: String,
    /// Games stored.
    pub games: u64,
    /// Bots.
    pub bots: usize,
    /// Seconds to fill the store.
    pub fill_seconds: f64,
    /// The first page after the server starts waits for the competition's first
    /// fit; every later page reads a fit already made.
    pub first_page_ms: f64,
    /// A refit of the competition's standings from the store, as the server
    /// makes one in the background while games arrive: the slowest of
    /// [`REFITS`] (ms).
    pub refit_max_ms: f64,
    /// Rows the refit read: the tally's shapes and the games of unfinished groups.
    pub refit_rows: usize,
    /// The process's resident memory once the store was filled (MiB).
    pub rss_mib_after_fill: f64,
    /// Its peak while refitting and serving every page, counted from after the
    /// fill (MiB; Linux only, else 0).
    pub peak_rss_mib_serving: f64,
    /// Each page.
    pub pages: Vec<PageTiming>,
}

/// Refits timed.
const REFITS: usize = 5;

/// A line of `/proc/self/status` in KiB, as MiB (0 where there is none).
fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

impl std::fmt::Display for BenchWebReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}: {} games, {} bots (filled in {:.1} s); the first page after start, with the first fit: {:.0} ms",
            self.database, self.games, self.bots, self.fill_seconds, self.first_page_ms
        )?;
        writeln!(
            f,
            "a refit: {:.1} ms at most of {REFITS} ({} rows read); resident memory {:.0} MiB after filling, peak {:.0} MiB while refitting and serving",
            self.refit_max_ms, self.refit_rows, self.rss_mib_after_fill, self.peak_rss_mib_serving
        )?;
        writeln!(
            f,
            "{:<52} {:>9} {:>9} {:>9} {:>9}",
            "page", "p50 ms", "p99 ms", "max ms", "bytes"
        )?;
        for p in &self.pages {
            writeln!(
                f,
                "{:<52} {:>9.1} {:>9.1} {:>9.1} {:>9}",
                p.page, p.p50_ms, p.p99_ms, p.max_ms, p.bytes
            )?;
        }
        Ok(())
    }
}

/// Runs the benchmark.
///
/// # Errors
/// The store cannot be made or filled, or a page does not answer 200.
pub async fn run(cfg: &BenchWebConfig) -> anyhow::Result<BenchWebReport> {
    let temp = TempStore::create(&cfg.db, "bench-web").await?;
    let result = measure(cfg, &temp).await;
    temp.remove().await?;
    result
}

/// One real game's record, for the pages that replay one.
fn real_record() -> anyhow::Result<String> {
    let setup = referee::GameSetup {
        game: "ur".into(),
        options: vec![],
        seed: 1,
        position: None,
        pairing: None,
    };
    let seats: Vec<referee::SeatSetup> = ["builtin:random", "builtin:first"]
        .iter()
        .map(|s| referee::BotSpec::parse(s).map(referee::SeatSetup::new))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    let rec = referee::play_game(
        &setup,
        &seats,
        &referee::Limits::default(),
        &referee::LogPlace::default(),
    )?;
    Ok(serde_json::to_string(&rec)?)
}

/// Games stored per transaction while filling.
const FILL_BATCH: u64 = 1_000;
/// One game in this many keeps a whole record (the rest a stub), so that the
/// store stays small; the pages that replay a game are asked for one of these.
const REAL_RECORD_EVERY: u64 = 100;
/// One game in this many has a timeout fault.
const FAULT_EVERY: u64 = 33;

async fn fill(cfg: &BenchWebConfig, store: &Store) -> anyhow::Result<GameId> {
    let mut bots = Vec::new();
    for i in 0..cfg.bots {
        bots.push(
            store
                .bots()
                .register_bot(&format!("b{i}"), "ur", "builtin:random", &[])
                .await?
                .id,
        );
    }
    let c = store
        .competitions()
        .create_competition(&NewCompetition {
            name: "bench".into(),
            game: "ur".into(),
            options: vec![],
            seats: 2,
            format: ladder::store::CompetitionFormat::Ladder,
            seed: cfg.seed as i64,
            max_games: 0,
            time: referee::TimeControl::MoveTime(Duration::from_millis(100)),
            config: String::new(),
            seeding: Seeding::Mirrored,
        })
        .await?;
    for &b in &bots {
        store.competitions().add_entrant(c.id, b).await?;
    }
    let real = real_record()?;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    // Bot i is 40·i Elo above bot 0.
    let strength = |b: usize| 40.0 * b as f64;
    let mut stored = 0u64;
    while stored < cfg.games {
        let groups = (cfg.games - stored).min(FILL_BATCH).div_ceil(2);
        let pairs: Vec<Vec<BotId>> = (0..groups)
            .map(|_| {
                let a = (rng.next_u64() % cfg.bots as u64) as usize;
                let b = (a + 1 + (rng.next_u64() % (cfg.bots as u64 - 1)) as usize) % cfg.bots;
                vec![bots[a], bots[b]]
            })
            .collect();
        let rows = store.groups().schedule_many(&c, &pairs).await?;
        let mut games = Vec::new();
        for g in rows {
            for rotation in 0..2usize {
                if stored + games.len() as u64 >= cfg.games {
                    break;
                }
                let seated: Vec<BotId> = (0..2).map(|s| g.bots[(s + rotation) % 2]).collect();
                let index = |id: BotId| bots.iter().position(|&b| b == id).unwrap_or(0);
                let p0 = 1.0
                    / (1.0 + 10f64.powf((strength(index(seated[1])) - strength(index(seated[0]))) / 400.0));
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let ranks = if u < p0 { vec![1, 2] } else { vec![2, 1] };
                let n = stored + games.len() as u64;
                let last = n + 1 == cfg.games;
                let faults = if n.is_multiple_of(FAULT_EVERY) {
                    vec![SeatFaults {
                        seat: 1,
                        kind: referee::FaultKind::Timeout,
                        count: 1,
                        detail: "no move within 100 ms (+50 ms margin)".into(),
                        at_move: 12,
                    }]
                } else {
                    vec![]
                };
                games.push(NewGame {
                    logs: Vec::new(),
                    competition_id: c.id,
                    group_id: g.id,
                    rotation: rotation as i64,
                    bots: seated,
                    ranks,
                    termination: if faults.is_empty() {
                        referee::Termination::Normal
                    } else {
                        referee::Termination::Forfeit
                    },
                    record: if n.is_multiple_of(REAL_RECORD_EVERY) || last {
                        real.clone()
                    } else {
                        "{}".into()
                    },
                    faults,
                });
            }
        }
        stored += store.groups().record_games(&games, 2).await?;
    }
    // A history as a long-running ladder keeps it: a point per bot whenever the
    // competition grew by a twentieth. Its values are the final fit's, widened
    // for fewer games: only how many rows there are matters here.
    let st = ladder::local::tournament::standings_of(store, &c, None).await?;
    let mut at = 20i64;
    let mut points = Vec::new();
    while at <= cfg.games as i64 {
        let shrink = (cfg.games as f64 / at as f64).sqrt();
        for (i, &b) in bots.iter().enumerate() {
            let Some(row) = st.rows.iter().find(|r| r.name == format!("b{i}")) else {
                continue;
            };
            points.push(RatingPoint {
                bot_id: b,
                games: at,
                at_ms: store.now_ms(),
                elo: row.elo,
                ci95: row.ci95.is_finite().then_some(row.ci95 * shrink),
            });
        }
        at += (at / 20).max(20);
    }
    store.games().add_rating_points(c.id, &points).await?;
    Ok(store.games().newest_game(c.id).await?)
}

/// A GET on loopback: its status and body length.
async fn get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<(u16, usize)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await?;
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("{path}: no HTTP head in the answer"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("{path}: no status in {head:?}"))?;
    Ok((status, raw.len() - head_end - 4))
}

async fn measure(cfg: &BenchWebConfig, temp: &TempStore) -> anyhow::Result<BenchWebReport> {
    anyhow::ensure!(cfg.bots >= 2, "--bots: at least 2");
    anyhow::ensure!(cfg.games >= 2, "--games: at least 2");
    let store = Store::open(&temp.url).await?;
    let t = Instant::now();
    let newest = fill(cfg, &store).await?;
    let fill_seconds = t.elapsed().as_secs_f64();
    let rss_mib_after_fill = status_mib("VmRSS:");
    // The peak from here on (Linux: 5 resets the high-water mark).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let c = store
        .competitions()
        .competition("bench")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the bench competition is missing"))?;
    let mut refit_max_ms = 0f64;
    for _ in 0..REFITS {
        let t = Instant::now();
        StandingsCache::new(store.clone()).current(&c).await?;
        refit_max_ms = refit_max_ms.max(t.elapsed().as_secs_f64() * 1000.0);
    }
    let tallied = store.shapes().tallied(c.id).await?;
    let refit_rows = tallied.rows_read + tallied.unfinished.len();
    drop(tallied);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = ladder::web::router(store.clone(), Arc::new(StandingsCache::new(store.clone())), None);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let t = Instant::now();
    let (status, _) = get(addr, "/").await?;
    anyhow::ensure!(status == 200, "/ answered {status}");
    let first_page_ms = t.elapsed().as_secs_f64() * 1000.0;
    let bot = format!("b{}", cfg.bots / 2);
    let middle = newest.0 / 2;
    let pages = [
        "/".to_owned(),
        "/api/standings.json".to_owned(),
        "/competitions/bench".to_owned(),
        "/competitions/bench.json".to_owned(),
        "/competitions/bench/games".to_owned(),
        format!("/competitions/bench/games?before={middle}"),
        format!("/competitions/bench/games?bot={bot}"),
        format!("/competitions/bench/games?bot={bot}&before={middle}"),
        format!("/bots/{bot}"),
        format!("/bots/{bot}.json"),
        format!("/games/{newest}"),
        format!("/api/games/{newest}"),
    ];
    let mut out = Vec::new();
    for page in pages {
        let mut us = Vec::with_capacity(cfg.requests);
        let mut bytes = 0;
        for _ in 0..cfg.requests {
            let t = Instant::now();
            let (status, len) = get(addr, &page).await?;
            us.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
            anyhow::ensure!(status == 200, "{page} answered {status}");
            bytes = len;
        }
        us.sort_unstable();
        out.push(PageTiming {
            page,
            p50_ms: percentile(&us, 0.5),
            p99_ms: percentile(&us, 0.99),
            max_ms: f64::from(us.last().copied().unwrap_or(0)) / 1000.0,
            bytes,
        });
        // Let the background refit of a stale fit (if any) not fall into the next row.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.abort();
    store.games().close().await;
    Ok(BenchWebReport {
        database: temp.kind.to_owned(),
        games: cfg.games,
        bots: cfg.bots,
        fill_seconds,
        first_page_ms,
        refit_max_ms,
        refit_rows,
        rss_mib_after_fill,
        peak_rss_mib_serving: status_mib("VmHWM:"),
        pages: out,
    })
}
