// Why a plan cannot be signed now, in the approver's words, and what a decision's answer means.
import { asBackendError, type DecisionView, type PlanView } from '../backend';
import { isExpired, label } from './time';

/** The plan still takes decisions: waiting for approvers, or stale and waiting for a refresh. */
export function isOpen(status: string): boolean {
  return status === 'pending_approval' || status === 'stale';
}

/** The first reason approval is impossible, or null when the approver may sign. */
export function blockedReason(plan: PlanView, now: number): string | null {
  if (plan.queued) return 'Your decision is queued; it goes out when the gateway answers again.';
  if (plan.superseded_by) return `Superseded by ${plan.superseded_by}: open the new plan.`;
  if (!plan.approvable) return plan.not_approvable_reason ?? `The plan is ${label(plan.status)}.`;
  if (plan.status === 'stale') return 'The plan is stale: refresh it (f) and review what changed.';
  if (plan.validation.some((v) => v.blocks_execution)) return 'The plan is blocked by validation errors.';
  if (isExpired(plan.expires_at, now)) return 'The plan expired.';
  if (!plan.digest_matches) return 'The digest this console computed does not match the gateway’s: do not sign.';
  if (plan.cost.currency !== 'credits') return `Priced in ${plan.cost.currency}, not credits: the contract must be re-read.`;
  return null;
}

/** Rejecting needs less: the plan must still be open to a decision. */
export function rejectBlockedReason(plan: PlanView): string | null {
  if (plan.queued) return 'Your decision is queued; it goes out when the gateway answers again.';
  if (!isOpen(plan.status)) return `The plan is ${label(plan.status)}.`;
  return null;
}

/** Why a new preview cannot be asked for now, or null. */
export function refreshBlockedReason(plan: PlanView): string | null {
  if (plan.last_fetched) return 'The gateway does not answer: a new preview needs it.';
  if (plan.superseded_by) return `Superseded by ${plan.superseded_by}: open the new plan.`;
  if (!isOpen(plan.status)) return `The plan is ${label(plan.status)}.`;
  return null;
}

/** Why the request cannot be changed now, or null: as a refresh, it needs an open plan and a
 *  gateway that answers, and a queued decision stands on the plan as it is. */
export function amendBlockedReason(plan: PlanView): string | null {
  if (plan.queued) return 'Your decision is queued; it goes out when the gateway answers again.';
  return refreshBlockedReason(plan);
}

/** What became of a plan that takes no more decisions, in place of the buttons; null while it is open. */
export function closedNote(plan: PlanView): string | null {
  if (plan.queued || isOpen(plan.status)) return null;
  switch (plan.status) {
    case 'approved': return 'Approved: the agent may run it until it expires. Nothing is left to sign.';
    case 'executed': return 'Executed: nothing is left to decide.';
    case 'rejected': return 'Rejected: the agent was told why.';
    case 'expired': return 'Expired before it ran: the agent may preview again.';
    case 'superseded': return `Superseded by ${plan.superseded_by ?? 'a newer plan'}: decide on that one.`;
    case 'failed': return 'Failed while running: the execution result says why.';
    default: return `The plan is ${label(plan.status)}.`;
  }
}

export type Outcome = {
  planId: string;
  /** `answered`, `queued` and `refused` are banners; `cancelled` is a quiet note. */
  state: 'answered' | 'queued' | 'refused' | 'cancelled';
  code: string | null;
  message: string;
  /** For an answer: the plan's status it reported; once the plan moves on, it no longer applies. */
  status?: string;
};

/** A form opened from a plan's actions; it belongs to that plan and closes when another is shown. */
export type PlanForm = { planId: string; form: 'standing' | 'amend' };

/** The outcome to show with `plan`: its own, and an answer only while the plan is as answered. */
export function outcomeFor(outcome: Outcome | null, plan: { plan_id: string; status: string }): Outcome | null {
  if (outcome?.planId !== plan.plan_id) return null;
  if (outcome.state === 'answered' && outcome.status !== undefined && outcome.status !== plan.status) return null;
  return outcome;
}

/** A decision the gateway took: how many approvals the plan has and what it is now. */
export function answeredOutcome(planId: string, answer: Pick<DecisionView, 'status' | 'approvals_received' | 'approvals_required'>): Outcome {
  return {
    planId, state: 'answered', code: null, status: answer.status,
    message: `Signed. ${answer.approvals_received} of ${answer.approvals_required} approvals; the plan is ${label(answer.status)}.`,
  };
}

export function outcomeOf(planId: string, e: unknown): Outcome {
  const err = asBackendError(e);
  if (err.code === 'cancelled') {
    return { planId, state: 'cancelled', code: null, message: 'Not signed: the confirmation was declined. The plan is as it was.' };
  }
  if (err.code === 'queued') {
    return { planId, state: 'queued', code: err.code,
      message: 'Queued: the gateway does not answer; the signed decision goes out when it answers again.' };
  }
  return { planId, state: 'refused', code: err.code, message: err.message };
}
