//! The review model as text for a terminal: tables, a colored diff, the effect tree.

use std::collections::HashMap;
use std::fmt::Write as _;

use countersign_console::console::SubjectCheck;
use countersign_console::live::Link;
use countersign_console::review::changed::WhatChanged;
use countersign_console::review::diff::ValueDiff;
use countersign_console::review::request::RequestView;
use countersign_console::review::rules::Turn;
use countersign_console::review::sample::SampleCheck;
use countersign_console::review::{DecisionView, EffectView, PlanView, QueueView};
use countersign_console::signing::journal::JournalEntry;

use crate::style::{clean, Style};

/// Rows as aligned columns; every cell is [`clean`]ed, whoever wrote it.
fn table(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| clean(cell)).collect())
        .collect();
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

pub fn queue(view: &QueueView) -> String {
    if view.items.is_empty() {
        return "No plans are waiting.\n".to_owned();
    }
    let mut rows = vec![[
        "PLAN",
        "TITLE",
        "AGENT",
        "RISK",
        "CREDITS",
        "SUBJECTS",
        "APPROVALS",
        "WAITS ON",
        "EXPIRES",
    ]
    .map(str::to_owned)
    .to_vec()];
    for item in &view.items {
        let agent = match &item.on_behalf_of {
            Some(user) => format!("{} for {user}", item.agent_id),
            None => item.agent_id.clone(),
        };
        rows.push(vec![
            item.plan_id.clone(),
            clean(&item.title),
            clean(&agent),
            item.risk.join(","),
            format!("{} {}", item.credits_max, item.currency),
            item.subjects_total.to_string(),
            format!("{}/{}", item.approvals_received, item.approvals_required),
            turn(item.turn).to_owned(),
            item.expires_at.clone(),
        ]);
    }
    format!(
        "{}Total {} credits pending.\n",
        table(&rows),
        view.total_credits
    )
}

fn diff(style: &Style, diff: &ValueDiff, out: &mut String) {
    match diff {
        ValueDiff::Scalar { before, after } => {
            let _ = writeln!(
                out,
                " {} → {}",
                style.red(&clean(before)),
                style.green(&clean(after))
            );
        }
        ValueDiff::Text { lines, coarse } => {
            let _ = writeln!(
                out,
                "{}",
                if *coarse {
                    " (line diff, cut short)"
                } else {
                    ""
                }
            );
            for line in lines {
                let (mark, paint): (&str, fn(&Style, &str) -> String) = match line.tag.as_str() {
                    "delete" => ("-", Style::red),
                    "insert" => ("+", Style::green),
                    _ => (" ", Style::dim),
                };
                let text: String = line
                    .segments
                    .iter()
                    .map(|s| {
                        if s.emphasized {
                            style.emphasis(&clean(&s.text))
                        } else {
                            clean(&s.text)
                        }
                    })
                    .collect();
                let _ = writeln!(out, "      {}", paint(style, &format!("{mark} {text}")));
            }
        }
        ValueDiff::Json { entries, omitted } => {
            let _ = writeln!(out);
            for e in entries {
                let _ = writeln!(
                    out,
                    "      {} {} {} → {}",
                    e.change,
                    clean(&e.pointer),
                    style.red(&clean(e.before.as_deref().unwrap_or("∅"))),
                    style.green(&clean(e.after.as_deref().unwrap_or("∅")))
                );
            }
            if *omitted > 0 {
                let _ = writeln!(out, "      … and {omitted} more paths");
            }
        }
    }
}

/// How deep each effect sits under its cause, in the order the view lists them.
fn depths(effects: &[EffectView]) -> Vec<usize> {
    let mut depth_of: HashMap<&str, usize> = HashMap::new();
    effects
        .iter()
        .map(|e| {
            let depth = e
                .cause
                .as_deref()
                .and_then(|c| depth_of.get(c))
                .map_or(0, |d| d + 1);
            depth_of.insert(&e.id, depth);
            depth
        })
        .collect()
}

/// Whose move a plan waits for, in a word or two.
fn turn(turn: Turn) -> &'static str {
    match turn {
        Turn::Me => "me",
        Turn::Decided => "decided by me",
        Turn::Others => "others",
    }
}

/// The plan's rules, as the gateway's policy set them: not part of what is signed.
fn rules(style: &Style, view: &PlanView, out: &mut String) {
    if view.rules.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "who must approve (the gateway's approval policy, not part of the signed plan):"
    );
    for rule in &view.rules {
        let mark = match (rule.missing, rule.asks_me) {
            (0, _) => style.green("✓"),
            (_, true) => style.bold("→ you"),
            _ => " ".to_owned(),
        };
        let at = rule
            .source
            .as_ref()
            .map(|s| format!(" [{}]", clean(s)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {mark} {} — {}{at}",
            clean(&rule.line),
            clean(&rule.id)
        );
        let _ = writeln!(out, "      {}", clean(&rule.description));
        for note in rule.excludes.iter().chain(&rule.escalated) {
            let _ = writeln!(out, "      {}", clean(note));
        }
    }
}

