//! The run store: `.agentci/runs/<id>/run.json`, a `latest` pointer and retention.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::report::write_atomic;
use crate::run::record::{RUN_FORMAT, RunRecord};

/// The default store location, relative to the working directory.
pub const DEFAULT_STORE: &str = ".agentci/runs";

/// A directory of stored runs.
#[derive(Debug, Clone)]
pub struct RunStore {
    root: PathBuf,
}

impl RunStore {
    /// The store at `root` (created on first save).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        RunStore { root: root.into() }
    }

    /// Where a run's record lives.
    pub fn run_path(&self, id: &str) -> PathBuf {
        self.root.join(id).join("run.json")
    }

    /// Saves `run` atomically, points `latest` at it, and keeps only the newest `keep` runs.
    pub fn save(&self, run: &RunRecord, keep: usize) -> Result<PathBuf> {
        let path = self.run_path(&run.id);
        // Compact: a 1,000-case run is megabytes of traces, read by agentci, not people.
        let text = run_json(run)?;
        write_atomic(&path, &text)?;
        write_atomic(
            &self.root.join("latest"),
            format!("{}\n", run.id).as_bytes(),
        )?;
        self.prune(keep, &run.id)?;
        Ok(path)
    }

    /// Resolves `latest` or an id to a run id.
    pub fn resolve(&self, run: &str) -> Result<String> {
        if run != "latest" {
            return Ok(run.to_string());
        }
        let pointer = self.root.join("latest");
        let id = std::fs::read_to_string(&pointer).map_err(|e| {
            Error::other(
                format!("no stored run: cannot read {}: {e}", pointer.display()),
                Some(
                    "run `agentci replay --spec SPEC` or `agentci record --spec SPEC` first".into(),
                ),
            )
        })?;
        Ok(id.trim().to_string())
    }

    /// Loads a run by id or `latest`.
    pub fn load(&self, run: &str) -> Result<RunRecord> {
        let id = self.resolve(run)?;
        load_run_file(&self.run_path(&id))
    }

    /// Run ids, oldest first (ids sort by time).
    pub fn ids(&self) -> Result<Vec<String>> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.root, e)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("run.json").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    fn prune(&self, keep: usize, current: &str) -> Result<()> {
        let ids = self.ids()?;
        let excess = ids.len().saturating_sub(keep.max(1));
        for id in ids.iter().take(excess).filter(|id| id.as_str() != current) {
            let dir = self.root.join(id);
            std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        Ok(())
    }
}

/// `serde_json::to_vec(run)`, byte for byte, with the cases serialised on every
/// core: serialising a 1,000-case run's traces was a tenth of a
/// `--cassettes-only` run, all of it on one thread after the cases finished.
fn run_json(run: &RunRecord) -> Result<Vec<u8>> {
    let fail = |e: serde_json::Error| Error::other(format!("cannot serialize the run: {e}"), None);
    // The record without its cases; the fields before `cases` are scalars and
    // strings (a quote inside a string is escaped), so the first `"cases":[]` is the key.
    let skeleton = run.with_cases(Vec::new(), run.warnings.clone());
    let skeleton = serde_json::to_vec(&skeleton).map_err(fail)?;
    const KEY: &[u8] = b"\"cases\":[";
    let Some(at) = memchr::memmem::find(&skeleton, b"\"cases\":[]").map(|i| i + KEY.len()) else {
        // Cannot happen for a derived Serialize; stay correct if it ever does.
        return serde_json::to_vec(run).map_err(fail);
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(run.cases.len().div_ceil(CASES_PER_THREAD))
        .max(1);
    let chunk = run.cases.len().div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<u8>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = run
            .cases
            .chunks(chunk)
            .map(|cases| {
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for (i, case) in cases.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        serde_json::to_writer(&mut out, case).map_err(fail)?;
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::other(
                        "serialising the run panicked".to_string(),
                        None,
                    ))
                })
            })
            .collect()
    });
    let (head, tail) = skeleton.split_at(at);
    let mut parts_ok = Vec::with_capacity(parts.len());
    for part in parts {
        parts_ok.push(part?);
    }
    let size = skeleton.len() + parts_ok.iter().map(|p| p.len() + 1).sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(head);
    for (i, part) in parts_ok.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(part);
    }
    out.extend_from_slice(tail);
    Ok(out)
}

