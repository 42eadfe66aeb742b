//! The three-layer engine: correctness (hard), path (soft, forbidden tools hard),
//! cost (soft), and the LLM judge. [`evaluate_deterministic`] is a pure function
//! of the case, the trace and the baseline; [`evaluate`] adds the judged checks.

pub mod correctness;
pub mod cost;
pub mod metrics;
pub mod path;
pub mod result;

pub use result::{
    JudgeOutcome, JudgeUsage, JudgeVote, LayerResult, QueryResult, Status, Verdict, VerdictLabel,
};

use crate::spec::Case;
use crate::trace::Trace;

/// Runs every deterministic check of `case` on `trace`. Judged checks are not
/// run: when the deterministic checks pass they are left pending
/// (`correctness.details.judges_pending`), otherwise reported as skipped.
pub fn evaluate_deterministic(
    case: &Case,
    trace: &Trace,
    baseline: Option<&Trace>,
    handoff_prefix: &str,
) -> QueryResult {
    let query = &case.query;
    let mut result = QueryResult {
        case_id: case.id.clone(),
        correctness: correctness::evaluate_deterministic(
            query.correctness.as_ref(),
            trace.answer.as_deref(),
        ),
        path: path::evaluate(query.path.as_ref(), trace, baseline, handoff_prefix),
        cost: cost::evaluate(query.cost.as_ref(), trace, baseline),
        judge: Vec::new(),
        judge_usage: JudgeUsage::default(),
        hard_fail: false,
    };
    result.refresh_hard_fail();
    result
}
