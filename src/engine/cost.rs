//! The cost layer (soft): every exceedance warns, nothing fails. The cost
//! multiplier needs a baseline with a non-zero cost, else it is skipped and said so.

use crate::engine::result::{LayerBuilder, LayerResult};
use crate::spec::CostSpec;
use crate::trace::Trace;

/// Evaluates `spec` against the trace's totals; every figure is measured regardless.
pub fn evaluate(spec: Option<&CostSpec>, trace: &Trace, baseline: Option<&Trace>) -> LayerResult {
    let totals = &trace.totals;
    let mut layer = LayerBuilder::default();
    layer.detail("cost_usd", totals.cost_usd);
    layer.detail("total_tokens", totals.total_tokens);
    layer.detail("input_tokens", totals.input_tokens);
    layer.detail("output_tokens", totals.output_tokens);
    layer.detail("llm_calls", totals.llm_calls);
    layer.detail("latency_ms", totals.duration_ms);
    let multiplier = baseline
        .map(|b| b.totals.cost_usd)
        .filter(|c| *c > 0.0)
        .map(|base| totals.cost_usd / base);
    if let Some(b) = baseline {
        layer.detail("baseline_cost_usd", b.totals.cost_usd);
    }
    if let Some(m) = multiplier {
        layer.detail("cost_multiplier", m);
    }
    let Some(spec) = spec else {
        return layer.finish();
    };

    if let Some(max) = spec.max_cost_multiplier {
        match (baseline, multiplier) {
            (None, _) => layer
                .skipped("max_cost_multiplier: skipped, no baseline to compare with".to_string()),
            (Some(_), None) => {
                layer.skipped("max_cost_multiplier: skipped, the baseline's cost is 0".to_string())
            }
            (Some(_), Some(m)) if m > max => layer.warn(format!(
                "max_cost_multiplier: cost ${:.6} is {m:.2}× the baseline's, limit {max}×",
                totals.cost_usd
            )),
            (Some(_), Some(_)) => layer.passed(),
        }
    }
    bound(
        &mut layer,
        "max_total_tokens",
        totals.total_tokens,
        spec.max_total_tokens,
        "tokens",
    );
    bound(
        &mut layer,
        "max_llm_calls",
        totals.llm_calls,
        spec.max_llm_calls,
        "LLM calls",
    );
    bound(
        &mut layer,
        "max_latency_ms",
        totals.duration_ms,
        spec.max_latency_ms,
        "ms",
    );
    if let Some(max) = spec.max_cost_usd {
        if totals.cost_usd > max {
            layer.warn(format!(
                "max_cost_usd: ${:.6}, limit ${max}",
                totals.cost_usd
            ));
        } else {
            layer.passed();
        }
    }
    layer.finish()
}

fn bound(layer: &mut LayerBuilder, name: &str, value: u64, max: Option<u64>, unit: &str) {
    let Some(max) = max else { return };
    if value > max {
        layer.warn(format!("{name}: {value} {unit}, limit {max}"));
    } else {
        layer.passed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::result::Status;
    use crate::trace::Totals;

    fn trace(cost: f64, tokens: u64, calls: u64, ms: u64) -> Trace {
        Trace {
            totals: Totals {
                cost_usd: cost,
                total_tokens: tokens,
                llm_calls: calls,
                duration_ms: ms,
                ..Totals::default()
            },
            ..Trace::default()
        }
    }

    #[test]
    fn no_spec_is_skip_with_figures() {
        let layer = evaluate(None, &trace(0.5, 10, 1, 100), None);
        assert_eq!(layer.status, Status::Skip);
        assert_eq!(layer.details["total_tokens"], 10);
        assert_eq!(layer.details["latency_ms"], 100);
    }

    #[test]
    fn exceedances_warn_never_fail() {
        let spec = CostSpec {
            max_total_tokens: Some(5),
            max_llm_calls: Some(0),
            max_latency_ms: Some(99),
            max_cost_usd: Some(0.1),
            max_cost_multiplier: None,
        };
        let layer = evaluate(Some(&spec), &trace(0.5, 10, 1, 100), None);
        assert_eq!(layer.status, Status::Warn);
        assert_eq!(layer.messages.len(), 4);
    }

    #[test]
    fn limits_are_inclusive() {
        let spec = CostSpec {
            max_total_tokens: Some(10),
            max_llm_calls: Some(1),
            max_latency_ms: Some(100),
            max_cost_usd: Some(0.5),
            max_cost_multiplier: None,
        };
        assert_eq!(
            evaluate(Some(&spec), &trace(0.5, 10, 1, 100), None).status,
            Status::Pass
        );
    }

    #[test]
    fn multiplier_against_baseline() {
        let spec = CostSpec {
            max_cost_multiplier: Some(2.0),
            ..CostSpec::default()
        };
        let base = trace(0.1, 0, 0, 0);
        let layer = evaluate(Some(&spec), &trace(0.3, 0, 0, 0), Some(&base));
        assert_eq!(layer.status, Status::Warn);
        assert!((layer.details["cost_multiplier"].as_f64().unwrap_or(0.0) - 3.0).abs() < 1e-9);
        assert_eq!(
            evaluate(Some(&spec), &trace(0.2, 0, 0, 0), Some(&base)).status,
            Status::Pass
        );
    }

    #[test]
    fn multiplier_skipped_without_baseline_or_with_zero_cost() {
        let spec = CostSpec {
            max_cost_multiplier: Some(2.0),
            ..CostSpec::default()
        };
        let layer = evaluate(Some(&spec), &trace(0.3, 0, 0, 0), None);
        assert_eq!(layer.status, Status::Skip);
        assert_eq!(
            layer.messages,
            ["max_cost_multiplier: skipped, no baseline to compare with"]
        );
        let layer = evaluate(
            Some(&spec),
            &trace(0.3, 0, 0, 0),
            Some(&trace(0.0, 0, 0, 0)),
        );
        assert_eq!(layer.status, Status::Skip);
        assert!(layer.messages[0].contains("baseline's cost is 0"));
        assert!(!layer.details.contains_key("cost_multiplier"));
    }
}
