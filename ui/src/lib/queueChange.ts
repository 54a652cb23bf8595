// A live change of the queue, applied to the view the window holds: only the rows that moved
// cross IPC, and the rows kept stay where they were around the placed ones.
import type { QueueChange, QueueView } from '../backend';

/** A view whose generation is unknown: the next change cannot apply to it. */
export const UNKNOWN_GENERATION = -1;

export type Applied = {
  view: QueueView;
  /** The plans whose rows were added, changed or removed. */
  touched: Set<string>;
};

/** `view` moved on by `change`, or null when the change is not from this view's generation (the
 *  window then asks for the whole queue). */
export function applyChange(view: QueueView, change: QueueChange): Applied | null {
  // Already there: the whole queue was read after the change was made.
  if (change.to === view.generation) return { view, touched: new Set() };
  if (change.from !== view.generation) return null;
  const touched = new Set([...change.removed, ...change.upserted.map((p) => p.item.plan_id)]);
  if (touched.size === 0) return { view: { ...view, generation: change.to, total_credits: change.total_credits }, touched };
  const kept = view.items.filter((i) => !touched.has(i.plan_id));
  if (kept.length + change.upserted.length !== change.total) return null;
  const items = new Array(change.total);
  for (const placed of change.upserted) {
    if (placed.at >= change.total || items[placed.at] !== undefined) return null;
    items[placed.at] = placed.item;
  }
  let next = 0;
  for (let at = 0; at < items.length; at++) {
    if (items[at] === undefined) items[at] = kept[next++];
  }
  return { view: { items, total_credits: change.total_credits, generation: change.to }, touched };
}
