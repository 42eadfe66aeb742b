//! The VCR: a local HTTPS-intercepting proxy that records exchanges into
//! cassettes and replays them with no network.

pub mod body;
pub mod cassette;
pub mod matching;
pub mod redact;
pub mod sse;

pub use cassette::{
    Body, Cassette, CassetteEnd, CassetteMeta, Exchange, RecordedRequest, RecordedResponse,
    SseEvent, Timing,
};
