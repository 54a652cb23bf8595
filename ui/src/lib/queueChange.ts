// A live change of the queue, applied to the window's rows: only the rows that moved within the
// window cross IPC, and the rows kept stay where they were around the placed ones.
import type { PinnedRow, QueueChange, QueueWindow } from '../backend';

/** A window whose generation is unknown: the next change cannot apply to it. */
export const UNKNOWN_GENERATION = -1;

export const EMPTY_WINDOW: QueueWindow = {
  offset: 0,
  items: [],
  counts: { matching: 0, all: 0, facets: [], capabilities: [], total_credits: '0.00' },
  pinned: [],
  generation: UNKNOWN_GENERATION,
};

export type Applied = {
  window: QueueWindow;
  /** The plans whose rows were added, changed or removed, in the window or among its pinned. */
  touched: Set<string>;
};

/** The pinned plans whose rows changed, came or went. */
function pinnedMoved(before: PinnedRow[], after: PinnedRow[]): string[] {
  const was = new Map(before.map((p) => [p.item.plan_id, JSON.stringify(p.item)]));
  const now = new Map(after.map((p) => [p.item.plan_id, JSON.stringify(p.item)]));
  return [...new Set([...was.keys(), ...now.keys()])].filter((id) => was.get(id) !== now.get(id));
}

/** `window` moved on by `change`, or null when the change is not from this window's generation
 *  (the window then asks for its rows again). */
export function applyChange(window: QueueWindow, change: QueueChange): Applied | null {
  // Already there: the window was read after the change was made.
  if (change.to === window.generation) return { window, touched: new Set() };
  if (change.from !== window.generation) return null;
  const moved = new Set([...change.removed, ...change.upserted.map((p) => p.item.plan_id)]);
  const touched = new Set([...moved, ...pinnedMoved(window.pinned, change.pinned)]);
  const next = { ...window, counts: change.counts, pinned: change.pinned, generation: change.to };
  if (moved.size === 0) return change.total === window.items.length ? { window: next, touched } : null;
  const kept = window.items.filter((i) => !moved.has(i.plan_id));
  if (kept.length + change.upserted.length !== change.total) return null;
  const items = new Array(change.total);
  for (const placed of change.upserted) {
    if (placed.at >= change.total || items[placed.at] !== undefined) return null;
    items[placed.at] = placed.item;
  }
  let at = 0;
  for (let n = 0; n < items.length; n++) {
    if (items[n] === undefined) items[n] = kept[at++];
  }
  return { window: { ...next, items }, touched };
}
