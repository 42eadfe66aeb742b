//! Proxy benchmark: replay throughput against `mitmdump --server-replay`, and
//! the latency the proxy adds over calling the fake provider directly.
//! Prints figures and ratios from one run; see docs/benchmarks.md.
//!
//! Needs `wrk` on PATH and mitmproxy (`MITMDUMP=/path/to/mitmdump`, default
//! `target/bench-venv/bin/mitmdump`); `benches/proxy-setup.sh` installs both.
//! Without them the throughput comparison is skipped with a note.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentci::fake::{FakeOptions, FakeProvider, Script};
use agentci::vcr::proxy::{Mode, Proxy, ProxyOptions};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

const LATENCY_SAMPLES: usize = 2000;
const SSE_SAMPLES: usize = 500;
const WRK_SECONDS: u64 = 5;
const WRK_CONNECTIONS: u32 = 64;

fn body(stream: bool) -> String {
    serde_json::json!({
        "model": "gpt-4o-mini",
        "stream": stream,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    })
    .to_string()
}

fn request(url: &str, body: &str) -> http::Request<Full<Bytes>> {
    http::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("valid request")
}

/// Time to the full response, or to the first body chunk when `first_chunk`.
async fn sample(client: &HttpClient, url: &str, body: &str, first_chunk: bool) -> Duration {
    let start = Instant::now();
    let resp = client.request(request(url, body)).await.expect("response");
    let mut body = resp.into_body();
    let mut elapsed = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.expect("body frame");
        if first_chunk && elapsed.is_none() && frame.data_ref().is_some() {
            elapsed = Some(start.elapsed());
        }
    }
    elapsed.unwrap_or_else(|| start.elapsed())
}

