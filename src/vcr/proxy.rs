//! The VCR proxy: a forward proxy (absolute-form HTTP and CONNECT with TLS
//! interception) plus plain-HTTP base-URL routes, on 127.0.0.1 only. It records
//! exchanges into a cassette or replays them from one without any network.
//!
//! ```no_run
//! # async fn demo() -> agentci::Result<()> {
//! use agentci::vcr::proxy::{Mode, Proxy, ProxyOptions};
//! let proxy = Proxy::start(ProxyOptions::new("cassettes/a/case.jsonl".into(), Mode::Replay)).await?;
//! let env = proxy.client_env(); // give these to the agent process
//! // … run the agent …
//! let report = proxy.finish(None).await?;
//! assert!(report.misses.is_empty());
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use super::body::{body_from_bytes, decode_content_encoding};
use super::ca::{CertificateAuthority, ca_dir, home_dir};
use super::cassette::{Body, Cassette, CassetteEnd, CassetteMeta, Exchange, FORMAT_VERSION};
use super::matching::{ReplayIndex, match_key};
use super::recorder::{BoxError, ExchangeSink, PendingExchange, Recorder, TeeBody, millis};
use super::redact::Redactor;
use super::replay::ReplayBody;
use super::routes::RouteTable;
use super::upstream::{Timeouts, Upstream};
use crate::error::{Error, Location, Result};

pub use super::replay::Pace;

/// Whether the proxy may reach the network at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Forward to the real upstream and record (subject to the record mode).
    Record,
    /// Serve from the cassette only; never open a connection.
    Replay,
}

/// How recording treats an existing cassette, as in vcrpy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordMode {
    /// Record when the cassette is missing, otherwise replay only.
    Once,
    /// Replay what matches, record what does not and append it.
    // vcrpy's spelling, as the cassette's `_meta` writes it; the kebab-case form works too.
    #[value(name = "new_episodes", alias = "new-episodes")]
    NewEpisodes,
    /// Re-record everything, replacing the cassette.
    #[default]
    All,
    /// Replay only.
    None,
}

impl RecordMode {
    /// The name written in the cassette's `_meta.record_mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordMode::Once => "once",
            RecordMode::NewEpisodes => "new_episodes",
            RecordMode::All => "all",
            RecordMode::None => "none",
        }
    }
}

/// Everything a proxy needs; [`ProxyOptions::new`] fills the defaults.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// The cassette file to replay from and/or write.
    pub cassette: PathBuf,
    /// Record or replay.
    pub mode: Mode,
    /// How recording treats an existing cassette (ignored in replay mode).
    pub record_mode: RecordMode,
    /// Replay speed.
    pub pace: Pace,
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Extra CA certificates (PEM) trusted for upstream connections.
    pub upstream_ca: Vec<PathBuf>,
    /// Extra base-URL routes (name → upstream URL), from the spec's `proxy.routes`.
    pub routes: BTreeMap<String, String>,
    /// JSON body fields replaced by `REDACTED` on disk.
    pub redact_body_fields: Vec<String>,
    /// JSON body fields left out of the match key.
    pub ignore_body_fields: Vec<String>,
    /// Secrets to redact as `(NAME, value)`; `None` snapshots the environment.
    pub secrets: Option<Vec<(String, String)>>,
    /// agentci's home (holds the CA); `None` means `AGENTCI_HOME` or the data directory.
    pub home: Option<PathBuf>,
    /// Upstream timeouts.
    pub timeouts: Timeouts,
    /// After the recordings of a request are used up, serve the last one again
    /// (vcrpy's `allow_playback_repeats`; for load tests, not for agent runs).
    pub allow_repeats: bool,
    /// Host → base URL connected to instead, recorded under the original host
    /// (`--upstream-override`: record a test double or gateway as the real provider).
    pub upstream_overrides: BTreeMap<String, String>,
    /// `_meta` fields: case id (default: the cassette's file stem), agent, query, spec hash, trial.
    pub case_id: Option<String>,
    /// The agent name for `_meta`.
    pub agent: Option<String>,
    /// The query for `_meta`.
    pub query: Option<String>,
    /// The spec hash for `_meta`.
    pub spec_hash: Option<String>,
    /// The trial number for `_meta`.
    pub trial: Option<u32>,
}

