//! What a plan needs to be approved, as its policy set it when it was stored, and how the
//! approvals received meet it: each rule by its own distinct people, a person counting for one
//! rule only (one person, one approval), found as a maximum matching of people to rule seats,
//! with at most one seat of a plan filled by a standing approval.

use chrono::{DateTime, Duration, Utc};
use countersign_proto::rules::{Rule, RuleStatus};
use serde::{Deserialize, Serialize};

/// A plan's rules and whom they exclude, kept with the plan (`plans.rules`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirement {
    pub rules: Vec<Rule>,
    /// The requesting agent's team when the plan was stored: a rule that excludes the requester
    /// excludes its members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_team: Option<String>,
    /// Why a later policy refuses the plan (`policy_change`): it is rejected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<String>,
}

impl Requirement {
    /// A plan stored before policies: `required` approvals from anyone.
    pub fn legacy(required: u32) -> Requirement {
        let rules = (required > 0)
            .then(|| Rule {
                id: "capability_default".to_owned(),
                description: "The capability's own rule".to_owned(),
                count: required,
                teams: Vec::new(),
                people: Vec::new(),
                exclude_requester: false,
                escalate: None,
                standing: true,
                source: None,
            })
            .into_iter()
            .collect();
        Requirement {
            rules,
            ..Requirement::default()
        }
    }

    /// A plan the policy now refuses, for `why`.
    pub fn refused(why: String, agent_team: Option<String>) -> Requirement {
        Requirement {
            rules: Vec::new(),
            agent_team,
            denied: vec![why],
        }
    }

    /// The first time after `after` at which a rule (of a plan made at `created_at`) widens to
    /// its escalation, if one does.
    pub fn next_escalation(
        &self,
        created_at: DateTime<Utc>,
        after: Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        self.rules
            .iter()
            .filter_map(|rule| escalates_at(rule, created_at))
            .filter(|at| after.is_none_or(|after| *at > after))
            .min()
    }

    /// How many distinct people the plan needs.
    pub fn required(&self) -> u32 {
        self.rules.iter().map(|r| r.count).sum()
    }
}

/// A person who approved, with their teams as the directory holds them now.
#[derive(Debug, Clone)]
pub struct Approving {
    pub approver_id: String,
    pub person: String,
    pub teams: Vec<String>,
    /// Given by a standing approval, which fills only a seat of a rule that takes one, and at
    /// most one seat of a plan.
    pub standing: bool,
}

/// When `rule` of a plan made at `created_at` widens to its escalation, if it does.
pub fn escalates_at(rule: &Rule, created_at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let after = rule.escalate.as_ref()?.after_seconds;
    Some(created_at + Duration::seconds(i64::from(after)))
}

/// Whether `rule` of the plan lets `person` (of `teams`) count for it at `now`.
fn admits(
    requirement: &Requirement,
    rule: &Rule,
    (person, teams): (&str, &[String]),
    escalated: bool,
) -> bool {
    let requesting = rule.exclude_requester
        && requirement
            .agent_team
            .as_ref()
            .is_some_and(|team| teams.contains(team));
    !requesting && rule.asks(person, teams, escalated)
}

/// The rules of a plan made at `created_at`, evaluated at `now`.
pub struct Tally<'a> {
    requirement: &'a Requirement,
    created_at: DateTime<Utc>,
    escalated: Vec<bool>,
}

