// The fake backend's world: the seeds' and the mockups' examples, as the core would present them.
import type {
  InsightsView,
  DiffLine,
  EffectGroup,
  EffectView,
  ExecutionView,
  PlanView,
  RequestView,
  StandingView,
  SubjectRow,
  WhatChanged,
} from './types';

const minutesFromNow = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
const DIGEST = (hex: string) => `sha256:${hex.padEnd(64, '0')}`;

function effect(e: Partial<EffectView> & Pick<EffectView, 'id' | 'effect_type' | 'description' | 'resource'>): EffectView {
  // A demo sample is the whole set when it lists all of it; otherwise it waits for the full set.
  const sample = e.sample ?? [];
  const sample_check = e.subjects_total === undefined || e.subjects_total === null ? null
    : sample.length >= e.subjects_total ? 'signed' : 'unchecked';
  return { kind: 'update', derived: false, cause: null, badges: [], subjects_total: null, sample, sample_check, cost: null, ...e };
}

function groups(effects: EffectView[]): EffectGroup[] {
  const out: EffectGroup[] = [];
  for (const e of effects) {
    const g = out.find((x) => x.effect_type === e.effect_type && x.derived === e.derived);
    if (g) {
      g.effects += 1;
      g.subjects += e.subjects_total ?? 0;
    } else {
      out.push({ effect_type: e.effect_type, kind: e.kind, derived: e.derived, effects: 1,
        subjects: e.subjects_total ?? 0, badges: e.badges });
    }
  }
  return out;
}

/** A request as signed, from pointers and their values. */
export function request(params: Record<string, string>, leaves = false, mcp: RequestView['mcp'] = null): RequestView {
  return {
    leaves,
    mcp,
    params: Object.entries(params).map(([path, text]) => ({ path, text, long: text.length > 240 || text.split('\n').length > 4 })),
  };
}

export function plan(o: Partial<PlanView> & Pick<PlanView, 'plan_id' | 'label'>): PlanView {
  const p: PlanView = {
    capability_id: 'projects.settings.update', version: '1.0.0', agent_id: 'agt_ops',
    on_behalf_of: 'usr_lead', status: 'pending_approval', created_at: minutesFromNow(-2),
    expires_at: minutesFromNow(13), digest: DIGEST('ba5a3e96'), digest_matches: true,
    approvals_received: 0, approvals_required: 1, approved_by: [], risk: [], changes: [],
    effects: [], groups: [], validation: [], assumptions: [],
    cost: { min: '0.00', max: '0.00', currency: 'credits', cost_class: 'free', preflight: 'estimate' },
    stale: [], approvable: true, not_approvable_reason: null, approvals: [],
    wallet: null, consequence: '', gist: '', queued: false, request: { params: [], leaves: false, mcp: null }, last_fetched: false, execution: null, supersedes: null,
    superseded_by: null, rules: [], turn: 'me', standing_refused: null, ...o,
  };
  if (p.groups.length === 0) p.groups = groups(p.effects);
  return p;
}

const wallet = (agent: string, remaining: string, max: string) => {
  const after = (Number(remaining) - Number(max)).toFixed(2);
  return { agent_id: agent, remaining, limit: '50.00', after_max: after, can_pay: Number(after) >= 0 };
};

const line = (tag: string, old_line: number | null, new_line: number | null,
  ...segments: [string, boolean][]): DiffLine => ({
  tag, old_line, new_line, segments: segments.map(([text, emphasized]) => ({ text, emphasized })),
});

const NAMES = ['Ari Okafor', 'Bea Lindqvist', 'Chen Wei', 'Dara Novak', 'Eli Moreau', 'Fatima Haddad',
  'Gus Pereira', 'Hana Sato', 'Ines Costa', 'Jon Berg', 'Kira Ivanova', 'Lars Holm', 'Mei Tan',
  'Nico Ferri', 'Olu Adeyemi', 'Pia Schulz', 'Quinn Reyes', 'Rosa Diaz', 'Sami Virtanen', 'Tara Nair'];
const ITEM_TITLES = ['Build artifact', 'Nightly export', 'Crash report', 'Audit bundle', 'Test log'];
const ON_CALL = ['usr_02', 'usr_07', 'usr_11', 'usr_24', 'usr_29', 'usr_35'];
const NESTED = ['usr_08', 'usr_19', 'usr_31', 'usr_34'];

