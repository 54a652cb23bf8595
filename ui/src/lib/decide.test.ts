import { describe, expect, it } from 'vitest';
import { demoPlans } from '../backend/demo';
import { BackendError, type PlanView } from '../backend';
import { amendBlockedReason, answeredOutcome, blockedReason, closedNote, outcomeOf, refreshBlockedReason, rejectBlockedReason } from './decide';

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

  it('asks for a new preview only of an open plan the gateway can answer for', () => {
    expect(refreshBlockedReason(base())).toBeNull();
    expect(refreshBlockedReason({ ...base(), status: 'stale' })).toBeNull();
    expect(refreshBlockedReason({ ...base(), last_fetched: true })).toContain('does not answer');
    expect(refreshBlockedReason({ ...base(), status: 'approved' })).toContain('approved');
  });

  it('lets the request of an open plan be changed, not of a queued, superseded or closed one', () => {
    expect(amendBlockedReason(base())).toBeNull();
    expect(amendBlockedReason({ ...base(), status: 'stale' })).toBeNull();
    expect(amendBlockedReason({ ...base(), queued: true })).toContain('queued');
    expect(amendBlockedReason({ ...base(), superseded_by: 'plan_0011' })).toContain('Superseded');
    expect(amendBlockedReason({ ...base(), last_fetched: true })).toContain('does not answer');
    expect(amendBlockedReason({ ...base(), status: 'executed' })).toContain('executed');
  });

  it('words an answered decision with its count and the plan\'s new status', () => {
    const o = answeredOutcome('p', { status: 'pending_approval', approvals_received: 1, approvals_required: 2 });
    expect(o).toMatchObject({ state: 'answered', status: 'pending_approval', message: 'Signed. 1 of 2 approvals; the plan is pending approval.' });
  });

  it.each([
    ['approved', 'may run it'],
    ['executed', 'nothing is left'],
    ['rejected', 'told why'],
    ['expired', 'preview again'],
    ['failed', 'execution result'],
  ])('closes a plan that is %s with what became of it', (status, words) => {
    expect(closedNote({ ...base(), status })).toContain(words);
  });

  it('keeps open a pending, a stale and a queued plan', () => {
    expect(closedNote(base())).toBeNull();
    expect(closedNote({ ...base(), status: 'stale' })).toBeNull();
    expect(closedNote({ ...base(), status: 'approved', queued: true })).toBeNull();
  });

  it('reads a declined confirmation as a quiet note and a full outbox as queued', () => {
    expect(outcomeOf('p', new BackendError('cancelled', 'no')).state).toBe('cancelled');
    expect(outcomeOf('p', new BackendError('queued', 'later')).state).toBe('queued');
    expect(outcomeOf('p', { code: 'plan_stale', message: 'moved' })).toMatchObject({ state: 'refused', code: 'plan_stale', message: 'moved' });
  });
});
