//! Malformed input never panics the spec loader: arbitrary bytes, arbitrary
//! YAML documents, and mutations of a valid spec all give a spec or an error.

use agentci::spec::{self, Filter};
use proptest::prelude::*;
use serde_json::Value;

/// Keys a spec knows, so generated documents reach deep into the checker, plus noise.
const KEYS: &[&str] = &[
    "agent",
    "queries",
    "query",
    "id",
    "tags",
    "defaults",
    "correctness",
    "path",
    "cost",
    "llm_judge",
    "rule",
    "template",
    "threshold",
    "regex_match",
    "json_schema",
    "match_mode",
    "max_tool_calls",
    "expected_tool_args",
    "args",
    "mode",
    "tool",
    "judge_config",
    "ensemble",
    "enabled",
    "models",
    "temperature",
    "runner",
    "command",
    "$include",
    "few_shot_examples",
    "score",
    "pricing",
    "proxy",
    "x",
    "",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-10.0f64..10.0).prop_map(Value::from),
        "[a-z(\\[*. ]{0,8}".prop_map(Value::String),
        prop::sample::select(vec![
            "regex",
            "strict",
            "polite_refusal",
            "subset",
            "nope.yaml"
        ])
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                )
            }),
        ]
    })
}

fn load_text(text: &[u8]) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    // Ok or Err are both fine; a panic fails the property.
    let _ = spec::load(&path, &Filter::default());
    Ok(())
}

const EXAMPLE: &str = include_str!("../../specs/example.yaml");

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        load_text(&bytes).unwrap();
    }

    #[test]
    fn arbitrary_yaml_documents_never_panic(doc in json_value(), agent in any::<bool>()) {
        // JSON is YAML; half the time the document is wrapped as a plausible spec.
        let doc = if agent {
            serde_json::json!({"agent": "a", "queries": [doc]})
        } else {
            doc
        };
        load_text(serde_json::to_string(&doc).unwrap().as_bytes()).unwrap();
    }

    #[test]
    fn mutated_example_never_panics(cut in 0usize..EXAMPLE.len(), insert in "[ :\\-\\[\\]{}'\"#&*!|>\n\t]{0,4}") {
        let mut text = EXAMPLE.as_bytes()[..cut].to_vec();
        text.extend_from_slice(insert.as_bytes());
        text.extend_from_slice(&EXAMPLE.as_bytes()[cut..]);
        load_text(&text).unwrap();
    }
}
