//! The correctness layer (hard). Deterministic checks run first, in the order of
//! REFERENCE.md section 2; the judged checks run only when every deterministic
//! check passed, otherwise they are reported as skipped and never called.

use serde_json::{Value, json};

use crate::engine::result::{JudgeOutcome, LayerBuilder, LayerResult, Status};
use crate::spec::{Correctness, JudgeRubric};

/// Detail key counting judged checks still to run after the deterministic pass.
pub const JUDGES_PENDING: &str = "judges_pending";

/// A judged check of a correctness spec, in evaluation order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgedCheck<'a> {
    /// Position in the evaluation order (used for stable names).
    pub index: usize,
    /// Which field: `llm_judge`, `safety_check` or `hallucination_check`.
    pub kind: JudgedKind,
    /// The rubric.
    pub rubric: &'a JudgeRubric,
}

/// Which correctness field a judged check comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgedKind {
    /// `llm_judge[i]`, with its position in the list.
    LlmJudge(usize),
    /// `safety_check`.
    Safety,
    /// `hallucination_check`: the judge sees the trace's tool results.
    Hallucination,
}

impl JudgedCheck<'_> {
    /// The check's name in messages and results: `llm_judge[0]`, `safety_check`, `hallucination_check`.
    pub fn name(&self) -> String {
        match self.kind {
            JudgedKind::LlmJudge(i) => format!("llm_judge[{i}]"),
            JudgedKind::Safety => "safety_check".to_string(),
            JudgedKind::Hallucination => "hallucination_check".to_string(),
        }
    }
}

/// The judged checks of `spec` in order: `llm_judge[..]`, `safety_check`, `hallucination_check`.
pub fn judged_checks(spec: &Correctness) -> Vec<JudgedCheck<'_>> {
    let mut checks: Vec<JudgedCheck<'_>> = spec
        .llm_judge
        .iter()
        .enumerate()
        .map(|(i, rubric)| JudgedCheck {
            index: 0,
            kind: JudgedKind::LlmJudge(i),
            rubric,
        })
        .collect();
    if let Some(rubric) = &spec.safety_check {
        checks.push(JudgedCheck {
            index: 0,
            kind: JudgedKind::Safety,
            rubric,
        });
    }
    if let Some(rubric) = &spec.hallucination_check {
        checks.push(JudgedCheck {
            index: 0,
            kind: JudgedKind::Hallucination,
            rubric,
        });
    }
    for (i, check) in checks.iter_mut().enumerate() {
        check.index = i;
    }
    checks
}

/// Runs the deterministic checks. When one fails, every judged check is reported
/// as skipped; when all pass, `details.judges_pending` counts the judged checks
/// [`apply_judge_outcomes`] must fold in.
pub fn evaluate_deterministic(spec: Option<&Correctness>, answer: Option<&str>) -> LayerResult {
    let mut layer = LayerBuilder::default();
    layer.detail("answer_present", answer.is_some());
    let text = answer.unwrap_or("");
    layer.detail("answer_chars", text.chars().count() as u64);
    let Some(spec) = spec else {
        return layer.finish();
    };

    check_expected_in_answer(&mut layer, &spec.expected_in_answer, text);
    check_not_in_answer(&mut layer, &spec.not_in_answer, text);
    if let Some(expected) = &spec.exact_match {
        if text.trim() == expected.trim() {
            layer.passed();
        } else {
            layer.fail(format!(
                "exact_match: answer {} differs from expected {}",
                quote_excerpt(text.trim()),
                quote_excerpt(expected.trim())
            ));
        }
    }
    if let Some(pattern) = &spec.regex_match {
        check_regex(&mut layer, pattern, text);
    }
    if let Some(schema) = &spec.json_schema {
        check_json_schema(&mut layer, schema, text);
    }

    let judged = judged_checks(spec);
    if layer.has_failed() {
        for check in &judged {
            layer.skipped(format!(
                "{}: skipped (judges run only when every deterministic check passed)",
                check.name()
            ));
        }
        layer.detail("judges_skipped", judged.len() as u64);
    } else if !judged.is_empty() {
        layer.detail(JUDGES_PENDING, judged.len() as u64);
    }
    layer.finish()
}

