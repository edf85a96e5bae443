//! What carries a node's bus links and registry connections: plain TCP, or (feature `tls`)
//! TLS over TCP with a cluster CA (`tls::TlsConfig`).
//!
//! A [`Transport`] is chosen once per node ([`NodeBuilder::transport`](crate::NodeBuilder::transport))
//! and per registry ([`spawn_registry_with`](crate::registry::spawn_registry_with)); every
//! connection the node dials or accepts (bus links and its registry connection) goes through
//! it. With TLS the TLS handshake completes before the connection is handed on, so the
//! in-band handshake of the core runs inside TLS, unchanged. A connection whose TLS handshake
//! fails never becomes a link (the dial counts as failed; an accepted one is dropped).

#[cfg(feature = "tls")]
pub mod tls;

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
};

use crate::net;

/// Plain TCP (the default) or TLS.
#[derive(Clone, Debug, Default)]
pub struct Transport {
    #[cfg(feature = "tls")]
    tls: Option<std::sync::Arc<tls::TlsConfig>>,
}

impl Transport {
    /// Plain TCP.
    #[must_use]
    pub fn plain() -> Transport {
        Transport::default()
    }

    /// TLS with `config` on every connection, dialled and accepted.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(config: tls::TlsConfig) -> Transport {
        Transport {
            tls: Some(std::sync::Arc::new(config)),
        }
    }

    /// Whether connections run TLS.
    #[must_use]
    pub fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        {
            self.tls.is_some()
        }
        #[cfg(not(feature = "tls"))]
        {
            false
        }
    }

    /// Dials `addr` ([`net::dial`]) and, with TLS, runs the client side of the TLS handshake
    /// within [`net::CONNECT_TIMEOUT`].
    pub(crate) async fn dial(&self, addr: &str) -> io::Result<Stream> {
        let stream = net::dial(addr).await?;
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let stream = tokio::time::timeout(net::CONNECT_TIMEOUT, tls.connect(addr, stream))
                .await
                .map_err(|_| {
                    io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out")
                })??;
            return Ok(Stream::Tls(Box::new(stream)));
        }
        Ok(Stream::Tcp(stream))
    }

    /// Completes an accepted connection: with TLS, the server side of the TLS handshake within
    /// [`net::CONNECT_TIMEOUT`] (the peer must present a certificate of the CA).
    pub(crate) async fn accept(&self, stream: TcpStream) -> io::Result<Stream> {
        let _ = stream.set_nodelay(true);
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let stream = tokio::time::timeout(net::CONNECT_TIMEOUT, tls.accept(stream))
                .await
                .map_err(|_| {
                    io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out")
                })??;
            return Ok(Stream::Tls(Box::new(stream)));
        }
        Ok(Stream::Tcp(stream))
    }
}

impl Transport {
    /// Who the peer on `stream` may be, as a node: `Ok(None)` when anyone may (plain TCP, or
    /// a certificate naming no node id while the TLS setup does not require one), `Ok(ids)`
    /// when its certificate names node ids (bind the link to them), `Err(reason)` when the
    /// link must be refused (a certificate with an invalid node id URI, or none while one is
    /// required, [`tls::TlsConfig::require_node_id`]).
    pub(crate) fn node_identity(
        &self,
        stream: &Stream,
    ) -> Result<Option<Vec<switchboard_core::ids::NodeId>>, String> {
        let ids = self.cert_node_ids(stream)?;
        #[cfg(feature = "tls")]
        if ids.is_none() && self.tls.as_ref().is_some_and(|t| t.requires_node_id()) {
            return Err(String::from(
                "the peer's certificate names no node id (urn:switchboard:node:<id>) and one \
                 is required (--tls-require-node-id)",
            ));
        }
        Ok(ids)
    }

    /// The node ids the peer's certificate on `stream` names (`None`: plain TCP, or a
    /// certificate naming none), whatever the policy; `Err` for a certificate with an
    /// invalid `urn:switchboard:node:` URI. A registry binds registrations to them.
    #[cfg_attr(
        not(feature = "tls"),
        expect(
            clippy::unused_self,
            clippy::unnecessary_wraps,
            reason = "no certificates without tls"
        )
    )]
    pub(crate) fn cert_node_ids(
        &self,
        stream: &Stream,
    ) -> Result<Option<Vec<switchboard_core::ids::NodeId>>, String> {
        match stream {
            Stream::Tcp(_) => Ok(None),
            #[cfg(feature = "tls")]
            Stream::Tls(tls) => {
                let ids = tls::peer_node_ids(tls)?;
                Ok(Some(ids).filter(|ids| !ids.is_empty()))
            }
        }
    }
}

/// A connected stream: TCP, or TLS over TCP.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
}

/// A boxed read half (registry connections).
pub(crate) type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
/// A boxed write half (registry connections).
pub(crate) type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

impl Stream {
    /// Splits into boxed halves (TCP's own halves; TLS through [`tokio::io::split`]).
    pub(crate) fn into_boxed_split(self) -> (BoxRead, BoxWrite) {
        match self {
            Stream::Tcp(stream) => {
                let (read, write) = stream.into_split();
                (Box::new(read), Box::new(write))
            }
            #[cfg(feature = "tls")]
            Stream::Tls(stream) => {
                let (read, write) = tokio::io::split(*stream);
                (Box::new(read), Box::new(write))
            }
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
