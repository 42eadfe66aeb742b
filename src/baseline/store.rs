//! Golden baselines on disk: `<baseline_dir>/<agent>/<version>/<case>.json`
//! (REFERENCE.md section 7). A version is written whole or not at all: every
//! file goes into a hidden temp directory that is then renamed into place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic::{self, Visibility};
use crate::engine::Status;
use crate::error::{Error, Result};
use crate::run::{CaseRun, CaseStatus, RunRecord};
use crate::spec::LoadedSpec;
use crate::trace::Trace;

/// One case's golden trace with what it was captured from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The version name (`v2-fixed`).
    pub version: String,
    /// The spec's agent.
    pub agent: String,
    /// The case id.
    pub case: String,
    /// RFC 3339 UTC time of the save.
    pub captured_at: String,
    /// Provenance and the precheck's verdict.
    pub metadata: BaselineMetadata,
    /// The trace derived from the run's cassette.
    pub trace: Trace,
}

/// Where a baseline came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineMetadata {
    /// Models the trace's LLM calls used (sorted, unique).
    pub models: Vec<String>,
    /// `sha256:<hex>` of the canonical spec at save time.
    pub spec_hash: String,
    /// The judged checks of the case (`llm_judge[0]`, `safety_check`, …).
    pub judge_rubrics: Vec<String>,
    /// Whether the correctness precheck passed (false only with `--force-save`).
    pub precheck_passed: bool,
    /// The run the trace was taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// The correctness precheck of one stored case.
#[derive(Debug, Clone, PartialEq)]
pub struct Precheck {
    /// The case id.
    pub case: String,
    /// Whether correctness passed (deterministic checks and cached judge verdicts).
    pub passed: bool,
    /// Why it failed, one line each.
    pub reasons: Vec<String>,
}

/// The precheck is the stored run's correctness verdict: the deterministic checks
/// and the judge verdicts the run obtained (cached or live), so saving never calls a judge.
pub fn precheck(case: &CaseRun) -> Precheck {
    let (passed, reasons) = match &case.result {
        Some(r) if r.correctness.status == Status::Fail => (
            false,
            r.correctness
                .messages
                .iter()
                .filter(|m| !m.contains(": skipped"))
                .cloned()
                .collect(),
        ),
        Some(_) => (true, Vec::new()),
        None => (false, vec!["the run holds no verdict for this case".into()]),
    };
    Precheck {
        case: case.case_id.clone(),
        passed,
        reasons,
    }
}

/// A version's summary for `agentci baselines`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionSummary {
    /// The version name.
    pub version: String,
    /// Cases saved.
    pub cases: usize,
    /// The newest `captured_at` among them.
    pub captured_at: String,
    /// Whether every case passed the precheck.
    pub precheck_passed: bool,
}

/// The outcome of [`BaselineStore::save`].
#[derive(Debug, Clone, PartialEq)]
pub enum SaveOutcome {
    /// The version was written; its directory.
    Saved(PathBuf),
    /// Cases failed the precheck; nothing was written.
    PrecheckFailed(Vec<Precheck>),
    /// The version exists and `overwrite` was not given; nothing was written.
    Exists(PathBuf),
}

/// What to save from a run.
#[derive(Debug, Clone, Default)]
pub struct SaveRequest {
    /// The version name.
    pub version: String,
    /// Only these cases (empty: every case of the run).
    pub cases: Vec<String>,
    /// Save cases that fail the precheck.
    pub force: bool,
    /// Replace an existing version.
    pub overwrite: bool,
    /// The capture time to record (RFC 3339).
    pub captured_at: String,
}

/// The baselines of one agent: `<baseline_dir>/<agent>/`.
#[derive(Debug, Clone)]
pub struct BaselineStore {
    root: PathBuf,
    agent: String,
}

impl BaselineStore {
    /// The store for `agent` under `baseline_dir`.
    pub fn new(baseline_dir: &Path, agent: &str) -> Self {
        BaselineStore {
            root: baseline_dir.join(agent),
            agent: agent.to_string(),
        }
    }

