//! Pure metric functions of REFERENCE.md section 3. No I/O, no allocation beyond
//! what the formula needs, generic over the item type so property tests can use
//! small alphabets. Every edge case is documented in `docs/metrics.md`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use crate::spec::MatchMode;

/// `|E ∩ U| / |E|` over the sets of expected and used tools; 1.0 when `E` is empty.
pub fn tool_recall<T: Ord>(expected: &[T], used: &[T]) -> f64 {
    let e: BTreeSet<&T> = expected.iter().collect();
    if e.is_empty() {
        return 1.0;
    }
    let u: BTreeSet<&T> = used.iter().collect();
    e.intersection(&u).count() as f64 / e.len() as f64
}

/// `|E ∩ U| / |U|` over the sets; when `U` is empty, 1.0 if `E` is empty too, else 0.0.
pub fn tool_precision<T: Ord>(expected: &[T], used: &[T]) -> f64 {
    let e: BTreeSet<&T> = expected.iter().collect();
    let u: BTreeSet<&T> = used.iter().collect();
    if u.is_empty() {
        return if e.is_empty() { 1.0 } else { 0.0 };
    }
    e.intersection(&u).count() as f64 / u.len() as f64
}

/// The harmonic mean `2·P·R / (P + R)`; 0.0 when `P + R = 0`.
pub fn f1(precision: f64, recall: f64) -> f64 {
    let sum = precision + recall;
    if sum <= 0.0 {
        0.0
    } else {
        2.0 * precision * recall / sum
    }
}

/// Length of the longest common subsequence (two-row dynamic programme, O(|a|·|b|)).
pub fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    // Iterate over the shorter sequence in the inner loop so the rows stay small.
    let (outer, inner) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut prev = vec![0usize; inner.len() + 1];
    let mut cur = vec![0usize; inner.len() + 1];
    for x in outer {
        for (j, y) in inner.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[inner.len()]
}

/// Normalized LCS `2·|LCS(P,R)| / (|P| + |R|)`; both empty → 1.0, one empty → 0.0.
pub fn sequence_lcs<T: PartialEq>(p: &[T], r: &[T]) -> f64 {
    match (p.is_empty(), r.is_empty()) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        _ => 2.0 * lcs_len(p, r) as f64 / (p.len() + r.len()) as f64,
    }
}

/// Levenshtein distance over items (insert, delete, substitute, each cost 1).
pub fn levenshtein<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let (outer, inner) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut prev: Vec<usize> = (0..=inner.len()).collect();
    let mut cur = vec![0usize; inner.len() + 1];
    for (i, x) in outer.iter().enumerate() {
        cur[0] = i + 1;
        for (j, y) in inner.iter().enumerate() {
            let substitute = prev[j] + usize::from(x != y);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[inner.len()]
}

/// Edit similarity `1 − Levenshtein(P,R) / max(|P|,|R|)`; both empty → 1.0, one empty → 0.0.
pub fn sequence_edit<T: PartialEq>(p: &[T], r: &[T]) -> f64 {
    match (p.is_empty(), r.is_empty()) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        _ => 1.0 - levenshtein(p, r) as f64 / p.len().max(r.len()) as f64,
    }
}

/// The number of `i` with `P[i] == P[i−1]` (`[a, a, b, b, b]` → 3).
pub fn loop_count<T: PartialEq>(p: &[T]) -> usize {
    p.windows(2).filter(|w| w[0] == w[1]).count()
}

/// Whether `p` (used) matches `r` (reference) under `mode`: strict equality, the
/// same multiset, every tool of `r` in `p` (subset), or every tool of `p` in `r` (superset).
pub fn matches_mode<T: Ord>(mode: MatchMode, p: &[T], r: &[T]) -> bool {
    match mode {
        MatchMode::Strict => p == r,
        MatchMode::Unordered => p.len() == r.len() && multiset(p) == multiset(r),
        MatchMode::Subset => {
            let used: BTreeSet<&T> = p.iter().collect();
            r.iter().all(|t| used.contains(t))
        }
        MatchMode::Superset => {
            let reference: BTreeSet<&T> = r.iter().collect();
            p.iter().all(|t| reference.contains(t))
        }
    }
}

fn multiset<T: Ord>(items: &[T]) -> BTreeMap<&T, usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_insert(0) += 1;
    }
    counts
}

/// The path figures measured for one trace (optionally against a baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathMetrics {
    /// `tool_recall` against the expected tools.
    pub tool_recall: f64,
    /// `tool_precision` against the expected tools.
    pub tool_precision: f64,
    /// F1 of the two.
    pub tool_f1: f64,
    /// Immediate repeats in the tool sequence.
    pub loop_count: usize,
    /// Normalized LCS against the baseline sequence, when there is a baseline.
    pub sequence_lcs: Option<f64>,
    /// Edit similarity against the baseline sequence, when there is a baseline.
    pub sequence_edit: Option<f64>,
}

