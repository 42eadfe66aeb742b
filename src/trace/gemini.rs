//! Google Gemini `generateContent` and `streamGenerateContent` (SSE with
//! `alt=sse`, else a JSON array of chunks).

use serde_json::Value;

use super::Usage;
use super::derive::{
    Event, RequestParts, RequestedCall, ResponseParts, ResultKey, ToolResult, UnknownChunks,
    array_items, push_text, result_says_error, uint,
};

/// The model named in the URL path (`…/models/gemini-2.5-flash:generateContent`).
pub(crate) fn model_from_url(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next()?;
    let tail = path.rsplit("/models/").next()?;
    if tail.len() == path.len() {
        return None;
    }
    let model = tail.split(':').next()?;
    (!model.is_empty()).then(|| model.to_string())
}

/// Tools offered (`tools[].functionDeclarations[].name`) and results sent back
/// (`functionResponse` parts, keyed by id when present, else by the name and
/// arguments of the `functionCall` they answer).
pub(crate) fn parse_request(body: &Value, _warnings: &mut Vec<String>) -> RequestParts {
    let mut parts = RequestParts::for_model(body);
    let declarations = array_items(body, "tools").flat_map(|tool| {
        tool.get("functionDeclarations")
            .or_else(|| tool.get("function_declarations"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    });
    parts.offer(declarations, |d| d.get("name").and_then(Value::as_str));
    // The calls of the latest model turn, to pair each response with its call.
    let mut last_calls: Vec<&Value> = Vec::new();
    for content in array_items(body, "contents") {
        let content_parts = content.get("parts").and_then(Value::as_array);
        let calls: Vec<&Value> = content_parts
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("functionCall").or_else(|| p.get("function_call")))
            .collect();
        if !calls.is_empty() {
            last_calls = calls;
        }
        let mut used = vec![false; last_calls.len()];
        for part in content_parts.into_iter().flatten() {
            let Some(fr) = part
                .get("functionResponse")
                .or_else(|| part.get("function_response"))
            else {
                continue;
            };
            let name = fr.get("name").and_then(Value::as_str).unwrap_or_default();
            let content = fr.get("response").cloned().unwrap_or(Value::Null);
            let is_error = result_says_error(&content);
            let key = match fr.get("id").and_then(Value::as_str) {
                Some(id) => ResultKey::Id(id.to_string()),
                None => {
                    // The first unused call of the previous model turn with this name.
                    let paired = last_calls.iter().enumerate().find(|(i, c)| {
                        !used.get(*i).copied().unwrap_or(true)
                            && c.get("name").and_then(Value::as_str) == Some(name)
                    });
                    let Some((i, call)) = paired else {
                        continue;
                    };
                    if let Some(slot) = used.get_mut(i) {
                        *slot = true;
                    }
                    ResultKey::NameArgs(name.to_string(), args(call))
                }
            };
            parts.results.push(ToolResult {
                key,
                content,
                is_error,
            });
        }
    }
    parts
}

/// A `GenerateContentResponse`, or the JSON array `streamGenerateContent`
/// returns without `alt=sse`.
pub(crate) fn parse_response(body: &Value, warnings: &mut Vec<String>) -> ResponseParts {
    let mut out = ResponseParts::default();
    match body {
        Value::Array(chunks) => {
            for chunk in chunks {
                read_chunk(chunk, &mut out, warnings);
            }
        }
        chunk => read_chunk(chunk, &mut out, warnings),
    }
    out
}

/// SSE: every event is a `GenerateContentResponse` chunk; text accumulates,
/// function calls arrive whole, the last `usageMetadata` is the total.
pub(crate) fn parse_stream(events: &[Event<'_>], warnings: &mut Vec<String>) -> ResponseParts {
    let mut out = ResponseParts::default();
    let mut unknown = UnknownChunks::default();
    for ev in events {
        let chunk = ev.data.as_ref();
        if !["candidates", "usageMetadata", "error", "promptFeedback"]
            .iter()
            .any(|k| chunk.get(k).is_some())
        {
            unknown.note(ev);
            continue;
        }
        read_chunk(chunk, &mut out, warnings);
    }
    unknown.warn(warnings);
    if out.stop_reason.is_none() {
        warnings.push("the stream ended without a finishReason".into());
    }
    out
}

fn read_chunk(chunk: &Value, out: &mut ResponseParts, warnings: &mut Vec<String>) {
    if let Some(err) = chunk.get("error") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        warnings.push(format!("stream error: {message}"));
        return;
    }
    if let Some(model) = chunk.get("modelVersion").and_then(Value::as_str) {
        out.model = Some(model.to_string());
    }
    if let Some(u) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
        // Thoughts are billed as output but reported beside the candidates.
        let thoughts = uint(u, "thoughtsTokenCount");
        out.usage = Some(Usage {
            input_tokens: uint(u, "promptTokenCount"),
            cached_input_tokens: uint(u, "cachedContentTokenCount"),
            cache_write_tokens: 0,
            output_tokens: uint(u, "candidatesTokenCount") + thoughts,
            reasoning_tokens: thoughts,
        });
    }
    let candidates = chunk.get("candidates").and_then(Value::as_array);
    // The first candidate is the one the agent reads.
    let Some(candidate) = candidates.and_then(|c| {
        c.iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
    }) else {
        return;
    };
    if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
        out.stop_reason = Some(reason.to_string());
    }
    let parts = candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array);
    for part in parts.into_iter().flatten() {
        // Thought summaries are not the answer.
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        push_text(part.get("text"), &mut out.text);
        if let Some(fc) = part.get("functionCall") {
            out.calls.push(RequestedCall {
                id: fc.get("id").and_then(Value::as_str).map(str::to_string),
                name: fc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                arguments: args(fc),
            });
        }
    }
}

/// A call's `args`, `{}` when absent.
fn args(call: &Value) -> Value {
    call.get("args")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()))
}
