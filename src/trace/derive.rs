//! From a cassette's exchanges to a [`Trace`]: routes each exchange to its
//! provider's parser, then joins tool calls with their results, finds
//! handoffs, prices the calls and sums the run. Pure: no disk, no network.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::pricing::PriceTable;
use super::route::{Route, classify_parts, host_and_path};
use super::{
    Handoff, HttpCall, LlmCall, Provider, Span, ToolCall, Totals, Trace, Usage, anthropic, gemini,
    openai_chat, openai_responses,
};
use crate::spec::AnswerSource;
use crate::vcr::cassette::{Body, Cassette, Exchange, SseEvent};

/// How to derive a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct DeriveOptions {
    /// Prices for the cost of each LLM call.
    pub prices: PriceTable,
    /// Tool-name prefix that marks a handoff (`transfer_to_`).
    pub handoff_prefix: String,
    /// Where the final answer comes from.
    pub answer: AnswerSource,
}

impl Default for DeriveOptions {
    fn default() -> Self {
        DeriveOptions {
            prices: PriceTable::builtin(),
            handoff_prefix: "transfer_to_".into(),
            answer: AnswerSource::Stdout,
        }
    }
}

/// What a provider parser read from a response.
#[derive(Debug, Default)]
pub(crate) struct ResponseParts {
    /// The model named by the response.
    pub model: Option<String>,
    /// Token counts; `None` when the response carried none.
    pub usage: Option<Usage>,
    /// Why generation stopped.
    pub stop_reason: Option<String>,
    /// The assistant text (empty when none).
    pub text: String,
    /// Tool calls in the order the response lists them.
    pub calls: Vec<RequestedCall>,
}

/// A tool call as the response states it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestedCall {
    /// The provider's id; `None` for Gemini calls without one (synthesized later).
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// Parsed arguments (a string when they did not parse).
    pub arguments: Value,
}

/// What a provider parser read from a request.
#[derive(Debug, Default)]
pub(crate) struct RequestParts {
    /// The model the request asked for.
    pub model: Option<String>,
    /// Tool names offered.
    pub tools: Vec<String>,
    /// Tool results carried in the conversation.
    pub results: Vec<ToolResult>,
}

impl RequestParts {
    /// The parts of a request asking for `body.model`, nothing read yet.
    pub(crate) fn for_model(body: &Value) -> Self {
        RequestParts {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Default::default()
        }
    }

    /// Records the tool names `name_of` finds in `items` (offered tool definitions).
    pub(crate) fn offer<'a>(
        &mut self,
        items: impl Iterator<Item = &'a Value>,
        name_of: impl Fn(&'a Value) -> Option<&'a str>,
    ) {
        self.tools
            .extend(items.filter_map(name_of).map(str::to_string));
    }
}

/// The items of `value[key]` when it is an array; nothing otherwise.
pub(crate) fn array_items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A tool result found in a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolResult {
    /// How to find the call it answers.
    pub key: ResultKey,
    /// The result content.
    pub content: Value,
    /// The agent marked it as an error.
    pub is_error: bool,
}

/// How a tool result names its call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ResultKey {
    /// By call id (OpenAI, Anthropic, Gemini calls that carry ids).
    Id(String),
    /// By the name and arguments of the call it follows (Gemini without ids).
    NameArgs(String, Value),
}

