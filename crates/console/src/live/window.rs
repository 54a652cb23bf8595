//! What a live console keeps of its queue window: what the window last asked for, the rows it was
//! given, and the list they were cut from (`rows` hands them out; `review::window` computes the
//! list). One window a console: the desktop has one queue.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use countersign_proto::approvals::PlanSummary;
use serde::Deserialize;
use ts_rs::TS;

use crate::review::window::{Ordered, PinnedRow, QueueCounts, QueueQuery, SentRows, MAX_BATCH};
use crate::review::{QueueItem, RowContext};

/// The most rows one window may ask for: a tall screen's worth, with room to scroll.
pub const MAX_WINDOW_ROWS: u32 = 500;
/// The plans a window may pin: the open plan, a snoozed one it speaks of, and a batch.
pub const MAX_PINS: usize = MAX_BATCH + 2;

/// Which rows a window shows.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, TS)]
pub struct WindowAsk {
    pub query: QueueQuery,
    pub offset: u32,
    pub limit: u32,
    /// Plans whose rows come with every answer and change, wherever they are.
    pub pins: Vec<String>,
}

/// The window as last given its rows, and the list it was cut from.
#[derive(Default)]
pub(crate) struct WindowState {
    pub(crate) asked: Option<WindowAsk>,
    pub(crate) sent: SentRows,
    list: Option<(ListKey, Ordered)>,
}

/// Generations count across the process, not per console: a window that moves to another
/// session (enrolled elsewhere) never takes the new console's rows for older than its own.
fn next_generation() -> u64 {
    static GENERATION: AtomicU64 = AtomicU64::new(0);
    GENERATION.fetch_add(1, Ordering::Relaxed) + 1
}

/// What a list was computed from: while none of it moves, a scroll reads the same list.
#[derive(PartialEq, Eq)]
struct ListKey {
    queue: u64,
    rows: usize,
    gists: u64,
    /// A snooze that ends brings its plan back before the queue's generation says so.
    asleep: usize,
    query: QueueQuery,
}

impl ListKey {
    /// Only words are matched against gists: without them, a gist read changes no list.
    fn new(query: &QueueQuery, listed: &Listed<'_>) -> ListKey {
        ListKey {
            queue: listed.queue,
            rows: listed.summaries.len(),
            gists: if query.text.trim().is_empty() {
                0
            } else {
                listed.gists
            },
            asleep: listed.asleep,
            query: query.clone(),
        }
    }
}

pub(crate) type Windows = Mutex<WindowState>;

/// The listed plans as a window's rows are cut from them: the summaries, what the console adds
/// to their rows, the queue's generation, the gists' epoch and the time snoozes are judged at.
pub(crate) struct Listed<'a> {
    pub summaries: &'a [PlanSummary],
    pub context: &'a dyn RowContext,
    pub queue: u64,
    pub gists: u64,
    /// How many plans are snoozed at `now`.
    pub asleep: usize,
    pub now: chrono::DateTime<chrono::Utc>,
}

/// What a window is given of the queue, under the window's next generation.
pub(crate) struct Cut {
    pub items: Vec<QueueItem>,
    pub counts: QueueCounts,
    pub pinned: Vec<PinnedRow>,
    pub generation: u64,
}

impl WindowState {
    /// The list `query` shows, computed again only when the queue, the query or (for words)
    /// the gists moved since the one kept.
    pub(crate) fn list(&mut self, query: &QueueQuery, listed: &Listed<'_>) -> &Ordered {
        let key = ListKey::new(query, listed);
        if self.list.as_ref().is_none_or(|(k, _)| *k != key) {
            let ordered = Ordered::new(listed.summaries, query, listed.context, listed.now);
            self.list = Some((key, ordered));
        }
        &self.list.as_ref().expect("computed above").1
    }

    /// The rows, counts and pinned rows `ask` shows, under the window's next generation.
    pub(crate) fn cut(&mut self, ask: &WindowAsk, listed: &Listed<'_>) -> Cut {
        let list = self.list(&ask.query, listed);
        let items = list.rows(listed.summaries, listed.context, ask.offset, ask.limit);
        let counts = list.counts.clone();
        let pinned = list.pinned(listed.summaries, listed.context, &ask.pins);
        Cut {
            items,
            counts,
            pinned,
            generation: next_generation(),
        }
    }
}
