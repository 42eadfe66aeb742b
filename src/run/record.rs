//! The run record: what one `record`/`replay`/`judge-only` run produced, as stored
//! in `.agentci/runs/<id>/run.json` and read by every report (`docs/run-store.md`).

use serde::{Deserialize, Serialize};

use crate::engine::QueryResult;
use crate::trace::Trace;

/// The run-record format version this build writes.
pub const RUN_FORMAT: u32 = 1;

/// How a run obtained its traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunMode {
    /// Live APIs through the recording proxy.
    Record,
    /// The agent against the replaying proxy, no network.
    Replay,
    /// Committed cassettes evaluated without starting the agent.
    CassettesOnly,
    /// A stored run re-scored with the current spec.
    JudgeOnly,
}

/// One whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Run-record format version.
    pub format: u32,
    /// Unique id (`20261122T214501Z-3f2a`), also the run folder name.
    pub id: String,
    /// The agentci version that made the run.
    pub tool_version: String,
    /// The spec's agent.
    pub agent: String,
    /// The spec file as named on the command line.
    pub spec_path: String,
    /// `sha256:<hex>` of the spec the run was scored with.
    pub spec_hash: String,
    /// How traces were obtained.
    pub mode: RunMode,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    /// Wall time of the whole run.
    pub duration_ms: u64,
    /// `i/n` when the run covered one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The baseline version baseline-dependent checks compared against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Every case (and trial), in spec order.
    pub cases: Vec<CaseRun>,
    /// Warnings about the run itself (unused exchanges, stale cassettes, unpriced models).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The final status of one case (or trial).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Every check passed.
    Pass,
    /// Soft checks exceeded; the run still passes.
    Warn,
    /// A correctness failure or a forbidden tool (exit 1).
    Fail,
    /// The case could not be evaluated: cassette miss, agent crash or timeout, infrastructure (exit 2).
    Error,
}

impl CaseStatus {
    /// Lowercase name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Pass => "pass",
            CaseStatus::Warn => "warn",
            CaseStatus::Fail => "fail",
            CaseStatus::Error => "error",
        }
    }
}

/// One case (one trial of it) in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRun {
    /// The case id.
    pub case_id: String,
    /// Trial number, 1-based.
    pub trial: u32,
    /// The query text.
    pub query: String,
    /// The case's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The file the query is written in.
    pub file: String,
    /// The query's line in `file`.
    pub line: usize,
    /// The cassette evaluated, relative to the working directory.
    pub cassette: String,
    /// Final status.
    pub status: CaseStatus,
    /// For `error`: what went wrong; `[INFRA]` marks infrastructure errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Attempts made (record retries count).
    #[serde(default = "one")]
    pub attempts: u32,
    /// The derived trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
    /// The engine's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<QueryResult>,
    /// Warnings about this case's run (unused exchanges, unpriced models, stale cassette).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn one() -> u32 {
    1
}

impl RunRecord {
    /// This run's header (id, spec, mode, times…) with other cases and warnings,
    /// without copying this run's cases.
    pub fn with_cases(&self, cases: Vec<CaseRun>, warnings: Vec<String>) -> RunRecord {
        RunRecord {
            format: self.format,
            id: self.id.clone(),
            tool_version: self.tool_version.clone(),
            agent: self.agent.clone(),
            spec_path: self.spec_path.clone(),
            spec_hash: self.spec_hash.clone(),
            mode: self.mode,
            started_at: self.started_at.clone(),
            duration_ms: self.duration_ms,
            shard: self.shard.clone(),
            baseline: self.baseline.clone(),
            cases,
            warnings,
        }
    }

    /// Counts by status: (passed, warned, failed, errors), over cases and trials.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let count = |s: CaseStatus| self.cases.iter().filter(|c| c.status == s).count();
        (
            count(CaseStatus::Pass),
            count(CaseStatus::Warn),
            count(CaseStatus::Fail),
            count(CaseStatus::Error),
        )
    }
}
