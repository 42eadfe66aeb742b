//! The VCR proxy end to end: the scripted fake provider over real HTTPS on
//! loopback, the proxy in-process (and as the real binary), real clients.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use agentci::fake::{FakeOptions, FakeProvider, Script};
use agentci::vcr::Cassette;
use agentci::vcr::proxy::{Mode, Proxy, ProxyOptions, RecordMode, RunningProxy};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A temp dir holding the agentci home (CA), the fake's CA and cassettes.
struct Setup {
    dir: tempfile::TempDir,
    fake: Option<FakeProvider>,
    fake_ca: PathBuf,
    fake_url: String,
}

impl Setup {
    async fn new(script: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let fake = FakeProvider::start(Script::parse(script).unwrap(), FakeOptions::default())
            .await
            .unwrap();
        let fake_ca = dir.path().join("fake-ca.pem");
        fake.write_ca_pem(&fake_ca).unwrap();
        let fake_url = fake.base_url().to_string();
        Setup {
            dir,
            fake: Some(fake),
            fake_ca,
            fake_url,
        }
    }

    fn cassette(&self) -> PathBuf {
        self.dir.path().join("cassettes").join("case.jsonl")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Proxy options with the fake as a base-URL route (`/fake/...`) and as a trusted upstream.
    fn options(&self, mode: Mode) -> ProxyOptions {
        let mut o = ProxyOptions::new(self.cassette(), mode);
        o.home = Some(self.home());
        o.upstream_ca = vec![self.fake_ca.clone()];
        o.secrets = Some(vec![(
            "FAKE_API_KEY".into(),
            "fk-planted-secret-123".into(),
        )]);
        o.routes.insert("fake".into(), self.fake_url.clone());
        o
    }

    async fn stop_fake(&mut self) {
        if let Some(fake) = self.fake.take() {
            fake.shutdown().await;
        }
    }

    fn fake_requests(&self) -> u64 {
        self.fake.as_ref().map_or(0, FakeProvider::request_count)
    }
}

fn chat_body(prompt: &str, stream: bool) -> String {
    serde_json::json!({
        "model": "gpt-4o-mini",
        "stream": stream,
        "messages": [{"role": "user", "content": prompt}],
    })
    .to_string()
}

/// Runs curl (blocking) with `args`, never reading the caller's proxy settings.
async fn curl(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new("curl")
            .args(["-sS", "--max-time", "20", "--noproxy", ""])
            .args(&args)
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// curl through the proxy with CONNECT to the fake provider's HTTPS origin.
async fn curl_connect(proxy: &RunningProxy, setup: &Setup, home_ca: &Path, body: &str) -> Output {
    curl(vec![
        "--proxy".into(),
        format!("http://{}", proxy.addr()),
        "--cacert".into(),
        home_ca.display().to_string(),
        "-H".into(),
        "content-type: application/json".into(),
        "-H".into(),
        "authorization: Bearer fk-planted-secret-123".into(),
        "-d".into(),
        body.into(),
        format!("{}/v1/chat/completions", setup.fake_url),
    ])
    .await
}

/// curl against the proxy's plain-HTTP base-URL route.
async fn curl_route(proxy: &RunningProxy, body: &str) -> Output {
    curl(vec![
        "-i".into(),
        "-H".into(),
        "content-type: application/json".into(),
        "-H".into(),
        "x-api-key: fk-planted-secret-123".into(),
        "-d".into(),
        body.into(),
        format!("http://{}/fake/v1/chat/completions", proxy.addr()),
    ])
    .await
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "curl failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The body part of a `curl -i` response.
fn body_of(response: &str) -> &str {
    response
        .split_once("\r\n\r\n")
        .map_or(response, |(_, body)| body)
}

const SCRIPT: &str = r#"
rules:
  - when: {last_user_contains: weather}
    reply: {text: "It is sunny in Paris."}
  - when: {last_user_contains: count}
    replies:
      - {text: "one"}
      - {text: "two"}
      - {text: "three"}
  - when: {last_user_contains: cut}
    reply: {text: "this stream will be cut short by the upstream", reset_after_events: 2, event_delay_ms: 50}
default: {text: "default answer"}
"#;

#[tokio::test]
async fn curl_records_through_connect_and_route_then_replays_offline() {
    let mut setup = Setup::new(SCRIPT).await;
    let proxy = Proxy::start(setup.options(Mode::Record)).await.unwrap();
    let ca = setup.home().join("ca").join("ca.pem");

    let via_connect =
        stdout(&curl_connect(&proxy, &setup, &ca, &chat_body("weather?", false)).await);
    assert!(
        via_connect.contains("It is sunny in Paris."),
        "{via_connect}"
    );
    let via_route = stdout(&curl_route(&proxy, &chat_body("weather?", true)).await);
    assert!(via_route.contains("text/event-stream"), "{via_route}");
    assert!(via_route.contains("data: [DONE]"), "{via_route}");
    assert_eq!(setup.fake_requests(), 2);

    let report = proxy.finish(None).await.unwrap();
    assert_eq!(report.recorded.len(), 2);
    assert!(report.cassette_written);
    let text = std::fs::read_to_string(setup.cassette()).unwrap();
    assert!(
        !text.contains("fk-planted-secret-123"),
        "secret on disk:\n{text}"
    );
    let cassette = Cassette::read(&setup.cassette()).unwrap();
    assert_eq!(cassette.exchanges[0].seq, 0);
    assert!(
        cassette.exchanges[1].response.events.is_some(),
        "SSE stored as events"
    );

    // Replay with the upstream gone: same bytes to the client, no connection opened.
    setup.stop_fake().await;
    let proxy = Proxy::start(setup.options(Mode::Replay)).await.unwrap();
    let again = stdout(&curl_connect(&proxy, &setup, &ca, &chat_body("weather?", false)).await);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&again).unwrap(),
        serde_json::from_str::<serde_json::Value>(&via_connect).unwrap()
    );
    let streamed = stdout(&curl_route(&proxy, &chat_body("weather?", true)).await);
    assert_eq!(body_of(&streamed), body_of(&via_route));
    assert_eq!(proxy.upstream_connections(), 0);
    let report = proxy.finish(None).await.unwrap();
    assert_eq!(report.replayed, 2);
    assert!(report.misses.is_empty());
    assert!(report.unused.is_empty());
    assert!(!report.cassette_written);
    assert_eq!(report.upstream_connections, 0);
}

#[tokio::test]
async fn repeated_identical_requests_replay_in_order_and_a_changed_one_misses_with_a_diff() {
    let mut setup = Setup::new(SCRIPT).await;
    let proxy = Proxy::start(setup.options(Mode::Record)).await.unwrap();
    for expected in ["one", "two", "three"] {
        let out = stdout(&curl_route(&proxy, &chat_body("count please", false)).await);
        assert!(out.contains(expected), "{out}");
    }
    proxy.finish(None).await.unwrap();
    setup.stop_fake().await;

    let proxy = Proxy::start(setup.options(Mode::Replay)).await.unwrap();
    for expected in ["one", "two", "three"] {
        let out = stdout(&curl_route(&proxy, &chat_body("count please", false)).await);
        assert!(out.contains(expected), "{out}");
    }
    // A fourth identical request has no recording left, and a changed prompt never had one.
    let fourth = stdout(&curl_route(&proxy, &chat_body("count please", false)).await);
    assert!(fourth.starts_with("HTTP/1.1 502"), "{fourth}");
    let changed = stdout(&curl_route(&proxy, &chat_body("count slowly please", false)).await);
    assert!(changed.starts_with("HTTP/1.1 502"), "{changed}");
    assert!(
        changed.to_ascii_lowercase().contains("x-agentci-miss: 1"),
        "{changed}"
    );
    let error: serde_json::Value = serde_json::from_str(body_of(&changed)).unwrap();
    assert_eq!(error["error"]["type"], "agentci_cassette_miss");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--record-mode new_episodes"),
        "{error}"
    );
    let report = proxy.finish(None).await.unwrap();
    assert_eq!(report.upstream_connections, 0);
    assert_eq!(report.misses.len(), 2);
    let diff = report.misses[1]
        .diff
        .clone()
        .expect("a nearest recorded request");
    assert!(diff.contains("count slowly please"), "{diff}");
    assert!(diff.contains("count please"), "{diff}");
}

