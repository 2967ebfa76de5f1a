//! `ladder backup`: a consistent copy of a serving SQLite ladder.
use super::runtime;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct BackupArgs {
    /// The store: sqlite:FILE or a file path, as `ladder serve --db` names it.
    /// A PostgreSQL store is backed up with pg_dump instead (docs/hosting.md,
    /// "Backups").
    #[arg(long)]
    pub(crate) db: String,
    /// The new file to write (never over an existing one). Restore by serving
    /// from it: `ladder serve --db sqlite:FILE`.
    #[arg(long, value_name = "FILE")]
    pub(crate) to: PathBuf,
}

pub(crate) fn run(a: BackupArgs) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    runtime()?
        .block_on(ladder::store::backup_sqlite(&a.db, &a.to))
        .with_context(|| format!("backing up {}", a.db))?;
    let size = std::fs::metadata(&a.to).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "ladder backup: {} written ({size} bytes, {:.1?}); with --artifacts, copy the object store after this (docs/hosting.md)",
        a.to.display(),
        started.elapsed()
    );
    Ok(ExitCode::SUCCESS)
}
