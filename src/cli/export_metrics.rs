//! `agentci export-metrics`: a stored run as Prometheus text or JSON.

use std::path::PathBuf;

use crate::error::{ExitStatus, Result};
use crate::report::{self, Format, RenderOptions};
use crate::run::RunStore;

/// Output formats of `export-metrics`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum MetricsFormat {
    /// Prometheus text exposition.
    Prometheus,
    /// The JSON report.
    Json,
}

/// Arguments of `agentci export-metrics`.
#[derive(Debug, clap::Args)]
pub struct ExportMetricsArgs {
    /// The run: an id, or `latest`.
    #[arg(long, default_value = "latest")]
    run: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "prometheus")]
    format: MetricsFormat,
    /// Write to this file (atomically) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs `agentci export-metrics`.
pub fn run(args: ExportMetricsArgs) -> Result<ExitStatus> {
    let run = RunStore::new(crate::run::store::DEFAULT_STORE).load(&args.run)?;
    let format = match args.format {
        MetricsFormat::Prometheus => Format::Prometheus,
        MetricsFormat::Json => Format::Json,
    };
    let target = report::FormatTarget {
        format,
        path: args.out,
    };
    report::write_all(&[target], &run, &RenderOptions::default())?;
    Ok(ExitStatus::Success)
}
