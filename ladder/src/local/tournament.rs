//! Local tournaments: round-robin or gauntlet schedules of mirrored groups, played on
//! this machine with the referee library and recorded in a store, resumable after a
//! kill with no game lost or counted twice.

use crate::store::{
    BotId, CompetitionId, CompetitionRow, GroupId, NewCompetition, NewGame, SeatFaults, Seeding, Store,
    StoreError,
};
use rating::standings::Standings;
use referee::clock::{Limits, TimeControl};
use referee::game::{GameSetup, LogPlace, SeatSetup};
use referee::record::{GameRecord, Pairing};
use referee::runner::{Finished, GameJob, RunOptions, run_games_then};
use referee::sandbox::Sandbox;
use referee::seating;
use referee::spec::BotSpec;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::PathBuf;

/// How groups are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Every set of `seats` bots meets in turn.
    RoundRobin,
    /// The first bot meets every set of `seats - 1` others.
    Gauntlet,
}

impl From<Format> for crate::store::CompetitionFormat {
    fn from(format: Format) -> Self {
        match format {
            Format::RoundRobin => Self::RoundRobin,
            Format::Gauntlet => Self::Gauntlet,
        }
    }
}

/// A tournament to run.
#[derive(Debug, Clone)]
pub struct TournamentConfig {
    /// Competition name in the store.
    pub name: String,
    /// Game id.
    pub game: String,
    /// Game options.
    pub options: Vec<String>,
    /// Seats per game; `None` for the game's smallest.
    pub seats: Option<usize>,
    /// Entrants: name and how to run it.
    pub bots: Vec<(String, BotSpec)>,
    /// Group drawing.
    pub format: Format,
    /// Games wanted in all (rounded up to whole groups).
    pub games: u64,
    /// Games played at once.
    pub concurrency: usize,
    /// Seed of group 0.
    /// The run's seed (`None`: the stored tournament's when resuming, else 64 bits
    /// from the operating system); group g plays `engine::group_seed(seed, g)`.
    pub seed: Option<u64>,
    /// Time control.
    pub time: TimeControl,
    /// Every game of a group with its own seed rather than the group's dice
    /// mirrored (groups with a gRPC bot are dealt so whatever this says).
    pub independent_seeds: bool,
    /// Bots' stderr logs here.
    pub log_dir: Option<PathBuf>,
    /// Start every bot process anew for each game (else each thread keeps the
    /// processes that end a game cleanly, see [`BotPool`]). Not part of what makes
    /// a tournament the same one when it is resumed.
    pub fresh_bots: bool,
    /// How bot processes are contained (not part of what makes a tournament the
    /// same one either).
    pub sandbox: Sandbox,
    /// The bot processes are the user's own programs, so their groups may be
    /// mirrored on this one machine even isolated (`--trusted-bots`); at
    /// `--sandbox none` they are taken as trusted anyway.
    pub trusted_bots: bool,
    /// Set (by Ctrl-C, say) to start no new game: the games under way finish and
    /// are recorded, and the tournament resumes from there when run again.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct TournamentReport {
    /// Games found already recorded when it started.
    pub resumed: u64,
    /// Games played and recorded by this run.
    pub played: u64,
    /// Decisions in those games.
    pub decisions: u64,
    /// Seconds spent playing and recording.
    pub seconds: f64,
    /// Standings over every recorded game.
    pub standings: Standings,
    /// The seed it played from (give it as `--seed` to play it again).
    pub seed: u64,
    /// Games of this run in which a bot could not start or shake hands.
    pub setup_faults: u64,
    /// Games the tournament holds in all, recorded or not.
    pub total: u64,
}

