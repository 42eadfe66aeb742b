//! Trace derivation: fixtures for every provider × plain/stream × scenario,
//! stream/plain equivalence, multi-turn loops, hostile input, and cost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentci::spec::{AnswerSource, ModelPrice};
use agentci::trace::{DeriveOptions, PriceTable, Provider, Trace, Usage, derive};
use agentci::vcr::cassette::{Body, Cassette, SseEvent};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::trace_wire::{Call, Conversation, Turn, expected_id, wire_result};

const PROVIDERS: [Provider; 4] = [
    Provider::OpenaiChat,
    Provider::OpenaiResponses,
    Provider::Anthropic,
    Provider::Gemini,
];
const SCENARIOS: [&str; 4] = ["text", "tool-call", "multi-tool", "parallel-tool-calls"];

fn provider_slug(p: Provider) -> &'static str {
    match p {
        Provider::OpenaiChat => "openai-chat",
        Provider::OpenaiResponses => "openai-responses",
        Provider::Anthropic => "anthropic",
        Provider::Gemini => "gemini",
    }
}

fn model_for(p: Provider) -> &'static str {
    match p {
        Provider::OpenaiChat => "gpt-4o-2024-08-06",
        Provider::OpenaiResponses => "gpt-4.1-2025-04-14",
        Provider::Anthropic => "claude-sonnet-4-5-20250929",
        Provider::Gemini => "gemini-2.5-flash",
    }
}

/// Token counts the provider can actually report (cache writes only on
/// Anthropic, reasoning tokens not on Anthropic).
fn usage(p: Provider, input: u64, cached: u64, write: u64, output: u64, reasoning: u64) -> Usage {
    let anthropic = p == Provider::Anthropic;
    Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_tokens: if anthropic { write } else { 0 },
        output_tokens: output,
        reasoning_tokens: if anthropic { 0 } else { reasoning },
    }
}

fn call(p: Provider, n: usize, name: &str, args: Value, result: Value) -> Call {
    let id = match p {
        Provider::Anthropic => format!("toolu_01A{n:02}"),
        Provider::Gemini => String::new(),
        _ => format!("call_{n:02}abc"),
    };
    Call {
        id,
        name: name.into(),
        args,
        result,
        is_error: false,
    }
}

/// The fixed conversation of a fixture.
fn scenario(p: Provider, kind: &str) -> Conversation {
    let u = |i, c, w, o, r| usage(p, i, c, w, o, r);
    let weather = |n, city: &str| {
        call(
            p,
            n,
            "get_weather",
            json!({"city": city, "unit": "celsius"}),
            json!({"temp_c": 18, "sky": "cloudy"}),
        )
    };
    let answer = |text: &str, tokens| Turn {
        text: text.into(),
        calls: vec![],
        usage: u(900, 512, 0, tokens, 0),
    };
    let turns = match kind {
        "text" => vec![Turn {
            text: "Hello! How can I help you today?".into(),
            calls: vec![],
            usage: u(25, 0, 0, 9, 0),
        }],
        "tool-call" => vec![
            Turn {
                text: String::new(),
                calls: vec![weather(1, "Paris")],
                usage: u(420, 0, 300, 22, 0),
            },
            answer("It is 18 °C and cloudy in Paris.", 14),
        ],
        "multi-tool" => vec![
            Turn {
                text: "Let me look that up.".into(),
                calls: vec![call(
                    p,
                    1,
                    "search_docs",
                    json!({"query": "install agentci"}),
                    json!("Run: pip install agentci"),
                )],
                usage: u(380, 0, 256, 30, 12),
            },
            Turn {
                text: String::new(),
                calls: vec![
                    call(
                        p,
                        2,
                        "fetch_page",
                        json!({"url": "https://docs.example/install", "max_bytes": 2048}),
                        json!({"error": "timeout after 10s"}),
                    )
                    .erroring(),
                ],
                usage: u(640, 256, 0, 25, 0),
            },
            answer("Install it with `pip install agentci`.", 11),
        ],
        "parallel-tool-calls" => vec![
            Turn {
                text: String::new(),
                calls: vec![weather(1, "Paris"), weather(2, "Tokyo"), {
                    call(
                        p,
                        3,
                        "get_time",
                        json!({"tz": "Asia/Tokyo"}),
                        json!("09:30"),
                    )
                }],
                usage: u(450, 0, 0, 60, 0),
            },
            answer("Paris: 18 °C, cloudy. Tokyo: 18 °C, cloudy, 09:30.", 20),
        ],
        other => unreachable!("no scenario {other}"),
    };
    Conversation {
        provider: p,
        model: model_for(p).into(),
        query: "What's the weather?".into(),
        tools: vec![
            "fetch_page".into(),
            "get_time".into(),
            "get_weather".into(),
            "search_docs".into(),
        ],
        turns,
    }
}

