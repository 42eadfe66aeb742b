//! `agentci schema`

use crate::error::{ExitStatus, Result};

/// Arguments of `agentci schema`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {}

/// Prints the spec's JSON Schema (committed at `docs/agentci_spec.schema.json`).
pub fn run(_args: SchemaArgs) -> Result<ExitStatus> {
    let text = serde_json::to_string_pretty(&crate::spec::json_schema())
        .map_err(|e| crate::Error::other(e.to_string(), None))?;
    println!("{text}");
    Ok(ExitStatus::Success)
}