#[tokio::test]
async fn new_episodes_replays_hits_and_appends_misses() {
    let setup = Setup::new(SCRIPT).await;
    let proxy = Proxy::start(setup.options(Mode::Record)).await.unwrap();
    stdout(&curl_route(&proxy, &chat_body("weather?", false)).await);
    proxy.finish(None).await.unwrap();

    let mut options = setup.options(Mode::Record);
    options.record_mode = RecordMode::NewEpisodes;
    let proxy = Proxy::start(options).await.unwrap();
    stdout(&curl_route(&proxy, &chat_body("weather?", false)).await);
    let other = stdout(&curl_route(&proxy, &chat_body("something else", false)).await);
    assert!(other.contains("default answer"), "{other}");
    let report = proxy.finish(None).await.unwrap();
    assert_eq!(report.replayed, 1);
    assert_eq!(report.recorded.len(), 1);
    let cassette = Cassette::read(&setup.cassette()).unwrap();
    let seqs: Vec<u64> = cassette.exchanges.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![0, 1]);

    // `once` with an existing cassette is replay-only.
    let mut options = setup.options(Mode::Record);
    options.record_mode = RecordMode::Once;
    let proxy = Proxy::start(options).await.unwrap();
    let miss = stdout(&curl_route(&proxy, &chat_body("never recorded", false)).await);
    assert!(miss.starts_with("HTTP/1.1 502"), "{miss}");
    assert_eq!(proxy.finish(None).await.unwrap().upstream_connections, 0);
}