trait Erroring {
    fn erroring(self) -> Self;
}
impl Erroring for Call {
    fn erroring(mut self) -> Self {
        self.is_error = true;
        self
    }
}

pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cassettes")
}

/// The trace must hold exactly the conversation's tool calls, once each, in
/// order, with arguments, results and error flags; and its usage and text.
fn assert_matches(conv: &Conversation, trace: &Trace) {
    let p = conv.provider;
    let mut expected = Vec::new();
    for (t, turn) in conv.turns.iter().enumerate() {
        for (pos, c) in turn.calls.iter().enumerate() {
            expected.push((
                expected_id(p, t, pos, c),
                c.name.clone(),
                c.args.clone(),
                Some(wire_result(p, &c.result)),
                // OpenAI and Gemini have no error flag: an `error` field in the result says it.
                c.is_error || c.result.get("error").is_some(),
                t,
            ));
        }
    }
    let got: Vec<_> = trace
        .tool_calls
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                c.name.clone(),
                c.arguments.clone(),
                c.result.clone(),
                c.is_error,
                c.llm_call,
            )
        })
        .collect();
    // The last turn's results are never sent back: no request carries them.
    let mut expected = expected;
    let last = conv.turns.len() - 1;
    for e in expected.iter_mut().filter(|e| e.5 == last) {
        e.3 = None;
        e.4 = false;
    }
    assert_eq!(got, expected, "tool calls of {p:?}");
    assert_eq!(trace.llm_calls.len(), conv.turns.len());
    for (call, turn) in trace.llm_calls.iter().zip(&conv.turns) {
        assert_eq!(call.usage, turn.usage, "usage of {p:?}");
        assert_eq!(call.provider, p);
        assert_eq!(
            call.output_text.as_deref().unwrap_or(""),
            turn.text,
            "text of {p:?}"
        );
        assert_eq!(call.model, conv.model);
    }
    assert_eq!(trace.totals.tool_calls, expected.len() as u64);
    assert_eq!(trace.tools_available, conv.tools);
}

fn derive_default(c: &Cassette) -> Trace {
    derive(c, &DeriveOptions::default())
}

