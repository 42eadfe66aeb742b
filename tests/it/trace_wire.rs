//! Renders an agent conversation as the exchanges each provider's public wire
//! format would carry, plain or streamed (SSE), so tests can derive traces
//! from them and compare with the conversation itself.

use agentci::trace::{Provider, Usage};
use agentci::vcr::cassette::{
    Body, Cassette, CassetteEnd, CassetteMeta, Exchange, RecordedRequest, RecordedResponse,
    SseEvent, Timing,
};
use serde_json::{Value, json};

/// A whole agent run: the user asks, the model answers in turns.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub provider: Provider,
    pub model: String,
    pub query: String,
    pub tools: Vec<String>,
    pub turns: Vec<Turn>,
}

/// One model response and the tool results the agent sends after it.
#[derive(Debug, Clone)]
pub struct Turn {
    pub text: String,
    pub calls: Vec<Call>,
    pub usage: Usage,
}

/// One tool call and its result.
#[derive(Debug, Clone)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub args: Value,
    pub result: Value,
    pub is_error: bool,
}

/// Splits text into pieces of `n` characters (at least one piece when empty is not wanted).
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The result as the provider carries it: text for OpenAI and Anthropic, an object for Gemini.
pub fn wire_result(provider: Provider, result: &Value) -> Value {
    match provider {
        Provider::Gemini => match result {
            Value::Object(_) => result.clone(),
            other => json!({ "result": other }),
        },
        _ => match result {
            Value::String(_) => result.clone(),
            other => Value::String(other.to_string()),
        },
    }
}

/// The id the trace should show for a call (Gemini ids are synthesized).
pub fn expected_id(provider: Provider, turn: usize, pos: usize, call: &Call) -> String {
    match provider {
        Provider::Gemini => format!("gemini-{turn}-{pos}"),
        _ => call.id.clone(),
    }
}

impl Conversation {
    /// The cassette of this conversation, plain or streamed.
    pub fn cassette(&self, streamed: bool) -> Cassette {
        let mut exchanges = Vec::new();
        let mut t = 0u64;
        for (i, turn) in self.turns.iter().enumerate() {
            let request = self.request(i, streamed);
            let response = if streamed {
                RecordedResponse {
                    status: 200,
                    headers: [("content-type".to_string(), "text/event-stream".to_string())].into(),
                    body: None,
                    events: Some(self.events(turn)),
                    truncated: false,
                    error: None,
                }
            } else {
                RecordedResponse {
                    status: 200,
                    headers: [("content-type".to_string(), "application/json".to_string())].into(),
                    body: Some(Body::Json(self.response(turn))),
                    events: None,
                    truncated: false,
                    error: None,
                }
            };
            exchanges.push(Exchange {
                seq: i as u64,
                request,
                response,
                timing: Timing {
                    start_ms: t,
                    ttfb_ms: 100,
                    total_ms: 400,
                },
                match_key: format!("sha256:{i:064}"),
            });
            t += 500;
        }
        Cassette {
            meta: CassetteMeta {
                format: 1,
                tool_version: "0.1.0".into(),
                case_id: "conversation".into(),
                agent: Some("demo".into()),
                query: Some(self.query.clone()),
                recorded_at: "2026-01-01T00:00:00Z".into(),
                spec_hash: None,
                record_mode: "once".into(),
                trial: None,
            },
            exchanges,
            end: Some(CassetteEnd {
                exit_code: Some(0),
                answer: self.turns.last().map(|t| t.text.clone()),
                duration_ms: t + 50,
            }),
        }
    }

    fn url(&self, streamed: bool) -> String {
        match self.provider {
            Provider::OpenaiChat => "https://api.openai.com/v1/chat/completions".into(),
            Provider::OpenaiResponses => "https://api.openai.com/v1/responses".into(),
            Provider::Anthropic => "https://api.anthropic.com/v1/messages".into(),
            Provider::Gemini if streamed => format!(
                "https://generativelanguage.googleapis.com/v1beta/models/{}:streamGenerateContent?alt=sse",
                self.model
            ),
            Provider::Gemini => format!(
                "https://generativelanguage.googleapis.com/v1beta/models/{}:generateContent",
                self.model
            ),
        }
    }

