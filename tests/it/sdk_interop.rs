//! Real clients against the fake provider, then through the agentci proxy: the
//! official `openai` and `anthropic` Python SDKs (HTTPS_PROXY + CA bundle), the
//! official `openai` Node SDK (the proxy's base-URL route) and curl. Each records,
//! the cassette directory is searched for the planted secrets, the recording
//! provider is stopped, and replay must give the SDK the identical parsed result
//! while a sentinel on the provider's port sees no request at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentci::fake::{FakeOptions, FakeProvider, Script};
use serde_json::Value;

use crate::support::{self, process::Running, sdk};

/// Fake secrets planted in the environment and headers; none may reach a cassette.
const PLANTED: &[(&str, &str)] = &[
    (
        "OPENAI_API_KEY",
        "sk-test-PLANTEDopenai0123456789abcdefABCDEF",
    ),
    (
        "ANTHROPIC_API_KEY",
        "sk-ant-test-PLANTEDanthropic0123456789abcdef",
    ),
    (
        "PLANTED_HEADER_TOKEN",
        "ghp_PLANTEDheader0123456789abcdefABCDEF01",
    ),
    ("OPENAI_ORG_ID", "org-PLANTEDorg0123456789"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    PythonOpenai,
    PythonAnthropic,
    NodeOpenai,
    Curl,
}

fn script() -> Script {
    let path = support::repo_root().join("tests/clients/fake-script.yaml");
    Script::load(&path).expect("interop script loads")
}

/// A fake provider with its CA written to `dir`.
fn start_fake(rt: &tokio::runtime::Runtime, port: u16, dir: &Path) -> (FakeProvider, PathBuf) {
    let fake = rt
        .block_on(FakeProvider::start(
            script(),
            FakeOptions {
                port,
                plain_http: false,
            },
        ))
        .expect("fake provider starts");
    let ca = dir.join("fake-ca.pem");
    fake.write_ca_pem(&ca).expect("write fake CA");
    (fake, ca)
}

/// Runs `client` against `base_url` with `env`, returning its stdout (JSON), or
/// panicking with its stderr.
fn run_client(client: Client, base_url: &str, env: &BTreeMap<String, String>) -> Value {
    let work = support::temp_dir();
    let mut command = match client {
        Client::PythonOpenai | Client::PythonAnthropic => {
            let file = if client == Client::PythonOpenai {
                "openai_client.py"
            } else {
                "anthropic_client.py"
            };
            let mut c = Command::new(sdk::python());
            c.arg(support::repo_root().join("tests/clients/python").join(file))
                .arg(base_url);
            c
        }
        Client::NodeOpenai => {
            // ESM resolves packages next to the script: run a copy beside the cached node_modules.
            let modules = sdk::node_modules_parent().join("node_modules");
            std::os::unix::fs::symlink(&modules, work.path().join("node_modules"))
                .expect("link node_modules");
            let script = work.path().join("openai_client.mjs");
            std::fs::copy(
                support::repo_root().join("tests/clients/node/openai_client.mjs"),
                &script,
            )
            .expect("copy client");
            let mut c = Command::new("node");
            c.arg(script).arg(base_url);
            c
        }
        Client::Curl => return run_curl(base_url, env),
    };
    for var in [
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "https_proxy",
        "http_proxy",
        "ALL_PROXY",
        "NO_PROXY",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    ] {
        command.env_remove(var);
    }
    let output = command
        .envs(env)
        .current_dir(work.path())
        .output()
        .expect("run client");
    assert!(
        output.status.success(),
        "{client:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{client:?} printed no JSON: {e}"))
}

