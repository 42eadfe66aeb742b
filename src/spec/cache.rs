//! The parsed-spec cache: `record`, `replay` and `judge-only` keep the
//! loaded spec in `.agentci/cache/`, so an unchanged spec is not parsed and
//! checked again on every run. Parsing YAML was a fifth of a 1,000-case
//! `--cassettes-only` run, and pre-push hooks run the same spec again and again.
//!
//! One file per spec path, two lines: a header naming the agentci build and
//! every file the spec was read from with the SHA-256 of its bytes, then the
//! loaded spec as JSON. An entry is used only when the build is this one and
//! every file hashes the same now; anything else (a missing, damaged or stale
//! entry, an unreadable file) is a miss, and the spec is loaded from its text.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::LoadedSpec;
use super::load::ReadFile;

/// Where the run commands keep it, next to the run store.
pub const CACHE_DIR: &str = ".agentci/cache";

/// Bumped when the entry layout changes.
const FORMAT: u32 = 1;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Header {
    format: u32,
    /// The agentci build that wrote the entry (version, size and mtime of the binary).
    build: String,
    /// The spec path as the user named it (the loaded spec's paths follow it).
    spec: PathBuf,
    /// Every file read, the spec first, with the hex SHA-256 of its bytes.
    files: Vec<(PathBuf, String)>,
}

/// The loaded spec at `path`, when the cache holds it for exactly these files.
pub(crate) fn lookup(cache_dir: &Path, path: &Path) -> Option<LoadedSpec> {
    let text = std::fs::read_to_string(entry_path(cache_dir, path)).ok()?;
    let (header, body) = text.split_once('\n')?;
    let header: Header = serde_json::from_str(header).ok()?;
    if header.format != FORMAT
        || header.build != build()?
        || header.spec != path
        || header.files.first().map(|(p, _)| p.as_path()) != Some(path)
    {
        return None;
    }
    for (file, hash) in &header.files {
        let bytes = std::fs::read(file).ok()?;
        if hex::encode(Sha256::digest(&bytes)) != *hash {
            return None;
        }
    }
    serde_json::from_str(body).ok()
}

/// Saves `loaded`, read from `files`; a failure only costs the next run a parse.
pub(crate) fn store(cache_dir: &Path, path: &Path, files: &[ReadFile], loaded: &LoadedSpec) {
    let Some(build) = build() else {
        return;
    };
    let header = Header {
        format: FORMAT,
        build,
        spec: path.to_path_buf(),
        files: files
            .iter()
            .map(|(p, hash)| (p.clone(), hex::encode(hash)))
            .collect(),
    };
    let (Ok(mut text), Ok(body)) = (
        serde_json::to_string(&header),
        serde_json::to_string(loaded),
    ) else {
        return;
    };
    text.push('\n');
    text.push_str(&body);
    text.push('\n');
    let _ = crate::atomic::write_unsynced(
        &entry_path(cache_dir, path),
        text.as_bytes(),
        crate::atomic::Visibility::Public,
    );
}

/// One entry per spec path: the same spec under another name loads on its own.
fn entry_path(cache_dir: &Path, path: &Path) -> PathBuf {
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    cache_dir.join(format!("spec-{}.json", &hex::encode(digest)[..16]))
}

/// This build of agentci: a rebuilt binary may check specs differently even
/// under the same version number. `None` (no entry used or written) when the
/// binary cannot be found.
fn build() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(exe).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!(
        "{} {} {}",
        env!("CARGO_PKG_VERSION"),
        meta.len(),
        modified.as_nanos()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Filter;
    use crate::spec::load::load_unfiltered;

    fn specs() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut specs = Vec::new();
        for dir in ["specs", "tests/fixtures/specs/valid"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("spec folder") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|e| e == "yaml") {
                    specs.push(path);
                }
            }
        }
        specs
    }

    #[test]
    fn every_committed_spec_comes_back_from_the_cache_as_it_was_loaded() {
        let cache = tempfile::tempdir().unwrap();
        let mut loaded_count = 0;
        for spec in specs() {
            // Some fixtures are parts for others and do not load alone.
            let Ok((loaded, files)) = load_unfiltered(&spec) else {
                continue;
            };
            assert_eq!(lookup(cache.path(), &spec), None, "{}", spec.display());
            store(cache.path(), &spec, &files, &loaded);
            assert_eq!(
                lookup(cache.path(), &spec).as_ref(),
                Some(&loaded),
                "{}",
                spec.display()
            );
            loaded_count += 1;
        }
        assert!(loaded_count >= 6, "only {loaded_count} specs loaded");
    }

    #[test]
    fn a_changed_included_file_or_a_damaged_entry_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let spec = dir.path().join("spec.yaml");
        let part = dir.path().join("part.yaml");
        std::fs::write(
            &spec,
            "version: 1\nagent: a\nqueries:\n  - query: first\n  - $include: part.yaml\n",
        )
        .unwrap();
        std::fs::write(&part, "- query: second\n").unwrap();
        let filter = Filter::default();
        let ids = |s: &LoadedSpec| s.cases.iter().map(|c| c.id.clone()).collect::<Vec<_>>();

        let first = crate::spec::load_cached(&spec, &filter, &cache).unwrap();
        assert_eq!(ids(&first), ["first", "second"]);
        assert!(lookup(&cache, &spec).is_some(), "the load was cached");

        std::fs::write(&part, "- query: changed\n").unwrap();
        assert_eq!(lookup(&cache, &spec), None, "an included file changed");
        let second = crate::spec::load_cached(&spec, &filter, &cache).unwrap();
        assert_eq!(ids(&second), ["first", "changed"]);

        let entry = entry_path(&cache, &spec);
        let text = std::fs::read_to_string(&entry).unwrap();
        std::fs::write(&entry, &text[..text.len() / 2]).unwrap();
        assert_eq!(lookup(&cache, &spec), None, "a damaged entry");
        let third = crate::spec::load_cached(&spec, &filter, &cache).unwrap();
        assert_eq!(third, second);

        // A spec that does not load is never cached, and the error is the same.
        std::fs::write(&spec, "version: 1\nagent: a\nqueries: 3\n").unwrap();
        let cached = crate::spec::load_cached(&spec, &filter, &cache).unwrap_err();
        let direct = crate::spec::load(&spec, &filter).unwrap_err();
        assert_eq!(cached.to_string(), direct.to_string());
    }
}
