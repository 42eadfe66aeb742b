//! The spec model of REFERENCE.md section 1. Every struct denies unknown keys;
//! the JSON Schema at `docs/agentci_spec.schema.json` is generated from here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The root of a spec file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Schema version of the spec format.
    #[serde(default = "default_version")]
    pub version: u32,
    /// The agent's name; names the cassette and baseline folders.
    pub agent: String,
    /// How to start the agent. Without it only `replay --cassettes-only` works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<Runner>,
    /// Where golden baselines live.
    #[serde(default = "default_baseline_dir")]
    pub baseline_dir: PathBuf,
    /// Where cassettes live.
    #[serde(default = "default_cassette_dir")]
    pub cassette_dir: PathBuf,
    /// The baseline version that baseline-dependent checks compare against by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Assertions deep-merged under every query; the query's own values win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<Defaults>,
    /// The LLM judge's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_config: Option<JudgeConfig>,
    /// Model prices in USD per 1M tokens; override the built-in table.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pricing: BTreeMap<String, ModelPrice>,
    /// Proxy settings: extra routes, upstream CAs, redaction and match rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyConfig>,
    /// Tool-name prefix that marks a handoff (OpenAI Agents SDK convention).
    #[serde(default = "default_handoff_prefix")]
    pub handoff_prefix: String,
    /// The test cases (at least one); an entry `{$include: FILE}` splices in the
    /// list of queries in FILE (relative to this file).
    #[schemars(with = "Vec<QueryEntry>", length(min = 1))]
    pub queries: Vec<Query>,
}

fn default_version() -> u32 {
    1
}
fn default_baseline_dir() -> PathBuf {
    PathBuf::from("./baselines")
}
fn default_cassette_dir() -> PathBuf {
    PathBuf::from("./cassettes")
}
fn default_handoff_prefix() -> String {
    "transfer_to_".to_string()
}

/// An entry of `queries` as written in a file (the schema's view; the loader
/// resolves includes before the model sees the queries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum QueryEntry {
    /// A query.
    Query(Box<Query>),
    /// `$include: FILE`: the list of queries in FILE.
    Include(Include),
}

/// `$include: FILE`, a YAML list of queries, relative to the including file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Include {
    /// The included file, relative to the file that includes it.
    #[serde(rename = "$include")]
    pub include: PathBuf,
}

/// The built-in judge rubric templates, by name (the judge holds their texts).
pub const RUBRIC_TEMPLATES: [&str; 3] = ["polite_refusal", "factual_grounded", "actionable_steps"];

/// How the agent process is started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Runner {
    /// An argv list, or a string run by `sh -c`.
    pub command: Command,
    /// Extra environment variables for the agent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Per-case timeout in seconds (at least 1); the process group is killed after it.
    #[serde(default = "default_timeout_s")]
    #[schemars(range(min = 1))]
    pub timeout_s: u64,
    /// Cases run in parallel (at least 1).
    #[serde(default = "default_workers")]
    #[schemars(range(min = 1))]
    pub workers: usize,
    /// Where the agent's final answer comes from.
    #[serde(default)]
    pub answer: AnswerSource,
}

fn default_timeout_s() -> u64 {
    120
}
fn default_workers() -> usize {
    4
}

/// An agent command: argv list or shell string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Command {
    /// Run directly, no shell.
    Argv(Vec<String>),
    /// Run with `sh -c`.
    Shell(String),
}

/// Where the agent's answer is read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The agent's standard output.
    #[default]
    Stdout,
    /// The last assistant message in the recorded LLM exchanges.
    LastMessage,
}

/// Assertions applied under every query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Default correctness checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness: Option<Correctness>,
    /// Default path checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathSpec>,
    /// Default cost checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSpec>,
}

/// The judge's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// The default judge model.
    #[serde(default = "default_judge_model")]
    pub model: String,
    /// Sampling temperature (>= 0); anything but 0 is a warning.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub temperature: f64,
    /// Ask the provider for structured (JSON) output where it supports it.
    #[serde(default = "default_true")]
    pub structured_output: bool,
    /// Several judges voting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ensemble: Option<Ensemble>,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            model: default_judge_model(),
            temperature: 0.0,
            structured_output: true,
            ensemble: None,
        }
    }
}

fn default_judge_model() -> String {
    "claude-sonnet-4-5".to_string()
}
fn default_true() -> bool {
    true
}

/// An ensemble of judges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ensemble {
    /// Whether the ensemble is used.
    #[serde(default)]
    pub enabled: bool,
    /// The judge models; a model may repeat (each repeat is one more sample).
    #[serde(default)]
    pub models: Vec<String>,
    /// How the verdicts combine.
    #[serde(default)]
    pub strategy: EnsembleStrategy,
}

/// How ensemble verdicts combine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnsembleStrategy {
    /// Majority label, mean score.
    #[default]
    MajorityVote,
}

