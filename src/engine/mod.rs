//! The three-layer engine: correctness (hard), path (soft, forbidden tools hard),
//! cost (soft), and the LLM judge. [`evaluate_deterministic`] is a pure function
//! of the case, the trace and the baseline; [`evaluate`] adds the judged checks.

pub mod correctness;
pub mod cost;
pub mod judge;
pub mod metrics;
pub mod path;
mod patterns;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Correctness, CostSpec, PathSpec, Query};
    use crate::trace::{ToolCall, Totals};

    fn case(
        correctness: Option<Correctness>,
        path: Option<PathSpec>,
        cost: Option<CostSpec>,
    ) -> Case {
        Case {
            id: "c1".into(),
            file: "spec.yaml".into(),
            line: 3,
            query: Query {
                id: None,
                query: "q".into(),
                description: None,
                tags: vec![],
                correctness,
                path,
                cost,
            },
        }
    }

    fn trace(tools: &[&str], answer: &str) -> Trace {
        Trace {
            case_id: "c1".into(),
            tool_calls: tools
                .iter()
                .map(|t| ToolCall {
                    id: format!("call_{t}"),
                    name: t.to_string(),
                    arguments: serde_json::json!({}),
                    result: None,
                    is_error: false,
                    llm_call: 0,
                })
                .collect(),
            totals: Totals {
                total_tokens: 100,
                ..Totals::default()
            },
            answer: Some(answer.into()),
            ..Trace::default()
        }
    }

    #[test]
    fn empty_case_skips_every_layer() {
        let r = evaluate_deterministic(
            &case(None, None, None),
            &trace(&[], "a"),
            None,
            "transfer_to_",
        );
        assert_eq!(r.case_id, "c1");
        assert_eq!(
            (r.correctness.status, r.path.status, r.cost.status),
            (Status::Skip, Status::Skip, Status::Skip)
        );
        assert!(!r.hard_fail);
        assert_eq!(r.overall(), Status::Skip);
    }

    #[test]
    fn warnings_never_hard_fail() {
        let path = PathSpec {
            max_tool_calls: Some(0),
            ..PathSpec::default()
        };
        let cost = CostSpec {
            max_total_tokens: Some(1),
            ..CostSpec::default()
        };
        let r = evaluate_deterministic(
            &case(None, Some(path), Some(cost)),
            &trace(&["s"], "a"),
            None,
            "transfer_to_",
        );
        assert_eq!((r.path.status, r.cost.status), (Status::Warn, Status::Warn));
        assert!(!r.hard_fail);
        assert_eq!(r.overall(), Status::Warn);
    }

    #[test]
    fn forbidden_tool_or_correctness_failure_hard_fails() {
        let path = PathSpec {
            forbidden_tools: vec!["web_search".into()],
            ..PathSpec::default()
        };
        let r = evaluate_deterministic(
            &case(None, Some(path), None),
            &trace(&["web_search"], "a"),
            None,
            "transfer_to_",
        );
        assert!(r.hard_fail);
        let correctness = Correctness {
            exact_match: Some("b".into()),
            ..Correctness::default()
        };
        let r = evaluate_deterministic(
            &case(Some(correctness), None, None),
            &trace(&[], "a"),
            None,
            "transfer_to_",
        );
        assert!(r.hard_fail);
        assert_eq!(r.overall(), Status::Fail);
    }

    #[test]
    fn results_round_trip_through_json() {
        let path = PathSpec {
            expected_tools: vec!["s".into()],
            ..PathSpec::default()
        };
        let r = evaluate_deterministic(
            &case(None, Some(path), None),
            &trace(&["s", "s"], "a"),
            Some(&trace(&["s"], "b")),
            "transfer_to_",
        );
        let text = serde_json::to_string(&r).unwrap_or_default();
        assert!(text.contains(r#""status":"pass""#), "{text}");
        let back: QueryResult =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(back, r);
    }
}
