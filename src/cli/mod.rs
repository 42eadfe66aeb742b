//! Command-line definitions (clap) and one file per command. No business logic:
//! each command parses its arguments, calls the library and reports.

use clap::{Parser, Subcommand};

use crate::error::{ExitStatus, Result};

mod baselines;
mod ca;
mod cassettes;
mod compare;
mod diff;
mod export_metrics;
mod fake_provider;
mod init;
mod install_hooks;
mod judge_only;
mod merge;
mod progress;
mod proxy;
mod record;
mod replay;
mod run_args;
mod save;
mod schema;
mod trace;
mod validate;

/// Test AI agents in CI: record real API traffic once, replay it for free, and
/// check correctness, trajectory and cost.
#[derive(Debug, Parser)]
#[command(name = "agentci", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Every command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scaffold a project: a spec, cassettes/, .gitattributes, a GitHub workflow, the pre-push hook.
    Init(init::InitArgs),
    /// Install a pre-push hook that replays the specs (husky, lefthook, pre-commit or plain git).
    InstallHooks(install_hooks::InstallHooksArgs),
    /// Run each case's agent against the live APIs through the recording proxy.
    Record(record::RecordArgs),
    /// Replay the cassettes with no network and score every case ($0, deterministic).
    Replay(replay::ReplayArgs),
    /// Re-score a stored run with the current spec, without running the agent.
    JudgeOnly(judge_only::JudgeOnlyArgs),
    /// Join shard runs (run.json files) into one run and report.
    Merge(merge::MergeArgs),
    /// Print a stored run's metrics as Prometheus text or JSON.
    ExportMetrics(export_metrics::ExportMetricsArgs),
    /// Check spec files against the schema; errors at file:line:col.
    Validate(validate::ValidateArgs),
    /// Print the JSON Schema of the spec format.
    Schema(schema::SchemaArgs),
    /// Run the record/replay proxy alone, for agents started by hand.
    Proxy(proxy::ProxyArgs),
    /// The local interception CA: its path, or a merged CA bundle.
    Ca(ca::CaArgs),
    /// Serve a scripted fake LLM provider (OpenAI, Anthropic, Gemini formats) on loopback.
    FakeProvider(fake_provider::FakeProviderArgs),
    /// Work with cassette files (`lint`: scan them for secrets).
    Cassettes(cassettes::CassettesArgs),
    /// Derive and print the trace of a cassette (LLM calls, tool calls, tokens, cost).
    Trace(trace::TraceArgs),
    /// Save a stored run's traces as a golden baseline version.
    // `--version V` names the baseline here, so the propagated `--version` flag is off.
    #[command(disable_version_flag = true)]
    Save(save::SaveArgs),
    /// List the baseline versions of a spec's agent.
    Baselines(baselines::BaselinesArgs),
    /// The three-tier diff of two baseline versions, or of a version and a stored run.
    Diff(diff::DiffArgs),
    /// Compare two stored runs case by case: regressions, improvements, unchanged.
    Compare(compare::CompareArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitStatus> {
    match cli.command {
        Command::Init(args) => init::run(args),
        Command::InstallHooks(args) => install_hooks::run(args),
        Command::Record(args) => record::run(args),
        Command::Replay(args) => replay::run(args),
        Command::JudgeOnly(args) => judge_only::run(args),
        Command::Merge(args) => merge::run(args),
        Command::ExportMetrics(args) => export_metrics::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Ca(args) => ca::run(args),
        Command::FakeProvider(args) => fake_provider::run(args),
        Command::Cassettes(args) => cassettes::run(args),
        Command::Trace(args) => trace::run(args),
        Command::Save(args) => save::run(args),
        Command::Baselines(args) => baselines::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Compare(args) => compare::run(args),
    }
}
