//! The one price table: USD per 1M tokens for input, cached input, cache
//! writes and output, with the spec's `pricing:` overrides and LiteLLM files
//! layered on top.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::spec::ModelPrice;
use crate::trace::Usage;

/// One built-in row: model, input, cached input, cache write, output (USD per 1M tokens).
type Row = (&'static str, f64, Option<f64>, Option<f64>, f64);

/// The built-in prices, USD per 1M tokens: (model, input, cached input, cache write, output).
///
/// Figures as published on the providers' pricing pages, checked 2026-11
/// (OpenAI: developers.openai.com/api/docs/pricing, mid-2026 lineup;
/// Anthropic: platform.claude.com/docs/en/about-claude/pricing, 5-minute cache
/// writes; Gemini: ai.google.dev/gemini-api/docs/pricing, prompts ≤ 200k tokens).
/// `None` means "same as input" (OpenAI does not bill cache writes; Gemini bills
/// cache storage by the hour, which a trace cannot see). Update here and only here.
const BUILTIN: &[Row] = &[
    // OpenAI
    ("gpt-5.5", 5.00, Some(0.50), None, 30.00),
    ("gpt-5.5-pro", 30.00, None, None, 180.00),
    ("gpt-5.4", 2.50, Some(0.25), None, 15.00),
    ("gpt-5.4-mini", 0.75, Some(0.075), None, 4.50),
    ("gpt-5.4-nano", 0.20, Some(0.02), None, 1.25),
    ("gpt-5.4-pro", 30.00, None, None, 180.00),
    ("gpt-5.1", 1.25, Some(0.125), None, 10.00),
    ("gpt-5", 1.25, Some(0.125), None, 10.00),
    ("gpt-5-mini", 0.25, Some(0.025), None, 2.00),
    ("gpt-5-nano", 0.05, Some(0.005), None, 0.40),
    ("gpt-5-pro", 15.00, None, None, 120.00),
    ("gpt-4.1", 2.00, Some(0.50), None, 8.00),
    ("gpt-4.1-mini", 0.40, Some(0.10), None, 1.60),
    ("gpt-4.1-nano", 0.10, Some(0.025), None, 0.40),
    ("gpt-4o", 2.50, Some(1.25), None, 10.00),
    ("gpt-4o-mini", 0.15, Some(0.075), None, 0.60),
    ("o3", 2.00, Some(0.50), None, 8.00),
    ("o3-pro", 20.00, None, None, 80.00),
    ("o3-mini", 1.10, Some(0.55), None, 4.40),
    ("o4-mini", 1.10, Some(0.275), None, 4.40),
    // Anthropic (cache hits 0.1×, 5-minute cache writes 1.25× input)
    ("claude-opus-5", 5.00, Some(0.50), Some(6.25), 25.00),
    ("claude-opus-4-8", 5.00, Some(0.50), Some(6.25), 25.00),
    ("claude-opus-4-7", 5.00, Some(0.50), Some(6.25), 25.00),
    ("claude-opus-4-6", 5.00, Some(0.50), Some(6.25), 25.00),
    ("claude-opus-4-5", 5.00, Some(0.50), Some(6.25), 25.00),
    ("claude-opus-4-1", 15.00, Some(1.50), Some(18.75), 75.00),
    ("claude-opus-4", 15.00, Some(1.50), Some(18.75), 75.00),
    ("claude-opus-4-0", 15.00, Some(1.50), Some(18.75), 75.00),
    ("claude-sonnet-5", 2.00, Some(0.20), Some(2.50), 10.00),
    ("claude-sonnet-4-5", 3.00, Some(0.30), Some(3.75), 15.00),
    ("claude-sonnet-4", 3.00, Some(0.30), Some(3.75), 15.00),
    ("claude-sonnet-4-0", 3.00, Some(0.30), Some(3.75), 15.00),
    ("claude-3-7-sonnet", 3.00, Some(0.30), Some(3.75), 15.00),
    ("claude-haiku-4-5", 1.00, Some(0.10), Some(1.25), 5.00),
    ("claude-3-5-haiku", 0.80, Some(0.08), Some(1.00), 4.00),
    // Google Gemini (context-cache reads 0.1× input)
    ("gemini-3-pro", 2.00, Some(0.20), None, 12.00),
    ("gemini-2.5-pro", 1.25, Some(0.125), None, 10.00),
    ("gemini-2.5-flash", 0.30, Some(0.03), None, 2.50),
    ("gemini-2.5-flash-lite", 0.10, Some(0.01), None, 0.40),
    ("gemini-2.0-flash", 0.10, Some(0.025), None, 0.40),
];

/// Model prices by name, with the lookup rules of `docs/trace.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    models: BTreeMap<String, ModelPrice>,
}

