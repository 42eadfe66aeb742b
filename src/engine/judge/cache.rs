//! The verdict cache: `cassettes/<agent>/<case>.judge.jsonl`, committed next to
//! the cassettes so replaying an unchanged case needs no key and costs nothing.
//! One JSON object per line, keys sorted; new entries are appended and the file
//! is rewritten atomically (temp file in the same directory, then rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::judge::prompt::sha256;
use crate::engine::result::Verdict;
use crate::error::{Error, Location, Result};

/// What a cached verdict is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    /// The judge model.
    pub model: String,
    /// Hash of the resolved rubric, prompt version, query and temperature.
    pub rubric_hash: String,
    /// Hash of the answer judged.
    pub answer_hash: String,
    /// Hash of the tool context shown (of the empty string when none).
    pub context_hash: String,
    /// Position in the judge model list.
    pub sample: usize,
}

impl CacheKey {
    /// One string over every part, used to look entries up.
    pub fn id(&self) -> String {
        sha256(&format!(
            "{}\n{}\n{}\n{}\n{}",
            self.model, self.rubric_hash, self.answer_hash, self.context_hash, self.sample
        ))
    }
}

/// One cached verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// What it is keyed by.
    #[serde(flatten)]
    pub key: CacheKey,
    /// The check it was made for (informational: the key decides reuse).
    pub check: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Input tokens the original call used.
    pub input_tokens: u64,
    /// Output tokens the original call used.
    pub output_tokens: u64,
}

/// The cache file of one case, loaded into memory.
#[derive(Debug)]
pub struct CaseCache {
    path: PathBuf,
    entries: Vec<CacheEntry>,
    index: BTreeMap<String, usize>,
}

impl CaseCache {
    /// The cache file of `case_id` under `dir` (`cassettes/<agent>`); an id that
    /// would escape `dir` is refused rather than written elsewhere.
    pub fn path_for(dir: &Path, case_id: &str) -> Result<PathBuf> {
        let escapes =
            case_id.is_empty() || case_id.contains(['/', '\\']) || case_id.starts_with('.');
        if escapes {
            return Err(Error::other(
                format!("case id {case_id:?} cannot name a verdict cache file"),
                Some("give the query an `id` made of letters, digits, `-` and `_`".into()),
            ));
        }
        Ok(dir.join(format!("{case_id}.judge.jsonl")))
    }

    /// Loads the file; a missing file is an empty cache.
    pub fn load(path: PathBuf) -> Result<CaseCache> {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let mut cache = CaseCache {
            path,
            entries: Vec::new(),
            index: BTreeMap::new(),
        };
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let entry: CacheEntry = serde_json::from_str(line).map_err(|e| Error::Cassette {
                location: Location {
                    path: cache.path.clone(),
                    line: Some(i + 1),
                    column: Some(e.column()),
                },
                message: format!("not a judge verdict entry: {e}"),
                hint: Some("delete the line (or the file) to judge the case again".into()),
            })?;
            cache.insert(entry);
        }
        Ok(cache)
    }

    fn insert(&mut self, entry: CacheEntry) {
        let id = entry.key.id();
        match self.index.get(&id) {
            Some(&i) => self.entries[i] = entry,
            None => {
                self.index.insert(id, self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// The cached verdict for `key`, if any.
    pub fn get(&self, key: &CacheKey) -> Option<&CacheEntry> {
        self.index.get(&key.id()).and_then(|&i| self.entries.get(i))
    }

    /// Adds an entry and rewrites the file atomically.
    pub fn append(&mut self, entry: CacheEntry) -> Result<()> {
        self.insert(entry);
        self.write()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn write(&self) -> Result<()> {
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut text = String::new();
        for entry in &self.entries {
            let value = serde_json::to_value(entry).map_err(|e| {
                Error::other(format!("cannot serialize a judge verdict: {e}"), None)
            })?;
            text.push_str(&crate::vcr::cassette::canonical_json(&value));
            text.push('\n');
        }
        crate::atomic::write(
            &self.path,
            text.as_bytes(),
            crate::atomic::Visibility::Public,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::result::VerdictLabel;

    fn entry(sample: usize, score: u8) -> CacheEntry {
        CacheEntry {
            key: CacheKey {
                model: "gpt-4o-mini".into(),
                rubric_hash: "sha256:r".into(),
                answer_hash: "sha256:a".into(),
                context_hash: "sha256:c".into(),
                sample,
            },
            check: "llm_judge[0]".into(),
            verdict: Verdict {
                rationale: "ok".into(),
                score,
                label: VerdictLabel::Pass,
            },
            input_tokens: 10,
            output_tokens: 5,
        }
    }

    #[test]
    fn round_trips_with_sorted_keys_and_replaces_same_key() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = CaseCache::path_for(&dir.path().join("agent"), "case-1")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(CaseCache::path_for(dir.path(), "../x").is_err());
        assert!(CaseCache::path_for(dir.path(), "a/b").is_err());
        let mut cache = CaseCache::load(path.clone()).unwrap_or_else(|e| panic!("{e}"));
        assert!(cache.is_empty());
        cache.append(entry(0, 4)).unwrap_or_else(|e| panic!("{e}"));
        cache.append(entry(1, 5)).unwrap_or_else(|e| panic!("{e}"));
        cache.append(entry(1, 3)).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.starts_with(r#"{"answer_hash":"sha256:a","check":"llm_judge[0]","context_hash""#)
        );
        let loaded = CaseCache::load(path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            loaded.get(&entry(1, 0).key).map(|e| e.verdict.score),
            Some(3)
        );
        let mut other = entry(0, 0).key;
        other.answer_hash = "sha256:b".into();
        assert!(loaded.get(&other).is_none());
    }

    #[test]
    fn corrupt_line_is_a_located_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("c.judge.jsonl");
        std::fs::write(&path, "\n{oops\n").unwrap_or_else(|e| panic!("{e}"));
        let err = CaseCache::load(path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("c.judge.jsonl:2:"), "{err}");
    }
}
