//! Bodies on disk: content-encoding removal, the `Body` representation, and
//! dotted-path edits of JSON bodies (shared by redaction and matching).

use std::io::Read;

use base64::Engine as _;
use serde_json::Value;

use super::cassette::{Body, canonical_json};

/// Removes `Content-Encoding` (gzip, br, zstd, deflate, identity; chained as `"gzip, br"`).
///
/// Codings are listed in the order they were applied, so they are undone right to left.
pub fn decode_content_encoding(encoding: Option<&str>, bytes: &[u8]) -> Result<Vec<u8>, String> {
    decode_limited(encoding, bytes, MAX_DECODED_BYTES)
}

fn decode_limited(encoding: Option<&str>, bytes: &[u8], max: u64) -> Result<Vec<u8>, String> {
    let codings: Vec<String> = encoding
        .unwrap_or("")
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    let mut data = bytes.to_vec();
    for coding in codings.iter().rev() {
        data = decode_one(coding, &data, max)?;
    }
    Ok(data)
}

/// Decoded bodies larger than this are refused: a few kilobytes of gzip can
/// expand to gigabytes, and no LLM API response comes near it.
pub const MAX_DECODED_BYTES: u64 = 256 * 1024 * 1024;

fn decode_one(coding: &str, bytes: &[u8], max: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let limit = max + 1;
    let mut read_all = |reader: &mut dyn Read| reader.take(limit).read_to_end(&mut out);
    let result = match coding {
        "gzip" | "x-gzip" => read_all(&mut flate2::read::MultiGzDecoder::new(bytes)),
        // RFC 9110 says zlib-wrapped, but some servers send raw deflate; accept both.
        "deflate" => match read_all(&mut flate2::read::ZlibDecoder::new(bytes)) {
            Ok(n) => Ok(n),
            Err(_) => {
                out.clear();
                flate2::read::DeflateDecoder::new(bytes)
                    .take(limit)
                    .read_to_end(&mut out)
            }
        },
        "br" => read_all(&mut brotli::Decompressor::new(bytes, 4096)),
        "zstd" => match zstd::stream::read::Decoder::new(bytes) {
            Ok(mut d) => read_all(&mut d),
            Err(e) => Err(e),
        },
        other => return Err(format!("unsupported content-encoding `{other}`")),
    };
    result.map_err(|e| format!("cannot decode {coding} body: {e}"))?;
    if out.len() as u64 > max {
        return Err(format!("decoded {coding} body exceeds {max} bytes"));
    }
    Ok(out)
}

/// True when a content type says the body is JSON (`application/json`, `…+json`).
fn is_json_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json") || essence.ends_with("/json")
}

/// Stores bytes as a [`Body`]: `None` when empty, JSON when it parses, text when UTF-8, else base64.
///
/// Without a content type any JSON document is stored as JSON; with a non-JSON
/// content type only objects and arrays are, so `text/plain` "42" stays text.
pub fn body_from_bytes(content_type: Option<&str>, bytes: &[u8]) -> Option<Body> {
    if bytes.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        let structured = value.is_object() || value.is_array();
        if structured || content_type.is_none_or(is_json_type) {
            return Some(Body::Json(value));
        }
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(Body::Text(text.to_string())),
        Err(_) => Some(Body::Base64(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        )),
    }
}

