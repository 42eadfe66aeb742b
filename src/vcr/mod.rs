//! The VCR: a local HTTPS-intercepting proxy that records exchanges into
//! cassettes and replays them with no network.

pub mod body;
pub mod ca;
pub mod cassette;
pub mod matching;
pub mod proxy;
pub mod recorder;
pub mod redact;
pub mod replay;
pub mod routes;
pub mod sse;
pub mod upstream;

pub use cassette::{
    Body, Cassette, CassetteEnd, CassetteMeta, Exchange, RecordedRequest, RecordedResponse,
    SseEvent, Timing,
};
