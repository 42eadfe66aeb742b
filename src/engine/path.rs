//! The path layer (soft): exceedances warn; a forbidden tool fails the case.
//! Baseline-dependent checks are skipped, with a message, when there is no baseline.

use serde_json::{Map, Value, json};

use crate::engine::metrics;
use crate::engine::result::{LayerBuilder, LayerResult};
use crate::spec::{ArgsMatchMode, MatchMode, PathSpec, ToolArgsExpectation};
use crate::trace::{ToolCall, Trace};

/// Evaluates `spec` against `trace` (and the baseline's tool sequence, when given).
/// Every figure is measured even when the layer has no assertions.
pub fn evaluate(
    spec: Option<&PathSpec>,
    trace: &Trace,
    baseline: Option<&Trace>,
    handoff_prefix: &str,
) -> LayerResult {
    let empty = PathSpec::default();
    let spec = spec.unwrap_or(&empty);
    let used = trace.tool_sequence();
    let reference = baseline.map(|b| b.tool_sequence());
    let expected: Vec<&str> = spec.expected_tools.iter().map(String::as_str).collect();
    let m = metrics::path_metrics(&expected, &used, reference.as_deref());

    let mut layer = LayerBuilder::default();
    layer.detail("tool_calls", used.len() as u64);
    layer.detail("tool_sequence", json!(used));
    layer.detail("tool_recall", m.tool_recall);
    layer.detail("tool_precision", m.tool_precision);
    layer.detail("tool_f1", m.tool_f1);
    layer.detail("loop_count", m.loop_count as u64);
    layer.detail("handoff_count", trace.handoffs.len() as u64);
    layer.detail(
        "handoffs",
        json!(
            trace
                .handoffs
                .iter()
                .map(|h| h.to.as_str())
                .collect::<Vec<_>>()
        ),
    );
    if let (Some(lcs), Some(edit)) = (m.sequence_lcs, m.sequence_edit) {
        layer.detail("sequence_lcs", lcs);
        layer.detail("sequence_edit", edit);
    }

    // Forbidden tools first: the one hard check of this layer (a safety boundary).
    for tool in &spec.forbidden_tools {
        let count = used.iter().filter(|u| **u == tool.as_str()).count();
        if count > 0 {
            layer.fail(format!(
                "forbidden_tools: {tool:?} was called {count} time(s)"
            ));
        } else {
            layer.passed();
        }
    }

    if let Some(max) = spec.max_tool_calls {
        if used.len() as u64 > max {
            layer.warn(format!(
                "max_tool_calls: {} tool calls, limit {max}",
                used.len()
            ));
        } else {
            layer.passed();
        }
    }

    // expected_tools alone asks for every expected tool (recall 1.0); an explicit
    // min_tool_recall relaxes or restates that.
    if !spec.expected_tools.is_empty() || spec.min_tool_recall.is_some() {
        let min = spec.min_tool_recall.unwrap_or(1.0);
        if m.tool_recall + f64::EPSILON < min {
            let missing: Vec<&str> = expected
                .iter()
                .copied()
                .filter(|e| !used.contains(e))
                .collect();
            layer.warn(format!(
                "tool_recall: {:.2} below {min:.2} (expected but not used: {})",
                m.tool_recall,
                missing.join(", ")
            ));
        } else {
            layer.passed();
        }
    }
    if let Some(min) = spec.min_tool_precision {
        if m.tool_precision + f64::EPSILON < min {
            let mut extra: Vec<&str> = used
                .iter()
                .copied()
                .filter(|u| !expected.contains(u))
                .collect();
            extra.sort_unstable();
            extra.dedup();
            layer.warn(format!(
                "tool_precision: {:.2} below {min:.2} (used but not expected: {})",
                m.tool_precision,
                extra.join(", ")
            ));
        } else {
            layer.passed();
        }
    }

    if let Some(max) = spec.max_loops {
        if m.loop_count as u64 > max {
            layer.warn(format!(
                "max_loops: {} immediate repeats, limit {max}",
                m.loop_count
            ));
        } else {
            layer.passed();
        }
    }

    check_baseline(
        &mut layer,
        spec,
        &used,
        reference.as_deref(),
        m.sequence_lcs,
    );
    check_handoffs(&mut layer, spec, trace, handoff_prefix);
    for expectation in &spec.expected_tool_args {
        check_tool_args(&mut layer, expectation, &trace.tool_calls);
    }
    layer.finish()
}