#[test]
fn fixtures_cover_every_provider_mode_and_scenario() {
    let update = std::env::var_os("AGENTCI_UPDATE_FIXTURES").is_some();
    let dir = fixture_dir();
    let mut stale = Vec::new();
    for p in PROVIDERS {
        for kind in SCENARIOS {
            let conv = scenario(p, kind);
            for streamed in [false, true] {
                let mode = if streamed { "sse" } else { "plain" };
                let path = dir.join(format!("{}-{kind}-{mode}.jsonl", provider_slug(p)));
                let text = conv.cassette(streamed).to_jsonl();
                if update {
                    std::fs::create_dir_all(&dir).unwrap();
                    std::fs::write(&path, &text).unwrap();
                } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                    stale.push(path.display().to_string());
                }
                let cassette = Cassette::read(&path).unwrap();
                let trace = derive_default(&cassette);
                assert_matches(&conv, &trace);
                assert!(
                    trace.warnings.is_empty(),
                    "{}: {:?}",
                    path.display(),
                    trace.warnings
                );
                assert!(trace.llm_calls.iter().all(|c| c.streamed == streamed));
                assert!(trace.totals.cost_usd > 0.0, "every fixture model is priced");
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale fixtures (rerun with AGENTCI_UPDATE_FIXTURES=1): {stale:?}"
    );
}

#[test]
fn multi_turn_loop_derives_exact_sequence_without_duplicates() {
    for p in PROVIDERS {
        let conv = scenario(p, "multi-tool");
        let trace = derive_default(&conv.cassette(false));
        assert_eq!(
            trace.tool_sequence(),
            ["search_docs", "fetch_page"],
            "{p:?}"
        );
        let first = &trace.tool_calls[0];
        assert_eq!(first.arguments, json!({"query": "install agentci"}));
        let expected_result = match p {
            Provider::Gemini => json!({"result": "Run: pip install agentci"}),
            _ => json!("Run: pip install agentci"),
        };
        assert_eq!(first.result.as_ref(), Some(&expected_result), "{p:?}");
        assert!(!first.is_error);
        let second = &trace.tool_calls[1];
        assert_eq!(
            second.arguments,
            json!({"url": "https://docs.example/install", "max_bytes": 2048})
        );
        assert!(second.is_error, "{p:?}: the fetch failed");
        assert_eq!((first.llm_call, second.llm_call), (0, 1));
        assert_eq!(trace.totals.llm_calls, 3);
        assert_eq!(
            trace.answer.as_deref(),
            Some("Install it with `pip install agentci`.")
        );
    }
}

#[test]
fn cost_matches_a_hand_calculation_with_cached_tokens() {
    // Anthropic claude-sonnet-4-5 ($3 in, $0.30 cache read, $3.75 cache write, $15 out per 1M).
    let conv = Conversation {
        provider: Provider::Anthropic,
        model: "claude-sonnet-4-5-20250929".into(),
        query: "q".into(),
        tools: vec!["lookup".into()],
        turns: vec![
            Turn {
                text: String::new(),
                calls: vec![call(
                    Provider::Anthropic,
                    1,
                    "lookup",
                    json!({"k": 1}),
                    json!("v"),
                )],
                usage: usage(Provider::Anthropic, 2000, 1200, 300, 150, 0),
            },
            Turn {
                text: "done".into(),
                calls: vec![],
                usage: usage(Provider::Anthropic, 2400, 1500, 0, 80, 0),
            },
        ],
    };
    for streamed in [false, true] {
        let trace = derive_default(&conv.cassette(streamed));
        // Turn 1: 500×3 + 1200×0.30 + 300×3.75 + 150×15 = 1500 + 360 + 1125 + 2250 = 5235 µ$
        // Turn 2: 900×3 + 1500×0.30 + 0 + 80×15 = 2700 + 450 + 1200 = 4350 µ$
        assert!((trace.llm_calls[0].cost_usd - 0.005235).abs() < 1e-12);
        assert!((trace.llm_calls[1].cost_usd - 0.004350).abs() < 1e-12);
        assert!((trace.totals.cost_usd - 0.009585).abs() < 1e-12);
        // Input is reported as the sum, cache parts kept.
        assert_eq!(trace.llm_calls[0].usage.input_tokens, 2000);
        assert_eq!(trace.llm_calls[0].usage.cached_input_tokens, 1200);
        assert_eq!(trace.llm_calls[0].usage.cache_write_tokens, 300);
        assert_eq!(trace.totals.total_tokens, 2000 + 150 + 2400 + 80);
    }

    // OpenAI gpt-4o ($2.50 in, $1.25 cached, $10 out): 600×2.5 + 400×1.25 + 100×10 = 3000 µ$.
    let mut conv = scenario(Provider::OpenaiChat, "text");
    conv.turns[0].usage = usage(Provider::OpenaiChat, 1000, 400, 0, 100, 40);
    let trace = derive_default(&conv.cassette(false));
    assert!((trace.totals.cost_usd - 0.003).abs() < 1e-12);
    assert_eq!(trace.llm_calls[0].usage.reasoning_tokens, 40);
}

#[test]
fn unpriced_models_cost_zero_with_a_warning_naming_them() {
    let mut conv = scenario(Provider::OpenaiChat, "text");
    conv.model = "my-finetune".into();
    let trace = derive_default(&conv.cassette(false));
    assert_eq!(trace.totals.cost_usd, 0.0);
    assert!(
        trace
            .warnings
            .iter()
            .any(|w| w.contains("my-finetune") && w.contains("no price")),
        "{:?}",
        trace.warnings
    );
    // A spec override prices it.
    let mut overrides = BTreeMap::new();
    overrides.insert(
        "my-finetune".to_string(),
        ModelPrice {
            input: 1.0,
            output: 4.0,
            cached_input: None,
            cache_write: None,
        },
    );
    let opts = DeriveOptions {
        prices: PriceTable::with_overrides(&overrides),
        ..Default::default()
    };
    let trace = derive(&conv.cassette(false), &opts);
    assert!((trace.totals.cost_usd - (25.0 + 9.0 * 4.0) / 1e6).abs() < 1e-15);
    assert!(trace.warnings.is_empty());
}

#[test]
fn handoffs_tools_available_and_answer_source() {
    let p = Provider::OpenaiChat;
    let mut conv = scenario(p, "tool-call");
    conv.tools.push("transfer_to_billing_agent".into());
    conv.turns[0].calls = vec![call(
        p,
        7,
        "transfer_to_billing_agent",
        json!({}),
        json!("{\"assistant\": \"BillingAgent\"}"),
    )];
    let mut cassette = conv.cassette(false);
    let trace = derive_default(&cassette);
    assert_eq!(trace.handoffs.len(), 1);
    assert_eq!(trace.handoffs[0].to, "billing_agent");
    assert_eq!(trace.handoffs[0].tool_call_id, "call_07abc");
    assert!(
        trace
            .tools_available
            .contains(&"transfer_to_billing_agent".to_string())
    );

    // Answer: stdout when recorded and asked for, else the last assistant text.
    if let Some(end) = cassette.end.as_mut() {
        end.answer = Some("from stdout".into());
    }
    assert_eq!(
        derive_default(&cassette).answer.as_deref(),
        Some("from stdout")
    );
    let last = DeriveOptions {
        answer: AnswerSource::LastMessage,
        ..Default::default()
    };
    assert_eq!(
        derive(&cassette, &last).answer.as_deref(),
        Some("It is 18 °C and cloudy in Paris.")
    );
    cassette.end = None;
    let trace = derive_default(&cassette);
    assert_eq!(
        trace.answer.as_deref(),
        Some("It is 18 °C and cloudy in Paris.")
    );
    // Without an `_end` line the duration is first request start to last response end.
    assert_eq!(trace.totals.duration_ms, 900);

    // A custom prefix.
    let custom = DeriveOptions {
        handoff_prefix: "handoff_".into(),
        ..Default::default()
    };
    assert!(derive(&cassette, &custom).handoffs.is_empty());
}

#[test]
fn trace_uploads_and_other_http_are_kept_out_of_llm_counts() {
    let mut cassette = scenario(Provider::OpenaiResponses, "tool-call").cassette(false);
    let mut upload = cassette.exchanges[0].clone();
    upload.seq = 2;
    upload.request.url = "https://api.openai.com/v1/traces/ingest".into();
    upload.response.body = Some(Body::Text(String::new()));
    upload.response.status = 204;
    let mut search = upload.clone();
    search.seq = 3;
    search.request.method = "GET".into();
    search.request.url = "https://search.example:8443/q?term=x".into();
    search.response.status = 200;
    cassette.exchanges.push(upload);
    cassette.exchanges.push(search);
    let trace = derive_default(&cassette);
    assert_eq!(trace.totals.llm_calls, 2);
    assert_eq!(trace.http_calls.len(), 2);
    assert_eq!(
        trace.http_calls[0].kind.as_deref(),
        Some("agents_trace_upload")
    );
    assert_eq!(trace.http_calls[1].host, "search.example:8443");
    assert_eq!(trace.http_calls[1].path, "/q");
    assert_eq!(trace.http_calls[1].kind, None);
    assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
}

#[test]
fn chat_stream_without_usage_warns() {
    let mut cassette = scenario(Provider::OpenaiChat, "text").cassette(true);
    let events = cassette.exchanges[0].response.events.as_mut().unwrap();
    events.retain(|e| e.data.get("usage").is_none_or(Value::is_null));
    let trace = derive_default(&cassette);
    assert_eq!(trace.llm_calls[0].usage, Usage::default());
    assert!(
        trace.warnings.iter().any(|w| w.contains("include_usage")),
        "{:?}",
        trace.warnings
    );
}

#[test]
fn truncated_streams_unknown_events_and_non_json_bodies_warn() {
    for p in PROVIDERS {
        // A stream cut in the middle of the tool-call arguments.
        let mut cassette = scenario(p, "tool-call").cassette(true);
        let ex = &mut cassette.exchanges[0];
        let events = ex.response.events.as_mut().unwrap();
        let keep = events.len() / 2;
        events.truncate(keep);
        ex.response.truncated = true;
        let trace = derive_default(&cassette);
        assert!(!trace.warnings.is_empty(), "{p:?}");

        // An unknown event type.
        let mut cassette = scenario(p, "text").cassette(true);
        let events = cassette.exchanges[0].response.events.as_mut().unwrap();
        events.insert(
            1,
            SseEvent {
                t_ms: 1,
                event: Some("surprise".into()),
                data: json!({"type": "surprise"}),
                id: None,
            },
        );
        let trace = derive_default(&cassette);
        assert!(
            trace.warnings.iter().any(|w| w.contains("surprise")),
            "{p:?}: {:?}",
            trace.warnings
        );
        assert_eq!(
            trace.llm_calls[0].output_text,
            derive_default(&scenario(p, "text").cassette(true)).llm_calls[0].output_text
        );

        // Non-JSON bodies.
        let mut cassette = scenario(p, "text").cassette(false);
        cassette.exchanges[0].response.body =
            Some(Body::Text("<html>502 Bad Gateway</html>".into()));
        cassette.exchanges[0].request.body = Some(Body::Base64("AAEC".into()));
        let trace = derive_default(&cassette);
        assert!(
            trace.warnings.iter().any(|w| w.contains("not JSON")),
            "{p:?}"
        );
        assert_eq!(trace.totals.llm_calls, 1);
    }
}

// ---- properties -------------------------------------------------------------

fn arb_provider() -> impl Strategy<Value = Provider> {
    prop::sample::select(PROVIDERS.to_vec())
}

fn arb_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i32>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(|b| json!(b)),
        "[ -~éü\"\\\\\n{}]{0,12}".prop_map(|s| json!(s)),
    ]
}

