//! The fake provider, checked on the wire with a plain hyper/rustls client: each
//! API format plain and streamed, script selection, failure injection, h1/h2.

use std::path::PathBuf;
use std::time::Duration;

use agentci::fake::{FakeOptions, FakeProvider, Script};
use serde_json::{Value, json};

use crate::support::http::{Proto, post_json, request, sse_events};
use crate::support::{self, process::Running};

const SCRIPT: &str = r#"
rules:
  - name: weather, first step
    when: {first_user_contains: weather, step: 0}
    reply:
      text: "Checking both."
      tool_calls:
        - {name: get_weather, arguments: {city: Paris, days: 3}}
        - {name: get_time, arguments: {tz: Europe/Paris}}
      usage: {input: 120, output: 30, cached_input: 40, cache_write: 10, reasoning: 6}
  - name: weather, answer
    when: {first_user_contains: weather, step: 2}
    reply: {text: "Sunny and 21C in Paris.", usage: {input: 200, output: 9}}
  - name: flaky
    when: {first_user_contains: flaky}
    replies:
      - error: {status: 429, retry_after_ms: 5}
      - error: {status: 500}
      - text: recovered
  - name: cut
    when: {first_user_contains: cut}
    reply: {text: "one two three four five six", reset_after_events: 3}
  - name: slow
    when: {first_user_contains: slow}
    reply: {text: "a b c", delay_ms: 20, event_delay_ms: 5}
  - name: echo per request
    when: {first_user_contains: "item "}
    replies: [{text: "first answer"}, {text: "second answer"}]
default:
  text: "default reply"
"#;

struct Fake {
    fake: FakeProvider,
    ca: PathBuf,
    _dir: tempfile::TempDir,
}

async fn start(options: FakeOptions) -> Fake {
    let script = Script::parse(SCRIPT).expect("script parses");
    let fake = FakeProvider::start(script, options)
        .await
        .expect("fake starts");
    let dir = support::temp_dir();
    let ca = dir.path().join("fake-ca.pem");
    fake.write_ca_pem(&ca).expect("write CA");
    Fake {
        fake,
        ca,
        _dir: dir,
    }
}

impl Fake {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.fake.base_url())
    }

    async fn post(&self, path: &str, body: Value) -> support::http::Reply {
        post_json(&self.url(path), &body, Some(&self.ca), Proto::H1).await
    }
}

fn chat(user: &str, stream: bool) -> Value {
    json!({"model": "gpt-4o-mini", "stream": stream, "stream_options": if stream { json!({"include_usage": true}) } else { Value::Null },
           "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": user}]})
}

#[tokio::test]
async fn openai_chat_plain_returns_parallel_tool_calls_and_usage() {
    let f = start(FakeOptions::default()).await;
    let reply = f
        .post("/v1/chat/completions", chat("weather in Paris?", false))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert!(reply.header("x-request-id").is_some());
    let body = reply.json();
    assert_eq!(body["object"], "chat.completion");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Checking both.");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris", "days": 3}));
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert_eq!(body["usage"]["prompt_tokens"], 120);
    assert_eq!(body["usage"]["completion_tokens"], 30);
    assert_eq!(body["usage"]["total_tokens"], 150);
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 40);
    assert_eq!(
        body["usage"]["completion_tokens_details"]["reasoning_tokens"],
        6
    );
}

#[tokio::test]
async fn openai_chat_stream_has_tool_call_deltas_usage_chunk_and_done() {
    let f = start(FakeOptions::default()).await;
    let reply = f
        .post("/v1/chat/completions", chat("weather in Paris?", true))
        .await;
    assert_eq!(
        reply.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    let events = sse_events(&reply.text());
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    // Reassemble as an SDK does: text by concatenation, tool calls by index.
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for chunk in &chunks {
        let Some(delta) = chunk["choices"].get(0).map(|c| &c["delta"]) else {
            continue;
        };
        text.push_str(delta["content"].as_str().unwrap_or(""));
        for tc in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = tc["index"].as_u64().unwrap() as usize;
            if calls.len() <= i {
                calls.push((
                    tc["id"].as_str().unwrap().into(),
                    tc["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            } else {
                assert!(
                    tc.get("id").is_none(),
                    "only the first delta carries the id"
                );
            }
            calls[i]
                .2
                .push_str(tc["function"]["arguments"].as_str().unwrap());
        }
    }
    assert_eq!(text, "Checking both.");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].1, "get_time");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].2).unwrap(),
        json!({"city": "Paris", "days": 3})
    );
    assert!(
        chunks
            .iter()
            .filter(|c| c["choices"].as_array().unwrap().len() == 1)
            .count()
            > 6,
        "arguments arrive in fragments"
    );
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(finish["usage"], Value::Null);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], 120);

    // Without include_usage there is no usage chunk and no usage key.
    let mut body = chat("weather in Paris?", true);
    body["stream_options"] = Value::Null;
    let events = sse_events(&f.post("/v1/chat/completions", body).await.text());
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c.get("usage").is_none() && c["choices"].as_array().unwrap().len() == 1)
    );
}