/// Computes every path figure at once.
pub fn path_metrics<T: Ord>(expected: &[T], used: &[T], baseline: Option<&[T]>) -> PathMetrics {
    let recall = tool_recall(expected, used);
    let precision = tool_precision(expected, used);
    PathMetrics {
        tool_recall: recall,
        tool_precision: precision,
        tool_f1: f1(precision, recall),
        loop_count: loop_count(used),
        sequence_lcs: baseline.map(|r| sequence_lcs(used, r)),
        sequence_edit: baseline.map(|r| sequence_edit(used, r)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const E: [&str; 0] = [];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn recall_empty_expected_is_one() {
        assert_eq!(tool_recall(&E, &["search"]), 1.0);
        assert_eq!(tool_recall(&E, &E), 1.0);
    }

    #[test]
    fn recall_counts_sets_not_calls() {
        assert_eq!(tool_recall(&["a", "b"], &["a", "a", "a"]), 0.5);
        assert_eq!(tool_recall(&["a", "a"], &["a"]), 1.0);
    }

    #[test]
    fn recall_nothing_used_is_zero() {
        assert_eq!(tool_recall(&["a"], &E), 0.0);
    }

    #[test]
    fn precision_empty_used() {
        assert_eq!(tool_precision(&E, &E), 1.0);
        assert_eq!(tool_precision(&["a"], &E), 0.0);
    }

    #[test]
    fn precision_with_extras_and_duplicates() {
        assert_eq!(tool_precision(&["a"], &["a", "b", "b"]), 0.5);
        assert_eq!(tool_precision(&E, &["a"]), 0.0);
    }

    #[test]
    fn f1_zero_when_both_zero_and_harmonic_otherwise() {
        assert_eq!(f1(0.0, 0.0), 0.0);
        assert_eq!(f1(1.0, 1.0), 1.0);
        assert!(close(f1(0.5, 1.0), 2.0 / 3.0));
    }

    #[test]
    fn lcs_reference_example() {
        let p = ["search", "rerank", "generate"];
        let r = ["search", "generate"];
        assert_eq!(lcs_len(&p, &r), 2);
        assert!(close(sequence_lcs(&p, &r), 0.8));
    }

    #[test]
    fn lcs_empty_cases() {
        assert_eq!(sequence_lcs(&E, &E), 1.0);
        assert_eq!(sequence_lcs(&["a"], &E), 0.0);
        assert_eq!(sequence_lcs(&E, &["a"]), 0.0);
    }

    #[test]
    fn lcs_single_items() {
        assert_eq!(sequence_lcs(&["a"], &["a"]), 1.0);
        assert_eq!(sequence_lcs(&["a"], &["b"]), 0.0);
    }

    #[test]
    fn lcs_reversed_sequence() {
        let p = ["a", "b", "c", "d"];
        let r = ["d", "c", "b", "a"];
        assert_eq!(lcs_len(&p, &r), 1);
        assert!(close(sequence_lcs(&p, &r), 0.25));
    }

    #[test]
    fn lcs_duplicates() {
        let p = ["a", "a", "a"];
        let r = ["a"];
        assert_eq!(lcs_len(&p, &r), 1);
        assert!(close(sequence_lcs(&p, &r), 0.5));
    }

    #[test]
    fn edit_empty_cases() {
        assert_eq!(sequence_edit(&E, &E), 1.0);
        assert_eq!(sequence_edit(&["a"], &E), 0.0);
        assert_eq!(sequence_edit(&E, &["a", "b"]), 0.0);
    }

    #[test]
    fn edit_reference_example_and_single() {
        let p = ["search", "rerank", "generate"];
        let r = ["search", "generate"];
        assert_eq!(levenshtein(&p, &r), 1);
        assert!(close(sequence_edit(&p, &r), 1.0 - 1.0 / 3.0));
        assert_eq!(sequence_edit(&["a"], &["b"]), 0.0);
        assert_eq!(sequence_edit(&["a"], &["a"]), 1.0);
    }

    #[test]
    fn edit_reversed_and_duplicates() {
        // abcd → dcba: 4 substitutions would do, but keeping b/c aligned costs 4 too.
        assert_eq!(levenshtein(&["a", "b", "c", "d"], &["d", "c", "b", "a"]), 4);
        assert_eq!(levenshtein(&["a", "b"], &["b", "a"]), 2);
        assert_eq!(levenshtein(&["a", "a", "a"], &["a"]), 2);
        assert!(close(sequence_edit(&["a", "a", "a"], &["a"]), 1.0 / 3.0));
    }

    #[test]
    fn loop_count_reference_example() {
        let p = ["search", "search", "grade", "grade", "grade"];
        assert_eq!(loop_count(&p), 3);
    }

    #[test]
    fn loop_count_edges() {
        assert_eq!(loop_count(&E), 0);
        assert_eq!(loop_count(&["a"]), 0);
        assert_eq!(loop_count(&["a", "b", "a"]), 0);
    }

    #[test]
    fn strict_mode() {
        assert!(matches_mode(MatchMode::Strict, &["a", "b"], &["a", "b"]));
        assert!(!matches_mode(MatchMode::Strict, &["b", "a"], &["a", "b"]));
        assert!(matches_mode(MatchMode::Strict, &E, &E));
    }

    #[test]
    fn unordered_mode_counts_duplicates() {
        assert!(matches_mode(MatchMode::Unordered, &["b", "a"], &["a", "b"]));
        assert!(!matches_mode(
            MatchMode::Unordered,
            &["a", "a", "b"],
            &["a", "b", "b"]
        ));
        assert!(!matches_mode(MatchMode::Unordered, &["a", "a"], &["a"]));
        assert!(matches_mode(MatchMode::Unordered, &E, &E));
    }

    #[test]
    fn subset_mode_allows_extras() {
        assert!(matches_mode(
            MatchMode::Subset,
            &["search", "rerank", "generate"],
            &["search", "generate"]
        ));
        assert!(!matches_mode(
            MatchMode::Subset,
            &["search"],
            &["search", "generate"]
        ));
        assert!(matches_mode(MatchMode::Subset, &["a"], &E));
        assert!(!matches_mode(MatchMode::Subset, &E, &["a"]));
    }

    #[test]
    fn superset_mode_forbids_extras() {
        assert!(matches_mode(
            MatchMode::Superset,
            &["search"],
            &["search", "generate"]
        ));
        assert!(!matches_mode(
            MatchMode::Superset,
            &["search", "rerank"],
            &["search", "generate"]
        ));
        assert!(matches_mode(MatchMode::Superset, &E, &["a"]));
        assert!(!matches_mode(MatchMode::Superset, &["a"], &E));
    }

    #[test]
    fn path_metrics_without_baseline_has_no_similarity() {
        let m = path_metrics(&["a"], &["a", "a"], None);
        assert_eq!(m.tool_recall, 1.0);
        assert_eq!(m.tool_precision, 1.0);
        assert_eq!(m.loop_count, 1);
        assert_eq!(m.sequence_lcs, None);
        let m = path_metrics(&["a"], &["a", "b"], Some(&["a", "b"][..]));
        assert_eq!(m.sequence_lcs, Some(1.0));
        assert_eq!(m.sequence_edit, Some(1.0));
    }

    fn seq() -> impl Strategy<Value = Vec<u8>> {
        // A small alphabet makes repeats, shared items and loops common.
        proptest::collection::vec(0u8..5, 0..12)
    }

    proptest! {
        #[test]
        fn lcs_and_edit_symmetric_and_bounded(p in seq(), r in seq()) {
            let (l1, l2) = (sequence_lcs(&p, &r), sequence_lcs(&r, &p));
            let (e1, e2) = (sequence_edit(&p, &r), sequence_edit(&r, &p));
            prop_assert_eq!(l1, l2);
            prop_assert_eq!(e1, e2);
            prop_assert!((0.0..=1.0).contains(&l1));
            prop_assert!((0.0..=1.0).contains(&e1));
        }

        #[test]
        fn lcs_and_edit_exactly_one_for_equal(p in seq()) {
            prop_assert_eq!(sequence_lcs(&p, &p), 1.0);
            prop_assert_eq!(sequence_edit(&p, &p), 1.0);
        }

        #[test]
        fn lcs_and_edit_below_one_for_different(p in seq(), r in seq()) {
            prop_assume!(p != r);
            prop_assert!(sequence_lcs(&p, &r) < 1.0);
            prop_assert!(sequence_edit(&p, &r) < 1.0);
        }

        #[test]
        fn recall_precision_f1_bounded(e in seq(), u in seq()) {
            let r = tool_recall(&e, &u);
            let p = tool_precision(&e, &u);
            prop_assert!((0.0..=1.0).contains(&r));
            prop_assert!((0.0..=1.0).contains(&p));
            prop_assert!((0.0..=1.0).contains(&f1(p, r)));
        }

        #[test]
        fn unordered_is_order_independent(p in seq(), r in seq(), seed in any::<u64>()) {
            let mut shuffled = p.clone();
            // A deterministic permutation from the seed (rotate + reverse).
            if !shuffled.is_empty() {
                let k = (seed as usize) % shuffled.len();
                shuffled.rotate_left(k);
                if seed % 2 == 0 { shuffled.reverse(); }
            }
            prop_assert!(matches_mode(MatchMode::Unordered, &p, &shuffled));
            prop_assert_eq!(
                matches_mode(MatchMode::Unordered, &p, &r),
                matches_mode(MatchMode::Unordered, &shuffled, &r)
            );
        }

        #[test]
        fn loop_count_bounded(p in seq()) {
            prop_assert!(loop_count(&p) <= p.len().saturating_sub(1));
        }

        #[test]
        fn subset_and_superset_are_mirror_images(p in seq(), r in seq()) {
            prop_assert_eq!(
                matches_mode(MatchMode::Subset, &p, &r),
                matches_mode(MatchMode::Superset, &r, &p)
            );
        }
    }
}
