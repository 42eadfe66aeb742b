//! `agentci trace CASSETTE [--json] [--prices FILE]`

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::error::{ExitStatus, Result};
use crate::trace::{DeriveOptions, PriceTable, Trace, derive};
use crate::vcr::cassette::Cassette;

/// Arguments of `agentci trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The cassette to derive the trace from.
    pub cassette: PathBuf,
    /// Print the trace as JSON (schema: docs/trace.schema.json).
    #[arg(long)]
    pub json: bool,
    /// A LiteLLM `model_prices_and_context_window.json` whose prices override the built-in table.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

/// Derives and prints the trace of one cassette.
pub fn run(args: TraceArgs) -> Result<ExitStatus> {
    let cassette = Cassette::read(&args.cassette)?;
    let prices = match &args.prices {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
            PriceTable::from_litellm_json(&text)
                .map_err(|e| crate::Error::other(format!("{}: {e}", path.display()), e.hint()))?
        }
        None => PriceTable::builtin(),
    };
    let opts = DeriveOptions {
        prices,
        ..DeriveOptions::default()
    };
    let trace = derive(&cassette, &opts);
    let text = if args.json {
        serde_json::to_string_pretty(&trace)
            .map_err(|e| crate::Error::other(format!("serialising the trace: {e}"), None))?
    } else {
        render_tree(&trace)
    };
    print_out(&text);
    Ok(ExitStatus::Success)
}

/// Prints to stdout; a closed pipe (`| head`) is not an error.
fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// The readable tree: the run, then its LLM calls (with the tool calls each
/// requested) and other HTTP exchanges in request order, the answer and the warnings.
pub fn render_tree(trace: &Trace) -> String {
    let mut s = String::new();
    let t = &trace.totals;
    let _ = writeln!(
        s,
        "{}  {} ms · {} LLM calls · {} tool calls · {} tokens ({} in, {} out) · ${:.6}",
        trace.root.name,
        t.duration_ms,
        t.llm_calls,
        t.tool_calls,
        t.total_tokens,
        t.input_tokens,
        t.output_tokens,
        t.cost_usd
    );
    // LLM and HTTP entries interleaved by seq.
    enum Entry<'a> {
        Llm(usize, &'a crate::trace::LlmCall),
        Http(&'a crate::trace::HttpCall),
    }
    let mut entries: Vec<(u64, Entry<'_>)> = trace
        .llm_calls
        .iter()
        .enumerate()
        .map(|(i, c)| (c.seq, Entry::Llm(i, c)))
        .chain(trace.http_calls.iter().map(|h| (h.seq, Entry::Http(h))))
        .collect();
    entries.sort_by_key(|(seq, _)| *seq);
    let count = entries.len();
    for (n, (_, entry)) in entries.iter().enumerate() {
        let last = n + 1 == count;
        let (branch, stem) = if last {
            ("└─", "   ")
        } else {
            ("├─", "│  ")
        };
        match entry {
            Entry::Llm(i, c) => {
                let u = &c.usage;
                let mut tokens = format!("in {}", u.input_tokens);
                if u.cached_input_tokens > 0 {
                    let _ = write!(tokens, " (cached {})", u.cached_input_tokens);
                }
                if u.cache_write_tokens > 0 {
                    let _ = write!(tokens, " (cache write {})", u.cache_write_tokens);
                }
                let _ = write!(tokens, " · out {}", u.output_tokens);
                if u.reasoning_tokens > 0 {
                    let _ = write!(tokens, " (reasoning {})", u.reasoning_tokens);
                }
                let _ = writeln!(
                    s,
                    "{branch} llm #{i} {} {} {}{} · {tokens} · ${:.6} · {} ms (ttfb {} ms) · stop {} · HTTP {}",
                    provider_name(c.provider),
                    c.model,
                    c.endpoint,
                    if c.streamed { " (stream)" } else { "" },
                    c.cost_usd,
                    c.latency_ms,
                    c.ttfb_ms,
                    c.stop_reason.as_deref().unwrap_or("-"),
                    c.status,
                );
                if let Some(text) = &c.output_text {
                    let _ = writeln!(s, "{stem}   text: {}", one_line(text, 100));
                }
                for call in trace.tool_calls.iter().filter(|tc| tc.llm_call == *i) {
                    let handoff = trace
                        .handoffs
                        .iter()
                        .find(|h| h.tool_call_id == call.id)
                        .map(|h| format!(" ⇒ handoff to {}", h.to))
                        .unwrap_or_default();
                    let result = match &call.result {
                        Some(r) => {
                            let shown = match r {
                                serde_json::Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            format!(
                                " → {}{}",
                                if call.is_error { "ERROR " } else { "" },
                                one_line(&shown, 80)
                            )
                        }
                        None => " → (no result recorded)".into(),
                    };
                    let _ = writeln!(
                        s,
                        "{stem}   tool {} {}({}){result}{handoff}",
                        call.id,
                        call.name,
                        one_line(&call.arguments.to_string(), 80)
                    );
                }
            }
            Entry::Http(h) => {
                let kind = h
                    .kind
                    .as_deref()
                    .map(|k| format!(" [{k}]"))
                    .unwrap_or_default();
                let _ = writeln!(
                    s,
                    "{branch} http {} {}{} · HTTP {} · {} ms{kind}",
                    h.method, h.host, h.path, h.status, h.latency_ms
                );
            }
        }
    }
    if !trace.tools_available.is_empty() {
        let _ = writeln!(s, "tools offered: {}", trace.tools_available.join(", "));
    }
    match &trace.answer {
        Some(a) => {
            let _ = writeln!(s, "answer: {}", one_line(a, 200));
        }
        None => {
            let _ = writeln!(s, "answer: (none)");
        }
    }
    if !trace.warnings.is_empty() {
        let _ = writeln!(s, "warnings:");
        for w in &trace.warnings {
            let _ = writeln!(s, "  - {w}");
        }
    }
    s.trim_end().to_string()
}

/// The provider as the JSON output spells it (`openai_chat`).
fn provider_name(provider: crate::trace::Provider) -> String {
    serde_json::to_value(provider)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Text on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    } else {
        flat
    }
}