/// Derives the trace of a cassette. Never fails: what cannot be read becomes a warning.
pub fn derive(cassette: &Cassette, opts: &DeriveOptions) -> Trace {
    let mut warnings: Vec<String> = Vec::new();
    let mut llm_calls: Vec<LlmCall> = Vec::new();
    let mut http_calls: Vec<HttpCall> = Vec::new();
    let mut tools_available: BTreeSet<String> = BTreeSet::new();
    // (response end ms, llm index, position) → call, to order by request time.
    let mut pending: Vec<(u64, usize, usize, RequestedCall)> = Vec::new();
    let mut results: Vec<Vec<ToolResult>> = Vec::new();
    let mut unpriced: BTreeSet<String> = BTreeSet::new();

    for ex in &cassette.exchanges {
        let (host, path) = host_and_path(&ex.request.url);
        let route = classify_parts(&ex.request.method, &host, &path);
        let Route::Llm(provider) = route else {
            http_calls.push(HttpCall {
                seq: ex.seq,
                method: ex.request.method.clone(),
                host,
                path,
                status: ex.response.status,
                latency_ms: ex.timing.total_ms,
                kind: (route == Route::AgentsTraceUpload).then(|| "agents_trace_upload".into()),
            });
            continue;
        };
        let mut local: Vec<String> = Vec::new();
        let request = parse_request(provider, ex, &mut local);
        let streamed = ex.response.events.is_some();
        let response = parse_response(provider, ex, &mut local);
        if ex.response.truncated {
            local.push("the response was cut short upstream (truncated)".into());
        }
        if let Some(err) = &ex.response.error {
            local.push(format!("upstream error: {err}"));
        }
        if ex.response.status >= 400 {
            local.push(format!("HTTP {}", ex.response.status));
        }
        let model = response
            .model
            .clone()
            .or(request.model.clone())
            .or_else(|| gemini::model_from_url(&ex.request.url))
            .unwrap_or_default();
        let ok = (200..300).contains(&ex.response.status);
        if response.usage.is_none() && ok {
            local.push(if streamed && provider == Provider::OpenaiChat {
                "the stream carried no usage (set stream_options.include_usage); tokens and cost count as 0".into()
            } else {
                "the response carried no usage; tokens and cost count as 0".into()
            });
        }
        let usage = response.usage.unwrap_or_default();
        let cost_usd = match opts.prices.lookup(&model) {
            Some((_, price)) => PriceTable::cost(price, &usage),
            None => {
                if usage.total_tokens() > 0 || ok {
                    unpriced.insert(model.clone());
                }
                0.0
            }
        };
        let index = llm_calls.len();
        let end_ms = ex.timing.start_ms.saturating_add(ex.timing.total_ms);
        for (pos, call) in response.calls.into_iter().enumerate() {
            pending.push((end_ms, index, pos, call));
        }
        results.push(request.results);
        tools_available.extend(request.tools.iter().cloned());
        let endpoint = path;
        for w in local {
            warnings.push(format!("seq {} ({endpoint}): {w}", ex.seq));
        }
        llm_calls.push(LlmCall {
            seq: ex.seq,
            provider,
            endpoint,
            model,
            usage,
            cost_usd,
            latency_ms: ex.timing.total_ms,
            ttfb_ms: ex.timing.ttfb_ms,
            stop_reason: response.stop_reason,
            streamed,
            tools_offered: request.tools,
            output_text: (!response.text.is_empty()).then_some(response.text),
            status: ex.response.status,
        });
    }
    for model in &unpriced {
        let shown = if model.is_empty() { "(unnamed)" } else { model };
        warnings.push(format!(
            "model {shown} has no price; its calls cost $0 (add it under `pricing:` in the spec or pass --prices)"
        ));
    }

    let tool_calls = join_tool_calls(pending, results, &mut warnings);
    let handoffs = find_handoffs(&tool_calls, &opts.handoff_prefix);
    let answer = match (
        &opts.answer,
        cassette.end.as_ref().and_then(|e| e.answer.clone()),
    ) {
        (AnswerSource::Stdout, Some(stdout)) => Some(stdout),
        _ => llm_calls.iter().rev().find_map(|c| c.output_text.clone()),
    };
    let first_start = cassette.exchanges.iter().map(|e| e.timing.start_ms).min();
    let last_end = cassette
        .exchanges
        .iter()
        .map(|e| e.timing.start_ms.saturating_add(e.timing.total_ms))
        .max();
    let (root_start, duration_ms) = match (&cassette.end, first_start, last_end) {
        (Some(end), _, _) => (0, end.duration_ms),
        (None, Some(first), Some(last)) => (first, last.saturating_sub(first)),
        _ => (0, 0),
    };
    let totals = Totals {
        // `f64::sum` of nothing is -0.0, which prints as "$-0.000000".
        cost_usd: llm_calls.iter().map(|c| c.cost_usd).sum::<f64>() + 0.0,
        input_tokens: llm_calls.iter().map(|c| c.usage.input_tokens).sum(),
        output_tokens: llm_calls.iter().map(|c| c.usage.output_tokens).sum(),
        total_tokens: llm_calls.iter().map(|c| c.usage.total_tokens()).sum(),
        llm_calls: llm_calls.len() as u64,
        tool_calls: tool_calls.len() as u64,
        duration_ms,
    };
    Trace {
        case_id: cassette.meta.case_id.clone(),
        root: Span {
            name: format!("agent run {}", cassette.meta.case_id),
            start_ms: root_start,
            duration_ms,
        },
        llm_calls,
        tool_calls,
        handoffs,
        tools_available: tools_available.into_iter().collect(),
        http_calls,
        totals,
        answer,
        warnings,
    }
}