fn responses(user: &str, stream: bool) -> Value {
    json!({"model": "gpt-4.1", "stream": stream, "instructions": "be brief",
           "input": [{"role": "user", "content": [{"type": "input_text", "text": user}]}],
           "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]})
}

#[tokio::test]
async fn openai_responses_plain_and_stream() {
    let f = start(FakeOptions::default()).await;
    let body = f
        .post("/v1/responses", responses("weather?", false))
        .await
        .json();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 3);
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["content"][0]["text"], "Checking both.");
    assert_eq!(output[1]["type"], "function_call");
    assert_eq!(output[2]["name"], "get_time");
    assert_eq!(body["usage"]["input_tokens_details"]["cached_tokens"], 40);
    assert_eq!(
        body["tools"][0]["name"], "get_weather",
        "request settings are echoed"
    );

    let events = sse_events(
        &f.post("/v1/responses", responses("weather?", true))
            .await
            .text(),
    );
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(
        &kinds[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added"
        ]
    );
    assert_eq!(kinds.last(), Some(&"response.completed"));
    for (i, e) in events.iter().enumerate() {
        let data = e.json();
        assert_eq!(
            data["type"],
            e.event.as_deref().unwrap(),
            "event name matches type"
        );
        assert_eq!(data["sequence_number"], i as u64);
    }
    let text: String = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["type"] == "response.output_text.delta")
        .map(|d| d["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "Checking both.");
    let args: String = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["type"] == "response.function_call_arguments.delta" && d["output_index"] == 1)
        .map(|d| d["delta"].as_str().unwrap().to_string())
        .collect();
    let done = events
        .iter()
        .map(|e| e.json())
        .find(|d| d["type"] == "response.function_call_arguments.done" && d["output_index"] == 1)
        .unwrap();
    assert_eq!(args, done["arguments"].as_str().unwrap());
    let completed = events.last().unwrap().json();
    assert_eq!(
        completed["response"]["usage"]["output_tokens_details"]["reasoning_tokens"],
        6
    );
    // Streamed and plain agree, apart from the ids (derived from the request, which differs in `stream`).
    let strip = |v: &Value| {
        let mut v = v.clone();
        for item in v.as_array_mut().unwrap() {
            item.as_object_mut()
                .unwrap()
                .retain(|k, _| k != "id" && k != "call_id");
        }
        v
    };
    assert_eq!(
        strip(&completed["response"]["output"]),
        strip(&body["output"])
    );
}

fn anthropic(user: &str, stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 256, "stream": stream, "system": "be brief",
           "messages": [{"role": "user", "content": user}]})
}

#[tokio::test]
async fn anthropic_messages_plain_and_stream_with_input_json_delta() {
    let f = start(FakeOptions::default()).await;
    let reply = f.post("/v1/messages", anthropic("weather?", false)).await;
    assert!(reply.header("request-id").is_some());
    let body = reply.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["stop_reason"], "tool_use");
    assert_eq!(
        body["content"][1],
        json!({"type": "tool_use", "id": body["content"][1]["id"], "name": "get_weather", "input": {"city": "Paris", "days": 3}})
    );
    // input excludes cache reads and writes: 120 - 40 - 10.
    assert_eq!(
        body["usage"],
        json!({"input_tokens": 70, "cache_read_input_tokens": 40, "cache_creation_input_tokens": 10, "output_tokens": 30})
    );

    let events = sse_events(
        &f.post("/v1/messages", anthropic("weather?", true))
            .await
            .text(),
    );
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(kinds[0], "message_start");
    assert_eq!(&kinds[kinds.len() - 2..], ["message_delta", "message_stop"]);
    assert_eq!(events[0].json()["message"]["usage"]["input_tokens"], 70);
    let json_text: String = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["type"] == "content_block_delta" && d["index"] == 1)
        .map(|d| {
            assert_eq!(d["delta"]["type"], "input_json_delta");
            d["delta"]["partial_json"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&json_text).unwrap(),
        json!({"city": "Paris", "days": 3})
    );
    let starts = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_start"))
        .count();
    let stops = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("content_block_stop"))
        .count();
    assert_eq!((starts, stops), (3, 3));
    let delta = events[events.len() - 2].json();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 30);
}

