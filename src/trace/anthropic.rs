//! Anthropic Messages (`/v1/messages`), plain and streamed.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Usage;
use super::derive::{
    Event, RequestParts, RequestedCall, ResponseParts, ResultKey, ToolResult, array_items,
    parse_arguments, result_value,
};

/// Tools offered (`tools[].name`) and results sent back (`tool_result` blocks,
/// with their `is_error`).
pub(crate) fn parse_request(body: &Value, _warnings: &mut Vec<String>) -> RequestParts {
    let mut parts = RequestParts::for_model(body);
    parts.offer(array_items(body, "tools"), |t| {
        t.get("name").and_then(Value::as_str)
    });
    for msg in array_items(body, "messages") {
        for block in array_items(msg, "content") {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
                continue;
            };
            parts.results.push(ToolResult {
                key: ResultKey::Id(id.to_string()),
                content: result_value(block.get("content").unwrap_or(&Value::Null)),
                is_error: block.get("is_error").and_then(Value::as_bool) == Some(true),
            });
        }
    }
    parts
}

/// A `message` object.
pub(crate) fn parse_response(body: &Value, _warnings: &mut Vec<String>) -> ResponseParts {
    let mut out = ResponseParts {
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage: body.get("usage").filter(|u| u.is_object()).map(|u| {
            let mut acc = RawUsage::default();
            acc.update(u);
            acc.usage()
        }),
        stop_reason: body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        ..Default::default()
    };
    for block in array_items(body, "content") {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    out.text.push_str(t);
                }
            }
            Some("tool_use") => out.calls.push(RequestedCall {
                id: block.get("id").and_then(Value::as_str).map(str::to_string),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                arguments: block
                    .get("input")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Default::default())),
            }),
            _ => {}
        }
    }
    out
}

/// A content block being streamed.
#[derive(Debug, Default)]
struct Block {
    kind: String,
    id: Option<String>,
    name: String,
    text: String,
    /// The `input` of `content_block_start` (used when no `input_json_delta` follows).
    start_input: Option<Value>,
    /// Concatenated `input_json_delta.partial_json`.
    json: String,
}

/// The usage fields as reported, before input is summed.
#[derive(Debug, Default, Clone, Copy)]
struct RawUsage {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
}

impl RawUsage {
    /// Takes every field present: `message_delta` usage is cumulative, so a later value replaces.
    fn update(&mut self, u: &Value) {
        let set = |slot: &mut u64, key: &str| {
            if let Some(v) = u.get(key).and_then(Value::as_u64) {
                *slot = v;
            }
        };
        set(&mut self.input, "input_tokens");
        set(&mut self.cache_read, "cache_read_input_tokens");
        set(&mut self.cache_write, "cache_creation_input_tokens");
        set(&mut self.output, "output_tokens");
    }

    /// Anthropic's `input_tokens` excludes cache reads and writes; the trace reports the sum.
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.input + self.cache_read + self.cache_write,
            cached_input_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            output_tokens: self.output,
            reasoning_tokens: 0,
        }
    }
}

/// `message_start`, `content_block_*` (text and `input_json_delta` fragments
/// merged per block index), `message_delta` (stop reason, cumulative usage).
pub(crate) fn parse_stream(events: &[Event<'_>], warnings: &mut Vec<String>) -> ResponseParts {
    let mut out = ResponseParts::default();
    let mut raw: Option<RawUsage> = None;
    let mut blocks: BTreeMap<u64, Block> = BTreeMap::new();
    let mut stopped = false;
    let mut unknown: Vec<String> = Vec::new();
    for ev in events {
        let data = ev.data.as_ref();
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match ev.kind().unwrap_or_default() {
            "message_start" => {
                let message = data.get("message").unwrap_or(&Value::Null);
                out.model = message
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if let Some(u) = message.get("usage").filter(|u| u.is_object()) {
                    raw.get_or_insert_with(RawUsage::default).update(u);
                }
            }
            "content_block_start" => {
                let cb = data.get("content_block").unwrap_or(&Value::Null);
                let text = |k| {
                    cb.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                blocks.insert(
                    index,
                    Block {
                        kind: text("type"),
                        id: cb.get("id").and_then(Value::as_str).map(str::to_string),
                        name: text("name"),
                        text: text("text"),
                        start_input: cb.get("input").cloned(),
                        json: String::new(),
                    },
                );
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let block = blocks.entry(index).or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        block.text.push_str(
                            delta
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        );
                    }
                    Some("input_json_delta") => {
                        block.json.push_str(
                            delta
                                .get("partial_json")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        );
                    }
                    // thinking, signature and citation deltas do not change the trace.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    out.stop_reason = Some(reason.to_string());
                }
                if let Some(u) = data.get("usage").filter(|u| u.is_object()) {
                    raw.get_or_insert_with(RawUsage::default).update(u);
                }
            }
            "message_stop" => stopped = true,
            "content_block_stop" | "ping" => {}
            "error" => {
                let message = data
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                warnings.push(format!("stream error: {message}"));
            }
            other => {
                if !unknown.iter().any(|u| u == other) {
                    unknown.push(other.to_string());
                }
            }
        }
    }
    for kind in unknown {
        warnings.push(format!("ignored unknown stream event type {kind:?}"));
    }
    if !stopped {
        warnings.push("the stream ended before message_stop".into());
    }
    out.usage = raw.map(RawUsage::usage);
    for block in blocks.into_values() {
        match block.kind.as_str() {
            "text" => out.text.push_str(&block.text),
            "tool_use" => {
                let arguments = if block.json.is_empty() {
                    block
                        .start_input
                        .unwrap_or_else(|| Value::Object(Default::default()))
                } else {
                    parse_arguments(&block.json, &block.name, warnings)
                };
                out.calls.push(RequestedCall {
                    id: block.id,
                    name: block.name,
                    arguments,
                });
            }
            _ => {}
        }
    }
    out
}
