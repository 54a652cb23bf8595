import { describe, expect, it } from 'vitest';
import { isSnoozed } from '../lib/queueFilter';
import { applyFilter, between, changeOf, facetCounts, windowOf } from './fakeQueue';
import type { Facet, QueueItem } from './types';

const NOW = Date.parse('2026-11-30T10:00:00Z');
const at = (minutes: number) => new Date(NOW + minutes * 60_000).toISOString();

function item(id: string, change: Partial<QueueItem> = {}): QueueItem {
  return {
    plan_id: id, title: `Plan ${id}`, capability_id: 'projects.settings.update', agent_id: 'agt_ops', on_behalf_of: null,
    status: 'pending_approval', risk: [], credits_max: '0.00', currency: 'credits', effects_direct: 1, effects_derived: 0,
    subjects_total: 0, warnings: 0, errors: 0, approvals_received: 0, approvals_required: 1, expires_at: at(60),
    gist: '', gist_read: true, blocked: false, queued: false, approved_by: [], turn: 'me', snoozed_until: null, ...change,
  };
}

const ids = (items: QueueItem[]) => items.map((i) => i.plan_id);
const filter = (items: QueueItem[], facet: Facet, now: number) => ids(applyFilter(items, { text: '', facet, capability: '', sort: 'expiry' }, now));

describe('snoozed plans', () => {
  const items = [
    item('a'),
    item('b', { snoozed_until: at(15), risk: ['money'] }),
    item('c', { snoozed_until: at(-1) }),
    item('d', { snoozed_until: at(60), status: 'stale' }),
  ];

  it('holds a snooze until its time, not after', () => {
    expect(isSnoozed(items[1], NOW)).toBe(true);
    expect(isSnoozed(items[1], NOW + 15 * 60_000)).toBe(false);
    expect(isSnoozed(items[2], NOW)).toBe(false);
    expect(isSnoozed(items[0], NOW)).toBe(false);
  });

  it('leaves them out of every view but Snoozed, which shows only them', () => {
    expect(filter(items, 'all', NOW)).toEqual(['a', 'c']);
    expect(filter(items, 'money', NOW)).toEqual([]);
    expect(filter(items, 'stale', NOW)).toEqual([]);
    expect(filter(items, 'snoozed', NOW)).toEqual(['b', 'd']);
  });

  it('brings each back when its time passes', () => {
    const later = NOW + 20 * 60_000;
    expect(filter(items, 'all', later)).toEqual(['a', 'b', 'c']);
    expect(filter(items, 'money', later)).toEqual(['b']);
    expect(filter(items, 'snoozed', later)).toEqual(['d']);
    expect(filter(items, 'all', NOW + 61 * 60_000)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('counts a snoozed plan under Snoozed alone', () => {
    const counts = facetCounts(items, NOW);
    expect(counts.get('snoozed')).toBe(2);
    expect(counts.get('all')).toBe(2);
    expect(counts.get('money')).toBe(0);
    expect(counts.get('stale')).toBe(0);
    const later = facetCounts(items, NOW + 20 * 60_000);
    expect(later.get('snoozed')).toBe(1);
    expect(later.get('money')).toBe(1);
  });
});

describe('the fake queue window', () => {
  const rows = Array.from({ length: 50 }, (_, n) => item(`p${String(n).padStart(2, '0')}`, { risk: n % 5 === 0 ? ['bulk'] : [] }));
  const query = { text: '', facet: 'bulk' as Facet, capability: '', sort: 'expiry' as const };

  it('hands out the rows asked for, with the counts and the pinned plans', () => {
    const window = windowOf(rows, { query, offset: 2, limit: 3, pins: ['p45', 'p01', 'gone'] }, NOW, 7);
    expect(ids(window.items)).toEqual(['p10', 'p15', 'p20']);
    expect(window.counts.matching).toBe(10);
    expect(window.counts.all).toBe(50);
    expect(window.pinned.map((p) => [p.item.plan_id, p.at])).toEqual([['p45', 9], ['p01', null]]);
    expect(between(rows, query, 'p20', 'p10', NOW)).toEqual(['p10', 'p15', 'p20']);
  });

  it('tells a change as what moved within the window', () => {
    const ask = { query, offset: 0, limit: 3, pins: [] };
    const sent = windowOf(rows, ask, NOW, 1);
    const next = windowOf(rows.filter((r) => r.plan_id !== 'p05'), ask, NOW, 2);
    const change = changeOf(sent, next, []);
    expect(change.removed).toEqual(['p05']);
    expect(change.upserted.map((p) => [p.at, p.item.plan_id])).toEqual([[2, 'p15']]);
    expect([change.from, change.to, change.total, change.counts.matching]).toEqual([1, 2, 3, 9]);
  });
});
