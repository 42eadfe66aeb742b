//! Loading a spec file: read, parse, resolve `$include`s, check the shape and the
//! rules, merge `defaults` under each query, give each query a stable id, filter.
//! Every problem found on the way is collected, so one run reports all of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::shape::{Finding, Shape};
use super::yaml::{self, Kind, Node, Pos};
use super::{Case, Diagnostic, LoadedSpec, Query, Spec, rules};
use crate::error::{Error, Location, Result};

/// Which cases to keep. Empty lists keep everything; both given, a case must
/// pass both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Keep only these case ids (`--case ID`, repeatable). An unknown id is an error.
    pub cases: Vec<String>,
    /// Keep cases with at least one of these tags (`--tags a,b`).
    pub tags: Vec<String>,
}

impl Filter {
    /// Whether `case` passes the filter.
    pub fn keeps(&self, case: &Case) -> bool {
        (self.cases.is_empty() || self.cases.contains(&case.id))
            && (self.tags.is_empty() || case.query.tags.iter().any(|t| self.tags.contains(t)))
    }
}

/// Includes nest at most this deep (cycles are caught before that).
const MAX_INCLUDE_DEPTH: usize = 32;
/// Slugs longer than this are cut and made unique with a hash suffix.
const MAX_SLUG_LEN: usize = 60;

/// The stable case id for a query without an explicit `id`.
///
/// Lowercase ASCII letters and digits are kept; every other run of characters
/// becomes one `-`; leading and trailing `-` are dropped. When that loses
/// information (the query has non-ASCII letters or digits, the slug is longer
/// than 60 characters, or nothing is left) the slug is cut to 48 characters and
/// `-` plus the first 8 hex digits of the SHA-256 of the trimmed query is added,
/// so distinct queries keep distinct ids. `What's the weather in Tokyo?` →
/// `what-s-the-weather-in-tokyo`.
pub fn slug(query: &str) -> String {
    let mut out = String::with_capacity(query.len().min(MAX_SLUG_LEN + 9));
    let mut lossy = false;
    for c in query.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else {
            lossy |= c.is_alphanumeric();
            if !out.is_empty() && !out.ends_with('-') {
                out.push('-');
            }
        }
    }
    let trimmed = out.trim_end_matches('-');
    if !lossy && !trimmed.is_empty() && trimmed.len() <= MAX_SLUG_LEN {
        return trimmed.to_string();
    }
    let digest = hex::encode(Sha256::digest(query.trim().as_bytes()));
    let suffix = digest.get(..8).unwrap_or(&digest);
    // The slug is ASCII, so any byte index is a char boundary.
    let prefix = trimmed
        .get(..trimmed.len().min(48))
        .unwrap_or("")
        .trim_end_matches('-');
    if prefix.is_empty() {
        format!("q-{suffix}")
    } else {
        format!("{prefix}-{suffix}")
    }
}

/// Loads, validates and filters the spec at `path`. Every problem in the file
/// (and the files it includes) comes back at once as [`Error::Spec`]; an
/// unknown `--case` id is an [`Error::Other`] naming the known ids.
pub fn load(path: &Path, filter: &Filter) -> Result<LoadedSpec> {
    let (loaded, _) = load_unfiltered(path)?;
    apply_filter(loaded, path, filter)
}

/// [`load`] through the parsed-spec cache in `cache_dir` (see `super::cache`):
/// a spec whose files are byte for byte those of the last load is not parsed
/// and checked again. The cache is best effort: any problem with it is a miss.
pub fn load_cached(path: &Path, filter: &Filter, cache_dir: &Path) -> Result<LoadedSpec> {
    if let Some(loaded) = super::cache::lookup(cache_dir, path) {
        return apply_filter(loaded, path, filter);
    }
    let (loaded, files) = load_unfiltered(path)?;
    super::cache::store(cache_dir, path, &files, &loaded);
    apply_filter(loaded, path, filter)
}

/// A file a spec was read from, with the SHA-256 of the bytes that were parsed.
pub(crate) type ReadFile = (PathBuf, [u8; 32]);

