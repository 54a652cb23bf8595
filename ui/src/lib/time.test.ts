import { describe, expect, it } from 'vitest';
import { counted, isUrgent, remaining } from './time';

describe('counted', () => {
  it('says one thing in the singular and groups the digits of many', () => {
    expect(counted(1, 'plan')).toBe('1 plan');
    expect(counted(0, 'plan')).toBe('0 plans');
    expect(counted(100000, 'subject')).toBe('100,000 subjects');
  });
});

describe('remaining', () => {
  const now = Date.parse('2026-11-30T10:00:00Z');
  const at = (ms: number) => new Date(now + ms).toISOString();

  it('counts minutes, rounded up, until the plan turns urgent, then seconds', () => {
    expect(remaining(at(12 * 60_000 + 19_000), now)).toBe('13 min');
    expect(remaining(at(3 * 60_000), now)).toBe('3 min');
    expect(isUrgent(at(3 * 60_000), now)).toBe(false);
    expect(remaining(at(3 * 60_000 - 1_000), now)).toBe('02:59');
    expect(isUrgent(at(3 * 60_000 - 1_000), now)).toBe(true);
    expect(remaining(at(5_000), now)).toBe('00:05');
    expect(remaining(at(0), now)).toBe('expired');
    expect(remaining(at(125 * 60_000), now)).toBe('2 h 05 min');
    expect(remaining('not a time', now)).toBe('—');
  });

  it('changes its text once a minute while there is time', () => {
    const texts = new Set<string>();
    for (let s = 0; s < 60; s++) texts.add(remaining(at(10 * 60_000), now + s * 1000));
    expect([...texts]).toEqual(['10 min']);
    texts.clear();
    for (let s = 0; s < 60; s++) texts.add(remaining(at(2 * 60_000), now + s * 1000));
    expect(texts.size).toBe(60);
  });
});
