//! Statistics over repeated trials of a case: pass@k, pass^k, Wilson interval.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Pass statistics of one case over n trials with c passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrialStats {
    /// Trials that passed (pass or warn): c.
    pub passed: u32,
    /// Trials run: n.
    pub total: u32,
    /// c / n.
    pub pass_rate: f64,
    /// `pass_at_k[k-1]` for k = 1..=n: the chance that at least one of k trials
    /// drawn without replacement passes, 1 − C(n−c,k)/C(n,k).
    pub pass_at_k: Vec<f64>,
    /// `pass_pow_k[k-1]` for k = 1..=n: the chance that all k drawn trials pass, C(c,k)/C(n,k).
    pub pass_pow_k: Vec<f64>,
    /// Lower end of the Wilson 95% interval of the pass rate.
    pub wilson_low: f64,
    /// Upper end of the Wilson 95% interval of the pass rate.
    pub wilson_high: f64,
    /// Some but not all trials passed (0 < c < n).
    pub flaky: bool,
}

/// C(n, k) as f64 (exact for the small n of trials).
fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

impl TrialStats {
    /// Statistics for `passed` of `total` trials.
    pub fn new(passed: u32, total: u32) -> TrialStats {
        let n = total.max(1);
        let c = passed.min(n);
        let (wilson_low, wilson_high) = wilson(c, n);
        TrialStats {
            passed: c,
            total: n,
            pass_rate: f64::from(c) / f64::from(n),
            pass_at_k: (1..=n)
                .map(|k| 1.0 - choose(n - c, k) / choose(n, k))
                .collect(),
            pass_pow_k: (1..=n).map(|k| choose(c, k) / choose(n, k)).collect(),
            wilson_low,
            wilson_high,
            flaky: c > 0 && c < n,
        }
    }

    /// pass@k (k clamped to 1..=n).
    pub fn pass_at(&self, k: u32) -> f64 {
        self.pass_at_k[(k.clamp(1, self.total) - 1) as usize]
    }

    /// pass^k (k clamped to 1..=n).
    pub fn pass_pow(&self, k: u32) -> f64 {
        self.pass_pow_k[(k.clamp(1, self.total) - 1) as usize]
    }
}

/// Wilson score interval at 95% (z = 1.96).
fn wilson(c: u32, n: u32) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let n = f64::from(n);
    let p = f64::from(c) / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt()) / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_values() {
        // n = 5, c = 3: pass@2 = 1 − C(2,2)/C(5,2) = 0.9; pass^2 = C(3,2)/C(5,2) = 0.3.
        let s = TrialStats::new(3, 5);
        assert!((s.pass_at(1) - 0.6).abs() < 1e-12);
        assert!((s.pass_at(2) - 0.9).abs() < 1e-12);
        assert!((s.pass_pow(2) - 0.3).abs() < 1e-12);
        assert!((s.pass_at(3) - 1.0).abs() < 1e-12, "only two can fail");
        assert!(s.pass_pow(4).abs() < 1e-12, "only three pass");
        assert!(s.flaky);
        // Wilson 95% for 3/5: [0.2307, 0.8824].
        assert!((s.wilson_low - 0.2307).abs() < 1e-3, "{}", s.wilson_low);
        assert!((s.wilson_high - 0.8824).abs() < 1e-3, "{}", s.wilson_high);
    }

    #[test]
    fn all_or_nothing_is_not_flaky() {
        let all = TrialStats::new(4, 4);
        assert_eq!(
            (all.pass_at(4), all.pass_pow(4), all.flaky),
            (1.0, 1.0, false)
        );
        let none = TrialStats::new(0, 4);
        assert_eq!(
            (none.pass_at(1), none.pass_pow(1), none.flaky),
            (0.0, 0.0, false)
        );
    }
}
