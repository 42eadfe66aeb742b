//! A scripted fake LLM provider served over real HTTPS on loopback, speaking the
//! public wire formats of OpenAI (Chat Completions, Responses), Anthropic
//! Messages and Gemini. Used by the test suite and to record the demo agents'
//! cassettes; the script format is in `docs/fake-provider.md`.
//!
//! ```no_run
//! # async fn demo() -> agentci::Result<()> {
//! use agentci::fake::{FakeOptions, FakeProvider, Script};
//! let script = Script::parse("default: {text: hello}").expect("valid script");
//! let fake = FakeProvider::start(script, FakeOptions::default()).await?;
//! println!("{} trusts {}", fake.base_url(), fake.ca_pem());
//! fake.shutdown().await;
//! # Ok(()) }
//! ```

mod ca;
pub mod format;
pub mod request;
pub mod script;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

pub use format::{Rendered, RenderedBody};
pub use request::{Api, Delivery, RequestView};
pub use script::{
    ErrorReply, Reply, Rule, Script, Scripted, StopReason, ToolCallReply, UsageReply, When,
};

use crate::error::{Error, Result};

/// Requests larger than this are refused: the fake serves tests, not uploads.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// How the fake provider listens.
#[derive(Debug, Clone, Default)]
pub struct FakeOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Serve plain HTTP (h1, and h2 with prior knowledge) instead of HTTPS.
    pub plain_http: bool,
}

/// One request the fake provider received.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenRequest {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lower case (repeated headers joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The body as JSON; a string when it is not JSON; null when empty.
    pub body: Value,
}

struct Shared {
    scripted: Scripted,
    seen: Mutex<Vec<SeenRequest>>,
    count: AtomicU64,
}

/// A running fake provider. Dropping it stops it and closes its connections.
pub struct FakeProvider {
    addr: SocketAddr,
    base_url: String,
    ca_pem: String,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FakeProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeProvider")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl FakeProvider {
    /// Binds 127.0.0.1, generates a test CA (HTTPS) and starts serving `script`.
    pub async fn start(script: Script, options: FakeOptions) -> Result<FakeProvider> {
        let ca = ca::generate()?;
        let listener = TcpListener::bind(("127.0.0.1", options.port))
            .await
            .map_err(|e| {
                Error::Proxy(format!(
                    "fake provider: cannot listen on 127.0.0.1:{}: {e}",
                    options.port
                ))
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Proxy(format!("fake provider: no local address: {e}")))?;
        let shared = Arc::new(Shared {
            scripted: Scripted::new(script),
            seen: Mutex::new(Vec::new()),
            count: AtomicU64::new(0),
        });
        let tls = (!options.plain_http)
            .then(|| tokio_rustls::TlsAcceptor::from(ca.server_config.clone()));
        let scheme = if options.plain_http { "http" } else { "https" };
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, tls, shared.clone(), stopped));
        Ok(FakeProvider {
            addr,
            base_url: format!("{scheme}://{addr}"),
            ca_pem: ca.ca_pem,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// `https://127.0.0.1:PORT` (or `http://…`), without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The test CA certificate (PEM) that clients must trust for HTTPS.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Writes the CA certificate to `path` (for `--upstream-ca`, `SSL_CERT_FILE`…).
    pub fn write_ca_pem(&self, path: &std::path::Path) -> Result<()> {
        std::fs::write(path, &self.ca_pem).map_err(|e| Error::io(path, e))
    }

    /// How many requests have been received so far.
    pub fn request_count(&self) -> u64 {
        self.shared.count.load(Ordering::SeqCst)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.shared
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stops accepting, closes every connection and waits until that is done.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            // The task only ends by stopping; a join error would mean it panicked, already reported.
            let _ = task.await;
        }
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    // Connections live in this set: when the loop ends, dropping it aborts them all.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                // A failed accept (e.g. out of descriptors) affects one client; keep serving.
                let Ok((tcp, _)) = accepted else { continue };
                let _ = tcp.set_nodelay(true);
                let tls = tls.clone();
                let shared = shared.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(handle(&shared, req).await) }
                    });
                    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    // Connection errors (client gone, reset injected) end that connection only.
                    match tls {
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                            }
                        }
                        None => {
                            let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                        }
                    }
                });
            }
        }
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

