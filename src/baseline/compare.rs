//! `agentci compare RUN_A RUN_B`: per case and per check (each layer and the
//! case's status), whether it regressed, improved or stayed the same. Pure.

use serde::Serialize;

use crate::engine::{LayerResult, QueryResult, Status};
use crate::run::{CaseRun, CaseStatus, RunRecord};

/// How one check moved from run A to run B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Movement {
    /// Worse in B.
    Regressed,
    /// Better in B.
    Improved,
    /// The same.
    Unchanged,
}

/// One check of one case in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckChange {
    /// `status`, `correctness`, `path` or `cost`.
    pub check: &'static str,
    /// Its status in run A (`absent` when the case is missing there).
    pub before: String,
    /// Its status in run B.
    pub after: String,
    /// The movement.
    pub movement: Movement,
    /// Findings new in run B (for a regression) or gone from it (for an improvement).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// One case in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseComparison {
    /// The case id (trial suffix `#n` beyond the first).
    pub case: String,
    /// The case's movement overall: regressed when any check regressed, else improved when any improved.
    pub movement: Movement,
    /// Every check.
    pub checks: Vec<CheckChange>,
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Run A's id.
    pub run_a: String,
    /// Run B's id.
    pub run_b: String,
    /// Every case of either run: A's order, then B's new cases.
    pub cases: Vec<CaseComparison>,
}

impl Comparison {
    /// Cases that regressed.
    pub fn regressed(&self) -> usize {
        self.count(Movement::Regressed)
    }

    fn count(&self, m: Movement) -> usize {
        self.cases.iter().filter(|c| c.movement == m).count()
    }

    /// `N regressed, N improved, N unchanged`.
    pub fn summary_line(&self) -> String {
        format!(
            "{} regressed, {} improved, {} unchanged",
            self.count(Movement::Regressed),
            self.count(Movement::Improved),
            self.count(Movement::Unchanged)
        )
    }
}

/// Badness rank: higher is worse; an absent case or layer ranks as an error.
fn case_rank(status: Option<CaseStatus>) -> u8 {
    match status {
        Some(CaseStatus::Pass) => 0,
        Some(CaseStatus::Warn) => 1,
        Some(CaseStatus::Fail) => 2,
        Some(CaseStatus::Error) | None => 3,
    }
}

fn layer_rank(status: Option<Status>) -> u8 {
    match status {
        Some(Status::Pass) | Some(Status::Skip) => 0,
        Some(Status::Warn) => 1,
        Some(Status::Fail) => 2,
        None => 3,
    }
}

fn movement(before: u8, after: u8) -> Movement {
    match after.cmp(&before) {
        std::cmp::Ordering::Greater => Movement::Regressed,
        std::cmp::Ordering::Less => Movement::Improved,
        std::cmp::Ordering::Equal => Movement::Unchanged,
    }
}

fn key(c: &CaseRun) -> String {
    if c.trial > 1 {
        format!("{}#{}", c.case_id, c.trial)
    } else {
        c.case_id.clone()
    }
}

/// Compares every case of `a` with the same case (and trial) of `b`.
pub fn compare(a: &RunRecord, b: &RunRecord) -> Comparison {
    let mut keys: Vec<String> = a.cases.iter().map(key).collect();
    for k in b.cases.iter().map(key) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let cases = keys
        .into_iter()
        .map(|k| {
            let ca = a.cases.iter().find(|c| key(c) == k);
            let cb = b.cases.iter().find(|c| key(c) == k);
            compare_case(k, ca, cb)
        })
        .collect();
    Comparison {
        run_a: a.id.clone(),
        run_b: b.id.clone(),
        cases,
    }
}

