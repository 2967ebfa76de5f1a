//! Authors (strangers with a token of their own) and the bots they upload: each
//! upload a new version per game, stored with its files in one transaction.

use super::*;
use crate::submission::Submission;

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

impl Store {
    /// Adds an author known by the SHA-256 of their token.
    ///
    /// # Errors
    /// The name is taken, or the database.
    pub async fn add_author(&self, name: &str, token_hash: &str, max_bots: i64) -> Result<AuthorRow> {
        let inserted = sqlx::query(
            "INSERT INTO authors (name, token_hash, max_bots, created_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(token_hash)
        .bind(max_bots)
        .bind(now_ms())
        .execute(&self.pool)
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
    pub async fn author(&self, name: &str) -> Result<Option<AuthorRow>> {
        let sql = format!("SELECT {AUTHOR_COLUMNS} FROM authors WHERE name = $1");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The author whose token has this SHA-256, if it is not revoked.
    ///
    /// # Errors
    /// The database.
    pub async fn author_by_token_hash(&self, token_hash: &str) -> Result<Option<AuthorRow>> {
        let sql =
            format!("SELECT {AUTHOR_COLUMNS} FROM authors WHERE token_hash = $1 AND revoked_ms IS NULL");
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Every author's name, by key.
    ///
    /// # Errors
    /// The database.
    pub async fn author_names(&self) -> Result<std::collections::HashMap<AuthorId, String>> {
        let rows: Vec<(AuthorId, String)> = sqlx::query_as("SELECT id, name FROM authors")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().collect())
    }

    /// Revokes an author's token: their calls are refused from now on. Their bots
    /// stay as they are (the host disables them if it wants them out).
    ///
    /// # Errors
    /// No such author, or the database.
    pub async fn revoke_author(&self, name: &str) -> Result<AuthorRow> {
        let done = sqlx::query("UPDATE authors SET revoked_ms = $2 WHERE name = $1 AND revoked_ms IS NULL")
            .bind(name)
            .bind(now_ms())
            .execute(&self.pool)
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

    /// Every version of every bot of an author, by id.
    ///
    /// # Errors
    /// The database.
    pub async fn bots_of_author(&self, author: AuthorId) -> Result<Vec<BotRow>> {
        let sql = format!(
            "SELECT {} FROM bots WHERE author_id = $1 ORDER BY id",
            Self::BOT_COLUMNS
        );
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(author)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Stores an upload: its files (once, by hash), then for each game it plays
    /// a new version `building`: `NAME` (one game) or `NAME-GAME` (several),
    /// version 1 as that name, later ones `@N`. The newest version before it
    /// keeps playing until the new one passes its qualification. All or nothing.
    ///
    /// # Errors
    /// [`StoreError::Conflict`]: the name is another author's or the host's, or
    /// the author is at their cap of bots; or the database.
    pub async fn submit(&self, author: &AuthorRow, submission: &Submission) -> Result<Vec<BotRow>> {
        let m = &submission.manifest;
        let manifest_json = serde_json::to_string(m).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut tx = self.write_tx().await?;
        Self::put_artifact(&mut tx, &submission.artifact).await?;
        let mut names = Vec::new();
        for game in &m.games {
            let base = if m.games.len() == 1 {
                m.name.clone()
            } else {
                format!("{}-{game}", m.name)
            };
            let sql = format!(
                "SELECT {} FROM bots WHERE name = $1 OR name LIKE $2 ESCAPE '\\' ORDER BY version DESC LIMIT 1",
                Self::BOT_COLUMNS
            );
            let newest: Option<BotRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(&base)
                .bind(format!("{}@%", like_escaped(&base)))
                .fetch_optional(&mut *tx)
                .await?;
            let (name, version, previous) = match newest {
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
                Some(b) => (format!("{base}@{}", b.version + 1), b.version + 1, Some(b.id)),
                None => {
                    let owned: i64 =
                        sqlx::query("SELECT COUNT(*) FROM bots WHERE author_id = $1 AND previous_id IS NULL")
                            .bind(author.id)
                            .fetch_one(&mut *tx)
                            .await?
                            .try_get(0)?;
                    if owned >= author.max_bots {
                        return Err(StoreError::Conflict(format!(
                            "you have {owned} bots, the most this ladder gives you ({}): \
                             upload a new version of one of them instead (the same `name`)",
                            author.max_bots
                        )));
                    }
                    (base, 1, None)
                }
            };
            sqlx::query(
                "INSERT INTO bots (name, game, spec, env, created_ms, version, previous_id, status, status_reason,
                                   status_by, author_id, manifest, source_sha256, runtime)
                 VALUES ($1, $2, $3, '[]', $4, $5, $6, 'building', $7, 'server', $8, $9, $10, $11)",
            )
            .bind(&name)
            .bind(game)
            .bind(&m.run)
            .bind(now_ms())
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
            .execute(&mut *tx)
            .await?;
            names.push(name);
        }
        tx.commit().await?;
        let mut bots = Vec::with_capacity(names.len());
        for name in names {
            bots.push(
                self.bot(&name)
                    .await?
                    .ok_or_else(|| StoreError::NotFound(format!("bot {name:?} vanished")))?,
            );
        }
        Ok(bots)
    }
}

/// `text` matched literally by `LIKE ... ESCAPE '\\'`.
fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An uploaded version waiting for its build and check, as a worker leases it.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct PrepJob {
    pub id: BotId,
    pub name: String,
    pub game: String,
    /// The command that plays.
    pub spec: String,
    pub runtime: String,
    /// The manifest it came with (its `build`).
    #[sqlx(try_from = "JsonText<crate::submission::Manifest>")]
    pub manifest: crate::submission::Manifest,
    pub source_sha256: String,
}

/// How a worker's build and check of a version went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrepResult {
    /// Built (or nothing to build) and checked: it plays `artifact`.
    Passed {
        artifact: String,
        build_log: String,
        report: String,
    },
    /// The build failed, or its folder was refused.
    BuildFailed { build_log: String },
    /// Built, but its check failed.
    Rejected {
        artifact: Option<String>,
        build_log: String,
        report: String,
    },
}

impl Store {
    /// Leases the oldest version waiting for its build and check whose runtime
    /// is among `runtimes`, and whose lease (if any) ran out, to `worker` for
    /// `period_ms` under `lease`. Two servers may ask at once: the update that
    /// takes it says which one did.
    ///
    /// # Errors
    /// The database.
    pub async fn lease_prep(
        &self,
        worker: WorkerId,
        runtimes: &[String],
        lease: &str,
        period_ms: i64,
    ) -> Result<Option<PrepJob>> {
        if runtimes.is_empty() {
            return Ok(None);
        }
        for _ in 0..4 {
            let now = now_ms();
            let mut sql = Sql::new(
                "SELECT id FROM bots WHERE status = 'building' AND (prep_expires_ms IS NULL OR prep_expires_ms < ",
            );
            sql.bind(now).push(") AND runtime IN ");
            sql.list(runtimes.iter().cloned()).push(" ORDER BY id LIMIT 1");
            let Some(row) = sql.query()?.fetch_optional(&self.pool).await? else {
                return Ok(None);
            };
            let id: BotId = row.try_get(0)?;
            let taken = sqlx::query(
                "UPDATE bots SET prep_lease = $2, prep_expires_ms = $3, prepared_by = $4
                 WHERE id = $1 AND status = 'building' AND (prep_expires_ms IS NULL OR prep_expires_ms < $5)",
            )
            .bind(id)
            .bind(lease)
            .bind(now + period_ms)
            .bind(worker)
            .bind(now)
            .execute(&self.pool)
            .await?;
            if taken.rows_affected() == 1 {
                return Ok(sqlx::query_as(
                    "SELECT id, name, game, spec, runtime, manifest, source_sha256 FROM bots WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.pool)
                .await?);
            }
        }
        Ok(None)
    }

    /// Records how a leased build and check went, if `worker` still holds its
    /// lease (`None` if not: it ran out, or the version was superseded). A
    /// version that passed plays from now on, and the older versions of its bot
    /// are superseded (their games and ratings stay; their groups not yet
    /// leased are withdrawn).
    ///
    /// # Errors
    /// [`StoreError::Conflict`]: the artifact named is not stored, or a version
    /// without a build named another than its upload; or the database.
    pub async fn finish_prep(
        &self,
        worker: WorkerId,
        bot: BotId,
        lease: &str,
        result: &PrepResult,
    ) -> Result<Option<(BotRow, Vec<BotRow>)>> {
        let mut tx = self.write_tx().await?;
        let sql = format!(
            "SELECT {} FROM bots WHERE id = $1 AND status = 'building' AND prep_lease = $2 AND prepared_by = $3
             AND prep_expires_ms >= $4",
            Self::BOT_COLUMNS
        );
        let held: Option<BotRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(bot)
            .bind(lease)
            .bind(worker)
            .bind(now_ms())
            .fetch_optional(&mut *tx)
            .await?;
        let Some(held) = held else {
            return Ok(None);
        };
        let (source, build): (String, Option<String>) = {
            let row = sqlx::query("SELECT source_sha256, manifest FROM bots WHERE id = $1")
                .bind(bot)
                .fetch_one(&mut *tx)
                .await?;
            let manifest: JsonText<crate::submission::Manifest> = row.try_get(1)?;
            (row.try_get(0)?, manifest.0.build)
        };
        let artifact = match result {
            PrepResult::Passed { artifact, .. } => Some(artifact),
            PrepResult::Rejected { artifact, .. } => artifact.as_ref(),
            PrepResult::BuildFailed { .. } => None,
        };
        if let Some(artifact) = artifact {
            if build.is_none() && *artifact != source {
                return Err(StoreError::Conflict(format!(
                    "{} has no build: it plays its upload ({source}), not {artifact}",
                    held.name
                )));
            }
            let stored: i64 = sqlx::query("SELECT COUNT(*) FROM artifacts WHERE sha256 = $1")
                .bind(artifact)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
            if stored == 0 {
                return Err(StoreError::Conflict(format!(
                    "no artifact {artifact} is stored: upload the built folder first (UploadArtifact)"
                )));
            }
        }
        let (status, reason, build_log, report) = match result {
            PrepResult::Passed {
                build_log, report, ..
            } => (BotStatus::Active, "", build_log, report.as_str()),
            PrepResult::BuildFailed { build_log } => (
                BotStatus::BuildFailed,
                "its build failed: its log says why",
                build_log,
                "",
            ),
            PrepResult::Rejected {
                build_log, report, ..
            } => (
                BotStatus::Rejected,
                "it failed its check: the report says why",
                build_log,
                report.as_str(),
            ),
        };
        sqlx::query(
            "UPDATE bots SET status = $2, status_reason = $3, status_by = 'server', artifact_sha256 = $4,
             build_log = $5, check_report = $6, prep_lease = NULL, prep_expires_ms = NULL WHERE id = $1",
        )
        .bind(bot)
        .bind(status)
        .bind(reason)
        .bind(artifact)
        .bind(build_log)
        .bind(report)
        .execute(&mut *tx)
        .await?;
        let mut superseded = Vec::new();
        if status == BotStatus::Active {
            let base = held.name.split_once('@').map_or(held.name.as_str(), |(b, _)| b);
            let sql = format!(
                "SELECT {} FROM bots WHERE author_id = $1 AND id < $2 AND (name = $3 OR name LIKE $4 ESCAPE '\\')
                 AND status IN ('active', 'disabled', 'suspended', 'building')",
                Self::BOT_COLUMNS
            );
            let older: Vec<BotRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(held.author_id)
                .bind(bot)
                .bind(base)
                .bind(format!("{}@%", like_escaped(base)))
                .fetch_all(&mut *tx)
                .await?;
            for old in older {
                sqlx::query("UPDATE bots SET status = 'superseded', status_reason = $2, status_by = 'server' WHERE id = $1")
                    .bind(old.id)
                    .bind(format!("replaced by {}", held.name))
                    .execute(&mut *tx)
                    .await?;
                Self::withdraw_groups_of(&mut tx, old.id).await?;
                superseded.push(old);
            }
        }
        tx.commit().await?;
        let bot = self
            .bot(&held.name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {:?} vanished", held.name)))?;
        Ok(Some((bot, superseded)))
    }

    /// Stores an artifact a worker built (checked as an upload is, by the caller).
    ///
    /// # Errors
    /// The database.
    pub async fn store_artifact(&self, artifact: &crate::submission::Artifact) -> Result<()> {
        let mut tx = self.write_tx().await?;
        Self::put_artifact(&mut tx, artifact).await?;
        tx.commit().await?;
        Ok(())
    }
}
