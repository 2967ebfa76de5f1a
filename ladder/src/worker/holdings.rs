//! What a worker holds of the server's (group leases, a build's lease), so
//! that a worker asked to stop gives it back at once instead of letting it run
//! out: its groups are dealt again with new seeds, its build goes to another
//! worker, and nothing waits a lease period for a worker that is gone.

use super::{Api, WorkerConfig};
use crate::app::LeasedGroup;
use crate::store::{BotId, GroupId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Serves this process's worker metrics at `/metrics`, and `/healthz`, on
/// `listener`, for as long as the runtime runs.
pub fn serve_metrics(listener: tokio::net::TcpListener) {
    use axum::routing::get;
    let app = axum::Router::new()
        .route(
            "/metrics",
            get(|| async {
                (
                    [(axum::http::header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
                    crate::metrics::worker().render(),
                )
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("the metrics port stopped: {e}");
        }
    });
}

/// The leases a worker's tasks hold now, and whether it is stopping.
#[derive(Default)]
pub struct Holdings {
    stopping: AtomicBool,
    stop: tokio::sync::Notify,
    /// Group ids by the lease token they came under.
    groups: Mutex<BTreeMap<String, BTreeSet<GroupId>>>,
    /// The build and check being done, if any.
    prep: Mutex<Option<HeldPrep>>,
}

/// A build and check's lease: the version, and the lease's token.
#[derive(Debug, Clone)]
pub struct HeldPrep {
    /// The version being built.
    pub bot: BotId,
    /// The lease's token.
    pub lease: String,
}

/// What [`Holdings::give_back`] gave back.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GivenBack {
    /// Groups the server took back.
    pub groups: usize,
    /// Groups held that the server did not take back (already lost).
    pub not_taken: usize,
    /// Whether a build and check was given back.
    pub prep: bool,
}

impl Holdings {
    /// From now on no task leases anything.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.stop.notify_waiters();
    }

    /// Whether [`Holdings::stop`] was called.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Resolves once the worker is stopping (at once if it is).
    pub async fn stopped(&self) {
        let notified = self.stop.notified();
        if self.stopping() {
            return;
        }
        notified.await;
    }

    /// Waits `wait`, or less if the worker starts stopping meanwhile.
    pub async fn nap(&self, wait: std::time::Duration) {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = self.stopped() => {}
        }
    }

    /// These leased groups are held until [`Holdings::reported`].
    pub fn leased(&self, leases: &[LeasedGroup]) {
        let mut groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for g in leases {
            groups.entry(g.lease.clone()).or_default().insert(g.group_id);
        }
        let held: i64 = groups.values().map(|g| g.len() as i64).sum();
        crate::metrics::worker().groups_held.set(held);
        if !leases.is_empty() {
            // Said once they are held, so a stop from here on gives them back.
            tracing::debug!(groups = leases.len(), held, "groups held");
        }
    }

    /// These groups are no longer held (reported, or their report given up).
    pub fn reported(&self, leases: impl IntoIterator<Item = (String, GroupId)>) {
        let mut groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (lease, id) in leases {
            if let Some(ids) = groups.get_mut(&lease) {
                ids.remove(&id);
                if ids.is_empty() {
                    groups.remove(&lease);
                }
            }
        }
        crate::metrics::worker()
            .groups_held
            .set(groups.values().map(|g| g.len() as i64).sum());
    }

    /// How many groups are held now.
    pub fn groups_held(&self) -> usize {
        self.groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .map(BTreeSet::len)
            .sum()
    }

    /// A build and check is held until [`Holdings::prep_done`].
    pub fn prep_leased(&self, lease: HeldPrep) {
        *self
            .prep
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(lease);
    }

    /// The build and check is reported (or given up).
    pub fn prep_done(&self) {
        *self
            .prep
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// Gives back everything still held, in calls the server takes; what the
    /// server cannot be reached for runs out as a lease does.
    pub async fn give_back(&self, cfg: &WorkerConfig) -> GivenBack {
        let groups = std::mem::take(
            &mut *self
                .groups
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let prep = self
            .prep
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let mut out = GivenBack::default();
        if groups.is_empty() && prep.is_none() {
            return out;
        }
        let mut client = match Api::connect(&cfg.server, &cfg.token, cfg.ca_pem.as_deref()).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("cannot give leases back: {e}; they run out instead");
                out.not_taken = groups.values().map(BTreeSet::len).sum();
                return out;
            }
        };
        for (lease, ids) in groups {
            let ids: Vec<GroupId> = ids.into_iter().collect();
            for chunk in ids.chunks(crate::app::MAX_BATCH) {
                match client.return_leases(&lease, chunk).await {
                    Ok(n) => {
                        out.groups += n;
                        out.not_taken += chunk.len().saturating_sub(n);
                    }
                    Err(e) => {
                        tracing::warn!("cannot give leases back: {e}; they run out instead");
                        out.not_taken += chunk.len();
                    }
                }
            }
        }
        if let Some(p) = prep {
            match client.return_prep(p.bot, &p.lease).await {
                Ok(returned) => out.prep = returned,
                Err(e) => tracing::warn!("cannot give a build back: {e}; its lease runs out instead"),
            }
        }
        out
    }
}