fn check_baseline(
    layer: &mut LayerBuilder,
    spec: &PathSpec,
    used: &[&str],
    reference: Option<&[&str]>,
    lcs: Option<f64>,
) {
    if let Some(mode) = spec.match_mode {
        match reference {
            None => layer.skipped(format!(
                "match_mode: skipped, no baseline to compare with ({})",
                mode_name(mode)
            )),
            Some(r) if metrics::matches_mode(mode, used, r) => layer.passed(),
            Some(r) => layer.warn(format!(
                "match_mode {}: tools [{}] do not match the baseline's [{}]",
                mode_name(mode),
                used.join(", "),
                r.join(", ")
            )),
        }
    }
    if let Some(min) = spec.min_sequence_similarity {
        match lcs {
            None => layer.skipped(
                "min_sequence_similarity: skipped, no baseline to compare with".to_string(),
            ),
            Some(s) if s + f64::EPSILON >= min => layer.passed(),
            Some(s) => layer.warn(format!(
                "min_sequence_similarity: {s:.2} below {min:.2} against the baseline"
            )),
        }
    }
}

fn mode_name(mode: MatchMode) -> &'static str {
    match mode {
        MatchMode::Strict => "strict",
        MatchMode::Unordered => "unordered",
        MatchMode::Subset => "subset",
        MatchMode::Superset => "superset",
    }
}

