//! The match key of a request and the replay index over a cassette.
//!
//! Key = sha256 over the canonical request: method, scheme+host+path, the sorted
//! query without secret parameters, and the canonical body (sorted keys, the
//! volatile fields below removed). Headers never enter it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::body::edit_field;
use super::cassette::{Body, Cassette, Exchange, sort_keys};
use super::redact::is_secret_query_param;

/// Request body fields left out of the key: they identify the caller or a cache
/// bucket, vary between runs of the same agent, and do not change what is asked.
pub const VOLATILE_BODY_FIELDS: &[&str] = &[
    // OpenAI: end-user id, its successor, and the prompt-cache routing hint.
    "user",
    "safety_identifier",
    "prompt_cache_key",
    // Anthropic: per-user/session id (Claude Code puts a session id here).
    "metadata.user_id",
];

/// `scheme://host[:port]/path` of a URL, lower-cased scheme and host; the raw
/// string before `?` when it does not parse.
fn endpoint_and_query(url: &str) -> (String, Option<String>) {
    let without_fragment = url.split('#').next().unwrap_or(url);
    match url::Url::parse(without_fragment) {
        Ok(parsed) => {
            let host = parsed.host_str().unwrap_or("");
            let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
            (
                format!("{}://{host}{port}{}", parsed.scheme(), parsed.path()),
                parsed.query().map(str::to_string),
            )
        }
        Err(_) => match without_fragment.split_once('?') {
            Some((base, query)) => (base.to_string(), Some(query.to_string())),
            None => (without_fragment.to_string(), None),
        },
    }
}

/// The query with secret parameters removed and pairs sorted, form-encoded again
/// so `a=%20` and `a=+` compare equal.
fn canonical_query(query: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .filter(|(k, _)| !is_secret_query_param(k))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    pairs.sort();
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// The body as it enters the key: JSON pretty-printed with sorted keys (so diffs
/// are line by line) minus volatile and ignored fields; text as is.
fn canonical_body(body: Option<&Body>, ignore_body_fields: &[String]) -> String {
    match body {
        None => "(none)".into(),
        Some(Body::Json(value)) => {
            let mut value: Value = value.clone();
            let ignored = VOLATILE_BODY_FIELDS
                .iter()
                .copied()
                .chain(ignore_body_fields.iter().map(String::as_str));
            for path in ignored {
                edit_field(&mut value, path, &mut |map, key| {
                    map.remove(key);
                });
            }
            // Pretty-printing a Value cannot fail; the compact form is the fallback.
            let sorted = sort_keys(&value);
            serde_json::to_string_pretty(&sorted).unwrap_or_else(|_| sorted.to_string())
        }
        Some(Body::Text(text)) => format!("text:\n{text}"),
        Some(Body::Base64(b64)) => format!("base64:\n{b64}"),
    }
}

/// The canonical, readable form of a request that the match key hashes.
pub fn canonical_request(
    method: &str,
    url: &str,
    body: Option<&Body>,
    ignore_body_fields: &[String],
) -> String {
    let (endpoint, query) = endpoint_and_query(url);
    format!(
        "{} {endpoint}\nquery: {}\nbody:\n{}\n",
        method.to_ascii_uppercase(),
        canonical_query(query.as_deref()),
        canonical_body(body, ignore_body_fields)
    )
}

/// `sha256:<hex>` of [`canonical_request`].
///
/// [`ReplayIndex`] keys recordings by their stored (redacted) form, so a live
/// request's body should go through `Redactor::scrub_body` first; secret query
/// parameters need nothing, the key drops them.
pub fn match_key(
    method: &str,
    url: &str,
    body: Option<&Body>,
    ignore_body_fields: &[String],
) -> String {
    let canonical = canonical_request(method, url, body, ignore_body_fields);
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    )
}

/// One recorded exchange as the index sees it.
#[derive(Debug)]
struct Entry {
    exchange: Arc<Exchange>,
    /// `METHOD endpoint`, the group [`ReplayIndex::nearest_diff`] searches.
    endpoint: String,
    canonical: String,
}

