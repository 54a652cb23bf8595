// What the App tests share: a rendered app over the fake backend, and ways to reach its rows.
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { afterAll, beforeAll, expect } from 'vitest';
import App from './App.svelte';
import { FakeBackend, type FakeOptions } from './backend/fake';

/** jsdom lays nothing out: every scroll container gets a screen's height, so the virtualized
 *  lists render the rows a window would. Call at the top of a test file. */
export function withScreenHeight() {
  beforeAll(() => {
    Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get: () => 800 });
  });
  afterAll(() => {
    Reflect.deleteProperty(HTMLElement.prototype, 'clientHeight');
  });
}

export const ORDER = ['plan_0003', 'plan_0004', 'plan_0001', 'plan_0002', 'plan_0015', 'plan_0006', 'plan_0007', 'plan_0008', 'plan_0009'];

export async function renderApp(options: FakeOptions = {}) {
  const backend = new FakeBackend(options);
  render(App, { props: { backend } });
  await waitFor(() => expect(screen.getAllByTestId('queue-row').length).toBe(ORDER.length));
  await shown('plan_0003');
  return backend;
}

export const shown = (id: string) => waitFor(() => expect(screen.getByTestId('plan').dataset.planId).toBe(id));
export const row = (id: string) => document.querySelector<HTMLElement>(`[data-testid='queue-row'][data-plan-id='${id}']`)!;
export const key = (k: string, extra: KeyboardEventInit = {}) => fireEvent.keyDown(window, { key: k, ...extra });
export const state = () => screen.getByTestId('decision-state');

export async function open(id: string) {
  await fireEvent.click(row(id));
  await shown(id);
}