/// Agent names compare loosely so `BillingAgent`, `billing_agent` and
/// `transfer_to_billing_agent` (minus the prefix) all name the same agent.
fn agent_key(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn check_handoffs(layer: &mut LayerBuilder, spec: &PathSpec, trace: &Trace, prefix: &str) {
    if let Some(expected) = &spec.expected_handoff {
        let key = agent_key(expected);
        let found = trace.handoffs.iter().any(|h| {
            agent_key(&h.to) == key
                || agent_key(h.tool_name.strip_prefix(prefix).unwrap_or(&h.tool_name)) == key
        });
        if found {
            layer.passed();
        } else {
            let actual: Vec<&str> = trace.handoffs.iter().map(|h| h.to.as_str()).collect();
            layer.warn(format!(
                "expected_handoff: no handoff to {expected:?} (handoffs: [{}])",
                actual.join(", ")
            ));
        }
    }
    if !spec.expected_handoffs_available.is_empty() {
        let offered: Vec<String> = trace
            .tools_available
            .iter()
            .filter_map(|t| t.strip_prefix(prefix))
            .map(agent_key)
            .collect();
        let missing: Vec<&String> = spec
            .expected_handoffs_available
            .iter()
            .filter(|e| !offered.contains(&agent_key(e)))
            .collect();
        layer.detail(
            "handoffs_available",
            json!(
                trace
                    .tools_available
                    .iter()
                    .filter(|t| t.starts_with(prefix))
                    .collect::<Vec<_>>()
            ),
        );
        if missing.is_empty() {
            layer.passed();
        }
        for name in missing {
            layer.warn(format!(
                "expected_handoffs_available: {name:?} was never offered as a {prefix}* tool"
            ));
        }
    }
    if let Some(max) = spec.max_handoff_count {
        if trace.handoffs.len() as u64 > max {
            layer.warn(format!(
                "max_handoff_count: {} handoffs, limit {max}",
                trace.handoffs.len()
            ));
        } else {
            layer.passed();
        }
    }
}

/// One key's disagreement between expected and actual arguments.
fn key_diff(key: &str, expected: Option<&Value>, actual: Option<&Value>, reason: &str) -> Value {
    json!({"key": key, "expected": expected, "actual": actual, "reason": reason})
}

/// The per-key differences of one call's arguments against an expectation
/// (empty when the call matches).
pub fn tool_args_diff(expectation: &ToolArgsExpectation, arguments: &Value) -> Vec<Value> {
    let Some(actual) = arguments.as_object() else {
        return vec![key_diff(
            "",
            None,
            Some(arguments),
            "arguments are not a JSON object",
        )];
    };
    let ignored = |k: &str| expectation.ignore.iter().any(|i| i == k);
    let mut diffs = Vec::new();
    for (key, want) in expectation.args.iter().filter(|(k, _)| !ignored(k)) {
        let Some(got) = actual.get(key) else {
            diffs.push(key_diff(key, Some(want), None, "missing"));
            continue;
        };
        if let Some(reason) = value_mismatch(expectation.mode, want, got) {
            diffs.push(key_diff(key, Some(want), Some(got), &reason));
        }
    }
    if expectation.mode == ArgsMatchMode::Exact {
        for (key, got) in actual.iter().filter(|(k, _)| !ignored(k)) {
            if !expectation.args.contains_key(key) {
                diffs.push(key_diff(key, None, Some(got), "unexpected"));
            }
        }
    }
    diffs
}

/// Why `got` does not satisfy `want` under `mode`, or `None` when it does.
fn value_mismatch(mode: ArgsMatchMode, want: &Value, got: &Value) -> Option<String> {
    let got_text = || match got {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match (mode, want) {
        (ArgsMatchMode::Contains, Value::String(needle)) => {
            (!got_text().contains(needle.as_str())).then(|| "does not contain".to_string())
        }
        (ArgsMatchMode::Regex, Value::String(pattern)) => match regex::Regex::new(pattern) {
            Ok(re) => (!re.is_match(&got_text())).then(|| "does not match".to_string()),
            Err(e) => Some(format!("invalid regex: {e}")),
        },
        // Objects nested under `subset` compare as subsets too, so one volatile
        // nested key does not force spelling out the whole object.
        (ArgsMatchMode::Subset, Value::Object(want_obj)) => match got.as_object() {
            Some(got_obj) => want_obj.iter().find_map(|(k, w)| match got_obj.get(k) {
                None => Some(format!("{k}: missing")),
                Some(g) => value_mismatch(mode, w, g).map(|r| format!("{k}: {r}")),
            }),
            None => Some("differs".to_string()),
        },
        _ => (want != got).then(|| "differs".to_string()),
    }
}

fn check_tool_args(
    layer: &mut LayerBuilder,
    expectation: &ToolArgsExpectation,
    calls: &[ToolCall],
) {
    let candidates: Vec<&ToolCall> = calls
        .iter()
        .filter(|c| c.name == expectation.tool)
        .collect();
    if candidates.is_empty() {
        layer.warn(format!(
            "expected_tool_args: {:?} was never called",
            expectation.tool
        ));
        push_args_detail(layer, expectation, None, &[]);
        return;
    }
    // Any call of the tool may satisfy the expectation; report against the closest one.
    let mut best: Option<(&ToolCall, Vec<Value>)> = None;
    for call in candidates {
        let diff = tool_args_diff(expectation, &call.arguments);
        if best.as_ref().is_none_or(|(_, d)| diff.len() < d.len()) {
            best = Some((call, diff));
        }
    }
    let Some((call, diff)) = best else {
        return;
    };
    push_args_detail(layer, expectation, Some(&call.id), &diff);
    if diff.is_empty() {
        layer.passed();
        return;
    }
    let rendered: Vec<String> = diff.iter().map(render_key_diff).collect();
    layer.warn(format!(
        "expected_tool_args: {} ({} mode, call {}): {}",
        expectation.tool,
        args_mode_name(expectation.mode),
        call.id,
        rendered.join("; ")
    ));
}

fn push_args_detail(
    layer: &mut LayerBuilder,
    expectation: &ToolArgsExpectation,
    call_id: Option<&str>,
    diff: &[Value],
) {
    let entry = json!({
        "tool": expectation.tool,
        "mode": args_mode_name(expectation.mode),
        "call_id": call_id,
        "matched": call_id.is_some() && diff.is_empty(),
        "diff": diff,
    });
    let mut all = layer_details_array(layer);
    all.push(entry);
    layer.detail("tool_args", Value::Array(all));
}

fn layer_details_array(layer: &mut LayerBuilder) -> Vec<Value> {
    match layer.take_detail("tool_args") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

fn render_key_diff(diff: &Value) -> String {
    let map = diff.as_object().cloned().unwrap_or_else(Map::new);
    let key = map.get("key").and_then(Value::as_str).unwrap_or("");
    let reason = map.get("reason").and_then(Value::as_str).unwrap_or("");
    let show = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "(absent)".to_string(),
        Some(v) => v.to_string(),
    };
    format!(
        "{}: {reason} (expected {}, got {})",
        if key.is_empty() { "arguments" } else { key },
        show(map.get("expected")),
        show(map.get("actual"))
    )
}

fn args_mode_name(mode: ArgsMatchMode) -> &'static str {
    match mode {
        ArgsMatchMode::Exact => "exact",
        ArgsMatchMode::Subset => "subset",
        ArgsMatchMode::Contains => "contains",
        ArgsMatchMode::Regex => "regex",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::result::Status;
    use crate::trace::Handoff;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: format!("call_{name}"),
            name: name.to_string(),
            arguments: args,
            result: None,
            is_error: false,
            llm_call: 0,
        }
    }

    fn trace(tools: &[&str]) -> Trace {
        Trace {
            tool_calls: tools.iter().map(|t| call(t, json!({}))).collect(),
            ..Trace::default()
        }
    }

    fn run(spec: &PathSpec, t: &Trace, baseline: Option<&Trace>) -> LayerResult {
        evaluate(Some(spec), t, baseline, "transfer_to_")
    }

    #[test]
    fn no_assertions_is_skip_but_measures() {
        let layer = evaluate(None, &trace(&["a", "a"]), None, "transfer_to_");
        assert_eq!(layer.status, Status::Skip);
        assert_eq!(layer.details["loop_count"], 1);
        assert_eq!(layer.details["tool_calls"], 2);
        assert!(!layer.details.contains_key("sequence_lcs"));
    }

    #[test]
    fn forbidden_tool_escalates_to_fail() {
        let spec = PathSpec {
            forbidden_tools: vec!["web_search".into()],
            max_tool_calls: Some(0),
            ..PathSpec::default()
        };
        let layer = run(&spec, &trace(&["web_search", "web_search"]), None);
        assert_eq!(layer.status, Status::Fail);
        assert_eq!(
            layer.messages[0],
            r#"forbidden_tools: "web_search" was called 2 time(s)"#
        );
        // The soft exceedance is still reported beside the hard failure.
        assert_eq!(layer.messages.len(), 2);
    }

    #[test]
    fn forbidden_tool_unused_passes() {
        let spec = PathSpec {
            forbidden_tools: vec!["web_search".into()],
            ..PathSpec::default()
        };
        assert_eq!(
            run(&spec, &trace(&["retriever"]), None).status,
            Status::Pass
        );
    }

    #[test]
    fn exceedances_warn() {
        let spec = PathSpec {
            max_tool_calls: Some(2),
            max_loops: Some(1),
            ..PathSpec::default()
        };
        let layer = run(&spec, &trace(&["s", "s", "g", "g", "g"]), None);
        assert_eq!(layer.status, Status::Warn);
        assert_eq!(
            layer.messages,
            [
                "max_tool_calls: 5 tool calls, limit 2",
                "max_loops: 3 immediate repeats, limit 1"
            ]
        );
    }

    #[test]
    fn expected_tools_alone_require_full_recall() {
        let spec = PathSpec {
            expected_tools: vec!["retriever".into(), "grader".into()],
            ..PathSpec::default()
        };
        let layer = run(&spec, &trace(&["retriever"]), None);
        assert_eq!(layer.status, Status::Warn);
        assert!(layer.messages[0].contains("expected but not used: grader"));
        assert_eq!(
            run(&spec, &trace(&["grader", "retriever"]), None).status,
            Status::Pass
        );
    }

    #[test]
    fn min_recall_and_precision_thresholds() {
        let spec = PathSpec {
            expected_tools: vec!["a".into(), "b".into()],
            min_tool_recall: Some(0.5),
            min_tool_precision: Some(0.5),
            ..PathSpec::default()
        };
        assert_eq!(run(&spec, &trace(&["a", "x"]), None).status, Status::Pass);
        let layer = run(&spec, &trace(&["a", "x", "y"]), None);
        assert_eq!(layer.status, Status::Warn);
        assert!(layer.messages[0].contains("used but not expected: x, y"));
    }

    #[test]
    fn zero_tool_calls_against_expectations() {
        let spec = PathSpec {
            max_tool_calls: Some(0),
            min_tool_precision: Some(1.0),
            ..PathSpec::default()
        };
        // U empty and E empty: precision 1.0.
        assert_eq!(run(&spec, &trace(&[]), None).status, Status::Pass);
    }

    #[test]
    fn baseline_checks_skipped_without_baseline() {
        let spec = PathSpec {
            match_mode: Some(MatchMode::Strict),
            min_sequence_similarity: Some(0.8),
            ..PathSpec::default()
        };
        let layer = run(&spec, &trace(&["a"]), None);
        assert_eq!(layer.status, Status::Skip);
        assert_eq!(
            layer.messages,
            [
                "match_mode: skipped, no baseline to compare with (strict)",
                "min_sequence_similarity: skipped, no baseline to compare with"
            ]
        );
    }

    #[test]
    fn every_match_mode_against_a_baseline() {
        let base = trace(&["search", "generate"]);
        let cases = [
            (MatchMode::Strict, vec!["search", "generate"], Status::Pass),
            (MatchMode::Strict, vec!["generate", "search"], Status::Warn),
            (
                MatchMode::Unordered,
                vec!["generate", "search"],
                Status::Pass,
            ),
            (
                MatchMode::Unordered,
                vec!["search", "search", "generate"],
                Status::Warn,
            ),
            (
                MatchMode::Subset,
                vec!["search", "rerank", "generate"],
                Status::Pass,
            ),
            (MatchMode::Subset, vec!["search"], Status::Warn),
            (MatchMode::Superset, vec!["search"], Status::Pass),
            (MatchMode::Superset, vec!["search", "rerank"], Status::Warn),
        ];
        for (mode, used, want) in cases {
            let spec = PathSpec {
                match_mode: Some(mode),
                ..PathSpec::default()
            };
            let layer = run(&spec, &trace(&used), Some(&base));
            assert_eq!(
                layer.status, want,
                "{mode:?} {used:?}: {:?}",
                layer.messages
            );
        }
    }

    #[test]
    fn sequence_similarity_against_baseline() {
        let spec = PathSpec {
            min_sequence_similarity: Some(0.8),
            ..PathSpec::default()
        };
        let base = trace(&["search", "generate"]);
        let layer = run(
            &spec,
            &trace(&["search", "rerank", "generate"]),
            Some(&base),
        );
        assert_eq!(layer.status, Status::Pass);
        assert_eq!(layer.details["sequence_lcs"], json!(0.8));
        let layer = run(&spec, &trace(&["generate", "search"]), Some(&base));
        assert_eq!(layer.status, Status::Warn);
        assert!(layer.messages[0].contains("0.50 below 0.80"));
    }

    fn handoff_trace(to: &[&str], available: &[&str]) -> Trace {
        Trace {
            handoffs: to
                .iter()
                .map(|t| Handoff {
                    to: t.to_string(),
                    tool_name: format!("transfer_to_{t}"),
                    tool_call_id: "call_h".into(),
                    llm_call: 0,
                })
                .collect(),
            tools_available: available.iter().map(|s| s.to_string()).collect(),
            ..Trace::default()
        }
    }

    #[test]
    fn expected_handoff_matches_names_loosely() {
        let spec = PathSpec {
            expected_handoff: Some("BillingAgent".into()),
            max_handoff_count: Some(1),
            ..PathSpec::default()
        };
        assert_eq!(
            run(&spec, &handoff_trace(&["billing_agent"], &[]), None).status,
            Status::Pass
        );
        let layer = run(
            &spec,
            &handoff_trace(&["tech_agent", "tech_agent"], &[]),
            None,
        );
        assert_eq!(layer.status, Status::Warn);
        assert_eq!(layer.messages.len(), 2);
        assert!(layer.messages[0].contains("no handoff to \"BillingAgent\""));
    }

    #[test]
    fn expected_handoffs_available_uses_the_prefix() {
        let spec = PathSpec {
            expected_handoffs_available: vec!["BillingAgent".into(), "TechnicalAgent".into()],
            ..PathSpec::default()
        };
        let t = handoff_trace(
            &[],
            &["billing_agent", "lookup", "transfer_to_billing_agent"],
        );
        let layer = run(&spec, &t, None);
        assert_eq!(layer.status, Status::Warn);
        assert_eq!(layer.messages.len(), 1);
        assert!(layer.messages[0].contains("TechnicalAgent"));
        assert_eq!(
            layer.details["handoffs_available"],
            json!(["transfer_to_billing_agent"])
        );
    }

    fn args(mode: ArgsMatchMode, args: Value, ignore: &[&str]) -> ToolArgsExpectation {
        ToolArgsExpectation {
            tool: "search".into(),
            args: args.as_object().cloned().unwrap_or_default(),
            mode,
            ignore: ignore.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn tool_args_exact_reports_missing_unexpected_and_differing_keys() {
        let e = args(ArgsMatchMode::Exact, json!({"q": "tokyo", "k": 5}), &[]);
        assert!(tool_args_diff(&e, &json!({"q": "tokyo", "k": 5})).is_empty());
        let diff = tool_args_diff(&e, &json!({"q": "osaka", "extra": true}));
        let reasons: Vec<(&str, &str)> = diff
            .iter()
            .map(|d| {
                (
                    d["key"].as_str().unwrap_or(""),
                    d["reason"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            reasons,
            [("k", "missing"), ("q", "differs"), ("extra", "unexpected")]
        );
    }

    #[test]
    fn tool_args_subset_ignores_other_keys_and_nests() {
        let e = args(
            ArgsMatchMode::Subset,
            json!({"q": "tokyo", "opts": {"lang": "en"}}),
            &[],
        );
        let got = json!({"q": "tokyo", "opts": {"lang": "en", "ts": 1}, "request_id": "x"});
        assert!(tool_args_diff(&e, &got).is_empty());
        let got = json!({"q": "tokyo", "opts": {"lang": "ja"}});
        assert_eq!(tool_args_diff(&e, &got)[0]["reason"], "lang: differs");
    }

    #[test]
    fn tool_args_contains_and_regex() {
        let e = args(ArgsMatchMode::Contains, json!({"q": "tokyo", "k": 5}), &[]);
        assert!(tool_args_diff(&e, &json!({"q": "weather tokyo today", "k": 5})).is_empty());
        assert_eq!(tool_args_diff(&e, &json!({"q": "osaka", "k": 5})).len(), 1);
        let e = args(ArgsMatchMode::Regex, json!({"q": "^weather .*tokyo$"}), &[]);
        assert!(tool_args_diff(&e, &json!({"q": "weather in tokyo"})).is_empty());
        assert_eq!(
            tool_args_diff(&e, &json!({"q": "tokyo weather"}))[0]["reason"],
            "does not match"
        );
        let bad = args(ArgsMatchMode::Regex, json!({"q": "("}), &[]);
        assert!(
            tool_args_diff(&bad, &json!({"q": "x"}))[0]["reason"]
                .as_str()
                .unwrap_or("")
                .starts_with("invalid regex")
        );
    }

    #[test]
    fn tool_args_ignore_list_and_non_object_arguments() {
        let e = args(
            ArgsMatchMode::Exact,
            json!({"q": "tokyo", "ts": 1}),
            &["ts", "request_id"],
        );
        assert!(tool_args_diff(&e, &json!({"q": "tokyo", "ts": 99, "request_id": "r"})).is_empty());
        let diff = tool_args_diff(&e, &json!("not json {"));
        assert_eq!(diff[0]["reason"], "arguments are not a JSON object");
    }

    #[test]
    fn tool_args_mismatch_is_a_warning_with_a_per_key_diff() {
        let mut t = trace(&[]);
        t.tool_calls = vec![
            call("search", json!({"q": "paris", "k": 1})),
            call("search", json!({"q": "osaka", "k": 5})),
        ];
        t.tool_calls[1].id = "call_2".into();
        let spec = PathSpec {
            expected_tool_args: vec![args(
                ArgsMatchMode::Subset,
                json!({"q": "tokyo", "k": 5}),
                &[],
            )],
            ..PathSpec::default()
        };
        let layer = run(&spec, &t, None);
        assert_eq!(layer.status, Status::Warn);
        // Reported against the closest call (one differing key, not two).
        assert_eq!(
            layer.messages,
            [
                r#"expected_tool_args: search (subset mode, call call_2): q: differs (expected "tokyo", got "osaka")"#
            ]
        );
        assert_eq!(layer.details["tool_args"][0]["matched"], false);

        t.tool_calls
            .push(call("search", json!({"q": "tokyo", "k": 5})));
        assert_eq!(run(&spec, &t, None).status, Status::Pass);
    }

    #[test]
    fn tool_args_for_a_tool_never_called_warns() {
        let spec = PathSpec {
            expected_tool_args: vec![args(ArgsMatchMode::Subset, json!({"q": "x"}), &[])],
            ..PathSpec::default()
        };
        let layer = run(&spec, &trace(&["other"]), None);
        assert_eq!(layer.status, Status::Warn);
        assert_eq!(
            layer.messages,
            [r#"expected_tool_args: "search" was never called"#]
        );
    }
}
