//! `countersign-cli standing list|create|revoke` (docs/standing.md).

use clap::Subcommand;
use countersign_console::standing::{ConstraintOp, ConstraintView, StandingDraft, StandingView};
use countersign_console::{Console, ConsoleError};

use crate::{print, style, Failure, Outcome, Prompt};

#[derive(Subcommand)]
pub enum StandingCommand {
    /// Every standing approval of the gateway, with its use and state.
    List,
    /// Sign a standing approval for plans like PLAN: its agent, capability and resources, each
    /// of its scalar params as it is (unless --when says otherwise), its risk flags.
    Create {
        /// The plan it is made from.
        #[arg(long)]
        from_plan: String,
        /// Why: shown wherever it is.
        #[arg(long)]
        reason: String,
        /// A condition on the params in place of the plan's own: `project=prj_184`,
        /// `retention_days>=7`, `retention_days<=30` (a JSON value after `=`); repeatable.
        #[arg(long = "when")]
        when: Vec<String>,
        /// Plans it may cover (default 10).
        #[arg(long)]
        max_plans: Option<u32>,
        /// Credits per plan at most (default the plan's cost).
        #[arg(long)]
        cap_plan: Option<String>,
        /// Credits in all at most (default ten times the plan's cost).
        #[arg(long)]
        cap_total: Option<String>,
        /// How long it lasts, 1 to 30 days (default 7).
        #[arg(long)]
        days: Option<u32>,
        /// Do not ask before signing.
        #[arg(long)]
        yes: bool,
    },
    /// Revoke one of yours at once: its approvals of plans not yet run stop counting.
    Revoke { id: String },
}

/// `param=json`, `param>=n` or `param<=n` as a constraint.
fn condition(text: &str) -> Result<ConstraintView, Failure> {
    let (param, op, value) = if let Some((p, v)) = text.split_once(">=") {
        (p, ConstraintOp::AtLeast, v)
    } else if let Some((p, v)) = text.split_once("<=") {
        (p, ConstraintOp::AtMost, v)
    } else if let Some((p, v)) = text.split_once('=') {
        (p, ConstraintOp::OneOf, v)
    } else {
        return Err(Failure::Usage(format!(
            "--when {text:?}: write param=value, param>=n or param<=n"
        )));
    };
    let param = param.trim().trim_start_matches('/');
    let value = value.trim();
    // A bare word is a string: `project=prj_184`.
    let value = match serde_json::from_str::<serde_json::Value>(value) {
        Ok(_) => value.to_owned(),
        Err(_) => serde_json::Value::String(value.to_owned()).to_string(),
    };
    Ok(ConstraintView {
        param: format!("/{param}"),
        op,
        values: vec![value],
        line: String::new(),
    })
}

fn why_or(why: Option<&str>) -> &str {
    why.unwrap_or("its signature could not be checked")
}

fn render(items: &[StandingView]) -> String {
    if items.is_empty() {
        return "No standing approvals.\n".to_owned();
    }
    let mut out = String::new();
    for s in items {
        let state = match &s.state_reason {
            Some(why) => format!("{:?} ({why})", s.state).to_lowercase(),
            None => format!("{:?}", s.state).to_lowercase(),
        };
        out.push_str(&format!(
            "{}  {}  {state}  {}/{} plans run  {}/{} credits  until {}\n",
            s.id,
            style::clean(&s.approver),
            s.plans_used,
            s.max_plans,
            s.credits_used,
            s.max_cost_total,
            s.expires_at,
        ));
        match s.verified {
            false => out.push_str(&format!(
                "    Its terms are not shown: {}\n",
                style::clean(why_or(s.verify_error.as_deref()))
            )),
            true => out.push_str(&format!(
                "    {}\n    Reason: {}\n",
                style::clean(&s.allows),
                style::clean(&s.reason)
            )),
        }
        if !s.uses.is_empty() {
            let ran: Vec<String> = s
                .uses
                .iter()
                .map(|u| format!("{} (use {})", u.plan_id, u.number))
                .collect();
            out.push_str(&format!("    Ran: {}\n", ran.join(", ")));
        }
        if !s.covered.is_empty() {
            out.push_str(&format!(
                "    Covered, not yet run: {}\n",
                s.covered.join(", ")
            ));
        }
    }
    out
}

pub async fn run(console: &Console, command: &StandingCommand, json: bool) -> Outcome {
    match command {
        StandingCommand::List => {
            let items = console.standing().await?;
            print(json, &items, || render(&items));
        }
        StandingCommand::Create {
            from_plan,
            reason,
            when,
            max_plans,
            cap_plan,
            cap_total,
            days,
            yes,
        } => {
            let mut draft: StandingDraft = console.standing_draft(from_plan).await?;
            if !when.is_empty() {
                draft.constraints = when
                    .iter()
                    .map(|w| condition(w))
                    .collect::<Result<_, _>>()?;
            }
            draft.reason = reason.clone();
            draft.max_plans = max_plans.unwrap_or(draft.max_plans);
            draft.days = days.unwrap_or(draft.days);
            if let Some(cap) = cap_plan {
                draft.max_cost_per_plan = cap.clone();
            }
            if let Some(cap) = cap_total {
                draft.max_cost_total = cap.clone();
            }
            let created = match console.create_standing(&draft, &Prompt { yes: *yes }).await {
                Err(ConsoleError::Cancelled) => {
                    return Err(Failure::Usage("no standing approval signed".to_owned()))
                }
                other => other?,
            };
            print(json, &created, || {
                format!(
                    "Signed standing approval {}.\n{}",
                    created.id,
                    render(std::slice::from_ref(&created))
                )
            });
        }
        StandingCommand::Revoke { id } => {
            let revoked = console.revoke_standing(id).await?;
            print(json, &revoked, || {
                format!(
                    "Revoked standing approval {} ({} plans ran under it).\n",
                    revoked.id, revoked.plans_used
                )
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_read_as_constraints() {
        let c = condition("project=prj_184").unwrap();
        assert_eq!(
            (c.param.as_str(), c.op, c.values[0].as_str()),
            ("/project", ConstraintOp::OneOf, "\"prj_184\"")
        );
        let c = condition("retention_days>=7").unwrap();
        assert_eq!((c.op, c.values[0].as_str()), (ConstraintOp::AtLeast, "7"));
        let c = condition("/retention_days<=30").unwrap();
        assert_eq!(
            (c.param.as_str(), c.op),
            ("/retention_days", ConstraintOp::AtMost)
        );
        assert!(condition("retention_days").is_err());
    }
}
