//! Command-line definitions (clap) and one file per command. No business logic:
//! each command parses its arguments, calls the library and reports.

use clap::{Parser, Subcommand};

use crate::error::{ExitStatus, Result};

mod ca;
mod cassettes;
mod fake_provider;
mod proxy;
mod schema;
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
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitStatus> {
    match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Ca(args) => ca::run(args),
        Command::FakeProvider(args) => fake_provider::run(args),
        Command::Cassettes(args) => cassettes::run(args),
    }
}
