//! The three-layer engine: correctness (hard), path (soft, forbidden tools hard),
//! cost (soft), and the LLM judge. [`evaluate_deterministic`] is a pure function
//! of the case, the trace and the baseline; [`evaluate`] adds the judged checks.

pub mod correctness;
pub mod cost;
pub mod judge;
pub mod metrics;
pub mod path;
pub mod result;

pub use result::{
    JudgeOutcome, JudgeUsage, JudgeVote, LayerResult, QueryResult, Status, Verdict, VerdictLabel,
};

use crate::error::Result;
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

/// Runs every check of `case`: the deterministic ones, then (when they all
/// passed) the judged ones. Judge failures are errors (exit 2), not failed checks.
pub async fn evaluate(
    case: &Case,
    trace: &Trace,
    baseline: Option<&Trace>,
    handoff_prefix: &str,
    judge: &judge::Judge,
) -> Result<QueryResult> {
    let mut result = evaluate_deterministic(case, trace, baseline, handoff_prefix);
    let pending = result
        .correctness
        .details
        .contains_key(correctness::JUDGES_PENDING);
    if let (true, Some(spec)) = (pending, case.query.correctness.as_ref()) {
        let checks = correctness::judged_checks(spec);
        let input = judge::JudgeInput {
            case_id: &case.id,
            query: &case.query.query,
            trace,
        };
        let (outcomes, usage) = judge.judge_case(input, &checks).await?;
        correctness::apply_judge_outcomes(&mut result.correctness, &outcomes);
        result.judge = outcomes;
        result.judge_usage = usage;
        result.refresh_hard_fail();
    }
    Ok(result)
}