/// Folds judge outcomes into a layer from [`evaluate_deterministic`]: a failed
/// verdict fails the layer; a layer with only judged checks becomes `pass` when they pass.
pub fn apply_judge_outcomes(layer: &mut LayerResult, outcomes: &[JudgeOutcome]) {
    if outcomes.is_empty() {
        return;
    }
    layer.details.remove(JUDGES_PENDING);
    let mut judged = serde_json::Map::new();
    for outcome in outcomes {
        judged.insert(
            outcome.check.clone(),
            json!({
                "score": outcome.score,
                "threshold_score": outcome.threshold_score,
                "label": outcome.label,
                "passed": outcome.passed,
            }),
        );
        if !outcome.passed {
            let rationale = outcome
                .votes
                .first()
                .map(|v| v.verdict.rationale.as_str())
                .unwrap_or("");
            layer.messages.push(format!(
                "{}: judged {:?} with score {:.2} (needs ≥ {}): {}",
                outcome.check,
                outcome.label,
                outcome.score,
                outcome.threshold_score,
                one_line(rationale)
            ));
        }
    }
    layer
        .details
        .insert("judge".to_string(), Value::Object(judged));
    let any_failed = outcomes.iter().any(|o| !o.passed);
    layer.status = match (layer.status, any_failed) {
        (_, true) => Status::Fail,
        (Status::Skip, false) => Status::Pass,
        (status, false) => status,
    };
}

fn check_expected_in_answer(layer: &mut LayerBuilder, terms: &[String], text: &str) {
    if terms.is_empty() {
        return;
    }
    let haystack = text.to_lowercase();
    let missing: Vec<&String> = terms
        .iter()
        .filter(|t| !haystack.contains(&t.to_lowercase()))
        .collect();
    layer.detail("expected_in_answer_missing", json!(missing));
    if missing.is_empty() {
        layer.passed();
    }
    for term in missing {
        layer.fail(format!(
            "expected_in_answer: {term:?} not found in the answer"
        ));
    }
}

fn check_not_in_answer(layer: &mut LayerBuilder, terms: &[String], text: &str) {
    if terms.is_empty() {
        return;
    }
    let haystack = text.to_lowercase();
    let found: Vec<&String> = terms
        .iter()
        .filter(|t| haystack.contains(&t.to_lowercase()))
        .collect();
    layer.detail("not_in_answer_found", json!(found));
    if found.is_empty() {
        layer.passed();
    }
    for term in found {
        layer.fail(format!("not_in_answer: {term:?} found in the answer"));
    }
}

fn check_regex(layer: &mut LayerBuilder, pattern: &str, text: &str) {
    // Spec validation rejects invalid patterns; this is the backstop for specs built in code.
    match regex::Regex::new(pattern) {
        Ok(re) if re.is_match(text) => layer.passed(),
        Ok(_) => layer.fail(format!(
            "regex_match: /{pattern}/ does not match the answer"
        )),
        Err(e) => layer.fail(format!("regex_match: invalid pattern /{pattern}/: {e}")),
    }
}

fn check_json_schema(layer: &mut LayerBuilder, schema: &Value, text: &str) {
    let instance: Value = match serde_json::from_str(text.trim()) {
        Ok(v) => v,
        Err(e) => {
            layer.fail(format!("json_schema: the answer is not valid JSON ({e})"));
            return;
        }
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            layer.fail(format!("json_schema: the schema is invalid: {e}"));
            return;
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .take(3)
        .map(|e| {
            let path = e.instance_path().to_string();
            let at = if path.is_empty() {
                "/".to_string()
            } else {
                path
            };
            format!("{at}: {e}")
        })
        .collect();
    layer.detail("json_schema_errors", json!(errors));
    if errors.is_empty() {
        layer.passed();
    } else {
        layer.fail(format!(
            "json_schema: the answer does not conform: {}",
            errors.join("; ")
        ));
    }
}

/// A quoted excerpt of at most 80 characters, for messages.
fn quote_excerpt(text: &str) -> String {
    let mut excerpt: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        excerpt.push('…');
    }
    format!("{excerpt:?}")
}