    /// The store a spec names (`baseline_dir` relative to the working directory, as the cassettes).
    pub fn for_spec(spec: &LoadedSpec) -> Self {
        BaselineStore::new(&spec.spec.baseline_dir, &spec.spec.agent)
    }

    /// A version's directory.
    pub fn version_dir(&self, version: &str) -> PathBuf {
        self.root.join(version)
    }

    /// Builds the baselines of `request` from `run` and saves them as one version,
    /// unless a case fails the precheck (without `force`) or the version exists
    /// (without `overwrite`).
    pub fn save(
        &self,
        spec: &LoadedSpec,
        run: &RunRecord,
        request: &SaveRequest,
    ) -> Result<SaveOutcome> {
        check_version_name(&request.version)?;
        let selected = select_cases(run, &request.cases)?;
        let failing: Vec<Precheck> = selected
            .iter()
            .map(|c| precheck(c))
            .filter(|p| !p.passed)
            .collect();
        if !failing.is_empty() && !request.force {
            return Ok(SaveOutcome::PrecheckFailed(failing));
        }
        let dir = self.version_dir(&request.version);
        if dir.exists() && !request.overwrite {
            return Ok(SaveOutcome::Exists(dir));
        }
        let mut files = Vec::with_capacity(selected.len());
        for case in &selected {
            let baseline = self.baseline_of(spec, run, case, request)?;
            let text = serde_json::to_string_pretty(&baseline)
                .map_err(|e| Error::other(format!("cannot serialize a baseline: {e}"), None))?;
            files.push((format!("{}.json", case.case_id), text + "\n"));
        }
        self.write_version(&request.version, &files)?;
        Ok(SaveOutcome::Saved(dir))
    }

    fn baseline_of(
        &self,
        spec: &LoadedSpec,
        run: &RunRecord,
        case: &CaseRun,
        request: &SaveRequest,
    ) -> Result<Baseline> {
        let trace = case.trace.clone().ok_or_else(|| {
            Error::other(
                format!(
                    "case {} of run {} has no trace ({})",
                    case.case_id,
                    run.id,
                    case.error.as_deref().unwrap_or("it did not run")
                ),
                Some("re-run the case, or leave it out with --case".into()),
            )
        })?;
        let mut models: Vec<String> = trace.llm_calls.iter().map(|c| c.model.clone()).collect();
        models.sort();
        models.dedup();
        let judge_rubrics = spec
            .cases
            .iter()
            .find(|c| c.id == case.case_id)
            .and_then(|c| c.query.correctness.as_ref())
            .map(|c| {
                crate::engine::correctness::judged_checks(c)
                    .iter()
                    .map(|j| j.name())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Baseline {
            version: request.version.clone(),
            agent: self.agent.clone(),
            case: case.case_id.clone(),
            captured_at: request.captured_at.clone(),
            metadata: BaselineMetadata {
                models,
                spec_hash: spec.hash.clone(),
                judge_rubrics,
                precheck_passed: precheck(case).passed,
                run_id: Some(run.id.clone()),
            },
            trace,
        })
    }

    /// Writes every file into a hidden temp directory, then renames it into place
    /// (moving an old version aside first), so readers never see half a version.
    fn write_version(&self, version: &str, files: &[(String, String)]) -> Result<()> {
        std::fs::create_dir_all(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let staging = tempfile::Builder::new()
            .prefix(".agentci-")
            .tempdir_in(&self.root)
            .map_err(|e| Error::io(&self.root, e))?;
        for (name, text) in files {
            atomic::write(
                &staging.path().join(name),
                text.as_bytes(),
                Visibility::Public,
            )?;
        }
        let dir = self.version_dir(version);
        // The old version is moved into a temp directory that is removed on drop.
        let trash = tempfile::Builder::new()
            .prefix(".agentci-old-")
            .tempdir_in(&self.root)
            .map_err(|e| Error::io(&self.root, e))?;
        if dir.exists() {
            std::fs::rename(&dir, trash.path().join("old")).map_err(|e| Error::io(&dir, e))?;
        }
        let staged = staging.keep();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // tempdir creates 0700; a committed baseline folder is shared like the files in it.
            let _ = std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755));
        }
        std::fs::rename(&staged, &dir).map_err(|e| Error::io(&dir, e))?;
        Ok(())
    }

    /// Loads every case of a version, by case id.
    pub fn load(&self, version: &str) -> Result<BTreeMap<String, Baseline>> {
        check_version_name(version)?;
        let dir = self.version_dir(version);
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::other(
                    format!(
                        "no baseline version {version} for agent {} (looked in {})",
                        self.agent,
                        dir.display()
                    ),
                    Some(
                        "list the versions with `agentci baselines --spec SPEC`, or save one with `agentci save --spec SPEC --version V`".into(),
                    ),
                )
            } else {
                Error::io(&dir, e)
            }
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        let mut out = BTreeMap::new();
        for path in paths {
            let baseline = load_file(&path)?;
            out.insert(baseline.case.clone(), baseline);
        }
        Ok(out)
    }

    /// A version's traces by case id, for the engine's baseline-dependent checks.
    pub fn traces(&self, version: &str) -> Result<BTreeMap<String, Trace>> {
        Ok(self
            .load(version)?
            .into_iter()
            .map(|(case, b)| (case, b.trace))
            .collect())
    }

    /// Every version, sorted by name.
    pub fn list(&self) -> Result<Vec<VersionSummary>> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.root, e)),
        };
        let mut versions: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| !name.starts_with('.'))
            .collect();
        versions.sort();
        let mut out = Vec::with_capacity(versions.len());
        for version in versions {
            let cases = self.load(&version)?;
            out.push(VersionSummary {
                cases: cases.len(),
                captured_at: cases
                    .values()
                    .map(|b| b.captured_at.clone())
                    .max()
                    .unwrap_or_default(),
                precheck_passed: cases.values().all(|b| b.metadata.precheck_passed),
                version,
            });
        }
        Ok(out)
    }
}

