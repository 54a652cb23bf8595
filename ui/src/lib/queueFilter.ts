// How a queue row reads: its height, its chips, the facets' names. Which rows show, and in which
// order, the console decides (`queueWindow`).
import type { Facet, QueueItem } from '../backend';
import { label } from './time';

// Every queue row is this tall, so the rows in view follow from the scroll position alone: a
// queue of 100,000 plans renders a screenful.
export const ROW_HEIGHT = 84;

/** What each facet is called, in the order the queue offers them. */
export const FACETS: { id: Facet; name: string }[] = [
  { id: 'all', name: 'All' },
  { id: 'mine', name: 'Needs me' },
  { id: 'risky', name: 'Risky' },
  { id: 'bulk', name: 'Bulk' },
  { id: 'access', name: 'Access' },
  { id: 'money', name: 'Money' },
  { id: 'blocked', name: 'Blocked' },
  { id: 'stale', name: 'Stale' },
  { id: 'snoozed', name: 'Snoozed' },
];

/** The approver snoozed the plan and its time has not come: the default view leaves it out. */
export function isSnoozed(item: QueueItem | undefined, now: number): boolean {
  return !!item?.snoozed_until && Date.parse(item.snoozed_until) > now;
}

/** 37, 1,031, 100k: short enough for a chip. */
export function compact(n: number): string {
  return n >= 10_000 ? `${Math.round(n / 1000)}k` : n.toLocaleString('en-US');
}

export type Chip = { kind: string; text: string };

/** Whose move the plan waits for, in the row's words. */
export function turnText(item: QueueItem): string {
  if (item.turn === 'me') return 'needs you';
  if (item.turn === 'decided') return 'you decided';
  return 'waits on others';
}

/** In order of concern: the first few show, the rest are counted. */
export function chips(item: QueueItem): Chip[] {
  const all: Chip[] = [];
  if (item.queued) all.push({ kind: 'queued', text: 'queued' });
  if (item.status === 'stale') all.push({ kind: 'stale', text: 'stale' });
  if (item.blocked || item.errors > 0) all.push({ kind: 'blocked', text: 'blocked' });
  for (const flag of item.risk.filter((r) => r !== 'blocked'))
    all.push({ kind: `risk-${flag}`, text: flag === 'bulk' ? `bulk ${compact(item.subjects_total)}` : label(flag) });
  // Warnings after the risk flags: a flag says more about the consequence than a count does.
  if (item.warnings > 0)
    all.push({ kind: 'warn', text: `${item.warnings} warning${item.warnings > 1 ? 's' : ''}` });
  return all;
}