/// Orders the requested calls, drops repeats by id, gives Gemini calls stable
/// ids, and attaches each call's first result from a later request.
fn join_tool_calls(
    mut pending: Vec<(u64, usize, usize, RequestedCall)>,
    results: Vec<Vec<ToolResult>>,
    warnings: &mut Vec<String>,
) -> Vec<ToolCall> {
    pending.sort_by_key(|(end, index, pos, _)| (*end, *index, *pos));
    let mut seen: HashSet<String> = HashSet::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    for (_, index, pos, call) in pending {
        // Gemini without ids: the requesting call and the position make a stable id.
        let id = call.id.unwrap_or_else(|| format!("gemini-{index}-{pos}"));
        if !seen.insert(id.clone()) {
            continue;
        }
        calls.push(ToolCall {
            id,
            name: call.name,
            arguments: call.arguments,
            result: None,
            is_error: false,
            llm_call: index,
        });
    }
    let by_id: HashMap<String, usize> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i))
        .collect();
    let mut unknown: BTreeSet<String> = BTreeSet::new();
    // Each request repeats the conversation so far: the nth result for a
    // (name, arguments) pair in a request answers the nth such call.
    for request_results in results {
        let mut nth: HashMap<(String, String), usize> = HashMap::new();
        for result in request_results {
            let target = match &result.key {
                ResultKey::Id(id) => match by_id.get(id) {
                    Some(&i) => Some(i),
                    None => {
                        unknown.insert(id.clone());
                        None
                    }
                },
                ResultKey::NameArgs(name, args) => {
                    let n = nth.entry((name.clone(), args.to_string())).or_insert(0);
                    let found = calls
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| &c.name == name && &c.arguments == args)
                        .nth(*n)
                        .map(|(i, _)| i);
                    *n += 1;
                    found
                }
            };
            if let Some(call) = target.and_then(|i| calls.get_mut(i))
                && call.result.is_none()
            {
                call.result = Some(result.content);
                call.is_error = result.is_error;
            }
        }
    }
    for id in unknown {
        warnings.push(format!(
            "a tool result names call {id}, which no recorded response requested"
        ));
    }
    calls
}

/// Tool calls whose name starts with the handoff prefix.
fn find_handoffs(calls: &[ToolCall], prefix: &str) -> Vec<Handoff> {
    if prefix.is_empty() {
        return Vec::new();
    }
    calls
        .iter()
        .filter_map(|c| {
            let to = c.name.strip_prefix(prefix)?;
            Some(Handoff {
                to: to.to_string(),
                tool_name: c.name.clone(),
                tool_call_id: c.id.clone(),
                llm_call: c.llm_call,
            })
        })
        .collect()
}

