//! The match key of a request and the replay index over a cassette.

use std::sync::Arc;

use super::cassette::{Body, Cassette, Exchange};

/// The canonical, readable form of a request that the match key hashes.
pub fn canonical_request(
    method: &str,
    url: &str,
    body: Option<&Body>,
    ignore_body_fields: &[String],
) -> String {
    let _ = (method, url, body, ignore_body_fields);
    todo!()
}

/// `sha256:<hex>` of [`canonical_request`].
pub fn match_key(
    method: &str,
    url: &str,
    body: Option<&Body>,
    ignore_body_fields: &[String],
) -> String {
    let _ = (method, url, body, ignore_body_fields);
    todo!()
}

/// Serves recorded exchanges by match key: the nth identical request gets the nth recording.
#[derive(Debug)]
pub struct ReplayIndex {
    exchanges: Vec<Arc<Exchange>>,
}

impl ReplayIndex {
    /// Indexes a cassette.
    pub fn new(cassette: &Cassette, ignore_body_fields: &[String]) -> Self {
        let _ = (cassette, ignore_body_fields);
        todo!()
    }

    /// The next unserved recording for `key`.
    pub fn take(&self, key: &str) -> Option<Arc<Exchange>> {
        let _ = (key, &self.exchanges);
        todo!()
    }

    /// A unified diff of the request against the nearest recorded request of the same method and endpoint.
    pub fn nearest_diff(&self, method: &str, url: &str, body: Option<&Body>) -> Option<String> {
        let _ = (method, url, body);
        todo!()
    }

    /// The seqs of recordings never served.
    pub fn unused(&self) -> Vec<u64> {
        todo!()
    }
}
