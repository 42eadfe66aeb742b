//! The LLM judge: builds the prompt for each judged check, asks one model (or
//! an ensemble), parses the verdict (one retry on an unparseable reply), maps the
//! threshold to the 1–5 scale and combines votes. Verdicts are cached per case
//! next to the cassettes. Every judge failure is an infrastructure error
//! ([`Error::Judge`], exit 2), never a correctness failure.

pub mod cache;
pub mod client;
pub mod prompt;
pub mod verdict;

use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::engine::correctness::{JudgedCheck, JudgedKind};
use crate::engine::result::{JudgeOutcome, JudgeUsage, JudgeVote, Verdict, VerdictLabel};
use crate::error::{Error, Result};
use crate::spec::JudgeConfig;
use crate::trace::Trace;

pub use cache::{CacheEntry, CacheKey, CaseCache};
pub use client::{Endpoints, JudgeClient, JudgeProvider, provider_for};

/// Prices a judge call: `(model, input_tokens, output_tokens) → USD`, `None` when unpriced.
/// The runner wires the trace price table in, so prices live in one place.
pub type PriceFn = Arc<dyn Fn(&str, u64, u64) -> Option<f64> + Send + Sync>;

/// A rubric threshold t ∈ [0,1] on the 1–5 scale: `floor(t·5 + 0.5)` clamped to 1..5.
pub fn threshold_score(threshold: f64) -> u8 {
    let mapped = (threshold * 5.0 + 0.5).floor();
    if mapped.is_nan() {
        return 5;
    }
    mapped.clamp(1.0, 5.0) as u8
}

/// A stable position of `case_id` in [0, 1): the first 8 bytes of its SHA-256.
pub fn case_fraction(case_id: &str) -> f64 {
    let digest = Sha256::digest(case_id.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(bytes) as f64 / (u64::MAX as f64 + 1.0)
}

/// Whether `--sample-ensemble FRACTION` selects this case (deterministic per case id).
pub fn in_ensemble_sample(case_id: &str, fraction: f64) -> bool {
    case_fraction(case_id) < fraction
}

/// Combines votes: the plurality label (ties go to the more cautious label:
/// fail, then borderline, then pass), the mean score, and pass when that label
/// is not `fail` and the mean reaches the threshold score.
pub fn combine(verdicts: &[&Verdict], threshold_score: u8) -> (VerdictLabel, f64, bool) {
    if verdicts.is_empty() {
        return (VerdictLabel::Fail, 0.0, false);
    }
    let count = |l: VerdictLabel| verdicts.iter().filter(|v| v.label == l).count();
    let label = [
        VerdictLabel::Fail,
        VerdictLabel::Borderline,
        VerdictLabel::Pass,
    ]
    .into_iter()
    .max_by_key(|l| {
        // Equal counts are broken by caution, so a tie never passes a case.
        let caution = match l {
            VerdictLabel::Fail => 2,
            VerdictLabel::Borderline => 1,
            VerdictLabel::Pass => 0,
        };
        (count(*l), caution)
    })
    .unwrap_or(VerdictLabel::Fail);
    let mean = verdicts.iter().map(|v| f64::from(v.score)).sum::<f64>() / verdicts.len() as f64;
    let passed = label != VerdictLabel::Fail && mean + 1e-9 >= f64::from(threshold_score);
    (label, mean, passed)
}

/// How the judge runs.
#[derive(Clone, Default)]
pub struct JudgeOptions {
    /// Provider URLs, keys and extra CAs.
    pub endpoints: Endpoints,
    /// `cassettes/<agent>`: where verdict caches live; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// `--sample-ensemble`: run the ensemble on this fraction of the cases only.
    pub sample_ensemble: Option<f64>,
    /// Prices judge calls; unpriced calls cost 0.
    pub price: Option<PriceFn>,
}

impl std::fmt::Debug for JudgeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeOptions")
            .field("cache_dir", &self.cache_dir)
            .field("sample_ensemble", &self.sample_ensemble)
            .finish_non_exhaustive()
    }
}

/// The judge. The provider client is built on first use, so a run served
/// entirely from the cache needs no key and opens no connection.
#[derive(Debug)]
pub struct Judge {
    config: JudgeConfig,
    options: JudgeOptions,
    client: OnceCell<JudgeClient>,
}

/// What one judged check needs from the case.
#[derive(Debug, Clone, Copy)]
pub struct JudgeInput<'a> {
    /// The case id (cache file name, ensemble sampling).
    pub case_id: &'a str,
    /// The query given to the agent.
    pub query: &'a str,
    /// The trace (answer and tool results).
    pub trace: &'a Trace,
}

