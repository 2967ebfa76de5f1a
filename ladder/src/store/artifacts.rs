//! Bots' files, named by the SHA-256 of their canonical archive. Kept in the
//! store itself (a `BLOB`/`BYTEA` column): one place to back up, the same on
//! SQLite and PostgreSQL.

use super::*;
use crate::submission::Artifact;

impl Store {
    /// Stores an artifact unless one of its hash is there (same hash, same bytes).
    pub(super) async fn put_artifact(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        artifact: &Artifact,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO artifacts (sha256, size, content, created_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (sha256) DO NOTHING",
        )
        .bind(&artifact.sha256)
        .bind(artifact.bytes.len() as i64)
        .bind(artifact.bytes.as_slice())
        .bind(now_ms())
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// An artifact's bytes, by hash.
    ///
    /// # Errors
    /// The database.
    pub async fn artifact(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT content FROM artifacts WHERE sha256 = $1")
            .bind(sha256)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<Vec<u8>, _>(0)).transpose()?)
    }
}