/** Every subject of an effect, as the core pages them (ascending ids). */
export function subjectRows(planId: string, effectId: string): SubjectRow[] {
  if (planId === 'plan_0002') {
    const ids = effectId === 'eff_3' ? ON_CALL : effectId === 'eff_2' ? NESTED
      : Array.from({ length: 37 }, (_, n) => `usr_${String(n + 1).padStart(2, '0')}`);
    return ids.map((id) => {
      const also: string[] = [];
      if (effectId !== 'eff_3' && ON_CALL.includes(id)) also.push('loses on-call');
      if (effectId !== 'eff_2' && NESTED.includes(id)) also.push('keeps access via nested group');
      if (effectId !== 'eff_4') also.push('notified by email');
      return { id, label: NAMES[(Number(id.slice(4)) - 1) % NAMES.length], detail: null, also };
    });
  }
  if (planId === 'plan_0015') {
    return ON_CALL.map((id) => ({ id, label: NAMES[(Number(id.slice(4)) - 1) % NAMES.length], detail: null, also: ['loses on-call'] }));
  }
  if (planId === 'plan_0008') {
    return Array.from({ length: 100_000 }, (_, n) => {
      const id = `usr_${String(n).padStart(6, '0')}`;
      return { id, label: `${NAMES[n % NAMES.length]} ${Math.floor(n / NAMES.length)}`, detail: null,
        also: n % 97 === 0 ? ['loses on-call'] : [] };
    });
  }
  if (planId === 'plan_0001' || planId === 'plan_0011') {
    const count = planId === 'plan_0011' ? 19 : 18;
    return Array.from({ length: count }, (_, n) => {
      const day = 3 + n;
      return { id: `itm_${String(n + 1).padStart(2, '0')}`, label: ITEM_TITLES[n % ITEM_TITLES.length],
        detail: `expires 2026-12-${String(day + 16).padStart(2, '0')} → 2026-12-${String(day).padStart(2, '0')}`,
        also: [] };
    });
  }
  return [];
}

const GROUP_NOTICE: DiffLine[] = [
  line('delete', 1, null, ['Support rota for ', false], ['all staff and contractors', true], ['.', false]),
  line('insert', null, 1, ['Support rota for ', false], ['staff', true], ['.', false]),
  line('equal', 2, 2, ['Escalate through the on-call channel.', false]),
];

export function execution(): ExecutionView {
  return {
    success: true, content: 'Retention set to 7 days on prj_184; 22 items now expire sooner.',
    provider: 'countersign-demo', usage: { input_tokens: 120, output_tokens: 64, credits: '0.09', units: [['subjects', 22]] },
    metadata: [['model', 'gpt-x'], ['latency_ms', '540'], ['trace_id', 'trc_123'],
      ['x_region_hint', '{"primary":"eu-west","fallback":null}']],
    media: [
      { kind: 'file', name: 'retention-report.csv', mime_type: 'text/csv', size_bytes: 2048, sha256: null, inline: null, link: null },
      { kind: 'audio', name: 'speech.wav', mime_type: 'audio/wav', size_bytes: 44, sha256: 'sha256:00', inline: 'data:audio/wav;base64,UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=', link: null },
      { kind: 'image', name: 'out-0.png', mime_type: 'image/png', size_bytes: null, sha256: null, inline: null, link: 'https://replicate.delivery/demo/out-0.png' },
    ],
    error: null, charged: '0.09 credits', estimated: '0.05–0.12 credits', in_flight: false,
    journal: [{ effect_id: 'eff_1', resource: 'projects/prj_184', before: 'retention_days = 30', after: 'retention_days = 7' },
      { effect_id: 'eff_2', resource: 'items/prj_184', before: '22 items, latest expiry 2026-12-30', after: '22 items, latest expiry 2026-12-07' }],
    executed_at: minutesFromNow(-2),
    deliveries: { sent: 21, pending: 0, held: 1, failed: 0, cancelled: 0,
      attention: [{ message_id: 22, user_id: 'usr_07', recipient: 'dana@example.com',
        subject: 'Your access changed', state: 'held',
        reason: 'recipient_changed: usr_07 is now dana@elsewhere.example, not dana@example.com as planned',
        release_to: 'dana@elsewhere.example', charge: '0.01',
        digest: 'sha256:5e1d0c2b9a8f7e6d5c4b3a29180716253443526170819a8b7c6d5e4f3a2b1c0d',
        remedies: ['release', 'cancel'] }],
      remedies: [] },
  };
}

