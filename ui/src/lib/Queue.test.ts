import { fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import type { QueueItem } from '../backend';
import Queue from './Queue.svelte';

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
    blocked: false,
    queued: false,
    approved_by: [],
  };
}

const ROW = 84;

describe('the queue', () => {
  it('renders a window of rows, however long it is, and follows the scroll', async () => {
    const items = Array.from({ length: 10_000 }, (_, n) => item(n));
    render(Queue, { props: { items, selectedId: null, now: 0, onselect: () => {} } });
    const rows = () => screen.getAllByTestId('queue-row').map((r) => r.dataset.planId);
    expect(rows().length).toBeLessThan(30);
    expect(rows()[0]).toBe('plan_00000');
    const viewport = screen.getByTestId('queue-rows');
    expect(viewport.querySelector('ul')!.style.height).toBe(`${10_000 * ROW}px`);
    Object.defineProperty(viewport, 'clientHeight', { value: 10 * ROW });

    viewport.scrollTop = 9_990 * ROW;
    await fireEvent.scroll(viewport);
    expect(rows()).toContain('plan_09999');
    expect(rows()).not.toContain('plan_00000');
    expect(rows().length).toBeLessThan(30);
  });

  it('scrolls a row selected from the keyboard into view', async () => {
    const items = Array.from({ length: 500 }, (_, n) => item(n));
    const { rerender } = render(Queue, {
      props: { items, selectedId: 'plan_00000', now: 0, onselect: () => {} },
    });
    const viewport = screen.getByTestId('queue-rows');
    Object.defineProperty(viewport, 'clientHeight', { value: 10 * ROW });
    await rerender({ items, selectedId: 'plan_00400', now: 0, onselect: () => {} });
    expect(viewport.scrollTop).toBe(401 * ROW - 10 * ROW);
    await fireEvent.scroll(viewport);
    expect(screen.getAllByTestId('queue-row').map((r) => r.dataset.planId)).toContain('plan_00400');
  });

  it('leaves the scroll alone when the queue updates under the same selection', async () => {
    const items = Array.from({ length: 500 }, (_, n) => item(n));
    const { rerender } = render(Queue, {
      props: { items, selectedId: 'plan_00000', now: 0, onselect: () => {} },
    });
    const viewport = screen.getByTestId('queue-rows');
    Object.defineProperty(viewport, 'clientHeight', { value: 10 * ROW });
    viewport.scrollTop = 300 * ROW;
    await fireEvent.scroll(viewport);
    expect(viewport.scrollTop).toBe(300 * ROW);
    await rerender({ items: [...items, item(500)], selectedId: 'plan_00000', now: 0, onselect: () => {} });
    expect(viewport.scrollTop).toBe(300 * ROW);
  });

  it('shows the first chips of a row and counts the rest, naming them', () => {
    const risky = {
      ...item(1),
      status: 'stale',
      risk: ['irreversible', 'access_change', 'money', 'external'],
    };
    render(Queue, { props: { items: [risky, item(2)], selectedId: null, now: 0, onselect: () => {} } });
    const [first, second] = screen.getAllByTestId('queue-row');
    const chips = [...first.querySelectorAll('.chip')].map((c) => c.textContent!.trim());
    expect(chips).toEqual(['stale', 'irreversible', '+3']);
    expect(first.querySelector('.chip.more')!.getAttribute('title')).toBe(
      'access change, money, external',
    );
    expect(second.querySelectorAll('.chip')).toHaveLength(0);
  });
});
