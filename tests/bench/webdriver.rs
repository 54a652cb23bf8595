//! The real desktop binary under tauri-driver and WebKitWebDriver, and the page it renders. The UI
//! is a skeleton that will be rewritten: every selector the benchmark depends on is here.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
pub use countersign_e2e::webdriver::{plan_effect, queue_row, wait_for, Driver, QUEUE_ROW};
use fantoccini::Client;
use serde_json::json;

/// Clicks a row and reports, from inside the page, the milliseconds until the selected plan's
/// first effect is in the DOM and a frame with it has been painted.
const TIME_TO_FIRST_SCREEN: &str = r#"
const [rowSelector, effectSelector, done] = arguments;
const rows = document.querySelector("[data-testid='queue-rows']");
// The queue renders only the rows in view: scroll it a screen at a time until the row is there.
// The window holds only those rows: after a scroll, the console's rows for the new view come a
// few frames later, so a screen is looked at once its rows are drawn (or after 120 frames).
const drawn = () => {
  const view = rows.getBoundingClientRect();
  return [...rows.querySelectorAll("[data-testid='queue-row']")].some((r) => {
    const box = r.getBoundingClientRect();
    return box.bottom > view.top && box.top < view.bottom;
  });
};
const seek = (top, frames) => {
  if (!rows) { done(-1); return; }
  if (!drawn() && frames < 120) { requestAnimationFrame(() => seek(top, frames + 1)); return; }
  const row = document.querySelector(rowSelector);
  if (row) { measure(row); return; }
  if (top > rows.scrollHeight) { done(-1); return; }
  rows.scrollTop = top;
  rows.dispatchEvent(new Event('scroll'));
  requestAnimationFrame(() => seek(top + Math.max(rows.clientHeight, 100), 0));
};
const measure = (row) => {
  const start = performance.now();
  const painted = () => requestAnimationFrame(() => done(performance.now() - start));
  const observer = new MutationObserver(() => {
    if (document.querySelector(effectSelector)) { observer.disconnect(); painted(); }
  });
  observer.observe(document.body, { childList: true, subtree: true });
  row.click();
};
seek(0, 0);
"#;

/// Waits until the header counts at least `count` pending plans (the queue renders only the rows
/// in view, so the DOM never holds them all).
pub async fn wait_for_pending(
    client: &Client,
    count: usize,
    within: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let found = client
            .execute(
                "const c = document.querySelector(\"[data-testid='pending-count']\");
                 return c ? parseInt(c.textContent, 10) || 0 : 0;",
                vec![],
            )
            .await?
            .as_u64()
            .unwrap_or(0) as usize;
        if found >= count {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{found} of {count} pending plans after {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Milliseconds from a click on `plan_id`'s queue row to its first screen, measured in the page.
pub async fn time_to_first_screen(client: &Client, plan_id: &str) -> anyhow::Result<f64> {
    let elapsed = client
        .execute_async(
            TIME_TO_FIRST_SCREEN,
            vec![json!(queue_row(plan_id)), json!(plan_effect(plan_id))],
        )
        .await?
        .as_f64()
        .context("the page reported no time")?;
    if elapsed < 0.0 {
        bail!("no queue row for {plan_id}");
    }
    Ok(elapsed)
}

/// Waits for the open plan's subject list to report that the full set matches its digest, then
/// scrolls it to its end until the last row is loaded; answers that row's subject id. The rows are
/// read a step after the scroll, and only once the same last row is seen twice at the end: the
/// list renders the rows in view after the scroll event, not during it.
const SUBJECTS_TO_THE_END: &str = r#"
const done = arguments[0];
let seen = null;
const step = () => {
  const check = document.querySelector("[data-testid='subjects-check']");
  const list = document.querySelector("[data-testid='subjects-scroll']");
  if (!check || !list) { setTimeout(step, 50); return; }
  if (check.dataset.matches !== 'true') { done({ error: 'the subjects do not match their digest' }); return; }
  const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - 1;
  if (!atEnd) {
    seen = null;
    list.scrollTop = list.scrollHeight;
    list.dispatchEvent(new Event('scroll'));
    setTimeout(step, 50);
    return;
  }
  const rows = list.querySelectorAll("[data-testid='subject-row']");
  const last = rows[rows.length - 1];
  const id = last && last.dataset.subjectId;
  if (id && id === seen) { done({ id }); return; }
  seen = id || null;
  setTimeout(step, 50);
};
step();
"#;

/// The open plan's subject list, digest-checked and scrolled to its last row: that row's id.
pub async fn scroll_subjects_to_end(client: &Client) -> anyhow::Result<String> {
    let answer = client
        .execute_async(SUBJECTS_TO_THE_END, vec![])
        .await
        .context("scrolling the subject list")?;
    if let Some(error) = answer["error"].as_str() {
        bail!("{error}");
    }
    answer["id"]
        .as_str()
        .map(str::to_owned)
        .context("the page reported no last subject")
}