/// The bytes replay sends for a stored body (JSON minified with sorted keys).
///
/// `Cassette::parse` rejects base64 that does not decode, so the empty fallback
/// only applies to a `Body` built by hand.
pub fn body_to_bytes(body: &Body) -> Vec<u8> {
    match body {
        Body::Json(value) => canonical_json(value).into_bytes(),
        Body::Text(text) => text.as_bytes().to_vec(),
        Body::Base64(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_default(),
    }
}

/// Applies `edit` to the object holding the last segment of a dotted path
/// (`metadata.user_id`), with the last segment as the key.
///
/// Arrays on the way are walked element by element unless the segment is a
/// numeric index, so `messages.name` reaches the `name` of every message.
pub fn edit_field(
    value: &mut Value,
    path: &str,
    edit: &mut dyn FnMut(&mut serde_json::Map<String, Value>, &str),
) {
    let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    edit_segments(value, &segments, edit);
}

fn edit_segments(
    value: &mut Value,
    segments: &[&str],
    edit: &mut dyn FnMut(&mut serde_json::Map<String, Value>, &str),
) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    match value {
        Value::Object(map) => {
            if rest.is_empty() {
                edit(map, first);
            } else if let Some(child) = map.get_mut(*first) {
                edit_segments(child, rest, edit);
            }
        }
        Value::Array(items) => {
            if let Ok(index) = first.parse::<usize>() {
                if let Some(item) = items.get_mut(index) {
                    edit_segments(item, rest, edit);
                }
            } else {
                for item in items {
                    edit_segments(item, segments, edit);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use serde_json::json;

    use super::*;

    const TEXT: &[u8] = br#"{"b":1,"a":[true,null]}"#;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn brotli(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(data).unwrap();
        }
        out
    }

    #[test]
    fn decodes_each_coding() {
        assert_eq!(
            decode_content_encoding(Some("gzip"), &gzip(TEXT)).unwrap(),
            TEXT
        );
        assert_eq!(
            decode_content_encoding(Some("br"), &brotli(TEXT)).unwrap(),
            TEXT
        );
        let z = zstd::stream::encode_all(TEXT, 3).unwrap();
        assert_eq!(decode_content_encoding(Some("zstd"), &z).unwrap(), TEXT);
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zl.write_all(TEXT).unwrap();
        assert_eq!(
            decode_content_encoding(Some("deflate"), &zl.finish().unwrap()).unwrap(),
            TEXT
        );
        let mut raw =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        raw.write_all(TEXT).unwrap();
        assert_eq!(
            decode_content_encoding(Some("deflate"), &raw.finish().unwrap()).unwrap(),
            TEXT
        );
        assert_eq!(decode_content_encoding(None, TEXT).unwrap(), TEXT);
        assert_eq!(
            decode_content_encoding(Some("identity"), TEXT).unwrap(),
            TEXT
        );
    }

    #[test]
    fn decodes_chained_codings_right_to_left() {
        let both = brotli(&gzip(TEXT));
        assert_eq!(
            decode_content_encoding(Some("gzip, BR"), &both).unwrap(),
            TEXT
        );
    }

    #[test]
    fn bad_or_unknown_coding_is_an_error_not_a_panic() {
        let err = decode_content_encoding(Some("gzip"), b"not gzip").unwrap_err();
        assert!(err.contains("cannot decode gzip"), "{err}");
        let err = decode_content_encoding(Some("compress"), TEXT).unwrap_err();
        assert!(
            err.contains("unsupported content-encoding `compress`"),
            "{err}"
        );
    }

    #[test]
    fn decompression_bombs_are_refused() {
        let bomb = zstd::stream::encode_all(&[0u8; 4097][..], 1).unwrap();
        assert_eq!(
            decode_limited(Some("zstd"), &bomb, 4096).unwrap_err(),
            "decoded zstd body exceeds 4096 bytes"
        );
        assert_eq!(
            decode_limited(Some("gzip"), &gzip(&[0u8; 4096]), 4096)
                .unwrap()
                .len(),
            4096
        );
    }

    #[test]
    fn body_kinds() {
        assert_eq!(body_from_bytes(Some("application/json"), b""), None);
        assert_eq!(
            body_from_bytes(Some("application/json"), TEXT),
            Some(Body::Json(json!({"a":[true,null],"b":1})))
        );
        assert_eq!(body_from_bytes(None, b"42"), Some(Body::Json(json!(42))));
        assert_eq!(
            body_from_bytes(Some("text/plain"), b"42"),
            Some(Body::Text("42".into()))
        );
        assert_eq!(
            body_from_bytes(Some("text/plain"), b"hello"),
            Some(Body::Text("hello".into()))
        );
        assert_eq!(
            body_from_bytes(Some("application/octet-stream"), &[0xff, 0x00]),
            Some(Body::Base64("/wA=".into()))
        );
    }

    #[test]
    fn replay_bytes_are_minified_with_sorted_keys() {
        let body = body_from_bytes(None, b"{ \"z\": 1, \"a\": {\"y\": 2, \"b\": 3} }").unwrap();
        assert_eq!(body_to_bytes(&body), br#"{"a":{"b":3,"y":2},"z":1}"#);
        assert_eq!(
            body_to_bytes(&Body::Base64("/wA=".into())),
            vec![0xff, 0x00]
        );
        assert_eq!(body_to_bytes(&Body::Text("hi".into())), b"hi");
    }

    #[test]
    fn edit_field_walks_objects_and_arrays() {
        let mut v =
            json!({"metadata":{"user_id":"u1","keep":1},"messages":[{"name":"a"},{"name":"b"}]});
        edit_field(&mut v, "metadata.user_id", &mut |m, k| {
            m.remove(k);
        });
        edit_field(&mut v, "messages.name", &mut |m, k| {
            if let Some(x) = m.get_mut(k) {
                *x = json!("REDACTED");
            }
        });
        edit_field(&mut v, "messages.0.missing.deeper", &mut |_, _| {
            panic!("not reached")
        });
        assert_eq!(
            v,
            json!({"metadata":{"keep":1},"messages":[{"name":"REDACTED"},{"name":"REDACTED"}]})
        );
    }
}