#[tokio::test]
async fn a_stream_cut_by_the_upstream_is_recorded_as_truncated_and_replayed_cut() {
    let mut setup = Setup::new(SCRIPT).await;
    let proxy = Proxy::start(setup.options(Mode::Record)).await.unwrap();
    let out = curl_route(&proxy, &chat_body("cut me", true)).await;
    // curl reports the cut (exit 18 or 56) rather than hanging.
    assert!(!out.status.success());
    proxy.finish(None).await.unwrap();
    let text = std::fs::read_to_string(setup.cassette()).unwrap();
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("every line is JSON");
    }
    let cassette = Cassette::read(&setup.cassette()).unwrap();
    let response = &cassette.exchanges[0].response;
    assert!(response.truncated, "{response:?}");
    // What arrived before the reset is kept (over h2 a reset may overtake the last event).
    let events = response.events.as_ref().map_or(0, Vec::len);
    assert!((1..=2).contains(&events), "{text}");

    setup.stop_fake().await;
    let proxy = Proxy::start(setup.options(Mode::Replay)).await.unwrap();
    let replayed = curl_route(&proxy, &chat_body("cut me", true)).await;
    assert!(!replayed.status.success(), "the replayed stream is cut too");
    proxy.finish(None).await.unwrap();
}

#[tokio::test]
async fn upstream_refusing_connections_reaches_the_client_and_is_recorded() {
    let setup = Setup::new(SCRIPT).await;
    let mut options = setup.options(Mode::Record);
    // A port nothing listens on: bind and drop to get one.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    options
        .routes
        .insert("dead".into(), format!("https://{closed}"));
    let proxy = Proxy::start(options).await.unwrap();
    let out = stdout(
        &curl(vec![
            "-i".into(),
            "-d".into(),
            "{}".into(),
            format!("http://{}/dead/v1/chat/completions", proxy.addr()),
        ])
        .await,
    );
    assert!(out.starts_with("HTTP/1.1 502"), "{out}");
    assert!(out.contains("agentci_upstream_error"), "{out}");
    let report = proxy.finish(None).await.unwrap();
    assert_eq!(report.recorded[0].response.status, 0);
    assert!(report.recorded[0].response.error.is_some());
}

