//! Reports: split into calls the server takes, and sent until taken or the
//! leases would have run out.

use super::*;

/// Splits reports into calls of at most [`crate::app::MAX_BATCH`] groups and
/// [`REPORT_BATCH_BYTES`] of records (a single larger group goes alone).
pub(super) fn report_calls(reports: Vec<GroupReport>) -> Vec<Vec<GroupReport>> {
    let mut calls: Vec<Vec<GroupReport>> = Vec::new();
    let mut bytes = 0;
    for r in reports {
        let size: usize = r.records.iter().map(String::len).sum::<usize>()
            + r.logs
                .iter()
                .map(|l| l.stderr.len() + l.faults.iter().map(String::len).sum::<usize>())
                .sum::<usize>();
        match calls.last_mut() {
            Some(call) if call.len() < crate::app::MAX_BATCH && bytes + size <= REPORT_BATCH_BYTES => {
                bytes += size;
                call.push(r);
            }
            _ => {
                bytes = size;
                calls.push(vec![r]);
            }
        }
    }
    calls
}

/// Most bytes of records in one report call: half what the server takes
/// ([`crate::app::MAX_REPORT_BYTES`]), for the message's own framing.
pub const REPORT_BATCH_BYTES: usize = crate::app::MAX_REPORT_BYTES / 2;

/// Reports one call's groups; a server restarting is waited for until the leases
/// would have run out. Returns how many groups the server took (recorded, or
/// recorded already by another worker).
pub(super) async fn report(
    cfg: &WorkerConfig,
    client: &mut Option<Api>,
    call: Vec<GroupReport>,
    give_up: tokio::time::Instant,
) -> u64 {
    let groups: Vec<i64> = call.iter().map(|r| r.group_id.0).collect();
    let mut backoff = Backoff::new(Duration::from_millis(300), Duration::from_secs(5));
    loop {
        let c = match Api::held(client, cfg).await {
            Ok(c) => c,
            Err(_) if tokio::time::Instant::now() < give_up => {
                tokio::time::sleep(backoff.next_wait()).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(?groups, "dropping the groups: server unreachable: {e}");
                return 0;
            }
        };
        match c.report_groups(&call).await {
            Ok(outcomes) => {
                let mut taken = 0;
                for (group, outcome) in outcomes {
                    if let Taken::Refused { code, message } = &outcome {
                        tracing::warn!(group = group.0, code, "report refused: {message}");
                    } else {
                        tracing::info!(group = group.0, outcome = outcome.as_str(), "reported");
                        taken += 1;
                    }
                }
                return taken;
            }
            // A verdict on the call is final; anything else (a server restarting,
            // a connection cut mid-call) is worth another try.
            Err(e) if !e.is_verdict() => {
                *client = None;
                if tokio::time::Instant::now() >= give_up {
                    tracing::warn!(?groups, "dropping the groups: {e}");
                    return 0;
                }
                tokio::time::sleep(backoff.next_wait()).await;
            }
            Err(e) => {
                tracing::warn!(?groups, "report refused: {e}");
                return 0;
            }
        }
    }
}