impl Default for PriceTable {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PriceTable {
    /// The built-in table.
    pub fn builtin() -> Self {
        let models = BUILTIN
            .iter()
            .map(|&(name, input, cached_input, cache_write, output)| {
                (
                    name.to_string(),
                    ModelPrice {
                        input,
                        output,
                        cached_input,
                        cache_write,
                    },
                )
            })
            .collect();
        PriceTable { models }
    }

    /// An empty table: every model is unpriced.
    pub fn empty() -> Self {
        PriceTable {
            models: BTreeMap::new(),
        }
    }

    /// The built-in table with the spec's `pricing:` entries on top.
    pub fn with_overrides(overrides: &BTreeMap<String, ModelPrice>) -> Self {
        let mut table = Self::builtin();
        table.apply(overrides);
        table
    }

    /// Puts `overrides` on top of this table (their entries win).
    pub fn apply(&mut self, overrides: &BTreeMap<String, ModelPrice>) {
        for (name, price) in overrides {
            self.models.insert(name.clone(), price.clone());
        }
    }

    /// The built-in table with the chat models of a LiteLLM
    /// `model_prices_and_context_window.json` on top (per-token costs become per-1M).
    pub fn from_litellm_json(text: &str) -> crate::Result<Self> {
        let doc: Value =
            serde_json::from_str(text).map_err(|e| prices_error(format!("not valid JSON: {e}")))?;
        let Value::Object(entries) = doc else {
            return Err(prices_error("expected a JSON object keyed by model name"));
        };
        let mut overrides = BTreeMap::new();
        for (name, entry) in &entries {
            // `sample_spec` documents the format; it is not a model.
            if name == "sample_spec" {
                continue;
            }
            let per_million = |key: &str| {
                entry
                    .get(key)
                    .and_then(Value::as_f64)
                    .map(|per_token| (per_token * 1e12).round() / 1e6)
            };
            let (Some(input), Some(output)) = (
                per_million("input_cost_per_token"),
                per_million("output_cost_per_token"),
            ) else {
                continue; // image, audio or embedding-only entries
            };
            let price = ModelPrice {
                input,
                output,
                cached_input: per_million("cache_read_input_token_cost"),
                cache_write: per_million("cache_creation_input_token_cost"),
            };
            // LiteLLM keys some models as `provider/model`; agents send the bare name.
            if let Some((_, bare)) = name.split_once('/') {
                if !entries.contains_key(bare) {
                    overrides.insert(bare.to_string(), price.clone());
                }
            }
            overrides.insert(name.clone(), price);
        }
        if overrides.is_empty() {
            return Err(prices_error(
                "no entry has input_cost_per_token and output_cost_per_token",
            ));
        }
        let mut table = Self::builtin();
        table.apply(&overrides);
        Ok(table)
    }

