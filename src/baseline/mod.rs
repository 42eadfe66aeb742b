//! Golden baselines: save a stored run's traces as a version, list versions,
//! feed a version to the engine, diff two versions (or a version and a run)
//! tier by tier, and compare two runs check by check.

pub mod compare;
pub mod diff;
pub mod render;
pub mod store;

pub use diff::{CaseDiff, Category, Side, diff_case};
pub use render::DiffReport;
pub use store::{Baseline, BaselineMetadata, BaselineStore, SaveOutcome, SaveRequest};

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::run::{RunStore, store::DEFAULT_STORE};
use crate::spec::LoadedSpec;
use crate::trace::Trace;

/// The baseline the engine compares with: `--baseline V`, else the spec's
/// `baseline` field, else none. A named version that does not exist is an error.
pub fn engine_baseline(
    spec: &LoadedSpec,
    version: Option<&str>,
) -> Result<Option<(String, BTreeMap<String, Trace>)>> {
    let Some(version) = version.or(spec.spec.baseline.as_deref()) else {
        return Ok(None);
    };
    let traces = BaselineStore::for_spec(spec).traces(version)?;
    Ok(Some((version.to_string(), traces)))
}

/// One side of a diff by name: a baseline version, or `run:latest` / `run:<id>`
/// from the run store. Returns its label and its sides by case id.
pub fn load_sides(spec: &LoadedSpec, name: &str) -> Result<(String, BTreeMap<String, Side>)> {
    if let Some(run) = name.strip_prefix("run:") {
        let record = RunStore::new(DEFAULT_STORE).load(run)?;
        if record.agent != spec.spec.agent {
            return Err(Error::other(
                format!(
                    "run {} is of agent {}, not {}",
                    record.id, record.agent, spec.spec.agent
                ),
                None,
            ));
        }
        let sides = record
            .cases
            .into_iter()
            .filter(|c| c.trial == 1)
            .filter_map(|c| {
                let correctness = c.result.as_ref()?.correctness.status;
                Some((
                    c.case_id,
                    Side {
                        trace: c.trace?,
                        correctness,
                    },
                ))
            })
            .collect();
        return Ok((format!("run:{}", record.id), sides));
    }
    let baselines = BaselineStore::for_spec(spec).load(name)?;
    let sides = baselines
        .into_iter()
        .map(|(id, b)| {
            // Correctness is re-scored with the current spec's deterministic checks, so both
            // sides are judged by the same rules; a case no longer in the spec keeps its precheck.
            let correctness = match spec.cases.iter().find(|c| c.id == id) {
                Some(case) => {
                    crate::engine::evaluate_deterministic(
                        case,
                        &b.trace,
                        None,
                        &spec.spec.handoff_prefix,
                    )
                    .correctness
                    .status
                }
                None if b.metadata.precheck_passed => crate::engine::Status::Pass,
                None => crate::engine::Status::Fail,
            };
            (
                id,
                Side {
                    trace: b.trace,
                    correctness,
                },
            )
        })
        .collect();
    Ok((name.to_string(), sides))
}

/// Diffs side `before` against side `after` (see [`load_sides`]) for the selected
/// cases (empty: all), in spec order, then cases not in the spec.
pub fn diff_report(
    spec: &LoadedSpec,
    before: &str,
    after: &str,
    cases: &[String],
) -> Result<DiffReport> {
    let (before_label, b) = load_sides(spec, before)?;
    let (after_label, a) = load_sides(spec, after)?;
    let mut ids: Vec<String> = spec.cases.iter().map(|c| c.id.clone()).collect();
    for id in b.keys().chain(a.keys()) {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    for id in cases {
        if !ids.contains(id) {
            return Err(Error::other(
                format!("no case {id} in the spec or either side"),
                None,
            ));
        }
    }
    let diffs = ids
        .into_iter()
        .filter(|id| cases.is_empty() || cases.contains(id))
        .filter_map(|id| {
            let expected = spec
                .cases
                .iter()
                .find(|c| c.id == id)
                .and_then(|c| c.query.path.as_ref())
                .map(|p| p.expected_tools.clone())
                .unwrap_or_default();
            match (b.get(&id), a.get(&id)) {
                (Some(sb), Some(sa)) => Some(diff_case(&id, &expected, sb, sa)),
                (Some(_), None) => Some(CaseDiff::one_sided(&id, "before")),
                (None, Some(_)) => Some(CaseDiff::one_sided(&id, "after")),
                (None, None) => None,
            }
        })
        .collect();
    Ok(DiffReport {
        agent: spec.spec.agent.clone(),
        before: before_label,
        after: after_label,
        cases: diffs,
    })
}
