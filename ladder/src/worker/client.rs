//! The worker's gRPC client: a connection to the server, the token on every
//! call, gzip for reports, and which failures are the server's verdict.

use super::*;

/// Adds the token to every call.
#[derive(Clone)]
pub struct Auth(MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

/// A client that sends the token with every call.
pub type Client = LadderClient<InterceptedService<Channel, Auth>>;

/// Whether a failed call failed on the server's certificate.
pub(super) fn certificate_refused(why: &str) -> bool {
    why.contains("invalid peer certificate")
        || why.contains("UnknownIssuer")
        || why.contains("certificate verify")
}

/// Connects to a ladder server with a token: `https://` with TLS, the server's
/// certificate checked against `ca_pem` when given (a host's own authority) or the
/// usual public roots; reports go gzip-compressed ([`compressed`]).
///
/// # Errors
/// A malformed URL, token or certificate, or a server that cannot be reached.
pub async fn connect(server: &str, token: &str, ca_pem: Option<&[u8]>) -> Result<Client, WorkerError> {
    client_on(channel(server, ca_pem).await?, token)
}

/// A connection to the ladder server at `server`, which clients of several
/// tokens may share ([`client_on`]): HTTP/2 carries their calls side by side.
///
/// # Errors
/// A malformed URL or certificate, or a server that cannot be reached.
pub async fn channel(server: &str, ca_pem: Option<&[u8]>) -> Result<Channel, WorkerError> {
    let unreachable = |e: &dyn std::fmt::Display| WorkerError::Server(server.to_owned(), e.to_string());
    let mut endpoint = tonic::transport::Endpoint::from_shared(server.to_owned())
        .map_err(|e| unreachable(&e))?
        .connect_timeout(Duration::from_secs(5));
    if server.starts_with("https://") {
        let mut tls = tonic::transport::ClientTlsConfig::new().with_webpki_roots();
        if let Some(pem) = ca_pem {
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| unreachable(&e))?;
    } else if ca_pem.is_some() {
        return Err(WorkerError::Server(
            server.to_owned(),
            "a CA certificate was given for a plain http:// server: use https://".into(),
        ));
    }
    endpoint.connect().await.map_err(|e| {
        let why = referee::cli::error_chain(&e);
        if certificate_refused(&why) {
            WorkerError::Certificate(why)
        } else {
            WorkerError::Server(server.to_owned(), why)
        }
    })
}

/// A client calling as `token` over `channel`. Its calls travel as they are:
/// leases, renewals and replies are small, and compressing them cost a
/// busy server more than it saved (gzip on every call: 7,300 games/s at 10,000
/// workers on the bench's two cores; plain calls: 9,100). Reports go compressed
/// ([`compressed`]).
///
/// # Errors
/// A token a header cannot carry.
pub fn client_on(channel: Channel, token: &str) -> Result<Client, WorkerError> {
    let value: MetadataValue<_> = format!("Bearer {token}")
        .parse()
        .map_err(|_| WorkerError::Token("it has characters a header cannot carry".into()))?;
    Ok(LadderClient::with_interceptor(channel, Auth(value)).max_decoding_message_size(64 << 20))
}

/// `client` for a report: its records (a group's moves and bots' logs, a
/// hundred kilobytes and more) travel gzip-compressed.
pub fn compressed(client: &Client) -> Client {
    client
        .clone()
        .send_compressed(tonic::codec::CompressionEncoding::Gzip)
}

/// Codes by which the server judged a report, as opposed to failing to take it.
pub(super) fn is_verdict(code: tonic::Code) -> bool {
    use tonic::Code::*;
    matches!(
        code,
        InvalidArgument | FailedPrecondition | NotFound | AlreadyExists | Unauthenticated | PermissionDenied
    )
}