impl ProxyOptions {
    /// Options with defaults: port 0, record mode `all`, instant pace, no extras.
    pub fn new(cassette: PathBuf, mode: Mode) -> Self {
        ProxyOptions {
            cassette,
            mode,
            record_mode: RecordMode::default(),
            pace: Pace::default(),
            port: 0,
            upstream_ca: Vec::new(),
            routes: BTreeMap::new(),
            redact_body_fields: Vec::new(),
            ignore_body_fields: Vec::new(),
            secrets: None,
            home: None,
            timeouts: Timeouts::default(),
            allow_repeats: false,
            upstream_overrides: BTreeMap::new(),
            case_id: None,
            agent: None,
            query: None,
            spec_hash: None,
            trial: None,
        }
    }
}

/// A request replay could not serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// HTTP method.
    pub method: String,
    /// The request URL (secrets redacted).
    pub url: String,
    /// Unified diff against the nearest recorded request of the same endpoint, if any.
    pub diff: Option<String>,
}

/// What a proxy did, returned by [`RunningProxy::finish`].
#[derive(Debug, Clone)]
pub struct ProxyReport {
    /// The cassette path.
    pub cassette: PathBuf,
    /// Exchanges recorded from the upstream in this session, by seq.
    pub recorded: Vec<Exchange>,
    /// Responses served from the cassette.
    pub replayed: u64,
    /// Requests replay could not serve.
    pub misses: Vec<Miss>,
    /// Seqs of recorded exchanges never served (replay and new_episodes).
    pub unused: Vec<u64>,
    /// Whether the cassette file was (re)written.
    pub cassette_written: bool,
    /// TCP connections opened to upstreams.
    pub upstream_connections: u64,
}

/// What the proxy does with a request that has no recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    ReplayOnly,
    RecordAll,
    NewEpisodes,
}

/// Counts live connection tasks so `finish` can wait for them.
#[derive(Default)]
struct Tasks {
    live: AtomicUsize,
    idle: Notify,
}

struct TaskGuard(Arc<Tasks>);

