import { describe, expect, it } from 'vitest';
import { demoStanding } from '../backend/demo';
import { allStrings, constraintLine, isCredits, openParams, parseValues, useText, valuesText } from './standing';

describe('a standing approval\'s constraints as typed', () => {
  it('shows strings bare and anything else as JSON', () => {
    expect(valuesText(['"prj_184"', '"prj_201"'])).toBe('prj_184, prj_201');
    expect(valuesText(['14'])).toBe('14');
    expect(allStrings(['"prj_184"'])).toBe(true);
    expect(allStrings(['14'])).toBe(false);
  });

  it('keeps what is typed as text where the plan\'s value was text, "14" included', () => {
    expect(parseValues('prj_184, 14', 'one_of', true)).toEqual({ values: ['"prj_184"', '"14"'], error: null });
    expect(parseValues('14, 21', 'one_of', false)).toEqual({ values: ['14', '21'], error: null });
    expect(parseValues('14, staff', 'one_of', false)).toEqual({ values: ['14', '"staff"'], error: null });
  });

  it('takes one number for at least and at most, and says so otherwise', () => {
    expect(parseValues(' 7 ', 'at_least', false)).toEqual({ values: ['7'], error: null });
    expect(parseValues('7, 8', 'at_most', false).error).toBe('“at most” takes one number.');
    expect(parseValues('prj_184', 'at_least', true).error).toBe('“at least” takes one number.');
    expect(parseValues(' , ', 'one_of', true).error).toBe('Give a value.');
  });

  it('words a constraint as the core does', () => {
    expect(constraintLine('/project', 'one_of', ['"prj_184"'])).toBe('project is prj_184');
    expect(constraintLine('/project', 'one_of', ['"prj_184"', '"prj_201"'])).toBe('project is prj_184 or prj_201');
    expect(constraintLine('/retention_days', 'at_least', ['7'])).toBe('retention_days ≥ 7');
    expect(constraintLine('/retention_days', 'at_most', ['30'])).toBe('retention_days ≤ 30');
  });

  it('says how much of it is used, and which caps are credits', () => {
    const s = { ...demoStanding()[0], plans_used: 3, credits_used: '6.00', max_cost_total: '20.00' };
    expect(useText(s)).toBe('3 of 10 plans run · 6.00 of 20.00 credits');
    expect(useText({ ...s, max_plans: 1, plans_used: 0 })).toBe('0 of 1 plan run · 6.00 of 20.00 credits');
    expect(useText(demoStanding()[0])).toBe('1 of 10 plans run · 0.09 of 0.90 credits');
    expect(isCredits('0.37')).toBe(true);
    expect(isCredits(' 12 ')).toBe(true);
    expect(isCredits('0.375')).toBe(false);
    expect(isCredits('-1')).toBe(false);
  });

  it('names the params no constraint reaches: one on /filter/team reaches /filter', () => {
    expect(openParams(['/filter', '/group', '/note'], ['/group', '/filter/team'])).toEqual(['note']);
    expect(openParams(['/filter', '/group', '/note'], ['/group'])).toEqual(['filter', 'note']);
    expect(openParams(['/filter'], ['/filterx'])).toEqual(['filter']);
    expect(openParams(['/group'], ['/group'])).toEqual([]);
    expect(openParams([], [])).toEqual([]);
  });
});