async fn p50(client: &HttpClient, url: &str, body: &str, n: usize, first_chunk: bool) -> Duration {
    for _ in 0..n / 10 {
        sample(client, url, body, first_chunk).await; // warm-up: pools, caches
    }
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(sample(client, url, body, first_chunk).await);
    }
    all.sort();
    all[n / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// Requests/second from `wrk` POSTing `body` to `url`.
fn wrk(url: &str, body: &str, dir: &Path) -> Option<f64> {
    let script = dir.join("post.lua");
    let lua = format!(
        "wrk.method = \"POST\"\nwrk.body = {}\nwrk.headers[\"Content-Type\"] = \"application/json\"\n",
        serde_json::to_string(body).expect("string")
    );
    std::fs::write(&script, lua).ok()?;
    let out = Command::new("wrk")
        .args([
            "-t2",
            &format!("-c{WRK_CONNECTIONS}"),
            &format!("-d{WRK_SECONDS}s"),
            "-s",
        ])
        .arg(&script)
        .arg(url)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let errors = text
        .lines()
        .find(|l| l.contains("Non-2xx") || l.contains("Socket errors"));
    if let Some(line) = errors {
        eprintln!("  wrk against {url} reported: {}", line.trim());
    }
    text.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn wait_for_port(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listening on {port}");
}

fn stop(mut child: Child) {
    // SIGINT lets mitmdump flush its flow file.
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// Records one exchange with `mitmdump -w` as a reverse proxy, then serves it
/// with `--server-replay` (reused for every request, never forwarded).
fn mitmdump_replay_rps(mitmdump: &Path, upstream: &str, dir: &Path, body: &str) -> Option<f64> {
    let flows = dir.join("flows.mitm");
    let port = free_port();
    let recorder = Command::new(mitmdump)
        .args([
            "-q",
            "--mode",
            &format!("reverse:{upstream}"),
            "-p",
            &port.to_string(),
            "-w",
        ])
        .arg(&flows)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    wait_for_port(port);
    let status = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "--noproxy",
            "*",
            "-H",
            "content-type: application/json",
            "-d",
            body,
        ])
        .arg(format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .status()
        .ok()?;
    stop(recorder);
    if !status.success() {
        return None;
    }
    let port = free_port();
    let server = Command::new(mitmdump)
        .args([
            "-q",
            "--mode",
            &format!("reverse:{upstream}"),
            "-p",
            &port.to_string(),
        ])
        .arg("--server-replay")
        .arg(&flows)
        .args([
            "--set",
            "server_replay_reuse=true",
            "--set",
            "server_replay_extra=kill",
            "--set",
            "connection_strategy=lazy",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    wait_for_port(port);
    let rps = wrk(
        &format!("http://127.0.0.1:{port}/v1/chat/completions"),
        body,
        dir,
    );
    stop(server);
    rps
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script =
        Script::parse("default: {text: \"It is sunny in Paris, 21 degrees.\"}").expect("script");
    let fake = FakeProvider::start(
        script,
        FakeOptions {
            port: 0,
            plain_http: true,
        },
    )
    .await
    .expect("fake provider");
    let fake_url = fake.base_url().to_string();
    let options = |cassette: &str, mode| {
        let mut o = ProxyOptions::new(dir.path().join(cassette), mode);
        o.home = Some(dir.path().join("home"));
        o.secrets = Some(Vec::new());
        o.routes.insert("fake".into(), fake_url.clone());
        o
    };
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let (plain, stream) = (body(false), body(true));
    let direct_url = format!("{fake_url}/v1/chat/completions");

    println!(
        "agentci proxy benchmark (one run; {} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // Added latency, record mode (forwarding + tee), plain HTTP upstream.
    let recording = Proxy::start(options("latency.jsonl", Mode::Record))
        .await
        .expect("proxy");
    let via_url = format!("http://{}/fake/v1/chat/completions", recording.addr());
    let direct = p50(&client, &direct_url, &plain, LATENCY_SAMPLES, false).await;
    let via = p50(&client, &via_url, &plain, LATENCY_SAMPLES, false).await;
    println!(
        "latency p50, plain HTTP, {LATENCY_SAMPLES} sequential requests: direct {:.3} ms, via proxy (record) {:.3} ms, added {:.3} ms (target < 0.3 ms)",
        ms(direct),
        ms(via),
        ms(via.saturating_sub(direct))
    );
    let direct = p50(&client, &direct_url, &stream, SSE_SAMPLES, true).await;
    let via = p50(&client, &via_url, &stream, SSE_SAMPLES, true).await;
    println!(
        "first SSE chunk p50, {SSE_SAMPLES} streams: direct {:.3} ms, via proxy (record) {:.3} ms, added {:.3} ms (target < 1 ms)",
        ms(direct),
        ms(via),
        ms(via.saturating_sub(direct))
    );
    recording.finish(None).await.expect("finish");

    // Replay throughput over the plain-HTTP route, one recorded exchange reused.
    let recording = Proxy::start(options("replay.jsonl", Mode::Record))
        .await
        .expect("proxy");
    sample(
        &client,
        &format!("http://{}/fake/v1/chat/completions", recording.addr()),
        &plain,
        false,
    )
    .await;
    recording.finish(None).await.expect("finish");
    let mut replay_options = options("replay.jsonl", Mode::Replay);
    replay_options.allow_repeats = true;
    let replaying = Proxy::start(replay_options).await.expect("proxy");
    let replay_url = format!("http://{}/fake/v1/chat/completions", replaying.addr());
    if which("wrk").is_none() {
        println!("replay throughput: skipped (wrk not on PATH; run benches/proxy-setup.sh)");
        return;
    }
    let ours = tokio::task::block_in_place(|| wrk(&replay_url, &plain, dir.path()));
    let report = replaying.finish(None).await.expect("finish");
    let Some(ours) = ours else {
        println!("replay throughput: wrk failed");
        return;
    };
    println!(
        "replay throughput, wrk -t2 -c{WRK_CONNECTIONS} -d{WRK_SECONDS}s: agentci {ours:.0} req/s ({} misses, {} upstream connections)",
        report.misses.len(),
        report.upstream_connections
    );
    let mitmdump = std::env::var_os("MITMDUMP")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-venv/bin/mitmdump")
        });
    if !mitmdump.is_file() {
        println!(
            "mitmdump comparison: skipped ({} missing; run benches/proxy-setup.sh)",
            mitmdump.display()
        );
        return;
    }
    let theirs = tokio::task::block_in_place(|| {
        mitmdump_replay_rps(&mitmdump, &fake_url, dir.path(), &plain)
    });
    match theirs {
        Some(theirs) if theirs > 0.0 => println!(
            "replay throughput: mitmdump --server-replay {theirs:.0} req/s; ratio agentci/mitmdump = {:.1}x (target >= 20x)",
            ours / theirs
        ),
        _ => println!("mitmdump comparison: mitmdump did not serve the replay"),
    }
    fake.shutdown().await;
}