impl Tasks {
    fn enter(self: &Arc<Self>) -> TaskGuard {
        self.live.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.0.live.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

struct Shared {
    policy: Policy,
    pace: Pace,
    cassette_path: PathBuf,
    routes: RouteTable,
    ca: CertificateAuthority,
    upstream: Option<Upstream>,
    index: Option<ReplayIndex>,
    /// Last recording per key, for `allow_repeats`.
    repeats: HashMap<String, Arc<Exchange>>,
    redactor: Redactor,
    ignore_body_fields: Vec<String>,
    recorder: Recorder,
    misses: Mutex<Vec<Miss>>,
    replayed: AtomicU64,
    port: u16,
    tasks: Arc<Tasks>,
    shutdown: watch::Receiver<bool>,
}

impl ExchangeSink for Shared {
    fn redactor(&self) -> &Redactor {
        &self.redactor
    }
    fn store(&self, exchange: Exchange) {
        self.recorder.push(exchange);
    }
}

/// The response body type every handler returns.
type ProxyBody = UnsyncBoxBody<Bytes, BoxError>;

/// Entry point: see [`Proxy::start`].
pub struct Proxy;

/// A proxy serving on 127.0.0.1 until [`RunningProxy::finish`].
pub struct RunningProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    existing: Option<Cassette>,
    meta: CassetteMeta,
    env: Vec<(String, String)>,
    stop: watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Loads the cassette and CA, binds 127.0.0.1:`port` and starts serving.
    pub async fn start(options: ProxyOptions) -> Result<RunningProxy> {
        crate::tls::install_crypto_provider();
        let exists = options.cassette.exists();
        let policy = match (options.mode, options.record_mode) {
            (Mode::Replay, _) | (Mode::Record, RecordMode::None) => Policy::ReplayOnly,
            (Mode::Record, RecordMode::Once) if exists => Policy::ReplayOnly,
            (Mode::Record, RecordMode::Once | RecordMode::All) => Policy::RecordAll,
            (Mode::Record, RecordMode::NewEpisodes) => Policy::NewEpisodes,
        };
        let existing = match policy {
            Policy::RecordAll => None,
            Policy::NewEpisodes if !exists => None,
            Policy::ReplayOnly if !exists => {
                return Err(Error::Cassette {
                    location: Location {
                        path: options.cassette.clone(),
                        line: None,
                        column: None,
                    },
                    message: "cassette not found; replay needs a recording".into(),
                    hint: Some(format!(
                        "record it first: agentci proxy --mode record --cassette {}",
                        options.cassette.display()
                    )),
                });
            }
            Policy::ReplayOnly | Policy::NewEpisodes => Some(Cassette::read(&options.cassette)?),
        };
        let index = existing
            .as_ref()
            .map(|c| ReplayIndex::new(c, &options.ignore_body_fields));
        let mut repeats = HashMap::new();
        if options.allow_repeats
            && let Some(cassette) = &existing
        {
            for exchange in &cassette.exchanges {
                let key = match_key(
                    &exchange.request.method,
                    &exchange.request.url,
                    exchange.request.body.as_ref(),
                    &options.ignore_body_fields,
                );
                repeats.insert(key, Arc::new(exchange.clone()));
            }
        }
        let home = match &options.home {
            Some(h) => h.clone(),
            None => home_dir()?,
        };
        let ca = CertificateAuthority::load_or_create(&ca_dir(&home))?;
        let bundle = ca.ensure_bundle()?;
        let upstream = match policy {
            Policy::ReplayOnly => None,
            _ => Some(
                Upstream::new(&options.upstream_ca, options.timeouts)?
                    .with_overrides(&options.upstream_overrides)?,
            ),
        };
        let redactor = match &options.secrets {
            Some(pairs) => Redactor::from_pairs(pairs.clone(), &options.redact_body_fields),
            None => Redactor::from_env(&options.redact_body_fields),
        };
        let routes = RouteTable::new(&options.routes)?;
        let listener = TcpListener::bind(("127.0.0.1", options.port))
            .await
            .map_err(|e| {
                Error::Proxy(format!("cannot listen on 127.0.0.1:{}: {e}", options.port))
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Proxy(format!("listener address: {e}")))?;
        let (stop, shutdown) = watch::channel(false);
        let first_seq = existing.as_ref().map_or(0, |c| c.exchanges.len() as u64);
        let shared = Arc::new(Shared {
            policy,
            pace: options.pace,
            cassette_path: options.cassette.clone(),
            routes,
            ca,
            upstream,
            index,
            repeats,
            redactor,
            ignore_body_fields: options.ignore_body_fields.clone(),
            recorder: Recorder::new(first_seq),
            misses: Mutex::new(Vec::new()),
            replayed: AtomicU64::new(0),
            port: addr.port(),
            tasks: Arc::new(Tasks::default()),
            shutdown,
        });
        let env = client_env(&shared, addr, &bundle);
        let meta = cassette_meta(&options);
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(RunningProxy {
            addr,
            shared,
            existing,
            meta,
            env,
            stop,
            accept,
        })
    }
}

/// The variables a client process needs to go through the proxy.
fn client_env(
    shared: &Shared,
    addr: SocketAddr,
    bundle: &std::path::Path,
) -> Vec<(String, String)> {
    let origin = format!("http://{addr}");
    let bundle = bundle.display().to_string();
    let mut env: Vec<(String, String)> = Vec::new();
    for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
        env.push((name.into(), origin.clone()));
    }
    // An inherited NO_PROXY could exempt provider hosts; requests to the proxy's
    // own routes that come back through it as proxy requests are served anyway.
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.into(), String::new()));
    }
    for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"] {
        env.push((name.into(), bundle.clone()));
    }
    env.push((
        "NODE_EXTRA_CA_CERTS".into(),
        shared.ca.cert_path().display().to_string(),
    ));
    env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    env.push(("AGENTCI_PROXY_URL".into(), origin.clone()));
    env.extend(shared.routes.client_env(&origin));
    env
}