/// What replay has served so far.
#[derive(Debug, Default)]
struct Served {
    /// Per key, the indices into `entries` not yet served, in recording order.
    queues: HashMap<String, VecDeque<usize>>,
    used: Vec<bool>,
}

/// Serves recorded exchanges by match key: the nth identical request gets the
/// nth recording. Shared across connections (`&self`, `Send + Sync`).
#[derive(Debug)]
pub struct ReplayIndex {
    entries: Vec<Entry>,
    ignore_body_fields: Vec<String>,
    served: Mutex<Served>,
}

impl ReplayIndex {
    /// Indexes a cassette. Keys are recomputed from the recorded requests, so a
    /// changed `ignore_body_fields` applies to old cassettes too.
    pub fn new(cassette: &Cassette, ignore_body_fields: &[String]) -> Self {
        let mut served = Served::default();
        let mut entries = Vec::with_capacity(cassette.exchanges.len());
        for (i, exchange) in cassette.exchanges.iter().enumerate() {
            let req = &exchange.request;
            let canonical =
                canonical_request(&req.method, &req.url, req.body.as_ref(), ignore_body_fields);
            let key = format!(
                "sha256:{}",
                hex::encode(Sha256::digest(canonical.as_bytes()))
            );
            served.queues.entry(key).or_default().push_back(i);
            entries.push(Entry {
                exchange: Arc::new(exchange.clone()),
                endpoint: endpoint_of(&req.method, &req.url),
                canonical,
            });
        }
        served.used = vec![false; entries.len()];
        ReplayIndex {
            entries,
            ignore_body_fields: ignore_body_fields.to_vec(),
            served: Mutex::new(served),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Served> {
        // A panic while holding the lock cannot leave `Served` half-updated
        // (each update is one pop plus one flag), so the data is still sound.
        self.served
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next unserved recording for `key`.
    pub fn take(&self, key: &str) -> Option<Arc<Exchange>> {
        let mut served = self.lock();
        let index = served.queues.get_mut(key)?.pop_front()?;
        if let Some(flag) = served.used.get_mut(index) {
            *flag = true;
        }
        self.entries.get(index).map(|e| Arc::clone(&e.exchange))
    }

    /// A unified diff of the request against the nearest recorded request of the
    /// same method and endpoint; `None` when nothing was recorded there.
    pub fn nearest_diff(&self, method: &str, url: &str, body: Option<&Body>) -> Option<String> {
        let endpoint = endpoint_of(method, url);
        let wanted = canonical_request(method, url, body, &self.ignore_body_fields);
        let nearest = self
            .entries
            .iter()
            .filter(|e| e.endpoint == endpoint)
            .map(|e| {
                let ratio = similar::TextDiff::from_lines(&e.canonical, &wanted).ratio();
                (ratio, e)
            })
            // Highest similarity; on a tie the earliest recording.
            .fold(None::<(f32, &Entry)>, |best, (ratio, e)| match best {
                Some((r, _)) if r >= ratio => best,
                _ => Some((ratio, e)),
            })?
            .1;
        if nearest.canonical == wanted {
            // Nothing differs: the agent repeats a request more often than it did
            // when recorded, and each recording of it has been served already.
            let recorded = self
                .entries
                .iter()
                .filter(|e| e.canonical == wanted)
                .count();
            return Some(format!(
                "(no difference: this exact request was recorded {recorded} time(s) and every recording was already served; the agent now sends it more often than when it was recorded)\n"
            ));
        }
        let diff = similar::TextDiff::from_lines(&nearest.canonical, &wanted);
        Some(
            diff.unified_diff()
                .context_radius(3)
                .header(
                    &format!("recorded (seq {})", nearest.exchange.seq),
                    "request",
                )
                .to_string(),
        )
    }

    /// The seqs of recordings never served.
    pub fn unused(&self) -> Vec<u64> {
        let served = self.lock();
        self.entries
            .iter()
            .zip(served.used.iter())
            .filter(|(_, used)| !**used)
            .map(|(e, _)| e.exchange.seq)
            .collect()
    }
}

fn endpoint_of(method: &str, url: &str) -> String {
    format!(
        "{} {}",
        method.to_ascii_uppercase(),
        endpoint_and_query(url).0
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::vcr::cassette::{CassetteMeta, RecordedRequest, RecordedResponse, Timing};

    const URL: &str = "https://api.openai.com/v1/chat/completions";

    fn exchange(seq: u64, url: &str, body: Value, answer: &str) -> Exchange {
        Exchange {
            seq,
            request: RecordedRequest {
                method: "POST".into(),
                url: url.into(),
                headers: BTreeMap::new(),
                body: Some(Body::Json(body)),
            },
            response: RecordedResponse {
                status: 200,
                headers: BTreeMap::new(),
                body: Some(Body::Text(answer.into())),
                events: None,
                truncated: false,
                error: None,
            },
            timing: Timing::default(),
            match_key: String::new(),
        }
    }

    fn cassette(exchanges: Vec<Exchange>) -> Cassette {
        Cassette {
            meta: CassetteMeta {
                format: 1,
                tool_version: "0".into(),
                case_id: "c".into(),
                agent: None,
                query: None,
                recorded_at: "2025-01-01T00:00:00Z".into(),
                spec_hash: None,
                record_mode: "once".into(),
                trial: None,
            },
            exchanges,
            end: None,
        }
    }

    fn key(url: &str, body: Value) -> String {
        match_key("POST", url, Some(&Body::Json(body)), &[])
    }

    #[test]
    fn canonical_form_is_readable() {
        let c = canonical_request(
            "post",
            "HTTPS://API.example.com:443/v1/x?b=2&key=secret&a=1#f",
            Some(&Body::Json(
                json!({"z": 1, "a": {"y": true}, "user": "u-123"}),
            )),
            &[],
        );
        assert_eq!(
            c,
            "POST https://api.example.com/v1/x\nquery: a=1&b=2\nbody:\n{\n  \"a\": {\n    \"y\": true\n  },\n  \"z\": 1\n}\n"
        );
        assert!(match_key("GET", URL, None, &[]).starts_with("sha256:"));
        assert_eq!(match_key("GET", URL, None, &[]).len(), 7 + 64);
    }

    #[test]
    fn key_ignores_secrets_volatile_and_configured_fields() {
        let base = key(URL, json!({"model": "m", "messages": []}));
        assert_eq!(
            key(
                &format!("{URL}?key=REDACTED"),
                json!({"model": "m", "messages": []})
            ),
            base
        );
        assert_eq!(
            key(
                &format!("{URL}?api_key=real"),
                json!({"model": "m", "messages": [], "user": "x"})
            ),
            base
        );
        assert_ne!(key(URL, json!({"model": "other", "messages": []})), base);
        assert_eq!(
            key(URL, json!({"metadata": {"user_id": "session-1"}})),
            key(URL, json!({"metadata": {"user_id": "session-2"}}))
        );
        let ignore = vec!["temperature".to_string()];
        assert_eq!(
            match_key(
                "POST",
                URL,
                Some(&Body::Json(json!({"model": "m", "temperature": 0.3}))),
                &ignore
            ),
            match_key(
                "POST",
                URL,
                Some(&Body::Json(json!({"model": "m", "temperature": 0.9}))),
                &ignore
            ),
        );
        assert_ne!(
            match_key("GET", URL, None, &[]),
            match_key("POST", URL, None, &[])
        );
    }

    #[test]
    fn nth_identical_request_gets_nth_recording() {
        let body = json!({"q": 1});
        let c = cassette(vec![
            exchange(0, URL, body.clone(), "first"),
            exchange(1, URL, json!({"q": 2}), "other"),
            exchange(2, URL, body.clone(), "second"),
        ]);
        let index = ReplayIndex::new(&c, &[]);
        let k = key(URL, body);
        assert_eq!(
            index.take(&k).unwrap().response.body,
            Some(Body::Text("first".into()))
        );
        assert_eq!(
            index.take(&k).unwrap().response.body,
            Some(Body::Text("second".into()))
        );
        assert!(index.take(&k).is_none());
        assert!(index.take("sha256:nope").is_none());
        assert_eq!(index.unused(), vec![1]);
    }

    #[test]
    fn nearest_diff_shows_what_changed() {
        let c = cassette(vec![
            exchange(
                0,
                URL,
                json!({"model": "m", "messages": [{"role": "user", "content": "weather in Paris?"}]}),
                "a",
            ),
            exchange(
                1,
                URL,
                json!({"model": "m", "messages": [{"role": "user", "content": "something else entirely"}], "tools": []}),
                "b",
            ),
            exchange(
                2,
                "https://api.openai.com/v1/embeddings",
                json!({"input": "weather in Rome?"}),
                "c",
            ),
        ]);
        let index = ReplayIndex::new(&c, &[]);
        let asked = Body::Json(
            json!({"model": "m", "messages": [{"role": "user", "content": "weather in Rome?"}]}),
        );
        let diff = index.nearest_diff("POST", URL, Some(&asked)).unwrap();
        assert_eq!(
            diff,
            "--- recorded (seq 0)\n+++ request\n@@ -4,7 +4,7 @@\n {\n   \"messages\": [\n     {\n-      \"content\": \"weather in Paris?\",\n+      \"content\": \"weather in Rome?\",\n       \"role\": \"user\"\n     }\n   ],\n"
        );
        assert!(
            index
                .nearest_diff(
                    "POST",
                    "https://api.anthropic.com/v1/messages",
                    Some(&asked)
                )
                .is_none()
        );
        assert!(index.nearest_diff("GET", URL, None).is_none());
        // A request identical to a recording (asked once more than recorded) says so.
        let again = Body::Json(
            json!({"model": "m", "messages": [{"role": "user", "content": "weather in Paris?"}]}),
        );
        let same = index.nearest_diff("POST", URL, Some(&again)).unwrap();
        assert!(
            same.starts_with("(no difference: this exact request was recorded 1 time(s)"),
            "{same}"
        );
    }

    #[test]
    fn index_is_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ReplayIndex>();
        let body = json!({"q": 1});
        let c = cassette(
            (0..50)
                .map(|i| exchange(i, URL, body.clone(), &i.to_string()))
                .collect(),
        );
        let index = Arc::new(ReplayIndex::new(&c, &[]));
        let k = key(URL, body);
        let handles: Vec<_> = (0..5)
            .map(|_| {
                let (index, k) = (Arc::clone(&index), k.clone());
                std::thread::spawn(move || {
                    (0..10)
                        .filter_map(|_| index.take(&k))
                        .map(|e| e.seq)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut seqs: Vec<u64> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..50).collect::<Vec<_>>());
        assert!(index.unused().is_empty());
    }

    /// Rebuilds a JSON value with every object's keys inserted in a shuffled order.
    fn reorder(value: &Value, seed: u64) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                let n = entries.len().max(1) as u64;
                entries.rotate_left((seed % n) as usize);
                if seed % 2 == 1 {
                    entries.reverse();
                }
                let mut out = serde_json::Map::new();
                for (k, v) in entries {
                    out.insert(k.clone(), reorder(v, seed / 3 + 1));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| reorder(v, seed)).collect()),
            other => other.clone(),
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z ]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z]{1,5}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn key_is_invariant_under_key_and_param_order(
            body in arb_json(),
            seed in any::<u64>(),
            params in proptest::collection::btree_map("[a-z]{1,4}", "[a-z0-9%+]{0,4}", 0..5),
            rotate in any::<usize>(),
        ) {
            let mut pairs: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let url_a = format!("{URL}?{}", pairs.join("&"));
            if !pairs.is_empty() {
                let n = rotate % pairs.len();
                pairs.rotate_left(n);
                pairs.reverse();
            }
            let url_b = format!("{URL}?{}&key=secret", pairs.join("&"));
            prop_assert_eq!(
                match_key("POST", &url_a, Some(&Body::Json(body.clone())), &[]),
                match_key("POST", &url_b, Some(&Body::Json(reorder(&body, seed))), &[])
            );
        }
    }
}
