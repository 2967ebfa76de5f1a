//! Playing leased groups: seats set up, rotations in waves, and the
//! long-lived thread that keeps bots between batches.

use super::*;

/// Plays every rotation of a leased group with the bots of `pool`: [`play_leases`]
/// of one lease.
///
/// # Errors
/// A lease the referee cannot set up, or this machine failing to start a bot.
pub fn play_lease(
    lease: &LeasedGroup,
    log_dir: Option<&PathBuf>,
    sandbox: &Sandbox,
    pool: &mut BotPool,
) -> Result<Vec<String>, WorkerError> {
    let mut all = play_leases(std::slice::from_ref(lease), log_dir, sandbox, pool)?;
    Ok(all.pop().unwrap_or_default())
}

/// One leased group, ready to play.
pub(super) struct Leased<'a> {
    pub(super) lease: &'a LeasedGroup,
    pub(super) limits: Limits,
    /// Its entrants in the order of rotation 0.
    pub(super) wanted: Vec<SeatSetup>,
    pub(super) played: PlayedGroup,
}

/// What a leased group's games gave: its JSON records, one per rotation, and
/// what only the seats' authors may read.
#[derive(Debug, Clone, Default)]
pub struct PlayedGroup {
    /// One JSON record per rotation.
    pub records: Vec<String>,
    /// The seats' private logs (none for a seat with nothing to say).
    pub logs: Vec<ReportedSeatLog>,
}

/// Plays every rotation of several leased groups in waves, with the bots of `pool`:
/// rotation 0 of every group, then rotation 1 of every group, and so on. Between
/// two waves every process has exited (so no process of a bot that saw one
/// rotation's dice is alive in another rotation of that group, to play it or to
/// signal to the process that does); the last wave's processes are kept for the
/// next leases where the same bots play. So a batch of leases starts each bot
/// about once per rotation, not once per group. Returns each lease's JSON records,
/// in the leases' order.
///
/// # Errors
/// A lease the referee cannot set up, or this machine failing to start a bot (then
/// nothing of the batch is reported: its leases run out, and other workers play
/// the groups with new seeds).
pub fn play_leases(
    leases: &[LeasedGroup],
    log_dir: Option<&PathBuf>,
    sandbox: &Sandbox,
    pool: &mut BotPool,
) -> Result<Vec<Vec<String>>, WorkerError> {
    let played = play_leases_in(leases, &HashMap::new(), log_dir, sandbox, pool)?;
    Ok(played.into_iter().map(|p| p.records).collect())
}

/// [`play_leases`], with uploaded bots' folders: `homes` maps an entrant's
/// artifact to the folder it was unpacked in, where its command runs. An
/// entrant whose artifact is not there is never run (its command means nothing
/// outside its folder).
///
/// # Errors
/// As [`play_leases`], and an uploaded bot without its folder.
pub fn play_leases_in(
    leases: &[LeasedGroup],
    homes: &HashMap<String, PathBuf>,
    log_dir: Option<&PathBuf>,
    sandbox: &Sandbox,
    pool: &mut BotPool,
) -> Result<Vec<PlayedGroup>, WorkerError> {
    let base = Limits {
        sandbox: sandbox.clone(),
        ..Limits::default()
    };
    play_leases_limited(leases, homes, log_dir, &base, pool)
}

/// [`play_leases_in`] with the worker's own limits (its sandbox, the authority
/// that `grpcs://` bots' certificates chain to); each lease sets the time.
///
/// # Errors
/// As [`play_leases_in`].
pub fn play_leases_limited(
    leases: &[LeasedGroup],
    homes: &HashMap<String, PathBuf>,
    log_dir: Option<&PathBuf>,
    base: &Limits,
    pool: &mut BotPool,
) -> Result<Vec<PlayedGroup>, WorkerError> {
    let mut groups = ready(leases, homes, base)?;
    pool.retain(|s| groups.iter().any(|g| g.wanted.contains(s)));
    let waves = groups.iter().map(|g| g.wanted.len()).max().unwrap_or(0);
    for rotation in 0..waves {
        play_wave(&mut groups, rotation, log_dir, pool)?;
    }
    Ok(groups.into_iter().map(|g| g.played).collect())
}

