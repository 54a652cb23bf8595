import { describe, expect, it } from 'vitest';
import { clock, counted, heading, isUrgent, relative, remaining } from './time';

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

describe('relative', () => {
  const now = Date.parse('2026-11-30T10:00:00Z');
  const at = (ms: number) => new Date(now + ms).toISOString();

  it('says how far off a time is in its largest unit, ahead or behind', () => {
    expect(relative(at(5 * 86_400_000 - 60_000), now)).toBe('in 5 days');
    expect(relative(at(86_400_000), now)).toBe('in 1 day');
    expect(relative(at(3 * 3_600_000), now)).toBe('in 3 h');
    expect(relative(at(12 * 60_000), now)).toBe('in 12 min');
    expect(relative(at(20_000), now)).toBe('in under a minute');
    expect(relative(at(-2 * 86_400_000), now)).toBe('2 days ago');
    expect(relative('not a time', now)).toBe('—');
  });
});

describe('clock', () => {
  it('gives the hour and minute on this machine\'s clock', () => {
    const d = new Date(2026, 10, 30, 14, 5, 59);
    expect(clock(d.toISOString())).toBe('14:05');
    expect(clock(new Date(2026, 10, 30, 9, 0).toISOString())).toBe('09:00');
    expect(clock('soon')).toBe('—');
  });
});

describe('heading', () => {
  it('turns a type name into words, keeping acronyms whole', () => {
    expect(heading('direct_membership_removed')).toBe('Direct membership removed');
    expect(heading('mcp_tool_call')).toBe('MCP tool call');
    expect(heading('mcpx_call')).toBe('Mcpx call');
  });
});