/// curl: a plain and a streamed Chat Completions call; the bodies as printed.
fn run_curl(base_url: &str, env: &BTreeMap<String, String>) -> Value {
    let mut out = serde_json::Map::new();
    for (name, stream) in [("plain", false), ("stream", true)] {
        let body = serde_json::json!({"model": "gpt-4o-mini", "stream": stream,
            "stream_options": if stream { serde_json::json!({"include_usage": true}) } else { Value::Null },
            "messages": [{"role": "user", "content": "What's the weather in Paris?"}]});
        let mut command = Command::new("curl");
        command.args([
            "-sS",
            "--fail-with-body",
            "-N",
            "-H",
            "content-type: application/json",
        ]);
        command
            .arg("-H")
            .arg(format!("authorization: Bearer {}", PLANTED[0].1));
        command
            .arg("-H")
            .arg(format!("x-planted-token: {}", PLANTED[2].1));
        if let Some(proxy) = env.get("HTTPS_PROXY") {
            command.arg("--proxy").arg(proxy);
        }
        if let Some(ca) = env
            .get("CURL_CA_BUNDLE")
            .or_else(|| env.get("SSL_CERT_FILE"))
        {
            command.arg("--cacert").arg(ca);
        }
        command
            .arg("--data")
            .arg(body.to_string())
            .arg(format!("{base_url}/chat/completions"));
        command
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy");
        let output = command.output().expect("run curl");
        assert!(
            output.status.success(),
            "curl {name} failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        );
        out.insert(
            name.into(),
            Value::String(String::from_utf8_lossy(&output.stdout).into_owned()),
        );
    }
    Value::Object(out)
}

fn planted_env() -> BTreeMap<String, String> {
    PLANTED
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

// ---- the SDKs parse the fake provider's wire formats (no proxy) ----

fn direct_env(ca: &Path) -> BTreeMap<String, String> {
    let mut env = planted_env();
    let ca = ca.display().to_string();
    env.insert("SSL_CERT_FILE".into(), ca.clone());
    env.insert("NODE_EXTRA_CA_CERTS".into(), ca);
    env
}

fn arguments(call: &Value) -> Value {
    serde_json::from_str(
        call["function"]["arguments"]
            .as_str()
            .expect("arguments string"),
    )
    .expect("arguments JSON")
}

#[test]
fn python_openai_sdk_parses_every_fake_openai_format() {
    let rt = support::runtime();
    let dir = support::temp_dir();
    let (fake, ca) = start_fake(&rt, 0, dir.path());
    let out = run_client(
        Client::PythonOpenai,
        &format!("{}/v1", fake.base_url()),
        &direct_env(&ca),
    );
    let calls = &out["chat_plain"]["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls.as_array().map(Vec::len), Some(2));
    assert_eq!(
        arguments(&calls[0]),
        serde_json::json!({"city": "Paris", "days": 3})
    );
    assert_eq!(
        out["chat_plain"]["usage"]["prompt_tokens_details"]["cached_tokens"],
        64
    );
    assert_eq!(
        out["chat_tool_loop"],
        "It is sunny and 21C in Paris, and 10:00 local time."
    );
    // The SDK's stream helper assembled the tool-call deltas and kept the usage chunk.
    let final_msg = &out["chat_stream_final"]["choices"][0]["message"];
    assert_eq!(
        final_msg["content"],
        "Let me check the weather and the time."
    );
    assert_eq!(
        arguments(&final_msg["tool_calls"][1]),
        serde_json::json!({"tz": "Europe/Paris"})
    );
    assert_eq!(
        out["chat_stream_final"]["usage"]["completion_tokens_details"]["reasoning_tokens"],
        8
    );
    assert_eq!(out["responses_plain"]["output"][1]["type"], "function_call");
    let events = out["responses_stream"].as_array().expect("events");
    assert_eq!(
        events.last().map(|e| &e["type"]),
        Some(&Value::from("response.completed"))
    );
    assert_eq!(
        events
            .last()
            .map(|e| &e["response"]["output"][0]["content"][0]["text"]),
        Some(&Value::from(
            "Hello from the fake provider! Nice to meet you."
        ))
    );
    let seen = fake.requests();
    assert_eq!(seen.len(), 5);
    assert_eq!(
        seen[0].headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {}", PLANTED[0].1).as_str())
    );
}

#[test]
fn python_anthropic_sdk_parses_the_fake_messages_format() {
    let rt = support::runtime();
    let dir = support::temp_dir();
    let (fake, ca) = start_fake(&rt, 0, dir.path());
    let out = run_client(Client::PythonAnthropic, fake.base_url(), &direct_env(&ca));
    assert_eq!(out["plain"]["stop_reason"], "tool_use");
    assert_eq!(
        out["plain"]["content"][1]["input"],
        serde_json::json!({"city": "Paris", "days": 3})
    );
    assert_eq!(out["plain"]["usage"]["cache_read_input_tokens"], 64);
    assert_eq!(
        out["tool_loop"]["content"][0]["text"],
        "It is sunny and 21C in Paris, and 10:00 local time."
    );
    // input_json_delta fragments were accumulated by the SDK into the tool input.
    assert_eq!(
        out["stream_final"]["content"][2]["input"],
        serde_json::json!({"tz": "Europe/Paris"})
    );
    assert_eq!(out["stream_final"]["usage"]["output_tokens"], 42);
    assert!(
        out["stream_event_types"]
            .as_array()
            .expect("types")
            .contains(&Value::from("input_json"))
    );
    assert_eq!(fake.request_count(), 3);
}

#[test]
fn node_openai_sdk_parses_the_fake_openai_formats() {
    let rt = support::runtime();
    let dir = support::temp_dir();
    let (fake, ca) = start_fake(&rt, 0, dir.path());
    let out = run_client(
        Client::NodeOpenai,
        &format!("{}/v1", fake.base_url()),
        &direct_env(&ca),
    );
    assert_eq!(
        arguments(&out["chat_plain"]["choices"][0]["message"]["tool_calls"][0]),
        serde_json::json!({"city": "Paris", "days": 3})
    );
    let final_msg = &out["chat_stream_final"]["choices"][0]["message"];
    assert_eq!(
        arguments(&final_msg["tool_calls"][1]),
        serde_json::json!({"tz": "Europe/Paris"})
    );
    let events = out["responses_stream"].as_array().expect("events");
    assert_eq!(
        events.last().map(|e| &e["type"]),
        Some(&Value::from("response.completed"))
    );
    assert_eq!(fake.request_count(), 3);
}

// ---- record through the proxy, then replay with the provider gone ----

/// Starts `agentci proxy` and waits for the environment it prints.
fn start_proxy(mode: &str, cassette: &Path, fake_ca: &Path, fake_base: &str) -> Running {
    let mut command = Command::new(support::agentci_bin());
    command
        .args(["proxy", "--mode", mode, "--port", "0", "--cassette"])
        .arg(cassette)
        .arg("--upstream-ca")
        .arg(fake_ca)
        // The OpenAI base-URL route leads to the fake provider instead of api.openai.com.
        .arg("--route")
        .arg(format!("openai={fake_base}"))
        .envs(planted_env())
        .env(
            "AGENTCI_HOME",
            cassette
                .parent()
                .and_then(Path::parent)
                .expect("home")
                .join("agentci-home"),
        );
    Running::spawn(
        command,
        |env| env.contains_key("HTTPS_PROXY") && env.contains_key("SSL_CERT_FILE"),
        Duration::from_secs(60),
    )
}

fn proxy_port(proxy: &Running) -> String {
    let url = proxy.var("HTTPS_PROXY");
    url.rsplit(':')
        .next()
        .expect("port")
        .trim_end_matches('/')
        .to_string()
}

/// The client's base URL and environment for going through `proxy`.
fn via_proxy(
    client: Client,
    proxy: &Running,
    fake_base: &str,
) -> (String, BTreeMap<String, String>) {
    let mut env = proxy.env.clone();
    env.extend(planted_env());
    // Loopback targets must still go through the proxy.
    env.insert("NO_PROXY".into(), String::new());
    let base = match client {
        Client::NodeOpenai => format!("http://127.0.0.1:{}/openai/v1", proxy_port(proxy)),
        Client::PythonAnthropic => fake_base.to_string(),
        Client::PythonOpenai | Client::Curl => format!("{fake_base}/v1"),
    };
    (base, env)
}

/// Every file under `dir`, with its text.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read cassette dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push((
                path.clone(),
                String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned(),
            ));
        }
    }
    out
}

