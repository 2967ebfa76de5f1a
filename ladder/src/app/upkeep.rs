//! The server's own vacuum of the tables reports churn (PostgreSQL): the lease
//! path stays as fast after a million groups as after the first, whatever the
//! host's autovacuum does ([`Store::upkeep`] says why).

use std::time::{Duration, Instant};

use crate::store::Store;

/// Shortest pause between two rounds of upkeep.
pub const UPKEEP_EVERY: Duration = Duration::from_secs(10);

/// The pause after a round that took `took`: [`UPKEEP_EVERY`], or ten times the
/// round when that is longer, so upkeep holds one of the pool's connections a
/// tenth of the time at most however large the tables grow.
pub fn upkeep_pause(took: Duration) -> Duration {
    UPKEEP_EVERY.max(took.saturating_mul(10))
}

/// Vacuums and analyzes the store's churned tables whenever rows were written
/// since the last round, until `stop`. Several servers on one database may each
/// run it: a table another vacuum holds is skipped.
pub async fn keep_fit(store: Store, mut stop: tokio::sync::watch::Receiver<bool>) {
    if store.dialect() != crate::store::Dialect::Postgres {
        return;
    }
    let mut pause = UPKEEP_EVERY;
    let mut mark = None;
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = tokio::time::sleep(pause) => {}
        }
        let now = match store.churn_mark().await {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!("upkeep cannot read the store's statistics: {e}");
                continue;
            }
        };
        if mark == Some(now) {
            continue;
        }
        let started = Instant::now();
        match store.upkeep().await {
            Ok(_) => {
                mark = Some(now);
                tracing::debug!(
                    took_ms = started.elapsed().as_millis() as u64,
                    "vacuumed the churned tables"
                );
            }
            Err(e) => tracing::warn!("upkeep failed (the lease path slows until a vacuum): {e}"),
        }
        pause = upkeep_pause(started.elapsed());
    }
}

/// Lets go of what the host's retention does not keep
/// ([`super::RetentionConfig`]), every [`super::RetentionConfig::every`],
/// until `stop`; the first round a minute after the start.
pub async fn keep_tidy(
    service: std::sync::Arc<super::LadderService>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut pause = Duration::from_secs(60).min(service.cfg.retention.every);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = tokio::time::sleep(pause) => {}
        }
        pause = service.cfg.retention.every;
        match service.collect(false).await {
            Ok(crate::app::Collection { collected: c, .. }) => tracing::info!(
                logs = c.logs,
                log_bytes = c.log_bytes,
                versions = c.versions,
                files = c.files.len(),
                file_bytes = c.file_bytes,
                sessions = c.sessions,
                "retention: let go of what is past its time"
            ),
            Err(e) => tracing::warn!("retention failed (tried again later): {e}"),
        }
    }
}

/// How often seasons are looked at: a deadline is kept to about this.
pub const SEASON_LOOK: Duration = Duration::from_secs(1);

/// Moves seasons on ([`super::seasons::advance`]) every [`SEASON_LOOK`], until
/// `stop`.
pub async fn keep_seasons(store: Store, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        match super::seasons::advance(&store).await {
            Ok(done) => {
                for (what, names) in [
                    ("frozen at its deadline", &done.frozen),
                    ("finals started", &done.finals_started),
                    ("finals round added", &done.rounds_added),
                    ("closed; master seed revealed", &done.closed),
                ] {
                    for name in names {
                        tracing::info!(season = %name, "season {what}");
                    }
                }
            }
            Err(e) => tracing::warn!("moving seasons on failed (tried again): {e}"),
        }
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = tokio::time::sleep(SEASON_LOOK) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upkeep_pauses_ten_times_its_last_round_once_that_is_longer_than_the_floor() {
        assert_eq!(upkeep_pause(Duration::ZERO), UPKEEP_EVERY);
        assert_eq!(upkeep_pause(Duration::from_millis(200)), UPKEEP_EVERY);
        assert_eq!(upkeep_pause(Duration::from_secs(3)), Duration::from_secs(30));
        assert_eq!(upkeep_pause(Duration::MAX), Duration::MAX);
    }
}
