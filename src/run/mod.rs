//! The case runner: the agent process, a proxy per case, workers, the run store.

pub mod agent;
pub mod record;

pub use record::{CaseRun, CaseStatus, RunMode, RunRecord};
