//! Server-sent events: an incremental parser for recording and an encoder for replay.

use super::cassette::SseEvent;

/// True when the content type is `text/event-stream`.
pub fn is_event_stream(content_type: Option<&str>) -> bool {
    let _ = content_type;
    todo!()
}

/// Incremental `text/event-stream` parser: events may be split across chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
}

impl SseParser {
    /// A parser with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk received `t_ms` after the response headers; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8], t_ms: u64) -> Vec<SseEvent> {
        let _ = (chunk, t_ms, &self.buf);
        todo!()
    }

    /// Ends the stream; returns an event left unterminated, if any.
    pub fn finish(&mut self, t_ms: u64) -> Vec<SseEvent> {
        let _ = t_ms;
        todo!()
    }
}

/// Frames one event for replay: `event: x\ndata: {...}\n\n`.
pub fn encode_event(event: &SseEvent) -> Vec<u8> {
    let _ = event;
    todo!()
}
