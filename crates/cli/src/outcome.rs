//! An executed plan's result in the terminal, from the envelope alone: content or error,
//! estimated against charged credits, usage, and each output as a line (a `data:` URL is named
//! and sized, never printed; a remote one is printed as its address).

use std::fmt::Write as _;

use countersign_console::review::execution::ExecutionView;

use crate::style::{clean, Style};

pub fn execution(style: &Style, view: &ExecutionView) -> String {
    let mut out = String::new();
    let state = match (view.success, view.in_flight) {
        (_, true) => style.yellow("in flight"),
        (false, false) => style.red("failed"),
        (true, false) => style.green("succeeded"),
    };
    let _ = writeln!(out, "Execution: {state} · {}", clean(&view.provider));
    match &view.error {
        Some(e) => {
            let again = if e.retryable {
                " (may succeed if tried again)"
            } else {
                ""
            };
            let _ = writeln!(out, "  {} {}{again}", clean(&e.code), clean(&e.message));
        }
        None if !view.content.is_empty() => {
            for line in view.content.lines() {
                let _ = writeln!(out, "  {}", clean(line));
            }
        }
        None => {}
    }
    let estimated = view.estimated.as_deref().unwrap_or("—");
    let charged = view.charged.as_deref().unwrap_or("—");
    // While the call is in flight the amount is the reserved maximum, not yet a charge.
    let paid = if view.in_flight {
        "reserved"
    } else {
        "charged"
    };
    let _ = writeln!(
        out,
        "  Credits: estimated {}, {paid} {}",
        clean(estimated),
        clean(charged)
    );
    // Tokens where a provider counts them, as the window shows; then what else was counted.
    let u = &view.usage;
    let mut usage: Vec<String> = Vec::new();
    if u.input_tokens + u.output_tokens > 0 || u.units.is_empty() {
        usage.push(format!("{} input tokens", u.input_tokens));
        usage.push(format!("{} output tokens", u.output_tokens));
    }
    usage.extend(
        u.units
            .iter()
            .map(|(unit, n)| format!("{n} {}", clean(unit))),
    );
    let usage = usage.join(" · ");
    let _ = writeln!(out, "  Usage: {usage}");
    for m in &view.media {
        let kind = serde_json::to_value(m.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mime = m.mime_type.as_deref().unwrap_or("");
        let size = m
            .size_bytes
            .map(|n| format!(", {n} bytes"))
            .unwrap_or_default();
        let place = match (&m.link, &m.inline) {
            (Some(link), _) => format!(" {}", clean(link)),
            (None, Some(_)) => {
                " (carried inline; open the plan in the console to play it)".to_owned()
            }
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "  {kind}: {} ({}{size}){place}",
            clean(&m.name),
            clean(mime)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_console::review::execution::execution_view;
    use serde_json::json;

    #[test]
    fn a_provider_result_prints_cost_usage_and_outputs_without_their_bytes() {
        let record = json!({
            "charged": {"amount": "0.50"}, "estimated": {"amount_min": "0.20", "amount_max": "0.80"},
            "result": {"success": true, "content": "Generated 2 images.", "provider": "replicate",
                       "usage": {"input_tokens": 0, "output_tokens": 0, "credits": "0.50",
                                 "units": {"images": 2, "predict_ms": 5000}},
                       "metadata": {}, "files": [{"name": "speech.wav", "mime_type": "audio/wav",
                                                  "url": "data:audio/wav;base64,UklGRg=="}],
                       "images": [{"url": "https://replicate.delivery/x/out-0.png\u{1b}[2J",
                                   "mime_type": "image/png"}], "videos": []}
        });
        let text = execution(&Style::plain(), &execution_view(&record).unwrap());
        assert!(text.contains("Execution: succeeded · replicate"), "{text}");
        assert!(text.contains("Credits: estimated 0.20–0.80 credits, charged 0.50 credits"));
        assert!(
            text.contains("Usage: 2 images · 5000 predict_ms\n"),
            "{text}"
        );
        assert!(text.contains("image: out-0.png"));
        assert!(
            !text.contains('\u{1b}'),
            "agent-written text cannot drive the terminal"
        );
        assert!(!text.contains("UklGRg"), "inline bytes are not printed");
    }

    #[test]
    fn a_failed_call_prints_its_error() {
        let record = json!({"charged": {"amount": "0.00"}, "result": {"success": false,
            "provider": "openai", "metadata": {"trace_id": "trc_1"},
            "error": {"code": "provider_refused", "message": "Filtered.", "details": {},
                      "retryable": false}}});
        let text = execution(&Style::plain(), &execution_view(&record).unwrap());
        assert!(text.contains("failed"));
        assert!(text.contains("provider_refused Filtered."));
    }
}
