//! Rendering a scripted reply into each provider's public wire format, plain or
//! streamed. Pure functions: a reply and a request in, a body or events out.

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::request::{Api, Delivery, RequestView};
use super::script::{ErrorReply, Reply, StopReason, ToolCallReply, UsageReply};

/// A fixed creation time: replies are deterministic so re-recorded cassettes diff cleanly.
pub const CREATED: i64 = 1_700_000_000;

/// A rendered answer, before it is put on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// HTTP status.
    pub status: u16,
    /// Extra response headers (content type is implied by `body`).
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: RenderedBody,
}

/// A body: one JSON document, or a sequence of framed events.
#[derive(Debug, Clone, PartialEq)]
pub enum RenderedBody {
    /// `application/json`.
    Json(Value),
    /// `text/event-stream`: each entry is one complete, framed SSE event.
    Sse(Vec<String>),
    /// `application/json` sent in pieces: Gemini's streamed JSON array.
    JsonArray(Vec<String>),
}

/// Everything a format needs, resolved once from the reply and the request.
pub(crate) struct Ctx<'a> {
    pub view: &'a RequestView,
    pub text: Option<&'a str>,
    pub calls: Vec<Call>,
    pub usage: UsageReply,
    pub model: String,
    pub stop: StopReason,
    /// Hex seed for ids, unique per (request, rule, turn).
    pub seed: String,
}

/// A tool call with its id and argument text resolved.
pub(crate) struct Call {
    /// The scripted id, or a generated suffix (see [`Call::id`]).
    id: String,
    generated: bool,
    pub name: String,
    /// Arguments as JSON text (what OpenAI sends).
    pub arguments: String,
    /// Arguments as a JSON object (what Anthropic and Gemini send).
    pub input: Value,
}

/// Renders `reply` for `view` in the API's format and the requested delivery.
pub fn render(
    reply: &Reply,
    view: &RequestView,
    delivery: Delivery,
    rule: Option<usize>,
    turn: usize,
) -> Rendered {
    let seed = id_seed(view, rule, turn);
    if let Some(error) = &reply.error {
        return render_error(view.api, error, &seed);
    }
    let ctx = Ctx::new(reply, view, seed);
    let body = match (view.api, delivery) {
        (Api::OpenAiChat, Delivery::Plain) => RenderedBody::Json(openai_chat::plain(&ctx)),
        (Api::OpenAiChat, _) => RenderedBody::Sse(openai_chat::stream(&ctx)),
        (Api::OpenAiResponses, Delivery::Plain) => {
            RenderedBody::Json(openai_responses::plain(&ctx))
        }
        (Api::OpenAiResponses, _) => RenderedBody::Sse(openai_responses::stream(&ctx)),
        (Api::Anthropic, Delivery::Plain) => RenderedBody::Json(anthropic::plain(&ctx)),
        (Api::Anthropic, _) => RenderedBody::Sse(anthropic::stream(&ctx)),
        (Api::Gemini, Delivery::Plain) => RenderedBody::Json(gemini::plain(&ctx)),
        (Api::Gemini, Delivery::Sse) => RenderedBody::Sse(gemini::stream_sse(&ctx)),
        (Api::Gemini, Delivery::JsonArray) => RenderedBody::JsonArray(gemini::stream_array(&ctx)),
    };
    Rendered {
        status: 200,
        headers: request_id_headers(view.api, &ctx.seed),
        body,
    }
}

/// A provider-style error body for `status` on `api` (also used for bad requests).
pub fn render_error(api: Api, error: &ErrorReply, seed: &str) -> Rendered {
    let status = error.status;
    let message = error
        .message
        .clone()
        .unwrap_or_else(|| default_error_message(status).to_string());
    let body = match api {
        Api::OpenAiChat | Api::OpenAiResponses => {
            let (kind, code) = match status {
                400 => ("invalid_request_error", Value::Null),
                401 => ("invalid_request_error", json!("invalid_api_key")),
                404 => ("invalid_request_error", json!("model_not_found")),
                429 => ("requests", json!("rate_limit_exceeded")),
                _ => ("server_error", Value::Null),
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
        Api::Anthropic => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message},
                   "request_id": format!("req_{seed}")})
        }
        Api::Gemini => {
            let kind = match status {
                400 => "INVALID_ARGUMENT",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                _ => "INTERNAL",
            };
            json!({"error": {"code": status, "message": message, "status": kind}})
        }
    };
    let mut headers = request_id_headers(api, seed);
    if let Some(ms) = error.retry_after_ms {
        headers.push(("retry-after-ms", ms.to_string()));
        headers.push(("retry-after", ms.div_ceil(1000).to_string()));
    }
    Rendered {
        status,
        headers,
        body: RenderedBody::Json(body),
    }
}

