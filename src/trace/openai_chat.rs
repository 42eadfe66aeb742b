//! OpenAI Chat Completions (`/v1/chat/completions`), plain and streamed.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Usage;
use super::derive::{
    Event, RequestParts, RequestedCall, ResponseParts, UnknownChunks, array_items,
    id_keyed_results, parse_arguments, push_text, uint,
};

/// Tools offered (`tools[].function.name`, legacy `functions[].name`) and
/// results sent back (`role: tool` messages).
pub(crate) fn parse_request(body: &Value, _warnings: &mut Vec<String>) -> RequestParts {
    let mut parts = RequestParts::for_model(body);
    parts.offer(array_items(body, "tools"), |t| {
        t.get("function")
            .and_then(|f| f.get("name"))
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
    });
    parts.offer(array_items(body, "functions"), |f| {
        f.get("name").and_then(Value::as_str)
    });
    id_keyed_results(
        body.get("messages"),
        |m| m.get("role").and_then(Value::as_str) == Some("tool"),
        "tool_call_id",
        "content",
        &mut parts.results,
    );
    parts
}

/// A `chat.completion` object.
pub(crate) fn parse_response(body: &Value, warnings: &mut Vec<String>) -> ResponseParts {
    let mut out = ResponseParts {
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage: body.get("usage").filter(|u| u.is_object()).map(usage),
        ..Default::default()
    };
    let Some(choice) = first_choice(body) else {
        warnings.push("the response has no choices".into());
        return out;
    };
    out.stop_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let message = choice.get("message").unwrap_or(&Value::Null);
    push_text(message.get("content"), &mut out.text);
    for call in array_items(message, "tool_calls") {
        let function = call.get("function").unwrap_or(&Value::Null);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let raw = function
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.calls.push(RequestedCall {
            id: call.get("id").and_then(Value::as_str).map(str::to_string),
            arguments: parse_arguments(raw, &name, warnings),
            name,
        });
    }
    // The legacy single `function_call`.
    if let Some(function) = message.get("function_call") {
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let raw = function
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.calls.push(RequestedCall {
            id: None,
            arguments: parse_arguments(raw, &name, warnings),
            name,
        });
    }
    out
}

/// `chat.completion.chunk` events: content deltas appended, tool-call deltas
/// merged by `index` (id and name arrive once, arguments in fragments), usage
/// from the final chunk that `stream_options.include_usage` adds.
pub(crate) fn parse_stream(events: &[Event<'_>], warnings: &mut Vec<String>) -> ResponseParts {
    let mut out = ResponseParts::default();
    // index → (id, name, concatenated arguments)
    let mut calls: BTreeMap<u64, (Option<String>, String, String)> = BTreeMap::new();
    let mut unknown = UnknownChunks::default();
    for ev in events {
        let chunk = ev.data.as_ref();
        if !["choices", "usage", "error"]
            .iter()
            .any(|k| chunk.get(k).is_some())
        {
            unknown.note(ev);
            continue;
        }
        if let Some(message) = chunk.get("error").and_then(|e| e.get("message")) {
            warnings.push(format!("stream error: {message}"));
            continue;
        }
        if out.model.is_none() {
            out.model = chunk
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            out.usage = Some(usage(u));
        }
        let Some(choice) = first_choice(chunk) else {
            continue;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            out.stop_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        push_text(delta.get("content"), &mut out.text);
        for tc in array_items(delta, "tool_calls") {
            let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
            let entry = calls.entry(index).or_default();
            if let Some(id) = tc.get("id").and_then(Value::as_str) {
                entry.0 = Some(id.to_string());
            }
            if let Some(function) = tc.get("function") {
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    entry.1.push_str(name);
                }
                if let Some(args) = function.get("arguments").and_then(Value::as_str) {
                    entry.2.push_str(args);
                }
            }
        }
    }
    unknown.warn(warnings);
    for (_, (id, name, raw)) in calls {
        out.calls.push(RequestedCall {
            id,
            arguments: parse_arguments(&raw, &name, warnings),
            name,
        });
    }
    out
}

/// The choice with `index` 0 (the agent's answer when `n` > 1), else the first.
fn first_choice(body: &Value) -> Option<&Value> {
    let choices = body.get("choices")?.as_array()?;
    choices
        .iter()
        .find(|c| c.get("index").and_then(Value::as_u64) == Some(0))
        .or_else(|| choices.first())
}

/// `usage` of Chat Completions: `prompt_tokens` already includes cached tokens.
fn usage(u: &Value) -> Usage {
    let details = |key: &str, field: &str| u.get(key).map(|d| uint(d, field)).unwrap_or(0);
    Usage {
        input_tokens: uint(u, "prompt_tokens"),
        cached_input_tokens: details("prompt_tokens_details", "cached_tokens"),
        cache_write_tokens: 0,
        output_tokens: uint(u, "completion_tokens"),
        reasoning_tokens: details("completion_tokens_details", "reasoning_tokens"),
    }
}
