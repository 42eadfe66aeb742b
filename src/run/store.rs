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
        let text = serde_json::to_string(run)
            .map_err(|e| Error::other(format!("cannot serialize the run: {e}"), None))?;
        write_atomic(&path, text.as_bytes())?;
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