/// The leases' groups, their seats set up, nothing played yet.
pub(super) fn ready<'a>(
    leases: &'a [LeasedGroup],
    homes: &HashMap<String, PathBuf>,
    base: &Limits,
) -> Result<Vec<Leased<'a>>, WorkerError> {
    let mut groups = Vec::with_capacity(leases.len());
    for lease in leases {
        let limits = Limits {
            tc: lease.time,
            ..base.clone()
        };
        let wanted = lease
            .entrants
            .iter()
            .map(|e| seat_of(e, homes))
            .collect::<Result<Vec<_>, WorkerError>>()?;
        groups.push(Leased {
            lease,
            limits,
            played: PlayedGroup {
                records: Vec::with_capacity(wanted.len()),
                logs: Vec::new(),
            },
            wanted,
        });
    }
    Ok(groups)
}

/// How an entrant of a leased group is seated: an uploaded bot from its
/// folder in `homes` (by its artifact), read-only; a remote or the host's own
/// bot by its spec.
///
/// # Errors
/// A spec the referee cannot read, or an uploaded bot without its folder.
fn seat_of(e: &LeasedEntrant, homes: &HashMap<String, PathBuf>) -> Result<SeatSetup, WorkerError> {
    let (spec, home) = match &e.artifact_sha256 {
        Some(sha) if !served_remotely(e) => {
            let dir = homes
                .get(sha)
                .ok_or_else(|| WorkerError::Artifact(format!("{}: its folder {sha} is not here", e.bot)))?;
            // An uploaded bot is always a program in its folder.
            let home = Home {
                dir: dir.clone(),
                writable: false,
            };
            (
                BotSpec::Process {
                    command: e.spec.clone(),
                },
                Some(home),
            )
        }
        _ => (BotSpec::parse(&e.spec).map_err(WorkerError::Lease)?, None),
    };
    Ok(SeatSetup {
        env: e.env.clone(),
        // The record names the bot, never its command or environment.
        shown_as: Some(e.bot.clone()),
        home,
        artifact: e.artifact_sha256.clone(),
        dial: dial_for(e),
        ..SeatSetup::new(spec)
    })
}