#[tokio::test]
async fn a_corrupt_cassette_line_is_reported_with_file_and_line() {
    let setup = Setup::new(SCRIPT).await;
    let proxy = Proxy::start(setup.options(Mode::Record)).await.unwrap();
    stdout(&curl_route(&proxy, &chat_body("weather?", false)).await);
    proxy.finish(None).await.unwrap();
    let mut text = std::fs::read_to_string(setup.cassette()).unwrap();
    text = text.replacen("\n{", "\n{not json", 1);
    std::fs::write(setup.cassette(), text).unwrap();
    let err = Proxy::start(setup.options(Mode::Replay))
        .await
        .err()
        .unwrap();
    let message = err.to_string();
    assert!(message.contains("case.jsonl:2"), "{message}");
}

#[tokio::test]
async fn replay_without_a_cassette_fails_with_a_hint() {
    let setup = Setup::new(SCRIPT).await;
    let err = Proxy::start(setup.options(Mode::Replay))
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("cassette not found"), "{err}");
    assert!(err.hint().unwrap().contains("--mode record"));
}

/// Open fds of this process that are TCP sockets with `port` at either end.
/// (Counting all of /proc/self/fd would see the other tests running in parallel.)
fn socket_fds_on_port(port: u16) -> usize {
    let port_hex = format!(":{port:04X}");
    let mut inodes = std::collections::HashSet::new();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9 && (cols[1].ends_with(&port_hex) || cols[2].ends_with(&port_hex)) {
                inodes.insert(format!("socket:[{}]", cols[9]));
            }
        }
    }
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| inodes.contains(&target.display().to_string()))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_connections_replay_twenty_thousand_requests_without_errors_or_leaks() {
    const CONNECTIONS: usize = 200;
    const PER_CONNECTION: usize = 100;
    let mut setup = Setup::new(SCRIPT).await;
    let proxy = Proxy::start(setup.options(Mode::Record)).await.unwrap();
    stdout(&curl_route(&proxy, &chat_body("weather?", false)).await);
    proxy.finish(None).await.unwrap();
    setup.stop_fake().await;

    let mut options = setup.options(Mode::Replay);
    options.allow_repeats = true;
    let proxy = Proxy::start(options).await.unwrap();
    let port = proxy.addr().port();
    assert_eq!(socket_fds_on_port(port), 1, "just the listener");
    let url = format!("http://{}/fake/v1/chat/completions", proxy.addr());
    let body = Bytes::from(chat_body("weather?", false));
    let load = async {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..CONNECTIONS {
            let url = url.clone();
            let body = body.clone();
            tasks.spawn(async move {
                // One pooled connection per task: 200 concurrent connections.
                let client: Client<HttpConnector, Full<Bytes>> =
                    Client::builder(TokioExecutor::new())
                        .pool_max_idle_per_host(1)
                        .build_http();
                let mut errors = 0usize;
                for _ in 0..PER_CONNECTION {
                    let req = http::Request::post(&url)
                        .header("content-type", "application/json")
                        .body(Full::new(body.clone()))
                        .unwrap();
                    match client.request(req).await {
                        Ok(resp) if resp.status() == 200 => {
                            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
                            if !bytes.windows(5).any(|w| w == b"sunny") {
                                errors += 1;
                            }
                        }
                        _ => errors += 1,
                    }
                }
                errors
            });
        }
        let mut errors = 0;
        while let Some(result) = tasks.join_next().await {
            errors += result.unwrap();
        }
        errors
    };
    // Bounded in time as well as count.
    let errors = tokio::time::timeout(Duration::from_secs(120), load)
        .await
        .expect("load finished in time");
    assert_eq!(errors, 0);
    let report = proxy.finish(None).await.unwrap();
    assert_eq!(report.replayed, (CONNECTIONS * PER_CONNECTION) as u64);
    assert_eq!(report.upstream_connections, 0);
    // Client connections close asynchronously; give the runtime a moment to reap them.
    for _ in 0..100 {
        if socket_fds_on_port(port) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        socket_fds_on_port(port),
        0,
        "leaked socket fds on the proxy port"
    );
}