fn parse_request(provider: Provider, ex: &Exchange, warnings: &mut Vec<String>) -> RequestParts {
    let body = match json_body(ex.request.body.as_ref()) {
        Ok(Some(body)) => body,
        Ok(None) => {
            warnings.push("the request has no body".into());
            return RequestParts::default();
        }
        Err(why) => {
            warnings.push(format!("the request body {why}"));
            return RequestParts::default();
        }
    };
    match provider {
        Provider::OpenaiChat => openai_chat::parse_request(&body, warnings),
        Provider::OpenaiResponses => openai_responses::parse_request(&body, warnings),
        Provider::Anthropic => anthropic::parse_request(&body, warnings),
        Provider::Gemini => gemini::parse_request(&body, warnings),
    }
}

fn parse_response(provider: Provider, ex: &Exchange, warnings: &mut Vec<String>) -> ResponseParts {
    if let Some(events) = &ex.response.events {
        let events = stream_events(events, warnings);
        return match provider {
            Provider::OpenaiChat => openai_chat::parse_stream(&events, warnings),
            Provider::OpenaiResponses => openai_responses::parse_stream(&events, warnings),
            Provider::Anthropic => anthropic::parse_stream(&events, warnings),
            Provider::Gemini => gemini::parse_stream(&events, warnings),
        };
    }
    let body = match json_body(ex.response.body.as_ref()) {
        Ok(Some(body)) => body,
        Ok(None) => {
            if (200..300).contains(&ex.response.status) {
                warnings.push("the response has no body".into());
            }
            return ResponseParts::default();
        }
        Err(why) => {
            warnings.push(format!("the response body {why}"));
            return ResponseParts::default();
        }
    };
    if !(200..300).contains(&ex.response.status) {
        if let Some(message) = error_message(&body) {
            warnings.push(format!("provider error: {message}"));
        }
        return ResponseParts::default();
    }
    match provider {
        Provider::OpenaiChat => openai_chat::parse_response(&body, warnings),
        Provider::OpenaiResponses => openai_responses::parse_response(&body, warnings),
        Provider::Anthropic => anthropic::parse_response(&body, warnings),
        Provider::Gemini => gemini::parse_response(&body, warnings),
    }
}

/// One stream event reduced to what parsers need: its type and JSON data.
#[derive(Debug)]
pub(crate) struct Event<'a> {
    /// The `event:` field, else the data's `type`.
    pub kind: Option<&'a str>,
    /// The data as JSON.
    pub data: Cow<'a, Value>,
}

/// Keeps the JSON events of a stream; `[DONE]` ends it; other text is a warning.
fn stream_events<'a>(events: &'a [SseEvent], warnings: &mut Vec<String>) -> Vec<Event<'a>> {
    let mut out = Vec::with_capacity(events.len());
    let mut non_json = 0usize;
    for ev in events {
        let data: Cow<'a, Value> = match &ev.data {
            Value::String(s) if s.trim() == "[DONE]" => break,
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(v) if v.is_object() || v.is_array() => Cow::Owned(v),
                _ => {
                    non_json += 1;
                    continue;
                }
            },
            Value::Object(_) | Value::Array(_) => Cow::Borrowed(&ev.data),
            _ => {
                non_json += 1;
                continue;
            }
        };
        let kind = ev.event.as_deref();
        out.push(Event { kind, data });
    }
    if non_json > 0 {
        warnings.push(format!(
            "{non_json} stream event(s) were not JSON and were skipped"
        ));
    }
    out
}

impl Event<'_> {
    /// The event type: the `event:` field, else the data's `type`.
    pub fn kind(&self) -> Option<&str> {
        self.kind
            .or_else(|| self.data.get("type").and_then(Value::as_str))
    }
}

/// Stream chunks a parser did not recognise, reported once per type.
#[derive(Debug, Default)]
pub(crate) struct UnknownChunks {
    kinds: Vec<String>,
}

