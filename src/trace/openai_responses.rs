//! OpenAI Responses API (`/v1/responses`), plain and streamed.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Usage;
use super::derive::{
    Event, RequestParts, RequestedCall, ResponseParts, array_items, id_keyed_results,
    parse_arguments, uint,
};

/// Tools offered (`tools[].name`; built-in tools by their `type`) and results
/// sent back (`function_call_output` input items).
pub(crate) fn parse_request(body: &Value, _warnings: &mut Vec<String>) -> RequestParts {
    let mut parts = RequestParts::for_model(body);
    parts.offer(array_items(body, "tools"), |t| {
        t.get("name")
            .or_else(|| t.get("type"))
            .and_then(Value::as_str)
    });
    id_keyed_results(
        body.get("input"),
        |i| i.get("type").and_then(Value::as_str) == Some("function_call_output"),
        "call_id",
        "output",
        &mut parts.results,
    );
    parts
}

/// A `response` object.
pub(crate) fn parse_response(body: &Value, warnings: &mut Vec<String>) -> ResponseParts {
    let mut out = ResponseParts {
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage: body.get("usage").filter(|u| u.is_object()).map(usage),
        stop_reason: stop_reason(body),
        ..Default::default()
    };
    let items = body.get("output").and_then(Value::as_array);
    read_items(items.into_iter().flatten(), &mut out, warnings);
    out
}

/// The `response.*` events: the final `response.completed` (or `.incomplete`
/// / `.failed`) carries the whole response; when the stream ends before it, the
/// output is rebuilt from `output_item` events and deltas, with a warning.
pub(crate) fn parse_stream(events: &[Event<'_>], warnings: &mut Vec<String>) -> ResponseParts {
    let mut last_response: Option<&Value> = None;
    let mut finished: Option<&Value> = None;
    // output_index → item, built from added/delta/done events.
    let mut items: BTreeMap<u64, Value> = BTreeMap::new();
    let mut unknown: Vec<String> = Vec::new();
    for ev in events {
        let data = ev.data.as_ref();
        let kind = ev.kind().unwrap_or_default();
        let index = data
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match kind {
            "response.created" | "response.in_progress" => {
                last_response = data.get("response").or(last_response);
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                finished = data.get("response");
            }
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(item) = data.get("item") {
                    items.insert(index, item.clone());
                }
            }
            "response.output_text.delta" => {
                let delta = data
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let item = items
                    .entry(index)
                    .or_insert_with(|| serde_json::json!({"type": "message", "content": []}));
                append_text(item, delta);
            }
            "response.function_call_arguments.delta" => {
                let delta = data
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some(Value::Object(item)) = items.get_mut(&index) {
                    let args = item
                        .entry("arguments")
                        .or_insert_with(|| Value::String(String::new()));
                    if let Value::String(s) = args {
                        s.push_str(delta);
                    }
                }
            }
            "error" => {
                let message = data
                    .get("message")
                    .or_else(|| data.get("error").and_then(|e| e.get("message")))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                warnings.push(format!("stream error: {message}"));
            }
            // The API has many more `response.*` events (reasoning summaries,
            // built-in tool progress, annotations); none changes the trace.
            k if k.starts_with("response.") => {}
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
    match finished {
        Some(response)
            if response
                .get("output")
                .and_then(Value::as_array)
                .is_some_and(|o| !o.is_empty())
                || items.is_empty() =>
        {
            parse_response(response, warnings)
        }
        Some(response) => {
            // A completed event without its output (some gateways strip it).
            let mut out = parse_response(response, warnings);
            read_items(items.values(), &mut out, warnings);
            out
        }
        None => {
            warnings.push("the stream ended before response.completed".into());
            let mut out = ResponseParts {
                model: last_response
                    .and_then(|r| r.get("model"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                ..Default::default()
            };
            read_items(items.values(), &mut out, warnings);
            out
        }
    }
}

/// Appends streamed text to a message item's first `output_text` part.
fn append_text(item: &mut Value, delta: &str) {
    let Some(Value::Array(content)) = item.get_mut("content") else {
        return;
    };
    if !content
        .iter()
        .any(|p| p.get("type").and_then(Value::as_str) == Some("output_text"))
    {
        content.push(serde_json::json!({"type": "output_text", "text": ""}));
    }
    let part = content
        .iter_mut()
        .find(|p| p.get("type").and_then(Value::as_str) == Some("output_text"));
    if let Some(Value::String(text)) = part.and_then(|p| p.get_mut("text")) {
        text.push_str(delta);
    }
}

/// Reads `message` (their `output_text`) and `function_call` output items.
fn read_items<'a>(
    items: impl Iterator<Item = &'a Value>,
    out: &mut ResponseParts,
    warnings: &mut Vec<String>,
) {
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in array_items(item, "content") {
                    if part.get("type").and_then(Value::as_str) == Some("output_text")
                        && let Some(t) = part.get("text").and_then(Value::as_str)
                    {
                        out.text.push_str(t);
                    }
                }
            }
            Some("function_call") => {
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let raw = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.calls.push(RequestedCall {
                    id: item
                        .get("call_id")
                        .or_else(|| item.get("id"))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    arguments: parse_arguments(raw, &name, warnings),
                    name,
                });
            }
            _ => {}
        }
    }
}

/// `completed`, or the reason a response is `incomplete`.
fn stop_reason(body: &Value) -> Option<String> {
    let reason = body
        .get("incomplete_details")
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str);
    reason
        .or_else(|| body.get("status").and_then(Value::as_str))
        .map(str::to_string)
}

/// `usage` of the Responses API: `input_tokens` already includes cached tokens.
fn usage(u: &Value) -> Usage {
    let details = |key: &str, field: &str| u.get(key).map(|d| uint(d, field)).unwrap_or(0);
    Usage {
        input_tokens: uint(u, "input_tokens"),
        cached_input_tokens: details("input_tokens_details", "cached_tokens"),
        cache_write_tokens: 0,
        output_tokens: uint(u, "output_tokens"),
        reasoning_tokens: details("output_tokens_details", "reasoning_tokens"),
    }
}
