//! Gemini `generateContent` and `streamGenerateContent` (SSE with `alt=sse`, else a
//! streamed JSON array): candidates with text and `functionCall` parts, `usageMetadata`.

use serde_json::{Value, json};

use super::{Ctx, text_pieces};
use crate::fake::script::StopReason;

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        // Gemini reports STOP for function calls too.
        StopReason::Stop | StopReason::ToolCalls => "STOP",
        StopReason::Length => "MAX_TOKENS",
    }
}

/// Gemini counts thoughts apart from candidates; the script's `output` includes them.
fn usage(ctx: &Ctx) -> Value {
    let u = ctx.usage;
    let candidates = u.output.saturating_sub(u.reasoning);
    let mut meta = json!({
        "promptTokenCount": u.input,
        "candidatesTokenCount": candidates,
        "totalTokenCount": u.input + u.output,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": u.input}],
    });
    if u.cached_input > 0 {
        meta["cachedContentTokenCount"] = json!(u.cached_input);
    }
    if u.reasoning > 0 {
        meta["thoughtsTokenCount"] = json!(u.reasoning);
    }
    meta
}

fn response(ctx: &Ctx, parts: Vec<Value>, finish: Option<&str>, usage: Option<Value>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    let mut body = json!({
        "candidates": [candidate],
        "modelVersion": ctx.model,
        "responseId": ctx.seed,
    });
    if let Some(usage) = usage {
        body["usageMetadata"] = usage;
    }
    body
}

fn call_parts(ctx: &Ctx) -> Vec<Value> {
    ctx.calls
        .iter()
        .map(|c| json!({"functionCall": {"name": c.name, "args": c.input}}))
        .collect()
}

/// The non-streamed `GenerateContentResponse`.
pub(super) fn plain(ctx: &Ctx) -> Value {
    let mut parts = Vec::new();
    if let Some(text) = ctx.text {
        parts.push(json!({"text": text}));
    }
    parts.extend(call_parts(ctx));
    response(ctx, parts, Some(finish_reason(ctx.stop)), Some(usage(ctx)))
}

/// The streamed responses: one per text piece, function calls whole (Gemini does
/// not stream arguments), the last one with `finishReason` and `usageMetadata`.
fn chunks(ctx: &Ctx) -> Vec<Value> {
    let mut parts: Vec<Vec<Value>> = ctx
        .text
        .map(|t| {
            text_pieces(t)
                .into_iter()
                .map(|p| vec![json!({"text": p})])
                .collect()
        })
        .unwrap_or_default();
    let calls = call_parts(ctx);
    if !calls.is_empty() {
        parts.push(calls);
    }
    if parts.is_empty() {
        parts.push(vec![json!({"text": ""})]);
    }
    let last = parts.len() - 1;
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let done = i == last;
            response(
                ctx,
                p,
                done.then(|| finish_reason(ctx.stop)),
                done.then(|| usage(ctx)),
            )
        })
        .collect()
}

/// `streamGenerateContent?alt=sse`: `data:` events separated by CRLF, as Google sends them.
pub(super) fn stream_sse(ctx: &Ctx) -> Vec<String> {
    chunks(ctx)
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

/// `streamGenerateContent` without `alt=sse`: one JSON array sent element by element.
pub(super) fn stream_array(ctx: &Ctx) -> Vec<String> {
    let chunks = chunks(ctx);
    let n = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let open = if i == 0 { "[" } else { "" };
            let close = if i + 1 == n { "]" } else { ",\r\n" };
            format!("{open}{c}{close}")
        })
        .collect()
}