fn record_then_replay(client: Client) {
    let rt = support::runtime();
    let dir = support::temp_dir();
    let cassettes = dir.path().join("cassettes");
    std::fs::create_dir_all(&cassettes).expect("cassette dir");
    let cassette = cassettes.join(format!("{client:?}.jsonl").to_lowercase());
    let (fake, ca) = start_fake(&rt, 0, dir.path());
    let fake_base = fake.base_url().to_string();

    // Record.
    let mut proxy = start_proxy("record", &cassette, &ca, &fake_base);
    let (base, env) = via_proxy(client, &proxy, &fake_base);
    let recorded = run_client(client, &base, &env);
    let status = proxy.stop("INT", Duration::from_secs(30));
    assert!(
        status.success(),
        "record proxy exited with {status:?}\n{}",
        proxy.stderr()
    );
    let upstream = fake.request_count();
    assert!(upstream > 0, "the recording reached the provider");

    // No planted secret anywhere in the cassette directory.
    let files = files_under(&cassettes);
    assert!(
        files.iter().any(|(p, _)| p == &cassette),
        "cassette written: {files:?}"
    );
    for (path, text) in &files {
        for (name, secret) in PLANTED {
            assert!(
                !text.contains(secret),
                "{name} leaked into {}",
                path.display()
            );
        }
        assert!(
            !text.contains("PLANTED"),
            "a planted value leaked into {}",
            path.display()
        );
    }
    // One exchange line per upstream request, besides the `_meta` (and, for runs, `_end`) lines.
    let text = std::fs::read_to_string(&cassette).expect("read cassette");
    let exchanges = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("cassette line is JSON"))
        .filter(|v| v.get("_meta").is_none() && v.get("_end").is_none())
        .count();
    assert_eq!(
        exchanges as u64, upstream,
        "one exchange per upstream request"
    );

    // Replay with the provider gone: a sentinel takes its port and must see nothing.
    let port = fake.addr().port();
    rt.block_on(fake.shutdown());
    let sentinel_dir = dir.path().join("sentinel");
    std::fs::create_dir_all(&sentinel_dir).expect("sentinel dir");
    let (sentinel, _) = start_fake(&rt, port, &sentinel_dir);
    let mut proxy = start_proxy("replay", &cassette, &ca, &fake_base);
    let (base, env) = via_proxy(client, &proxy, &fake_base);
    let replayed = run_client(client, &base, &env);
    let status = proxy.stop("INT", Duration::from_secs(30));
    assert!(
        status.success(),
        "replay proxy exited with {status:?}\n{}",
        proxy.stderr()
    );
    assert_eq!(sentinel.request_count(), 0, "replay reached the network");
    assert_eq!(
        replayed, recorded,
        "{client:?}: replay differs from the recording"
    );
}

#[test]
fn python_openai_sdk_records_and_replays_through_the_proxy() {
    record_then_replay(Client::PythonOpenai);
}

#[test]
fn python_anthropic_sdk_records_and_replays_through_the_proxy() {
    record_then_replay(Client::PythonAnthropic);
}

#[test]
fn node_openai_sdk_records_and_replays_through_the_base_url_route() {
    record_then_replay(Client::NodeOpenai);
}

#[test]
fn curl_records_and_replays_through_the_proxy() {
    record_then_replay(Client::Curl);
}