impl RunningProxy {
    /// The listening address (always 127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The environment a client process needs (proxy, CA bundles, base URLs).
    pub fn client_env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }

    /// TCP connections opened to upstreams so far (always 0 in replay).
    pub fn upstream_connections(&self) -> u64 {
        self.shared
            .upstream
            .as_ref()
            .map_or(0, Upstream::connections)
    }

    /// Requests replay could not serve so far.
    pub fn misses(&self) -> Vec<Miss> {
        lock(&self.shared.misses).clone()
    }

    /// Stops serving (open responses are cut and recorded as truncated), writes
    /// the cassette atomically when anything was recorded, and reports.
    pub async fn finish(self, end: Option<CassetteEnd>) -> Result<ProxyReport> {
        let _ = self.stop.send(true);
        let _ = self.accept.await;
        // Every connection task watches the stop signal; wait for them to drop
        // their bodies, which records whatever was in flight.
        let tasks = self.shared.tasks.clone();
        let wait = async {
            loop {
                let notified = tasks.idle.notified();
                if tasks.live.load(Ordering::SeqCst) == 0 {
                    break;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(10), wait).await;

        let shared = &self.shared;
        let recorded = shared.recorder.take_all();
        let (cassette, write) = match shared.policy {
            Policy::ReplayOnly => (None, false),
            Policy::RecordAll => {
                let cassette = Cassette {
                    meta: self.meta.clone(),
                    exchanges: recorded.clone(),
                    end,
                };
                (Some(cassette), true)
            }
            Policy::NewEpisodes => {
                let write = !recorded.is_empty() || end.is_some() || self.existing.is_none();
                let mut cassette = self.existing.clone().unwrap_or_else(|| Cassette {
                    meta: self.meta.clone(),
                    exchanges: Vec::new(),
                    end: None,
                });
                cassette.exchanges.extend(recorded.iter().cloned());
                if end.is_some() {
                    cassette.end = end;
                }
                (Some(cassette), write)
            }
        };
        if let (Some(cassette), true) = (&cassette, write) {
            cassette.write_atomic(&shared.cassette_path)?;
        }
        Ok(ProxyReport {
            cassette: shared.cassette_path.clone(),
            recorded,
            replayed: shared.replayed.load(Ordering::Relaxed),
            misses: lock(&shared.misses).clone(),
            unused: shared
                .index
                .as_ref()
                .map(ReplayIndex::unused)
                .unwrap_or_default(),
            cassette_written: write,
            upstream_connections: shared.upstream.as_ref().map_or(0, Upstream::connections),
        })
    }
}

/// The `_meta` line for a recording that starts now.
fn cassette_meta(o: &ProxyOptions) -> CassetteMeta {
    CassetteMeta {
        format: FORMAT_VERSION,
        tool_version: crate::VERSION.to_string(),
        case_id: o.case_id.clone().unwrap_or_else(|| {
            o.cassette
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        agent: o.agent.clone(),
        query: o.query.clone(),
        recorded_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        spec_hash: o.spec_hash.clone(),
        record_mode: o.record_mode.as_str().to_string(),
        trial: o.trial,
    }
}

/// Resolves once the proxy is told to stop.
async fn stopped(rx: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not Send; drop it here, before any await.
    let _ = rx.wait_for(|stop| *stop).await.map(|_| ());
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.clone();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of fds or a reset during accept: back off briefly and go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            },
            _ = stopped(&mut shutdown) => return,
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let guard = shared.tasks.enter();
        tokio::spawn(async move {
            let _guard = guard;
            serve(shared, TokioIo::new(stream), None).await;
        });
    }
}

/// Serves HTTP/1.1 and HTTP/2 on one connection until it closes or the proxy stops.
/// `tunnel` is the CONNECT authority when the connection is an intercepted tunnel.
async fn serve<I>(shared: Arc<Shared>, io: I, tunnel: Option<String>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let mut shutdown = shared.shutdown.clone();
    let svc_shared = shared.clone();
    let service = service_fn(move |req| {
        let shared = svc_shared.clone();
        let tunnel = tunnel.clone();
        async move { Ok::<_, Infallible>(handle(shared, req, tunnel).await) }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(io, service);
    tokio::select! {
        _ = conn => {}
        _ = stopped(&mut shutdown) => {}
    }
}

fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|e| match e {})
        .boxed_unsync()
}

/// A JSON error response from the proxy itself.
fn proxy_error(
    status: StatusCode,
    kind: &str,
    message: &str,
    marker: &'static str,
) -> Response<ProxyBody> {
    let body = serde_json::json!({"error": {"type": kind, "message": message}});
    let mut resp = Response::new(full(body.to_string()));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(marker, HeaderValue::from_static("1"));
    resp
}

/// Hop-by-hop headers (RFC 9110 §7.6.1) and proxy credentials: never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in HOP_BY_HOP {
        headers.remove(*name);
    }
}