impl Judge {
    /// A judge with `config` (from the spec's `judge_config`) and `options`.
    pub fn new(config: JudgeConfig, options: JudgeOptions) -> Judge {
        Judge {
            config,
            options,
            client: OnceCell::new(),
        }
    }

    /// The judge models for a check: the ensemble when enabled and the case is
    /// sampled (and the rubric names no model of its own), else one model.
    pub fn models_for(&self, case_id: &str, rubric_model: Option<&str>) -> (Vec<String>, bool) {
        if let Some(model) = rubric_model {
            return (vec![model.to_string()], false);
        }
        if let Some(ensemble) = self.config.ensemble.as_ref().filter(|e| e.enabled) {
            let sampled = self
                .options
                .sample_ensemble
                .is_none_or(|f| in_ensemble_sample(case_id, f));
            if sampled && !ensemble.models.is_empty() {
                return (ensemble.models.clone(), true);
            }
        }
        (vec![self.config.model.clone()], false)
    }

    /// Judges every check of a case in order, with one cache file per case.
    pub async fn judge_case(
        &self,
        input: JudgeInput<'_>,
        checks: &[JudgedCheck<'_>],
    ) -> Result<(Vec<JudgeOutcome>, JudgeUsage)> {
        let mut cache = match &self.options.cache_dir {
            Some(dir) => Some(CaseCache::load(CaseCache::path_for(dir, input.case_id)?)?),
            None => None,
        };
        let mut usage = JudgeUsage::default();
        let mut outcomes = Vec::with_capacity(checks.len());
        for check in checks {
            outcomes.push(
                self.judge_check(input, check, cache.as_mut(), &mut usage)
                    .await?,
            );
        }
        Ok((outcomes, usage))
    }

    async fn judge_check(
        &self,
        input: JudgeInput<'_>,
        check: &JudgedCheck<'_>,
        mut cache: Option<&mut CaseCache>,
        usage: &mut JudgeUsage,
    ) -> Result<JudgeOutcome> {
        let name = check.name();
        let rubric = prompt::resolve(check.rubric, &name, check.kind == JudgedKind::Hallucination)?;
        let answer = input.trace.answer.as_deref().unwrap_or("");
        let context = rubric
            .uses_context
            .then(|| prompt::tool_context(input.trace));
        let built = prompt::build(&rubric, input.query, answer, context.as_deref());
        let rubric_hash = prompt::rubric_hash(&rubric, input.query, self.config.temperature);
        let answer_hash = prompt::sha256(answer);
        let context_hash = prompt::sha256(context.as_deref().unwrap_or(""));
        let (models, ensemble) = self.models_for(input.case_id, check.rubric.model.as_deref());

        let mut votes = Vec::with_capacity(models.len());
        for (sample, model) in models.iter().enumerate() {
            let key = CacheKey {
                model: model.clone(),
                rubric_hash: rubric_hash.clone(),
                answer_hash: answer_hash.clone(),
                context_hash: context_hash.clone(),
                sample,
            };
            if let Some(hit) = cache.as_deref().and_then(|c| c.get(&key)) {
                usage.cache_hits += 1;
                votes.push(JudgeVote {
                    model: model.clone(),
                    sample,
                    verdict: hit.verdict.clone(),
                    cached: true,
                });
                continue;
            }
            let (verdict, input_tokens, output_tokens) =
                self.ask(model, &built, &name, usage).await?;
            if let Some(cache) = cache.as_deref_mut() {
                cache.append(CacheEntry {
                    key,
                    check: name.clone(),
                    verdict: verdict.clone(),
                    input_tokens,
                    output_tokens,
                })?;
            }
            votes.push(JudgeVote {
                model: model.clone(),
                sample,
                verdict,
                cached: false,
            });
        }

        let threshold = threshold_score(check.rubric.threshold);
        let verdicts: Vec<&Verdict> = votes.iter().map(|v| &v.verdict).collect();
        let (label, score, passed) = if ensemble {
            combine(&verdicts, threshold)
        } else {
            // A single judge passes on its score alone (REFERENCE.md section 4).
            let v = verdicts.first().copied();
            let score = v.map_or(0, |v| v.score);
            (
                v.map_or(VerdictLabel::Fail, |v| v.label),
                f64::from(score),
                score >= threshold,
            )
        };
        Ok(JudgeOutcome {
            check: name,
            template: rubric.template,
            threshold: check.rubric.threshold,
            threshold_score: threshold,
            score,
            label,
            passed,
            ensemble,
            votes,
        })
    }

    /// Asks one model; an unparseable reply gets one corrective retry, then it is an infra error.
    async fn ask(
        &self,
        model: &str,
        built: &prompt::Prompt,
        check: &str,
        usage: &mut JudgeUsage,
    ) -> Result<(Verdict, u64, u64)> {
        let client = self
            .client
            .get_or_try_init(|| async { JudgeClient::new(self.options.endpoints.clone()) })
            .await?;
        let mut turns = vec![client::Turn {
            role: "user",
            content: built.user.clone(),
        }];
        let (mut input_tokens, mut output_tokens) = (0, 0);
        for attempt in 0..2 {
            let completion = client
                .complete(&client::CompletionRequest {
                    model,
                    temperature: self.config.temperature,
                    structured: self.config.structured_output,
                    system: &built.system,
                    turns: &turns,
                })
                .await?;
            usage.calls += 1;
            usage.input_tokens += completion.input_tokens;
            usage.output_tokens += completion.output_tokens;
            if let Some(price) = &self.options.price {
                usage.cost_usd +=
                    price(model, completion.input_tokens, completion.output_tokens).unwrap_or(0.0);
            }
            input_tokens += completion.input_tokens;
            output_tokens += completion.output_tokens;
            match verdict::parse(&completion.text) {
                Ok(v) => return Ok((v, input_tokens, output_tokens)),
                Err(reason) if attempt == 0 => {
                    turns.push(client::Turn {
                        role: "assistant",
                        content: completion.text,
                    });
                    turns.push(client::Turn {
                        role: "user",
                        content: format!(
                            "That reply was not a valid verdict ({reason}). Reply with only the JSON object \
                             {{\"rationale\": \"...\", \"score\": 1-5, \"label\": \"pass|fail|borderline\"}}."
                        ),
                    });
                }
                Err(reason) => {
                    return Err(Error::Judge(format!(
                        "{check}: {model} returned no parseable verdict after one retry ({reason}); last reply: {:?}",
                        completion.text.chars().take(200).collect::<String>()
                    )));
                }
            }
        }
        Err(Error::Judge(format!("{check}: {model}: no verdict")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(score: u8, label: VerdictLabel) -> Verdict {
        Verdict {
            rationale: String::new(),
            score,
            label,
        }
    }

    #[test]
    fn threshold_mapping_matches_the_reference_table() {
        let table = [(0.0, 1), (0.2, 1), (0.5, 3), (0.7, 4), (0.8, 4), (1.0, 5)];
        for (t, s) in table {
            assert_eq!(threshold_score(t), s, "t = {t}");
        }
        assert_eq!(threshold_score(-3.0), 1);
        assert_eq!(threshold_score(9.0), 5);
        assert_eq!(threshold_score(f64::NAN), 5);
    }

    #[test]
    fn ensemble_majority_and_mean() {
        use VerdictLabel::*;
        let (a, b, c) = (v(5, Pass), v(4, Pass), v(2, Fail));
        assert_eq!(combine(&[&a, &b, &c], 4), (Pass, 11.0 / 3.0, false));
        assert_eq!(combine(&[&a, &b, &c], 3), (Pass, 11.0 / 3.0, true));
        let (d, e) = (v(1, Fail), v(5, Pass));
        // A tie goes to the cautious label.
        assert_eq!(combine(&[&d, &e], 3).0, Fail);
        let f = v(3, Borderline);
        assert_eq!(combine(&[&e, &f], 1), (Borderline, 4.0, true));
        assert_eq!(combine(&[], 1), (Fail, 0.0, false));
    }

    #[test]
    fn sampling_is_deterministic_and_roughly_proportional() {
        assert_eq!(case_fraction("weather-oos"), case_fraction("weather-oos"));
        assert!(!in_ensemble_sample("x", 0.0));
        assert!(in_ensemble_sample("x", 1.0));
        let picked = (0..1000)
            .filter(|i| in_ensemble_sample(&format!("case-{i}"), 0.2))
            .count();
        assert!((150..250).contains(&picked), "{picked}");
    }

    #[test]
    fn models_for_respects_override_ensemble_and_sampling() {
        let config = JudgeConfig {
            ensemble: Some(crate::spec::Ensemble {
                enabled: true,
                models: vec!["a".into(), "b".into(), "b".into()],
                strategy: Default::default(),
            }),
            ..JudgeConfig::default()
        };
        let judge = Judge::new(config.clone(), JudgeOptions::default());
        assert_eq!(
            judge.models_for("c", None),
            (vec!["a".into(), "b".into(), "b".into()], true)
        );
        assert_eq!(judge.models_for("c", Some("m")), (vec!["m".into()], false));
        let sampled = Judge::new(
            config,
            JudgeOptions {
                sample_ensemble: Some(0.0),
                ..JudgeOptions::default()
            },
        );
        assert_eq!(
            sampled.models_for("c", None),
            (vec!["claude-sonnet-4-5".into()], false)
        );
    }
}
