//! `ladder ratings`: standings of a store's competitions, or of record files.
use super::{anchor_of, runtime, say};
use anyhow::{Context, bail};
use clap::Args;
use ladder::local::tournament;
use ladder::store::Store;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct RatingsArgs {
    /// Store to read (SQLite file or postgres://...).
    #[arg(long, conflicts_with = "records")]
    pub(crate) db: Option<String>,
    /// Only this competition.
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Recompute from the game records themselves rather than the stored results.
    #[arg(long)]
    pub(crate) from_records: bool,
    /// JSON Lines record files (from `referee --record` or a store) to rate instead.
    #[arg(long, num_args = 1..)]
    pub(crate) records: Vec<PathBuf>,
    /// Pin this bot's rating: NAME or NAME=ELO.
    #[arg(long)]
    pub(crate) anchor: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(a: RatingsArgs) -> anyhow::Result<ExitCode> {
    let anchor = anchor_of(&a.anchor)?;
    let anchor_ref = anchor.as_ref().map(|(n, e)| (n.as_str(), *e));
    let mut out: Vec<(String, rating::standings::Standings)> = Vec::new();
    // Lines of --records files that are not games that replay: reported after the
    // ratings of the good ones, and the command fails.
    let mut refused: Vec<String> = Vec::new();
    if !a.records.is_empty() {
        let mut records = Vec::new();
        for f in &a.records {
            let checked = referee::replay::check_file(f).map_err(anyhow::Error::msg)?;
            records.extend(checked.good);
            refused.extend(
                checked
                    .bad
                    .into_iter()
                    .map(|(n, why)| format!("{}:{n}: {why}", f.display())),
            );
        }
        out.push((
            "records".into(),
            ladder::local::standings_from_records(&records, anchor_ref)?,
        ));
    } else {
        let Some(url) = a.db else {
            bail!("give --db STORE or --records FILE...");
        };
        let rt = runtime()?;
        let store = rt
            .block_on(Store::open(&url))
            .with_context(|| format!("opening store {url}"))?;
        let comps = rt.block_on(store.competitions().all())?;
        if let Some(n) = &a.name
            && !comps.iter().any(|c| &c.name == n)
        {
            bail!("no competition named {n:?} in {url}");
        }
        for c in comps
            .iter()
            .filter(|c| a.name.as_ref().is_none_or(|n| *n == c.name))
        {
            let st = if a.from_records {
                let mut records = Vec::new();
                let mut after = ladder::store::GameId(0);
                loop {
                    let page = rt.block_on(store.games().records(c.id, after, 10_000))?;
                    let Some(&(last, _)) = page.last() else { break };
                    after = last;
                    for (id, text) in page {
                        records.push(
                            serde_json::from_str(&text)
                                .with_context(|| format!("game {id}: record does not parse"))?,
                        );
                    }
                }
                ladder::local::standings_from_records(&records, anchor_ref)?
            } else {
                rt.block_on(tournament::standings_of(&store, c, anchor_ref))?
            };
            out.push((c.name.clone(), st));
        }
    }
    if a.json {
        let map: serde_json::Map<String, serde_json::Value> = out
            .into_iter()
            .map(|(n, s)| (n, serde_json::to_value(s).unwrap_or_default()))
            .collect();
        say(&serde_json::to_string_pretty(&map)?)?;
    } else {
        for (name, st) in out {
            say(&format!("== {name}\n{}", st.table()))?;
        }
    }
    for line in &refused {
        eprintln!("refused: {line}");
    }
    if !refused.is_empty() {
        bail!(
            "{} lines of the records are not games that replay (the ratings above leave them out)",
            refused.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
