//! Approval rules: who must approve a plan, as the gateway's approval policy said when the plan
//! was stored, and how far each rule is met. An addition to PROTOCOL section 3 (`docs/policy.md`):
//! the rules are the gateway's, not part of the signed plan.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One rule a plan must meet: `count` distinct people, each from one of `teams` or among
/// `people` (anyone, when both are empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rule {
    /// Unique within the policy.
    pub id: String,
    pub description: String,
    pub count: u32,
    #[serde(default)]
    pub teams: Vec<String>,
    #[serde(default)]
    pub people: Vec<String>,
    /// Whether people of the requesting agent's team are excluded (the person the agent acts for
    /// never decides its plans, whatever the rule).
    #[serde(default)]
    pub exclude_requester: bool,
    /// Who else may meet the rule once nobody met it for a while.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate: Option<Escalation>,
    /// Whether a standing approval may meet it (`docs/standing.md`); never for a rule that asks
    /// for more than two people.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standing: bool,
    /// Where the rule's id is written in the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RuleSource>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Escalation {
    /// Seconds after the plan was made.
    pub after_seconds: u32,
    #[serde(default)]
    pub teams: Vec<String>,
    #[serde(default)]
    pub people: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleSource {
    /// The policy file, relative to the policy directory (`builtin` for the built-in policy).
    pub file: String,
    pub line: u32,
}

/// A rule of a plan with how far it is met: the approvals the gateway counts for it (each
/// person for one rule only) and how many it still needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleStatus {
    #[serde(flatten)]
    pub rule: Rule,
    /// The approvers whose approval counts for this rule.
    pub met_by: Vec<String>,
    pub missing: u32,
    /// When the rule widened to its escalation's people, if it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalated_at: Option<DateTime<Utc>>,
    /// The requesting agent's team, whose people do not count for a rule that excludes the
    /// requester.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excludes_team: Option<String>,
}

impl RuleStatus {
    /// Whether a person of `teams` may meet this rule now.
    pub fn asks(&self, person: &str, teams: &[String]) -> bool {
        let excluded = self
            .excludes_team
            .as_ref()
            .is_some_and(|t| teams.contains(t));
        !excluded && self.rule.asks(person, teams, self.escalated_at.is_some())
    }

    /// "Needs 2 of leads — 1 received (Lena)", "finance: 1 of 1 ✓".
    pub fn line(&self, names: &[String]) -> String {
        let received = self.rule.count.saturating_sub(self.missing);
        let by = match names.is_empty() {
            true => String::new(),
            false => format!(" ({})", names.join(", ")),
        };
        match self.missing {
            0 => format!("Met: {} — {received} received{by}", self.rule.who()),
            _ => format!("Needs {} — {received} received{by}", self.rule.who()),
        }
    }
}

impl Rule {
    /// Whether a person of `teams` is among those this rule asks, `escalated` or not.
    pub fn asks(&self, person: &str, teams: &[String], escalated: bool) -> bool {
        let from = |rule_teams: &[String], people: &[String]| {
            people.iter().any(|p| p == person) || rule_teams.iter().any(|t| teams.contains(t))
        };
        if self.teams.is_empty() && self.people.is_empty() {
            return true;
        }
        from(&self.teams, &self.people)
            || (escalated
                && self
                    .escalate
                    .as_ref()
                    .is_some_and(|e| from(&e.teams, &e.people)))
    }

    /// Whether a standing approval may fill one of its seats: the policy lets it, and the rule
    /// asks for at most one person beyond it, so that a rule of two people still has one who
    /// looked at this plan, and a rule of more is met by people only.
    pub fn takes_standing(&self) -> bool {
        self.standing && self.count <= 2
    }

    /// Whether the rule takes anyone's approval, now and later: no teams or people named, no
    /// requester's team left out, no escalation.
    pub fn asks_anyone(&self) -> bool {
        self.teams.is_empty()
            && self.people.is_empty()
            && !self.exclude_requester
            && self.escalate.is_none()
    }

    /// Who the rule asks, in words: "2 of leads", "1 of finance or usr_cfo", "1 approver".
    pub fn who(&self) -> String {
        let mut from: Vec<&str> = self.teams.iter().map(String::as_str).collect();
        from.extend(self.people.iter().map(String::as_str));
        if from.is_empty() {
            let noun = if self.count == 1 {
                "approver"
            } else {
                "approvers"
            };
            return format!("{} {noun}", self.count);
        }
        format!("{} of {}", self.count, from.join(" or "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(teams: &[&str], people: &[&str]) -> Rule {
        Rule {
            id: "r".into(),
            description: String::new(),
            count: 2,
            teams: teams.iter().map(|t| t.to_string()).collect(),
            people: people.iter().map(|t| t.to_string()).collect(),
            exclude_requester: false,
            escalate: Some(Escalation {
                after_seconds: 300,
                teams: vec!["leads".into()],
                people: vec![],
            }),
            standing: false,
            source: None,
        }
    }

    #[test]
    fn a_rule_asks_its_teams_and_people_and_its_escalation_only_once_escalated() {
        let oncall = rule(&["oncall"], &["usr_cfo"]);
        let leads = vec!["leads".to_owned()];
        assert!(oncall.asks("usr_a", &["oncall".to_owned()], false));
        assert!(oncall.asks("usr_cfo", &[], false));
        assert!(!oncall.asks("usr_b", &leads, false));
        assert!(oncall.asks("usr_b", &leads, true));
        assert!(rule(&[], &[]).asks("usr_anyone", &[], false));
    }

    #[test]
    fn who_names_the_count_and_where_from() {
        assert_eq!(rule(&["leads"], &[]).who(), "2 of leads");
        assert_eq!(
            rule(&["finance"], &["usr_cfo"]).who(),
            "2 of finance or usr_cfo"
        );
        assert_eq!(rule(&[], &[]).who(), "2 approvers");
    }
}