fn arb_args() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z_]{1,8}", arb_scalar(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn arb_result() -> impl Strategy<Value = (Value, bool)> {
    prop_oneof![
        "[ -~]{0,20}".prop_map(|s| (json!(s), false)),
        arb_args().prop_map(|v| (v, false)),
        "[a-z ]{1,10}".prop_map(|s| (json!({"error": s}), true)),
    ]
}

prop_compose! {
    fn arb_turn(p: Provider, last: bool)(
        text in "[ -~é\n]{0,40}",
        calls in prop::collection::vec(
            (prop::sample::select(vec!["search", "fetch", "grade", "transfer_to_billing"]), arb_args(), arb_result()),
            if last { 0..1 } else { 1..4 }),
        input in 1u64..100_000, cached_pct in 0u64..100, write_pct in 0u64..100,
        output in 1u64..5_000, reasoning_pct in 0u64..100,
    ) -> (String, Vec<(String, Value, Value, bool)>, Usage) {
        let cached = input * cached_pct / 200;
        let write = input * write_pct / 200;
        let reasoning = output * reasoning_pct / 100;
        let calls = calls.into_iter().map(|(n, a, (r, e))| (n.to_string(), a, r, e)).collect();
        // Keep the last turn non-empty so it is an answer.
        let text = if last && text.is_empty() { "ok".to_string() } else { text };
        (text, calls, usage(p, input, cached, write, output, reasoning))
    }
}

