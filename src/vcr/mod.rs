//! The VCR: a local HTTPS-intercepting proxy that records exchanges into
//! cassettes and replays them with no network.

pub mod cassette;

pub use cassette::{
    Body, Cassette, CassetteEnd, CassetteMeta, Exchange, RecordedRequest, RecordedResponse,
    SseEvent, Timing,
};