/// Plays `rotation` of every group that has it; whether a seat faulted in any
/// of its games. A wave past the first quits the kept bots first where a group
/// of it is mirrored and seats a process (a season's finals, dealt as their
/// terms say), so that no process of this task lives from one rotation of such
/// a group into the next; a group dealt a seed per rotation keeps its bots.
pub(super) fn play_wave(
    groups: &mut [Leased<'_>],
    rotation: usize,
    log_dir: Option<&PathBuf>,
    pool: &mut BotPool,
) -> Result<bool, WorkerError> {
    let playing = || groups.iter().filter(|g| rotation < g.wanted.len());
    if rotation > 0
        && playing().any(|g| {
            g.lease.seeding == crate::store::Seeding::Mirrored && g.wanted.iter().any(SeatSetup::is_process)
        })
    {
        pool.quit_all();
    }
    let mut faulted = false;
    for g in groups.iter_mut().filter(|g| rotation < g.wanted.len()) {
        let played = play_rotation(g, rotation, log_dir, pool)?;
        faulted |= played.faulted;
        g.played.records.push(played.record);
        g.played.logs.extend(played.logs);
    }
    Ok(faulted)
}

/// What one rotation of a leased group gave.
pub(super) struct RotationPlayed {
    /// Its record, as JSON.
    pub(super) record: String,
    /// The seats' private logs.
    pub(super) logs: Vec<ReportedSeatLog>,
    /// Whether a seat faulted.
    pub(super) faulted: bool,
}

/// Plays one rotation of a leased group.
pub(super) fn play_rotation(
    g: &Leased<'_>,
    rotation: usize,
    log_dir: Option<&PathBuf>,
    pool: &mut BotPool,
) -> Result<RotationPlayed, WorkerError> {
    let lease = g.lease;
    let setup = GameSetup {
        game: lease.game.clone(),
        options: lease.options.clone(),
        seed: lease.seeding.game_seed(lease.seed, rotation),
        position: None,
        pairing: Some(Pairing {
            group: lease.group_no,
            rotation,
            mirrored: lease.seeding == crate::store::Seeding::Mirrored,
        }),
    };
    let seats: Vec<SeatSetup> = seating::seated(&g.wanted, rotation);
    let logs = LogPlace {
        dir: log_dir.cloned(),
        tag: format!("{}-g{}r{rotation}-", lease.competition, lease.group_no),
        names: seating::seated(&lease.entrants, rotation)
            .into_iter()
            .map(|e| e.bot)
            .collect(),
        author_tail: lease.author_log_bytes as usize,
    };
    let (rec, private) = referee::play_game_logged(&setup, &seats, &g.limits, &logs, pool)?;
    // This machine failed, not the bot: nothing of the group is reported (its
    // lease runs out, and another worker plays it with a new seed).
    if let Some(f) = rec
        .faults
        .iter()
        .find(|f| referee::fault::is_host_failure(f.kind, &f.detail))
    {
        return Err(WorkerError::Host(f.detail.clone()));
    }
    count_played(&rec, pool);
    let record = serde_json::to_string(&rec).map_err(|e| WorkerError::Lease(e.to_string()))?;
    Ok(RotationPlayed {
        record,
        logs: seat_logs(private, rotation),
        faulted: !rec.faults.is_empty(),
    })
}

/// The seats' private logs of one rotation, as reported (none for a seat with
/// nothing to say).
fn seat_logs(private: Vec<referee::record::SeatPrivateLog>, rotation: usize) -> Vec<ReportedSeatLog> {
    private
        .into_iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(seat, p)| ReportedSeatLog {
            rotation: rotation as u32,
            seat: seat as u32,
            stderr: p.stderr,
            stderr_dropped: p.stderr_dropped,
            faults: p.faults,
        })
        .collect()
}

/// A game played, in the worker's metrics: its faults by kind, and how long
/// its bots' sandboxes took to start.
fn count_played(rec: &referee::record::GameRecord, pool: &mut BotPool) {
    let metrics = crate::metrics::worker();
    metrics.games.inc();
    for f in &rec.faults {
        crate::metrics::WorkerMetrics::count(&metrics.faults, f.kind.as_str(), 1);
    }
    for took in pool.started() {
        metrics.sandbox_start_seconds.observe(took.as_secs_f64());
    }
}

/// Whether an uploaded entrant runs on its author's machine (`grpcs://`): its
/// files are only its manifest, never fetched or run here.
pub(super) fn served_remotely(e: &LeasedEntrant) -> bool {
    matches!(BotSpec::parse(&e.spec), Ok(BotSpec::Grpc { .. }))
}

/// Where an entrant's server may be dialled: an uploaded bot's address is a
/// stranger's word, so only a public one (or one in `--remote-allow`); the
/// host's own gRPC bots (`register-bot`, no upload) wherever the host said.
pub(super) fn dial_for(e: &LeasedEntrant) -> Dial {
    if e.artifact_sha256.is_none() {
        Dial::Anywhere
    } else {
        Dial::PublicOnly
    }
}