export function demoPlans(): PlanView[] {
  const bulk = [
    effect({ id: 'eff_1', effect_type: 'direct_membership_removed', kind: 'revoke',
      description: 'Remove 37 direct memberships.', resource: 'groups/grp_support',
      badges: ['access_change'], subjects_total: 37, sample: ['usr_01', 'usr_02', 'usr_03'] }),
    effect({ id: 'eff_2', effect_type: 'access_retained_via_nested_group', kind: 'info',
      description: 'Four subjects keep access through a nested group.', resource: 'groups/grp_support',
      derived: true, cause: 'eff_1', subjects_total: 4, sample: NESTED }),
    effect({ id: 'eff_3', effect_type: 'on_call_entitlement_removed', kind: 'revoke',
      description: 'Six subjects lose the linked on-call entitlement.', resource: 'entitlements/on_call',
      derived: true, cause: 'eff_1', badges: ['irreversible', 'access_change'], subjects_total: 6, sample: ON_CALL }),
    effect({ id: 'eff_4', effect_type: 'notification_queued', kind: 'external',
      description: '37 emails will be sent after commit.', resource: 'mail/outbound', derived: true,
      cause: 'eff_1', badges: ['external', 'money'], subjects_total: 37, sample: ['usr_01', 'usr_02'], cost: '0.37 credits' }),
  ];
  return [
    plan({
      plan_id: 'plan_0002', label: 'Remove members from a group', capability_id: 'groups.members.remove',
      request: request({ '/group': 'grp_support', '/filter/employment': 'contractor' }),
      digest: DIGEST('4c30a9e17202'), expires_at: minutesFromNow(12), approvals_required: 2,
      approvals_received: 1, approved_by: ['Ada'], gist: 'grp_support −37',
      approvals: [{ approver_id: 'apr_ada', display_name: 'Ada', decision: 'approve', at: minutesFromNow(-1) }],
      rules: [
        { id: 'leads_for_bulk_removals', description: 'A bulk removal needs two team leads, neither of the requesting agent\'s team.',
          line: 'Needs 1 of leads — 0 received', missing: 1, met_by: [], source: 'approval.rego:34', asks_me: true,
          escalated: null, excludes: null },
        { id: 'one_approver', description: 'A plan its capability sends to people needs one approver.',
          line: 'Met: 1 approver — 1 received (Ada)', missing: 0, met_by: ['Ada'], source: 'approval.rego:52', asks_me: false,
          escalated: null, excludes: null },
      ],
      risk: ['bulk', 'access_change', 'irreversible', 'external', 'money'],
      consequence: 'removes 37 members from grp_support; 4 keep access through nested groups; 6 lose on-call; 37 emails are sent; irreversible',
      changes: [
        { resource: 'groups/grp_support', path: '/direct_members', before: '412', after: '375', diff: { kind: 'scalar', before: '412', after: '375' } },
        { resource: 'groups/grp_support', path: '/filter', before: '{"employment":"any"}', after: '{"employment":"contractor"}',
          diff: { kind: 'json', entries: [{ pointer: '/employment', change: 'changed', before: '"any"', after: '"contractor"' }], omitted: 0 } },
        { resource: 'entitlements/on_call', path: '/holders', before: '58', after: '52', diff: { kind: 'scalar', before: '58', after: '52' } },
        { resource: 'groups/grp_support', path: '/notice', before: 'Support rota for all staff and contractors.\nEscalate through the on-call channel.',
          after: 'Support rota for staff.\nEscalate through the on-call channel.', diff: { kind: 'text', lines: GROUP_NOTICE, coarse: false } },
      ],
      effects: bulk,
      validation: [{ severity: 'warning', code: 'access_outcome_varies', path: '/filter',
        message: 'Four selected subjects retain group-derived access.', repair: null, blocks_execution: false, items: [], items_total: 0 }],
      assumptions: [{ dependency: 'mail_relay', description: 'Delivery is attempted after commit; bounces are not known now.',
        execution_can_proceed_without: true }],
      cost: { min: '0.37', max: '0.37', currency: 'credits', cost_class: 'flat', preflight: 'estimate' },
      wallet: wallet('agt_ops', '12.63', '0.37'),
    }),
    plan({
      plan_id: 'plan_0015', label: 'Remove members from a group', capability_id: 'groups.members.remove', agent_id: 'agt_offboard',
      expires_at: minutesFromNow(13), digest: DIGEST('07aa55c3f9'), approvals_required: 2, gist: 'grp_oncall −6',
      risk: ['access_change'], consequence: 'removes 6 members from grp_oncall; they lose on-call',
      changes: [{ resource: 'groups/grp_oncall', path: '/direct_members', before: '6', after: '0', diff: { kind: 'scalar', before: '6', after: '0' } }],
      effects: [effect({ id: 'eff_1', effect_type: 'direct_membership_removed', kind: 'revoke', description: 'Remove 6 direct memberships.',
        resource: 'groups/grp_oncall', badges: ['access_change'], subjects_total: 6, sample: ON_CALL })],
      cost: { min: '0.06', max: '0.06', currency: 'credits', cost_class: 'flat', preflight: 'estimate' },
      wallet: wallet('agt_offboard', '12.63', '0.06'),
    }),
    plan({
      plan_id: 'plan_0001', label: 'Update project settings', expires_at: minutesFromNow(8),
      request: request({ '/project': 'prj_184', '/retention_days': '14' }),
      digest: DIGEST('9e1ac04f'), gist: 'prj_184 retention 30 → 14',
      changes: [
        { resource: 'projects/prj_184', path: '/retention_days', before: '30', after: '14', diff: { kind: 'scalar', before: '30', after: '14' } },
      ],
      effects: [
        effect({ id: 'eff_1', effect_type: 'setting_changed', description: 'Change retention_days from 30 to 14.', resource: 'projects/prj_184' }),
        effect({ id: 'eff_2', effect_type: 'expiry_recalculated', derived: true, cause: 'eff_1',
          description: '18 items expire 16 days sooner (2026-12-19 → 2026-12-03 for the first).',
          resource: 'items/prj_184', subjects_total: 18, sample: ['itm_01', 'itm_02', 'itm_03'] }),
      ],
      validation: [{ severity: 'warning', code: 'legal_hold_items_skipped', path: '/retention_days',
        message: 'itm_19 and itm_20 are under legal hold and keep their expiry.', repair: null, blocks_execution: false,
        items: [{ id: 'itm_19', label: 'Audit bundle', detail: 'expires 2027-01-05 · legal hold' },
          { id: 'itm_20', label: 'Test log', detail: 'expires 2027-01-06 · legal hold' }], items_total: 2 }],
      wallet: wallet('agt_ops', '12.63', '0.00'),
    }),
    plan({
      plan_id: 'plan_0004', label: 'Update storage quota', capability_id: 'teams.storage.update',
      agent_id: 'agt_infra', on_behalf_of: null, expires_at: minutesFromNow(6), digest: DIGEST('51ee09ab'),
      gist: 'team storage 500 → 200 GB',
      changes: [{ resource: 'teams/tm_core', path: '/storage', before: '{"quota_gb":500,"hard_limit":false}',
        after: '{"quota_gb":200,"hard_limit":true,"alert_at":0.9}',
        diff: { kind: 'json', omitted: 0, entries: [
          { pointer: '/quota_gb', change: 'changed', before: '500', after: '200' },
          { pointer: '/hard_limit', change: 'changed', before: 'false', after: 'true' },
          { pointer: '/alert_at', change: 'added', before: null, after: '0.9' }] } }],
      effects: [
        effect({ id: 'eff_1', effect_type: 'quota_changed', description: 'Storage quota 500 GB → 200 GB.', resource: 'teams/tm_core' }),
        effect({ id: 'eff_2', effect_type: 'uploads_blocked', derived: true, cause: 'eff_1', kind: 'restrict',
          description: 'Uploads stop in 3 projects over the new quota.', resource: 'projects', subjects_total: 3,
          sample: ['prj_184', 'prj_201', 'prj_233'] }),
      ],
      validation: [{ severity: 'warning', code: 'uploads_blocked', path: '/storage/quota_gb',
        message: 'Uploads are blocked in 3 projects until they are under 200 GB.', repair: 'Archive old files first, or raise the quota.', blocks_execution: false, items: [], items_total: 0 },
      { severity: 'info', code: 'usage_sampled', path: null, message: 'Usage measured 4 minutes ago.', repair: null, blocks_execution: false, items: [], items_total: 0 }],
      wallet: wallet('agt_infra', '40.00', '0.00'),
    }),
    plan({
      plan_id: 'plan_0003', label: 'Grant membership <img src=x onerror=alert(1)>', capability_id: 'memberships.grant',
      expires_at: minutesFromNow(2), digest: DIGEST('77a1d3c2'), risk: ['access_change'], gist: 'usr_92 → admin of prj_184',
      consequence: 'usr_92 becomes admin of prj_184',
      effects: [effect({ id: 'eff_1', effect_type: 'membership_granted', kind: 'grant', description: 'usr_92 becomes admin of prj_184.',
        resource: 'projects/prj_184', badges: ['access_change'], subjects_total: 1, sample: ['usr_92'] })],
      validation: [{ severity: 'error', code: 'role_conflict', path: '/role', message: 'usr_92 already holds a conflicting role.',
        repair: 'Remove the old role first.', blocks_execution: true, items: [], items_total: 0 }],
      approvable: false, not_approvable_reason: 'The plan is blocked by validation errors.',
    }),
    plan({
      plan_id: 'plan_0007', label: 'Update project settings', status: 'stale', expires_at: minutesFromNow(15),
      digest: DIGEST('3b7d5510'), gist: 'prj_184 retention 30 → 21',
      changes: [{ resource: 'projects/prj_184', path: '/retention_days', before: '30', after: '21', diff: { kind: 'scalar', before: '30', after: '21' } }],
      effects: [effect({ id: 'eff_1', effect_type: 'setting_changed', description: 'Change retention_days from 30 to 21.', resource: 'projects/prj_184' }),
        effect({ id: 'eff_2', effect_type: 'expiry_recalculated', derived: true, cause: 'eff_1', description: '18 items expire 9 days sooner.',
          resource: 'items/prj_184', subjects_total: 18, sample: ['itm_01', 'itm_02'] })],
      validation: [{ severity: 'warning', code: 'legal_hold_items_skipped', path: '/retention_days',
        message: 'itm_19 and itm_20 are under legal hold and keep their expiry.', repair: null, blocks_execution: false,
        items: [{ id: 'itm_19', label: 'Audit bundle', detail: 'expires 2027-01-05 · legal hold' },
          { id: 'itm_20', label: 'Test log', detail: 'expires 2027-01-06 · legal hold' }], items_total: 2 }],
      stale: [{ resource: 'projects/prj_184', planned: '73', current: '74' }],
      approvable: false, not_approvable_reason: 'The plan is stale: projects/prj_184 moved from revision 73 to 74. Refresh it.',
    }),
    plan({
      plan_id: 'plan_0006', label: 'Upload document', capability_id: 'documents.upload', agent_id: 'agt_docs',
      on_behalf_of: null, expires_at: minutesFromNow(14), digest: DIGEST('c0ffee12'), gist: 'contract-2026-11.pdf', risk: ['money'],
      consequence: 'charges 0.09 credits to agt_docs',
      changes: [{ resource: 'documents/contract-2026-11.pdf', path: '/size_bytes', before: 'null', after: '184320', diff: { kind: 'scalar', before: '(none)', after: '184320' } }],
      effects: [effect({ id: 'eff_1', effect_type: 'document_uploaded', kind: 'create', description: 'Store contract-2026-11.pdf (180 KB).',
        resource: 'documents/contract-2026-11.pdf', badges: ['money'], cost: '0.09 credits' })],
      cost: { min: '0.09', max: '0.09', currency: 'credits', cost_class: 'metered', preflight: 'quote' },
      wallet: wallet('agt_docs', '3.10', '0.09'),
    }),
    plan({
      plan_id: 'plan_0008', label: 'Remove members from a group', capability_id: 'groups.members.remove', agent_id: 'agt_offboard',
      expires_at: minutesFromNow(25), digest: DIGEST('aa10be55'), approvals_required: 2, gist: 'grp_archive −100,000',
      risk: ['bulk', 'access_change', 'irreversible', 'high_cost'],
      consequence: 'removes 100,000 members from grp_archive; 1,031 lose on-call; irreversible',
      effects: [effect({ id: 'eff_1', effect_type: 'direct_membership_removed', kind: 'revoke', description: 'Remove 100,000 direct memberships.',
        resource: 'groups/grp_archive', badges: ['access_change'], subjects_total: 100_000, sample: ['usr_000000', 'usr_000001'] }),
      effect({ id: 'eff_2', effect_type: 'on_call_entitlement_removed', kind: 'revoke', derived: true, cause: 'eff_1',
        description: '1,031 subjects lose on-call.', resource: 'entitlements/on_call', badges: ['irreversible'], subjects_total: 1031,
        sample: ['usr_000000', 'usr_000097'] })],
      cost: { min: '900.00', max: '900.00', currency: 'credits', cost_class: 'metered', preflight: 'estimate' },
      wallet: wallet('agt_offboard', '50.00', '900.00'),
    }),
    plan({
      plan_id: 'plan_0009', label: 'Translate document', capability_id: 'documents.translate', agent_id: 'agt_docs',
      request: request({ '/document': 'contract-2026-11.pdf', '/target_language': 'de',
        '/instructions': 'Translate the contract into German.\nKeep the clause numbering.\nLeave party names, addresses and amounts as they are.\nMark any term without a settled German equivalent with [?].\nReturn the translation as a PDF with the same layout.' }, true),
      expires_at: minutesFromNow(30), digest: DIGEST('e0e05eab'), gist: 'contract-2026-11.pdf → de',
      effects: [effect({ id: 'eff_1', effect_type: 'translation_ordered', kind: 'external', description: 'Order a German translation.',
        resource: 'documents/contract-2026-11.pdf', badges: ['external'] })],
      cost: { min: '4.00', max: '6.50', currency: 'EUR', cost_class: 'metered', preflight: 'estimate' },
      approvable: false, not_approvable_reason: 'Priced in EUR, not credits: the contract must be re-read before anyone signs.',
    }),
    plan({
      plan_id: 'plan_0005', label: 'Update project settings', status: 'executed', expires_at: minutesFromNow(-1),
      digest: DIGEST('7c0de5e5'), gist: 'prj_184 retention 30 → 7', approvals_received: 1, approved_by: ['Dana'],
      risk: ['bulk'], consequence: 'changes prj_184 retention from 30 to 7 days; 22 items expire sooner',
      approvals: [{ approver_id: 'apr_dana', display_name: 'Dana', decision: 'approve', at: minutesFromNow(-3) }],
      changes: [{ resource: 'projects/prj_184', path: '/retention_days', before: '30', after: '7', diff: { kind: 'scalar', before: '30', after: '7' } }],
      effects: [effect({ id: 'eff_1', effect_type: 'setting_changed', description: 'Change retention_days from 30 to 7.', resource: 'projects/prj_184' })],
      approvable: false, not_approvable_reason: 'The plan was executed.', execution: execution(),
      wallet: wallet('agt_ops', '12.63', '0.00'),
    }),
  ];
}