/// Starts the real binary and reads its printed environment up to the listening line.
fn spawn_binary(setup: &Setup, mode: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("agentci"))
        .args(["proxy", "--mode", mode, "--cassette"])
        .arg(setup.cassette())
        .arg("--upstream-ca")
        .arg(&setup.fake_ca)
        .arg("--route")
        .arg(format!("fake={}", setup.fake_url))
        .env("AGENTCI_HOME", setup.home())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut printed = String::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if line.starts_with("# agentci proxy listening") {
            break;
        }
    }
    (child, printed)
}

fn proxy_origin(printed: &str) -> String {
    printed
        .lines()
        .find_map(|l| l.strip_prefix("export AGENTCI_PROXY_URL='"))
        .and_then(|l| l.strip_suffix('\''))
        .unwrap()
        .to_string()
}

async fn curl_origin(origin: &str, body: &str) -> Output {
    curl(vec![
        "-i".into(),
        "-H".into(),
        "content-type: application/json".into(),
        "-d".into(),
        body.into(),
        format!("{origin}/fake/v1/chat/completions"),
    ])
    .await
}

#[tokio::test]
async fn the_binary_prints_the_client_env_records_on_sigterm_and_exits_2_on_a_miss() {
    let mut setup = Setup::new(SCRIPT).await;
    let (child, printed) = spawn_binary(&setup, "record");
    for name in [
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "NODE_USE_ENV_PROXY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
    ] {
        assert!(
            printed.contains(&format!("export {name}=")),
            "{name} in\n{printed}"
        );
    }
    let origin = proxy_origin(&printed);
    stdout(&curl_origin(&origin, &chat_body("weather?", false)).await);
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        Cassette::read(&setup.cassette()).unwrap().exchanges.len(),
        1
    );

    setup.stop_fake().await;
    let (child, printed) = spawn_binary(&setup, "replay");
    let origin = proxy_origin(&printed);
    stdout(&curl_origin(&origin, &chat_body("weather?", false)).await);
    stdout(&curl_origin(&origin, &chat_body("weather tomorrow?", false)).await);
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let stderr = stderr.replace(&setup.dir.path().display().to_string(), "[TMP]");
    insta::with_settings!({filters => vec![(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]")]}, {
        insta::assert_snapshot!("proxy_replay_miss_report", stderr);
    });
}

#[tokio::test]
async fn kill_9_while_recording_leaves_the_earlier_cassette_byte_identical() {
    let setup = Setup::new(SCRIPT).await;
    let proxy = Proxy::start(setup.options(Mode::Record)).await.unwrap();
    stdout(&curl_route(&proxy, &chat_body("weather?", false)).await);
    proxy.finish(None).await.unwrap();
    let earlier = std::fs::read(setup.cassette()).unwrap();

    let (mut child, printed) = spawn_binary(&setup, "record");
    let origin = proxy_origin(&printed);
    stdout(&curl_origin(&origin, &chat_body("count please", false)).await);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(std::fs::read(setup.cassette()).unwrap(), earlier);
    let leftovers: Vec<_> = std::fs::read_dir(setup.cassette().parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no temp files left behind: {leftovers:?}"
    );
}
