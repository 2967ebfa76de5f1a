//! Connections from outside, bounded. A public server that keeps every
//! connection someone opens, for as long as it stays silent, runs out of
//! descriptors (the red team held 1,024 with idle and half-sent connections, and
//! gRPC calls timed out). So each listener takes at most [`ConnLimits::max`]
//! connections at once (the next wait in the kernel's backlog), and a connection
//! is closed when its first bytes do not come within `first_bytes`, when it then
//! sends nothing for `idle`, or when it is older than `lifetime`.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// How a listener bounds its connections ([`Bounded`] keeps to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections open at once.
    pub max: usize,
    /// The first bytes of a connection (a request's head, HTTP/2's preface) come
    /// within this long.
    pub first_bytes: Duration,
    /// Then it sends something at least this often.
    pub idle: Duration,
    /// And it is closed when this old (`None`: never).
    pub lifetime: Option<Duration>,
}

impl ConnLimits {
    /// The web pages: browsers open a few short connections each.
    pub const WEB: ConnLimits = ConnLimits {
        max: 512,
        first_bytes: Duration::from_secs(10),
        idle: Duration::from_secs(30),
        lifetime: Some(Duration::from_secs(300)),
    };

    /// The gRPC API: workers keep one connection for hours and call at least
    /// every few seconds (tonic's client reconnects when one is closed).
    pub const GRPC: ConnLimits = ConnLimits {
        max: 4096,
        first_bytes: Duration::from_secs(10),
        idle: Duration::from_secs(300),
        lifetime: None,
    };
}

/// A listener that takes connections within [`ConnLimits`].
#[derive(Debug)]
pub struct Bounded {
    listener: TcpListener,
    permits: Arc<Semaphore>,
    limits: ConnLimits,
}

impl Bounded {
    /// Bounds `listener`'s connections by `limits`.
    pub fn new(listener: TcpListener, limits: ConnLimits) -> Bounded {
        Bounded {
            listener,
            permits: Arc::new(Semaphore::new(limits.max)),
            limits,
        }
    }

    /// The next connection, once fewer than `max` are open.
    ///
    /// # Errors
    /// The listener's accept (the caller waits a moment and takes the next one).
    pub async fn next(&mut self) -> io::Result<Guarded> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| io::Error::other("the listener is closed"))?;
        let (stream, addr) = self.listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok(Guarded::new(stream, addr, permit, self.limits))
    }

    /// Serves the connections as a stream (for tonic), accepting on a task of
    /// its own.
    pub fn into_stream(mut self) -> tokio_stream::wrappers::ReceiverStream<io::Result<Guarded>> {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            loop {
                let next = self.next().await;
                if let Err(e) = &next {
                    // Out of descriptors, say: not the end of the server.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                if tx.send(next).await.is_err() {
                    return;
                }
            }
        });
        tokio_stream::wrappers::ReceiverStream::new(rx)
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        loop {
            match self.next().await {
                Ok(conn) => {
                    let addr = conn.addr;
                    return (conn, addr);
                }
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// A connection that ends when it stays silent too long or grows too old, and
/// frees its place when dropped.
#[derive(Debug)]
pub struct Guarded {
    stream: TcpStream,
    addr: SocketAddr,
    _permit: OwnedSemaphorePermit,
    timer: Pin<Box<Sleep>>,
    idle: Duration,
    ends: Option<Instant>,
}

impl Guarded {
    fn new(stream: TcpStream, addr: SocketAddr, permit: OwnedSemaphorePermit, limits: ConnLimits) -> Guarded {
        let now = Instant::now();
        let ends = limits.lifetime.map(|l| now + l);
        let first = now + limits.first_bytes;
        Guarded {
            stream,
            addr,
            _permit: permit,
            timer: Box::pin(tokio::time::sleep_until(ends.map_or(first, |e| first.min(e)))),
            idle: limits.idle,
            ends,
        }
    }

    /// Something came: the connection may stay silent for `idle` again.
    fn heard(&mut self) {
        let next = Instant::now() + self.idle;
        self.timer.as_mut().reset(self.ends.map_or(next, |e| next.min(e)));
    }

    /// Whether its time is up (registering for the wake-up when not).
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.timer.as_mut().poll(cx).is_ready()
    }
}

fn timed_out() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "the connection was silent too long or is too old",
    )
}

impl AsyncRead for Guarded {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.heard();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if this.expired(cx) => Poll::Ready(Err(timed_out())),
            other => other,
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            // A peer that stops reading stalls the write: bounded the same way.
            Poll::Pending if this.expired(cx) => Poll::Ready(Err(timed_out())),
            other => other,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The address a web request came from (the connection's peer: behind a
/// reverse proxy, the proxy's), for the pages that slow by address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Bounded>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, Bounded>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

impl tonic::transport::server::Connected for Guarded {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}
