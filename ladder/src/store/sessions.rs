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

/// Most live sessions one author (or the host) keeps: a sign-in past it ends
/// that author's oldest.
pub const SESSIONS_PER_AUTHOR: i64 = 8;

/// Who a session is for, as [`Sessions::open_session`] keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionOf<'a> {
    /// An author.
    Author(AuthorId),
    /// The host, signed in with the admin token whose fingerprint this is
    /// (`host_key`): the session ends when the token changes.
    Host(&'a str),
}

impl Sessions<'_> {
    /// Opens a session known by `token_hash` for `who` until `expires_ms`,
    /// forgets every session that has ended, and ends the oldest of `who`'s
    /// beyond [`SESSIONS_PER_AUTHOR`] (under the author's lock, so sign-ins at
    /// once leave at most that many).
    ///
    /// # Errors
    /// The database.
    pub async fn open_session(
        self,
        token_hash: &str,
        who: SessionOf<'_>,
        csrf: &str,
        expires_ms: i64,
    ) -> Result<()> {
        let now = self.store.now_ms();
        let mut tx = self.store.write_tx().await?;
        let (author, host_key) = match who {
            SessionOf::Author(a) => {
                self.store.lock_author(&mut tx, a).await?;
                (Some(a), None)
            }
            SessionOf::Host(key) => {
                if self.store.dialect == Dialect::Postgres {
                    // The host has no row to lock: one lock of its own.
                    sqlx::query("SELECT pg_advisory_xact_lock(5887071026421100369)")
                        .execute(&mut *tx)
                        .await?;
                }
                (None, Some(key))
            }
        };
        sqlx::query("DELETE FROM web_sessions WHERE expires_ms <= $1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO web_sessions (token_hash, author_id, csrf, created_ms, expires_ms, host_key)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(token_hash)
        .bind(author)
        .bind(csrf)
        .bind(now)
        .bind(expires_ms)
        .bind(host_key)
        .execute(&mut *tx)
        .await?;
        // The newest stay: this one, and the newest others up to the cap.
        let keep = SESSIONS_PER_AUTHOR - 1;
        let ended = |same: &str| {
            format!(
                "DELETE FROM web_sessions WHERE {same} AND token_hash <> $1 AND token_hash NOT IN
                 (SELECT token_hash FROM web_sessions WHERE {same} AND token_hash <> $1
                  ORDER BY created_ms DESC, token_hash LIMIT $2)"
            )
        };
        match author {
            Some(a) => {
                sqlx::query(sqlx::AssertSqlSafe(ended("author_id = $3")))
                    .bind(token_hash)
                    .bind(keep)
                    .bind(a)
                    .execute(&mut *tx)
                    .await?
            }
            None => {
                sqlx::query(sqlx::AssertSqlSafe(ended("author_id IS NULL")))
                    .bind(token_hash)
                    .bind(keep)
                    .execute(&mut *tx)
                    .await?
            }
        };
        tx.commit().await?;
        Ok(())
    }

    /// The session known by `token_hash`, if it has not ended, its author's
    /// token has not been revoked since, and (the host's) it was opened with
    /// the admin token whose fingerprint is `host_key`.
    ///
    /// # Errors
    /// The database.
    pub async fn session(self, token_hash: &str, host_key: &str) -> Result<Option<WebSession>> {
        let row = sqlx::query(
            "SELECT author_id, csrf, host_key FROM web_sessions WHERE token_hash = $1 AND expires_ms > $2",
        )
        .bind(token_hash)
        .bind(self.store.now_ms())
        .fetch_optional(&self.store.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let author: Option<AuthorId> = row.try_get(0)?;
        let csrf: String = row.try_get(1)?;
        let kept_key: Option<String> = row.try_get(2)?;
        let author = match author {
            None => {
                // Opened with another admin token (or before sessions kept one):
                // the host changed it, and every session of the old one ends.
                let same = kept_key
                    .as_deref()
                    .is_some_and(|k| subtle::ConstantTimeEq::ct_eq(k.as_bytes(), host_key.as_bytes()).into());
                if !same {
                    self.close_session(token_hash).await?;
                    return Ok(None);
                }
                None
            }
            Some(id) => {
                let sql =
                    "SELECT id, name, max_bots, revoked_ms FROM authors WHERE id = $1 AND revoked_ms IS NULL";
                match sqlx::query_as::<_, AuthorRow>(sql)
                    .bind(id)
                    .fetch_optional(&self.store.pool)
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
    pub async fn close_session(self, token_hash: &str) -> Result<()> {
        sqlx::query("DELETE FROM web_sessions WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.store.pool)
            .await?;
        Ok(())
    }

    /// Ends every session of `author`, or every session there is (the host's
    /// and every author's) when `None`; how many were live.
    ///
    /// # Errors
    /// The database.
    pub async fn end_sessions(self, author: Option<AuthorId>) -> Result<u64> {
        let now = self.store.now_ms();
        let done = match author {
            Some(a) => sqlx::query("DELETE FROM web_sessions WHERE author_id = $1 AND expires_ms > $2")
                .bind(a)
                .bind(now)
                .execute(&self.store.pool)
                .await?
                .rows_affected(),
            None => sqlx::query("DELETE FROM web_sessions WHERE expires_ms > $1")
                .bind(now)
                .execute(&self.store.pool)
                .await?
                .rows_affected(),
        };
        sqlx::query("DELETE FROM web_sessions WHERE expires_ms <= $1")
            .bind(now)
            .execute(&self.store.pool)
            .await?;
        Ok(done)
    }

    /// How many sessions of `author` (`None`: the host's) are live.
    ///
    /// # Errors
    /// The database.
    pub async fn live_sessions(self, author: Option<AuthorId>) -> Result<i64> {
        let now = self.store.now_ms();
        let row = match author {
            Some(a) => {
                sqlx::query("SELECT COUNT(*) FROM web_sessions WHERE author_id = $1 AND expires_ms > $2")
                    .bind(a)
                    .bind(now)
                    .fetch_one(&self.store.pool)
                    .await?
            }
            None => {
                sqlx::query("SELECT COUNT(*) FROM web_sessions WHERE author_id IS NULL AND expires_ms > $1")
                    .bind(now)
                    .fetch_one(&self.store.pool)
                    .await?
            }
        };
        Ok(row.try_get(0)?)
    }
}
