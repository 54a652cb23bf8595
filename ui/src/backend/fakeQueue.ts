// The fake backend's queue window, as the console computes it (crates/console/src/review/window.rs):
// the whole list filtered, sorted and counted here, a window of it handed out, and each change
// told as what moved within that window.
import type { Facet, PinnedRow, QueueChange, QueueCounts, QueueItem, QueueQuery, QueueWindow, WindowAsk } from './types';

const isSnoozed = (i: QueueItem, now: number) => !!i.snoozed_until && Date.parse(i.snoozed_until) > now;

const TESTS: Record<Facet, (i: QueueItem, now: number) => boolean> = {
  all: () => true,
  mine: (i) => i.turn === 'me',
  risky: (i) => i.risk.length > 0,
  bulk: (i) => i.risk.includes('bulk'),
  access: (i) => i.risk.includes('access_change'),
  money: (i) => i.risk.includes('money'),
  blocked: (i) => i.blocked,
  stale: (i) => i.status === 'stale',
  snoozed: isSnoozed,
};

/** `rows` (soonest expiry first) as `query` shows them; `now` decides which snoozes still hold. */
export function applyFilter(rows: QueueItem[], query: QueueQuery, now: number): QueueItem[] {
  const words = query.text.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const shown = rows.filter((i) => {
    // A snoozed plan shows only where the approver asks for the snoozed ones.
    if (query.facet !== 'snoozed' && isSnoozed(i, now)) return false;
    if (!TESTS[query.facet](i, now)) return false;
    if (query.capability && i.capability_id !== query.capability) return false;
    if (words.length === 0) return true;
    const hay = [i.title, i.gist, i.plan_id, i.capability_id, i.agent_id, i.on_behalf_of ?? '', ...i.risk]
      .join(' ').toLowerCase();
    return words.every((w) => hay.includes(w));
  });
  if (query.sort === 'credits') return shown.sort((a, b) => Number(b.credits_max) - Number(a.credits_max));
  if (query.sort === 'subjects') return shown.sort((a, b) => b.subjects_total - a.subjects_total);
  return shown;
}

/** How many rows each facet would show: the snoozed ones count only under Snoozed. */
export function facetCounts(rows: QueueItem[], now: number): Map<Facet, number> {
  const awake = rows.filter((i) => !isSnoozed(i, now));
  const facets = Object.keys(TESTS) as Facet[];
  return new Map(facets.map((f) => [f, f === 'snoozed' ? rows.length - awake.length : awake.filter((i) => TESTS[f](i, now)).length]));
}

const cents = (s: string) => Math.round(Number(s) * 100);

function counts(rows: QueueItem[], matching: number, now: number): QueueCounts {
  const total = rows.filter((i) => i.currency === 'credits').reduce((sum, i) => sum + cents(i.credits_max), 0);
  return {
    matching,
    all: rows.length,
    facets: [...facetCounts(rows, now)].map(([facet, count]) => ({ facet, count })),
    capabilities: [...new Set(rows.map((i) => i.capability_id))].sort(),
    total_credits: (total / 100).toFixed(2),
  };
}

function pinned(rows: QueueItem[], list: QueueItem[], pins: string[]): PinnedRow[] {
  return [...new Set(pins)].flatMap((id) => {
    const item = rows.find((i) => i.plan_id === id);
    if (!item) return [];
    const at = list.findIndex((i) => i.plan_id === id);
    return [{ at: at < 0 ? null : at, item }];
  });
}

/** The window `ask` shows of `rows`. */
export function windowOf(rows: QueueItem[], ask: WindowAsk, now: number, generation: number): QueueWindow {
  const list = applyFilter(rows, ask.query, now);
  return {
    offset: ask.offset,
    items: list.slice(ask.offset, ask.offset + ask.limit),
    counts: counts(rows, list.length, now),
    pinned: pinned(rows, list, ask.pins),
    generation,
  };
}

/** What turns the window `sent` into `next`, with the plans that arrived anywhere in the queue. */
export function changeOf(sent: QueueWindow, next: QueueWindow, arrived: QueueItem[]): QueueChange {
  const before = new Map(sent.items.map((i) => [i.plan_id, JSON.stringify(i)]));
  const ids = new Set(next.items.map((i) => i.plan_id));
  return {
    from: sent.generation, to: next.generation,
    upserted: next.items.flatMap((item, at) => (before.get(item.plan_id) === JSON.stringify(item) ? [] : [{ at, item }])),
    removed: sent.items.filter((i) => !ids.has(i.plan_id)).map((i) => i.plan_id).sort(),
    total: next.items.length, counts: next.counts, pinned: next.pinned,
    arrivals: arrived.length,
    first_arrival: arrived.length === 1 ? { title: arrived[0].title, agent_id: arrived[0].agent_id } : null,
  };
}

/** The plans from `from` to `to` in the list `query` shows, both included. */
export function between(rows: QueueItem[], query: QueueQuery, from: string, to: string, now: number): string[] {
  const list = applyFilter(rows, query, now);
  const a = list.findIndex((i) => i.plan_id === from);
  const b = list.findIndex((i) => i.plan_id === to);
  if (a < 0 || b < 0) return [];
  return list.slice(Math.min(a, b), Math.max(a, b) + 1).map((i) => i.plan_id);
}
