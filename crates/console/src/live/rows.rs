//! The queue window of a live console: the window asks for the rows in view under a query, and
//! each change of the queue is told to it as what moved within those rows, with the counts.

use crate::console::Console;
use crate::error::ConsoleError;
use crate::live::window::{WindowAsk, MAX_PINS, MAX_WINDOW_ROWS};
use crate::review::window::{Arrival, QueueChange, QueueQuery, QueueWindow, SentRows, MAX_BATCH};

impl Console {
    /// The rows `ask` shows, whole; live changes are told against them from now on.
    pub fn queue_window(&self, ask: WindowAsk) -> Result<QueueWindow, ConsoleError> {
        if ask.limit > MAX_WINDOW_ROWS {
            return Err(ConsoleError::Invalid(format!(
                "at most {MAX_WINDOW_ROWS} rows at once, not {}",
                ask.limit
            )));
        }
        if ask.pins.len() > MAX_PINS {
            return Err(ConsoleError::Invalid(format!(
                "at most {MAX_PINS} pinned plans, not {}",
                ask.pins.len()
            )));
        }
        let mut state = self.windows().lock().unwrap_or_else(|p| p.into_inner());
        let cut = self.with_rows(|listed| state.cut(&ask, &listed));
        state.sent = SentRows::default();
        state.sent.change_to(cut.generation, &cut.items);
        state.asked = Some(ask.clone());
        Ok(QueueWindow {
            offset: ask.offset,
            items: cut.items,
            counts: cut.counts,
            pinned: cut.pinned,
            generation: cut.generation,
        })
    }

    /// How the window's rows moved since they were last given it, with the plans that
    /// `arrived` (new to the queue since the last change); `None` before a window asked.
    pub fn queue_change(&self, arrived: &[String]) -> Option<QueueChange> {
        let mut state = self.windows().lock().unwrap_or_else(|p| p.into_inner());
        let ask = state.asked.clone()?;
        let (cut, first_arrival) = self.with_rows(|listed| {
            let first_arrival = match arrived {
                [one] => listed
                    .summaries
                    .iter()
                    .find(|s| s.plan_id == *one)
                    .map(|s| Arrival {
                        title: s.title.clone(),
                        agent_id: s.caller.agent_id.clone(),
                    }),
                _ => None,
            };
            (state.cut(&ask, &listed), first_arrival)
        });
        let moved = state.sent.change_to(cut.generation, &cut.items);
        Some(QueueChange {
            from: moved.from,
            to: cut.generation,
            upserted: moved.upserted,
            removed: moved.removed,
            total: u32::try_from(cut.items.len()).unwrap_or(u32::MAX),
            counts: cut.counts,
            pinned: cut.pinned,
            arrivals: u32::try_from(arrived.len()).unwrap_or(u32::MAX),
            first_arrival,
        })
    }

    /// The plans from `from` to `to` in the list `query` shows, both included: a range picked
    /// for batch review, at most a batch.
    pub fn queue_between(
        &self,
        query: &QueueQuery,
        from: &str,
        to: &str,
    ) -> Result<Vec<String>, ConsoleError> {
        let mut state = self.windows().lock().unwrap_or_else(|p| p.into_inner());
        let ids = self.with_rows(|listed| {
            state
                .list(query, &listed)
                .between(listed.summaries, from, to)
        });
        if ids.len() > MAX_BATCH {
            return Err(ConsoleError::Invalid(format!(
                "a batch holds at most {MAX_BATCH} plans; this range has {}",
                ids.len()
            )));
        }
        Ok(ids)
    }
}