fn arb_conversation() -> impl Strategy<Value = Conversation> {
    (arb_provider(), 0usize..3).prop_flat_map(|(p, tool_turns)| {
        let mut turns: Vec<BoxedStrategy<_>> = (0..tool_turns)
            .map(|_| arb_turn(p, false).boxed())
            .collect();
        turns.push(arb_turn(p, true).boxed());
        turns.prop_map(move |raw| {
            let mut n = 0;
            let turns = raw
                .into_iter()
                .map(|(text, calls, usage)| Turn {
                    text,
                    calls: calls
                        .into_iter()
                        .map(|(name, args, result, is_error)| {
                            n += 1;
                            let mut c = call(p, n, &name, args, result);
                            c.is_error = is_error;
                            c
                        })
                        .collect(),
                    usage,
                })
                .collect();
            Conversation {
                provider: p,
                model: model_for(p).into(),
                query: "q".into(),
                tools: vec![
                    "fetch".into(),
                    "grade".into(),
                    "search".into(),
                    "transfer_to_billing".into(),
                ],
                turns,
            }
        })
    })
}

/// A trace with what legitimately differs between plain and streamed erased.
fn modulo_streaming(mut t: Trace) -> Trace {
    for c in &mut t.llm_calls {
        c.streamed = false;
        // Gemini streams from its own method (`:streamGenerateContent`).
        c.endpoint = c
            .endpoint
            .replace(":streamGenerateContent", ":generateContent");
        c.latency_ms = 0;
        c.ttfb_ms = 0;
    }
    t
}