pub fn plan(style: &Style, view: &PlanView, budget: Option<String>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}  \"{}\" (the gateway's label, not signed)",
        style.bold(&clean(&view.capability_id)),
        clean(&view.version),
        clean(&view.label)
    );
    let digest = if view.digest_matches {
        style.green("digest ok")
    } else {
        style.red("DIGEST MISMATCH")
    };
    let _ = writeln!(
        out,
        "{}  {}  {}  status {}  expires {}",
        clean(&view.plan_id),
        clean(&view.digest),
        digest,
        clean(&view.status),
        clean(&view.expires_at)
    );
    let _ = writeln!(
        out,
        "open {}",
        countersign_proto::plan::link(&clean(&view.plan_id))
    );
    let caller = match &view.on_behalf_of {
        Some(user) => format!("{} for {user}", view.agent_id),
        None => view.agent_id.clone(),
    };
    let approvals = if view.approvals_required == 0 {
        "none needed".to_owned()
    } else {
        format!("{}/{}", view.approvals_received, view.approvals_required)
    };
    let _ = writeln!(
        out,
        "caller {}  approvals {approvals}{}",
        clean(&caller),
        if view.approved_by.is_empty() {
            String::new()
        } else {
            format!(" ({})", clean(&view.approved_by.join(", ")))
        }
    );
    rules(style, view, &mut out);
    if !view.risk.is_empty() {
        let _ = writeln!(out, "risk {}", style.yellow(&clean(&view.risk.join(", "))));
    }
    request(style, &view.request, &mut out);
    if !view.changes.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Changes"));
        for change in &view.changes {
            let _ = write!(
                out,
                "  {} {}:",
                clean(&change.resource),
                clean(&change.path)
            );
            diff(style, &change.diff, &mut out);
        }
    }
    let _ = writeln!(out, "\n{}", style.bold("Effects"));
    for group in &view.groups {
        let _ = writeln!(
            out,
            "  {} × {}{}{}",
            group.effects,
            clean(&group.effect_type),
            if group.subjects > 0 {
                format!(", {} subjects", group.subjects)
            } else {
                String::new()
            },
            if group.badges.is_empty() {
                String::new()
            } else {
                format!("  [{}]", clean(&group.badges.join(", ")))
            }
        );
    }
    for (effect, depth) in view.effects.iter().zip(depths(&view.effects)) {
        let indent = "  ".repeat(depth + 1);
        let branch = if depth > 0 { "└ " } else { "" };
        let _ = writeln!(
            out,
            "{indent}{branch}{} {} {}  {}{}",
            clean(&effect.id),
            effect.kind,
            clean(&effect.effect_type),
            clean(&effect.description),
            if effect.badges.is_empty() {
                String::new()
            } else {
                style.yellow(&format!("  [{}]", clean(&effect.badges.join(", "))))
            }
        );
        if let Some(total) = effect.subjects_total {
            let more = total.saturating_sub(effect.sample.len() as u64);
            let checked = match effect.sample_check {
                Some(SampleCheck::Unchecked) => " (the gateway's sample, not yet checked)",
                Some(SampleCheck::Mismatch) => " (the gateway's sample contradicts the signed set)",
                _ => "",
            };
            let _ = writeln!(
                out,
                "{indent}    {} subjects: {}{}{checked}",
                total,
                clean(&effect.sample.join(", ")),
                if more > 0 {
                    format!(" … and {more} more")
                } else {
                    String::new()
                }
            );
        }
    }
    if !view.validation.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Validation"));
        for v in &view.validation {
            let severity = match v.severity.as_str() {
                "error" => style.red("error"),
                "warning" => style.yellow("warning"),
                other => other.to_owned(),
            };
            let _ = writeln!(
                out,
                "  {severity} {} {}: {}{}",
                clean(&v.code),
                clean(v.path.as_deref().unwrap_or("")),
                clean(&v.message),
                v.repair
                    .as_deref()
                    .map(|r| format!(" (repair: {})", clean(r)))
                    .unwrap_or_default()
            );
        }
    }
    if !view.assumptions.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Assumptions"));
        for a in &view.assumptions {
            let _ = writeln!(out, "  {}: {}", clean(&a.dependency), clean(&a.description));
        }
    }
    let cost = &view.cost;
    let _ = writeln!(
        out,
        "\nCost {}–{} {} ({}, preflight {}){}",
        cost.min,
        cost.max,
        clean(&cost.currency),
        cost.cost_class,
        cost.preflight,
        budget.map(|b| format!("; {b}")).unwrap_or_default()
    );
    if !view.stale.is_empty() {
        for m in &view.stale {
            let _ = writeln!(
                out,
                "{}",
                style.red(&format!(
                    "moved: {} {} → {}",
                    clean(&m.resource),
                    clean(&m.planned),
                    clean(&m.current)
                ))
            );
        }
    }
    if let Some(execution) = &view.execution {
        out.push_str(&crate::outcome::execution(style, execution));
    }
    match &view.not_approvable_reason {
        None => {
            let _ = writeln!(out, "{}", style.green("Approvable."));
        }
        Some(why) => {
            let _ = writeln!(
                out,
                "{}",
                style.red(&format!("Not approvable: {}", clean(why)))
            );
        }
    }
    out
}