/// Below this many cases per thread, one thread serialises faster than it spawns another.
const CASES_PER_THREAD: usize = 64;

/// Reads a `run.json` (from the store or a path given by the user, e.g. to `merge`).
pub fn load_run_file(path: &Path) -> Result<RunRecord> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let run: RunRecord = serde_json::from_str(&text).map_err(|e| Error::Cassette {
        location: crate::error::Location {
            path: path.to_path_buf(),
            line: Some(e.line()),
            column: Some(e.column()),
        },
        message: format!("not a valid run record: {e}"),
        hint: Some("run records are written by agentci record/replay; re-run to regenerate".into()),
    })?;
    if run.format != RUN_FORMAT {
        return Err(Error::other(
            format!(
                "{}: run format {} is not supported (this build reads {RUN_FORMAT})",
                path.display(),
                run.format
            ),
            Some("re-run with this version of agentci".into()),
        ));
    }
    Ok(run)
}

/// A new run id: UTC time plus 4 random hex digits, so ids sort by time.
pub fn new_run_id() -> String {
    let now = chrono::Utc::now();
    let nanos = now.timestamp_subsec_nanos();
    let salt = (std::process::id() ^ nanos) & 0xffff;
    format!("{}-{salt:04x}", now.format("%Y%m%dT%H%M%S%.3fZ")).replace('.', "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::record::{CaseRun, CaseStatus, RunMode};
    use crate::trace::Trace;

    fn record(cases: usize, extras: bool) -> RunRecord {
        RunRecord {
            format: RUN_FORMAT,
            // Names that mention the key must not confuse the splice.
            id: "20261122T214501Z-3f2a".into(),
            tool_version: "0.1.0".into(),
            agent: r#"a "cases":[] agent"#.into(),
            spec_path: "\"cases\":[]".into(),
            spec_hash: "sha256:00".into(),
            mode: RunMode::CassettesOnly,
            started_at: "2026-11-22T21:45:01Z".into(),
            duration_ms: 12,
            shard: extras.then(|| "1/2".into()),
            baseline: extras.then(|| "v1".into()),
            cases: (0..cases)
                .map(|i| CaseRun {
                    case_id: format!("case-{i}"),
                    trial: 1,
                    query: format!("\"cases\":[] query {i}"),
                    tags: vec!["t".into()],
                    file: "specs/a.yaml".into(),
                    line: i,
                    cassette: format!("cassettes/a/case-{i}.jsonl"),
                    status: CaseStatus::Pass,
                    error: (i % 3 == 0).then(|| "boom".into()),
                    attempts: 1,
                    trace: (i % 2 == 0).then(|| Trace {
                        case_id: format!("case-{i}"),
                        answer: Some("ünïcode \u{1}".into()),
                        ..Trace::default()
                    }),
                    result: None,
                    warnings: Vec::new(),
                })
                .collect(),
            warnings: if extras { vec!["w".into()] } else { Vec::new() },
        }
    }

    #[test]
    fn run_json_is_serde_json_byte_for_byte() {
        for cases in [0, 1, 2, 63, 64, 65, 130, 1000] {
            for extras in [false, true] {
                let run = record(cases, extras);
                assert_eq!(
                    run_json(&run).unwrap(),
                    serde_json::to_vec(&run).unwrap(),
                    "{cases} cases, extras {extras}"
                );
            }
        }
    }

    #[test]
    fn saved_runs_load_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        let run = record(100, true);
        let path = store.save(&run, 5).unwrap();
        assert_eq!(load_run_file(&path).unwrap(), run);
        assert_eq!(store.load("latest").unwrap(), run);
    }
}