fn arb_body() -> impl Strategy<Value = Option<Body>> {
    prop_oneof![
        Just(None),
        any::<Vec<u8>>().prop_map(|b| Some(Body::Text(String::from_utf8_lossy(&b).into_owned()))),
        "[ -~]{0,40}".prop_map(|s| Some(Body::Base64(s))),
        arb_json().prop_map(|v| Some(Body::Json(v))),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "choices",
            "usage",
            "delta",
            "tool_calls",
            "content",
            "message_start",
            "[DONE]",
            "index"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "choices",
                    "usage",
                    "delta",
                    "tool_calls",
                    "function",
                    "arguments",
                    "index",
                    "content",
                    "type",
                    "message",
                    "output",
                    "candidates",
                    "parts",
                    "functionCall",
                    "usageMetadata",
                    "response",
                    "item",
                    "partial_json",
                    "id",
                    "name",
                    "input",
                ])
                .prop_map(str::to_string),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn streamed_and_plain_derive_the_same_trace(conv in arb_conversation()) {
        let plain = derive_default(&conv.cassette(false));
        let streamed = derive_default(&conv.cassette(true));
        prop_assert!(plain.warnings.is_empty(), "{:?}", plain.warnings);
        assert_matches(&conv, &plain);
        prop_assert_eq!(modulo_streaming(plain), modulo_streaming(streamed));
    }

    #[test]
    fn arbitrary_bodies_never_panic(
        p in arb_provider(),
        streamed in any::<bool>(),
        request in arb_body(),
        response in arb_body(),
        events in prop::collection::vec((prop::option::of("[a-z_.]{1,20}"), arb_json()), 0..8),
        cut in any::<prop::sample::Index>(),
        status in prop::sample::select(vec![0u16, 200, 400, 429, 500]),
    ) {
        let mut cassette = scenario(p, "parallel-tool-calls").cassette(streamed);
        let ex = &mut cassette.exchanges[0];
        ex.request.body = request;
        ex.response.status = status;
        if streamed {
            let recorded = ex.response.events.as_mut().unwrap();
            let at = cut.index(recorded.len() + 1);
            recorded.truncate(at);
            recorded.extend(events.into_iter().map(|(event, data)| SseEvent { t_ms: 0, event, data, id: None }));
        } else {
            ex.response.body = response;
        }
        let trace = derive_default(&cassette);
        prop_assert_eq!(trace.llm_calls.len(), 2);
        // The second exchange is untouched and still reads fine.
        prop_assert_eq!(trace.llm_calls[1].output_text.is_some(), true);
    }
}
