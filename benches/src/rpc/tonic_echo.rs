//! The tonic side: an `Echo` server on loopback and calls to it over one `Channel`.

use std::net::SocketAddr;

use bytes::Bytes;
use tokio::{net::TcpListener, task::JoinHandle};
use tonic::{
    Request, Response, Status,
    transport::{Channel, Server, server::TcpIncoming},
};

use super::echo_proto::{
    EchoMessage,
    echo_client::EchoClient,
    echo_server::{Echo, EchoServer},
};
use crate::transport::BenchError;

/// The echo service: answers with the request's payload.
#[derive(Debug, Default)]
struct EchoService;

#[tonic::async_trait]
impl Echo for EchoService {
    async fn echo(&self, request: Request<EchoMessage>) -> Result<Response<EchoMessage>, Status> {
        Ok(Response::new(request.into_inner()))
    }
}

/// A running tonic echo server; aborted on drop.
#[derive(Debug)]
pub struct TonicServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl TonicServer {
    /// Starts the server on a free loopback port (TCP_NODELAY on, as for ours).
    ///
    /// # Errors
    ///
    /// The bind failed.
    pub async fn start() -> Result<TonicServer, BenchError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| BenchError::io("bind the tonic server", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| BenchError::io("the tonic server's address", e))?;
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        let task = tokio::spawn(async move {
            let _ = Server::builder()
                .add_service(EchoServer::new(EchoService))
                .serve_with_incoming(incoming)
                .await;
        });
        Ok(TonicServer { addr, task })
    }

    /// A client on one new connection (HTTP/2, TCP_NODELAY), connected.
    ///
    /// # Errors
    ///
    /// The connection failed.
    pub async fn client(&self) -> Result<TonicClient, BenchError> {
        let channel = Channel::from_shared(format!("http://{}", self.addr))
            .map_err(|e| BenchError::Task(format!("tonic endpoint: {e}")))?
            .tcp_nodelay(true)
            .connect()
            .await
            .map_err(|e| BenchError::Task(format!("tonic connect: {e}")))?;
        Ok(TonicClient {
            client: EchoClient::new(channel),
        })
    }
}

impl Drop for TonicServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A client of the echo server (clones share the connection).
#[derive(Clone, Debug)]
pub struct TonicClient {
    client: EchoClient<Channel>,
}

impl TonicClient {
    /// One echo call; `Err(label)` unless the reply is `payload` byte for byte.
    pub async fn echo(&self, payload: Bytes) -> Result<(), String> {
        let mut client = self.client.clone();
        let request = EchoMessage {
            payload: payload.clone(),
        };
        match client.echo(request).await {
            Ok(reply) if reply.get_ref().payload == payload => Ok(()),
            Ok(_) => Err("tonic: wrong reply bytes".to_owned()),
            Err(status) => Err(format!("tonic: {}", status.code())),
        }
    }
}
