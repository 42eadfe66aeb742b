//! The trace model every later stage reads (engine, reports, baselines).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The provider API an LLM call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI Chat Completions (`/v1/chat/completions`) and compatible APIs.
    OpenaiChat,
    /// OpenAI Responses API (`/v1/responses`).
    OpenaiResponses,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// Google Gemini `generateContent` / `streamGenerateContent`.
    Gemini,
}

/// Everything derived from one cassette.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trace {
    /// The case the cassette belongs to.
    pub case_id: String,
    /// The run's root span: the whole agent run.
    pub root: Span,
    /// LLM calls, in request order.
    pub llm_calls: Vec<LlmCall>,
    /// Tool calls, each once, ordered by when the model requested them.
    pub tool_calls: Vec<ToolCall>,
    /// Handoffs to other agents, in order.
    pub handoffs: Vec<Handoff>,
    /// Every tool name offered to the model in any request (sorted, unique).
    pub tools_available: Vec<String>,
    /// Other HTTP exchanges the agent made (search APIs, trace uploads, …).
    pub http_calls: Vec<HttpCall>,
    /// Sums over the run.
    pub totals: Totals,
    /// The final answer.
    pub answer: Option<String>,
    /// Anything the derivation could not make sense of; never silent.
    pub warnings: Vec<String>,
}

impl Trace {
    /// The names of the tools called, in order (the sequence the path metrics compare).
    pub fn tool_sequence(&self) -> Vec<&str> {
        self.tool_calls.iter().map(|t| t.name.as_str()).collect()
    }
}

/// A span of time relative to the start of the recording.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Span {
    /// What the span covers.
    pub name: String,
    /// Start, in ms from the start of the recording.
    pub start_ms: u64,
    /// Duration in ms.
    pub duration_ms: u64,
}

/// Token counts of one LLM call. `input_tokens` includes cached and cache-write
/// tokens (OpenTelemetry GenAI convention); the parts are kept beside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// All input tokens, cache reads and writes included.
    pub input_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Reasoning tokens (part of `output_tokens`).
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// One call to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmCall {
    /// The exchange's `seq` in the cassette.
    pub seq: u64,
    /// Which API.
    pub provider: Provider,
    /// The URL path called, e.g. `/v1/chat/completions`.
    pub endpoint: String,
    /// The model named in the response (else the request).
    pub model: String,
    /// Token counts.
    pub usage: Usage,
    /// Cost in USD from the price table (0 when unpriced, with a warning).
    pub cost_usd: f64,
    /// Request start to end of response, ms.
    pub latency_ms: u64,
    /// Request start to response headers, ms.
    pub ttfb_ms: u64,
    /// Why generation stopped (`stop`, `tool_calls`, `end_turn`, …).
    pub stop_reason: Option<String>,
    /// Whether the response was streamed (SSE).
    pub streamed: bool,
    /// Tool names offered in the request.
    pub tools_offered: Vec<String>,
    /// The assistant text of the response, if any.
    pub output_text: Option<String>,
    /// The HTTP status.
    pub status: u16,
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// The provider's call id (`call_…`, `toolu_…`; synthesized for Gemini).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Arguments as JSON (a string value when they did not parse, with a warning).
    pub arguments: Value,
    /// The result the agent sent back, when a later request carried it.
    pub result: Option<Value>,
    /// The result was marked as an error (`is_error`, an `error` field, …).
    pub is_error: bool,
    /// Index into `Trace::llm_calls` of the call that requested it.
    pub llm_call: usize,
}

/// A handoff to another agent (a `transfer_to_*` tool call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Handoff {
    /// The target agent, from the tool name (`transfer_to_billing_agent` → `billing_agent`).
    pub to: String,
    /// The tool name as called.
    pub tool_name: String,
    /// The tool call id.
    pub tool_call_id: String,
    /// Index into `Trace::llm_calls` of the call that requested it.
    pub llm_call: usize,
}

/// A non-LLM HTTP exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpCall {
    /// The exchange's `seq`.
    pub seq: u64,
    /// HTTP method.
    pub method: String,
    /// Host (and port when not default).
    pub host: String,
    /// Path without query.
    pub path: String,
    /// HTTP status.
    pub status: u16,
    /// Request start to end of response, ms.
    pub latency_ms: u64,
    /// What it is, when recognised (`agents_trace_upload`).
    pub kind: Option<String>,
}

/// Sums over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Totals {
    /// USD.
    pub cost_usd: f64,
    /// Input tokens (cache included).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input plus output.
    pub total_tokens: u64,
    /// LLM calls (trace uploads excluded).
    pub llm_calls: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// The agent's wall time (the `_end` line), else first request start to last response end.
    pub duration_ms: u64,
}