/// A body fed by a task: each item is one frame; an `Err` makes hyper abort the
/// response (h1: the connection is closed without the final chunk; h2: RST_STREAM).
struct ChannelBody(tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<std::io::Result<http_body::Frame<Bytes>>>> {
        self.0
            .poll_recv(cx)
            .map(|item| item.map(|r| r.map(http_body::Frame::data)))
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn json_response(status: u16, value: &Value) -> Response<Body> {
    let mut response = Response::new(full(value.to_string()));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_else(|| "/".into());
    let mut headers = BTreeMap::new();
    for (name, value) in req.headers() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_string())
            .and_modify(|v: &mut String| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let bytes = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return json_response(
                400,
                &serde_json::json!({"error": {"message": format!("cannot read body: {e}")}}),
            );
        }
    };
    let body: Option<Value> = serde_json::from_slice(&bytes).ok();
    let seen_body = match &body {
        Some(v) => v.clone(),
        None if bytes.is_empty() => Value::Null,
        None => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
    };
    shared.count.fetch_add(1, Ordering::SeqCst);
    shared
        .seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(SeenRequest {
            method: method.clone(),
            path: path.clone(),
            headers,
            body: seen_body,
        });

    let Some((api, gemini_model, gemini_delivery)) = request::route(&path) else {
        return json_response(
            404,
            &serde_json::json!({"error": {"message": format!("the fake provider does not serve {method} {path}"),
                "type": "invalid_request_error", "param": null, "code": "unknown_url"}}),
        );
    };
    let Some(body) = body.filter(|_| method == "POST") else {
        let error = ErrorReply {
            status: 400,
            message: Some(format!("expected POST with a JSON body on {path}")),
            retry_after_ms: None,
        };
        return into_response(format::render_error(api, &error, "bad"), &Reply::default()).await;
    };
    let mut view = RequestView::parse(api, &body, gemini_model);
    let delivery = gemini_delivery.unwrap_or(if view.stream {
        Delivery::Sse
    } else {
        Delivery::Plain
    });
    view.stream = delivery != Delivery::Plain;
    let chosen = shared.scripted.choose(&view);
    let rendered = format::render(&chosen.reply, &view, delivery, chosen.rule, chosen.turn);
    into_response(rendered, &chosen.reply).await
}

/// Puts a rendered answer on the wire, honouring the reply's delays and injected reset.
async fn into_response(rendered: Rendered, reply: &Reply) -> Response<Body> {
    if reply.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(reply.delay_ms)).await;
    }
    let (content_type, pieces) = match rendered.body {
        RenderedBody::Json(value) => {
            let text = value.to_string();
            match reply.reset_after_events {
                // A plain body is cut half-way: headers and a prefix arrive, then the reset.
                Some(_) => {
                    let cut = text.len() / 2;
                    (
                        "application/json",
                        vec![text.get(..cut).unwrap_or("").to_string()],
                    )
                }
                None => ("application/json", vec![text]),
            }
        }
        RenderedBody::Sse(events) => ("text/event-stream; charset=utf-8", events),
        RenderedBody::JsonArray(parts) => ("application/json; charset=UTF-8", parts),
    };
    let streamed =
        !matches!(content_type, "application/json") || reply.reset_after_events.is_some();
    let body = if streamed {
        let (sender, receiver) = tokio::sync::mpsc::channel(4);
        let reset_after = reply.reset_after_events;
        let gap = Duration::from_millis(reply.event_delay_ms);
        tokio::spawn(async move {
            for (i, piece) in pieces.into_iter().enumerate() {
                if reset_after.is_some_and(|n| i >= n) {
                    break;
                }
                if i > 0 && !gap.is_zero() {
                    tokio::time::sleep(gap).await;
                }
                if sender.send(Ok(Bytes::from(piece))).await.is_err() {
                    return; // the client went away
                }
            }
            if reset_after.is_some() {
                let reset = std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "fake provider: injected reset",
                );
                let _ = sender.send(Err(reset)).await;
            }
        });
        ChannelBody(receiver).boxed()
    } else {
        full(pieces.concat())
    };
    let mut response = Response::new(body);
    *response.status_mut() = hyper::StatusCode::from_u16(rendered.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    if content_type.starts_with("text/event-stream") {
        headers.insert(
            hyper::header::CACHE_CONTROL,
            hyper::header::HeaderValue::from_static("no-cache"),
        );
    }
    for (name, value) in rendered.headers {
        if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    response
}
