//! Signed-in browsers of the author's pages: each known by the SHA-256 of its
//! session cookie, never the cookie itself.

use super::*;

/// A signed-in browser, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    /// Whose it is: an author (`None`: the host).
    pub author: Option<AuthorRow>,
    /// What its forms must carry.
    pub csrf: String,
}

impl Store {
    /// Opens a session known by `token_hash` for `author` (`None`: the host)
    /// until `expires_ms`, and forgets every session that has ended.
    ///
    /// # Errors
    /// The database.
    pub async fn open_session(
        &self,
        token_hash: &str,
        author: Option<AuthorId>,
        csrf: &str,
        expires_ms: i64,
    ) -> Result<()> {
        let now = now_ms();
        let mut tx = self.write_tx().await?;
        sqlx::query("DELETE FROM web_sessions WHERE expires_ms <= $1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO web_sessions (token_hash, author_id, csrf, created_ms, expires_ms) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(token_hash)
        .bind(author)
        .bind(csrf)
        .bind(now)
        .bind(expires_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The session known by `token_hash`, if it has not ended and its author's
    /// token has not been revoked since.
    ///
    /// # Errors
    /// The database.
    pub async fn session(&self, token_hash: &str) -> Result<Option<WebSession>> {
        let row =
            sqlx::query("SELECT author_id, csrf FROM web_sessions WHERE token_hash = $1 AND expires_ms > $2")
                .bind(token_hash)
                .bind(now_ms())
                .fetch_optional(&self.pool)
                .await?;
        let Some(row) = row else { return Ok(None) };
        let author: Option<AuthorId> = row.try_get(0)?;
        let csrf: String = row.try_get(1)?;
        let author = match author {
            None => None,
            Some(id) => {
                let sql =
                    "SELECT id, name, max_bots, revoked_ms FROM authors WHERE id = $1 AND revoked_ms IS NULL";
                match sqlx::query_as::<_, AuthorRow>(sql)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?
                {
                    Some(a) => Some(a),
                    // Revoked: the session ends with the token.
                    None => return Ok(None),
                }
            }
        };
        Ok(Some(WebSession { author, csrf }))
    }

    /// Ends the session known by `token_hash` (nothing if there is none).
    ///
    /// # Errors
    /// The database.
    pub async fn close_session(&self, token_hash: &str) -> Result<()> {
        sqlx::query("DELETE FROM web_sessions WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
