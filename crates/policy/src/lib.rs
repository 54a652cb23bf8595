//! Approval policy as code. A policy is Rego (package `countersign.approval`) that reads a plan
//! as previewed with who asks and who exists ([`Input`]) and answers who must approve it
//! (`rules`) or that nobody may (`deny`). regorus evaluates it under a time limit; anything but a
//! well-formed answer is an error, which the gateway turns into a refusal: a policy never fails
//! open. `docs/policy.md` is the contract.

mod input;
mod load;

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::path::Path;
use std::time::Duration;

use countersign_proto::approvals::RiskFlag;
use countersign_proto::digest::{jcs, sha256};
use countersign_proto::rules::{Escalation, Rule, RuleSource};
use countersign_proto::standing::DEFAULT_COVERABLE;
use regorus::utils::limits::ExecutionTimerConfig;
use serde::Deserialize;
use thiserror::Error;

pub use input::{AgentInput, CapabilityInput, DefaultApproval, Directory, Input};
pub use load::{LoadError, Sources};

/// The package a policy's answer lives in.
pub const PACKAGE: &str = "data.countersign.approval";

/// How long one evaluation may run before it is an error.
pub const TIME_LIMIT: Duration = Duration::from_millis(100);

/// The heap a gateway process may hold while a policy evaluates, unless its operator says
/// otherwise ([`limit_memory`]).
pub const DEFAULT_HEAP_LIMIT: u64 = 2 << 30;

/// The most people one rule may ask for.
pub const MAX_COUNT: u32 = 20;

const BUILTIN: &str = include_str!("builtin.rego");
const BUILTIN_ORIGIN: &str = "built-in";

/// A loaded policy, ready to evaluate from any thread (each evaluation works on its own copy).
#[derive(Clone)]
pub struct Policy {
    /// Prepared (its modules analyzed) once: each evaluation clones it without analyzing again.
    engine: regorus::Engine,
    sources: Sources,
    digest: String,
    origin: String,
    has_deny: bool,
    reads: Reads,
    coverable: Vec<RiskFlag>,
}

/// What of the input the gateway reads from its store for a policy: nothing for the built-in
/// one, the agent for any other, the directory for one that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// `input.agent` (its team, its scopes), which a rule that excludes the requester's team
    /// needs too.
    pub agent: bool,
    /// `input.directory`.
    pub directory: bool,
}

/// What a policy says of one plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Each must be met; none means the plan runs without approval.
    pub rules: Vec<Rule>,
    /// Why the plan is refused; any reason refuses it.
    pub deny: Vec<String>,
}

/// An evaluation that did not give a well-formed answer.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct EvalError(pub String);

/// One `test_…` rule's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    /// `package.test_name`.
    pub name: String,
    pub passed: bool,
    /// Why it did not evaluate, when it did not.
    pub error: Option<String>,
}

/// Bounds what an evaluation may allocate: once the process's heap (everything Rust allocated
/// and has not freed, counted by regorus's allocator) passes `bytes`, an evaluation stops with
/// an error rather than taking the machine's memory. A ceiling for the whole process, not a
/// budget per evaluation: regorus counts one heap. `None` lifts it.
pub fn limit_memory(bytes: Option<u64>) {
    regorus::set_global_memory_limit(bytes);
}

impl Policy {
    /// The built-in policy: each capability's own rule.
    pub fn builtin() -> Policy {
        let sources = Sources {
            modules: vec![("builtin.rego".to_owned(), BUILTIN.to_owned())],
            data: None,
        };
        Policy::from_sources(sources, BUILTIN_ORIGIN).expect("the built-in policy loads")
    }

    /// The policy in `dir`.
    pub fn load(dir: &Path) -> Result<Policy, LoadError> {
        Policy::from_sources(Sources::read(dir)?, &dir.display().to_string())
    }

