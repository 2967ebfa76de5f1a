//! Authors (strangers with a token of their own) and the bots they upload: each
//! upload a new version per game, stored with its files in one transaction.

use super::*;
use crate::submission::Submission;

/// What a version's author may read of how it came to be.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct BotLogs {
    /// Its upload's SHA-256 (none for the host's own bots).
    pub source_sha256: Option<String>,
    /// Its build's log.
    pub build_log: String,
    /// Its qualification's report.
    pub check_report: String,
}

/// An author known to the service.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct AuthorRow {
    /// Key.
    pub id: AuthorId,
    /// Unique name.
    pub name: String,
    /// How many bots (by name, every version one bot) they may have.
    pub max_bots: i64,
    /// When its token was revoked (ms since the epoch), if it was.
    pub revoked_ms: Option<i64>,
}

const AUTHOR_COLUMNS: &str = "id, name, max_bots, revoked_ms";

/// What one author may add: the host's caps on uploads, checked by
/// [`Authors::submit`] under the author's lock, so that uploads sent at once
/// cannot all be counted before any is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadQuota {
    /// New versions (one per game an upload plays) in any 24 hours.
    pub versions_per_day: i64,
    /// Bytes of files their bots name (uploads and built folders, each file
    /// counted once): the store keeps every version's files, so that any game
    /// can be played again with the bot that played it.
    pub bytes: i64,
}

impl UploadQuota {
    /// No cap.
    pub const UNLIMITED: UploadQuota = UploadQuota {
        versions_per_day: i64::MAX,
        bytes: i64::MAX,
    };
}