/// The whole spec, and every file it was read from (the spec itself first).
pub(crate) fn load_unfiltered(path: &Path) -> Result<(LoadedSpec, Vec<ReadFile>)> {
    let mut loader = Loader::new(path);
    let loaded = loader.run(path);
    let Some(mut loaded) = loaded.filter(|_| loader.errors.is_empty()) else {
        return Err(Error::Spec(loader.finish_errors()));
    };
    loaded.warnings = loader.finish_warnings();
    Ok((loaded, loader.read))
}

fn apply_filter(mut loaded: LoadedSpec, path: &Path, filter: &Filter) -> Result<LoadedSpec> {
    let unknown: Vec<&String> = filter
        .cases
        .iter()
        .filter(|id| !loaded.cases.iter().any(|c| &c.id == *id))
        .collect();
    if let Some(first) = unknown.first() {
        let known: Vec<&str> = loaded.cases.iter().map(|c| c.id.as_str()).collect();
        let listed = if known.len() > 20 {
            format!("{}, … ({} in all)", known[..20].join(", "), known.len())
        } else {
            known.join(", ")
        };
        let suggestion = super::shape::suggest(first, known.iter().copied())
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default();
        return Err(Error::other(
            format!(
                "{}: no case with id `{first}`{}",
                path.display(),
                if unknown.len() > 1 {
                    format!(" (and {} more unknown)", unknown.len() - 1)
                } else {
                    String::new()
                }
            ),
            Some(format!("{suggestion}known ids: {listed}")),
        ));
    }
    loaded.cases.retain(|c| filter.keeps(c));
    Ok(loaded)
}

/// A query entry found while resolving includes.
struct RawQuery {
    file: PathBuf,
    path: String,
    node: Node,
}

struct Loader {
    shape: Shape,
    /// Files in the order they were first seen (orders the diagnostics).
    files: Vec<PathBuf>,
    errors: Vec<(PathBuf, Finding)>,
    warnings: Vec<(PathBuf, Finding)>,
    /// Every file read, with the SHA-256 of the bytes parsed.
    read: Vec<ReadFile>,
}

impl Loader {
    fn new(path: &Path) -> Loader {
        Loader {
            shape: Shape::for_spec(),
            files: vec![path.to_path_buf()],
            errors: Vec::new(),
            warnings: Vec::new(),
            read: Vec::new(),
        }
    }

    fn error(&mut self, file: &Path, pos: Pos, message: String, hint: Option<String>) {
        self.errors
            .push((file.to_path_buf(), Finding { pos, message, hint }));
    }

