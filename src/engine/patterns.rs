//! Compiled regexes shared across cases. Compiling a pattern costs far more
//! than matching it, and the same spec patterns are evaluated for every case and
//! trial, so each distinct pattern is compiled once per process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;

/// Distinct patterns kept before the cache is emptied (a bound, not a tuning knob).
const MAX_PATTERNS: usize = 4096;

type Compiled = Result<Arc<Regex>, regex::Error>;

fn cache() -> &'static Mutex<HashMap<String, Compiled>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The compiled `pattern` (or its compile error), from the cache when seen before.
pub fn compile(pattern: &str) -> Compiled {
    // A poisoned lock only means another thread panicked mid-insert; the map is still valid.
    let lock = || cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(hit) = lock().get(pattern) {
        return hit.clone();
    }
    // Compiled outside the lock, so workers scoring different cases compile in
    // parallel; two threads racing on one new pattern both compile it, harmlessly.
    let compiled = Regex::new(pattern).map(Arc::new);
    let mut map = lock();
    if map.len() >= MAX_PATTERNS {
        map.clear();
    }
    map.insert(pattern.to_string(), compiled.clone());
    compiled
}
