//! The trace: what the agent did, derived from a cassette's exchanges by pure
//! functions, identically in record, replay and cassette-only evaluation.

mod model;

pub use model::*;
