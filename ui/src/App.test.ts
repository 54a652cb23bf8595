import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import App from './App.svelte';
import { BackendError } from './backend';
import { FakeBackend } from './backend/fake';

async function renderApp() {
  const backend = new FakeBackend();
  render(App, { props: { backend } });
  await waitFor(() => expect(screen.getAllByTestId('queue-row').length).toBe(3));
  return backend;
}

describe('the console', () => {
  it('lists pending plans soonest expiry first with the credit total', async () => {
    await renderApp();
    const ids = screen.getAllByTestId('queue-row').map((r) => r.dataset.planId);
    expect(ids).toEqual(['plan_0003', 'plan_0001', 'plan_0002']);
    expect(screen.getByTestId('pending-count').textContent).toContain('3 pending · 0.37 credits');
  });

  it('shows an agent-written title as text, never as HTML', async () => {
    await renderApp();
    const row = screen.getAllByTestId('queue-row')[0];
    expect(row.textContent).toContain('<img src=x onerror=alert(1)>');
    expect(row.querySelector('img')).toBeNull();
  });

  it('disables approval of a blocked plan and says why', async () => {
    await renderApp();
    await waitFor(() => expect(screen.getByTestId('plan').dataset.planId).toBe('plan_0003'));
    expect((screen.getByTestId('approve') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('not-approvable').textContent).toContain('blocked');
  });

  it('moves with j and approves with a, and the plan shows the new approval', async () => {
    const backend = await renderApp();
    await waitFor(() => expect(screen.getByTestId('plan').dataset.planId).toBe('plan_0003'));
    await fireEvent.keyDown(window, { key: 'j' });
    await waitFor(() => expect(screen.getByTestId('plan').dataset.planId).toBe('plan_0001'));
    const plan = screen.getByTestId('plan');
    expect(within(plan).getByText('30').className).toBe('before');
    expect(within(plan).getByText('14').className).toBe('after');
    await fireEvent.keyDown(window, { key: 'a' });
    await waitFor(() => expect(backend.approvals).toEqual(['plan_0001']));
    await waitFor(() => expect(screen.getByTestId('notice').textContent).toContain('1 of 1'));
    await waitFor(() => expect(screen.getAllByTestId('queue-row').length).toBe(2));
  });

  it('groups derived effects under their cause and shows blockers before warnings', async () => {
    await renderApp();
    await fireEvent.click(screen.getAllByTestId('queue-row')[2]);
    await waitFor(() => expect(screen.getByTestId('plan').dataset.planId).toBe('plan_0002'));
    const effects = screen.getAllByTestId('effect');
    expect(effects.map((e) => e.classList.contains('derived'))).toEqual([false, true]);
    expect(screen.getByText(/Irreversible: Six subjects lose/)).toBeTruthy();
  });
});

describe('while the gateway is starting', () => {
  it('says so, then shows the queue once it changes', async () => {
    const backend = new FakeBackend();
    const realQueue = backend.queue.bind(backend);
    let ready = false;
    backend.queue = async () => {
      if (!ready) throw new BackendError('starting', 'Connecting to the gateway…');
      return realQueue();
    };
    let notify: () => void = () => {};
    backend.onQueueChanged = async (listener) => {
      notify = listener;
      return () => {};
    };
    render(App, { props: { backend } });
    await waitFor(() => expect(screen.getByTestId('load-error').textContent).toContain('starting'));
    ready = true;
    notify();
    await waitFor(() => expect(screen.getAllByTestId('queue-row').length).toBe(3));
    expect(screen.queryByTestId('load-error')).toBeNull();
  });
});