    /// The policy of `sources`; `origin` names where they came from.
    pub fn from_sources(sources: Sources, origin: &str) -> Result<Policy, LoadError> {
        let mut engine = regorus::Engine::new();
        engine.set_strict_builtin_errors(true);
        engine.set_execution_timer_config(ExecutionTimerConfig {
            limit: TIME_LIMIT,
            check_interval: NonZeroU32::new(16).expect("non-zero"),
        });
        for (file, text) in &sources.modules {
            engine
                .add_policy(file.clone(), text.clone())
                .map_err(|e| load::syntax(file, &e.to_string()))?;
        }
        if let Some(data) = &sources.data {
            engine.add_data_json(data).map_err(|e| LoadError::Syntax {
                file: "data.json".to_owned(),
                line: 0,
                message: e.to_string(),
            })?;
        }
        let packages = engine
            .get_packages()
            .map_err(|e| LoadError::Contract(e.to_string()))?;
        if !packages.iter().any(|p| p == PACKAGE) {
            return Err(LoadError::Contract(format!(
                "no file declares package countersign.approval (found {})",
                packages.join(", ")
            )));
        }
        // Evaluating once prepares the engine (regorus analyzes the modules on the first
        // evaluation), and says whether the answer's rules are declared at all.
        let declared = |engine: &mut regorus::Engine, name: &str| match engine
            .eval_rule(format!("{PACKAGE}.{name}"))
        {
            Err(e) => !e.to_string().contains("not a valid rule path"),
            Ok(_) => true,
        };
        if !declared(&mut engine, "rules") {
            return Err(LoadError::Contract(
                "package countersign.approval declares no rules: a policy answers with them"
                    .to_owned(),
            ));
        }
        let has_deny = declared(&mut engine, "deny");
        let coverable = match declared(&mut engine, "standing_flags") {
            true => standing_flags(&mut engine)?,
            false => DEFAULT_COVERABLE.to_vec(),
        };
        // The built-in policy reads neither. Any other gets the agent, always: a rule that
        // excludes the requester's team needs it whether it is written in Rego or comes from
        // data.json, and it is one indexed read. The directory (every team's members) only
        // goes to a policy that names it, or reads the input by a computed key.
        let builtin = origin == BUILTIN_ORIGIN;
        let mentions = |word: &str| sources.modules.iter().any(|(_, text)| text.contains(word));
        let reads = Reads {
            agent: !builtin,
            directory: !builtin && (mentions("directory") || mentions("input[")),
        };
        let digest = sha256(
            &jcs(&serde_json::json!({
                "modules": sources.modules,
                "data": sources.data,
            }))
            .map_err(|e| LoadError::Contract(e.to_string()))?,
        );
        Ok(Policy {
            engine,
            sources,
            digest,
            origin: origin.to_owned(),
            has_deny,
            reads,
            coverable,
        })
    }

    /// `sha256:…` over the modules (with their paths) and the data.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Whether this is the built-in policy, whose answer the capabilities' own rules foretell.
    pub fn is_builtin(&self) -> bool {
        self.origin == BUILTIN_ORIGIN
    }

    /// The directory the policy was read from, or `built-in`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// What of the input the gateway reads for the policy.
    pub fn reads(&self) -> Reads {
        self.reads
    }

    /// The risk flags a standing approval may cover (`standing_flags`, a set the policy may
    /// declare; without it every flag but `irreversible` and `bulk`).
    pub fn coverable(&self) -> &[RiskFlag] {
        &self.coverable
    }

    /// What the policy says of the plan in `input`.
    pub fn evaluate(&self, input: &Input) -> Result<Verdict, EvalError> {
        let input = serde_json::to_value(input).map_err(|e| EvalError(e.to_string()))?;
        let mut engine = self.engine.clone();
        engine.set_input(regorus::Value::from(input));
        let rules = rule(&mut engine, "rules")?.ok_or_else(|| {
            EvalError(
                "rules is undefined for this plan: a policy answers with a set, empty when \
                 nobody must approve"
                    .to_owned(),
            )
        })?;
        let deny = match self.has_deny {
            true => rule(&mut engine, "deny")?,
            false => None,
        }
        .unwrap_or(serde_json::Value::Array(vec![]));
        let deny: Vec<String> = serde_json::from_value(deny)
            .map_err(|e| EvalError(format!("deny must be a set of strings: {e}")))?;
        Ok(Verdict {
            rules: self.rules(rules)?,
            deny,
        })
    }

