import { fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import type { QueueItem } from '../backend';
import Queue from './QueueTest.svelte';
import { ROW_HEIGHT } from './queueFilter';
import { clock } from './time';

function item(n: number): QueueItem {
  return {
    plan_id: `plan_${String(n).padStart(5, '0')}`,
    title: `Update project settings ${n}`,
    capability_id: 'projects.settings.update',
    agent_id: 'agt_ops',
    on_behalf_of: null,
    status: 'pending_approval',
    risk: [],
    credits_max: '0.00',
    currency: 'credits',
    effects_direct: 1,
    effects_derived: 1,
    subjects_total: 18,
    warnings: 0,
    errors: 0,
    approvals_received: 0,
    approvals_required: 1,
    expires_at: '2026-11-30T10:15:00Z',
    gist: 'prj_184 retention 30 → 14',
    gist_read: true,
    blocked: false,
    queued: false,
    approved_by: [], turn: 'me', snoozed_until: null,
  };
}


describe('the queue', () => {
  it('renders a window of rows, however long it is, and follows the scroll', async () => {
    const items = Array.from({ length: 10_000 }, (_, n) => item(n));
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {} } });
    const rows = () => screen.getAllByTestId('queue-row').map((r) => r.dataset.planId);
    expect(rows().length).toBeLessThan(30);
    expect(rows()[0]).toBe('plan_00000');
    const viewport = screen.getByTestId('queue-rows');
    expect(viewport.querySelector('ul')!.style.height).toBe(`${10_000 * ROW_HEIGHT}px`);
    Object.defineProperty(viewport, 'clientHeight', { value: 10 * ROW_HEIGHT });

    viewport.scrollTop = 9_990 * ROW_HEIGHT;
    await fireEvent.scroll(viewport);
    expect(rows()).toContain('plan_09999');
    expect(rows()).not.toContain('plan_00000');
    expect(rows().length).toBeLessThan(30);
  });

  it('tells which rows are in view, and only those', async () => {
    const items = Array.from({ length: 10_000 }, (_, n) => item(n));
    const seen: string[][] = [];
    const last = () => seen[seen.length - 1];
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {}, onview: (rows: QueueItem[]) => seen.push(rows.map((r) => r.plan_id)) } });
    expect(last()[0]).toBe('plan_00000');
    expect(last().length).toBeLessThan(30);
    const viewport = screen.getByTestId('queue-rows');
    Object.defineProperty(viewport, 'clientHeight', { value: 10 * ROW_HEIGHT });
    viewport.scrollTop = 5_000 * ROW_HEIGHT;
    await fireEvent.scroll(viewport);
    expect(last()).toContain('plan_05000');
    expect(last()).not.toContain('plan_00000');
    expect(last().length).toBeLessThan(30);
  });

  it('scrolls a row selected from the keyboard into view', async () => {
    const items = Array.from({ length: 500 }, (_, n) => item(n));
    const { rerender } = render(Queue, {
      props: { items, selectedId: 'plan_00000', now: 0, onselect: () => {} },
    });
    const viewport = screen.getByTestId('queue-rows');
    Object.defineProperty(viewport, 'clientHeight', { value: 10 * ROW_HEIGHT });
    await rerender({ items, selectedId: 'plan_00400', now: 0, onselect: () => {} });
    expect(viewport.scrollTop).toBe(401 * ROW_HEIGHT - 10 * ROW_HEIGHT);
    await fireEvent.scroll(viewport);
    expect(screen.getAllByTestId('queue-row').map((r) => r.dataset.planId)).toContain('plan_00400');
  });

  it('leaves the scroll alone when the queue updates under the same selection', async () => {
    const items = Array.from({ length: 500 }, (_, n) => item(n));
    const { rerender } = render(Queue, {
      props: { items, selectedId: 'plan_00000', now: 0, onselect: () => {} },
    });
    const viewport = screen.getByTestId('queue-rows');
    Object.defineProperty(viewport, 'clientHeight', { value: 10 * ROW_HEIGHT });
    viewport.scrollTop = 300 * ROW_HEIGHT;
    await fireEvent.scroll(viewport);
    expect(viewport.scrollTop).toBe(300 * ROW_HEIGHT);
    await rerender({ items: [...items, item(500)], selectedId: 'plan_00000', now: 0, onselect: () => {} });
    expect(viewport.scrollTop).toBe(300 * ROW_HEIGHT);
  });

  it('shows the first chips of a row and counts the rest, naming them', () => {
    const risky = {
      ...item(1),
      status: 'stale',
      risk: ['irreversible', 'access_change', 'money', 'external'],
    };
    render(Queue, { props: { items: [risky, item(2)], selectedId: null, now: 0, onselect: () => {} } });
    const [first, second] = screen.getAllByTestId('queue-row');
    const chips = [...first.querySelectorAll('.chip:not([data-testid=row-turn])')].map((c) => c.textContent!.trim());
    expect(chips).toEqual(['stale', 'irreversible', '+3']);
    expect(first.querySelector('.chip.more')!.getAttribute('title')).toBe(
      'access change, money, external',
    );
    expect(second.querySelectorAll('.chip:not([data-testid=row-turn])')).toHaveLength(0);
  });

  it('says on each row whether the plan waits on me, on others, or was decided by me', () => {
    const items = [item(1), { ...item(2), turn: 'others' as const }, { ...item(3), turn: 'decided' as const }];
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {} } });
    const turns = screen.getAllByTestId('row-turn').map((c) => c.textContent!.trim());
    expect(turns).toEqual(['needs you', 'waits on others', 'you decided']);
  });

  it('opens on the plans that need me for an approver in a team, and lets them see all', async () => {
    const items = [item(1), { ...item(2), turn: 'others' as const }, item(3)];
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {}, mineFirst: true } });
    const shown = () => screen.getAllByTestId('queue-row').map((r) => r.getAttribute('data-plan-id'));
    expect(screen.getByTestId('facet-mine').getAttribute('aria-pressed')).toBe('true');
    expect(shown()).toEqual(['plan_00001', 'plan_00003']);
    await fireEvent.click(screen.getByTestId('facet-all'));
    expect(shown()).toEqual(['plan_00001', 'plan_00002', 'plan_00003']);
  });

  it('opens on every plan for an approver in no team', () => {
    render(Queue, { props: { items: [item(1), { ...item(2), turn: 'others' as const }], selectedId: null, now: 0, onselect: () => {} } });
    expect(screen.getByTestId('facet-all').getAttribute('aria-pressed')).toBe('true');
    expect(screen.getAllByTestId('queue-row')).toHaveLength(2);
  });

  it('filters by text over title, gist, agent and plan id', async () => {
    const items = [
      { ...item(1), title: 'Remove members from a group', gist: 'grp_support −37', agent_id: 'agt_offboard' },
      { ...item(2), gist: 'prj_184 retention 30 → 14' },
      { ...item(3), gist: 'prj_201 retention 30 → 7' },
    ];
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {} } });
    const shown = () => screen.getAllByTestId('queue-row').map((r) => r.dataset.planId);
    const filter = screen.getByTestId('queue-filter');
    await fireEvent.input(filter, { target: { value: 'retention prj_184' } });
    expect(shown()).toEqual(['plan_00002']);
    await fireEvent.input(filter, { target: { value: 'offboard' } });
    expect(shown()).toEqual(['plan_00001']);
    await fireEvent.keyDown(filter, { key: 'Escape' });
    expect(shown()).toHaveLength(3);
  });

  it('filters by risk chip and capability, counting each chip', async () => {
    const items = [
      { ...item(1), risk: ['bulk', 'access_change'], capability_id: 'groups.members.remove' },
      { ...item(2), blocked: true, errors: 1 },
      { ...item(3), risk: ['money'] },
    ];
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {} } });
    const shown = () => screen.getAllByTestId('queue-row').map((r) => r.dataset.planId);
    expect(screen.getByTestId('facet-risky').textContent).toBe('Risky 2');
    expect(screen.queryByTestId('facet-stale')).toBeNull();
    await fireEvent.click(screen.getByTestId('facet-blocked'));
    expect(shown()).toEqual(['plan_00002']);
    expect(screen.getByTestId('facet-blocked').getAttribute('aria-pressed')).toBe('true');
    await fireEvent.click(screen.getByTestId('facet-risky'));
    expect(shown()).toEqual(['plan_00001', 'plan_00003']);
    await fireEvent.click(screen.getByTestId('facet-all'));
    await fireEvent.change(screen.getByTestId('queue-capability'), { target: { value: 'groups.members.remove' } });
    expect(shown()).toEqual(['plan_00001']);
  });

  it('sorts by credits and by distinct subjects', async () => {
    const items = [
      { ...item(1), credits_max: '0.37', subjects_total: 37 },
      { ...item(2), credits_max: '900.00', subjects_total: 3 },
      { ...item(3), credits_max: '0.09', subjects_total: 100_000 },
    ];
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {} } });
    const shown = () => screen.getAllByTestId('queue-row').map((r) => r.dataset.planId);
    expect(shown()).toEqual(['plan_00001', 'plan_00002', 'plan_00003']);
    await fireEvent.change(screen.getByTestId('queue-sort'), { target: { value: 'credits' } });
    expect(shown()).toEqual(['plan_00002', 'plan_00001', 'plan_00003']);
    await fireEvent.change(screen.getByTestId('queue-sort'), { target: { value: 'subjects' } });
    expect(shown()).toEqual(['plan_00003', 'plan_00001', 'plan_00002']);
  });

  it('shows the gist, credits, a live countdown and who approved, and picks plans for a batch', async () => {
    const picked: [string, string][] = [];
    const approved = { ...item(1), approvals_received: 1, approvals_required: 2, approved_by: ['Ada'], credits_max: '0.37' };
    const now = Date.parse('2026-11-30T10:02:41Z');
    render(Queue, { props: { items: [approved, item(2)], selectedId: 'plan_00001', now, onselect: () => {},
      ontoggle: (id: string, mode: string) => picked.push([id, mode]) } });
    const [first, second] = screen.getAllByTestId('queue-row');
    expect(first.getAttribute('aria-selected')).toBe('true');
    expect(second.getAttribute('aria-selected')).toBe('false');
    expect(first.textContent).toContain('prj_184 retention 30 → 14');
    expect(first.textContent).toContain('13 min');
    expect(first.textContent).toContain('0.37 cr');
    expect(first.querySelector('[data-testid=row-approvals]')!.getAttribute('title')).toBe('1 of 2 approvals; approved by Ada');
    await fireEvent.click(second.querySelector('[data-testid=select-plan]')!);
    await fireEvent.click(first, { shiftKey: true });
    await fireEvent.click(first, { ctrlKey: true });
    expect(picked).toEqual([['plan_00002', 'toggle'], ['plan_00001', 'range'], ['plan_00001', 'toggle']]);
  });

  it('leaves snoozed plans out until their time, shows them under Snoozed with an Unsnooze, and brings them back', async () => {
    const now = Date.parse('2026-11-30T10:00:00Z');
    const until = new Date(now + 15 * 60_000).toISOString();
    const items = [item(1), { ...item(2), snoozed_until: until }, item(3)];
    const woken: string[] = [];
    const props = { items, selectedId: null, now, onselect: () => {}, onunsnooze: (id: string) => woken.push(id) };
    const { rerender } = render(Queue, { props });
    const shown = () => screen.getAllByTestId('queue-row').map((r) => r.dataset.planId);
    expect(shown()).toEqual(['plan_00001', 'plan_00003']);
    expect(screen.getByTestId('queue-total').textContent).toContain('2 of 3');
    expect(screen.getByTestId('facet-snoozed').textContent).toBe('Snoozed 1');
    expect(screen.getByTestId('facet-all').textContent).toBe('All 2');

    await fireEvent.click(screen.getByTestId('facet-snoozed'));
    expect(shown()).toEqual(['plan_00002']);
    expect(screen.getByTestId('row-snoozed').textContent).toBe(`until ${clock(until)}`);
    await fireEvent.click(screen.getByTestId('unsnooze'));
    expect(woken).toEqual(['plan_00002']);

    // Its time passes: the row is back in the default view and the emptied facet gives way.
    await rerender({ ...props, now: now + 15 * 60_000 + 1000 });
    expect(shown()).toEqual(['plan_00001', 'plan_00002', 'plan_00003']);
    expect(screen.queryByTestId('facet-snoozed')).toBeNull();
    expect(screen.getByTestId('facet-all').getAttribute('aria-pressed')).toBe('true');
    expect(screen.queryByTestId('unsnooze')).toBeNull();
  });
});
