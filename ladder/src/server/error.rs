//! What the service's own logic answers when it refuses or fails. It is turned
//! into a gRPC status only at the edge (`grpc.rs`), and there a failure of the
//! server's own — the store, a task — is logged for the host and said to the
//! caller without its text, which may name tables, queries or a record's
//! contents: a worker is told that the server failed, never how.

use crate::store::StoreError;
use tonic::{Code, Status};

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
            ServiceError::AlreadyExists(t) => ServiceError::AlreadyExists(prefix(t)),
            ServiceError::PermissionDenied(t) => ServiceError::PermissionDenied(prefix(t)),
            ServiceError::FailedPrecondition(t) => ServiceError::FailedPrecondition(prefix(t)),
            ServiceError::Unavailable(t) => ServiceError::Unavailable(prefix(t)),
            ServiceError::Internal(t) => ServiceError::Internal(prefix(t)),
        }
    }

    /// The gRPC code it is sent as.
    pub fn code(&self) -> Code {
        match self {
            ServiceError::InvalidArgument(_) => Code::InvalidArgument,
            ServiceError::NotFound(_) => Code::NotFound,
            ServiceError::AlreadyExists(_) => Code::AlreadyExists,
            ServiceError::PermissionDenied(_) => Code::PermissionDenied,
            ServiceError::FailedPrecondition(_) => Code::FailedPrecondition,
            ServiceError::Unavailable(_) => Code::Unavailable,
            ServiceError::Internal(_) => Code::Internal,
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

impl From<ServiceError> for Status {
    fn from(e: ServiceError) -> Status {
        if let ServiceError::Internal(text) = &e {
            tracing::error!("a call failed: {text}");
        }
        Status::new(e.code(), e.public_message())
    }
}

/// A store failure as the caller is told it.
pub fn status_of(e: StoreError) -> Status {
    ServiceError::from(e).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database failure reaches a worker as "the server failed", never as the
    /// database's words; refusals keep theirs.
    #[test]
    fn an_internal_failure_is_said_without_its_text() {
        let db = StoreError::Corrupt("games row 7: column fault_kinds of table games".into());
        let status = status_of(db);
        assert_eq!(status.code(), Code::Internal);
        assert_eq!(status.message(), INTERNAL_MESSAGE);
        assert!(!status.message().contains("games"));
        let refused =
            Status::from(ServiceError::InvalidArgument("record 1: does not parse".into()).about("group 3"));
        assert_eq!(refused.code(), Code::InvalidArgument);
        assert_eq!(refused.message(), "group 3: record 1: does not parse");
        let taken = status_of(StoreError::Conflict("a worker named \"w\" exists".into()));
        assert_eq!(taken.code(), Code::AlreadyExists);
        assert!(taken.message().contains("\"w\""));
    }
}