    fn run(&mut self, path: &Path) -> Option<LoadedSpec> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) => {
                self.errors.push((
                    path.to_path_buf(),
                    Finding {
                        pos: Pos::default(),
                        message: format!("cannot read the spec file: {err}"),
                        hint: Some("check the path; specs usually live in specs/".into()),
                    },
                ));
                return None;
            }
        };
        self.read
            .push((path.to_path_buf(), Sha256::digest(&text).into()));
        let mut root = self.parse(path, &text)?;
        if root.as_map().is_none() {
            self.error(
                path,
                root.pos,
                format!(
                    "a spec must be a mapping with `agent` and `queries`, found {}",
                    root.kind.describe()
                ),
                Some("start from specs/example.yaml".into()),
            );
            return None;
        }

        let mut findings = Vec::new();
        let mut root_json = self
            .shape
            .check_def("", &root, "", &["queries"], &mut findings);
        let mut warnings = Vec::new();
        rules::check_root(&root, &mut findings, &mut warnings);
        if let Some(defaults) = root.get("defaults") {
            rules::check_assertions(defaults, "defaults", &mut findings);
        }
        self.push_all(path, findings, warnings);

        let queries_key = root.key("queries").map(|k| k.pos);
        let mut raw = Vec::new();
        let errors_before = self.errors.len();
        if let Some(node) = take(&mut root, "queries") {
            let mut stack = vec![canonical(path)];
            self.collect(path, node, "queries", &mut stack, &mut raw);
        }
        // "No queries" only when nothing else already explains why.
        if raw.is_empty()
            && self.errors.len() == errors_before
            && let Some(pos) = queries_key
        {
            self.error(
                path,
                pos,
                "queries: the spec has no queries".into(),
                Some("add at least one entry: `queries: [{query: \"What's the weather in Tokyo?\"}]`".into()),
            );
        }

        let defaults = root_json.get("defaults").cloned().unwrap_or(Value::Null);
        let mut cases = Vec::with_capacity(raw.len());
        let mut queries_json = Vec::with_capacity(raw.len());
        let mut seen: HashMap<String, (PathBuf, usize)> = HashMap::with_capacity(raw.len());
        for entry in raw {
            let mut findings = Vec::new();
            let json = self
                .shape
                .check_def("Query", &entry.node, &entry.path, &[], &mut findings);
            rules::check_query(&entry.node, &entry.path, &mut findings);
            // The id comes from the text as written, so duplicates are found even in
            // queries with other problems.
            let id = match (entry.node.get("id"), entry.node.get("query")) {
                (
                    Some(Node {
                        kind: Kind::Str(id),
                        ..
                    }),
                    _,
                ) => id.clone(),
                (
                    _,
                    Some(Node {
                        kind: Kind::Str(text),
                        ..
                    }),
                ) => slug(text),
                _ => String::new(),
            };
            let line = entry.node.pos.line;
            if let Some((first_file, first_line)) = seen.get(&id).filter(|_| !id.is_empty()) {
                let pos = entry.node.get("id").map_or(entry.node.pos, |n| n.pos);
                let hint = format!(
                    "the first is at {}:{first_line}; give one of them a different `id`",
                    first_file.display()
                );
                findings.push(Finding {
                    pos,
                    message: format!("{}: duplicate case id `{id}`", entry.path),
                    hint: Some(hint),
                });
            } else {
                seen.insert(id.clone(), (entry.file.clone(), line));
            }
            if !findings.is_empty() {
                self.push_all(&entry.file, findings, Vec::new());
                continue;
            }
            let merged = merge(&defaults, &json);
            let query: Query = match serde_json::from_value(merged) {
                Ok(q) => q,
                Err(err) => {
                    // The shape check accepted it, so this is a gap in the checker; still no panic.
                    self.error(
                        &entry.file,
                        entry.node.pos,
                        format!("{}: {err}", entry.path),
                        None,
                    );
                    continue;
                }
            };
            if let Some(correctness) = &query.correctness {
                let merged_rubrics = [
                    ("safety_check", &correctness.safety_check),
                    ("hallucination_check", &correctness.hallucination_check),
                ];
                for (name, rubric) in merged_rubrics {
                    if rubric
                        .as_ref()
                        .is_some_and(|r| !rules::rubric_is_complete(r))
                    {
                        let own = entry.node.get("correctness").and_then(|c| c.get(name));
                        let path = format!("{}.correctness.{name}", entry.path);
                        let finding = rules::rubric_without_rule(
                            own.map_or(entry.node.pos, |n| n.pos),
                            &path,
                        );
                        self.push_all(&entry.file, vec![finding], Vec::new());
                    }
                }
            }
            queries_json.push(json);
            cases.push(Case {
                id,
                file: entry.file,
                line,
                query,
            });
        }
        if !self.errors.is_empty() {
            return None;
        }

        if let Some(object) = root_json.as_object_mut() {
            object.insert("queries".into(), Value::Array(queries_json));
        }
        let spec: Spec = match serde_json::from_value(root_json) {
            Ok(spec) => spec,
            Err(err) => {
                self.error(path, root.pos, format!("spec: {err}"), None);
                return None;
            }
        };
        let hash = spec_hash(&spec);
        Some(LoadedSpec {
            path: path.to_path_buf(),
            spec,
            cases,
            hash,
            warnings: Vec::new(),
        })
    }

    fn parse(&mut self, file: &Path, text: &str) -> Option<Node> {
        match yaml::parse(text) {
            Ok(node) => Some(node),
            Err(err) => {
                self.error(
                    file,
                    err.pos.unwrap_or_default(),
                    format!("invalid YAML: {}", err.message),
                    Some("check indentation, quotes and `key: value` colons near this line".into()),
                );
                None
            }
        }
    }

    fn push_all(&mut self, file: &Path, errors: Vec<Finding>, warnings: Vec<Finding>) {
        self.errors
            .extend(errors.into_iter().map(|f| (file.to_path_buf(), f)));
        self.warnings
            .extend(warnings.into_iter().map(|f| (file.to_path_buf(), f)));
    }

    /// Flattens a `queries` list, replacing each `$include` entry by the entries
    /// of the included file.
    fn collect(
        &mut self,
        file: &Path,
        node: Node,
        path: &str,
        stack: &mut Vec<PathBuf>,
        out: &mut Vec<RawQuery>,
    ) {
        let items = match node.kind {
            Kind::Seq(items) => items,
            // An included file holding nothing adds no queries; the spec's own list must exist.
            Kind::Null if stack.len() > 1 => Vec::new(),
            other => {
                let message = if stack.len() > 1 {
                    format!(
                        "an included file must be a list of queries, found {}",
                        other.describe()
                    )
                } else {
                    format!(
                        "{path}: expected a list of queries, found {}",
                        other.describe()
                    )
                };
                self.error(
                    file,
                    node.pos,
                    message,
                    Some("write `- query: ...` entries, one per case".into()),
                );
                return;
            }
        };
        for (i, item) in items.into_iter().enumerate() {
            let item_path = format!("{path}[{i}]");
            match item.key("$include").map(|k| k.pos) {
                Some(key_pos) => self.include(file, item, key_pos, &item_path, stack, out),
                None => out.push(RawQuery {
                    file: file.to_path_buf(),
                    path: item_path,
                    node: item,
                }),
            }
        }
    }

    fn include(
        &mut self,
        file: &Path,
        item: Node,
        key_pos: Pos,
        path: &str,
        stack: &mut Vec<PathBuf>,
        out: &mut Vec<RawQuery>,
    ) {
        let entries = item.as_map().map_or(0, <[_]>::len);
        let target = item.get("$include");
        let Some((target_pos, Kind::Str(name))) = target.map(|t| (t.pos, &t.kind)) else {
            self.error(
                file,
                target.map_or(key_pos, |t| t.pos),
                format!("{path}.$include: expected a file name"),
                Some("write `- $include: more-queries.yaml` (relative to this file)".into()),
            );
            return;
        };
        if entries > 1 {
            self.error(
                file,
                key_pos,
                format!("{path}: `$include` must be the only key of its entry"),
                Some("move the other keys into the included file's queries".into()),
            );
            return;
        }
        let included = file.parent().unwrap_or(Path::new("")).join(name);
        let text = match std::fs::read_to_string(&included) {
            Ok(text) => text,
            Err(err) => {
                self.error(
                    file,
                    target_pos,
                    format!("cannot read included file `{}`: {err}", included.display()),
                    Some(format!(
                        "`$include` paths are relative to {}",
                        file.parent()
                            .filter(|p| !p.as_os_str().is_empty())
                            .map_or_else(
                                || "the including file's folder".to_string(),
                                |p| p.display().to_string()
                            )
                    )),
                );
                return;
            }
        };
        let key = canonical(&included);
        if let Some(start) = stack.iter().position(|f| *f == key) {
            let chain: Vec<String> = stack[start..]
                .iter()
                .chain(std::iter::once(&key))
                .map(|p| short(p))
                .collect();
            self.error(
                file,
                target_pos,
                format!("include cycle: {}", chain.join(" → ")),
                Some("a file cannot include itself, directly or through others".into()),
            );
            return;
        }
        if stack.len() >= MAX_INCLUDE_DEPTH {
            self.error(
                file,
                target_pos,
                format!("includes nest deeper than {MAX_INCLUDE_DEPTH} files"),
                None,
            );
            return;
        }
        if !self.files.contains(&included) {
            self.files.push(included.clone());
        }
        self.read
            .push((included.clone(), Sha256::digest(&text).into()));
        let Some(node) = self.parse(&included, &text) else {
            return;
        };
        stack.push(key);
        self.collect(&included, node, "queries", stack, out);
        stack.pop();
    }

    fn sorted(&self, list: &[(PathBuf, Finding)]) -> Vec<Diagnostic> {
        let mut list: Vec<&(PathBuf, Finding)> = list.iter().collect();
        let order = |p: &PathBuf| self.files.iter().position(|f| f == p).unwrap_or(usize::MAX);
        list.sort_by_key(|(file, f)| (order(file), f.pos.line, f.pos.column));
        list.into_iter()
            .map(|(file, f)| Diagnostic {
                location: Location {
                    path: file.clone(),
                    line: (f.pos.line > 0).then_some(f.pos.line),
                    column: (f.pos.column > 0).then_some(f.pos.column),
                },
                message: f.message.clone(),
                hint: f.hint.clone(),
            })
            .collect()
    }

    fn finish_errors(&self) -> Vec<Diagnostic> {
        self.sorted(&self.errors)
    }

    fn finish_warnings(&self) -> Vec<Diagnostic> {
        self.sorted(&self.warnings)
    }
}

