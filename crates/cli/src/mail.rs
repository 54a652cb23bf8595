//! `countersign-cli mail list|release|resend|cancel` (docs/mail.md): what to do about an executed
//! plan's emails that could not go as planned, each remedy a signed statement over the message
//! as shown.

use std::io::IsTerminal as _;

use clap::Subcommand;
use countersign_console::review::execution::{DeliveriesView, DeliveryIssue};
use countersign_console::{Console, ConsoleError};
use countersign_proto::mail::Remedy;

use crate::{print, style, Failure, Outcome, Prompt};

#[derive(Subcommand)]
pub enum MailCommand {
    /// The plan's held and failed emails, with what may be done about each, and what was done.
    List { plan: String },
    /// Send a held email to the address its recipient has now.
    Release {
        plan: String,
        message: i64,
        /// Do not ask before signing.
        #[arg(long)]
        yes: bool,
    },
    /// Send a failed email again, in a new round of attempts.
    Resend {
        plan: String,
        message: i64,
        #[arg(long)]
        yes: bool,
    },
    /// Never send a held or failed email; its charge goes back to the agent.
    Cancel {
        plan: String,
        message: i64,
        #[arg(long)]
        yes: bool,
    },
}

async fn deliveries(console: &Console, plan: &str) -> Result<DeliveriesView, Failure> {
    let view = console.plan_view(plan).await?;
    Ok(view
        .execution
        .and_then(|e| e.deliveries)
        .unwrap_or_default())
}

fn render(deliveries: &DeliveriesView) -> String {
    let mut out = format!(
        "{} sent, {} pending, {} held, {} failed, {} cancelled\n",
        deliveries.sent,
        deliveries.pending,
        deliveries.held,
        deliveries.failed,
        deliveries.cancelled
    );
    for m in &deliveries.attention {
        out.push_str(&format!(
            "message {}  {}  {}  to {}\n    Subject: {}\n    Why: {}\n",
            m.message_id,
            style::clean(&m.user_id),
            m.state,
            style::clean(&m.recipient),
            style::clean(&m.subject),
            style::clean(&m.reason),
        ));
        if let Some(to) = &m.release_to {
            out.push_str(&format!("    A release sends it to {}\n", style::clean(to)));
        }
        match m.remedies.is_empty() {
            true => out.push_str("    No remedy: it does not match its digest.\n"),
            false => out.push_str(&format!("    May be: {}\n", m.remedies.join(", "))),
        }
    }
    for r in &deliveries.remedies {
        out.push_str(&format!(
            "{}: {} by {} at {} (refunded {})\n",
            style::clean(&r.user_id),
            r.remedy,
            style::clean(&r.approver),
            r.decided_at,
            r.refunded
        ));
    }
    out
}

pub async fn run(console: &Console, command: &MailCommand, json: bool) -> Outcome {
    let (plan, message, yes, remedy) = match command {
        MailCommand::List { plan } => {
            let deliveries = deliveries(console, plan).await?;
            print(json, &deliveries, || render(&deliveries));
            return Ok(());
        }
        MailCommand::Release { plan, message, yes } => (plan, *message, *yes, Remedy::Release),
        MailCommand::Resend { plan, message, yes } => (plan, *message, *yes, Remedy::Resend),
        MailCommand::Cancel { plan, message, yes } => (plan, *message, *yes, Remedy::Cancel),
    };
    if !yes && !std::io::stdin().is_terminal() {
        return Err(Failure::Usage(format!(
            "{} of message {message} is signed after a prompt: pass --yes to sign it without one",
            remedy.as_str()
        )));
    }
    let shown = deliveries(console, plan).await?;
    let issue: &DeliveryIssue = shown
        .attention
        .iter()
        .find(|m| m.message_id == message)
        .ok_or_else(|| Failure::Usage(format!("{plan} has no held or failed message {message}")))?;
    let out = match console
        .remedy_mail((plan, message), remedy, &issue.digest, &Prompt { yes })
        .await
    {
        Err(ConsoleError::Cancelled) => return Err(Failure::Usage("nothing signed".to_owned())),
        other => other?,
    };
    print(json, &out, || {
        let whither = match &out.recipient {
            Some(to) => format!(" ({} to {})", out.state, style::clean(to)),
            None => format!(" ({}; refunded {} credits)", out.state, out.refunded),
        };
        format!(
            "Message {}: {}{whither}.\n",
            out.message_id,
            out.remedy.as_str()
        )
    });
    Ok(())
}
