//! Bodies on disk: content-encoding removal and the `Body` representation.

use super::cassette::Body;

/// Removes `Content-Encoding` (gzip, br, zstd, deflate, identity; chained as `"gzip, br"`).
pub fn decode_content_encoding(encoding: Option<&str>, bytes: &[u8]) -> Result<Vec<u8>, String> {
    let _ = (encoding, bytes);
    todo!()
}

/// Stores bytes as a [`Body`]: `None` when empty, JSON when it parses, text when UTF-8, else base64.
pub fn body_from_bytes(content_type: Option<&str>, bytes: &[u8]) -> Option<Body> {
    let _ = (content_type, bytes);
    todo!()
}

/// The bytes replay sends for a stored body (JSON minified with sorted keys).
pub fn body_to_bytes(body: &Body) -> Vec<u8> {
    let _ = body;
    todo!()
}