/// Whether an absolute-form request is addressed to this proxy itself (a client
/// that sends even its base-URL calls through `HTTP_PROXY`).
fn is_self(shared: &Shared, authority: &http::uri::Authority) -> bool {
    authority.port_u16() == Some(shared.port)
        && matches!(authority.host(), "127.0.0.1" | "localhost" | "[::1]")
}

/// The upstream URL of a request, or an error response.
fn target_url(
    shared: &Shared,
    req: &Request<Incoming>,
    tunnel: Option<&str>,
) -> std::result::Result<String, String> {
    let uri = req.uri();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    if let Some(authority) = tunnel {
        // Inside an intercepted tunnel the CONNECT target is the host; drop :443.
        let host = authority.strip_suffix(":443").unwrap_or(authority);
        return Ok(format!("https://{host}{path}"));
    }
    if let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority())
        && !is_self(shared, authority)
    {
        return Ok(format!("{scheme}://{authority}{path}"));
    }
    shared.routes.resolve(path).ok_or_else(|| {
        let names = shared.routes.names().join(", /");
        format!(
            "no route for {path}: base-URL routes are /{names}; other hosts go through HTTPS_PROXY"
        )
    })
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    tunnel: Option<String>,
) -> Response<ProxyBody> {
    if req.method() == Method::CONNECT {
        return match tunnel {
            None => connect(shared, req),
            Some(_) => proxy_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "agentci_bad_request",
                "CONNECT inside a tunnel",
                "x-agentci-error",
            ),
        };
    }
    let url = match target_url(&shared, &req, tunnel.as_deref()) {
        Ok(url) => url,
        Err(message) => {
            return proxy_error(
                StatusCode::NOT_FOUND,
                "agentci_no_route",
                &message,
                "x-agentci-error",
            );
        }
    };
    let (parts, body) = req.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return proxy_error(
                StatusCode::BAD_REQUEST,
                "agentci_bad_request",
                &format!("could not read the request body: {e}"),
                "x-agentci-error",
            );
        }
    };
    let header = |name: header::HeaderName| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let decoded = decode_content_encoding(header(header::CONTENT_ENCODING), &bytes);
    let body: Option<Body> = match &decoded {
        Ok(plain) => body_from_bytes(header(header::CONTENT_TYPE), plain),
        Err(_) => body_from_bytes(None, &bytes),
    };
    let method = parts.method.as_str().to_string();
    let stored_url = shared.redactor.url(&url);
    // The key is computed on the request as it will be stored (secrets scrubbed),
    // the same form the replay index reads back, so a request carrying a secret
    // in its body or URL still matches its recording.
    let plain = decoded.as_deref().unwrap_or(&bytes);
    let key = if shared.redactor.changes_request(&stored_url, plain) {
        let mut scrubbed = body.clone();
        if let Some(b) = scrubbed.as_mut() {
            shared.redactor.scrub_body(b);
        }
        let url = shared.redactor.scrub_text(&stored_url);
        match_key(&method, &url, scrubbed.as_ref(), &shared.ignore_body_fields)
    } else {
        match_key(
            &method,
            &stored_url,
            body.as_ref(),
            &shared.ignore_body_fields,
        )
    };

    let recorded = shared
        .index
        .as_ref()
        .and_then(|index| index.take(&key))
        .or_else(|| shared.repeats.get(&key).cloned());
    if let Some(exchange) = recorded {
        shared.replayed.fetch_add(1, Ordering::Relaxed);
        return replay(exchange, shared.pace).await;
    }
    match &shared.upstream {
        Some(upstream) if shared.policy != Policy::ReplayOnly => {
            forward(&shared, upstream, parts, bytes, url, stored_url, body, key).await
        }
        _ => miss(&shared, method, stored_url, body.as_ref()),
    }
}