fn compare_case(case: String, a: Option<&CaseRun>, b: Option<&CaseRun>) -> CaseComparison {
    let status = |c: Option<&CaseRun>| c.map(|c| c.status);
    let name = |s: Option<CaseStatus>| s.map_or("absent", CaseStatus::as_str).to_string();
    let mut checks = vec![CheckChange {
        check: "status",
        before: name(status(a)),
        after: name(status(b)),
        movement: movement(case_rank(status(a)), case_rank(status(b))),
        findings: Vec::new(),
    }];
    type Layer = fn(&QueryResult) -> &LayerResult;
    let layers: [(&'static str, Layer); 3] = [
        ("correctness", |r| &r.correctness),
        ("path", |r| &r.path),
        ("cost", |r| &r.cost),
    ];
    for (check, layer) in layers {
        let (la, lb) = (
            a.and_then(|c| c.result.as_ref()).map(layer),
            b.and_then(|c| c.result.as_ref()).map(layer),
        );
        let (sa, sb) = (la.map(|l| l.status), lb.map(|l| l.status));
        let show = |s: Option<Status>| s.map_or("absent", Status::as_str).to_string();
        let moved = movement(layer_rank(sa), layer_rank(sb));
        let messages = |l: Option<&LayerResult>| l.map(|l| l.messages.clone()).unwrap_or_default();
        // The findings that explain the move: new ones for a regression, resolved ones for an improvement.
        let (from, to) = match moved {
            Movement::Regressed => (messages(la), messages(lb)),
            Movement::Improved => (messages(lb), messages(la)),
            Movement::Unchanged => (Vec::new(), Vec::new()),
        };
        checks.push(CheckChange {
            check,
            before: show(sa),
            after: show(sb),
            movement: moved,
            findings: to.into_iter().filter(|m| !from.contains(m)).collect(),
        });
    }
    let movement = if checks.iter().any(|c| c.movement == Movement::Regressed) {
        Movement::Regressed
    } else if checks.iter().any(|c| c.movement == Movement::Improved) {
        Movement::Improved
    } else {
        Movement::Unchanged
    };
    CaseComparison {
        case,
        movement,
        checks,
    }
}

/// The console report: one line per case, the checks that moved beneath, the summary.
pub fn console(c: &Comparison, color: bool) -> String {
    let paint = |text: &str, code: &str| {
        if color {
            format!("{code}{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    let mut out = format!("agentci compare: {} → {}\n", c.run_a, c.run_b);
    for case in &c.cases {
        let tag = match case.movement {
            Movement::Regressed => paint("REGRESSED", "\x1b[31m"),
            Movement::Improved => paint("IMPROVED ", "\x1b[32m"),
            Movement::Unchanged => "UNCHANGED".to_string(),
        };
        out.push_str(&format!("{tag}  {}\n", case.case));
        for check in case
            .checks
            .iter()
            .filter(|k| k.movement != Movement::Unchanged)
        {
            let arrow = if check.movement == Movement::Regressed {
                "▼"
            } else {
                "▲"
            };
            out.push_str(&format!(
                "      {arrow} {}: {} → {}\n",
                check.check, check.before, check.after
            ));
            let mark = if check.movement == Movement::Regressed {
                "✗"
            } else {
                "fixed:"
            };
            for finding in &check.findings {
                out.push_str(&format!("          {mark} {finding}\n"));
            }
        }
    }
    out.push_str(&c.summary_line());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_order_pass_warn_fail_error() {
        assert_eq!(
            movement(
                case_rank(Some(CaseStatus::Pass)),
                case_rank(Some(CaseStatus::Fail))
            ),
            Movement::Regressed
        );
        assert_eq!(
            movement(
                case_rank(Some(CaseStatus::Error)),
                case_rank(Some(CaseStatus::Warn))
            ),
            Movement::Improved
        );
        assert_eq!(
            movement(
                layer_rank(Some(Status::Skip)),
                layer_rank(Some(Status::Pass))
            ),
            Movement::Unchanged
        );
        assert_eq!(
            movement(case_rank(Some(CaseStatus::Pass)), case_rank(None)),
            Movement::Regressed
        );
    }
}
