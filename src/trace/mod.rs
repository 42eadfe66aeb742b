//! The trace: what the agent did, derived from a cassette's exchanges by pure
//! functions, identically in record, replay and cassette-only evaluation.

mod anthropic;
mod derive;
mod gemini;
mod lean;
mod model;
mod openai_chat;
mod openai_responses;
mod pricing;
mod route;

pub use derive::{DeriveOptions, derive};
pub use lean::read_for_trace;
pub use model::*;
pub use pricing::PriceTable;
pub use route::{Route, classify};
