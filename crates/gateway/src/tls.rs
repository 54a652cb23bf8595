//! HTTPS: a rustls listener `axum::serve` takes like a TCP one, and the rule that plain HTTP is
//! served on loopback only.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request};
use axum::middleware;
use axum::serve::IncomingStream;
use axum::Router;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A server configuration from a PEM certificate chain and a PEM private key.
pub fn server_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<ServerConfig>> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| anyhow::anyhow!("{}: no PEM certificate chain: {e}", cert.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "{}: no certificate in the file",
        cert.display()
    );
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| anyhow::anyhow!("{}: no PEM private key: {e}", key.display()))?;
    // Two crypto providers are linked into the workspace; name the one to use.
    let mut config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Refuses plain HTTP anywhere but loopback: tokens and enrollment would cross the network in
/// the clear.
pub fn ensure_plain_http_allowed(addr: SocketAddr) -> anyhow::Result<()> {
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "refusing to serve plain HTTP on {addr}, which is not a loopback address: \
         pass --tls-cert and --tls-key (PEM), or bind 127.0.0.1 or ::1"
    );
    Ok(())
}

/// Accepts TCP connections and hands over those that completed a TLS handshake. Handshakes run
/// in their own tasks, so a slow client holds up nobody.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    acceptor: JoinHandle<()>,
}

impl TlsListener {
    pub fn new(listener: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let tls = TlsAcceptor::from(config);
        let (sender, ready) = mpsc::channel(64);
        let acceptor = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, as axum's listener does.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                let (tls, sender) = (tls.clone(), sender.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = sender.send((stream, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            ready,
            local,
            acceptor,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The acceptor only stops when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// A TLS connection's peer. The HTTP API reads a peer as `ConnectInfo<SocketAddr>`, which axum
/// gives for plain TCP; [`serve`] gives it for TLS too.
#[derive(Clone, Copy)]
struct TlsPeer(SocketAddr);

impl Connected<IncomingStream<'_, TlsListener>> for TlsPeer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> TlsPeer {
        TlsPeer(*stream.remote_addr())
    }
}

/// Serves `app` over `listener` until `stop`, each request carrying its peer's address as a plain
/// TCP request does.
pub async fn serve(
    listener: TlsListener,
    app: Router,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app.layer(middleware::map_request(|mut request: Request| async move {
        if let Some(ConnectInfo(TlsPeer(peer))) = request.extensions().get().copied() {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        request
    }));
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<TlsPeer>(),
    )
    .with_graceful_shutdown(stop)
    .await
}
