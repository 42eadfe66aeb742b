//! `agentci validate SPEC...`

use std::path::PathBuf;

use crate::error::{ExitStatus, Result};

/// Arguments of `agentci validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Spec files to check.
    #[arg(required = true)]
    pub specs: Vec<PathBuf>,
}

/// Runs `agentci validate`.
pub fn run(_args: ValidateArgs) -> Result<ExitStatus> {
    Err(crate::Error::other("validate is being built", None))
}
