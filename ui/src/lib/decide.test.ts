import { describe, expect, it } from 'vitest';
import { demoPlans } from '../backend/demo';
import { BackendError, type PlanView } from '../backend';
import { blockedReason, outcomeOf, rejectBlockedReason } from './decide';

const base = (): PlanView => structuredClone(demoPlans().find((p) => p.plan_id === 'plan_0001')!);
const now = Date.now();

describe('why a plan cannot be approved', () => {
  it('lets an open plan be signed', () => {
    expect(blockedReason(base(), now)).toBeNull();
  });

  it.each([
    ['the gateway’s own reason', { approvable: false, not_approvable_reason: 'You already decided this plan.' }, 'already decided'],
    ['blocked', { validation: [{ severity: 'error', code: 'x', path: null, message: '', repair: null, blocks_execution: true, items: [], items_total: 0 }] }, 'blocked'],
    ['expired', { expires_at: new Date(now - 1000).toISOString() }, 'expired'],
    ['stale', { status: 'stale' }, 'stale'],
    ['superseded', { superseded_by: 'plan_0011' }, 'Superseded by plan_0011'],
    ['digest mismatch', { digest_matches: false }, 'does not match'],
    ['currency', { cost: { min: '1', max: '2', currency: 'EUR', cost_class: 'metered', preflight: 'estimate' } }, 'contract must be re-read'],
    ['queued', { queued: true }, 'queued'],
  ])('says so when %s', (_name, change, words) => {
    expect(blockedReason({ ...base(), ...change } as PlanView, now)).toContain(words);
  });

  it('lets a blocked plan be rejected but not a decided one', () => {
    expect(rejectBlockedReason({ ...base(), approvable: false })).toBeNull();
    expect(rejectBlockedReason({ ...base(), status: 'executed' })).toContain('executed');
  });

  it('reads a declined confirmation as a quiet note and a full outbox as queued', () => {
    expect(outcomeOf('p', new BackendError('cancelled', 'no')).state).toBe('cancelled');
    expect(outcomeOf('p', new BackendError('queued', 'later')).state).toBe('queued');
    expect(outcomeOf('p', { code: 'plan_stale', message: 'moved' })).toMatchObject({ state: 'refused', code: 'plan_stale', message: 'moved' });
  });
});
