//! What `policy check` and `policy test` print: a policy's requirement of each demo plan, and
//! its own tests' results.

use std::fmt::Write as _;

use countersign_embedded::policy_check::{Checked, Outcome};
use countersign_policy::{Policy, TestOutcome};

/// One paragraph per demo plan: its rules (or that it runs without approval), or its refusal.
pub fn requirements(policy: &Policy, checked: &[Checked]) -> String {
    let mut out = format!("Policy {} ({})\n", policy.origin(), policy.digest());
    for plan in checked {
        let _ = writeln!(out, "\n{} ({})", plan.label, plan.capability);
        match &plan.outcome {
            Outcome::Rules { blocked: true, .. } => {
                let _ = writeln!(out, "  blocked by its own validation: reaches no person");
            }
            Outcome::Rules { rules, .. } if rules.is_empty() => {
                let _ = writeln!(out, "  runs without approval");
            }
            Outcome::Rules { rules, .. } => {
                for rule in rules {
                    let at = rule
                        .source
                        .as_ref()
                        .map(|s| format!(" [{}:{}]", s.file, s.line))
                        .unwrap_or_default();
                    let _ = writeln!(out, "  needs {} — {}{at}", rule.who(), rule.id);
                    let _ = writeln!(out, "    {}", rule.description);
                    if rule.exclude_requester {
                        let _ = writeln!(out, "    not the requesting agent's team");
                    }
                    if let Some(e) = &rule.escalate {
                        let mut to: Vec<&str> = e.teams.iter().map(String::as_str).collect();
                        to.extend(e.people.iter().map(String::as_str));
                        let _ = writeln!(
                            out,
                            "    after {} s unmet, also {}",
                            e.after_seconds,
                            to.join(" or ")
                        );
                    }
                }
            }
            Outcome::Refused { code, message } => {
                let _ = writeln!(out, "  refused ({code}): {message}");
            }
        }
    }
    out
}

/// One line per test, then the count; whether all passed.
pub fn tests(outcomes: &[TestOutcome]) -> (String, bool) {
    let mut out = String::new();
    for outcome in outcomes {
        let verdict = if outcome.passed { "PASS" } else { "FAIL" };
        let why = outcome
            .error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        let _ = writeln!(out, "{verdict} {}{why}", outcome.name);
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let _ = writeln!(
        out,
        "{} tests, {} passed, {failed} failed",
        outcomes.len(),
        outcomes.len() - failed
    );
    (out, failed == 0 && !outcomes.is_empty())
}