    fn rules(&self, value: serde_json::Value) -> Result<Vec<Rule>, EvalError> {
        let answered: Vec<Answered> = serde_json::from_value(value)
            .map_err(|e| EvalError(format!("rules must be a set of rule objects: {e}")))?;
        let mut ids = BTreeSet::new();
        let mut rules = Vec::with_capacity(answered.len());
        for rule in answered {
            let well_formed = !rule.id.is_empty()
                && rule.id.len() <= 64
                && rule
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
            if !well_formed {
                return Err(EvalError(format!(
                    "rule id {:?} must be 1 to 64 letters, digits, '_', '-' or '.'",
                    rule.id
                )));
            }
            if !ids.insert(rule.id.clone()) {
                return Err(EvalError(format!(
                    "two rules are called {:?}: a rule's id names one requirement",
                    rule.id
                )));
            }
            if !(1..=MAX_COUNT).contains(&rule.count) {
                return Err(EvalError(format!(
                    "rule {:?} asks for {} people; a rule asks for 1 to {MAX_COUNT}",
                    rule.id, rule.count
                )));
            }
            if rule.escalate.as_ref().is_some_and(|e| e.after_seconds == 0) {
                return Err(EvalError(format!(
                    "rule {:?} escalates after 0 seconds: give it its own teams instead",
                    rule.id
                )));
            }
            let source = self
                .sources
                .locate(&rule.id)
                .map(|(file, line)| RuleSource { file, line });
            rules.push(Rule {
                description: rule.description.unwrap_or_else(|| rule.id.clone()),
                id: rule.id,
                count: rule.count,
                teams: rule.teams,
                people: rule.people,
                exclude_requester: rule.exclude_requester,
                escalate: rule.escalate,
                standing: rule.standing,
                source,
            });
        }
        rules.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(rules)
    }

    /// Runs every `test_…` rule, as `opa test` does: each must be true.
    pub fn run_tests(&self) -> Vec<TestOutcome> {
        self.sources
            .tests()
            .into_iter()
            .map(|(package, test)| {
                let name = format!("{package}.{test}");
                let mut engine = self.engine.clone();
                match engine.eval_rule(format!("data.{name}")) {
                    Ok(value) => TestOutcome {
                        passed: value == regorus::Value::from(true),
                        name,
                        error: None,
                    },
                    Err(e) => TestOutcome {
                        name,
                        passed: false,
                        error: Some(first_line(&e.to_string())),
                    },
                }
            })
            .collect()
    }
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("origin", &self.origin)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// A rule as a policy writes it; unknown fields are refused, so a misspelt `teams` is an error
/// rather than a rule that asks anyone.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answered {
    id: String,
    description: Option<String>,
    count: u32,
    #[serde(default)]
    teams: Vec<String>,
    #[serde(default)]
    people: Vec<String>,
    #[serde(default)]
    exclude_requester: bool,
    escalate: Option<Escalation>,
    #[serde(default)]
    standing: bool,
}

/// The policy's `standing_flags`, read once when it loads: what it lets standing approvals cover
/// does not depend on a plan.
fn standing_flags(engine: &mut regorus::Engine) -> Result<Vec<RiskFlag>, LoadError> {
    let value = rule(engine, "standing_flags")
        .map_err(|e| LoadError::Contract(format!("standing_flags: {e}")))?
        .unwrap_or(serde_json::Value::Array(vec![]));
    serde_json::from_value(value).map_err(|e| {
        LoadError::Contract(format!(
            "standing_flags must be a set of risk flags (irreversible, access_change, money, \
             external, bulk, uncertain, high_cost, blocked): {e}"
        ))
    })
}

/// `PACKAGE.name`, or `None` when it is undefined.
fn rule(engine: &mut regorus::Engine, name: &str) -> Result<Option<serde_json::Value>, EvalError> {
    let value = engine
        .eval_rule(format!("{PACKAGE}.{name}"))
        .map_err(|e| EvalError(first_line(&e.to_string())))?;
    if value == regorus::Value::Undefined {
        return Ok(None);
    }
    serde_json::to_value(&value)
        .map(Some)
        .map_err(|e| EvalError(e.to_string()))
}

/// The message of a regorus error, without its source excerpt and backtrace.
fn first_line(error: &str) -> String {
    let message = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("error:"))
        .or_else(|| error.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or(error);
    let at = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("-->"))
        .map(|at| format!(" (at {})", at.trim()))
        .unwrap_or_default();
    format!("{}{at}", message.trim())
}

#[cfg(test)]
mod tests;