/// Reads one baseline file; a malformed one is an error naming the file and position.
pub fn load_file(path: &Path) -> Result<Baseline> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| {
        Error::other(
            format!(
                "{}:{}:{}: not a valid baseline: {e}",
                path.display(),
                e.line(),
                e.column()
            ),
            Some(
                "baselines are written by `agentci save`; re-save the version with --overwrite"
                    .into(),
            ),
        )
    })
}

/// A version names a directory: letters, digits, `-`, `_`, `.`, not starting with `.`.
pub fn check_version_name(version: &str) -> Result<()> {
    let ok = !version.is_empty()
        && !version.starts_with('.')
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::other(
            format!("invalid baseline version {version:?}"),
            Some("use letters, digits, `-`, `_` and `.`, e.g. v2-fixed".into()),
        ))
    }
}

/// The first trial of each selected case, in run order; an unknown `--case` is an error.
fn select_cases<'a>(run: &'a RunRecord, wanted: &[String]) -> Result<Vec<&'a CaseRun>> {
    for id in wanted {
        if !run.cases.iter().any(|c| &c.case_id == id) {
            return Err(Error::other(
                format!("run {} has no case {id}", run.id),
                Some("the cases of a run are listed in its report; pick one of them".into()),
            ));
        }
    }
    let selected: Vec<&CaseRun> = run
        .cases
        .iter()
        .filter(|c| c.trial == 1)
        .filter(|c| wanted.is_empty() || wanted.contains(&c.case_id))
        .collect();
    if selected.is_empty() {
        return Err(Error::other(format!("run {} has no cases", run.id), None));
    }
    if let Some(c) = selected.iter().find(|c| c.status == CaseStatus::Error) {
        return Err(Error::other(
            format!(
                "case {} of run {} did not run: {}",
                c.case_id,
                run.id,
                c.error.as_deref().unwrap_or("error")
            ),
            Some("re-run the case, or leave it out with --case".into()),
        ));
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_are_single_safe_path_components() {
        for ok in ["v1", "v2-fixed", "2026.11_a"] {
            assert!(check_version_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "../x", "a/b", ".hidden", "v 1"] {
            assert!(check_version_name(bad).is_err(), "{bad}");
        }
    }
}