    /// The request of turn `i`: the query, every earlier turn and its results, the tools.
    fn request(&self, i: usize, streamed: bool) -> RecordedRequest {
        let history = &self.turns[..i];
        let p = self.provider;
        let body = match p {
            Provider::OpenaiChat => {
                let mut messages = vec![json!({"role": "user", "content": self.query})];
                for turn in history {
                    let calls: Vec<Value> = turn.calls.iter().map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.args.to_string()}})).collect();
                    let mut m = json!({"role": "assistant", "content": if turn.text.is_empty() { Value::Null } else { json!(turn.text) }});
                    if !calls.is_empty() {
                        m["tool_calls"] = json!(calls);
                    }
                    messages.push(m);
                    for c in &turn.calls {
                        messages.push(json!({"role": "tool", "tool_call_id": c.id, "content": wire_result(p, &c.result)}));
                    }
                }
                let tools: Vec<Value> = self.tools.iter().map(|t| json!({"type": "function", "function": {"name": t, "description": format!("The {t} tool"), "parameters": {"type": "object", "properties": {}}}})).collect();
                let mut body = json!({"model": self.model, "messages": messages, "tools": tools});
                if streamed {
                    body["stream"] = json!(true);
                    body["stream_options"] = json!({"include_usage": true});
                }
                body
            }
            Provider::OpenaiResponses => {
                let mut input = vec![json!({"role": "user", "content": self.query})];
                for turn in history {
                    if !turn.text.is_empty() {
                        input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": turn.text}]}));
                    }
                    for c in &turn.calls {
                        input.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.args.to_string()}));
                    }
                    for c in &turn.calls {
                        input.push(json!({"type": "function_call_output", "call_id": c.id, "output": wire_result(p, &c.result)}));
                    }
                }
                let tools: Vec<Value> = self.tools.iter().map(|t| json!({"type": "function", "name": t, "parameters": {"type": "object", "properties": {}}})).collect();
                let mut body = json!({"model": self.model, "input": input, "tools": tools});
                if streamed {
                    body["stream"] = json!(true);
                }
                body
            }
            Provider::Anthropic => {
                let mut messages = vec![json!({"role": "user", "content": self.query})];
                for turn in history {
                    let mut content = Vec::new();
                    if !turn.text.is_empty() {
                        content.push(json!({"type": "text", "text": turn.text}));
                    }
                    for c in &turn.calls {
                        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}));
                    }
                    messages.push(json!({"role": "assistant", "content": content}));
                    if !turn.calls.is_empty() {
                        let results: Vec<Value> = turn.calls.iter().map(|c| {
                            let mut r = json!({"type": "tool_result", "tool_use_id": c.id, "content": wire_result(p, &c.result)});
                            if c.is_error {
                                r["is_error"] = json!(true);
                            }
                            r
                        }).collect();
                        messages.push(json!({"role": "user", "content": results}));
                    }
                }
                let tools: Vec<Value> = self.tools.iter().map(|t| json!({"name": t, "description": format!("The {t} tool"), "input_schema": {"type": "object", "properties": {}}})).collect();
                let mut body = json!({"model": self.model, "max_tokens": 1024, "messages": messages, "tools": tools});
                if streamed {
                    body["stream"] = json!(true);
                }
                body
            }
            Provider::Gemini => {
                let mut contents = vec![json!({"role": "user", "parts": [{"text": self.query}]})];
                for turn in history {
                    let mut parts = Vec::new();
                    if !turn.text.is_empty() {
                        parts.push(json!({"text": turn.text}));
                    }
                    for c in &turn.calls {
                        parts.push(json!({"functionCall": {"name": c.name, "args": c.args}}));
                    }
                    contents.push(json!({"role": "model", "parts": parts}));
                    if !turn.calls.is_empty() {
                        let results: Vec<Value> = turn.calls.iter().map(|c| json!({"functionResponse": {"name": c.name, "response": wire_result(p, &c.result)}})).collect();
                        contents.push(json!({"role": "user", "parts": results}));
                    }
                }
                let decls: Vec<Value> = self.tools.iter().map(|t| json!({"name": t, "description": format!("The {t} tool"), "parameters": {"type": "object", "properties": {}}})).collect();
                json!({"contents": contents, "tools": [{"functionDeclarations": decls}]})
            }
        };
        RecordedRequest {
            method: "POST".into(),
            url: self.url(streamed),
            headers: [("content-type".to_string(), "application/json".to_string())].into(),
            body: Some(Body::Json(body)),
        }
    }

    /// The plain (non-streamed) response body of a turn.
    fn response(&self, turn: &Turn) -> Value {
        let u = &turn.usage;
        match self.provider {
            Provider::OpenaiChat => {
                let calls: Vec<Value> = turn.calls.iter().map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.args.to_string()}})).collect();
                let mut message = json!({"role": "assistant", "content": if turn.text.is_empty() { Value::Null } else { json!(turn.text) }, "refusal": null});
                if !calls.is_empty() {
                    message["tool_calls"] = json!(calls);
                }
                json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": self.model,
                       "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": chat_finish(turn)}],
                       "usage": chat_usage(u)})
            }
            Provider::OpenaiResponses => {
                json!({"id": "resp_1", "object": "response", "created_at": 1767225600,
                "status": "completed", "model": self.model, "output": responses_output(turn), "usage": responses_usage(u)})
            }
            Provider::Anthropic => {
                let mut content = Vec::new();
                if !turn.text.is_empty() {
                    content.push(json!({"type": "text", "text": turn.text}));
                }
                for c in &turn.calls {
                    content.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}),
                    );
                }
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": self.model, "content": content,
                       "stop_reason": anthropic_stop(turn), "stop_sequence": null, "usage": anthropic_usage(u)})
            }
            Provider::Gemini => {
                let mut parts = Vec::new();
                if !turn.text.is_empty() {
                    parts.push(json!({"text": turn.text}));
                }
                for c in &turn.calls {
                    parts.push(json!({"functionCall": {"name": c.name, "args": c.args}}));
                }
                json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                       "usageMetadata": gemini_usage(u), "modelVersion": self.model, "responseId": "r1"})
            }
        }
    }

    /// The SSE events of a turn, as the provider streams them.
    fn events(&self, turn: &Turn) -> Vec<SseEvent> {
        let mut out: Vec<(Option<&str>, Value)> = Vec::new();
        let u = &turn.usage;
        match self.provider {
            Provider::OpenaiChat => {
                let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1767225600, "model": self.model, "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}], "usage": null});
                out.push((
                    None,
                    chunk(json!({"role": "assistant", "content": ""}), Value::Null),
                ));
                for p in pieces(&turn.text, 3) {
                    out.push((None, chunk(json!({"content": p}), Value::Null)));
                }
                for (i, c) in turn.calls.iter().enumerate() {
                    out.push((None, chunk(json!({"tool_calls": [{"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": ""}}]}), Value::Null)));
                    for p in pieces(&c.args.to_string(), 4) {
                        out.push((
                            None,
                            chunk(
                                json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                                Value::Null,
                            ),
                        ));
                    }
                }
                out.push((None, chunk(json!({}), json!(chat_finish(turn)))));
                out.push((None, json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1767225600, "model": self.model, "choices": [], "usage": chat_usage(u)})));
                out.push((None, json!("[DONE]")));
            }
            Provider::OpenaiResponses => {
                let base = json!({"id": "resp_1", "object": "response", "created_at": 1767225600, "status": "in_progress", "model": self.model, "output": [], "usage": null});
                out.push((
                    Some("response.created"),
                    json!({"type": "response.created", "sequence_number": 0, "response": base}),
                ));
                out.push((
                    Some("response.in_progress"),
                    json!({"type": "response.in_progress", "sequence_number": 1, "response": base}),
                ));
                let items = responses_output(turn);
                for (i, item) in items.iter().enumerate() {
                    if item["type"] == "message" {
                        out.push((Some("response.output_item.added"), json!({"type": "response.output_item.added", "output_index": i, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}})));
                        out.push((Some("response.content_part.added"), json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": i, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
                        for p in pieces(&turn.text, 3) {
                            out.push((Some("response.output_text.delta"), json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": i, "content_index": 0, "delta": p})));
                        }
                        out.push((Some("response.output_text.done"), json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": i, "content_index": 0, "text": turn.text})));
                    } else {
                        let mut added = item.clone();
                        added["arguments"] = json!("");
                        added["status"] = json!("in_progress");
                        out.push((Some("response.output_item.added"), json!({"type": "response.output_item.added", "output_index": i, "item": added})));
                        let args = item["arguments"].as_str().unwrap_or_default().to_string();
                        for p in pieces(&args, 4) {
                            out.push((Some("response.function_call_arguments.delta"), json!({"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": i, "delta": p})));
                        }
                        out.push((Some("response.function_call_arguments.done"), json!({"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": i, "arguments": args})));
                    }
                    out.push((Some("response.output_item.done"), json!({"type": "response.output_item.done", "output_index": i, "item": item})));
                }
                let done = json!({"id": "resp_1", "object": "response", "created_at": 1767225600, "status": "completed", "model": self.model, "output": items, "usage": responses_usage(u)});
                out.push((
                    Some("response.completed"),
                    json!({"type": "response.completed", "response": done}),
                ));
            }
            Provider::Anthropic => {
                let start_usage = {
                    let mut s = anthropic_usage(u);
                    s["output_tokens"] = json!(1);
                    s
                };
                out.push((Some("message_start"), json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": self.model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage}})));
                out.push((Some("ping"), json!({"type": "ping"})));
                let mut index = 0;
                if !turn.text.is_empty() {
                    out.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
                    for p in pieces(&turn.text, 3) {
                        out.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}})));
                    }
                    out.push((
                        Some("content_block_stop"),
                        json!({"type": "content_block_stop", "index": index}),
                    ));
                    index += 1;
                }
                for c in &turn.calls {
                    out.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}})));
                    for p in pieces(&c.args.to_string(), 4) {
                        out.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}})));
                    }
                    out.push((
                        Some("content_block_stop"),
                        json!({"type": "content_block_stop", "index": index}),
                    ));
                    index += 1;
                }
                out.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": anthropic_stop(turn), "stop_sequence": null}, "usage": {"output_tokens": u.output_tokens}})));
                out.push((Some("message_stop"), json!({"type": "message_stop"})));
            }
            Provider::Gemini => {
                let chunk = |parts: Value, last: bool| {
                    let mut c = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "modelVersion": self.model, "responseId": "r1"});
                    if last {
                        c["candidates"][0]["finishReason"] = json!("STOP");
                        c["usageMetadata"] = gemini_usage(u);
                    } else {
                        c["usageMetadata"] = json!({"promptTokenCount": u.input_tokens, "totalTokenCount": u.input_tokens});
                    }
                    c
                };
                for p in pieces(&turn.text, 5) {
                    out.push((None, chunk(json!([{"text": p}]), false)));
                }
                let calls: Vec<Value> = turn
                    .calls
                    .iter()
                    .map(|c| json!({"functionCall": {"name": c.name, "args": c.args}}))
                    .collect();
                out.push((None, chunk(json!(calls), true)));
            }
        }
        out.into_iter()
            .enumerate()
            .map(|(i, (event, data))| SseEvent {
                t_ms: i as u64 * 5,
                event: event.map(str::to_string),
                data,
                id: None,
            })
            .collect()
    }
}

