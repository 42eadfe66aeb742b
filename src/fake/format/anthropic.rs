//! Anthropic Messages: `message` objects and the event stream (`message_start`,
//! `content_block_*` with `text_delta` / `input_json_delta`, `message_delta`, `message_stop`).

use serde_json::{Value, json};

use super::{Ctx, fragments, named_event, text_pieces};
use crate::fake::script::StopReason;

fn stop_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Stop => "end_turn",
        StopReason::ToolCalls => "tool_use",
        StopReason::Length => "max_tokens",
    }
}

/// Anthropic counts cache reads and writes apart from `input_tokens`; the script's
/// `input` includes them, so they are taken out here.
fn usage(ctx: &Ctx, output: u64) -> Value {
    let u = ctx.usage;
    json!({
        "input_tokens": u.input.saturating_sub(u.cached_input + u.cache_write),
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cached_input,
        "output_tokens": output,
    })
}

fn message(ctx: &Ctx, content: Vec<Value>, stop: Value, usage: Value) -> Value {
    json!({
        "id": format!("msg_{}", ctx.seed),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": usage,
    })
}

fn tool_use(call: &super::Call, input: Value) -> Value {
    json!({"type": "tool_use", "id": call.id("toolu_"), "name": call.name, "input": input})
}

/// The non-streamed `message`.
pub(super) fn plain(ctx: &Ctx) -> Value {
    let mut content = Vec::new();
    if let Some(text) = ctx.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in &ctx.calls {
        content.push(tool_use(call, call.input.clone()));
    }
    message(
        ctx,
        content,
        json!(stop_reason(ctx.stop)),
        usage(ctx, ctx.usage.output),
    )
}

/// The event stream.
pub(super) fn stream(ctx: &Ctx) -> Vec<String> {
    let mut events = Vec::new();
    // message_start reports the input side and a provisional output count, as the API does.
    let start = message(ctx, vec![], Value::Null, usage(ctx, 1));
    events.push(named_event(
        &json!({"type": "message_start", "message": start}),
    ));
    events.push(named_event(&json!({"type": "ping"})));
    let mut index = 0;
    if let Some(text) = ctx.text {
        events.push(named_event(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in text_pieces(text) {
            events.push(named_event(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(named_event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in &ctx.calls {
        events.push(named_event(
            &json!({"type": "content_block_start", "index": index,
            "content_block": tool_use(call, json!({}))}),
        ));
        // The streamed JSON is the object's text; the SDK parses the concatenation.
        let text = call.input.to_string();
        for fragment in fragments(&text, 8) {
            events.push(named_event(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        events.push(named_event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    // message_delta's usage is cumulative: the final figures for the whole message.
    events.push(named_event(&json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(ctx.stop), "stop_sequence": null},
        "usage": usage(ctx, ctx.usage.output)})));
    events.push(named_event(&json!({"type": "message_stop"})));
    events
}
