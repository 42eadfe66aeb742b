//! OpenAI Chat Completions: `chat.completion` objects and `chat.completion.chunk`
//! streams with tool-call deltas, the optional usage chunk and `[DONE]`.

use serde_json::{Value, json};

use super::{CREATED, Ctx, data_event, fragments, text_pieces};
use crate::fake::script::StopReason;

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Stop => "stop",
        StopReason::ToolCalls => "tool_calls",
        StopReason::Length => "length",
    }
}

fn usage(ctx: &Ctx) -> Value {
    let u = ctx.usage;
    json!({
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cached_input, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    })
}

fn id(ctx: &Ctx) -> String {
    format!("chatcmpl-{}", ctx.seed)
}

/// The non-streamed `chat.completion`.
pub(super) fn plain(ctx: &Ctx) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": ctx.text,
        "refusal": null,
        "annotations": [],
    });
    if !ctx.calls.is_empty() {
        message["tool_calls"] = ctx
            .calls
            .iter()
            .map(|c| {
                json!({"id": c.id("call_"), "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    json!({
        "id": id(ctx),
        "object": "chat.completion",
        "created": CREATED,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": finish_reason(ctx.stop)}],
        "usage": usage(ctx),
        "service_tier": "default",
        "system_fingerprint": "fp_fake",
    })
}

/// The `chat.completion.chunk` stream, ending with `data: [DONE]`.
pub(super) fn stream(ctx: &Ctx) -> Vec<String> {
    let id = id(ctx);
    let chunk = |delta: Value, finish: Value| {
        let mut c = json!({
            "id": id, "object": "chat.completion.chunk", "created": CREATED,
            "model": ctx.model, "service_tier": "default", "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        // With include_usage every chunk carries `usage: null` until the last one.
        if ctx.view.include_usage {
            c["usage"] = Value::Null;
        }
        data_event(&c.to_string())
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    )];
    if let Some(text) = ctx.text {
        for piece in text_pieces(text) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (index, call) in ctx.calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id("call_"), "type": "function",
                                   "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for fragment in fragments(&call.arguments, 8) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                Value::Null,
            ));
        }
    }
    events.push(chunk(json!({}), json!(finish_reason(ctx.stop))));
    if ctx.view.include_usage {
        let last = json!({
            "id": id, "object": "chat.completion.chunk", "created": CREATED,
            "model": ctx.model, "service_tier": "default", "system_fingerprint": "fp_fake",
            "choices": [], "usage": usage(ctx),
        });
        events.push(data_event(&last.to_string()));
    }
    events.push(data_event("[DONE]"));
    events
}