/// Removes the value under `key` from a mapping node and returns it.
fn take(node: &mut Node, key: &str) -> Option<Node> {
    let Kind::Map(entries) = &mut node.kind else {
        return None;
    };
    let index = entries.iter().position(|(k, _)| k.name == key)?;
    Some(entries.remove(index).1)
}

/// The identity of a file for cycle detection (the path itself when it cannot be resolved).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

fn short(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// `defaults` deep-merged under a query: mappings merge key by key (the query
/// wins, recursively); anything else the query sets, lists and `null` included,
/// replaces the default.
pub(crate) fn merge(defaults: &Value, query: &Value) -> Value {
    match (defaults, query) {
        (Value::Object(base), Value::Object(over)) => {
            let mut merged = base.clone();
            for (key, value) in over {
                let combined = match merged.get(key) {
                    Some(base_value) => merge(base_value, value),
                    None => value.clone(),
                };
                merged.insert(key.clone(), combined);
            }
            Value::Object(merged)
        }
        (_, over) => over.clone(),
    }
}

/// `sha256:<hex>` of the spec's canonical JSON (keys sorted, no whitespace).
pub(crate) fn spec_hash(spec: &Spec) -> String {
    let value = serde_json::to_value(spec).unwrap_or(Value::Null);
    let mut text = String::new();
    canonical_json(&value, &mut text);
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    canonical_json(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slugs_are_stable_and_readable() {
        assert_eq!(
            slug("What's the weather in Tokyo?"),
            "what-s-the-weather-in-tokyo"
        );
        assert_eq!(slug("  How do I install it?  "), "how-do-i-install-it");
        assert_eq!(slug("pip install -U agentci"), "pip-install-u-agentci");
        let cafe = slug("Café au lait?");
        assert!(cafe.starts_with("caf-au-lait-"), "{cafe}");
        assert_ne!(cafe, slug("Cafè au lait?"));
        assert!(slug("東京の天気").starts_with("q-"));
        let long = slug(&"word ".repeat(40));
        assert!(long.len() <= 48 + 9, "{long}");
        assert_ne!(long, slug(&"word ".repeat(41)));
    }

    #[test]
    fn merge_is_deep_and_lists_replace() {
        let defaults = json!({"correctness": {"not_in_answer": ["a"], "hallucination_check": {"rule": "r", "threshold": 0.8}}, "cost": {"max_llm_calls": 3}});
        let query = json!({"correctness": {"not_in_answer": ["b"], "hallucination_check": {"threshold": 0.9}}, "cost": null});
        assert_eq!(
            merge(&defaults, &query),
            json!({"correctness": {"not_in_answer": ["b"], "hallucination_check": {"rule": "r", "threshold": 0.9}}, "cost": null})
        );
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let mut out = String::new();
        canonical_json(
            &json!({"b": 1, "a": [true, {"d": null, "c": "x"}]}),
            &mut out,
        );
        assert_eq!(out, r#"{"a":[true,{"c":"x","d":null}],"b":1}"#);
    }
}
