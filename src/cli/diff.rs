//! `agentci diff`: the three-tier diff of two baseline versions (or a version and a stored run).

use std::path::PathBuf;

use crate::baseline::render;
use crate::error::{ExitStatus, Result};
use crate::spec::Filter;

/// Output formats of `agentci diff`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DiffFormat {
    /// Boxed, coloured on a terminal.
    Console,
    /// The report as JSON.
    Json,
    /// Markdown tables (for PR comments).
    Markdown,
    /// GitHub workflow annotations.
    Github,
}

/// Arguments of `agentci diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The spec file.
    #[arg(long, short = 's', value_name = "SPEC")]
    spec: PathBuf,
    /// The version compared from.
    #[arg(long, value_name = "V1")]
    baseline: String,
    /// The version compared to, or a stored run: `run:latest`, `run:<id>`.
    #[arg(long, value_name = "V2")]
    compare: String,
    /// Only this case (repeatable).
    #[arg(long = "case", value_name = "ID")]
    cases: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "console")]
    format: DiffFormat,
}

/// Runs `agentci diff`.
pub fn run(args: DiffArgs) -> Result<ExitStatus> {
    let spec = crate::spec::load(&args.spec, &Filter::default())?;
    let report = crate::baseline::diff_report(&spec, &args.baseline, &args.compare, &args.cases)?;
    let text = match args.format {
        DiffFormat::Console => render::console(&report, crate::report::color_enabled()),
        DiffFormat::Json => render::json(&report),
        DiffFormat::Markdown => render::markdown(&report),
        DiffFormat::Github => render::github(&report),
    };
    print!("{text}");
    Ok(ExitStatus::Success)
}