pub fn decision(view: &DecisionView) -> String {
    format!(
        "{}: {} ({}/{} approvals)\n",
        clean(&view.plan_id),
        clean(&view.status),
        view.approvals_received,
        view.approvals_required
    )
}

/// The parameters the plan signs, every value in full: the prompt a provider plan sends is read
/// before it is signed.
fn request(style: &Style, request: &RequestView, out: &mut String) {
    let heading = if request.leaves {
        "Request as signed (sent to an outside service if this plan runs)"
    } else {
        "Request as signed"
    };
    let _ = writeln!(out, "\n{}", style.bold(heading));
    for param in &request.params {
        if param.text.contains('\n') {
            let _ = writeln!(out, "  {}:", clean(&param.path));
            for line in param.text.lines() {
                let _ = writeln!(out, "    {}", clean(line));
            }
        } else {
            let _ = writeln!(out, "  {}: {}", clean(&param.path), clean(&param.text));
        }
    }
}

pub fn changed(style: &Style, changed: &WhatChanged) -> String {
    let mut out = format!(
        "{} supersedes {}\n",
        clean(&changed.to_plan),
        clean(&changed.from_plan)
    );
    if changed.is_empty() {
        out.push_str("Nothing changed but the revisions read.\n");
    }
    for r in &changed.request {
        let _ = write!(out, "{} {}:", style.red("request changed"), clean(&r.path));
        diff(style, &r.diff, &mut out);
    }
    for e in &changed.effects_added {
        let _ = writeln!(
            out,
            "{}",
            style.green(&format!(
                "+ {} on {}: {}",
                clean(&e.effect_type),
                clean(&e.resource),
                clean(&e.description)
            ))
        );
    }
    for e in &changed.effects_removed {
        let _ = writeln!(
            out,
            "{}",
            style.red(&format!(
                "- {} on {}: {}",
                clean(&e.effect_type),
                clean(&e.resource),
                clean(&e.description)
            ))
        );
    }
    for e in &changed.effects_changed {
        let _ = writeln!(out, "~ {} on {}", clean(&e.effect_type), clean(&e.resource));
        if e.description_before != e.description_after {
            let _ = writeln!(
                out,
                "    {} → {}",
                clean(&e.description_before),
                clean(&e.description_after)
            );
        }
        for v in &e.values {
            let _ = write!(out, "    {}:", clean(&v.path));
            diff(style, &v.diff, &mut out);
        }
        if !e.subjects_added.is_empty() {
            let _ = writeln!(
                out,
                "    {}",
                style.green(&format!(
                    "+ subjects {}",
                    clean(&e.subjects_added.join(", "))
                ))
            );
        }
        if !e.subjects_removed.is_empty() {
            let _ = writeln!(
                out,
                "    {}",
                style.red(&format!(
                    "- subjects {}",
                    clean(&e.subjects_removed.join(", "))
                ))
            );
        }
    }
    let _ = writeln!(out, "Cost delta {} credits", changed.cost_delta);
    for m in &changed.moved {
        let _ = writeln!(
            out,
            "moved {} {} → {}",
            clean(&m.resource),
            clean(m.before.as_deref().unwrap_or("∅")),
            clean(m.after.as_deref().unwrap_or("∅"))
        );
    }
    out
}

pub fn check(check: &SubjectCheck) -> String {
    format!(
        "{} {}: {} of {} subjects, {}, digest {} ({})\n",
        clean(&check.plan_id),
        clean(&check.effect_id),
        check.received,
        check.total,
        if check.ascending {
            "ascending"
        } else {
            "NOT ascending"
        },
        if check.matches {
            "matches"
        } else {
            "DOES NOT MATCH"
        },
        clean(&check.computed_digest)
    )
}

pub fn history(entries: &[(JournalEntry, bool)]) -> String {
    if entries.is_empty() {
        return "No decisions sent from this machine.\n".to_owned();
    }
    let mut rows = vec![[
        "ID",
        "PLAN",
        "DECISION",
        "STATE",
        "RECORDED",
        "ATTEMPTS",
        "SIGNATURE",
    ]
    .map(str::to_owned)
    .to_vec()];
    for (e, verified) in entries {
        let state = match (&e.state[..], &e.answer) {
            ("refused", Some(answer)) => {
                format!("refused {}", answer["code"].as_str().unwrap_or(""))
            }
            ("answered", Some(answer)) => {
                format!("answered {}", answer["status"].as_str().unwrap_or(""))
            }
            (state, _) => state.to_owned(),
        };
        rows.push(vec![
            e.id.to_string(),
            e.plan_id.clone(),
            e.decision.clone(),
            state,
            e.recorded_at.clone(),
            e.attempts.to_string(),
            if *verified { "verified" } else { "INVALID" }.to_owned(),
        ]);
    }
    table(&rows)
}

pub fn link(link: Link) -> &'static str {
    match link {
        Link::Online => "online (live)",
        Link::Degraded => "degraded (polling)",
        Link::Offline => "offline",
    }
}
