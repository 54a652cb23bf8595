import { describe, expect, it } from 'vitest';
import { counted } from './time';

describe('counted', () => {
  it('says one thing in the singular and groups the digits of many', () => {
    expect(counted(1, 'plan')).toBe('1 plan');
    expect(counted(0, 'plan')).toBe('0 plans');
    expect(counted(100000, 'subject')).toBe('100,000 subjects');
  });
});