/// A tournament that cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum TournamentError {
    /// Bad settings.
    #[error("{0}")]
    Setup(String),
    /// The store holds a different tournament under this name.
    #[error(
        "the store already holds tournament {name:?} with other settings ({what}); \
         run it with the same settings to resume, or use another --name or --db"
    )]
    Mismatch {
        /// The name.
        name: String,
        /// What differs.
        what: String,
    },
    /// The store failed; every game recorded before stays.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The game refused a setup (its options or seat count).
    #[error(transparent)]
    Game(#[from] engine::SetupError),
    /// The results cannot be fit (a game naming a bot of no entrant, an
    /// anchor that is none).
    #[error(transparent)]
    Standings(#[from] rating::standings::StandingsError),
}

/// The bot index sets each group draws from, in order.
pub fn pairings(format: Format, bots: usize, seats: usize) -> Vec<Vec<usize>> {
    fn combos(from: &[usize], k: usize, out: &mut Vec<Vec<usize>>, cur: &mut Vec<usize>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for (i, &x) in from.iter().enumerate() {
            cur.push(x);
            combos(&from[i + 1..], k, out, cur);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    match format {
        Format::RoundRobin => combos(&(0..bots).collect::<Vec<_>>(), seats, &mut out, &mut Vec::new()),
        Format::Gauntlet => {
            let mut cur = vec![0];
            combos(&(1..bots).collect::<Vec<_>>(), seats, &mut out, &mut cur);
        }
    }
    out
}

/// The bots of group `g`, in rotation 0's seat order. Rotating the seats gives every
/// bot every seat, but with 3+ seats keeps who sits after whom: in a game where the
/// next player takes what you leave (Utara), that alone decides matches. So every
/// other pass through the sets seats them in reverse order.
pub fn seating(sets: &[Vec<usize>], g: usize) -> Vec<usize> {
    let mut set = sets[g % sets.len()].clone();
    if (g / sets.len()) % 2 == 1 {
        set.reverse();
    }
    set
}

/// Settings that must match to resume: everything but the number of games (a run
/// with more games extends the tournament).
fn fingerprint(cfg: &TournamentConfig, seed: u64, options: &[String], seats: usize) -> String {
    let mut settings = serde_json::json!({
        "game": cfg.game,
        "options": options,
        "seats": seats,
        "format": cfg.format,
        "bots": cfg.bots.iter().map(|(n, s)| [n.clone(), s.to_string()]).collect::<Vec<_>>(),
        "seed": seed,
        "time": cfg.time,
    });
    // Only when set, so that tournaments stored before it existed still resume.
    if cfg.independent_seeds {
        settings["seeding"] = Seeding::Independent.as_str().into();
    }
    settings.to_string()
}

fn describe_difference(stored: &str, wanted: &str) -> String {
    let (Ok(a), Ok(b)) = (
        serde_json::from_str::<serde_json::Value>(stored),
        serde_json::from_str::<serde_json::Value>(wanted),
    ) else {
        return "unreadable settings".into();
    };
    let mut what = Vec::new();
    if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
        for (k, va) in a {
            if b.get(k) != Some(va) {
                what.push(format!(
                    "{k}: stored {va}, given {}",
                    b.get(k).unwrap_or(&serde_json::Value::Null)
                ));
            }
        }
    }
    what.join("; ")
}

/// Runs (or resumes) a tournament: games on `cfg.concurrency` threads, the store
/// driven through `rt` from the calling thread (which must not be inside `rt`).
/// `progress(done, total)` is called as games are recorded; `total` counts the whole
/// tournament, earlier runs included.
///
/// # Errors
/// Settings the game refuses, a store holding another tournament of that name, or a
/// store failure (games recorded before it stay recorded).
pub fn run(
    rt: &tokio::runtime::Runtime,
    store: &Store,
    cfg: &TournamentConfig,
    mut progress: impl FnMut(u64, u64),
) -> Result<TournamentReport, TournamentError> {
    let (seats, options) = checked_setup(cfg)?;
    let comp = open_or_resume(rt, store, cfg, seats, options)?;
    // The stored seed: a resumed run's fingerprint names the same one.
    let seed = comp.seed as u64;
    let bot_ids = enter_and_schedule(rt, store, cfg, &comp, seats)?;

    // What is left: every rotation of every scheduled group not yet stored.
    let stored: HashSet<(GroupId, i64)> = rt
        .block_on(store.games().stored_rotations(comp.id))?
        .into_iter()
        .collect();
    let all_groups = rt.block_on(store.groups().of_competition(comp.id))?;
    let total = all_groups.len() as u64 * seats as u64;
    let resumed = stored.len() as u64;
    let jobs: Vec<(crate::store::GroupRow, usize)> = all_groups
        .iter()
        .flat_map(|g| (0..seats).map(move |r| (g.clone(), r)))
        .filter(|(g, r)| !stored.contains(&(g.id, *r as i64)))
        .collect();
    let specs: HashMap<BotId, (String, BotSpec)> = bot_ids
        .iter()
        .zip(&cfg.bots)
        .map(|(&id, b)| (id, b.clone()))
        .collect();
    let spec_texts: HashMap<BotId, String> = specs
        .iter()
        .map(|(&id, (_, spec))| (id, spec.to_string()))
        .collect();
    if let Some(dir) = &cfg.log_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| TournamentError::Setup(format!("{}: {e}", dir.display())))?;
    }
    let limits = Limits {
        sandbox: cfg.sandbox.clone(),
        tc: cfg.time,
        ..Limits::default()
    };
    let start = std::time::Instant::now();
    let mut played = 0u64;
    let mut decisions = 0u64;
    let mut done = resumed;
    let mut setup_faults = 0;
    let mut failure: Option<TournamentError> = None;
    let processes = crate::dealing::processes_of(&cfg.sandbox, cfg.trusted_bots);
    let job = |k: u64| -> Option<GameJob<(GroupId, usize, Vec<BotId>)>> {
        if cfg
            .stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        {
            return None;
        }
        let (group, rotation) = jobs.get(k as usize)?;
        Some(game_job(
            &comp,
            group,
            *rotation,
            &specs,
            &spec_texts,
            &cfg.log_dir,
            processes,
        ))
    };
    let options = RunOptions {
        stop: cfg.stop.clone(),
        threads: cfg.concurrency,
        keep_bots: !cfg.fresh_bots,
        // One transaction per batch keeps SQLite far above the games' own rate.
        batch: 512,
    };
    // Each record is made ready for the store on its game's thread.
    let then = |Finished {
                    tag: (group_id, rotation, seat_bots),
                    result,
                }: Finished<(GroupId, usize, Vec<BotId>)>| {
        result.map(|rec| {
            let setup_fault = rec.faults.iter().any(|f| f.is_setup());
            let decisions = rec.moves.len() as u64;
            (
                new_game(comp.id, group_id, rotation, seat_bots, &rec),
                decisions,
                setup_fault,
            )
        })
    };
    run_games_then(options, &limits, job, then, |batch| {
        let mut games = Vec::with_capacity(batch.len());
        for result in batch {
            match result {
                Ok((game, d, setup_fault)) => {
                    decisions += d;
                    setup_faults += u64::from(setup_fault);
                    games.push(game);
                }
                Err(e) => {
                    failure.get_or_insert(TournamentError::Game(e));
                }
            }
        }
        match rt.block_on(store.groups().record_games(&games, seats as i64)) {
            Ok(_) => {
                played += games.len() as u64;
                done += games.len() as u64;
                progress(done, total);
            }
            Err(e) => {
                failure.get_or_insert(e.into());
            }
        }
        if failure.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let seconds = start.elapsed().as_secs_f64();
    let standings = rt.block_on(standings_of(store, &comp, None))?;
    Ok(TournamentReport {
        resumed,
        played,
        decisions,
        seconds,
        standings,
        seed,
        setup_faults,
        total,
    })
}

/// What [`run_games_then`] plays of one rotation of a group, tagged with the
/// group, the rotation and who sat where.
fn game_job(
    comp: &CompetitionRow,
    group: &crate::store::GroupRow,
    rotation: usize,
    specs: &HashMap<BotId, (String, BotSpec)>,
    spec_texts: &HashMap<BotId, String>,
    log_dir: &Option<PathBuf>,
    processes: crate::dealing::Processes,
) -> GameJob<(GroupId, usize, Vec<BotId>)> {
    let seat_bots = seating::seated(&group.bots, rotation);
    let seeding = Seeding::of_group(
        comp.seeding,
        group.bots.iter().map(|id| spec_texts[id].as_str()),
        processes,
    );
    GameJob {
        setup: GameSetup {
            game: comp.game.clone(),
            options: comp.options.clone(),
            seed: seeding.game_seed(group.seed as u64, rotation),
            position: None,
            pairing: Some(Pairing {
                group: group.group_no as u64,
                rotation,
                mirrored: seeding == Seeding::Mirrored,
            }),
        },
        seats: seat_bots
            .iter()
            .map(|id| SeatSetup {
                // A tournament's store may be served: its records name bots,
                // never their commands.
                shown_as: Some(specs[id].0.clone()),
                ..SeatSetup::new(specs[id].1.clone())
            })
            .collect(),
        logs: LogPlace {
            dir: log_dir.clone(),
            tag: format!("{}-g{}r{rotation}-", comp.name, group.group_no),
            names: seat_bots.iter().map(|id| specs[id].0.clone()).collect(),
            author_tail: 0,
        },
        tag: (group.id, rotation, seat_bots),
    }
}

/// The game's seats and options, once the game, its options and the bots are
/// known to fit.
fn checked_setup(cfg: &TournamentConfig) -> Result<(usize, Vec<String>), TournamentError> {
    let info = engine::game_info(&cfg.game).map_err(|e| TournamentError::Setup(e.to_string()))?;
    let seats = cfg.seats.unwrap_or(*info.seats.start());
    let game = engine::new_game(&cfg.game, &cfg.options, Some(seats), 0)
        .map_err(|e| TournamentError::Setup(e.to_string()))?;
    let options = game.options().to_vec();
    if cfg.bots.len() < seats {
        return Err(TournamentError::Setup(format!(
            "{} bots for {seats}-seat games: give at least {seats} --bot",
            cfg.bots.len()
        )));
    }
    let mut names = HashSet::new();
    for (name, _) in &cfg.bots {
        if !names.insert(name) {
            return Err(TournamentError::Setup(format!(
                "two bots are named {name:?}; name them NAME=SPEC"
            )));
        }
    }
    Ok((seats, options))
}

/// The competition `cfg` names: stored now, or the stored one if its settings
/// are the same (a run resumed), else an error naming what differs.
fn open_or_resume(
    rt: &tokio::runtime::Runtime,
    store: &Store,
    cfg: &TournamentConfig,
    seats: usize,
    options: Vec<String>,
) -> Result<CompetitionRow, TournamentError> {
    let stored = rt.block_on(store.competitions().competition(&cfg.name))?;
    let seed = cfg
        .seed
        .or(stored.as_ref().map(|c| c.seed as u64))
        .unwrap_or_else(referee::seed::os_seed);
    let config = fingerprint(cfg, seed, &options, seats);
    match stored {
        Some(c) if c.config != config => Err(TournamentError::Mismatch {
            name: cfg.name.clone(),
            what: describe_difference(&c.config, &config),
        }),
        Some(c) => Ok(c),
        None => Ok(
            rt.block_on(store.competitions().create_competition(&NewCompetition {
                name: cfg.name.clone(),
                game: cfg.game.clone(),
                options,
                seats: seats as i64,
                format: cfg.format.into(),
                seed: seed as i64,
                max_games: cfg.games as i64,
                time: cfg.time,
                config,
                seeding: if cfg.independent_seeds {
                    Seeding::Independent
                } else {
                    Seeding::Mirrored
                },
            }))?,
        ),
    }
}

/// Registers the bots, enters them and schedules every group (what is stored
/// already stays); the bots' keys, in `cfg.bots`' order.
fn enter_and_schedule(
    rt: &tokio::runtime::Runtime,
    store: &Store,
    cfg: &TournamentConfig,
    comp: &CompetitionRow,
    seats: usize,
) -> Result<Vec<BotId>, TournamentError> {
    let mut bot_ids = Vec::new();
    for (name, spec) in &cfg.bots {
        let bot = rt.block_on(store.bots().register_bot(name, &cfg.game, &spec.to_string(), &[]))?;
        rt.block_on(store.competitions().add_entrant(comp.id, bot.id))?;
        bot_ids.push(bot.id);
    }
    let sets = pairings(cfg.format, cfg.bots.len(), seats);
    let groups = cfg.games.div_ceil(seats as u64).max(1);
    let plan: Vec<(i64, Vec<BotId>)> = (0..groups)
        .map(|g| {
            (
                g as i64,
                seating(&sets, g as usize).iter().map(|&i| bot_ids[i]).collect(),
            )
        })
        .collect();
    rt.block_on(store.groups().schedule_groups(comp, &plan))?;
    Ok(bot_ids)
}

/// A record as the store keeps it.
pub fn new_game(
    competition_id: CompetitionId,
    group_id: GroupId,
    rotation: usize,
    bots: Vec<BotId>,
    rec: &GameRecord,
) -> NewGame {
    NewGame {
        competition_id,
        group_id,
        rotation: rotation as i64,
        bots,
        ranks: rec.outcome.ranks.iter().map(|&r| u32::from(r)).collect(),
        termination: rec.termination,
        record: serde_json::to_string(rec).unwrap_or_default(),
        faults: seat_faults(rec),
        logs: Vec::new(),
    }
}

/// Longest fault detail kept for the pages (the record keeps all of it).
const FAULT_DETAIL_CHARS: usize = 300;

/// A record's faults by seat and kind: a count, and the first one's detail.
pub fn seat_faults(rec: &GameRecord) -> Vec<SeatFaults> {
    let mut out: Vec<SeatFaults> = Vec::new();
    for f in &rec.faults {
        match out.iter_mut().find(|s| s.seat == f.seat && s.kind == f.kind) {
            Some(s) => s.count += 1,
            None => out.push(SeatFaults {
                seat: f.seat,
                kind: f.kind,
                count: 1,
                detail: f.detail.chars().take(FAULT_DETAIL_CHARS).collect(),
                at_move: f.at_move,
            }),
        }
    }
    out
}

/// Standings of a competition from its stored results.
///
/// # Errors
/// The store, or a result the fit refuses.
pub async fn standings_of(
    store: &Store,
    comp: &CompetitionRow,
    anchor: Option<(&str, f64)>,
) -> Result<Standings, TournamentError> {
    let bots: Vec<(i64, String)> = store
        .competitions()
        .entrants(comp.id)
        .await?
        .into_iter()
        .map(|b| (b.id.0, b.name))
        .collect();
    // Finished groups by shape and the games in flight, as the server refits.
    let tallied = store.shapes().tallied(comp.id).await?;
    Ok(tallied.standings(&bots, comp.seats as usize, anchor)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_and_gauntlet_draw_every_set() {
        assert_eq!(
            pairings(Format::RoundRobin, 3, 2),
            vec![vec![0, 1], vec![0, 2], vec![1, 2]]
        );
        assert_eq!(pairings(Format::Gauntlet, 3, 2), vec![vec![0, 1], vec![0, 2]]);
        assert_eq!(pairings(Format::RoundRobin, 4, 3).len(), 4);
        assert_eq!(
            pairings(Format::Gauntlet, 4, 3),
            vec![vec![0, 1, 2], vec![0, 1, 3], vec![0, 2, 3]]
        );
    }

    #[test]
    fn every_other_pass_reverses_the_seating() {
        let sets = pairings(Format::RoundRobin, 3, 3);
        assert_eq!(seating(&sets, 0), vec![0, 1, 2]);
        assert_eq!(seating(&sets, 1), vec![2, 1, 0]);
        // Over two groups, each bot sits right after each other bot equally often.
        let mut follows = HashMap::new();
        for g in 0..2 {
            let s = seating(&sets, g);
            for r in 0..3 {
                let order: Vec<usize> = (0..3).map(|k| s[(k + r) % 3]).collect();
                for k in 0..3 {
                    *follows.entry((order[k], order[(k + 1) % 3])).or_insert(0) += 1;
                }
            }
        }
        assert_eq!(follows.len(), 6);
        assert!(follows.values().all(|&n| n == 3), "{follows:?}");
    }
}
