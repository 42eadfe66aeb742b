//! agentci: test AI agents in CI like ordinary code.
//!
//! The library holds everything; `src/main.rs` only parses arguments and maps
//! errors to exit codes. Data flows spec → run (proxy + agent) → cassette →
//! trace → engine → reports, one module per arrow (see `docs/architecture.md`).

pub mod atomic;
pub mod baseline;
pub mod cli;
pub mod engine;
pub mod error;
pub mod fake;
pub mod project;
pub mod report;
pub mod run;
pub mod spec;
pub mod tls;
pub mod trace;
pub mod vcr;

pub use error::{Error, ExitStatus, Result};

/// The tool version written into cassettes and run records.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