/** What the gateway's new preview of plan_0007 differs in (mockup-changed.png). */
export function staleRefresh(old: PlanView): { plan: PlanView; changed: WhatChanged } {
  const fresh = plan({
    ...structuredClone(old), plan_id: 'plan_0011', status: 'pending_approval', stale: [], approvable: true,
    not_approvable_reason: null, digest: DIGEST('9e1a77c04f'), supersedes: old.plan_id, expires_at: minutesFromNow(15),
    validation: [], gist: 'prj_184 retention 7 → 21', groups: [],
    changes: [{ resource: 'projects/prj_184', path: '/retention_days', before: '7', after: '21', diff: { kind: 'scalar', before: '7', after: '21' } }],
    effects: [effect({ id: 'eff_1', effect_type: 'setting_changed', description: 'Change retention_days from 7 to 21.', resource: 'projects/prj_184' }),
      effect({ id: 'eff_2', effect_type: 'expiry_recalculated', derived: true, cause: 'eff_1', description: '19 items expire 14 days later.',
        resource: 'items/prj_184', subjects_total: 19, sample: ['itm_01', 'itm_21'] })],
  });
  const changed: WhatChanged = {
    from_plan: old.plan_id, to_plan: fresh.plan_id, cost_delta: '+0.00', request: [],
    effects_added: [],
    effects_removed: [{ effect_type: 'legal_hold_warning', resource: 'items/prj_184', description: 'itm_19, itm_20 were released from hold', subjects_total: 2 }],
    effects_changed: [
      { effect_type: 'setting_changed', resource: 'projects/prj_184', description_before: 'Change retention_days from 30 to 21.',
        description_after: 'Change retention_days from 7 to 21.', values: [{ path: '/retention_days', diff: { kind: 'scalar', before: '30', after: '7' } }],
        subjects_before: null, subjects_after: null, subjects_added: [], subjects_removed: [] },
      { effect_type: 'expiry_recalculated', resource: 'items/prj_184', description_before: '18 items expire 9 days sooner.',
        description_after: '19 items expire 14 days later.', values: [], subjects_before: 18, subjects_after: 19,
        subjects_added: ['itm_21'], subjects_removed: [] },
    ],
    moved: [{ resource: 'projects/prj_184', before: '73', after: '74' }],
  };
  return { plan: fresh, changed };
}

