//! What the engine returns: one [`LayerResult`] per layer and a [`QueryResult`]
//! per case. Serializable both ways because results go into the run store and
//! come back out for `judge-only` and reports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The outcome of one layer (REFERENCE.md section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every check ran and passed.
    Pass,
    /// A hard check failed (correctness, or a forbidden tool on the path layer).
    Fail,
    /// A soft check was exceeded.
    Warn,
    /// The layer had no assertions (or none could run).
    Skip,
}

impl Status {
    /// The lowercase name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Skip => "skip",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one layer: its status, every measured figure, one message per finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerResult {
    /// pass | fail | warn | skip.
    pub status: Status,
    /// Every figure measured, by name (sorted keys, so the JSON is stable).
    pub details: BTreeMap<String, Value>,
    /// One line per finding: failures, warnings, and checks skipped with the reason.
    pub messages: Vec<String>,
}

impl LayerResult {
    /// An empty layer with the given status.
    pub fn new(status: Status) -> Self {
        LayerResult {
            status,
            details: BTreeMap::new(),
            messages: Vec::new(),
        }
    }
}

/// Builds a [`LayerResult`] while checks run: records figures and findings and
/// keeps the worst status seen.
#[derive(Debug, Default)]
pub(crate) struct LayerBuilder {
    details: BTreeMap<String, Value>,
    messages: Vec<String>,
    checks_run: usize,
    failed: bool,
    warned: bool,
}

impl LayerBuilder {
    /// Records a measured figure.
    pub(crate) fn detail(&mut self, key: &str, value: impl Into<Value>) {
        self.details.insert(key.to_string(), value.into());
    }

    /// Removes and returns a recorded figure (to extend it).
    pub(crate) fn take_detail(&mut self, key: &str) -> Option<Value> {
        self.details.remove(key)
    }

    /// A check ran and passed.
    pub(crate) fn passed(&mut self) {
        self.checks_run += 1;
    }

    /// A hard check failed.
    pub(crate) fn fail(&mut self, message: String) {
        self.checks_run += 1;
        self.failed = true;
        self.messages.push(message);
    }

    /// A soft check was exceeded.
    pub(crate) fn warn(&mut self, message: String) {
        self.checks_run += 1;
        self.warned = true;
        self.messages.push(message);
    }

    /// A check could not run; says why without changing the status.
    pub(crate) fn skipped(&mut self, message: String) {
        self.messages.push(message);
    }

    /// Whether any hard check failed so far.
    pub(crate) fn has_failed(&self) -> bool {
        self.failed
    }

    /// The finished layer: fail > warn > pass, and skip when no check ran.
    pub(crate) fn finish(self) -> LayerResult {
        let status = if self.failed {
            Status::Fail
        } else if self.warned {
            Status::Warn
        } else if self.checks_run == 0 {
            Status::Skip
        } else {
            Status::Pass
        };
        LayerResult {
            status,
            details: self.details,
            messages: self.messages,
        }
    }
}

/// A judge's verdict as parsed from its reply (REFERENCE.md section 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The judge's reasoning, written before the score.
    pub rationale: String,
    /// 1..=5.
    pub score: u8,
    /// The judge's own label.
    pub label: VerdictLabel,
}

/// A verdict label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictLabel {
    /// The answer satisfies the rubric.
    Pass,
    /// The answer violates the rubric.
    Fail,
    /// The judge is unsure.
    Borderline,
}

/// One judge model's vote within a judged check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVote {
    /// The judge model.
    pub model: String,
    /// Position in the model list (repeated models are separate samples).
    pub sample: usize,
    /// The verdict.
    pub verdict: Verdict,
    /// Served from the verdict cache (no call, no cost).
    pub cached: bool,
}

/// The outcome of one judged check (`llm_judge[i]`, `safety_check`, `hallucination_check`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeOutcome {
    /// Which check: `llm_judge[0]`, `safety_check`, `hallucination_check`.
    pub check: String,
    /// The rubric's template, when it used one.
    pub template: Option<String>,
    /// The rubric threshold in [0, 1].
    pub threshold: f64,
    /// The threshold on the 1–5 scale: `floor(t·5 + 0.5)` clamped to 1..5.
    pub threshold_score: u8,
    /// The score (the mean over an ensemble).
    pub score: f64,
    /// The label (the majority over an ensemble).
    pub label: VerdictLabel,
    /// Whether the check passed.
    pub passed: bool,
    /// Whether an ensemble judged it.
    pub ensemble: bool,
    /// Every vote.
    pub votes: Vec<JudgeVote>,
}

/// Token use and cost of the judge, kept apart from the agent's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeUsage {
    /// Provider calls made (retries included).
    pub calls: u64,
    /// Verdicts served from the cache.
    pub cache_hits: u64,
    /// Input tokens of the calls made.
    pub input_tokens: u64,
    /// Output tokens of the calls made.
    pub output_tokens: u64,
    /// USD of the calls made (0 for unpriced models).
    pub cost_usd: f64,
}

impl JudgeUsage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: &JudgeUsage) {
        self.calls += other.calls;
        self.cache_hits += other.cache_hits;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// The engine's result for one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryResult {
    /// The case id.
    pub case_id: String,
    /// Correctness (hard).
    pub correctness: LayerResult,
    /// Path (soft; forbidden tools hard).
    pub path: LayerResult,
    /// Cost (soft).
    pub cost: LayerResult,
    /// Every judged check, in evaluation order.
    #[serde(default)]
    pub judge: Vec<JudgeOutcome>,
    /// The judge's token use and cost for this case.
    #[serde(default)]
    pub judge_usage: JudgeUsage,
    /// Correctness or path failed: the case fails the run (exit 1).
    pub hard_fail: bool,
}

impl QueryResult {
    /// Recomputes `hard_fail` from the layer statuses.
    pub fn refresh_hard_fail(&mut self) {
        self.hard_fail =
            self.correctness.status == Status::Fail || self.path.status == Status::Fail;
    }

    /// The worst status over the three layers (fail > warn > pass > skip).
    pub fn overall(&self) -> Status {
        let statuses = [self.correctness.status, self.path.status, self.cost.status];
        if statuses.contains(&Status::Fail) {
            Status::Fail
        } else if statuses.contains(&Status::Warn) {
            Status::Warn
        } else if statuses.contains(&Status::Pass) {
            Status::Pass
        } else {
            Status::Skip
        }
    }
}