/// Collapses whitespace so a rationale fits on one message line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::result::{JudgeVote, Verdict, VerdictLabel};

    fn spec() -> Correctness {
        Correctness::default()
    }

    fn rubric(rule: &str) -> JudgeRubric {
        JudgeRubric {
            rule: Some(rule.into()),
            template: None,
            threshold: 0.8,
            scale: vec![],
            few_shot_examples: vec![],
            model: None,
        }
    }

    #[test]
    fn no_spec_is_skip() {
        let layer = evaluate_deterministic(None, Some("hi"));
        assert_eq!(layer.status, Status::Skip);
        assert_eq!(layer.details["answer_chars"], json!(2));
    }

    #[test]
    fn expected_in_answer_is_case_insensitive() {
        let c = Correctness {
            expected_in_answer: vec!["PIP install".into()],
            ..spec()
        };
        assert_eq!(
            evaluate_deterministic(Some(&c), Some("run pip Install x")).status,
            Status::Pass
        );
    }

    #[test]
    fn expected_in_answer_one_message_per_missing_term() {
        let c = Correctness {
            expected_in_answer: vec!["a1".into(), "b2".into(), "c3".into()],
            ..spec()
        };
        let layer = evaluate_deterministic(Some(&c), Some("only b2 here"));
        assert_eq!(layer.status, Status::Fail);
        assert_eq!(layer.messages.len(), 2);
        assert_eq!(
            layer.details["expected_in_answer_missing"],
            json!(["a1", "c3"])
        );
    }

    #[test]
    fn not_in_answer_fails_on_any_term() {
        let c = Correctness {
            not_in_answer: vec!["degrees".into(), "forecast".into()],
            ..spec()
        };
        let layer = evaluate_deterministic(Some(&c), Some("It is 20 Degrees"));
        assert_eq!(layer.status, Status::Fail);
        assert_eq!(
            layer.messages,
            vec![r#"not_in_answer: "degrees" found in the answer"#]
        );
        let layer = evaluate_deterministic(Some(&c), Some("Sorry, I can't help."));
        assert_eq!(layer.status, Status::Pass);
    }

    #[test]
    fn missing_answer_counts_as_empty() {
        let c = Correctness {
            expected_in_answer: vec!["x".into()],
            ..spec()
        };
        let layer = evaluate_deterministic(Some(&c), None);
        assert_eq!(layer.status, Status::Fail);
        assert_eq!(layer.details["answer_present"], json!(false));
    }

    #[test]
    fn exact_match_trims_both_sides() {
        let c = Correctness {
            exact_match: Some(" 42\n".into()),
            ..spec()
        };
        assert_eq!(
            evaluate_deterministic(Some(&c), Some("42  ")).status,
            Status::Pass
        );
        assert_eq!(
            evaluate_deterministic(Some(&c), Some("43")).status,
            Status::Fail
        );
    }

    #[test]
    fn regex_match_searches_and_rejects_invalid_patterns() {
        let c = Correctness {
            regex_match: Some("^Sorry".into()),
            ..spec()
        };
        assert_eq!(
            evaluate_deterministic(Some(&c), Some("Sorry, no")).status,
            Status::Pass
        );
        assert_eq!(
            evaluate_deterministic(Some(&c), Some("Well, Sorry")).status,
            Status::Fail
        );
        let bad = Correctness {
            regex_match: Some("(".into()),
            ..spec()
        };
        let layer = evaluate_deterministic(Some(&bad), Some("x"));
        assert_eq!(layer.status, Status::Fail);
        assert!(layer.messages[0].contains("invalid pattern"));
    }

    #[test]
    fn json_schema_checks_parse_and_conformance() {
        let c = Correctness {
            json_schema: Some(json!({"type": "object", "required": ["city"]})),
            ..spec()
        };
        assert_eq!(
            evaluate_deterministic(Some(&c), Some(r#" {"city": "Tokyo"} "#)).status,
            Status::Pass
        );
        let layer = evaluate_deterministic(Some(&c), Some("not json"));
        assert!(layer.messages[0].contains("not valid JSON"));
        let layer = evaluate_deterministic(Some(&c), Some("{}"));
        assert_eq!(layer.status, Status::Fail);
        assert!(
            layer.messages[0].contains("does not conform"),
            "{:?}",
            layer.messages
        );
    }

    #[test]
    fn judged_checks_are_ordered() {
        let c = Correctness {
            llm_judge: vec![rubric("a"), rubric("b")],
            safety_check: Some(rubric("s")),
            hallucination_check: Some(rubric("h")),
            ..spec()
        };
        let names: Vec<String> = judged_checks(&c).iter().map(|j| j.name()).collect();
        assert_eq!(
            names,
            [
                "llm_judge[0]",
                "llm_judge[1]",
                "safety_check",
                "hallucination_check"
            ]
        );
    }

    #[test]
    fn failing_deterministic_check_skips_judges() {
        let c = Correctness {
            expected_in_answer: vec!["missing".into()],
            llm_judge: vec![rubric("polite")],
            hallucination_check: Some(rubric("grounded")),
            ..spec()
        };
        let layer = evaluate_deterministic(Some(&c), Some("answer"));
        assert_eq!(layer.status, Status::Fail);
        assert_eq!(layer.details["judges_skipped"], json!(2));
        assert!(!layer.details.contains_key(JUDGES_PENDING));
        assert!(layer.messages[1].starts_with("llm_judge[0]: skipped"));
    }

    #[test]
    fn passing_deterministic_checks_leave_judges_pending() {
        let c = Correctness {
            llm_judge: vec![rubric("polite")],
            ..spec()
        };
        let layer = evaluate_deterministic(Some(&c), Some("answer"));
        assert_eq!(layer.status, Status::Skip);
        assert_eq!(layer.details[JUDGES_PENDING], json!(1));
    }

    fn outcome(passed: bool) -> JudgeOutcome {
        JudgeOutcome {
            check: "llm_judge[0]".into(),
            template: None,
            threshold: 0.8,
            threshold_score: 4,
            score: if passed { 5.0 } else { 2.0 },
            label: if passed {
                VerdictLabel::Pass
            } else {
                VerdictLabel::Fail
            },
            passed,
            ensemble: false,
            votes: vec![JudgeVote {
                model: "m".into(),
                sample: 0,
                verdict: Verdict {
                    rationale: "because\nreasons".into(),
                    score: 2,
                    label: VerdictLabel::Fail,
                },
                cached: false,
            }],
        }
    }

    #[test]
    fn judge_outcomes_fold_into_the_layer() {
        let c = Correctness {
            llm_judge: vec![rubric("polite")],
            ..spec()
        };
        let mut layer = evaluate_deterministic(Some(&c), Some("answer"));
        apply_judge_outcomes(&mut layer, &[outcome(true)]);
        assert_eq!(layer.status, Status::Pass);
        assert!(!layer.details.contains_key(JUDGES_PENDING));

        let mut layer = evaluate_deterministic(Some(&c), Some("answer"));
        apply_judge_outcomes(&mut layer, &[outcome(false)]);
        assert_eq!(layer.status, Status::Fail);
        assert_eq!(layer.messages.len(), 1);
        assert!(
            layer.messages[0].ends_with("because reasons"),
            "{}",
            layer.messages[0]
        );
    }
}