impl UnknownChunks {
    /// Remembers an unrecognised event by its type (or `untyped`).
    pub fn note(&mut self, ev: &Event<'_>) {
        let kind = ev.kind().unwrap_or("untyped").to_string();
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
    }

    /// One warning per unrecognised type.
    pub fn warn(self, warnings: &mut Vec<String>) {
        for kind in self.kinds {
            warnings.push(format!("ignored unknown stream event type {kind:?}"));
        }
    }
}

/// The body as JSON: `Ok(None)` when absent, `Err(why)` when it is not JSON.
pub(crate) fn json_body(body: Option<&Body>) -> Result<Option<Cow<'_, Value>>, &'static str> {
    match body {
        None => Ok(None),
        Some(Body::Json(v)) => Ok(Some(Cow::Borrowed(v))),
        // A JSON body stored as text (wrong content type): still read it.
        Some(Body::Text(t)) => match serde_json::from_str::<Value>(t) {
            Ok(v) => Ok(Some(Cow::Owned(v))),
            Err(_) => Err("is not JSON (text)"),
        },
        Some(Body::Base64(_)) => Err("is not JSON (binary)"),
    }
}

/// The message of a provider error body (`{"error":{"message":…}}` and kin).
fn error_message(body: &Value) -> Option<String> {
    let err = body.get("error")?;
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| err.as_str())?;
    Some(message.to_string())
}

/// Reads a non-negative integer field; absent or wrong type → 0.
pub(crate) fn uint(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Parses tool arguments sent as a JSON string; an empty string is `{}`; text
/// that does not parse is kept as a string, with a warning.
pub(crate) fn parse_arguments(raw: &str, tool: &str, warnings: &mut Vec<String>) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!(
                "the arguments of tool call {tool} are not valid JSON ({e}); kept as text"
            ));
            Value::String(raw.to_string())
        }
    }
}

/// A tool result as a value: text parts joined into one string, other shapes kept.
pub(crate) fn result_value(content: &Value) -> Value {
    if let Value::Array(parts) = content {
        let texts: Option<Vec<&str>> = parts
            .iter()
            .map(|p| {
                let is_text = matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("text" | "input_text" | "output_text")
                );
                if is_text {
                    p.get("text").and_then(Value::as_str)
                } else {
                    None
                }
            })
            .collect();
        if let Some(texts) = texts
            && !texts.is_empty()
        {
            return Value::String(texts.concat());
        }
    }
    content.clone()
}

/// Whether a result says it failed: a JSON object (or JSON text of one) with a non-null `error`.
pub(crate) fn result_says_error(content: &Value) -> bool {
    let has_error = |v: &Value| v.get("error").is_some_and(|e| !e.is_null() && e != false);
    match content {
        Value::String(s) => serde_json::from_str::<Value>(s).is_ok_and(|v| has_error(&v)),
        other => has_error(other),
    }
}

/// Appends the text of a content field that is a string or a list of text parts.
/// Tool results carried in a request list (`messages`, `input`): every item
/// `is_result` accepts, keyed by its `id_key` field, with `content_key` as the result.
pub(crate) fn id_keyed_results(
    items: Option<&Value>,
    is_result: impl Fn(&Value) -> bool,
    id_key: &str,
    content_key: &str,
    out: &mut Vec<ToolResult>,
) {
    for item in items.and_then(Value::as_array).into_iter().flatten() {
        if !is_result(item) {
            continue;
        }
        let Some(id) = item.get(id_key).and_then(Value::as_str) else {
            continue;
        };
        let content = result_value(item.get(content_key).unwrap_or(&Value::Null));
        out.push(ToolResult {
            key: ResultKey::Id(id.to_string()),
            is_error: result_says_error(&content),
            content,
        });
    }
}

pub(crate) fn push_text(content: Option<&Value>, out: &mut String) {
    match content {
        Some(Value::String(s)) => out.push_str(s),
        Some(Value::Array(parts)) => {
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                }
            }
        }
        _ => {}
    }
}
