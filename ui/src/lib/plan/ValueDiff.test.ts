import { render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import type { DiffLine, ValueDiff as Diff } from '../../backend';
import ValueDiff from './ValueDiff.svelte';

const line = (tag: string, ...segments: [string, boolean][]): DiffLine => ({
  tag, old_line: tag === 'insert' ? null : 1, new_line: tag === 'delete' ? null : 1,
  segments: segments.map(([text, emphasized]) => ({ text, emphasized })),
});

const TEXT: DiffLine[] = [
  line('delete', ['Support rota for ', false], ['all staff and contractors', true], ['.', false]),
  line('insert', ['Support rota for ', false], ['staff', true], ['.', false]),
  line('equal', ['Escalate through the on-call channel.', false]),
];

/** The text drawn: what a screen reader alone is told left out. */
const seen = (el: Element): string => [...el.childNodes].map((n) => (n instanceof Element && n.classList.contains('sr-only') ? '' : n instanceof Element ? seen(n) : n.textContent)).join('');
/** The text read out: what is drawn for the eye alone (aria-hidden) left out. */
const heard = (el: Element): string => [...el.childNodes].map((n) => (n instanceof Element ? (n.getAttribute('aria-hidden') === 'true' ? '' : heard(n)) : n.textContent)).join('');

describe('a value diff', () => {
  it('renders a text diff line by line, highlighting the changed words', () => {
    render(ValueDiff, { props: { diff: { kind: 'text', lines: TEXT, coarse: false } } });
    const lines = [...screen.getByTestId('diff-text').querySelectorAll('.line')];
    expect(lines.map((l) => l.getAttribute('data-tag'))).toEqual(['delete', 'insert', 'equal']);
    expect(seen(lines[0])).toBe('-Support rota for all staff and contractors.');
    // Removed and added said in words, not by colour and sign alone.
    expect(lines[0].querySelector('.sr-only')!.textContent).toBe('removed: ');
    expect(lines[1].querySelector('.sr-only')!.textContent).toBe('added: ');
    expect([...lines[0].querySelectorAll('mark.word')].map((m) => m.textContent)).toEqual(['all staff and contractors']);
    expect([...lines[1].querySelectorAll('mark.word')].map((m) => m.textContent)).toEqual(['staff']);
    expect(lines[2].querySelectorAll('mark')).toHaveLength(0);
    expect(screen.queryByTestId('diff-coarse')).toBeNull();
  });

  it('says so when the diff is coarse', () => {
    const coarse = TEXT.map((l) => ({ ...l, segments: [{ text: l.segments.map((s) => s.text).join(''), emphasized: false }] }));
    render(ValueDiff, { props: { diff: { kind: 'text', lines: coarse, coarse: true } } });
    expect(screen.getByTestId('diff-coarse').textContent).toContain('whole lines only');
    expect(screen.getByTestId('diff-text').querySelectorAll('mark')).toHaveLength(0);
  });

  it('lists JSON pointer changes with both sides and counts the omitted ones', () => {
    const diff: Diff = { kind: 'json', omitted: 2, entries: [
      { pointer: '/quota_gb', change: 'changed', before: '500', after: '200' },
      { pointer: '/alert_at', change: 'added', before: null, after: '0.9' },
      { pointer: '/legacy', change: 'removed', before: 'true', after: null },
    ] };
    render(ValueDiff, { props: { diff } });
    const rows = [...screen.getByTestId('diff-json').querySelectorAll('tr')];
    expect(rows.map((r) => r.dataset.change)).toEqual(['changed', 'added', 'removed']);
    expect(rows[0].querySelector('.before')!.textContent).toBe('500');
    expect(rows[0].querySelector('.after')!.textContent).toBe('200');
    expect(rows[1].querySelector('.before')).toBeNull();
    expect(rows[2].querySelector('.after')).toBeNull();
    expect(screen.getByTestId('diff-omitted').textContent).toContain('2 more');
  });

  it('shows no difference for scalars that are not both numbers', () => {
    render(ValueDiff, { props: { diff: { kind: 'scalar', before: '(none)', after: '184320' } } });
    expect(seen(screen.getByTestId('diff-scalar'))).toBe('(none) → 184320');
    expect(screen.queryByTestId('diff-delta')).toBeNull();
  });

  it('shows a scalar as before → after, with the difference of numbers', () => {
    render(ValueDiff, { props: { diff: { kind: 'scalar', before: '30', after: '14' } } });
    expect(seen(screen.getByTestId('diff-scalar'))).toBe('30 → 14 (−16)');
    expect(heard(screen.getByTestId('diff-scalar'))).toBe('from 30 to 14 (−16)');
    expect(screen.getByText('30').className).toBe('before');
    expect(screen.getByText('14').className).toBe('after');
  });
});
