import { describe, expect, it } from 'vitest';
import type { PinnedRow, QueueChange, QueueItem, QueueWindow } from '../backend';
import { applyChange, EMPTY_WINDOW } from './queueChange';

function row(plan_id: string, approvals_received = 0): QueueItem {
  return {
    plan_id, title: 'Change retention', capability_id: 'projects.settings.update', agent_id: 'agt_ops',
    on_behalf_of: null, status: 'pending_approval', risk: [], credits_max: '0.01', currency: 'credits',
    effects_direct: 1, effects_derived: 0, subjects_total: 0, warnings: 0, errors: 0,
    approvals_received, approvals_required: 2, expires_at: '2026-12-03T10:00:00Z', gist: '1 effect',
    gist_read: false, blocked: false, queued: false, approved_by: [], turn: 'me', snoozed_until: null,
  };
}

const view = (generation: number, ids: string[], pinned: PinnedRow[] = []): QueueWindow => ({
  ...EMPTY_WINDOW, items: ids.map((id) => row(id)), pinned, generation,
});

function change(from: number, to: number, upserted: [number, QueueItem][], removed: string[], total: number, pinned: PinnedRow[] = []): QueueChange {
  return {
    from, to, upserted: upserted.map(([at, item]) => ({ at, item })), removed, total,
    counts: { ...EMPTY_WINDOW.counts, matching: total, all: total }, pinned, arrivals: 0, first_arrival: null,
  };
}

describe('a live change of the queue', () => {
  it('places added and changed rows and keeps the others in their order', () => {
    const applied = applyChange(view(3, ['a', 'b', 'c', 'd']), change(3, 4, [[0, row('e')], [2, row('c', 1)]], ['b'], 4));
    expect(applied?.window.items.map((i) => [i.plan_id, i.approvals_received])).toEqual([['e', 0], ['a', 0], ['c', 1], ['d', 0]]);
    expect(applied?.window.generation).toBe(4);
    expect([...(applied?.touched ?? [])].sort()).toEqual(['b', 'c', 'e']);
  });

  it('keeps the very rows when nothing in them moved', () => {
    const before = view(5, ['a', 'b']);
    const applied = applyChange(before, change(5, 6, [], [], 2));
    expect(applied?.window.items).toBe(before.items);
    expect(applied?.touched.size).toBe(0);
  });

  it('does not apply to another generation, nor when its counts do not add up', () => {
    expect(applyChange(view(2, ['a']), change(3, 4, [], [], 1))).toBeNull();
    expect(applyChange(view(3, ['a', 'b']), change(3, 4, [[0, row('c')]], [], 2))).toBeNull();
    expect(applyChange(view(3, ['a']), change(3, 4, [[5, row('c')]], [], 2))).toBeNull();
  });

  it('touches a pinned plan whose row changed, though it is out of the window', () => {
    const before = view(5, ['a'], [{ at: 900, item: row('z') }]);
    const applied = applyChange(before, change(5, 6, [], [], 1, [{ at: 899, item: row('z', 1) }]));
    expect([...(applied?.touched ?? [])]).toEqual(['z']);
    expect(applied?.window.pinned[0].at).toBe(899);
    const moved = applyChange(before, change(5, 6, [], [], 1, [{ at: 899, item: row('z') }]));
    expect(moved?.touched.size).toBe(0);
  });

  it('is already applied when the whole queue was read after it', () => {
    const current = view(4, ['a']);
    expect(applyChange(current, change(3, 4, [[0, row('b')]], [], 2))?.window).toBe(current);
  });
});
