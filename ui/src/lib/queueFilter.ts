// Which queue rows show, in which order, and the chips on each.
import type { QueueItem } from '../backend';
import { label } from './time';

// Every queue row is this tall, so the rows in view follow from the scroll position alone: a
// queue of 10,000 plans renders a screenful.
export const ROW_HEIGHT = 84;

export type Sort = 'expiry' | 'credits' | 'subjects';
export type Facet = 'all' | 'mine' | 'risky' | 'bulk' | 'access' | 'money' | 'blocked' | 'stale' | 'snoozed';

/** The approver snoozed the plan and its time has not come: the default view leaves it out. */
export function isSnoozed(item: QueueItem, now: number): boolean {
  return !!item.snoozed_until && Date.parse(item.snoozed_until) > now;
}

export const FACETS: { id: Facet; name: string; test: (i: QueueItem, now: number) => boolean }[] = [
  { id: 'all', name: 'All', test: () => true },
  { id: 'mine', name: 'Needs me', test: (i) => i.turn === 'me' },
  { id: 'risky', name: 'Risky', test: (i) => i.risk.length > 0 },
  { id: 'bulk', name: 'Bulk', test: (i) => i.risk.includes('bulk') },
  { id: 'access', name: 'Access', test: (i) => i.risk.includes('access_change') },
  { id: 'money', name: 'Money', test: (i) => i.risk.includes('money') },
  { id: 'blocked', name: 'Blocked', test: (i) => i.blocked },
  { id: 'stale', name: 'Stale', test: (i) => i.status === 'stale' },
  { id: 'snoozed', name: 'Snoozed', test: isSnoozed },
];

/** `now` decides which snoozes still hold. */
export type Filter = { text: string; facet: Facet; capability: string; sort: Sort; now: number };

export function applyFilter(items: QueueItem[], f: Filter): QueueItem[] {
  const words = f.text.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const facet = FACETS.find((x) => x.id === f.facet)!;
  const shown = items.filter((i) => {
    // A snoozed plan shows only where the approver asks for the snoozed ones.
    if (f.facet !== 'snoozed' && isSnoozed(i, f.now)) return false;
    if (!facet.test(i, f.now)) return false;
    if (f.capability && i.capability_id !== f.capability) return false;
    if (words.length === 0) return true;
    const hay = [i.title, i.gist, i.plan_id, i.capability_id, i.agent_id, i.on_behalf_of ?? '', ...i.risk]
      .join(' ').toLowerCase();
    return words.every((w) => hay.includes(w));
  });
  if (f.sort === 'credits') return shown.sort((a, b) => Number(b.credits_max) - Number(a.credits_max));
  if (f.sort === 'subjects') return shown.sort((a, b) => b.subjects_total - a.subjects_total);
  // The gateway lists soonest expiry first; keep that order.
  return shown;
}

/** How many rows each facet would show: the snoozed ones count only under Snoozed. */
export function facetCounts(items: QueueItem[], now: number): Map<Facet, number> {
  const awake = items.filter((i) => !isSnoozed(i, now));
  return new Map(FACETS.map((f) => [f.id, f.id === 'snoozed' ? items.length - awake.length : awake.filter((i) => f.test(i, now)).length]));
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