fn miss(shared: &Shared, method: String, url: String, body: Option<&Body>) -> Response<ProxyBody> {
    let diff = shared
        .index
        .as_ref()
        .and_then(|i| i.nearest_diff(&method, &url, body));
    let cassette = shared.cassette_path.display();
    let message = format!(
        "no recorded response for {method} {url} in {cassette}; re-record with: agentci proxy --mode record --record-mode new_episodes --cassette {cassette}"
    );
    lock(&shared.misses).push(Miss { method, url, diff });
    proxy_error(
        StatusCode::BAD_GATEWAY,
        "agentci_cassette_miss",
        &message,
        "x-agentci-miss",
    )
}

async fn replay(exchange: Arc<Exchange>, pace: Pace) -> Response<ProxyBody> {
    if pace == Pace::Recorded {
        tokio::time::sleep(Duration::from_millis(exchange.timing.ttfb_ms)).await;
    }
    let response = &exchange.response;
    if response.status == 0 {
        let message = response
            .error
            .clone()
            .unwrap_or_else(|| "no response".into());
        return proxy_error(
            StatusCode::BAD_GATEWAY,
            "agentci_upstream_error",
            &format!("recorded upstream failure: {message}"),
            "x-agentci-upstream-error",
        );
    }
    let mut builder = Response::builder().status(response.status);
    for (name, value) in &response.headers {
        // Bodies are stored decoded and re-framed; the original framing headers no longer apply.
        if matches!(
            name.as_str(),
            "content-length" | "content-encoding" | "transfer-encoding"
        ) || HOP_BY_HOP.contains(&name.as_str())
        {
            continue;
        }
        builder = builder.header(name, value);
    }
    if response.events.is_some() && !response.headers.contains_key("content-type") {
        builder = builder.header(header::CONTENT_TYPE, "text/event-stream");
    }
    let body = ReplayBody::new(exchange.clone(), pace).boxed_unsync();
    builder.body(body).unwrap_or_else(|e| {
        proxy_error(
            StatusCode::BAD_GATEWAY,
            "agentci_cassette_error",
            &format!("recorded response is not valid HTTP: {e}"),
            "x-agentci-error",
        )
    })
}

