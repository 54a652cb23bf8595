import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backend/fake';
import Subjects from './Subjects.svelte';

const ROW = 26;
beforeAll(() => {
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get: () => 10 * ROW });
});
afterAll(() => {
  Reflect.deleteProperty(HTMLElement.prototype, 'clientHeight');
});

async function renderBulk(backend = new FakeBackend()) {
  const plan = await backend.plan('plan_0008');
  render(Subjects, { props: { backend, planId: 'plan_0008', effects: plan.effects, effectId: 'eff_1', onclose: () => {} } });
  await waitFor(() => expect(ids()[0]).toBe('usr_000000'));
  return backend;
}

const ids = () => screen.queryAllByTestId('subject-row').map((r) => r.dataset.subjectId);

describe('all subjects', () => {
  it('renders only the rows in view of 100,000 and pages the rest in as it scrolls', async () => {
    const backend = await renderBulk();
    expect(ids().length).toBeLessThan(40);
    const scroll = screen.getByTestId('subjects-scroll');
    expect(scroll.querySelector('ul')!.style.height).toBe(`${100_000 * ROW}px`);
    expect(screen.getByTestId('subjects-count').textContent).toBe('100,000');
    const calls = backend.subjectCalls;
    scroll.scrollTop = 99_995 * ROW;
    await fireEvent.scroll(scroll);
    await waitFor(() => expect(ids()).toContain('usr_099999'));
    expect(ids()).not.toContain('usr_000000');
    expect(ids().length).toBeLessThan(40);
    // One more window, not the whole set.
    expect(backend.subjectCalls - calls).toBe(1);
  });

  it('says calmly that the gateway does not answer, and loads on Try again', async () => {
    const backend = new FakeBackend();
    const plan = await backend.plan('plan_0008');
    backend.goOffline();
    render(Subjects, { props: { backend, planId: 'plan_0008', effects: plan.effects, effectId: 'eff_1', onclose: () => {} } });
    await waitFor(() => expect(screen.getByTestId('subjects-offline').textContent).toContain('does not answer'));
    expect(screen.queryByRole('alert')).toBeNull();
    backend.goOnline();
    await fireEvent.click(screen.getByText('Try again'));
    await waitFor(() => expect(ids()[0]).toBe('usr_000000'));
    expect(screen.queryByTestId('subjects-offline')).toBeNull();
  });

  it('shows names and what else happens to each subject', async () => {
    await renderBulk();
    const first = screen.getAllByTestId('subject-row')[0];
    expect(first.textContent).toContain('Ari Okafor 0');
    expect(first.textContent).toContain('loses on-call');
  });

  it('says what the effect does to each subject: the retention items their expiry before → after', async () => {
    const backend = new FakeBackend();
    const plan = await backend.plan('plan_0001');
    render(Subjects, { props: { backend, planId: 'plan_0001', effects: plan.effects.filter((e) => e.subjects_total), effectId: 'eff_2', onclose: () => {} } });
    await waitFor(() => expect(ids()[0]).toBe('itm_01'));
    const first = screen.getAllByTestId('subject-row')[0];
    expect(first.textContent).toContain('Build artifact');
    expect(first.querySelector('[data-testid=subject-detail]')!.textContent).toBe('expires 2026-12-19 → 2026-12-03');
  });

  it('searches ids and names through the backend', async () => {
    await renderBulk();
    await fireEvent.input(screen.getByTestId('subjects-search'), { target: { value: 'usr_09999' } });
    await waitFor(() => expect(ids()).toEqual(Array.from({ length: 10 }, (_, n) => `usr_09999${n}`)));
    expect(screen.getByTestId('subjects-count').textContent).toBe('10 of 100,000');
  });

  it('shows the full-set digest check, matching or not', async () => {
    await renderBulk();
    expect(screen.getByTestId('subjects-check').dataset.matches).toBe('true');
    expect(screen.getByTestId('subjects-check').textContent).toContain('full set matches digest');
  });

  it('says when the full set does not match its digest', async () => {
    const backend = new FakeBackend();
    backend.mismatched.add('plan_0008/eff_1');
    await renderBulk(backend);
    expect(screen.getByTestId('subjects-check').dataset.matches).toBe('false');
    expect(screen.getByTestId('subjects-check').textContent).toContain('does not match');
  });
});
