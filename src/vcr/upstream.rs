//! The upstream client: hyper-util over rustls (ring) with the system roots
//! plus `--upstream-ca`, connect and read timeouts, and a count of the TCP
//! connections it opened (replay must open none).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::error::Result;

/// An HTTP connector that counts every connection attempt it makes.
#[derive(Clone)]
pub struct CountingConnector {
    inner: HttpConnector,
    count: Arc<AtomicU64>,
}

impl tower_service::Service<Uri> for CountingConnector {
    type Response = <HttpConnector as tower_service::Service<Uri>>::Response;
    type Error = <HttpConnector as tower_service::Service<Uri>>::Error;
    type Future = <HttpConnector as tower_service::Service<Uri>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.inner.call(uri)
    }
}

/// The client that forwards recorded requests to the real provider.
#[derive(Clone)]
pub struct Upstream {
    client: Client<HttpsConnector<CountingConnector>, Full<Bytes>>,
    /// Host → base URL to connect to instead (`--upstream-override`); the
    /// cassette still records the host the client asked for.
    overrides: Arc<Vec<(String, Uri)>>,
    connections: Arc<AtomicU64>,
    read_timeout: Duration,
}

/// Timeouts for upstream calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP connect.
    pub connect: Duration,
    /// Waiting for response headers, and the longest gap between two body chunks.
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            // Reasoning models can think for minutes before the first byte.
            read: Duration::from_secs(600),
        }
    }
}

impl Upstream {
    /// A client trusting the system roots plus `extra_ca`.
    pub fn new(extra_ca: &[PathBuf], timeouts: Timeouts) -> Result<Self> {
        let mut tls = (*crate::tls::client_config(extra_ca)?).clone();
        // hyper-rustls sets ALPN itself from the enabled versions.
        tls.alpn_protocols.clear();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(timeouts.connect));
        let connections = Arc::new(AtomicU64::new(0));
        let counting = CountingConnector {
            inner: http,
            count: connections.clone(),
        };
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(counting);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        Ok(Upstream {
            client,
            overrides: Arc::new(Vec::new()),
            connections,
            read_timeout: timeouts.read,
        })
    }

    /// Connects to another address for some hosts: `api.openai.com` →
    /// `https://127.0.0.1:8443` records a test double or staging gateway as if it
    /// were the real provider. Keys are host or host:port as the client named them.
    pub fn with_overrides(
        mut self,
        overrides: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self> {
        let mut list = Vec::new();
        for (host, base) in overrides {
            let uri: Uri = base.parse().map_err(|e| {
                crate::Error::other(
                    format!("--upstream-override {host}={base}: not a URL: {e}"),
                    Some("e.g. --upstream-override api.openai.com=https://127.0.0.1:8443".into()),
                )
            })?;
            if uri.scheme().is_none() || uri.authority().is_none() {
                return Err(crate::Error::other(
                    format!("--upstream-override {host}={base}: needs a scheme and a host"),
                    Some("e.g. --upstream-override api.openai.com=https://127.0.0.1:8443".into()),
                ));
            }
            list.push((host.to_ascii_lowercase(), uri));
        }
        self.overrides = Arc::new(list);
        Ok(self)
    }

    /// The request with its URI pointed at an override target, when one applies.
    fn redirect(&self, mut req: Request<Full<Bytes>>) -> Request<Full<Bytes>> {
        let Some(authority) = req
            .uri()
            .authority()
            .map(|a| a.as_str().to_ascii_lowercase())
        else {
            return req;
        };
        let host = authority.split(':').next().unwrap_or_default().to_string();
        let target = self
            .overrides
            .iter()
            .find(|(key, _)| *key == authority || *key == host);
        if let Some((_, base)) = target {
            let mut parts = req.uri().clone().into_parts();
            parts.scheme = base.scheme().cloned();
            parts.authority = base.authority().cloned();
            if let Ok(uri) = Uri::from_parts(parts) {
                *req.uri_mut() = uri;
                req.headers_mut().remove(http::header::HOST);
            }
        }
        req
    }

    /// Connections opened so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// The longest wait for headers or between body chunks.
    pub fn read_timeout(&self) -> Duration {
        self.read_timeout
    }

    /// Sends a request and waits for the response headers (bounded by the read
    /// timeout). The error is a readable one-line cause chain.
    pub fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<Response<Incoming>, String>> + Send>> {
        let req = if self.overrides.is_empty() {
            req
        } else {
            self.redirect(req)
        };
        let fut = self.client.request(req);
        let timeout = self.read_timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(Ok(resp)) => Ok(resp),
                Ok(Err(e)) => Err(error_chain(&e)),
                Err(_) => Err(format!(
                    "upstream sent no response headers within {}s",
                    timeout.as_secs()
                )),
            }
        })
    }
}

/// `outer: inner: innermost`, skipping repeats, for one-line messages.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}