#[tokio::test]
async fn gemini_generate_content_plain_sse_and_json_array() {
    let f = start(FakeOptions::default()).await;
    let req = json!({"contents": [{"role": "user", "parts": [{"text": "weather?"}]}]});
    let body = f
        .post(
            "/v1beta/models/gemini-2.5-flash:generateContent",
            req.clone(),
        )
        .await
        .json();
    let parts = &body["candidates"][0]["content"]["parts"];
    assert_eq!(
        parts[1]["functionCall"],
        json!({"name": "get_weather", "args": {"city": "Paris", "days": 3}})
    );
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");
    assert_eq!(body["modelVersion"], "gemini-2.5-flash");
    assert_eq!(body["usageMetadata"]["promptTokenCount"], 120);
    assert_eq!(
        body["usageMetadata"]["candidatesTokenCount"], 24,
        "thoughts are counted apart"
    );
    assert_eq!(body["usageMetadata"]["thoughtsTokenCount"], 6);

    let reply = f
        .post(
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            req.clone(),
        )
        .await;
    assert!(
        reply.text().contains("\r\n\r\n"),
        "Gemini frames SSE with CRLF"
    );
    let chunks: Vec<Value> = sse_events(&reply.text()).iter().map(|e| e.json()).collect();
    let last = chunks.last().unwrap();
    assert_eq!(
        last["candidates"][0]["content"]["parts"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "function calls arrive whole"
    );
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c.get("usageMetadata").is_none())
    );
    assert_eq!(last["usageMetadata"]["totalTokenCount"], 150);

    let array = f
        .post("/v1beta/models/gemini-2.5-flash:streamGenerateContent", req)
        .await
        .json();
    assert_eq!(array.as_array().unwrap().len(), chunks.len());
    let array_last = array.as_array().unwrap().last().unwrap();
    assert_eq!(array_last["candidates"], last["candidates"]);
    assert_eq!(array_last["usageMetadata"], last["usageMetadata"]);
}

