import { describe, expect, it, vi } from 'vitest';
import { render, fireEvent } from '@testing-library/svelte';
import Insights from './Insights.svelte';
import { FakeBackend } from '../backend/fake';
import { duration, percent } from './insights';

// jsdom draws no canvas: the chart is uPlot's to draw, and the real window's to show (tests/app.rs).
const drawn = vi.hoisted(() => [] as unknown[]);
vi.mock('uplot', () => ({
  default: class {
    constructor(_options: unknown, data: unknown) {
      drawn.push(data);
    }
    destroy() {}
  },
}));

describe('insights', () => {
  it('writes durations and shares in words a person reads', () => {
    expect(duration(null)).toBe('—');
    expect(duration(42.4)).toBe('42 s');
    expect(duration(420)).toBe('7 min');
    expect(duration(12_600)).toBe('3.5 h');
    expect(duration(172_800)).toBe('2.0 d');
    expect(percent(null)).toBe('—');
    expect(percent(0.935)).toBe('94 %');
  });

  it('shows each capability and approver, and asks again for another window', async () => {
    const backend = new FakeBackend();
    const asked: string[] = [];
    const insights = backend.insights.bind(backend);
    backend.insights = (window) => {
      asked.push(window);
      return insights(window);
    };
    const screen = render(Insights, { backend });
    const capabilities = await screen.findByTestId('insights-capabilities');
    expect(capabilities.textContent).toContain('groups.members.remove');
    expect(capabilities.textContent).toContain('21 min');
    const approvers = await screen.findByTestId('insights-approvers');
    expect(approvers.textContent).toContain('Dana Whitfield');
    expect(approvers.textContent).toContain('90 %');
    expect(screen.getByTestId('insights-window-7d').getAttribute('aria-checked')).toBe('true');
    await fireEvent.click(screen.getByTestId('insights-window-30d'));
    expect(asked).toEqual(['7d', '30d']);
    expect(screen.getByTestId('insights-window-30d').getAttribute('aria-checked')).toBe('true');
    expect(screen.getByText(/signal, not a verdict/)).toBeTruthy();
    // The chart was given one point per day of the window, minutes on the y axis.
    const last = () => drawn[drawn.length - 1] as [number[], (number | null)[]];
    await vi.waitFor(() => expect(last()[0].length).toBe(31));
    const [, ys] = last();
    expect(ys.filter((y) => y !== null).every((y) => y! >= 2)).toBe(true);
  });
});