fn default_error_message(status: u16) -> &'static str {
    match status {
        400 => "Invalid request.",
        401 => "Incorrect API key provided.",
        404 => "Not found.",
        429 => "Rate limit reached. Please try again later.",
        529 => "Overloaded.",
        _ => "The server had an error while processing your request.",
    }
}

/// The request-id header each provider sends (volatile: the proxy must not store it).
fn request_id_headers(api: Api, seed: &str) -> Vec<(&'static str, String)> {
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => vec![("x-request-id", format!("req_{seed}"))],
        Api::Anthropic => vec![("request-id", format!("req_{seed}"))],
        Api::Gemini => vec![],
    }
}

fn id_seed(view: &RequestView, rule: Option<usize>, turn: usize) -> String {
    let mut hash = Sha256::new();
    hash.update(view.canonical.as_bytes());
    hash.update(format!("|{rule:?}|{turn}").as_bytes());
    hex::encode(&hash.finalize()[..12])
}

impl<'a> Ctx<'a> {
    fn new(reply: &'a Reply, view: &'a RequestView, seed: String) -> Self {
        let calls: Vec<Call> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| Call::new(call, &seed, i))
            .collect();
        let text = reply.text.as_deref();
        let usage = reply.usage.unwrap_or_else(|| {
            // Roughly four characters a token: plausible numbers for unscripted usage.
            let out_chars = text.map_or(0, str::len)
                + calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>();
            UsageReply {
                input: (view.canonical.len() as u64).div_ceil(4).max(1),
                output: (out_chars as u64).div_ceil(4).max(1),
                ..UsageReply::default()
            }
        });
        let stop = reply.stop_reason.unwrap_or(if calls.is_empty() {
            StopReason::Stop
        } else {
            StopReason::ToolCalls
        });
        let model = reply
            .model
            .clone()
            .or_else(|| view.model.clone())
            .unwrap_or_else(|| "fake-model".into());
        Ctx {
            view,
            text,
            calls,
            usage,
            model,
            stop,
            seed,
        }
    }
}

impl Call {
    fn new(call: &ToolCallReply, seed: &str, index: usize) -> Self {
        let (arguments, input) = match &call.arguments {
            // A string is sent verbatim (it may even be invalid JSON, to test agents).
            Value::String(s) => (
                s.clone(),
                serde_json::from_str(s).unwrap_or_else(|_| json!({})),
            ),
            other => (other.to_string(), other.clone()),
        };
        Call {
            id: call
                .id
                .clone()
                .unwrap_or_else(|| format!("{}{index}", seed.get(..16).unwrap_or(seed))),
            generated: call.id.is_none(),
            name: call.name.clone(),
            arguments,
            input,
        }
    }
}

impl Call {
    /// The call id: the scripted one verbatim, else `prefix` + a deterministic suffix.
    pub fn id(&self, prefix: &str) -> String {
        if self.generated {
            format!("{prefix}{}", self.id)
        } else {
            self.id.clone()
        }
    }
}

/// Splits text into word-sized stream deltas (each keeps its trailing whitespace).
pub(crate) fn text_pieces(text: &str) -> Vec<&str> {
    let pieces: Vec<&str> = text.split_inclusive(' ').collect();
    if pieces.is_empty() { vec![""] } else { pieces }
}

/// Splits JSON argument text into fragments of about `size` bytes, on char boundaries.
pub(crate) fn fragments(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// One SSE event with a `data:` line only (OpenAI Chat).
pub(crate) fn data_event(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// One SSE event with an `event:` line naming its type (Responses, Anthropic).
pub(crate) fn named_event(data: &Value) -> String {
    let name = data
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    format!("event: {name}\ndata: {data}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_cover_the_text_on_char_boundaries() {
        let text = r#"{"city":"Zürich","days":3}"#;
        let parts = fragments(text, 5);
        assert_eq!(parts.concat(), text);
        assert!(parts.len() > 3);
        assert_eq!(text_pieces("a b c").concat(), "a b c");
        assert_eq!(text_pieces(""), [""]);
    }
}
