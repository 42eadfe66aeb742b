//! Server-sent events (the WHATWG `text/event-stream` format): an incremental
//! parser for recording and an encoder for replay.

use serde_json::Value;

use super::cassette::{SseEvent, canonical_json};

/// Fields of stream chunks that are random per run and carry no content.
///
/// OpenAI pads stream chunks with a random `obfuscation` string (a side-channel
/// mitigation); storing it would make every re-recording a noisy diff.
const VOLATILE_EVENT_FIELDS: &[&str] = &["obfuscation"];

/// True when the content type is `text/event-stream`.
pub fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("text/event-stream")
    })
}

/// Incremental `text/event-stream` parser: events may be split across chunks
/// anywhere, including inside a CRLF or a UTF-8 character.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// The previous chunk ended in CR, so a leading LF belongs to that line end.
    skip_lf: bool,
    /// Nothing has been read yet (a leading BOM is dropped).
    started: bool,
    /// The event being assembled.
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseParser {
    /// A parser with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk received `t_ms` after the response headers; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8], t_ms: u64) -> Vec<SseEvent> {
        let mut bytes = chunk;
        if !self.started && !bytes.is_empty() {
            self.line.extend_from_slice(bytes);
            if self.line.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.line) {
                // Could still be a BOM; wait for more bytes.
                return Vec::new();
            }
            self.started = true;
            let buffered = std::mem::take(&mut self.line);
            let rest = buffered.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buffered);
            return self.feed(rest, t_ms);
        }
        if bytes.is_empty() {
            return Vec::new();
        }
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        self.feed(bytes, t_ms)
    }

    fn feed(&mut self, mut bytes: &[u8], t_ms: u64) -> Vec<SseEvent> {
        let mut events = Vec::new();
        while let Some(pos) = bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
            let (head, tail) = bytes.split_at(pos);
            self.line.extend_from_slice(head);
            let is_cr = tail.first() == Some(&b'\r');
            bytes = tail.get(1..).unwrap_or(&[]);
            if is_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = bytes.get(1..).unwrap_or(&[]),
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.process_line(&line, t_ms) {
                events.push(event);
            }
        }
        self.line.extend_from_slice(bytes);
        events
    }

    /// Ends the stream. Like browsers and the provider SDKs, an event whose
    /// blank line never arrived is discarded, so replay shows clients exactly
    /// what they saw while recording (the proxy marks such streams truncated).
    pub fn finish(&mut self, t_ms: u64) -> Vec<SseEvent> {
        let _ = t_ms;
        *self = Self::default();
        Vec::new()
    }

    fn process_line(&mut self, line: &[u8], t_ms: u64) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch(t_ms);
        }
        let line = String::from_utf8_lossy(line);
        if line.starts_with(':') {
            return None; // a comment (keep-alive pings)
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // The spec ignores ids holding NUL.
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            // `retry` only tunes reconnection; unknown fields are ignored by the spec.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self, t_ms: u64) -> Option<SseEvent> {
        let event = self.event.take();
        let id = self.id.take();
        let data = std::mem::take(&mut self.data);
        // The spec dispatches nothing for a block without data lines.
        if !std::mem::replace(&mut self.has_data, false) {
            return None;
        }
        Some(SseEvent {
            t_ms,
            event,
            data: stored_data(data),
            id,
        })
    }
}

/// A JSON object or array is stored as itself (minus volatile fields), anything else as a string.
fn stored_data(data: String) -> Value {
    match serde_json::from_str::<Value>(&data) {
        Ok(Value::Object(mut map)) => {
            for field in VOLATILE_EVENT_FIELDS {
                map.remove(*field);
            }
            Value::Object(map)
        }
        Ok(value @ Value::Array(_)) => value,
        _ => Value::String(data),
    }
}

