//! The YAML spec: model, loading (includes, defaults merge, filters) and validation.

mod cache;
mod load;
mod model;
mod rules;
mod shape;
mod yaml;

pub use cache::CACHE_DIR;
pub use load::{Filter, load, load_cached, slug};
pub use model::*;

/// The JSON Schema of the spec format, generated from the model (what `agentci schema` prints).
pub fn json_schema() -> serde_json::Value {
    shape::schema_value()
}

use crate::error::Location;

/// One finding about a spec file, rendered as `file:line:col: message` and a `hint:` line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Diagnostic {
    /// Where in which file.
    pub location: Location,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

/// A query after loading: its resolved id, its place in the spec, and its
/// assertions with `defaults` already merged under it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Case {
    /// Explicit `id`, or a stable slug of the query text.
    pub id: String,
    /// The file the query is written in (an included file, or the spec itself).
    pub file: std::path::PathBuf,
    /// 1-based line of the query's entry in `file` (for GitHub annotations).
    pub line: usize,
    /// The query with defaults merged.
    pub query: Query,
}

/// A loaded, validated spec.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadedSpec {
    /// The spec file as named by the user.
    pub path: std::path::PathBuf,
    /// The model, as parsed (queries unmerged).
    pub spec: Spec,
    /// Every query, merged and with stable ids, in file order.
    pub cases: Vec<Case>,
    /// `sha256:<hex>` of the canonical JSON form of the spec (after includes).
    pub hash: String,
    /// Findings that do not stop the spec from loading (e.g. a judge temperature above 0).
    pub warnings: Vec<Diagnostic>,
}
