//! What a task holds while it plays a wave, and the renewals that keep its
//! leases alive meanwhile.

use super::*;

/// The groups a task holds in its wave: their leases, the uploaded bots'
/// folders (pinned in the cache until the groups are played), and what their
/// rotations gave so far.
#[derive(Default)]
pub(super) struct Held {
    pub(super) leases: Vec<LeasedGroup>,
    pub(super) homes: HashMap<String, PathBuf>,
    pub(super) pins: Vec<artifacts::Pinned>,
    pub(super) played: Vec<PlayedGroup>,
}

impl Held {
    /// Fetches (or finds in the cache) the folders of the groups' uploaded bots.
    ///
    /// # Errors
    /// A folder that cannot be had: the groups are not played.
    pub(super) async fn fetch(
        &mut self,
        groups: &[LeasedGroup],
        client: &mut Option<Api>,
        cache: &Arc<artifacts::ArtifactCache>,
    ) -> Result<(), WorkerError> {
        for e in groups.iter().flat_map(|g| &g.entrants) {
            let Some(sha) = &e.artifact_sha256 else { continue };
            if self.homes.contains_key(sha) || served_remotely(e) {
                continue;
            }
            let c = client
                .as_mut()
                .ok_or_else(|| WorkerError::Artifact("no connection to fetch a bot".into()))?;
            let pin = cache.folder(c, sha).await?;
            self.homes.insert(sha.clone(), pin.dir.clone());
            self.pins.push(pin);
        }
        Ok(())
    }

    /// Plays `rotation` of `groups` (new ones when it is 0, else all held),
    /// renewing every held lease while the games go on.
    pub(super) async fn play(
        &mut self,
        player: &PlayThread,
        groups: Vec<LeasedGroup>,
        rotation: usize,
        renewals: &mut Renewals,
        cfg: &WorkerConfig,
        client: &mut Option<Api>,
    ) -> Result<WavePlayed, WorkerError> {
        let fresh = rotation == 0;
        let playing = player.play_wave(groups.clone(), self.homes.clone(), rotation);
        tokio::pin!(playing);
        let wave = loop {
            tokio::select! {
                played = &mut playing => break played?,
                () = renewals.due() => renewals.renew(cfg, client).await,
            }
        };
        if fresh {
            self.leases.extend(groups);
            self.played.extend(wave.groups.iter().cloned());
        } else {
            for (mine, new) in self.played.iter_mut().zip(&wave.groups) {
                mine.records.extend(new.records.iter().cloned());
                mine.logs.extend(new.logs.iter().cloned());
            }
        }
        Ok(wave)
    }
}

/// The leases being played, renewed every third of their period so that however
/// long the games legally take, the groups stay this worker's (a lease that ran
/// out would be dealt again, with a new seed, and its report refused).
pub(super) struct Renewals {
    /// Each held group, with the lease it came in.
    pub(super) groups: Vec<(String, GroupId)>,
    /// The shortest of the leases' periods.
    pub(super) period: Duration,
    pub(super) every: Duration,
    pub(super) next: tokio::time::Instant,
}

impl Renewals {
    pub(super) fn new(leases: &[LeasedGroup]) -> Renewals {
        let period = leases
            .iter()
            .map(|g| g.period)
            .min()
            .unwrap_or(Duration::from_secs(60));
        let every = (period / 3).max(Duration::from_millis(50));
        Renewals {
            groups: leases.iter().map(|g| (g.lease.clone(), g.group_id)).collect(),
            period,
            every,
            next: tokio::time::Instant::now() + every,
        }
    }

    /// Renews these too from now on.
    pub(super) fn add(&mut self, leases: &[LeasedGroup]) {
        self.groups
            .extend(leases.iter().map(|g| (g.lease.clone(), g.group_id)));
    }

    /// Resolves when the next renewal is due.
    pub(super) async fn due(&self) {
        tokio::time::sleep_until(self.next).await;
    }

    /// Renews what is left of the held groups. A call that fails is tried again
    /// at the next renewal (a third of a period later, before the leases run
    /// out); a group the server no longer renews is lost, and is not asked for
    /// again.
    pub(super) async fn renew(&mut self, cfg: &WorkerConfig, client: &mut Option<Api>) {
        self.next = tokio::time::Instant::now() + self.every;
        if self.groups.is_empty() {
            return;
        }
        let c = match Api::held(client, cfg).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("cannot renew leases: {e}");
                return;
            }
        };
        let (renewed, period) = match renew_each_lease(c, &self.groups).await {
            Ok(r) => r,
            Err(e) => {
                // Tried again at the next renewal, all of them.
                tracing::warn!("cannot renew leases: {e}");
                *client = None;
                return;
            }
        };
        let lost: Vec<i64> = self
            .groups
            .iter()
            .filter(|g| !renewed.contains(g))
            .map(|(_, g)| g.0)
            .collect();
        if !lost.is_empty() {
            tracing::warn!(
                ?lost,
                "leases ran out before they were renewed; their report will be refused"
            );
        }
        self.groups = renewed;
        if let Some(period) = period {
            self.every = (period / 3).max(Duration::from_millis(50));
            self.next = tokio::time::Instant::now() + self.every;
        }
    }
}

/// Renews `groups` per lease, in calls the server takes (at most its batch
/// each), so that a worker that holds more never loses them all to one refused
/// renewal: the groups renewed, and the shortest period the server gave.
///
/// # Errors
/// A call that fails (all are tried again at the next renewal).
async fn renew_each_lease(
    c: &mut Api,
    groups: &[(String, GroupId)],
) -> Result<(Vec<(String, GroupId)>, Option<Duration>), CallError> {
    let mut leases: Vec<&str> = groups.iter().map(|(l, _)| l.as_str()).collect();
    leases.sort_unstable();
    leases.dedup();
    let mut renewed = Vec::with_capacity(groups.len());
    let mut period: Option<Duration> = None;
    for lease in leases {
        let ids: Vec<GroupId> = groups
            .iter()
            .filter(|(l, _)| l == lease)
            .map(|(_, g)| *g)
            .collect();
        for chunk in ids.chunks(crate::app::MAX_BATCH) {
            let r = c.renew_leases(lease, chunk).await?;
            renewed.extend(r.groups.into_iter().map(|g| (lease.to_owned(), g)));
            if let Some(p) = r.period {
                period = Some(period.map_or(p, |q| q.min(p)));
            }
        }
    }
    Ok((renewed, period))
}