impl Authors<'_> {
    /// Adds an author known by the SHA-256 of their token.
    ///
    /// # Errors
    /// The name is taken, or the database.
    pub async fn add_author(self, name: &str, token_hash: &str, max_bots: i64) -> Result<AuthorRow> {
        let inserted = sqlx::query(
            "INSERT INTO authors (name, token_hash, max_bots, created_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(token_hash)
        .bind(max_bots)
        .bind(self.store.now_ms())
        .execute(&self.store.pool)
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "an author named {name:?} exists (revoke them and add another name)"
            )));
        }
        self.author(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("author {name:?} vanished")))
    }

    /// An author by name.
    ///
    /// # Errors
    /// The database.
    pub async fn author(self, name: &str) -> Result<Option<AuthorRow>> {
        let sql = format!("SELECT {AUTHOR_COLUMNS} FROM authors WHERE name = $1");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(&self.store.pool)
            .await?)
    }

    /// The author whose token has this SHA-256, if it is not revoked.
    ///
    /// # Errors
    /// The database.
    pub async fn author_by_token_hash(self, token_hash: &str) -> Result<Option<AuthorRow>> {
        let sql =
            format!("SELECT {AUTHOR_COLUMNS} FROM authors WHERE token_hash = $1 AND revoked_ms IS NULL");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(token_hash)
            .fetch_optional(&self.store.pool)
            .await?)
    }

    /// Every author's name, by key.
    ///
    /// # Errors
    /// The database.
    pub async fn author_names(self) -> Result<std::collections::HashMap<AuthorId, String>> {
        let rows: Vec<(AuthorId, String)> = sqlx::query_as("SELECT id, name FROM authors")
            .fetch_all(&self.store.pool)
            .await?;
        Ok(rows.into_iter().collect())
    }

    /// Revokes an author's token: their calls are refused from now on. Their bots
    /// stay as they are (the host disables them if it wants them out).
    ///
    /// # Errors
    /// No such author, or the database.
    pub async fn revoke_author(self, name: &str) -> Result<AuthorRow> {
        let done = sqlx::query("UPDATE authors SET revoked_ms = $2 WHERE name = $1 AND revoked_ms IS NULL")
            .bind(name)
            .bind(self.store.now_ms())
            .execute(&self.store.pool)
            .await?;
        let author = self
            .author(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no author named {name:?}")))?;
        if done.rows_affected() == 0 && author.revoked_ms.is_none() {
            return Err(StoreError::NotFound(format!("no author named {name:?}")));
        }
        Ok(author)
    }

    /// Sets how many bots an author may have.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for no such author; the database.
    pub async fn set_max_bots(self, name: &str, max_bots: i64) -> Result<AuthorRow> {
        let done = sqlx::query("UPDATE authors SET max_bots = $2 WHERE name = $1")
            .bind(name)
            .bind(max_bots)
            .execute(&self.store.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("no author named {name:?}")));
        }
        self.author(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no author named {name:?}")))
    }

    /// Every version of every bot of an author, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn bots_of_author(self, author: AuthorId) -> Result<Vec<BotRow>> {
        let sql = format!(
            "SELECT {} FROM bots WHERE author_id = $1 ORDER BY id",
            Bots::BOT_COLUMNS
        );
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(author)
            .fetch_all(&self.store.pool)
            .await?)
    }

    /// A version's upload, build log and check report.
    ///
    /// # Errors
    /// The database.
    pub async fn bot_logs(self, bot: BotId) -> Result<BotLogs> {
        Ok(
            sqlx::query_as("SELECT source_sha256, build_log, check_report FROM bots WHERE id = $1")
                .bind(bot)
                .fetch_one(&self.store.pool)
                .await?,
        )
    }

    /// Stores an upload: its files (once, by hash), then for each game it plays
    /// a new version `building`: `NAME` (one game) or `NAME-GAME` (several),
    /// version 1 as that name, later ones `@N`. The newest version before it
    /// keeps playing until the new one passes its qualification. All or nothing.
    ///
    /// One author's uploads are stored one at a time (the author's lock): their
    /// cap of bots and `quota` hold however many arrive at once, and so does the
    /// host's disable.
    ///
    /// # Errors
    /// [`StoreError::Conflict`]: the name is another author's or the host's, the
    /// host disabled the bot, or the author is at their cap of bots, of versions
    /// a day or of bytes; or the database.
    pub async fn submit(
        self,
        author: &AuthorRow,
        submission: &Submission,
        quota: &UploadQuota,
    ) -> Result<Vec<BotRow>> {
        let m = &submission.manifest;
        let manifest_json = serde_json::to_string(m).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        // A remote bot's secret is its environment: it goes with its calls.
        let env: Vec<(String, String)> = m
            .secret
            .iter()
            .map(|s| (referee::session::BOT_SECRET_ENV.to_owned(), s.clone()))
            .collect();
        let env_json = serde_json::to_string(&env).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut tx = self.store.write_tx().await?;
        self.store.lock_author(&mut tx, author.id).await?;
        self.within_quota(&mut tx, author.id, submission, m.games.len() as i64, quota)
            .await?;
        self.store
            .artifacts()
            .put_artifact(&mut tx, &submission.artifact, self.store.artifact_bytes_here)
            .await?;
        let mut names = Vec::new();
        // New bots this upload has made so far: the cap is told of the upload as
        // a whole, not of bots that do not exist yet.
        let mut made_here = 0i64;
        for game in &m.games {
            let base = if m.games.len() == 1 {
                m.name.clone()
            } else {
                format!("{}-{game}", m.name)
            };
            let NextVersion {
                name,
                version,
                previous,
            } = self
                .next_version(&mut tx, author, m, game, base, &mut made_here)
                .await?;
            sqlx::query(
                sql_text!("INSERT INTO bots (name, game, spec, env, created_ms, version, previous_id, status, status_reason,
                                   status_by, author_id, manifest, source_sha256, runtime)
                 VALUES ($1, $2, $3, $12, $4, $5, $6, ", BotStatus::Building, ", $7, ", StatusBy::Server, ", $8, $9, $10, $11)"),
            )
            .bind(&name)
            .bind(game)
            .bind(&m.run)
            // By the store's clock: a season's deadline is read by it too.
            .bind(self.store.now_ms())
            .bind(version)
            .bind(previous)
            .bind(if m.build.is_some() {
                "waiting for a worker to build it"
            } else {
                "waiting for a worker to check it"
            })
            .bind(author.id)
            .bind(&manifest_json)
            .bind(&submission.artifact.sha256)
            .bind(&m.runtime)
            .bind(&env_json)
            .execute(&mut *tx)
            .await?;
            names.push(name);
        }
        tx.commit().await?;
        let mut bots = Vec::with_capacity(names.len());
        for name in names {
            bots.push(
                self.store
                    .bots()
                    .bot(&name)
                    .await?
                    .ok_or_else(|| StoreError::NotFound(format!("bot {name:?} vanished")))?,
            );
        }
        Ok(bots)
    }

    /// The version an upload makes of `base` for `game`: the next of the
    /// author's bot of that name, or (counted in `made_here`) a new bot within
    /// the author's cap. Refused: a name another author or the host holds, the
    /// same name at another game, a bot the host disabled.
    async fn next_version(
        self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        author: &AuthorRow,
        m: &crate::submission::Manifest,
        game: &str,
        base: String,
        made_here: &mut i64,
    ) -> Result<NextVersion> {
        let sql = format!(
            "SELECT {} FROM bots WHERE name = $1 OR name LIKE $2 ESCAPE '\\' ORDER BY version DESC LIMIT 1",
            Bots::BOT_COLUMNS
        );
        let newest: Option<BotRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(&base)
            .bind(format!("{}@%", like_escaped(&base)))
            .fetch_optional(&mut **tx)
            .await?;
        // The host's word holds: a bot the host disabled takes no new version
        // (before, an upload superseded the disabled one and played about 30 s
        // later), until the host enables it again.
        if newest.as_ref().is_some_and(|b| b.author_id == Some(author.id)) {
            Self::refuse_if_disabled_by_host(tx, &base).await?;
        }
        Ok(match newest {
            Some(b) if b.author_id != Some(author.id) => {
                return Err(StoreError::Conflict(format!(
                    "the bot name {base:?} is taken by {}: choose another `name` in astragal.toml",
                    if b.author_id.is_some() {
                        "another author"
                    } else {
                        "the host"
                    }
                )));
            }
            Some(b) if b.game != *game => {
                return Err(StoreError::Conflict(format!(
                    "your bot {base:?} plays {}, not {game}: give this one another name",
                    b.game
                )));
            }
            Some(b) => NextVersion {
                name: format!("{base}@{}", b.version + 1),
                version: b.version + 1,
                previous: Some(b.id),
            },
            None => {
                let owned: i64 =
                    sqlx::query("SELECT COUNT(*) FROM bots WHERE author_id = $1 AND previous_id IS NULL")
                        .bind(author.id)
                        .fetch_one(&mut **tx)
                        .await?
                        .try_get(0)?;
                if owned >= author.max_bots {
                    return Err(StoreError::Conflict(over_cap(
                        m,
                        author.max_bots,
                        owned - *made_here,
                    )));
                }
                *made_here += 1;
                NextVersion {
                    name: base,
                    version: 1,
                    previous: None,
                }
            }
        })
    }

    /// Refuses a version of `base` while the host holds its newest disabled.
    async fn refuse_if_disabled_by_host(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        base: &str,
    ) -> Result<()> {
        let held: Option<(String, String)> = sqlx::query(sql_text!(
            "SELECT name, status_reason FROM bots WHERE (name = $1 OR name LIKE $2 ESCAPE '\\')
             AND status = ",
            BotStatus::Disabled,
            " AND status_by = ",
            StatusBy::Admin,
            " ORDER BY version DESC LIMIT 1"
        ))
        .bind(base)
        .bind(format!("{}@%", like_escaped(base)))
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| Ok::<_, sqlx::Error>((r.try_get(0)?, r.try_get(1)?)))
        .transpose()?;
        match held {
            None => Ok(()),
            Some((disabled, reason)) => {
                let why = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                };
                Err(StoreError::Conflict(format!(
                    "the host disabled {disabled}{why}: no new version of {base:?} is taken until the host \
                     enables it again"
                )))
            }
        }
    }
}

