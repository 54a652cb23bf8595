// An in-memory backend with the seeds' examples: for the UI tests and for running the UI in a
// plain browser. It follows the same contract as the Rust side, including refusals.
import { BackendError, type Backend } from './index';
import type { DecisionView, PlanView, QueueItem, QueueView, StatusView } from './types';

const minutesFromNow = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

function plan(overrides: Partial<PlanView> & Pick<PlanView, 'plan_id' | 'title'>): PlanView {
  return {
    capability_id: 'projects.settings.update',
    version: '1.0.0',
    agent_id: 'agt_ops',
    on_behalf_of: 'usr_lead',
    status: 'pending_approval',
    created_at: minutesFromNow(-2),
    expires_at: minutesFromNow(13),
    digest: 'sha256:ba5a3e96f4a4e44e8e0cb433066eadaa2f76296ffeab494051c6996ab661310e',
    digest_matches: true,
    approvals_received: 0,
    approvals_required: 1,
    approved_by: [],
    risk: [],
    changes: [],
    effects: [],
    groups: [],
    validation: [],
    assumptions: [],
    cost: { min: '0.00', max: '0.00', currency: 'credits', cost_class: 'free', preflight: 'estimate' },
    stale: [],
    approvable: true,
    not_approvable_reason: null,
    ...overrides,
  };
}

export function samplePlans(): PlanView[] {
  return [
    plan({
      plan_id: 'plan_0002',
      title: 'Remove members from a group',
      capability_id: 'groups.members.remove',
      expires_at: minutesFromNow(12),
      approvals_required: 2,
      risk: ['irreversible', 'access_change', 'money', 'external', 'bulk', 'uncertain'],
      effects: [
        {
          id: 'eff_1', effect_type: 'direct_membership_removed', kind: 'revoke',
          description: 'Remove 37 direct memberships.', resource: 'groups/grp_support',
          derived: false, cause: null, badges: ['access_change'], subjects_total: 37,
          sample: ['usr_01', 'usr_02'], cost: null,
        },
        {
          id: 'eff_3', effect_type: 'on_call_entitlement_removed', kind: 'revoke',
          description: 'Six subjects lose the linked on-call entitlement.',
          resource: 'entitlements/on_call', derived: true, cause: 'eff_1',
          badges: ['irreversible', 'access_change'], subjects_total: 6,
          sample: ['usr_02', 'usr_07', 'usr_11', 'usr_24', 'usr_29', 'usr_35'], cost: null,
        },
      ],
      validation: [
        {
          severity: 'warning', code: 'access_outcome_varies', path: '/filter',
          message: 'Four selected subjects retain group-derived access.', repair: null,
          blocks_execution: false,
        },
      ],
      assumptions: [
        {
          dependency: 'mail_relay',
          description: 'Delivery is attempted after commit; bounces are not known now.',
          execution_can_proceed_without: true,
        },
      ],
      cost: { min: '0.37', max: '0.37', currency: 'credits', cost_class: 'metered', preflight: 'estimate' },
    }),
    plan({
      plan_id: 'plan_0001',
      title: 'Update project settings',
      expires_at: minutesFromNow(8),
      changes: [
        {
          resource: 'projects/prj_184', path: '/retention_days', before: '30', after: '14',
          diff: { kind: 'scalar', before: '30', after: '14' },
        },
      ],
      effects: [
        {
          id: 'eff_1', effect_type: 'setting_changed', kind: 'update',
          description: 'Change retention_days from 30 to 14.', resource: 'projects/prj_184',
          derived: false, cause: null, badges: [], subjects_total: null, sample: [], cost: null,
        },
      ],
      validation: [
        {
          severity: 'warning', code: 'legal_hold_items_skipped', path: '/retention_days',
          message: 'Two items under legal hold keep their expiry.', repair: null,
          blocks_execution: false,
        },
      ],
    }),
    plan({
      plan_id: 'plan_0003',
      title: 'Grant membership <img src=x onerror=alert(1)>',
      capability_id: 'memberships.grant',
      expires_at: minutesFromNow(2),
      risk: ['access_change', 'blocked'],
      validation: [
        {
          severity: 'error', code: 'role_conflict', path: '/role',
          message: 'usr_92 already holds a conflicting role.', repair: 'Remove the old role first.',
          blocks_execution: true,
        },
      ],
      approvable: false,
      not_approvable_reason: 'The plan is blocked by validation errors.',
    }),
  ];
}

function row(p: PlanView): QueueItem {
  return {
    plan_id: p.plan_id, title: p.title, capability_id: p.capability_id, agent_id: p.agent_id,
    on_behalf_of: p.on_behalf_of, status: p.status, risk: p.risk, credits_max: p.cost.max,
    currency: p.cost.currency,
    effects_direct: p.effects.filter((e) => !e.derived).length,
    effects_derived: p.effects.filter((e) => e.derived).length,
    subjects_total: p.effects.reduce((n, e) => n + (e.subjects_total ?? 0), 0),
    warnings: p.validation.filter((v) => v.severity === 'warning').length,
    errors: p.validation.filter((v) => v.severity === 'error').length,
    approvals_received: p.approvals_received, approvals_required: p.approvals_required,
    expires_at: p.expires_at,
  };
}

export class FakeBackend implements Backend {
  readonly approvals: string[] = [];
  private listeners = new Set<() => void>();

  constructor(private plans: PlanView[] = samplePlans()) {}

  async status(): Promise<StatusView> {
    return {
      gateway_name: 'Demo gateway', gateway_url: 'http://127.0.0.1:0', demo: true,
      approver: 'Dana', key_id: 'key_dana1', online: true,
      last_sync: new Date().toISOString(), last_error: null,
    };
  }

  async queue(): Promise<QueueView> {
    const pending = this.plans.filter((p) => p.status === 'pending_approval' || p.status === 'stale');
    const items = pending.map(row).sort((a, b) => a.expires_at.localeCompare(b.expires_at));
    const total = items.reduce((sum, i) => sum + Math.round(Number(i.credits_max) * 100), 0);
    return { items, total_credits: (total / 100).toFixed(2) };
  }

  async plan(planId: string): Promise<PlanView> {
    const found = this.plans.find((p) => p.plan_id === planId);
    if (!found) throw new BackendError('not_found', `No such plan ${planId}.`);
    return structuredClone(found);
  }

  async approve(planId: string, digest: string, _reason: string | null): Promise<DecisionView> {
    const p = await this.plan(planId);
    if (p.digest !== digest) throw new BackendError('digest_mismatch', 'The plan changed since it was shown.');
    if (!p.approvable) throw new BackendError('not_approvable', p.not_approvable_reason ?? '');
    this.approvals.push(planId);
    const target = this.plans.find((x) => x.plan_id === planId)!;
    target.approvals_received += 1;
    target.approved_by.push('Dana');
    target.approvable = false;
    target.not_approvable_reason = 'You already decided this plan.';
    if (target.approvals_received >= target.approvals_required) target.status = 'approved';
    this.listeners.forEach((l) => l());
    return {
      plan_id: planId, status: target.status,
      approvals_received: target.approvals_received, approvals_required: target.approvals_required,
    };
  }

  async onQueueChanged(listener: () => void): Promise<() => void> {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