/// Frames one event for replay: `event: x\ndata: {...}\n\n`.
pub fn encode_event(event: &SseEvent) -> Vec<u8> {
    let mut out = String::new();
    if let Some(name) = &event.event {
        out.push_str("event: ");
        out.push_str(name);
        out.push('\n');
    }
    if let Some(id) = &event.id {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    let data = match &event.data {
        Value::String(s) => s.clone(),
        other => canonical_json(other),
    };
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const STREAM: &str = concat!(
        ": keep-alive\n",
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"obfuscation\":\"x1Yz\"}\n",
        "\n",
        "data: line one\r\n",
        "data: line two\r\n",
        "id: 7\r\n",
        "\r\n",
        "data: {\"b\":1,\r",
        "data: \"a\":2}\r",
        "\r",
        "event: ping\n",
        "\n",
        "data: [DONE]\n",
        "\n",
        "data: never finished\n",
    );

    fn parse_split(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut start = 0;
        for &cut in cuts {
            let cut = cut.clamp(start, bytes.len());
            events.extend(parser.push(&bytes[start..cut], 0));
            start = cut;
        }
        events.extend(parser.push(&bytes[start..], 0));
        events.extend(parser.finish(0));
        events
    }

    #[test]
    fn parses_the_spec_cases() {
        let events = parse_split(STREAM.as_bytes(), &[]);
        let summary: Vec<_> = events
            .iter()
            .map(|e| (e.event.clone(), e.data.clone(), e.id.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    Some("message_start".into()),
                    json!({"type":"message_start"}),
                    None
                ),
                (None, json!("line one\nline two"), Some("7".into())),
                (None, json!({"a":2,"b":1}), None),
                (None, json!("[DONE]"), None),
            ]
        );
    }

    #[test]
    fn events_carry_the_offset_of_the_chunk_that_completed_them() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"data: {\"a\"", 5).is_empty());
        let events = parser.push(b":1}\n\n", 12);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].t_ms, 12);
    }

    #[test]
    fn bom_is_dropped_even_when_split() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"\xEF", 0).is_empty());
        assert!(parser.push(b"\xBB", 0).is_empty());
        let events = parser.push(b"\xBFdata: x\n\n", 0);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, json!("x"));
        // A byte that merely starts like a BOM stays part of the line (an unknown field here).
        let mut parser = SseParser::new();
        assert!(parser.push(b"\xEF", 0).is_empty());
        assert!(parser.push(b"data: y\n\n", 0).is_empty());
    }

    #[test]
    fn content_type_detection() {
        assert!(is_event_stream(Some("text/event-stream")));
        assert!(is_event_stream(Some("Text/Event-Stream; charset=utf-8")));
        assert!(!is_event_stream(Some("application/json")));
        assert!(!is_event_stream(None));
    }

    #[test]
    fn encode_then_parse_gives_the_same_events() {
        let events = parse_split(STREAM.as_bytes(), &[]);
        let mut wire = Vec::new();
        for e in &events {
            wire.extend(encode_event(e));
        }
        assert_eq!(parse_split(&wire, &[]), events);
        assert_eq!(
            String::from_utf8(encode_event(&events[0])).unwrap(),
            "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
        );
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_events(mut cuts in proptest::collection::vec(0usize..STREAM.len(), 0..12)) {
            cuts.sort_unstable();
            prop_assert_eq!(parse_split(STREAM.as_bytes(), &cuts), parse_split(STREAM.as_bytes(), &[]));
        }

        #[test]
        fn any_chunking_of_generated_streams(
            lines in proptest::collection::vec("(data|event|id|:c|retry)?(: ?)?[a-zé{}\":,0-9 ]{0,12}", 0..20),
            seps in proptest::collection::vec(prop_oneof![Just("\n"), Just("\r\n"), Just("\r"), Just("\n\n"), Just("\r\n\r\n")], 20),
            mut cuts in proptest::collection::vec(0usize..400, 0..16),
        ) {
            let mut text = String::new();
            for (line, sep) in lines.iter().zip(seps.iter()) {
                text.push_str(line);
                text.push_str(sep);
            }
            cuts.sort_unstable();
            let bytes = text.as_bytes();
            // Cuts fall on any byte, including inside "é" and between CR and LF.
            prop_assert_eq!(parse_split(bytes, &cuts), parse_split(bytes, &[]));
        }
    }
}