#[tokio::test]
async fn the_conversation_step_selects_the_rule() {
    let f = start(FakeOptions::default()).await;
    let mut body = chat("weather in Paris?", false);
    let messages = body["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "tool_calls": []}));
    messages.push(json!({"role": "tool", "tool_call_id": "a", "content": "sunny"}));
    messages.push(json!({"role": "tool", "tool_call_id": "b", "content": "10:00"}));
    let reply = f.post("/v1/chat/completions", body).await.json();
    assert_eq!(
        reply["choices"][0]["message"]["content"],
        "Sunny and 21C in Paris."
    );
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    let other = f
        .post("/v1/chat/completions", chat("hello", false))
        .await
        .json();
    assert_eq!(other["choices"][0]["message"]["content"], "default reply");
}

#[tokio::test]
async fn replies_in_turn_are_per_request_and_independent_of_concurrency() {
    let f = start(FakeOptions::default()).await;
    // 16 distinct requests, each sent twice, all at once: every request's first
    // answer is "first answer" and its second "second answer", whatever the interleaving.
    let mut tasks = Vec::new();
    for i in 0..16 {
        for _ in 0..2 {
            let url = f.url("/v1/chat/completions");
            let ca = f.ca.clone();
            tasks.push(tokio::spawn(async move {
                let reply = post_json(
                    &url,
                    &chat(&format!("item {i}"), false),
                    Some(&ca),
                    Proto::H2,
                )
                .await;
                (
                    i,
                    reply.json()["choices"][0]["message"]["content"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            }));
        }
    }
    let mut answers: Vec<(i32, String)> = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers.sort();
    for pair in answers.chunks(2) {
        assert_eq!(
            [pair[0].1.as_str(), pair[1].1.as_str()],
            ["first answer", "second answer"],
            "{pair:?}"
        );
    }
    assert_eq!(f.fake.request_count(), 32);
}

#[tokio::test]
async fn injected_errors_use_each_providers_error_body() {
    let f = start(FakeOptions::default()).await;
    let reply = f.post("/v1/chat/completions", chat("flaky", false)).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after-ms"), Some("5"));
    assert_eq!(reply.json()["error"]["code"], "rate_limit_exceeded");
    let reply = f.post("/v1/chat/completions", chat("flaky", false)).await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.json()["error"]["type"], "server_error");
    let reply = f.post("/v1/chat/completions", chat("flaky", false)).await;
    assert_eq!(
        reply.json()["choices"][0]["message"]["content"],
        "recovered"
    );

    let reply = f.post("/v1/messages", anthropic("flaky", true)).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.json()["error"]["type"], "rate_limit_error");
    assert_eq!(reply.json()["type"], "error");
    let req = json!({"contents": [{"parts": [{"text": "flaky"}]}]});
    let reply = f.post("/v1beta/models/g:generateContent", req).await;
    assert_eq!(reply.json()["error"]["status"], "RESOURCE_EXHAUSTED");

    let reply = f.post("/v1/embeddings", json!({})).await;
    assert_eq!(reply.status, 404);
    let reply = request(
        "POST",
        &f.url("/v1/messages"),
        Some("not json".into()),
        Some(&f.ca),
        Proto::H1,
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn a_reset_cuts_the_stream_after_n_events_on_h1_and_h2() {
    let f = start(FakeOptions::default()).await;
    for proto in [Proto::H1, Proto::H2] {
        let reply = post_json(
            &f.url("/v1/messages"),
            &anthropic("cut", true),
            Some(&f.ca),
            proto,
        )
        .await;
        assert_eq!(reply.status, 200);
        assert!(
            reply.body.is_err(),
            "{proto:?}: the body must end in an error, got {:?}",
            reply.body
        );
    }
    // The plain body is cut half-way.
    let reply = f.post("/v1/chat/completions", chat("cut", false)).await;
    assert!(reply.body.is_err());
}

#[tokio::test]
async fn delays_still_deliver_the_whole_stream() {
    let f = start(FakeOptions::default()).await;
    let events = sse_events(
        &f.post("/v1/chat/completions", chat("slow", true))
            .await
            .text(),
    );
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn h2_is_negotiated_by_alpn_and_plain_http_is_served() {
    let f = start(FakeOptions::default()).await;
    let reply = post_json(
        &f.url("/v1/chat/completions"),
        &chat("hi", false),
        Some(&f.ca),
        Proto::H2,
    )
    .await;
    assert_eq!(reply.version, http::Version::HTTP_2);
    let reply = f.post("/v1/chat/completions", chat("hi", false)).await;
    assert_eq!(reply.version, http::Version::HTTP_11);

    let plain = start(FakeOptions {
        port: 0,
        plain_http: true,
    })
    .await;
    assert!(plain.fake.base_url().starts_with("http://127.0.0.1:"));
    for proto in [Proto::H1, Proto::H2] {
        let reply = post_json(
            &plain.url("/v1/chat/completions"),
            &chat("hi", false),
            None,
            proto,
        )
        .await;
        assert_eq!(
            reply.json()["choices"][0]["message"]["content"],
            "default reply"
        );
    }
}

#[tokio::test]
async fn requests_are_recorded_and_shutdown_closes_the_port() {
    let f = start(FakeOptions::default()).await;
    assert_eq!(f.fake.request_count(), 0);
    let reply = request("GET", &f.url("/v1/models"), None, Some(&f.ca), Proto::H1).await;
    assert_eq!(reply.status, 404);
    f.post("/v1/chat/completions", chat("hi", false)).await;
    let seen = f.fake.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(seen[1].body["messages"][1]["content"], "hi");
    assert_eq!(
        seen[1].headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    let addr = f.fake.addr();
    f.fake.shutdown().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing listens after shutdown"
    );
}

#[test]
fn the_fake_provider_command_serves_until_sigterm() {
    let dir = support::temp_dir();
    let script = dir.path().join("script.yaml");
    std::fs::write(&script, SCRIPT).unwrap();
    let ca = dir.path().join("ca.pem");
    let mut command = std::process::Command::new(support::agentci_bin());
    command
        .arg("fake-provider")
        .arg("--script")
        .arg(&script)
        .arg("--ca-out")
        .arg(&ca);
    let mut running = Running::spawn(
        command,
        |env| env.contains_key("AGENTCI_FAKE_CA"),
        Duration::from_secs(30),
    );
    assert_eq!(running.var("AGENTCI_FAKE_CA"), ca.to_str().unwrap());
    let base = running.var("AGENTCI_FAKE_BASE_URL").to_string();
    let rt = support::runtime();
    let reply = rt.block_on(post_json(
        &format!("{base}/v1/messages"),
        &anthropic("weather?", false),
        Some(&ca),
        Proto::H1,
    ));
    assert_eq!(reply.json()["stop_reason"], "tool_use");
    let status = running.stop("TERM", Duration::from_secs(10));
    assert!(status.success(), "{status:?}\n{}", running.stderr());
}

#[test]
fn a_bad_script_is_a_clear_error() {
    let dir = support::temp_dir();
    let script = dir.path().join("bad.yaml");
    std::fs::write(
        &script,
        "rules:\n  - when: {first_user: x}\n    reply: {text: y}\n",
    )
    .unwrap();
    let output = assert_cmd::Command::new(support::agentci_bin())
        .arg("fake-provider")
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr =
        String::from_utf8_lossy(&output.stderr).replace(dir.path().to_str().unwrap(), "[TMP]");
    insta::assert_snapshot!(stderr);
}