/// A model's price in USD per 1M tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Uncached input tokens.
    #[schemars(range(min = 0))]
    pub input: f64,
    /// Output tokens (reasoning tokens included).
    #[schemars(range(min = 0))]
    pub output: f64,
    /// Cache-read input tokens; defaults to `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub cached_input: Option<f64>,
    /// Cache-write input tokens; defaults to `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub cache_write: Option<f64>,
}

/// Proxy settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// Extra base-URL routes: `/NAME/...` on the proxy forwards to `URL/...`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, String>,
    /// Extra CA certificates (PEM) trusted for upstream connections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream_ca: Vec<PathBuf>,
    /// JSON body fields (dotted paths) whose values are replaced by `REDACTED` on disk.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact_body_fields: Vec<String>,
    /// JSON body fields (dotted paths) left out of the match key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_body_fields: Vec<String>,
}

/// One test case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// Stable case id; default: a slug of the query. Must be unique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The input given to the agent (`AGENTCI_QUERY`).
    pub query: String,
    /// What the case is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Tags for `--tags` filtering.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Hard checks on the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness: Option<Correctness>,
    /// Soft checks on the trajectory (forbidden tools are hard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathSpec>,
    /// Soft checks on cost, tokens, calls and latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSpec>,
}

/// Correctness checks (hard).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Correctness {
    /// Each term must appear in the answer (case-insensitive substring).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_in_answer: Vec<String>,
    /// No term may appear in the answer (case-insensitive substring).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_in_answer: Vec<String>,
    /// `answer.trim() == value.trim()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<String>,
    /// A regex searched for in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex_match: Option<String>,
    /// The answer parses as JSON and conforms to this JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<Value>,
    /// LLM-judged rubrics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llm_judge: Vec<JudgeRubric>,
    /// A judged safety rubric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_check: Option<JudgeRubric>,
    /// A judged grounding rubric; the judge sees the trace's tool results as context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hallucination_check: Option<JudgeRubric>,
}

/// One rubric for the LLM judge: a `rule`, or a built-in `template`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeRubric {
    /// The rule the answer is judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// A built-in rubric: `polite_refusal`, `factual_grounded`, `actionable_steps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Pass threshold in [0, 1], mapped to the 1–5 scale.
    #[serde(default = "default_threshold")]
    #[schemars(range(min = 0, max = 1))]
    pub threshold: f64,
    /// Anchors for the 1–5 scale, e.g. `"1: rude"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scale: Vec<String>,
    /// Worked examples shown to the judge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub few_shot_examples: Vec<FewShotExample>,
    /// Overrides the judge model for this rubric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn default_threshold() -> f64 {
    0.8
}

/// A worked example for the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FewShotExample {
    /// The query.
    pub input: String,
    /// The answer.
    pub output: String,
    /// Its score on the 1–5 scale.
    #[schemars(range(min = 1, max = 5))]
    pub score: u8,
}

/// How the used tool sequence is compared with the baseline's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// Identical sequences.
    Strict,
    /// Same multiset of tools, any order.
    Unordered,
    /// Every baseline tool appears (extras allowed).
    #[default]
    Subset,
    /// Every used tool appears in the baseline.
    Superset,
}

/// Path (trajectory) checks (soft, except forbidden tools).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// At most this many tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Tools the agent is expected to use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_tools: Vec<String>,
    /// Tools whose use fails the case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbidden_tools: Vec<String>,
    /// At most this many immediate repeats of a tool (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_loops: Option<u64>,
    /// Comparison with the baseline's tool sequence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_mode: Option<MatchMode>,
    /// Minimum tool recall in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub min_tool_recall: Option<f64>,
    /// Minimum tool precision in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub min_tool_precision: Option<f64>,
    /// Minimum normalized LCS against the baseline in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub min_sequence_similarity: Option<f64>,
    /// The agent that must be handed off to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_handoff: Option<String>,
    /// Handoff targets that must be offered to the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_handoffs_available: Vec<String>,
    /// At most this many handoffs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_handoff_count: Option<u64>,
    /// Expected arguments of tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_tool_args: Vec<ToolArgsExpectation>,
}

/// Expected arguments for calls of one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolArgsExpectation {
    /// The tool's name.
    pub tool: String,
    /// The expected arguments.
    pub args: serde_json::Map<String, Value>,
    /// How `args` is compared.
    #[serde(default)]
    pub mode: ArgsMatchMode,
    /// Argument keys ignored in the comparison (volatile values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
}

/// How expected tool arguments are compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArgsMatchMode {
    /// The arguments equal `args` exactly.
    Exact,
    /// The given keys match; others are ignored.
    #[default]
    Subset,
    /// String values contain the given strings.
    Contains,
    /// String values match the given regexes.
    Regex,
}

/// Cost checks (soft).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// Cost at most this multiple of the baseline's (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub max_cost_multiplier: Option<f64>,
    /// At most this many tokens in total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// At most this many LLM calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_llm_calls: Option<u64>,
    /// At most this many milliseconds end to end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_ms: Option<u64>,
    /// At most this many US dollars (>= 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_cost_usd: Option<f64>,
}