/** The capabilities' input schemas, as the gateway's catalogue publishes them. A capability not
 *  listed takes its plans' params as they are. */
export const SCHEMAS: Record<string, unknown> = {
  'projects.settings.update': {
    type: 'object', additionalProperties: false, required: ['project', 'retention_days'],
    properties: {
      project: { type: 'string', title: 'Project', description: 'The project id, e.g. prj_184.' },
      retention_days: { type: 'integer', title: 'Retention (days)', minimum: 1, maximum: 3650, description: 'How long items are kept.' },
      notify_owners: { type: 'boolean', title: 'Notify the owners', description: 'Email the project owners about the change.' },
    },
  },
  'groups.members.remove': {
    type: 'object', additionalProperties: false, required: ['group', 'filter'],
    properties: {
      group: { type: 'string', title: 'Group' },
      filter: { type: 'object', properties: { employment: { type: 'string', enum: ['any', 'staff', 'contractor'] } } },
    },
  },
  'documents.translate': {
    type: 'object', additionalProperties: false, required: ['document', 'target_language'],
    properties: {
      document: { type: 'string', title: 'Document' },
      target_language: { type: 'string', title: 'Target language', enum: ['de', 'fr', 'es', 'it'] },
      instructions: { type: 'string', title: 'Instructions', description: 'What the translator is told.' },
    },
  },
};