fn chat_finish(turn: &Turn) -> &'static str {
    if turn.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn anthropic_stop(turn: &Turn) -> &'static str {
    if turn.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn chat_usage(u: &Usage) -> Value {
    json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens, "total_tokens": u.input_tokens + u.output_tokens,
           "prompt_tokens_details": {"cached_tokens": u.cached_input_tokens, "audio_tokens": 0},
           "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens, "audio_tokens": 0}})
}

fn responses_usage(u: &Usage) -> Value {
    json!({"input_tokens": u.input_tokens, "input_tokens_details": {"cached_tokens": u.cached_input_tokens},
           "output_tokens": u.output_tokens, "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
           "total_tokens": u.input_tokens + u.output_tokens})
}

/// Anthropic reports input without the cache parts.
fn anthropic_usage(u: &Usage) -> Value {
    json!({"input_tokens": u.input_tokens - u.cached_input_tokens - u.cache_write_tokens,
           "cache_creation_input_tokens": u.cache_write_tokens, "cache_read_input_tokens": u.cached_input_tokens,
           "output_tokens": u.output_tokens})
}

/// Gemini reports thoughts beside the candidates.
fn gemini_usage(u: &Usage) -> Value {
    json!({"promptTokenCount": u.input_tokens, "candidatesTokenCount": u.output_tokens - u.reasoning_tokens,
           "thoughtsTokenCount": u.reasoning_tokens, "cachedContentTokenCount": u.cached_input_tokens,
           "totalTokenCount": u.input_tokens + u.output_tokens})
}

fn responses_output(turn: &Turn) -> Vec<Value> {
    let mut items = Vec::new();
    if !turn.text.is_empty() {
        items.push(json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}));
    }
    for (i, c) in turn.calls.iter().enumerate() {
        items.push(
            json!({"id": format!("fc_{i}"), "type": "function_call", "status": "completed",
                          "call_id": c.id, "name": c.name, "arguments": c.args.to_string()}),
        );
    }
    items
}