#[allow(clippy::too_many_arguments)]
async fn forward(
    shared: &Arc<Shared>,
    upstream: &Upstream,
    parts: http::request::Parts,
    bytes: Bytes,
    url: String,
    stored_url: String,
    body: Option<Body>,
    key: String,
) -> Response<ProxyBody> {
    let (seq, start_ms) = shared.recorder.begin();
    let started = Instant::now();
    let request = super::cassette::RecordedRequest {
        method: parts.method.as_str().to_string(),
        url: stored_url,
        headers: shared.redactor.request_headers(&parts.headers),
        body,
    };
    let mut headers = parts.headers;
    strip_hop_by_hop(&mut headers);
    // The client addressed us; hyper sets Host from the upstream URL.
    headers.remove(header::HOST);
    let mut upstream_req = Request::new(Full::new(bytes));
    *upstream_req.method_mut() = parts.method;
    *upstream_req.headers_mut() = headers;
    match url.parse::<http::Uri>() {
        Ok(uri) => *upstream_req.uri_mut() = uri,
        Err(e) => {
            return proxy_error(
                StatusCode::BAD_REQUEST,
                "agentci_bad_request",
                &format!("bad upstream URL {url}: {e}"),
                "x-agentci-error",
            );
        }
    }
    let mut pending = PendingExchange {
        seq,
        start_ms,
        started,
        ttfb_ms: 0,
        request,
        match_key: key,
        status: 0,
        headers: HeaderMap::new(),
    };
    match upstream.send(upstream_req).await {
        Err(message) => {
            shared
                .recorder
                .push(pending.failed(message.clone(), &shared.redactor));
            proxy_error(
                StatusCode::BAD_GATEWAY,
                "agentci_upstream_error",
                &format!("upstream failed: {message}"),
                "x-agentci-upstream-error",
            )
        }
        Ok(resp) => {
            let (mut parts, incoming) = resp.into_parts();
            pending.ttfb_ms = millis(started.elapsed());
            pending.status = parts.status.as_u16();
            pending.headers = parts.headers.clone();
            strip_hop_by_hop(&mut parts.headers);
            parts.version = http::Version::HTTP_11;
            let sink: Arc<dyn ExchangeSink> = shared.clone();
            let tee = TeeBody::new(incoming, pending, upstream.read_timeout(), sink);
            Response::from_parts(parts, tee.boxed_unsync())
        }
    }
}

/// Answers a CONNECT with 200 and intercepts the tunnel with a leaf for its host.
fn connect(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    let Some(authority) = req.uri().authority().cloned() else {
        return proxy_error(
            StatusCode::BAD_REQUEST,
            "agentci_bad_request",
            "CONNECT needs host:port",
            "x-agentci-error",
        );
    };
    let config = match shared.ca.server_config(authority.host()) {
        Ok(config) => config,
        Err(e) => {
            return proxy_error(
                StatusCode::BAD_GATEWAY,
                "agentci_tls_error",
                &e.to_string(),
                "x-agentci-error",
            );
        }
    };
    let guard = shared.tasks.enter();
    tokio::spawn(async move {
        let _guard = guard;
        let mut shutdown = shared.shutdown.clone();
        let upgraded = tokio::select! {
            up = hyper::upgrade::on(req) => match up { Ok(up) => up, Err(_) => return },
            _ = stopped(&mut shutdown) => return,
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let tls = tokio::select! {
            tls = acceptor.accept(TokioIo::new(upgraded)) => match tls {
                Ok(tls) => tls,
                // The client rejected our certificate (CA not trusted) or hung up.
                Err(_) => return,
            },
            _ = stopped(&mut shutdown) => return,
        };
        let authority = match authority.port_u16() {
            Some(_) => authority.to_string(),
            None => format!("{}:443", authority.host()),
        };
        serve(shared, TokioIo::new(tls), Some(authority)).await;
    });
    Response::new(full(Bytes::new()))
}