    /// The number of priced models.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether no model is priced.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// Finds a model's price: exact name, then without a `provider/` prefix,
    /// then without a date suffix (`gpt-4o-2024-08-06` → `gpt-4o`), then the
    /// longest table name it extends at a `-` boundary (`gemini-2.5-flash-preview-05-20`).
    /// Returns the table's name for it with the price.
    pub fn lookup(&self, model: &str) -> Option<(&str, &ModelPrice)> {
        let exact = |name: &str| {
            self.models
                .get_key_value(name)
                .map(|(k, v)| (k.as_str(), v))
        };
        if let Some(hit) = exact(model) {
            return Some(hit);
        }
        let lower = model.trim().to_ascii_lowercase();
        let bare = lower.rsplit('/').next().unwrap_or(&lower);
        if let Some(hit) = exact(bare) {
            return Some(hit);
        }
        let undated = strip_date_suffix(bare);
        if let Some(hit) = exact(undated) {
            return Some(hit);
        }
        self.models
            .iter()
            .filter(|(name, _)| {
                undated.len() > name.len()
                    && undated.starts_with(name.as_str())
                    && undated.as_bytes().get(name.len()) == Some(&b'-')
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(k, v)| (k.as_str(), v))
    }

    /// The USD cost of `usage` under `price`: uncached input, cache reads, cache
    /// writes and output each at their own rate.
    pub fn cost(price: &ModelPrice, usage: &Usage) -> f64 {
        let uncached = usage
            .input_tokens
            .saturating_sub(usage.cached_input_tokens)
            .saturating_sub(usage.cache_write_tokens);
        let dollars = uncached as f64 * price.input
            + usage.cached_input_tokens as f64 * price.cached_input.unwrap_or(price.input)
            + usage.cache_write_tokens as f64 * price.cache_write.unwrap_or(price.input)
            + usage.output_tokens as f64 * price.output;
        dollars / 1_000_000.0
    }
}

/// A prices-file error with the hint that says what the format is.
fn prices_error(message: impl Into<String>) -> crate::Error {
    crate::Error::other(
        format!("prices file: {}", message.into()),
        Some("--prices takes LiteLLM's model_prices_and_context_window.json format: {\"model\": {\"input_cost_per_token\": …, \"output_cost_per_token\": …}}".into()),
    )
}

/// Drops a trailing release date: `-2024-08-06`, `-20250929`, or `-latest`.
fn strip_date_suffix(model: &str) -> &str {
    if let Some(stem) = model.strip_suffix("-latest") {
        return stem;
    }
    let bytes = model.as_bytes();
    let is_digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    // -YYYYMMDD
    if bytes.len() > 9 {
        let (stem, tail) = bytes.split_at(bytes.len() - 9);
        if tail.first() == Some(&b'-') && is_digits(&tail[1..]) && !stem.is_empty() {
            return &model[..stem.len()];
        }
    }
    // -YYYY-MM-DD
    if bytes.len() > 11 {
        let (stem, tail) = bytes.split_at(bytes.len() - 11);
        let parts: Vec<&[u8]> = tail.split(|&b| b == b'-').collect();
        if parts.len() == 4
            && parts.first().is_some_and(|p| p.is_empty())
            && parts.iter().skip(1).all(|p| is_digits(p))
            && !stem.is_empty()
        {
            return &model[..stem.len()];
        }
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_exact_dated_and_prefixed() {
        let t = PriceTable::builtin();
        assert_eq!(t.lookup("gpt-4o").map(|h| h.0), Some("gpt-4o"));
        assert_eq!(t.lookup("gpt-4o-2024-08-06").map(|h| h.0), Some("gpt-4o"));
        assert_eq!(
            t.lookup("gpt-4o-mini-2024-07-18").map(|h| h.0),
            Some("gpt-4o-mini")
        );
        assert_eq!(
            t.lookup("claude-sonnet-4-5-20250929").map(|h| h.0),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            t.lookup("claude-sonnet-4-20250514").map(|h| h.0),
            Some("claude-sonnet-4")
        );
        assert_eq!(
            t.lookup("models/gemini-2.5-flash").map(|h| h.0),
            Some("gemini-2.5-flash")
        );
        assert_eq!(
            t.lookup("gemini-2.5-flash-preview-05-20").map(|h| h.0),
            Some("gemini-2.5-flash")
        );
        assert_eq!(
            t.lookup("gemini-2.5-flash-lite").map(|h| h.0),
            Some("gemini-2.5-flash-lite")
        );
        assert_eq!(t.lookup("gpt-4.1-nano").map(|h| h.0), Some("gpt-4.1-nano"));
        assert_eq!(t.lookup("my-finetune"), None);
        assert_eq!(t.lookup(""), None);
        // A name that merely starts with a table name, without a boundary, is not it.
        assert_eq!(t.lookup("o3x"), None);
    }

    #[test]
    fn overrides_win() {
        let mut o = BTreeMap::new();
        o.insert(
            "gpt-4o".to_string(),
            ModelPrice {
                input: 1.0,
                output: 2.0,
                cached_input: None,
                cache_write: None,
            },
        );
        let t = PriceTable::with_overrides(&o);
        assert_eq!(t.lookup("gpt-4o-2024-08-06").map(|h| h.1.input), Some(1.0));
    }

    #[test]
    fn litellm_format() {
        let text = r#"{
          "sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0},
          "my-model": {"input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05,
                       "cache_read_input_token_cost": 1.25e-06, "litellm_provider": "openai", "mode": "chat"},
          "gemini/other-model": {"input_cost_per_token": 3e-07, "output_cost_per_token": 2.5e-06},
          "dall-e-3": {"output_cost_per_pixel": 1e-07}
        }"#;
        let t = PriceTable::from_litellm_json(text).unwrap();
        let (_, p) = t.lookup("my-model").unwrap();
        assert_eq!((p.input, p.output, p.cached_input), (2.5, 10.0, Some(1.25)));
        assert_eq!(t.lookup("other-model").map(|h| h.1.input), Some(0.3));
        assert!(t.lookup("gpt-4o").is_some(), "built-ins stay");
        assert!(PriceTable::from_litellm_json("[1]").is_err());
        assert!(PriceTable::from_litellm_json("{").is_err());
        assert!(PriceTable::from_litellm_json("{}").is_err());
    }

    #[test]
    fn cost_splits_cached_and_written_input() {
        let p = ModelPrice {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
            cache_write: Some(3.75),
        };
        let u = Usage {
            input_tokens: 10_000,
            cached_input_tokens: 6_000,
            cache_write_tokens: 1_000,
            output_tokens: 500,
            reasoning_tokens: 0,
        };
        // 3000*3 + 6000*0.3 + 1000*3.75 + 500*15 = 9000+1800+3750+7500 = 22050 / 1e6
        assert!((PriceTable::cost(&p, &u) - 0.02205).abs() < 1e-12);
    }
}
