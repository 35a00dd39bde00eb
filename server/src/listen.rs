//! The accept loop: connection caps and transport timeouts around the axum
//! application (axum's own `serve` has neither).
//!
//! - At most `max_connections` connections are served at once, and at most
//!   `max_connections_per_ip` from one peer address (trusted proxies are
//!   exempt from the second); a connection over either cap is closed as
//!   soon as it is accepted, so stalled sockets cannot pile up.
//! - HTTP/1: a client has `header_timeout` to send a request's headers,
//!   counted from when the server starts waiting for them, so the same limit
//!   closes a half-sent request line and an idle keep-alive connection.
//!   HTTP/2: pings every 20 s, and a peer that does not answer one in 10 s
//!   is dropped; at most 64 concurrent streams per connection.
//! - Body and whole-request timeouts are layers of the router (see
//!   `router::router`), since they are per request.
//!
//! Shutdown: stop accepting, ask every connection to finish its in-flight
//! requests (graceful), and return when all have closed.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt as _;

/// The transport limits of [`serve`].
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time to send a request's headers; also the HTTP/1 idle limit.
    pub header_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// Connections per peer address.
    pub max_connections_per_ip: usize,
    /// Peers exempt from the per-address cap (reverse proxies).
    pub trusted: Vec<IpAddr>,
}

/// Open connections, in all and by peer address.
#[derive(Debug, Default)]
struct Counts {
    total: usize,
    by_ip: HashMap<IpAddr, usize>,
}

/// A connection's place under the caps, given back when dropped.
struct Slot {
    counts: Arc<Mutex<Counts>>,
    ip: IpAddr,
}

impl Slot {
    fn take(counts: &Arc<Mutex<Counts>>, ip: IpAddr, limits: &Limits) -> Option<Slot> {
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        let mine = c.by_ip.get(&ip).copied().unwrap_or(0);
        if c.total >= limits.max_connections
            || (mine >= limits.max_connections_per_ip && !limits.trusted.contains(&ip))
        {
            return None;
        }
        c.total += 1;
        *c.by_ip.entry(ip).or_default() += 1;
        Some(Slot {
            counts: counts.clone(),
            ip,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                // The map holds only addresses with open connections.
                c.by_ip.remove(&self.ip);
            }
        }
    }
}

/// Serves `app` on `listener` under `limits` until `shutdown` resolves,
/// then drains the open connections gracefully.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let counts = Arc::new(Mutex::new(Counts::default()));
    // Sender dropped or set: connections shut down gracefully.
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a receiver clone; `closed()` resolves
    // when the last one is gone.
    let (done_tx, done_rx) = watch::channel(());
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(slot) = Slot::take(&counts, peer.ip(), &limits) else {
            tracing::debug!(%peer, "connection cap reached: closed");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = app
            .clone()
            .map_request(move |req: hyper::Request<Incoming>| {
                let mut req = req.map(Body::new);
                req.extensions_mut().insert(ConnectInfo(peer));
                req
            });
        let header_timeout = limits.header_timeout;
        let mut stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            builder
                .http2()
                .timer(TokioTimer::new())
                .keep_alive_interval(Duration::from_secs(20))
                .keep_alive_timeout(Duration::from_secs(10))
                .max_concurrent_streams(64);
            let conn = builder.serve_connection_with_upgrades(
                TokioIo::new(stream),
                TowerToHyperService::new(service),
            );
            tokio::pin!(conn);
            let mut stopping = false;
            loop {
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::trace!(error = %e, "connection ended with an error");
                        }
                        break;
                    }
                    r = stop.changed(), if !stopping => {
                        let _ = r;
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(slot);
            drop(done);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(done_rx);
    done_tx.closed().await;
    Ok(())
}

/// The listener's limits from the configuration.
pub fn limits(config: &crate::config::ServerConfig) -> Limits {
    Limits {
        header_timeout: Duration::from_secs(config.header_timeout_secs),
        max_connections: config.max_connections,
        max_connections_per_ip: config.max_connections_per_ip,
        trusted: config.trusted_proxies.clone(),
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_enforce_both_caps_and_are_returned_on_drop() {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let limits = Limits {
            header_timeout: Duration::from_secs(1),
            max_connections: 3,
            max_connections_per_ip: 2,
            trusted: vec!["10.0.0.9".parse().unwrap()],
        };
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let s1 = Slot::take(&counts, a, &limits).unwrap();
        let s2 = Slot::take(&counts, a, &limits).unwrap();
        assert!(Slot::take(&counts, a, &limits).is_none(), "per-address cap");
        let s3 = Slot::take(&counts, b, &limits).unwrap();
        assert!(Slot::take(&counts, b, &limits).is_none(), "total cap");
        drop(s1);
        let s4 = Slot::take(&counts, a, &limits).unwrap();
        drop((s2, s3, s4));
        let c = counts.lock().unwrap();
        assert_eq!(c.total, 0);
        assert!(c.by_ip.is_empty(), "no entries for closed addresses");
    }
}