impl<'a> Tally<'a> {
    pub fn new(
        requirement: &'a Requirement,
        created_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Self {
        let escalated = requirement
            .rules
            .iter()
            .map(|r| escalates_at(r, created_at).is_some_and(|at| now >= at))
            .collect();
        Tally {
            requirement,
            created_at,
            escalated,
        }
    }

    /// Whether any rule asks `person` (met or not): who may reject.
    pub fn asks(&self, person: &str, teams: &[String]) -> bool {
        self.requirement
            .rules
            .iter()
            .zip(&self.escalated)
            .any(|(rule, &escalated)| admits(self.requirement, rule, (person, teams), escalated))
    }

    /// Each rule with the approvals counted for it, and whether every rule is met.
    pub fn count(&self, approving: &[Approving]) -> (Vec<RuleStatus>, bool) {
        let seats = self.seats_of(approving);
        let mut met = true;
        let statuses = self
            .requirement
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                // In the order the approvals came, whichever seats the matching gave them.
                let mut who: Vec<usize> = seats
                    .iter()
                    .filter(|(r, _)| *r == i)
                    .map(|(_, who)| *who)
                    .collect();
                who.sort_unstable();
                let met_by: Vec<String> = who
                    .into_iter()
                    .map(|p| approving[p].approver_id.clone())
                    .collect();
                let missing = rule.count.saturating_sub(met_by.len() as u32);
                met &= missing == 0;
                RuleStatus {
                    rule: rule.clone(),
                    met_by,
                    missing,
                    escalated_at: self.escalated[i]
                        .then(|| escalates_at(rule, self.created_at))
                        .flatten(),
                    excludes_team: rule
                        .exclude_requester
                        .then(|| self.requirement.agent_team.clone())
                        .flatten(),
                }
            })
            .collect();
        (statuses, met)
    }

    /// Whether `candidate`'s approval would count: it fills a seat no one else can.
    pub fn would_count(&self, approving: &[Approving], candidate: Approving) -> bool {
        let before = self.seats_of(approving).len();
        let mut with = approving.to_vec();
        with.push(candidate);
        self.seats_of(&with).len() > before
    }

    /// A maximum matching of people (by index in `approving`, one seat each, first come first
    /// seated) to rule seats: `(rule index, person index)`.
    fn seats_of(&self, approving: &[Approving]) -> Vec<(usize, usize)> {
        let rules = &self.requirement.rules;
        // Each seat is one of a rule's `count`; who may sit in it is who the rule admits.
        let seats: Vec<usize> = rules
            .iter()
            .enumerate()
            .flat_map(|(i, r)| std::iter::repeat_n(i, r.count as usize))
            .collect();
        let mut seen_people = std::collections::HashSet::new();
        let fits: Vec<Vec<usize>> = approving
            .iter()
            .map(|a| {
                if !seen_people.insert(a.person.as_str()) {
                    return Vec::new();
                }
                (0..seats.len())
                    .filter(|&s| {
                        let rule = seats[s];
                        (!a.standing || rules[rule].takes_standing())
                            && admits(
                                self.requirement,
                                &rules[rule],
                                (&a.person, &a.teams),
                                self.escalated[rule],
                            )
                    })
                    .collect()
            })
            .collect();
        let mut holder: Vec<Option<usize>> = vec![None; seats.len()];
        // One standing approval at most sits in a plan's seats, whatever its rules: every other
        // seat is a person who decided this plan. Once seated, a person stays seated (an
        // augmenting path only moves them), so the first standing approval seated is the one.
        let mut standing_seated = false;
        for (person, approval) in approving.iter().enumerate() {
            if approval.standing && standing_seated {
                continue;
            }
            let mut visited = vec![false; seats.len()];
            let seated = seat(person, &fits, &mut holder, &mut visited);
            standing_seated |= seated && approval.standing;
        }
        holder
            .iter()
            .enumerate()
            .filter_map(|(s, who)| who.map(|p| (seats[s], p)))
            .collect()
    }
}

/// Kuhn's augmenting path: seats `person`, moving others to free seats if need be.
fn seat(
    person: usize,
    fits: &[Vec<usize>],
    holder: &mut [Option<usize>],
    visited: &mut [bool],
) -> bool {
    for &s in &fits[person] {
        if visited[s] {
            continue;
        }
        visited[s] = true;
        let free = match holder[s] {
            None => true,
            Some(other) => seat(other, fits, holder, visited),
        };
        if free {
            holder[s] = Some(person);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests;
