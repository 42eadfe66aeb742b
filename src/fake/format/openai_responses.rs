//! OpenAI Responses API: `response` objects and the typed event stream
//! (`response.created` … `response.completed`), each event with a `sequence_number`.

use serde_json::{Value, json};

use super::{CREATED, Ctx, fragments, named_event, text_pieces};
use crate::fake::script::StopReason;

fn usage(ctx: &Ctx) -> Value {
    let u = ctx.usage;
    json!({
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cached_input},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.input + u.output,
    })
}

fn message_id(ctx: &Ctx) -> String {
    format!("msg_{}", ctx.seed)
}

fn call_item_id(ctx: &Ctx, index: usize) -> String {
    format!("fc_{}{index}", ctx.seed)
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// The finished output items: the message (when there is text), then each function call.
fn output_items(ctx: &Ctx) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(text) = ctx.text {
        items.push(
            json!({"type": "message", "id": message_id(ctx), "status": "completed",
                          "role": "assistant", "content": [output_text(text)]}),
        );
    }
    for (i, call) in ctx.calls.iter().enumerate() {
        items.push(json!({"type": "function_call", "id": call_item_id(ctx, i),
                          "call_id": call.id("call_"), "name": call.name,
                          "arguments": call.arguments, "status": "completed"}));
    }
    items
}

/// The `response` object in a given state; echoes request settings as the API does.
fn response(ctx: &Ctx, status: &str, output: Vec<Value>, usage: Value) -> Value {
    let request = |key: &str, default: Value| ctx.view.body.get(key).cloned().unwrap_or(default);
    let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
    json!({
        "id": format!("resp_{}", ctx.seed),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": incomplete,
        "instructions": request("instructions", Value::Null),
        "max_output_tokens": request("max_output_tokens", Value::Null),
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": request("parallel_tool_calls", json!(true)),
        "previous_response_id": request("previous_response_id", Value::Null),
        "reasoning": {"effort": null, "summary": null},
        "store": request("store", json!(true)),
        "temperature": request("temperature", json!(1.0)),
        "text": {"format": {"type": "text"}},
        "tool_choice": request("tool_choice", json!("auto")),
        "tools": request("tools", json!([])),
        "top_p": request("top_p", json!(1.0)),
        "truncation": "disabled",
        "usage": usage,
        "metadata": request("metadata", json!({})),
    })
}

fn final_status(ctx: &Ctx) -> &'static str {
    match ctx.stop {
        StopReason::Length => "incomplete",
        StopReason::Stop | StopReason::ToolCalls => "completed",
    }
}

/// The non-streamed `response`.
pub(super) fn plain(ctx: &Ctx) -> Value {
    response(ctx, final_status(ctx), output_items(ctx), usage(ctx))
}

/// The event stream.
pub(super) fn stream(ctx: &Ctx) -> Vec<String> {
    let mut seq = 0u64;
    let mut events = Vec::new();
    let mut emit = |mut event: Value| {
        event["sequence_number"] = json!(seq);
        seq += 1;
        events.push(named_event(&event));
    };
    let started = response(ctx, "in_progress", vec![], Value::Null);
    emit(json!({"type": "response.created", "response": started}));
    emit(json!({"type": "response.in_progress", "response": started}));
    let items = output_items(ctx);
    let mut output_index = 0;
    if let Some(text) = ctx.text {
        let item_id = message_id(ctx);
        emit(
            json!({"type": "response.output_item.added", "output_index": output_index,
            "item": {"type": "message", "id": item_id, "status": "in_progress",
                     "role": "assistant", "content": []}}),
        );
        emit(
            json!({"type": "response.content_part.added", "item_id": item_id,
            "output_index": output_index, "content_index": 0, "part": output_text("")}),
        );
        for piece in text_pieces(text) {
            emit(
                json!({"type": "response.output_text.delta", "item_id": item_id,
                "output_index": output_index, "content_index": 0, "delta": piece, "logprobs": []}),
            );
        }
        emit(
            json!({"type": "response.output_text.done", "item_id": item_id,
            "output_index": output_index, "content_index": 0, "text": text, "logprobs": []}),
        );
        emit(
            json!({"type": "response.content_part.done", "item_id": item_id,
            "output_index": output_index, "content_index": 0, "part": output_text(text)}),
        );
        emit(
            json!({"type": "response.output_item.done", "output_index": output_index,
            "item": items.get(output_index).cloned().unwrap_or(Value::Null)}),
        );
        output_index += 1;
    }
    for (i, call) in ctx.calls.iter().enumerate() {
        let item_id = call_item_id(ctx, i);
        emit(
            json!({"type": "response.output_item.added", "output_index": output_index,
            "item": {"type": "function_call", "id": item_id, "call_id": call.id("call_"),
                     "name": call.name, "arguments": "", "status": "in_progress"}}),
        );
        for fragment in fragments(&call.arguments, 8) {
            emit(
                json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                "output_index": output_index, "delta": fragment}),
            );
        }
        emit(
            json!({"type": "response.function_call_arguments.done", "item_id": item_id,
            "output_index": output_index, "name": call.name, "arguments": call.arguments}),
        );
        emit(
            json!({"type": "response.output_item.done", "output_index": output_index,
            "item": items.get(output_index).cloned().unwrap_or(Value::Null)}),
        );
        output_index += 1;
    }
    let status = final_status(ctx);
    let kind = if status == "completed" {
        "response.completed"
    } else {
        "response.incomplete"
    };
    emit(json!({"type": kind, "response": response(ctx, status, items, usage(ctx))}));
    events
}
