//! Authors' calls: an upload received, checked off the executor and stored as
//! new versions; an author's own bots, and their status.

use super::auth::{new_token, token_hash};
use super::error::ServiceError;
use super::service::{LadderService, valid_name};
use crate::store::{AuthorRow, BotRow, BotStatus, StatusBy};
use crate::submission::Submission;
use std::time::Duration;

/// How long an upload may wait for its turn to be checked.
pub const UPLOAD_QUEUE_WAIT: Duration = Duration::from_secs(30);
/// How long an upload may take to arrive, whole: a 64 MiB archive at 0.25 MiB/s.
pub const UPLOAD_TIME: Duration = Duration::from_secs(256);

impl LadderService {
    /// Adds an author and makes their token.
    pub(super) async fn add_author(
        &self,
        name: &str,
        max_bots: u32,
    ) -> Result<(AuthorRow, String), ServiceError> {
        valid_name("author name", name)?;
        let max_bots = if max_bots == 0 {
            self.cfg.uploads.max_bots
        } else {
            max_bots
        };
        let token = new_token()?;
        let author = self
            .store
            .add_author(name, &token_hash(&token), i64::from(max_bots))
            .await?;
        tracing::info!(author = %name, max_bots, "author added");
        Ok((author, token))
    }

    /// Receives an upload (chunks of any size up to the packed limit), checks it
    /// and stores it. At most [`super::UploadConfig::at_once`] uploads are
    /// received and checked at once; each must arrive within [`UPLOAD_TIME`].
    pub(super) async fn submit<S>(
        &self,
        author: &AuthorRow,
        mut chunks: S,
    ) -> Result<(Vec<BotRow>, String), ServiceError>
    where
        S: futures_util::Stream<Item = Result<Vec<u8>, tonic::Status>> + Unpin,
    {
        use futures_util::StreamExt;
        let limits = self.cfg.uploads.limits;
        let _turn = tokio::time::timeout(UPLOAD_QUEUE_WAIT, self.uploads.acquire())
            .await
            .map_err(|_| {
                ServiceError::Unavailable(
                    "the server is checking other uploads: try again in a minute".into(),
                )
            })?
            .map_err(|_| ServiceError::Unavailable("the server is shutting down".into()))?;
        let receive = async {
            let mut bytes = Vec::new();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(|s| {
                    ServiceError::InvalidArgument(format!("the upload broke off: {}", s.message()))
                })?;
                if (bytes.len() + chunk.len()) as u64 > limits.packed_bytes {
                    return Err(ServiceError::InvalidArgument(format!(
                        "the archive is more than {} bytes; this ladder takes at most {} bytes packed",
                        limits.packed_bytes, limits.packed_bytes
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(bytes)
        };
        let bytes = tokio::time::timeout(UPLOAD_TIME, receive).await.map_err(|_| {
            ServiceError::InvalidArgument(format!(
                "the upload took longer than {} s to arrive",
                UPLOAD_TIME.as_secs()
            ))
        })??;
        let runtimes = self.cfg.uploads.runtimes.clone();
        let submission = tokio::task::spawn_blocking(move || Submission::check(&bytes, &limits, &runtimes))
            .await
            .map_err(|e| ServiceError::Internal(format!("checking an upload: {e}")))?
            .map_err(|e| ServiceError::InvalidArgument(e.to_string()))?;
        let bots = self
            .store
            .submit(author, &submission)
            .await
            .map_err(|e| match ServiceError::from(e) {
                ServiceError::AlreadyExists(m) => ServiceError::FailedPrecondition(m),
                other => other,
            })?;
        tracing::info!(
            author = %author.name,
            bots = ?bots.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            sha256 = %submission.artifact.sha256,
            bytes = submission.artifact.bytes.len(),
            "upload stored"
        );
        Ok((bots, submission.artifact.sha256))
    }

    /// Sets the status of one of the author's own bots: out of play, or back
    /// into play if the author or the server took it out (never the host).
    pub(super) async fn set_my_bot_status(
        &self,
        author: &AuthorRow,
        name: &str,
        status: BotStatus,
    ) -> Result<BotRow, ServiceError> {
        let bot = self
            .store
            .bot(name)
            .await?
            .filter(|b| b.author_id == Some(author.id))
            .ok_or_else(|| ServiceError::PermissionDenied(format!("{name:?} is not one of your bots")))?;
        let allowed = match status {
            BotStatus::Disabled => matches!(bot.status, BotStatus::Active | BotStatus::Suspended),
            BotStatus::Active => {
                bot.status == BotStatus::Suspended
                    || (bot.status == BotStatus::Disabled && bot.status_by == StatusBy::Author)
            }
            _ => false,
        };
        if !allowed {
            return Err(ServiceError::FailedPrecondition(format!(
                "{name:?} is {}{}: {}",
                bot.status,
                if bot.status_reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", bot.status_reason)
                },
                match status {
                    BotStatus::Active if bot.status == BotStatus::Disabled =>
                        "the host took it out, and only the host puts it back",
                    BotStatus::Active => "only a disabled or suspended bot can be enabled",
                    _ => "only an active or suspended bot can be disabled",
                }
            )));
        }
        let reason = match status {
            BotStatus::Active => "",
            _ => "disabled by its author",
        };
        let (bot, withdrawn) = self
            .store
            .set_bot_status_by(name, status, reason, StatusBy::Author)
            .await?;
        if withdrawn > 0 {
            self.scheduler.forget().await;
        }
        tracing::info!(bot = %bot.name, status = %bot.status, author = %author.name, "bot status set by its author");
        Ok(bot)
    }
}
