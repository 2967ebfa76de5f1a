//! `ladder verify`: checks a closed season's finals from their public record.
use super::runtime;
use anyhow::Context;
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct VerifyArgs {
    /// The season's public record: a file, or its address on the ladder's pages
    /// (https://ladder.example.org/competitions/NAME/season.jsonl).
    pub(crate) record: String,
    /// The commitment you noted from the competition's page before the finals
    /// started (64 hex digits): the record must commit to that same one.
    #[arg(long, value_name = "HEX")]
    pub(crate) commitment: Option<String>,
}

/// Records larger than this are refused (a season's finals are far smaller).
const MAX_RECORD_BYTES: usize = 1 << 30;

pub(crate) fn run(a: VerifyArgs) -> anyhow::Result<ExitCode> {
    let text = if a.record.starts_with("http://") || a.record.starts_with("https://") {
        runtime()?.block_on(fetch(&a.record))?
    } else {
        std::fs::read_to_string(&a.record).with_context(|| format!("reading {}", a.record))?
    };
    match ladder::season::verify::verify(&text, a.commitment.as_deref()) {
        Ok(v) => {
            println!(
                "verified: {} — {} finals groups in {} round{}, {} games; every seed derives from the revealed \
                 master seed, every game replays, the rounds are the plan's, and the standings are the ones \
                 published (winner: {})",
                v.competition,
                v.groups,
                v.rounds,
                if v.rounds == 1 { "" } else { "s" },
                v.games,
                v.winner,
            );
            if v.redeals > 0 {
                // Each deal drew new dice: shown, so that a host who provoked them is seen.
                println!(
                    "note: {} groups were dealt again after a lease ran out or was given back ({} deals more in all; \
                     at most {} deals of one group)",
                    v.redeals, v.extra_deals, v.most_deals
                );
            }
            if v.forfeits > 0 {
                println!(
                    "note: {} games ended by a seat's fault; a record shows where such a game ended, not why",
                    v.forfeits
                );
            }
            if a.commitment.is_none() {
                println!(
                    "compare the commitment with the one the page showed before the finals (or pass --commitment)"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("NOT verified: {e}");
            Ok(ExitCode::from(2))
        }
    }
}

async fn fetch(url: &str) -> anyhow::Result<String> {
    let mut reply = reqwest::get(url)
        .await
        .with_context(|| format!("fetching {url}"))?;
    let status = reply.status();
    if !status.is_success() {
        anyhow::bail!("fetching {url}: the server answered {status}");
    }
    // Counted as it arrives: a hostile server's endless body stops at the cap,
    // not at the machine's memory.
    let mut bytes = Vec::new();
    while let Some(chunk) = reply.chunk().await.with_context(|| format!("reading {url}"))? {
        if bytes.len() + chunk.len() > MAX_RECORD_BYTES {
            anyhow::bail!("{url} is over {MAX_RECORD_BYTES} bytes: not a season's record");
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes).with_context(|| format!("{url} is not UTF-8 text"))
}
