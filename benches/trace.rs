//! Trace derivation throughput: 10,000 recorded exchanges (the committed
//! fixtures, every provider, plain and streamed, cycled) derived into traces.
//! Run: `cargo bench --bench trace`.

use std::path::Path;
use std::time::Instant;

use agentci::trace::{DeriveOptions, derive};
use agentci::vcr::cassette::Cassette;

const EXCHANGES: usize = 10_000;
const ROUNDS: usize = 5;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cassettes");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    let fixtures: Vec<Cassette> = paths
        .iter()
        .map(|p| Cassette::read(p).expect("fixture parses"))
        .collect();

    // Whole conversations, cycled, so tool results still find their calls:
    // ~10,000 exchanges split into cassettes of the fixtures' own sizes.
    let mut cassettes = Vec::new();
    let mut count = 0;
    'fill: loop {
        for c in &fixtures {
            if count >= EXCHANGES {
                break 'fill;
            }
            let mut c = c.clone();
            c.exchanges.truncate(EXCHANGES - count);
            count += c.exchanges.len();
            cassettes.push(c);
        }
    }
    let bytes: usize = cassettes.iter().map(|c| c.to_jsonl().len()).sum();
    let opts = DeriveOptions::default();

    let mut best = f64::MAX;
    let mut tool_calls = 0u64;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        tool_calls = 0;
        for c in &cassettes {
            let trace = derive(std::hint::black_box(c), &opts);
            tool_calls += trace.totals.tool_calls;
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let mb = bytes as f64 / 1_000_000.0;
    println!(
        "trace derive: {count} exchanges in {} cassettes ({mb:.1} MB of JSONL, {tool_calls} tool calls)",
        cassettes.len()
    );
    println!(
        "best of {ROUNDS}: {:.1} ms → {:.0} exchanges/s, {:.1} MB/s",
        best * 1e3,
        count as f64 / best,
        mb / best
    );
}
