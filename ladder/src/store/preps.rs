//! Builds and checks of authors' uploaded versions: the lease a worker takes
//! to build and check one, its renewal and return, and the verdict that makes
//! a version active, `build-failed` or `rejected` (one transaction each).

use super::authors::like_escaped;
use super::*;

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
    /// The worker could not build and check it for reasons of its own (its
    /// disk, its permissions, the artifact it fetched): the version is not
    /// judged, and goes to another worker at once, until [`MAX_PREP_TRIES`].
    WorkerTrouble { reason: String },
    /// Built, but its check failed.
    Rejected {
        artifact: Option<String>,
        build_log: String,
        report: String,
    },
}

/// What a finished build and check says of a version: its status and why,
/// what is kept of it, and the artifact it plays.
struct PrepVerdict<'a> {
    status: BotStatus,
    reason: String,
    build_log: &'a str,
    report: &'a str,
    artifact: Option<&'a str>,
}

impl<'a> PrepVerdict<'a> {
    /// The verdict of `result`, or (the worker's own trouble: no verdict) its reason.
    fn of(result: &'a PrepResult) -> std::result::Result<PrepVerdict<'a>, &'a str> {
        Ok(match result {
            PrepResult::WorkerTrouble { reason } => return Err(reason),
            PrepResult::Passed {
                artifact,
                build_log,
                report,
            } => PrepVerdict {
                status: BotStatus::Active,
                reason: String::new(),
                build_log,
                report,
                artifact: Some(artifact),
            },
            PrepResult::BuildFailed { build_log } => PrepVerdict {
                status: BotStatus::BuildFailed,
                reason: format!("its build failed: {}", first_failing_line(build_log, false)),
                build_log,
                report: "",
                artifact: None,
            },
            PrepResult::Rejected {
                artifact,
                build_log,
                report,
            } => PrepVerdict {
                status: BotStatus::Rejected,
                reason: format!("it failed {}", first_failing_line(report, true)),
                build_log,
                report,
                artifact: artifact.as_deref(),
            },
        })
    }
}

/// A version whose builds and checks this many leases did not finish (a
/// worker's own trouble, or a lease that ran out), or that two workers did not
/// finish, ends `build-failed`.
pub const MAX_PREP_TRIES: i64 = 3;

