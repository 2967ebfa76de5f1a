//! Bots' files, named by the SHA-256 of their canonical archive. Their bytes
//! are kept in the store itself (a `BLOB`/`BYTEA` column: one place to back up,
//! the same on SQLite and PostgreSQL), or, when the server keeps them in an
//! object store, only their names and sizes.

use super::*;
use crate::submission::Artifact;

impl Artifacts<'_> {
    /// Stores an artifact unless one of its hash is there (same hash, same bytes).
    pub(super) async fn put_artifact(
        self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        artifact: &Artifact,
        bytes_here: bool,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO artifacts (sha256, size, content, created_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (sha256) DO NOTHING",
        )
        .bind(&artifact.sha256)
        .bind(artifact.bytes.len() as i64)
        .bind(bytes_here.then_some(artifact.bytes.as_slice()))
        .bind(self.store.now_ms())
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// An artifact's bytes, by hash, if the store keeps them.
    ///
    /// # Errors
    /// The database.
    pub async fn artifact(self, sha256: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.artifact_row(sha256).await?.flatten())
    }

    /// Whether an artifact of this hash is known, and its bytes if the store
    /// keeps them: `None` unknown, `Some(None)` kept in the server's object store.
    ///
    /// # Errors
    /// The database.
    pub async fn artifact_row(self, sha256: &str) -> Result<Option<Option<Vec<u8>>>> {
        let row = sqlx::query("SELECT content FROM artifacts WHERE sha256 = $1")
            .bind(sha256)
            .fetch_optional(&self.store.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<Option<Vec<u8>>, _>(0)).transpose()?)
    }
}
