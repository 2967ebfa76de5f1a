//! What the service's own logic answers when it refuses or fails. Each front
//! end turns it into its own kind of answer at its edge (a gRPC status in
//! `crate::grpc`, a page in `crate::web`), and there a failure of the server's
//! own — the store, a task — is logged for the host and said to the caller
//! without its text ([`ServiceError::public_message`]), which may name tables,
//! queries or a record's contents: a caller is told that the server failed,
//! never how.

use crate::store::StoreError;

/// A refusal or failure of the service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// The request is wrong as written.
    #[error("{0}")]
    InvalidArgument(String),
    /// Something named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A name already taken.
    #[error("{0}")]
    AlreadyExists(String),
    /// No token, or one no one has (or that was revoked).
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this (another author's bot).
    #[error("{0}")]
    PermissionDenied(String),
    /// The request came too late or in the wrong state (a lease that ran out).
    #[error("{0}")]
    FailedPrecondition(String),
    /// Ask again later.
    #[error("{0}")]
    Unavailable(String),
    /// The server's own failure: its text is for the host's log only.
    #[error("{0}")]
    Internal(String),
}

/// What a caller reads instead of the text of an internal failure.
pub const INTERNAL_MESSAGE: &str = "the server failed to answer this (its log says why)";

impl ServiceError {
    /// The same refusal, its text prefixed with `what` (`group 7: ...`).
    #[must_use]
    pub fn about(self, what: impl std::fmt::Display) -> ServiceError {
        let prefix = |text: String| format!("{what}: {text}");
        match self {
            ServiceError::InvalidArgument(t) => ServiceError::InvalidArgument(prefix(t)),
            ServiceError::NotFound(t) => ServiceError::NotFound(prefix(t)),
            ServiceError::Unauthenticated(t) => ServiceError::Unauthenticated(prefix(t)),
            ServiceError::AlreadyExists(t) => ServiceError::AlreadyExists(prefix(t)),
            ServiceError::PermissionDenied(t) => ServiceError::PermissionDenied(prefix(t)),
            ServiceError::FailedPrecondition(t) => ServiceError::FailedPrecondition(prefix(t)),
            ServiceError::Unavailable(t) => ServiceError::Unavailable(prefix(t)),
            ServiceError::Internal(t) => ServiceError::Internal(prefix(t)),
        }
    }

    /// The text the caller reads (an internal failure's is logged, not sent).
    pub fn public_message(&self) -> String {
        match self {
            ServiceError::Internal(_) => INTERNAL_MESSAGE.to_owned(),
            other => other.to_string(),
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> ServiceError {
        match e {
            StoreError::Conflict(m) => ServiceError::AlreadyExists(m),
            StoreError::NotFound(m) => ServiceError::NotFound(m),
            other => ServiceError::Internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database failure is said without its words; refusals keep theirs.
    #[test]
    fn an_internal_failure_is_said_without_its_text() {
        let db = ServiceError::from(StoreError::Corrupt(
            "games row 7: column fault_kinds of table games".into(),
        ));
        assert_eq!(db.public_message(), INTERNAL_MESSAGE);
        let refused = ServiceError::InvalidArgument("record 1: does not parse".into()).about("group 3");
        assert_eq!(refused.public_message(), "group 3: record 1: does not parse");
        let taken = ServiceError::from(StoreError::Conflict("a worker named \"w\" exists".into()));
        assert!(matches!(&taken, ServiceError::AlreadyExists(m) if m.contains("\"w\"")));
    }
}