impl Preps<'_> {
    /// Records a build and check of `bot` that `worker` did not finish, and ends
    /// the version `build-failed` once two workers, or [`MAX_PREP_TRIES`]
    /// leases, did not finish it. Whether it was given up.
    async fn record_prep_try(
        self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        bot: BotId,
        worker: Option<WorkerId>,
        reason: &str,
    ) -> Result<bool> {
        if let Some(worker) = worker {
            sqlx::query("INSERT INTO prep_tries (bot_id, worker_id, reason, at_ms) VALUES ($1, $2, $3, $4)")
                .bind(bot)
                .bind(worker)
                .bind(reason)
                .bind(self.store.now_ms())
                .execute(&mut **tx)
                .await?;
        }
        let row = sqlx::query("SELECT COUNT(*), COUNT(DISTINCT worker_id) FROM prep_tries WHERE bot_id = $1")
            .bind(bot)
            .fetch_one(&mut **tx)
            .await?;
        let (tries, workers): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        if tries < MAX_PREP_TRIES && workers < 2 {
            return Ok(false);
        }
        let reasons: Vec<String> =
            sqlx::query("SELECT reason FROM prep_tries WHERE bot_id = $1 ORDER BY at_ms")
                .bind(bot)
                .fetch_all(&mut **tx)
                .await?
                .iter()
                .map(|r| r.try_get::<String, _>(0))
                .collect::<std::result::Result<_, _>>()?;
        let log = format!(
            "No worker could build and check this version: {tries} tries on {workers} worker(s) ended \
             without a result.\n{}\n",
            reasons
                .iter()
                .map(|r| format!("- {r}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        sqlx::query(sql_text!(
            "UPDATE bots SET status = $2, status_reason = $3, status_by = ",
            StatusBy::Server,
            ", build_log = $4,
             prep_lease = NULL, prep_expires_ms = NULL WHERE id = $1 AND status = ",
            BotStatus::Building
        ))
        .bind(bot)
        .bind(BotStatus::BuildFailed)
        .bind("no worker could build and check it: its log says what each try met")
        .bind(log)
        .execute(&mut **tx)
        .await?;
        Ok(true)
    }

    /// Leases a version waiting for its build and check whose runtime is among
    /// `runtimes`, and whose lease (if any) ran out, to `worker` for `period_ms`
    /// under `lease` (renewed by [`Preps::renew_prep`], never past `life_ms`
    /// from now): round-robin across authors (the author whose last build
    /// was leased longest ago, then their oldest version), so one author's
    /// queue never delays another's first build. Two servers may ask at once:
    /// the update that takes it says which one did.
    ///
    /// # Errors
    /// The database.
    pub async fn lease_prep(
        self,
        worker: WorkerId,
        runtimes: &[String],
        lease: &str,
        period_ms: i64,
        life_ms: i64,
    ) -> Result<Option<PrepJob>> {
        if runtimes.is_empty() {
            return Ok(None);
        }
        for _ in 0..4 {
            let now = self.store.now_ms();
            let mut sql = Sql::new(sql_text!(
                "SELECT b.id, b.prep_expires_ms FROM bots b LEFT JOIN authors a ON a.id = b.author_id
                 WHERE b.status = ",
                BotStatus::Building,
                " AND (b.prep_expires_ms IS NULL OR b.prep_expires_ms < "
            ));
            sql.bind(now).push(") AND b.runtime IN ");
            sql.list(runtimes.iter().cloned())
                .push(" ORDER BY COALESCE(a.last_build_ms, 0), b.id LIMIT 1");
            let Some(row) = sql.query()?.fetch_optional(&self.store.pool).await? else {
                return Ok(None);
            };
            let id: BotId = row.try_get(0)?;
            let expired: Option<i64> = row.try_get(1)?;
            if expired.is_some() {
                // A lease ran out: a try that did not finish, counted once (the
                // update that clears it says which server counts it).
                let mut tx = self.store.write_tx().await?;
                let cleared = sqlx::query(sql_text!(
                    "UPDATE bots SET prep_lease = NULL, prep_expires_ms = NULL
                     WHERE id = $1 AND status = ",
                    BotStatus::Building,
                    " AND prep_expires_ms = $2"
                ))
                .bind(id)
                .bind(expired)
                .execute(&mut *tx)
                .await?;
                if cleared.rows_affected() == 1 {
                    let by: Option<WorkerId> = sqlx::query("SELECT prepared_by FROM bots WHERE id = $1")
                        .bind(id)
                        .fetch_one(&mut *tx)
                        .await?
                        .try_get(0)?;
                    let given_up = self.record_prep_try(
                        &mut tx,
                        id,
                        by,
                        "its lease ran out before the worker reported (the worker stopped, or took too long)",
                    )
                    .await?;
                    tx.commit().await?;
                    if given_up {
                        continue;
                    }
                }
            }
            let taken = sqlx::query(
                sql_text!("UPDATE bots SET prep_lease = $2, prep_expires_ms = $3, prepared_by = $4, prep_deadline_ms = $6
                 WHERE id = $1 AND status = ", BotStatus::Building, " AND (prep_expires_ms IS NULL OR prep_expires_ms < $5)"),
            )
            .bind(id)
            .bind(lease)
            .bind(now + period_ms.min(life_ms))
            .bind(worker)
            .bind(now)
            .bind(now + life_ms)
            .execute(&self.store.pool)
            .await?;
            if taken.rows_affected() == 1 {
                // The author's turn is taken: their next version waits for
                // every other author's.
                sqlx::query(
                    "UPDATE authors SET last_build_ms = $2 WHERE id = (SELECT author_id FROM bots WHERE id = $1)",
                )
                .bind(id)
                .bind(now)
                .execute(&self.store.pool)
                .await?;
                return Ok(sqlx::query_as(
                    "SELECT id, name, game, spec, runtime, manifest, source_sha256 FROM bots WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&self.store.pool)
                .await?);
            }
        }
        Ok(None)
    }

    /// Renews `worker`'s unexpired lease `lease` of `bot`'s build and check to
    /// `expires_ms`, never past its last moment ([`Preps::lease_prep`]); the
    /// moment it now runs out, or `None` if it is not held (it ran out, went to
    /// another worker, or the version is built).
    ///
    /// # Errors
    /// The database.
    pub async fn renew_prep(
        self,
        worker: WorkerId,
        bot: BotId,
        lease: &str,
        now: i64,
        expires_ms: i64,
    ) -> Result<Option<i64>> {
        let row = sqlx::query(
            sql_text!("UPDATE bots SET prep_expires_ms = CASE WHEN prep_deadline_ms IS NOT NULL AND prep_deadline_ms < $4
             THEN prep_deadline_ms ELSE $4 END
             WHERE id = $1 AND status = ", BotStatus::Building, " AND prep_lease = $2 AND prepared_by = $3 AND prep_expires_ms >= $5
             RETURNING prep_expires_ms"),
        )
        .bind(bot)
        .bind(lease)
        .bind(worker)
        .bind(expires_ms)
        .bind(now)
        .fetch_optional(&self.store.pool)
        .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    /// Gives back `worker`'s lease `lease` of `bot`'s build and check (it is
    /// stopping): the version waits for the next worker at once, and is not
    /// charged a try. Whether the lease was held.
    ///
    /// # Errors
    /// The database.
    pub async fn return_prep(self, worker: WorkerId, bot: BotId, lease: &str) -> Result<bool> {
        let done = sqlx::query(sql_text!(
            "UPDATE bots SET prep_lease = NULL, prep_expires_ms = NULL, prep_deadline_ms = NULL
             WHERE id = $1 AND status = ",
            BotStatus::Building,
            " AND prep_lease = $2 AND prepared_by = $3"
        ))
        .bind(bot)
        .bind(lease)
        .bind(worker)
        .execute(&self.store.pool)
        .await?;
        Ok(done.rows_affected() == 1)
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
        self,
        worker: WorkerId,
        bot: BotId,
        lease: &str,
        result: &PrepResult,
    ) -> Result<Option<(BotRow, Vec<BotRow>)>> {
        let mut tx = self.store.write_tx().await?;
        let Some(held) = self.prep_held(&mut tx, worker, bot, lease).await? else {
            return Ok(None);
        };
        if let Some(author) = held.author_id {
            self.store.lock_author(&mut tx, author).await?;
        }
        let verdict = match PrepVerdict::of(result) {
            Ok(verdict) => verdict,
            Err(reason) => {
                // Not judged: the lease is given back at once, the try counted.
                sqlx::query("UPDATE bots SET prep_lease = NULL, prep_expires_ms = NULL WHERE id = $1")
                    .bind(bot)
                    .execute(&mut *tx)
                    .await?;
                self.record_prep_try(
                    &mut tx,
                    bot,
                    Some(worker),
                    &format!("a worker's own trouble: {reason}"),
                )
                .await?;
                let sql = format!("SELECT {} FROM bots WHERE id = $1", Bots::BOT_COLUMNS);
                let now: BotRow = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(bot)
                    .fetch_one(&mut *tx)
                    .await?;
                tx.commit().await?;
                return Ok(Some((now, Vec::new())));
            }
        };
        if let Some(artifact) = verdict.artifact {
            Self::check_prep_artifact(&mut tx, &held, artifact).await?;
        }
        // A version that passes while the host holds an older one out (disabled
        // after this one was uploaded) is held out too, by the host: the host's
        // word passes to it when it supersedes the older ones.
        let held_out = if verdict.status == BotStatus::Active {
            Self::held_out_by_host(&mut tx, &held).await?
        } else {
            None
        };
        let (status, by, reason) = match &held_out {
            Some(why) if why.is_empty() => (
                BotStatus::Disabled,
                StatusBy::Admin,
                "disabled by the host".to_owned(),
            ),
            Some(why) => (BotStatus::Disabled, StatusBy::Admin, why.clone()),
            None => (verdict.status, StatusBy::Server, verdict.reason),
        };
        sqlx::query(
            "UPDATE bots SET status = $2, status_reason = $3, status_by = $7, artifact_sha256 = $4,
             build_log = $5, check_report = $6, prep_lease = NULL, prep_expires_ms = NULL WHERE id = $1",
        )
        .bind(bot)
        .bind(status)
        .bind(&reason)
        .bind(verdict.artifact)
        .bind(verdict.build_log)
        .bind(verdict.report)
        .bind(by)
        .execute(&mut *tx)
        .await?;
        let superseded = if status == BotStatus::Active || held_out.is_some() {
            Self::supersede_older(&mut tx, &held).await?
        } else {
            Vec::new()
        };
        tx.commit().await?;
        let bot = self
            .store
            .bots()
            .bot(&held.name)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bot {:?} vanished", held.name)))?;
        Ok(Some((bot, superseded)))
    }

    /// Version `bot`, if `worker` still holds its build and check under `lease`.
    async fn prep_held(
        self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        worker: WorkerId,
        bot: BotId,
        lease: &str,
    ) -> Result<Option<BotRow>> {
        let sql = format!(
            "SELECT {} FROM bots WHERE id = $1 AND status = {} AND prep_lease = $2 AND prepared_by = $3
             AND prep_expires_ms >= $4",
            Bots::BOT_COLUMNS,
            BotStatus::Building.quoted()
        );
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(bot)
            .bind(lease)
            .bind(worker)
            .bind(self.store.now_ms())
            .fetch_optional(&mut **tx)
            .await?)
    }

    /// That `artifact` may be what version `held` plays: stored, and (a version
    /// without a build) its upload itself.
    async fn check_prep_artifact(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        held: &BotRow,
        artifact: &str,
    ) -> Result<()> {
        let row = sqlx::query("SELECT source_sha256, manifest FROM bots WHERE id = $1")
            .bind(held.id)
            .fetch_one(&mut **tx)
            .await?;
        let source: String = row.try_get(0)?;
        let manifest: JsonText<crate::submission::Manifest> = row.try_get(1)?;
        if manifest.0.build.is_none() && artifact != source {
            return Err(StoreError::Conflict(format!(
                "{} has no build: it plays its upload ({source}), not {artifact}",
                held.name
            )));
        }
        let stored: i64 = sqlx::query("SELECT COUNT(*) FROM artifacts WHERE sha256 = $1")
            .bind(artifact)
            .fetch_one(&mut **tx)
            .await?
            .try_get(0)?;
        if stored == 0 {
            return Err(StoreError::Conflict(format!(
                "no artifact {artifact} is stored: upload the built folder first (UploadArtifact)"
            )));
        }
        Ok(())
    }

    /// The host's reason, if it holds out an older version of `held`'s name
    /// (disabled by the admin).
    async fn held_out_by_host(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        held: &BotRow,
    ) -> Result<Option<String>> {
        let base = held.name.split_once('@').map_or(held.name.as_str(), |(b, _)| b);
        Ok(sqlx::query(sql_text!(
            "SELECT status_reason FROM bots WHERE author_id = $1 AND id < $2
             AND (name = $3 OR name LIKE $4 ESCAPE '\\') AND status = ",
            BotStatus::Disabled,
            " AND status_by = ",
            StatusBy::Admin,
            "
             ORDER BY id DESC LIMIT 1"
        ))
        .bind(held.author_id)
        .bind(held.id)
        .bind(base)
        .bind(format!("{}@%", like_escaped(base)))
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| r.try_get::<String, _>(0))
        .transpose()?)
    }

    /// Supersedes the older versions of `held`'s name still in play (or
    /// building, or held out), withdrawing their unplayed groups; them.
    async fn supersede_older(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        held: &BotRow,
    ) -> Result<Vec<BotRow>> {
        let base = held.name.split_once('@').map_or(held.name.as_str(), |(b, _)| b);
        let sql = format!(
            "SELECT {} FROM bots WHERE author_id = $1 AND id < $2 AND (name = $3 OR name LIKE $4 ESCAPE '\\')
             AND status IN ({}, {}, {}, {})",
            Bots::BOT_COLUMNS,
            BotStatus::Active.quoted(),
            BotStatus::Disabled.quoted(),
            BotStatus::Suspended.quoted(),
            BotStatus::Building.quoted()
        );
        let older: Vec<BotRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(held.author_id)
            .bind(held.id)
            .bind(base)
            .bind(format!("{}@%", like_escaped(base)))
            .fetch_all(&mut **tx)
            .await?;
        for old in &older {
            sqlx::query(sql_text!(
                "UPDATE bots SET status = ",
                BotStatus::Superseded,
                ", status_reason = $2, status_by = ",
                StatusBy::Server,
                " WHERE id = $1"
            ))
            .bind(old.id)
            .bind(format!("replaced by {}", held.name))
            .execute(&mut **tx)
            .await?;
            Bots::withdraw_groups_of(tx, old.id).await?;
        }
        Ok(older)
    }

    /// Stores an artifact a worker built (checked as an upload is, by the caller).
    ///
    /// # Errors
    /// The database.
    pub async fn store_artifact(self, artifact: &crate::submission::Artifact) -> Result<()> {
        let mut tx = self.store.write_tx().await?;
        self.store
            .artifacts()
            .put_artifact(&mut tx, artifact, self.store.artifact_bytes_here)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// The line of a build's log (`report`: a check's report) that says first what
/// went wrong, for a version's status: the first `FAIL` of a report, the first
/// line of a log that names an error, else the log's last words; cut to a line's
/// length, pointing at the whole.
pub(crate) fn first_failing_line(text: &str, report: bool) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let found = if report {
        lines.iter().find(|l| l.starts_with("FAIL"))
    } else {
        lines
            .iter()
            .find(|l| !l.starts_with("$ ") && l.to_ascii_lowercase().contains("error"))
            .or_else(|| {
                lines
                    .iter()
                    .rev()
                    .find(|l| !l.starts_with('[') && !l.starts_with("$ "))
            })
            .or_else(|| lines.last())
    };
    let Some(line) = found else {
        return if report {
            "its check: the report says why"
        } else {
            "its log says why"
        }
        .to_owned();
    };
    const MOST: usize = 200;
    // A report's line is `FAIL <check> <what>`: said as a sentence.
    let mut line = match line.strip_prefix("FAIL").map(str::trim_start) {
        Some(rest) if report => match rest.split_once(char::is_whitespace) {
            Some((check, what)) => format!("its {check} check: {}", what.trim_start()),
            None => format!("its {rest} check"),
        },
        _ => line.to_string(),
    };
    if line.chars().count() > MOST {
        line = line.chars().take(MOST).collect::<String>() + "…";
    }
    format!("{line} (the {} says more)", if report { "report" } else { "log" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{LeaseAsk, NewCompetition};
    use crate::submission::{ArchiveLimits, Submission, all_runtimes, pack_folder};

    fn upload(name: &str, build: Option<&str>, extra: &str) -> Submission {
        let dir = tempfile::tempdir().unwrap();
        let build = build.map(|b| format!("build = \"{b}\"\n")).unwrap_or_default();
        std::fs::write(
            dir.path().join("astragal.toml"),
            format!("name = \"{name}\"\ngames = [\"ur\"]\nruntime = \"python3\"\nrun = \"python3 bot.py\"\n{build}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("bot.py"), extra).unwrap();
        Submission::check(
            &pack_folder(dir.path()).unwrap(),
            &ArchiveLimits::default(),
            &all_runtimes(),
        )
        .unwrap()
    }

    /// The host's disable holds: no new version of a bot the host disabled is
    /// taken until the host enables it; an author's own disable does not stop
    /// their upload.
    #[tokio::test]
    async fn an_upload_does_not_undo_the_hosts_disable() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let w1 = store.workers().add_worker("w1", "h1").await.unwrap();
        let alice = store.authors().add_author("alice", "ha", 3).await.unwrap();
        let py = vec!["python3".to_owned()];
        let v1 = upload("lucky", None, "v1");
        let bot = store
            .authors()
            .submit(&alice, &v1, &UploadQuota::UNLIMITED)
            .await
            .unwrap()
            .remove(0);
        store
            .preps()
            .lease_prep(w1.id, &py, "l1", 60_000, 60_000)
            .await
            .unwrap()
            .unwrap();
        let passed = PrepResult::Passed {
            artifact: v1.artifact.sha256.clone(),
            build_log: String::new(),
            report: "ok".into(),
        };
        store
            .preps()
            .finish_prep(w1.id, bot.id, "l1", &passed)
            .await
            .unwrap()
            .unwrap();
        store
            .bots()
            .set_bot_status("lucky", BotStatus::Disabled, "cheating")
            .await
            .unwrap();
        for again in ["v1", "v2"] {
            let e = store
                .authors()
                .submit(&alice, &upload("lucky", None, again), &UploadQuota::UNLIMITED)
                .await
                .unwrap_err();
            assert!(
                e.to_string().contains("the host disabled lucky (cheating)"),
                "{e}"
            );
        }
        assert_eq!(
            store.bots().bot("lucky").await.unwrap().unwrap().status,
            BotStatus::Disabled
        );
        assert!(
            store.bots().bot("lucky@2").await.unwrap().is_none(),
            "a version was stored"
        );
        // Enabled by the host, the author uploads again; disabled by the author
        // themself, too.
        store
            .bots()
            .set_bot_status("lucky", BotStatus::Active, "")
            .await
            .unwrap();
        store
            .authors()
            .submit(&alice, &upload("lucky", None, "v2"), &UploadQuota::UNLIMITED)
            .await
            .unwrap();
        store
            .bots()
            .set_bot_status_by("lucky", BotStatus::Disabled, "", StatusBy::Author)
            .await
            .unwrap();
        store
            .authors()
            .submit(&alice, &upload("lucky", None, "v3"), &UploadQuota::UNLIMITED)
            .await
            .unwrap();
    }

    /// A version uploaded before the host disabled the bot, and passing after,
    /// stays out of play by the host's word ("disabled by the host"), and the
    /// host's disable passes to it: no later upload is taken until the host
    /// enables it. Before, it superseded the disabled version and played.
    #[tokio::test]
    async fn a_version_that_passes_after_the_hosts_disable_stays_out() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let w1 = store.workers().add_worker("w1", "h1").await.unwrap();
        let alice = store.authors().add_author("alice", "ha", 3).await.unwrap();
        let any = &UploadQuota::UNLIMITED;
        let pass = |store: Store, id: BotId, sha: String, lease: &'static str| async move {
            let py = ["python3".to_owned()];
            store
                .preps()
                .lease_prep(w1.id, &py, lease, 60_000, 60_000)
                .await
                .unwrap()
                .unwrap();
            let passed = PrepResult::Passed {
                artifact: sha,
                build_log: String::new(),
                report: "ok".into(),
            };
            store
                .preps()
                .finish_prep(w1.id, id, lease, &passed)
                .await
                .unwrap()
                .unwrap()
        };
        let v1 = upload("lucky", None, "v1");
        let b1 = store.authors().submit(&alice, &v1, any).await.unwrap().remove(0);
        pass(store.clone(), b1.id, v1.artifact.sha256.clone(), "l1").await;
        // v2 is uploaded; then the host disables the bot; then v2 passes.
        let v2 = upload("lucky", None, "v2");
        let b2 = store.authors().submit(&alice, &v2, any).await.unwrap().remove(0);
        store
            .bots()
            .set_bot_status("lucky", BotStatus::Disabled, "")
            .await
            .unwrap();
        let (b2, superseded) = pass(store.clone(), b2.id, v2.artifact.sha256.clone(), "l2").await;
        assert_eq!(
            (b2.status, b2.status_by, b2.status_reason.as_str()),
            (BotStatus::Disabled, StatusBy::Admin, "disabled by the host")
        );
        assert_eq!(superseded.len(), 1);
        let e = store
            .authors()
            .submit(&alice, &upload("lucky", None, "v3"), any)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("the host disabled lucky@2"), "{e}");
        // Enabled by the host, it plays, and uploads are taken again.
        let (b2, _) = store
            .bots()
            .set_bot_status("lucky@2", BotStatus::Active, "")
            .await
            .unwrap();
        assert_eq!(b2.status, BotStatus::Active);
        store
            .authors()
            .submit(&alice, &upload("lucky", None, "v3"), any)
            .await
            .unwrap();
    }

    /// A version no worker finishes (its own trouble, or a lease that ran out)
    /// ends `build-failed` after two workers or three leases: before, a version
    /// every worker refused to unpack was leased again every 15 minutes for ever.
    #[tokio::test]
    async fn a_version_no_worker_finishes_ends_build_failed_and_is_leased_no_more() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let w1 = store.workers().add_worker("w1", "h1").await.unwrap();
        let w2 = store.workers().add_worker("w2", "h2").await.unwrap();
        let alice = store.authors().add_author("alice", "ha", 3).await.unwrap();
        let py = vec!["python3".to_owned()];
        let trouble = |reason: &str| PrepResult::WorkerTrouble {
            reason: reason.into(),
        };

        // One worker: a lease that ran out, its own trouble, a lease that ran out.
        let one = store
            .authors()
            .submit(&alice, &upload("one", Some("make"), "1"), &UploadQuota::UNLIMITED)
            .await
            .unwrap()
            .remove(0);
        store
            .preps()
            .lease_prep(w1.id, &py, "a1", -1, 60_000)
            .await
            .unwrap()
            .unwrap();
        store
            .preps()
            .lease_prep(w1.id, &py, "a2", 60_000, 60_000)
            .await
            .unwrap()
            .unwrap();
        let (row, _) = store
            .preps()
            .finish_prep(w1.id, one.id, "a2", &trouble("no room left on /tmp"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            row.status,
            BotStatus::Building,
            "one try of the worker's is not a verdict"
        );
        // Given back at once: leased again without waiting for the lease's end.
        store
            .preps()
            .lease_prep(w1.id, &py, "a3", -1, 60_000)
            .await
            .unwrap()
            .unwrap();
        assert!(
            store
                .preps()
                .lease_prep(w1.id, &py, "a4", 60_000, 60_000)
                .await
                .unwrap()
                .is_none()
        );
        let one = store.bots().bot("one").await.unwrap().unwrap();
        assert_eq!(one.status, BotStatus::BuildFailed);
        let log = store.authors().bot_logs(one.id).await.unwrap().build_log;
        assert!(
            log.contains("3 tries on 1 worker")
                && log.contains("no room left")
                && log.contains("lease ran out"),
            "{log}"
        );

        // Two workers that could not: given up at the second.
        let two = store
            .authors()
            .submit(&alice, &upload("two", Some("make"), "2"), &UploadQuota::UNLIMITED)
            .await
            .unwrap()
            .remove(0);
        store
            .preps()
            .lease_prep(w1.id, &py, "b1", 60_000, 60_000)
            .await
            .unwrap()
            .unwrap();
        store
            .preps()
            .finish_prep(w1.id, two.id, "b1", &trouble("x"))
            .await
            .unwrap()
            .unwrap();
        store
            .preps()
            .lease_prep(w2.id, &py, "b2", 60_000, 60_000)
            .await
            .unwrap()
            .unwrap();
        let (row, _) = store
            .preps()
            .finish_prep(w2.id, two.id, "b2", &trouble("y"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.status, BotStatus::BuildFailed);
        assert!(
            store
                .preps()
                .lease_prep(w1.id, &py, "b3", 60_000, 60_000)
                .await
                .unwrap()
                .is_none()
        );
    }

    /// A build is leased like a group (to one worker, of a runtime it offers,
    /// again once its lease ran out), judged once, and a version that passes
    /// supersedes the older ones; a group with an uploaded bot goes only to a
    /// worker that offers its runtime.
    #[tokio::test]
    async fn a_version_is_built_once_judged_once_and_played_only_where_its_runtime_is() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let w1 = store.workers().add_worker("w1", "h1").await.unwrap();
        let w2 = store.workers().add_worker("w2", "h2").await.unwrap();
        let alice = store.authors().add_author("alice", "ha", 3).await.unwrap();
        let v1 = upload("lucky", None, "v1");
        let bot = store
            .authors()
            .submit(&alice, &v1, &UploadQuota::UNLIMITED)
            .await
            .unwrap()
            .remove(0);
        assert_eq!(
            (bot.status, bot.artifact_sha256.as_deref()),
            (BotStatus::Building, None)
        );
        let py = vec!["python3".to_owned()];

        // Only a worker that offers python3, and one at a time.
        assert!(
            store
                .preps()
                .lease_prep(w1.id, &["node".into()], "l0", 60_000, 60_000)
                .await
                .unwrap()
                .is_none()
        );
        let job = store
            .preps()
            .lease_prep(w1.id, &py, "l1", 60_000, 60_000)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (job.id, job.source_sha256.as_str()),
            (bot.id, v1.artifact.sha256.as_str())
        );
        assert!(
            store
                .preps()
                .lease_prep(w2.id, &py, "l2", 60_000, 60_000)
                .await
                .unwrap()
                .is_none()
        );
        // A version without a build plays its upload, nothing else; the other
        // worker, or another lease, cannot answer for it.
        let passed = |artifact: &str| PrepResult::Passed {
            artifact: artifact.into(),
            build_log: String::new(),
            report: "ok".into(),
        };
        let other = "0".repeat(64);
        assert!(matches!(
            store
                .preps()
                .finish_prep(w1.id, bot.id, "l1", &passed(&other))
                .await,
            Err(StoreError::Conflict(_))
        ));
        assert!(
            store
                .preps()
                .finish_prep(w2.id, bot.id, "l1", &passed(&v1.artifact.sha256))
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .preps()
                .finish_prep(w1.id, bot.id, "l2", &passed(&v1.artifact.sha256))
                .await
                .unwrap()
                .is_none()
        );
        let (done, superseded) = store
            .preps()
            .finish_prep(w1.id, bot.id, "l1", &passed(&v1.artifact.sha256))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (done.status, done.artifact_sha256.as_deref()),
            (BotStatus::Active, Some(v1.artifact.sha256.as_str()))
        );
        assert!(superseded.is_empty());
        // Judged once.
        assert!(
            store
                .preps()
                .finish_prep(w1.id, bot.id, "l1", &passed(&v1.artifact.sha256))
                .await
                .unwrap()
                .is_none()
        );

        // A lease that ran out goes to the next worker.
        let v2 = upload("lucky", Some("make"), "v2");
        let bot2 = store
            .authors()
            .submit(&alice, &v2, &UploadQuota::UNLIMITED)
            .await
            .unwrap()
            .remove(0);
        assert_eq!(bot2.name, "lucky@2");
        store
            .preps()
            .lease_prep(w1.id, &py, "l3", -1, 60_000)
            .await
            .unwrap()
            .unwrap();
        let job = store
            .preps()
            .lease_prep(w2.id, &py, "l4", 60_000, 60_000)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(job.id, bot2.id);
        assert!(
            store
                .preps()
                .finish_prep(
                    w1.id,
                    bot2.id,
                    "l3",
                    &PrepResult::BuildFailed {
                        build_log: "x".into()
                    }
                )
                .await
                .unwrap()
                .is_none()
        );
        // Built: it plays its built folder (stored first), and the first version goes.
        let built = upload("lucky", Some("make"), "v2 built").artifact;
        let mut tx = store.write_tx().await.unwrap();
        store
            .artifacts()
            .put_artifact(&mut tx, &built, true)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let (done, superseded) = store
            .preps()
            .finish_prep(w2.id, bot2.id, "l4", &passed(&built.sha256))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.status, BotStatus::Active);
        assert_eq!(
            superseded.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            ["lucky"]
        );
        assert_eq!(
            store.bots().bot("lucky").await.unwrap().unwrap().status,
            BotStatus::Superseded
        );

        // Its groups go only to workers that offer python3.
        let host = store
            .bots()
            .register_bot("rnd", "ur", "builtin:random", &[])
            .await
            .unwrap();
        let c = store
            .competitions()
            .create_competition(&NewCompetition::two_seat_ur("c"))
            .await
            .unwrap();
        store
            .groups()
            .schedule_groups(&c, &[(0, vec![done.id, host.id])])
            .await
            .unwrap();
        let now = store.now_ms();
        let none = LeaseAsk::new("w1", "t1");
        assert!(
            store
                .groups()
                .lease_many(&none, now, now + 60_000, 4, 8)
                .await
                .unwrap()
                .is_empty()
        );
        let node = ["node".to_owned()];
        let node_only = LeaseAsk {
            runtimes: &node,
            ..LeaseAsk::new("w1", "t2")
        };
        assert!(
            store
                .groups()
                .lease_many(&node_only, now, now + 60_000, 4, 8)
                .await
                .unwrap()
                .is_empty()
        );
        let with_py = LeaseAsk {
            runtimes: &py,
            ..LeaseAsk::new("w2", "t3")
        };
        assert_eq!(
            store
                .groups()
                .lease_many(&with_py, now, now + 60_000, 4, 8)
                .await
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn a_failed_versions_status_quotes_its_first_failing_line() {
        let log = "$ c++ -o bot bot.cpp\nbot.cpp: In function 'int main()':\nbot.cpp:3:5: error: 'x' was not declared in this scope\n[exit status 1]\n";
        assert_eq!(
            first_failing_line(log, false),
            "bot.cpp:3:5: error: 'x' was not declared in this scope (the log says more)"
        );
        let quiet = "$ ./build.sh\nout of room\n[killed after 600 s]\n";
        assert_eq!(
            first_failing_line(quiet, false),
            "out of room (the log says more)"
        );
        let report = "check-bot on ur\nok   handshake  fine\nFAIL games      seat 0: move 3: illegal move \"x\"\n1/2 checks passed on ur: FAILED\n";
        assert_eq!(
            first_failing_line(report, true),
            "its games check: seat 0: move 3: illegal move \"x\" (the report says more)"
        );
        assert_eq!(first_failing_line("", true), "its check: the report says why");
    }
}
