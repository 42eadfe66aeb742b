//! The JSON report: `{"summary": …, "results": […]}`, one result per case with
//! each of its runs (trials). The types here are the schema: `docs/report.schema.json`
//! is generated from them ([`schema`]) and a test fails when it is stale.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    CaseGroup, Finding, RenderOptions, Severity, figures, findings, groups, path_figure, summarize,
};
use crate::engine::{LayerResult, Status};
use crate::run::{CaseRun, CaseStatus, RunMode, RunRecord};

/// The JSON report's format version.
pub const REPORT_FORMAT: u32 = 1;

/// The whole JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "agentci JSON report")]
pub struct JsonReport {
    /// Report format version (1).
    pub format: u32,
    /// The run the report describes.
    pub run: RunInfo,
    /// Counts by case (a case with trials counts once).
    pub summary: JsonSummary,
    /// One entry per case, in spec order.
    pub results: Vec<CaseResult>,
    /// Warnings about the run itself.
    pub warnings: Vec<String>,
}

/// Where the results came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInfo {
    /// Run id (the folder under `.agentci/runs/`).
    pub id: String,
    /// The spec's agent.
    pub agent: String,
    /// `record`, `replay`, `cassettes-only` or `judge-only`.
    pub mode: String,
    /// The spec file.
    pub spec_path: String,
    /// `sha256:<hex>` of the spec.
    pub spec_hash: String,
    /// The agentci version.
    pub tool_version: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall time of the run, ms.
    pub duration_ms: u64,
    /// `i/n` for a shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The baseline version compared against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

/// Counts by case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonSummary {
    /// Cases.
    pub total: usize,
    /// Cases that passed.
    pub passed: usize,
    /// Cases with a correctness failure or a forbidden tool.
    pub failed: usize,
    /// Cases that passed with warnings.
    pub warnings: usize,
    /// Cases that could not be evaluated.
    pub errors: usize,
}

/// A case or run status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsonStatus {
    /// Every check passed.
    Pass,
    /// Soft checks exceeded.
    Warn,
    /// A correctness failure or a forbidden tool.
    Fail,
    /// Not evaluated (cassette miss, crash, timeout, infrastructure).
    Error,
}

impl From<CaseStatus> for JsonStatus {
    fn from(s: CaseStatus) -> Self {
        match s {
            CaseStatus::Pass => JsonStatus::Pass,
            CaseStatus::Warn => JsonStatus::Warn,
            CaseStatus::Fail => JsonStatus::Fail,
            CaseStatus::Error => JsonStatus::Error,
        }
    }
}

/// One case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseResult {
    /// The case id.
    pub id: String,
    /// The case's status over its trials.
    pub status: JsonStatus,
    /// The query text.
    pub query: String,
    /// The file the query is written in.
    pub file: String,
    /// The query's line in `file`.
    pub line: usize,
    /// The case's tags.
    pub tags: Vec<String>,
    /// Trial statistics, when the case ran more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<TrialStats>,
    /// Each run of the case (one without trials).
    pub runs: Vec<RunResult>,
}

/// How the trials of a case went (pass@k, pass^k, Wilson interval).
pub use crate::run::trials::TrialStats;

/// One run (trial) of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    /// Trial number, 1-based.
    pub trial: u32,
    /// This run's status.
    pub status: JsonStatus,
    /// What stopped the run, for `error` (`[INFRA] …` for infrastructure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Attempts made (record retries count).
    pub attempts: u32,
    /// The cassette evaluated.
    pub cassette: String,
    /// Measured figures, when there is a trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// Every failure, warning, error and note, in report order.
    pub findings: Vec<JsonFinding>,
    /// The three layers, when the case was evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Layers>,
    /// The agent's final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The tools called, in order (the sequence the path layer compares).
    #[serde(default)]
    pub tools: Vec<String>,
}

/// The figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// Tool calls.
    pub tool_calls: u64,
    /// LLM calls.
    pub llm_calls: u64,
    /// Input plus output tokens.
    pub total_tokens: u64,
    /// USD.
    pub cost_usd: f64,
    /// The agent's wall time, ms.
    pub latency_ms: u64,
    /// |expected ∩ used| / |expected|, when the path layer measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_recall: Option<f64>,
    /// |expected ∩ used| / |used|, when the path layer measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_precision: Option<f64>,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonFinding {
    /// `failure`, `warning`, `error` or `note`.
    pub severity: JsonSeverity,
    /// `CORRECTNESS`, `PATH`, `COST`, `INFRA`, `ERROR` or `RUN`.
    pub label: String,
    /// The message.
    pub message: String,
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsonSeverity {
    /// Fails the case.
    Failure,
    /// A soft check exceeded or a run warning.
    Warning,
    /// The case could not be evaluated.
    Error,
    /// A check that could not run.
    Note,
}