/// The play thread's next job, `None` once its task is gone. Meanwhile kept
/// bots wait, frozen, for the next batch, but not past [`KEPT_BOTS_WAIT`].
fn next_job(inbox: &std::sync::mpsc::Receiver<PlayJob>, pool: &mut BotPool) -> Option<PlayJob> {
    use std::sync::mpsc::RecvTimeoutError;
    if pool.idle() > 0 {
        match inbox.recv_timeout(KEPT_BOTS_WAIT) {
            Ok(job) => return Some(job),
            Err(RecvTimeoutError::Timeout) => pool.quit_all(),
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
    inbox.recv().ok()
}

/// One rotation of some leased groups to play, and where their records go; or
/// word that no batch comes soon.
pub(super) enum PlayJob {
    Wave {
        leases: Vec<LeasedGroup>,
        homes: HashMap<String, PathBuf>,
        rotation: usize,
        reply: tokio::sync::oneshot::Sender<Result<WavePlayed, WorkerError>>,
    },
    Rest,
}

/// What one [`PlayJob::Wave`] gave.
pub(super) struct WavePlayed {
    /// Per lease, in order: what this rotation of its group gave (nothing for a
    /// group with fewer rotations).
    pub(super) groups: Vec<PlayedGroup>,
    /// Whether a seat faulted in one of its games.
    pub(super) faulted: bool,
}

/// How long kept bots wait for the next batch before they are quit anyway: they
/// wait frozen (no CPU), but hold their memory and a sandbox's user id.
pub(super) const KEPT_BOTS_WAIT: Duration = Duration::from_secs(5);

/// The thread that plays one task's batches of leases ([`play_leases`]), and keeps
/// their bots from batch to batch. One long-lived thread rather than the runtime's
/// blocking pool: a bot process dies with the thread that started it (its parent
/// death signal), and a blocking-pool thread ends when it idles.
pub(super) struct PlayThread {
    pub(super) leases: std::sync::mpsc::Sender<PlayJob>,
}

impl PlayThread {
    /// The play thread of task `k`, with the worker's limits (its sandbox, the
    /// authority `grpcs://` bots' certificates chain to, where they may be
    /// dialled).
    pub(super) fn for_task(k: usize, cfg: &WorkerConfig) -> Result<PlayThread, WorkerError> {
        let base = Limits {
            sandbox: cfg.sandbox.clone(),
            grpc_ca: cfg.uploads.grpc_ca.clone(),
            remote_allow: cfg.uploads.remote_allow.clone(),
            ..Limits::default()
        };
        PlayThread::start(&format!("{}/{k}", cfg.name), cfg.log_dir.clone(), base)
    }

    pub(super) fn start(
        name: &str,
        log_dir: Option<PathBuf>,
        base: Limits,
    ) -> Result<PlayThread, WorkerError> {
        let (leases, inbox) = std::sync::mpsc::channel::<PlayJob>();
        std::thread::Builder::new()
            .name(format!("play-{name}"))
            .spawn(move || {
                let mut pool = BotPool::reusing();
                // Ends when the task drops its sender; the pool's bots go with it.
                while let Some(job) = next_job(&inbox, &mut pool) {
                    match job {
                        PlayJob::Wave {
                            leases,
                            homes,
                            rotation,
                            reply,
                        } => {
                            let played = ready(&leases, &homes, &base).and_then(|mut groups| {
                                if rotation == 0 {
                                    pool.retain(|s| groups.iter().any(|g| g.wanted.contains(s)));
                                }
                                let faulted = play_wave(&mut groups, rotation, log_dir.as_ref(), &mut pool)?;
                                Ok(WavePlayed {
                                    groups: groups.into_iter().map(|g| g.played).collect(),
                                    faulted,
                                })
                            });
                            let _ = reply.send(played);
                        }
                        PlayJob::Rest => pool.quit_all(),
                    }
                }
            })
            .map_err(|e| WorkerError::Task(format!("cannot start a play thread: {e}")))?;
        Ok(PlayThread { leases })
    }

    /// Quits the kept bots: no batch comes soon.
    pub(super) fn rest(&self) {
        let _ = self.leases.send(PlayJob::Rest);
    }

    /// Plays `rotation` of the leases' groups.
    pub(super) async fn play_wave(
        &self,
        leases: Vec<LeasedGroup>,
        homes: HashMap<String, PathBuf>,
        rotation: usize,
    ) -> Result<WavePlayed, WorkerError> {
        let (reply, played) = tokio::sync::oneshot::channel();
        self.leases
            .send(PlayJob::Wave {
                leases,
                homes,
                rotation,
                reply,
            })
            .map_err(|_| WorkerError::Task("the play thread is gone".into()))?;
        played
            .await
            .map_err(|_| WorkerError::Task("the play thread stopped mid-lease".into()))?
    }
}
