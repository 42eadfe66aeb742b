//! The case runner: the agent process, a proxy per case, workers, the run store.

pub mod agent;
pub mod record;
pub mod runner;
pub mod shard;
pub mod store;
pub mod trials;

pub use record::{CaseRun, CaseStatus, RunMode, RunRecord};
pub use runner::{RunOptions, execute, exit_status};
pub use store::RunStore;