/// The three layers of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Layers {
    /// Correctness (hard).
    pub correctness: Layer,
    /// Path (soft; forbidden tools hard).
    pub path: Layer,
    /// Cost (soft).
    pub cost: Layer,
}

/// One layer's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// `pass`, `fail`, `warn` or `skip`.
    pub status: LayerStatus,
    /// Every figure measured, by name.
    pub details: BTreeMap<String, Value>,
    /// One line per finding.
    pub messages: Vec<String>,
}

/// A layer status (REFERENCE.md section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LayerStatus {
    /// Every check passed.
    Pass,
    /// A hard check failed.
    Fail,
    /// A soft check was exceeded.
    Warn,
    /// No assertions.
    Skip,
}

impl From<&LayerResult> for Layer {
    fn from(l: &LayerResult) -> Self {
        Layer {
            status: match l.status {
                Status::Pass => LayerStatus::Pass,
                Status::Fail => LayerStatus::Fail,
                Status::Warn => LayerStatus::Warn,
                Status::Skip => LayerStatus::Skip,
            },
            details: l.details.clone(),
            messages: l.messages.clone(),
        }
    }
}

impl From<&Finding> for JsonFinding {
    fn from(f: &Finding) -> Self {
        JsonFinding {
            severity: match f.severity {
                Severity::Failure => JsonSeverity::Failure,
                Severity::Warning => JsonSeverity::Warning,
                Severity::Error => JsonSeverity::Error,
                Severity::Note => JsonSeverity::Note,
            },
            label: f.label.to_string(),
            message: f.message.clone(),
        }
    }
}

/// Builds the report's data.
pub fn report(run: &RunRecord, opts: &RenderOptions) -> JsonReport {
    let s = summarize(run, opts);
    JsonReport {
        format: REPORT_FORMAT,
        run: RunInfo {
            id: run.id.clone(),
            agent: run.agent.clone(),
            mode: mode_name(run.mode).to_string(),
            spec_path: run.spec_path.clone(),
            spec_hash: run.spec_hash.clone(),
            tool_version: run.tool_version.clone(),
            started_at: run.started_at.clone(),
            duration_ms: run.duration_ms,
            shard: run.shard.clone(),
            baseline: run.baseline.clone(),
        },
        summary: JsonSummary {
            total: s.total,
            passed: s.passed,
            failed: s.failed,
            warnings: s.warned,
            errors: s.errors,
        },
        results: groups(run, opts).iter().map(case_result).collect(),
        warnings: run.warnings.clone(),
    }
}

/// Renders the JSON report, pretty-printed, with a trailing newline.
pub fn render(run: &RunRecord, opts: &RenderOptions) -> String {
    // Serializing these plain types cannot fail: string keys, and serde_json
    // writes non-finite floats as null.
    let mut text = serde_json::to_string_pretty(&report(run, opts)).unwrap_or_default();
    text.push('\n');
    text
}

/// The JSON Schema of the report, as committed at `docs/report.schema.json`.
pub fn schema() -> String {
    let schema = schemars::schema_for!(JsonReport);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

fn mode_name(mode: RunMode) -> &'static str {
    match mode {
        RunMode::Record => "record",
        RunMode::Replay => "replay",
        RunMode::CassettesOnly => "cassettes-only",
        RunMode::JudgeOnly => "judge-only",
    }
}

fn case_result(g: &CaseGroup<'_>) -> CaseResult {
    let first = g.runs.first();
    CaseResult {
        id: g.id.to_string(),
        status: g.status.into(),
        query: first.map(|c| c.query.clone()).unwrap_or_default(),
        file: first.map(|c| c.file.clone()).unwrap_or_default(),
        line: first.map_or(0, |c| c.line),
        tags: first.map(|c| c.tags.clone()).unwrap_or_default(),
        trials: g.has_trials().then(|| g.stats()),
        runs: g.runs.iter().map(|c| run_result(c)).collect(),
    }
}

fn run_result(case: &CaseRun) -> RunResult {
    RunResult {
        trial: case.trial,
        status: case.status.into(),
        error: case.error.clone(),
        attempts: case.attempts,
        cassette: case.cassette.clone(),
        metrics: figures(case).map(|f| Metrics {
            tool_calls: f.tool_calls,
            llm_calls: f.llm_calls,
            total_tokens: f.total_tokens,
            cost_usd: f.cost_usd,
            latency_ms: f.latency_ms,
            tool_recall: path_figure(case, "tool_recall"),
            tool_precision: path_figure(case, "tool_precision"),
        }),
        findings: findings(case).iter().map(JsonFinding::from).collect(),
        layers: case.result.as_ref().map(|r| Layers {
            correctness: (&r.correctness).into(),
            path: (&r.path).into(),
            cost: (&r.cost).into(),
        }),
        answer: case.trace.as_ref().and_then(|t| t.answer.clone()),
        tools: case
            .trace
            .as_ref()
            .map(|t| t.tool_sequence().into_iter().map(str::to_string).collect())
            .unwrap_or_default(),
    }
}