const daysFromNow = (d: number) => minutesFromNow(d * 24 * 60);
/** "2026-12-08 09:00Z", as the core writes an expiry in a sentence. */
const stamp = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)}Z`;

/** Standing approvals at the demo gateway: one of Dana's in use (plan_0005 ran under it; the
 *  stale plan_0007 it approved has not run), one of Ada's, one Dana revoked. */
export function demoStanding(): StandingView[] {
  return [
    {
      id: 'sa_0003', approver: 'Dana', mine: true, agent_id: 'agt_ops', capability_id: 'projects.settings.update',
      constraints: [
        { param: '/project', op: 'one_of', values: ['"prj_184"'], line: 'project is prj_184' },
        { param: '/retention_days', op: 'at_least', values: ['7'], line: 'retention_days ≥ 7' },
      ],
      resources: ['projects/prj_184', 'items/prj_184'], risk_flags: ['bulk'], max_plans: 10, plans_used: 1,
      max_cost_per_plan: '0.09', max_cost_total: '0.90', credits_used: '0.09', issued_at: daysFromNow(-2),
      expires_at: daysFromNow(5), reason: 'Retention clean-up on prj_184 this week.', state: 'active', state_reason: null,
      allows: 'Approves plans of agt_ops for projects.settings.update without asking, when project is prj_184; '
        + 'retention_days ≥ 7; acting only on projects/prj_184, items/prj_184; carrying at most these risks: bulk: '
        + `up to 10 plans, 0.09 credits each and 0.90 credits in all, until ${stamp(daysFromNow(5))}.`,
      verified: true, verify_error: null,
      // plan_0005 ran and was charged its execution's 0.09 credits.
      uses: [{ number: 1, plan_id: 'plan_0005', credits: '0.09', at: minutesFromNow(-2) }],
      covered: ['plan_0007'],
    },
    {
      id: 'sa_0002', approver: 'Ada', mine: false, agent_id: 'agt_docs', capability_id: 'documents.upload',
      constraints: [], resources: ['documents/*'], risk_flags: ['money'], max_plans: 20, plans_used: 0,
      max_cost_per_plan: '0.25', max_cost_total: '5.00', credits_used: '0.00', issued_at: daysFromNow(-3),
      expires_at: daysFromNow(11), reason: 'Contract uploads for the November close.', state: 'active', state_reason: null,
      allows: 'Approves plans of agt_docs for documents.upload without asking, when acting only on documents/*; '
        + `carrying at most these risks: money: up to 20 plans, 0.25 credits each and 5.00 credits in all, until ${stamp(daysFromNow(11))}.`,
      verified: true, verify_error: null, uses: [], covered: [],
    },
    {
      id: 'sa_0001', approver: 'Dana', mine: true, agent_id: 'agt_offboard', capability_id: 'groups.members.remove',
      constraints: [{ param: '/group', op: 'one_of', values: ['"grp_oncall"'], line: 'group is grp_oncall' }],
      resources: ['groups/grp_oncall'], risk_flags: ['access_change'], max_plans: 5, plans_used: 0,
      max_cost_per_plan: '0.06', max_cost_total: '0.60', credits_used: '0.00', issued_at: daysFromNow(-9),
      expires_at: daysFromNow(-2), reason: 'Offboarding week.', state: 'revoked', state_reason: 'revoked by Dana',
      allows: 'Approves plans of agt_offboard for groups.members.remove without asking, when group is grp_oncall; '
        + `acting only on groups/grp_oncall; carrying at most these risks: access_change: up to 5 plans, 0.06 credits each and 0.60 credits in all, until ${stamp(daysFromNow(-2))}.`,
      verified: true, verify_error: null, uses: [], covered: [],
    },
  ];
}

/** The Insights screen's numbers as a gateway with a week of decisions would answer them. */
export function demoInsights(window: '24h' | '7d' | '30d'): InsightsView {
  const days = window === '24h' ? 2 : window === '7d' ? 8 : 31;
  const today = Date.UTC(2026, 11, 5);
  return {
    window,
    since: new Date(today - (days - 1) * 86_400_000).toISOString(),
    until: new Date(today + 43_200_000).toISOString(),
    reading: 'approved sooner than 5 s, and 3 s for each effect, after the plan was made',
    capabilities: [
      { name: 'groups.members.remove', id: null, decided: 12, approval_rate: 0.75, median_seconds: 1260, p90_seconds: 5400, faster_than_reading: 1, other: 2 },
      { name: 'projects.settings.update', id: null, decided: 31, approval_rate: 0.94, median_seconds: 240, p90_seconds: 1900, faster_than_reading: 4, other: 0 },
      { name: 'text.generate', id: null, decided: 5, approval_rate: 1, median_seconds: 35, p90_seconds: 80, faster_than_reading: 0, other: 1 },
    ],
    approvers: [
      { name: 'Dana Whitfield', id: 'apr_7c1e90d2', decided: 29, approval_rate: 0.9, median_seconds: 300, p90_seconds: 2400, faster_than_reading: 4, other: 6 },
      { name: 'Lena Ortiz', id: 'apr_1b44fe07', decided: 19, approval_rate: 0.84, median_seconds: 720, p90_seconds: 5100, faster_than_reading: 1, other: 0 },
    ],
    days: Array.from({ length: days }, (_, i) => ({
      day: new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10),
      decided: (i * 7) % 11,
      median_seconds: (i * 7) % 11 === 0 ? null : 120 + ((i * 431) % 1500),
    })),
  };
}