impl Authors<'_> {
    /// Refuses an upload of `versions` new versions that would take `author`
    /// past `quota` (run under the author's lock).
    async fn within_quota(
        self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        author: AuthorId,
        submission: &Submission,
        versions: i64,
        quota: &UploadQuota,
    ) -> Result<()> {
        let day_ago = self.store.now_ms() - 86_400_000;
        let today: i64 = sqlx::query("SELECT COUNT(*) FROM bots WHERE author_id = $1 AND created_ms > $2")
            .bind(author)
            .bind(day_ago)
            .fetch_one(&mut **tx)
            .await?
            .try_get(0)?;
        if today.saturating_add(versions) > quota.versions_per_day {
            return Err(StoreError::Conflict(format!(
                "this ladder takes at most {} new versions a day from an author (one per game an upload \
                 plays); you uploaded {today} in the last 24 hours, so {} more can be taken now",
                quota.versions_per_day,
                (quota.versions_per_day - today).max(0)
            )));
        }
        let kept: i64 = sqlx::query(
            "SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM artifacts WHERE sha256 IN
             (SELECT source_sha256 FROM bots WHERE author_id = $1
              UNION SELECT artifact_sha256 FROM bots WHERE author_id = $1)",
        )
        .bind(author)
        .fetch_one(&mut **tx)
        .await?
        .try_get(0)?;
        let known: Option<i64> = sqlx::query(
            "SELECT id FROM bots WHERE author_id = $1 AND (source_sha256 = $2 OR artifact_sha256 = $2) LIMIT 1",
        )
        .bind(author)
        .bind(&submission.artifact.sha256)
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| r.try_get(0))
        .transpose()?;
        let adds = if known.is_some() {
            0
        } else {
            submission.artifact.bytes.len() as i64
        };
        if kept.saturating_add(adds) > quota.bytes {
            return Err(StoreError::Conflict(format!(
                "this ladder keeps at most {} bytes of files for an author (every version's upload and \
                 built folder, each file once); yours hold {kept} bytes and this upload is {adds} more: \
                 ask the host for room",
                quota.bytes
            )));
        }
        Ok(())
    }
}

/// `text` matched literally by `LIKE ... ESCAPE '\\'`.
pub(super) fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The version an upload makes of a bot: its name, number and predecessor.
struct NextVersion {
    name: String,
    version: i64,
    previous: Option<BotId>,
}

/// Why an upload that would make a new bot past the author's cap of
/// `max_bots` (`had` made before it) is refused.
fn over_cap(m: &crate::submission::Manifest, max_bots: i64, had: i64) -> String {
    if m.games.len() > 1 {
        format!(
            "this upload makes a bot for each of its {} games ({}), and this ladder gives \
             you {max_bots} bots, {had} of them made already: list fewer `games` in \
             astragal.toml, or ask the host for more (`ladder admin set-author NAME --max-bots N`)",
            m.games.len(),
            m.games.join(", "),
        )
    } else {
        format!(
            "you have {had} bots, the most this ladder gives you ({max_bots}): \
             upload a new version of one of them instead (the same `name`), or ask the \
             host for more (`ladder admin set-author NAME --max-bots N`)"
        )
    }
}
