//! Statistics over repeated trials of a case: pass@k, pass^k, Wilson interval.

use serde::{Deserialize, Serialize};

/// Pass statistics of one case over n trials with c passes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrialStats {
    /// Trials that passed (pass or warn).
    pub passed: u32,
    /// Trials run.
    pub trials: u32,
    /// c / n.
    pub pass_rate: f64,
    /// Probability that at least one of k samples passes: 1 − C(n−c,k)/C(n,k).
    pub pass_at_k: f64,
    /// Probability that all of k samples pass: C(c,k)/C(n,k).
    pub pass_pow_k: f64,
    /// The k used (n by default).
    pub k: u32,
    /// Wilson 95% interval of the pass rate.
    pub wilson_low: f64,
    /// Upper end of the Wilson interval.
    pub wilson_high: f64,
    /// 0 < c < n.
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
    /// Statistics for `passed` of `trials`, with pass@k and pass^k at `k` (clamped to 1..=n).
    pub fn new(passed: u32, trials: u32, k: u32) -> TrialStats {
        let n = trials.max(1);
        let c = passed.min(n);
        let k = k.clamp(1, n);
        let total = choose(n, k);
        let pass_at_k = 1.0 - choose(n - c, k) / total;
        let pass_pow_k = choose(c, k) / total;
        let (wilson_low, wilson_high) = wilson(c, n);
        TrialStats {
            passed: c,
            trials: n,
            pass_rate: f64::from(c) / f64::from(n),
            pass_at_k,
            pass_pow_k,
            k,
            wilson_low,
            wilson_high,
            flaky: c > 0 && c < n,
        }
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
        // n = 5, c = 3, k = 2: pass@2 = 1 − C(2,2)/C(5,2) = 0.9; pass^2 = C(3,2)/C(5,2) = 0.3.
        let s = TrialStats::new(3, 5, 2);
        assert!((s.pass_at_k - 0.9).abs() < 1e-12);
        assert!((s.pass_pow_k - 0.3).abs() < 1e-12);
        assert!(s.flaky);
        assert!((s.pass_rate - 0.6).abs() < 1e-12);
        // Wilson 95% for 3/5: [0.2307, 0.8824].
        assert!((s.wilson_low - 0.2307).abs() < 1e-3, "{}", s.wilson_low);
        assert!((s.wilson_high - 0.8824).abs() < 1e-3, "{}", s.wilson_high);
    }

    #[test]
    fn all_or_nothing_is_not_flaky() {
        let all = TrialStats::new(4, 4, 4);
        assert_eq!(
            (all.pass_at_k, all.pass_pow_k, all.flaky),
            (1.0, 1.0, false)
        );
        let none = TrialStats::new(0, 4, 1);
        assert_eq!(
            (none.pass_at_k, none.pass_pow_k, none.flaky),
            (0.0, 0.0, false)
        );
    }
}
