//! The gRPC front end of the service: `ladder.proto`'s calls, each read for its
//! caller's token, turned into the service's domain types, handed to
//! [`crate::app::LadderService`], and its answer (or its [`ServiceError`])
//! turned back. One conversion of types ([`convert`]) and one of errors
//! ([`status`]); no logic of the ladder's lives here.

mod convert;
mod require_token;
mod service;

pub use convert::status;
pub use require_token::RequireToken;
pub use service::{ARTIFACT_CHUNK, GrpcLadder};

use crate::app::{LadderService, ServiceError};
use proto::ladder::ladder_server::LadderServer;
use std::sync::Arc;

/// The gRPC service over `service`, behind its token check, taking messages
/// up to `max_message` bytes, gzip either way.
pub fn service(service: Arc<LadderService>, max_message: usize) -> RequireToken<LadderServer<GrpcLadder>> {
    let api = LadderServer::new(GrpcLadder::new(service.clone()))
        .max_decoding_message_size(max_message)
        .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
        .send_compressed(tonic::codec::CompressionEncoding::Gzip);
    RequireToken::new(api, service)
}

/// A service error as a gRPC status (see [`status`]).
impl From<ServiceError> for tonic::Status {
    fn from(e: ServiceError) -> tonic::Status {
        status(e)
    }
}
