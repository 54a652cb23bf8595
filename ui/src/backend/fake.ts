// An in-memory backend with the seeds' examples: for the UI tests and for running the UI in a
// plain browser. It follows the same contract as the Rust side, including refusals, the outbox
// (`offline`) and the confirmation of risky approvals (`confirm`, the native dialog's stand-in).
import { BackendError, type Backend, type InsightsWindow } from './index';
import { demoInsights, demoPlans, demoStanding, execution, SCHEMAS, staleRefresh, subjectRows } from './demo';
import { differences, formOf, inferred, invalid, leaves, paramsOf, type Schema } from './schema';
import { and, constraint, COVERABLE, leftOpen, standingRefused, standingSentence, successor, unfit, unverified } from './fakeStanding';
import type {
  AmendDraft,
  BatchColumn,
  BatchItem,
  BatchOutcome,
  BatchResult,
  BatchView,
  DecisionView,
  HistoryEntry,
  InsightsView,
  Overlap,
  PlanView,
  QueueChange,
  QueueItem,
  QueueQuery,
  QueueWindow,
  RowGist,
  RefreshView,
  RemedyOutcome,
  Settings,
  SettingsView,
  StandingDraft,
  StandingView,
  StatusView,
  SubjectRow,
  SubjectsPage,
  WhatChanged,
  WindowAsk,
} from './types';
import { between, changeOf, windowOf } from './fakeQueue';

export type Confirm = (title: string, consequence: string, lines: string[]) => boolean | Promise<boolean>;

export type FakeOptions = {
  plans?: PlanView[];
  confirm?: Confirm;
  /** Settings fields an environment variable overrides. */
  overridden?: string[];
  /** The risk flags the gateway's approval policy lets a standing approval cover (all but
   *  high_cost unless said): a plan with another is refused "approve plans like this". */
  standingFlags?: string[];
};

const PENDING = ['pending_approval', 'stale'];

/** As the console counts until a plan's content is read (crates/console/src/queue.rs). */
function countGist(p: PlanView): string {
  const subjects = Math.max(0, ...p.effects.map((e) => e.subjects_total ?? 0));
  if (subjects > 0) return `${subjects} subjects`;
  return p.effects.length === 1 ? '1 effect' : `${p.effects.length} effects`;
}

function row(p: PlanView, gistRead: boolean, snoozedUntil: string | null = null): QueueItem {
  return {
    plan_id: p.plan_id, title: p.label, capability_id: p.capability_id, agent_id: p.agent_id,
    on_behalf_of: p.on_behalf_of, status: p.status, risk: p.risk, credits_max: p.cost.max,
    currency: p.cost.currency,
    effects_direct: p.effects.filter((e) => !e.derived).length,
    effects_derived: p.effects.filter((e) => e.derived).length,
    // Every demo plan's derived subjects are among its direct ones: the largest set is the distinct count.
    subjects_total: Math.max(0, ...p.effects.map((e) => e.subjects_total ?? 0)),
    warnings: p.validation.filter((v) => v.severity === 'warning').length,
    errors: p.validation.filter((v) => v.severity === 'error').length,
    approvals_received: p.approvals_received, approvals_required: p.approvals_required,
    expires_at: p.expires_at, gist: gistRead ? p.gist : countGist(p), gist_read: gistRead, blocked: p.validation.some((v) => v.blocks_execution),
    queued: p.queued, approved_by: p.approved_by, turn: p.turn, snoozed_until: snoozedUntil,
  };
}

const cents = (s: string) => Math.round(Number(s) * 100);
const credits = (c: number) => (c / 100).toFixed(2);
const short = (d: string) => `sha256:${d.slice(7, 11)}…${d.slice(-4)}`;
const FORMATS = { json: '/home/dana/countersign-history.jsonl', 'in-toto': '/home/dana/countersign-history.intoto.jsonl' };

type Outgoing = { entry: HistoryEntry; planId: string; decision: 'approve' | 'reject' };

export class FakeBackend implements Backend {
  /** Plan ids approved, in order (answered or queued). */
  readonly approvals: string[] = [];
  readonly rejections: { planId: string; reason: string }[] = [];
  readonly refreshes: string[] = [];
  /** Answers the next approval with this refusal, as the gateway would. */
  refuseNext: { code: string; message: string } | null = null;
  /** Every plan load fails with this error, as a gateway that never sent the plan would. */
  failPlanLoads: { code: string; message: string } | null = null;
  /** `effect` keys (`plan_id/effect_id`) whose full subject set does not match its digest. */
  readonly mismatched = new Set<string>();
  subjectCalls = 0;
  /** The formats the history was exported in, in order. */
  readonly exports: ('json' | 'in-toto')[] = [];
  /** The params of each amendment sent, in order. */
  readonly amendments: { planId: string; params: unknown }[] = [];
  confirm: Confirm;
  private plans: PlanView[];
  private offline = false;
  private outbox: Outgoing[] = [];
  private readonly entries: HistoryEntry[] = [];
  private settingsValue: Settings = {
    gateway_url: null, poll_interval_secs: 5, theme: 'system',
    notify: { risk: ['irreversible', 'access_change'], capabilities: [], every_plan: false },
  };
  private overridden: string[];
  private enrolled: string | null = null;
  private queueListeners = new Set<(change: QueueChange | null) => void>();
  private generation = 0;
  /** What the window last asked for and was given: what a change is told against. */
  private asked: { ask: WindowAsk; sent: QueueWindow } | null = null;
  /** The plans the queue held at the last change: a plan beyond them arrived. */
  private known = new Set<string>();
  private openListeners = new Set<(planId: string) => void>();
  private plansListeners = new Set<() => void>();
  private rows = new Map<string, SubjectRow[]>();
  private standings: StandingView[] = demoStanding();
  /** Plan id → until when it is snoozed. */
  private snoozed = new Map<string, string>();
  /** Standing approval id → why its envelope does not verify under its signer's key. */
  private tampered = new Map<string, string>();
  private standingFlags: string[];

  constructor(options: FakeOptions = {}) {
    this.plans = options.plans ?? demoPlans();
    this.confirm = options.confirm ?? (() => true);
    this.overridden = options.overridden ?? [];
    this.standingFlags = options.standingFlags ?? COVERABLE;
    this.entries.push(this.entry('plan_0010', 'reject', 'Wrong project.', 'refused', 30));
    this.entries.push(this.entry('plan_0005', 'approve', null, 'answered', 7));
    this.known = new Set(this.queueRows().map((r) => r.plan_id));
  }

  /** The gateway stops answering: decisions wait in the outbox. */
  goOffline() {
    this.offline = true;
    this.changed();
  }

  /** The gateway answers again: the outbox goes out. */
  goOnline() {
    this.offline = false;
    for (const out of this.outbox.splice(0)) {
      const p = this.find(out.planId);
      p.queued = false;
      this.apply(p, out.decision);
      out.entry.state = 'answered';
      out.entry.answered_at = new Date().toISOString();
    }
    this.changed();
  }

  /** The gateway serves standing approval `id` with terms its envelope does not sign (or an
   *  envelope its signer's key does not verify): the console shows it unverified, saying `why`. */
  /** A new plan from an agent, as the gateway's stream brings it. */
  arrive(plan: PlanView) {
    this.plans.push(plan);
    this.changed();
  }

  tamperStanding(id: string, why = 'the terms the gateway shows are not the ones signed') {
    this.tampered.set(id, why);
  }

  /** A deep link or a notification click. */
  openPlan(planId: string) {
    this.openListeners.forEach((l) => l(planId));
  }

  async status(): Promise<StatusView> {
    return {
      gateway_name: this.enrolled ? 'Gateway' : 'Demo gateway', gateway_url: this.enrolled ?? 'http://127.0.0.1:0',
      demo: !this.enrolled, approver: 'Dana', key_id: 'key_dana1', link: this.offline ? 'offline' : 'online',
      last_sync: new Date(Date.now() - (this.offline ? 95_000 : 1_000)).toISOString(),
      last_error: this.offline ? { code: 'unreachable', message: 'The gateway does not answer.' } : null,
      outbox: this.outbox.length,
      teams: [],
    };
  }

  async queueWindow(ask: WindowAsk): Promise<QueueWindow> {
    if (ask.limit > 500) throw new BackendError('invalid_input', `at most 500 rows at once, not ${ask.limit}`);
    if (ask.pins.length > 102) throw new BackendError('invalid_input', `at most 102 pinned plans, not ${ask.pins.length}`);
    this.generation += 1;
    const window = windowOf(this.queueRows(), ask, Date.now(), this.generation);
    this.asked = { ask: structuredClone(ask), sent: window };
    return structuredClone(window);
  }

  async queueBetween(query: QueueQuery, from: string, to: string): Promise<string[]> {
    return between(this.queueRows(), query, from, to, Date.now());
  }

  /** Every pending plan's row, soonest expiry first. */
  private queueRows(): QueueItem[] {
    const until = (id: string) => {
      const at = this.snoozed.get(id);
      return at && Date.parse(at) > Date.now() ? at : null;
    };
    return this.plans.filter((p) => PENDING.includes(p.status)).map((p) => row(p, this.gistsRead.has(p.plan_id), until(p.plan_id)))
      .sort((a, b) => a.expires_at.localeCompare(b.expires_at));
  }

  /** Plans read for their gists, in order: what a window in view of its rows asked for. */
  readonly gistReads: string[] = [];
  private gistsRead = new Set<string>();

  async gists(planIds: string[]): Promise<RowGist[]> {
    if (planIds.length > 100) throw new BackendError('invalid_input', `at most 100 gists at once, not ${planIds.length}`);
    this.gistReads.push(...planIds);
    planIds.forEach((id) => this.gistsRead.add(id));
    return planIds.filter((id) => this.plans.some((p) => p.plan_id === id)).map((id) => ({ plan_id: id, gist: this.find(id).gist }));
  }

  async plan(planId: string): Promise<PlanView> {
    if (this.failPlanLoads) throw new BackendError(this.failPlanLoads.code, this.failPlanLoads.message);
    // As the console does: offline, the plan as last fetched, marked so.
    return { ...this.withPolicy(this.find(planId)), last_fetched: this.offline };
  }

  /** A copy of `p` saying whether the gateway's policy would refuse a standing approval for plans
   *  like it: a plan that says its own keeps it. */
  private withPolicy(p: PlanView): PlanView {
    return { ...structuredClone(p), standing_refused: p.standing_refused ?? standingRefused(p.risk, this.standingFlags) };
  }

  async approve(planId: string, digest: string, reason: string | null): Promise<DecisionView> {
    const p = this.decidable(planId, digest);
    if (this.refuseNext) {
      const { code, message } = this.refuseNext;
      this.refuseNext = null;
      throw new BackendError(code, message);
    }
    if (p.risk.length > 0 && !(await this.confirm(`Approve ${p.plan_id}?`, p.consequence, [this.line(p)]))) {
      throw new BackendError('cancelled', 'The approval was not confirmed; nothing was signed.');
    }
    this.approvals.push(planId);
    return this.send(p, 'approve', reason);
  }

  async reject(planId: string, digest: string, reason: string): Promise<DecisionView> {
    if (!reason.trim()) throw new BackendError('invalid_input', 'A rejection needs a reason.');
    const p = this.decidable(planId, digest);
    this.rejections.push({ planId, reason });
    return this.send(p, 'reject', reason);
  }

  async refresh(planId: string): Promise<RefreshView> {
    const old = this.find(planId);
    this.refreshes.push(planId);
    if (!PENDING.includes(old.status)) {
      throw new BackendError('plan_not_pending', `Plan ${planId} is ${old.status}.`);
    }
    const { plan, changed } = planId === 'plan_0007' ? staleRefresh(old) : this.unchanged(old);
    old.status = 'superseded';
    old.superseded_by = plan.plan_id;
    old.approvable = false;
    old.not_approvable_reason = `Superseded by ${plan.plan_id}.`;
    this.plans.push(plan);
    this.changed();
    return structuredClone({ plan: this.withPolicy(plan), changed, amended: null });
  }

  async subjects(planId: string, effectId: string, query: string, offset: number, limit: number): Promise<SubjectsPage> {
    if (limit > 500) throw new BackendError('invalid_input', 'At most 500 rows per page.');
    if (this.offline) throw new BackendError('unreachable', 'The gateway does not answer.');
    this.subjectCalls += 1;
    const p = this.find(planId);
    const effect = p.effects.find((e) => e.id === effectId);
    if (!effect) throw new BackendError('not_found', `No effect ${effectId} in ${planId}.`);
    const key = `${planId}/${effectId}`;
    if (!this.rows.has(key)) {
      const rows = subjectRows(planId, effectId);
      // A small effect's sample is its whole set.
      this.rows.set(key, rows.length > 0 ? rows : effect.sample.map((id) => ({ id, label: null, detail: null, also: [] })));
    }
    const all = this.rows.get(key)!;
    const q = query.trim().toLowerCase();
    const matching = q ? all.filter((r) => r.id.toLowerCase().includes(q) || (r.label ?? '').toLowerCase().includes(q)) : all;
    const matches = !this.mismatched.has(key);
    const expected = 'sha256:5d1f0c7e29a4b8f3c6d2e1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0';
    return {
      plan_id: planId, effect_id: effectId, effect_description: effect.description, total: all.length,
      matched: matching.length, offset, rows: matching.slice(offset, offset + limit),
      check: { plan_id: planId, effect_id: effectId, total: all.length, received: all.length, expected_digest: expected,
        computed_digest: matches ? expected : 'sha256:0bad0bad29a4b8f3c6d2e1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0',
        ascending: true, matches },
    };
  }

  async batch(planIds: string[]): Promise<BatchView> {
    const plans = planIds.map((id) => this.find(id));
    const sets = plans.map((p) => new Set(p.effects.flatMap((e) => this.subjectsOf(p.plan_id, e.id, e.sample))));
    const overlaps: Overlap[] = [];
    for (let i = 0; i < plans.length; i++) {
      for (let j = i + 1; j < plans.length; j++) {
        const both = [...sets[i]].filter((s) => sets[j].has(s));
        if (both.length > 0) overlaps.push({ plans: [plans[i].plan_id, plans[j].plan_id], subjects: both.length, sample: both.slice(0, 6) });
      }
    }
    const distinct = new Set(sets.flatMap((s) => [...s]));
    const total = plans.filter((p) => p.cost.currency === 'credits').reduce((n, p) => n + cents(p.cost.max), 0);
    return { plans: plans.map((p) => this.column(p)), total_credits: credits(total), distinct_subjects: distinct.size, overlaps };
  }

  async decideBatch(decision: 'approve' | 'reject', items: BatchItem[], reason: string | null): Promise<BatchOutcome> {
    if (decision === 'reject' && !reason?.trim()) throw new BackendError('invalid_input', 'A rejection needs a reason.');
    if (decision === 'approve') {
      const lines = items.map((i) => this.line(this.find(i.plan_id)));
      const words = items.map((i) => this.find(i.plan_id).consequence).filter(Boolean).join('; ');
      if (!(await this.confirm(`Approve ${items.length} plans?`, words, lines))) {
        throw new BackendError('cancelled', 'The approvals were not confirmed; nothing was signed.');
      }
    }
    const results: BatchResult[] = [];
    for (const item of items) {
      try {
        const p = this.decidable(item.plan_id, item.digest);
        if (decision === 'approve') this.approvals.push(p.plan_id);
        else this.rejections.push({ planId: p.plan_id, reason: reason! });
        results.push({ plan_id: item.plan_id, outcome: 'answered', decision: this.send(p, decision, reason), error: null });
      } catch (e) {
        const err = e as BackendError;
        results.push({ plan_id: item.plan_id, outcome: err.code === 'queued' ? 'queued' : 'refused', decision: null,
          error: { code: err.code, message: err.message } });
      }
    }
    return { results };
  }

  async history(): Promise<HistoryEntry[]> {
    return structuredClone([...this.entries].reverse());
  }

  async exportHistory(format: 'json' | 'in-toto'): Promise<string | null> {
    this.exports.push(format);
    return FORMATS[format];
  }

  async insights(window: InsightsWindow): Promise<InsightsView> {
    return demoInsights(window);
  }

  async standing(): Promise<StandingView[]> {
    return [...this.standings].sort((a, b) => b.issued_at.localeCompare(a.issued_at)).map((s) => this.checked(s));
  }

  /** A standing approval as the console shows it: its terms only where its envelope verifies. */
  private checked(s: StandingView): StandingView {
    const why = this.tampered.get(s.id);
    return structuredClone(why ? unverified(s, why) : s);
  }

  async standingDraft(planId: string): Promise<StandingDraft> {
    const p = this.find(planId);
    const schema = this.schemaOf(p);
    const params = paramsOf(p.request, schema);
    // As the console does: each param the schema names or the request holds, sorted.
    const names = [...new Set([...Object.keys(schema.properties ?? {}), ...Object.keys(params)])]
      .map((k) => `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`).sort();
    return {
      plan_id: p.plan_id, agent_id: p.agent_id, capability_id: p.capability_id,
      constraints: leaves(params).map(([param, value]) => constraint(param, 'one_of', [JSON.stringify(value)])),
      resources: [...new Set(p.effects.map((e) => e.resource))], risk_flags: [...p.risk], params: names,
      max_cost_per_plan: p.cost.max, max_cost_total: credits(cents(p.cost.max) * 10), max_plans: 10, days: 7, reason: '',
    };
  }

  async createStanding(draft: StandingDraft): Promise<StandingView> {
    const refusal = unfit(draft);
    if (refusal) throw new BackendError('invalid_input', refusal);
    const uncoverable = draft.risk_flags.find((f) => !this.standingFlags.includes(f));
    if (uncoverable) {
      throw new BackendError('policy_denied', `The approval policy lets no standing approval cover ${uncoverable} plans; leave that flag out.`);
    }
    if (this.offline) throw new BackendError('unreachable', 'The gateway does not answer.');
    // As the core does: the words come from the fields, never from the lines the window sent.
    const constraints = draft.constraints.map((c) => constraint(c.param, c.op, c.values));
    const lines = constraints.map((c) => c.line);
    const now = Date.now();
    const expires = new Date(now + draft.days * 86_400_000);
    const allows = standingSentence(draft, lines, expires);
    // The confirmation names the params it leaves open; the statement alone does not know them.
    const open = leftOpen(draft.params, constraints);
    const said = open.length === 0 ? lines
      : [...lines, `Left open: any value of ${open.map((p) => p.replace(/^\//, '')).join(', ')} (no constraint on them).`];
    if (!(await this.confirm(`Sign a standing approval for ${draft.agent_id}?`, standingSentence(draft, lines, expires, open), said))) {
      throw new BackendError('cancelled', 'The standing approval was not confirmed; nothing was signed.');
    }
    const view: StandingView = {
      id: `sa_${String(this.standings.length + 1).padStart(4, '0')}`, approver: 'Dana', mine: true,
      agent_id: draft.agent_id, capability_id: draft.capability_id, constraints, resources: [...draft.resources],
      risk_flags: [...draft.risk_flags], max_plans: draft.max_plans, plans_used: 0,
      max_cost_per_plan: draft.max_cost_per_plan, max_cost_total: draft.max_cost_total, credits_used: '0.00',
      issued_at: new Date(now).toISOString(), expires_at: expires.toISOString(),
      reason: draft.reason.trim(), state: 'active', state_reason: null, allows,
      verified: true, verify_error: null, uses: [], covered: [],
    };
    this.standings.push(view);
    return this.checked(view);
  }

  async remedyMail(planId: string, messageId: number, remedy: 'release' | 'resend' | 'cancel', digest: string): Promise<RemedyOutcome> {
    const deliveries = this.find(planId).execution?.deliveries;
    const mail = deliveries?.attention.find((m) => m.message_id === messageId);
    if (!deliveries || !mail) throw new BackendError('not_approvable', `message ${messageId} of ${planId} needs no remedy now`);
    if (mail.digest !== digest) throw new BackendError('not_approvable', `message ${messageId} changed since it was shown: read it again`);
    if (!mail.remedies.includes(remedy)) throw new BackendError('not_approvable', `a ${mail.state} message cannot be given ${remedy}`);
    if (this.offline) throw new BackendError('unreachable', 'The gateway does not answer.');
    deliveries.attention = deliveries.attention.filter((m) => m !== mail);
    if (mail.state === 'held') deliveries.held -= 1;
    else deliveries.failed -= 1;
    const cancelled = remedy === 'cancel';
    if (cancelled) deliveries.cancelled += 1;
    else deliveries.pending += 1;
    const refunded = cancelled ? mail.charge : '0.00';
    deliveries.remedies = [...deliveries.remedies, { user_id: mail.user_id, remedy, approver: 'Dana',
      refunded, decided_at: new Date().toISOString() }];
    const recipient = cancelled ? null : remedy === 'release' ? mail.release_to : mail.recipient;
    return { message_id: messageId, remedy, state: cancelled ? 'cancelled' : 'pending', recipient, refunded };
  }

  async revokeStanding(id: string): Promise<StandingView> {
    const found = this.standings.find((s) => s.id === id);
    if (!found) throw new BackendError('not_found', `No standing approval ${id}.`);
    if (!found.mine) throw new BackendError('forbidden', `Only ${found.approver}, who signed it, may revoke ${id}.`);
    if (found.state !== 'active') throw new BackendError('invalid_input', `${id} is ${found.state.replace('_', ' ')} already.`);
    if (this.offline) throw new BackendError('unreachable', 'The gateway does not answer.');
    found.state = 'revoked';
    found.state_reason = 'revoked by Dana';
    return this.checked(found);
  }

  async amendDraft(planId: string): Promise<AmendDraft> {
    const p = this.amendable(planId);
    const schema = this.schemaOf(p);
    return { plan_id: p.plan_id, capability_id: p.capability_id, params: paramsOf(p.request, schema), schema, form: formOf(schema) };
  }

  async amend(planId: string, params: unknown): Promise<RefreshView> {
    const old = this.amendable(planId);
    const schema = this.schemaOf(old);
    const moved = differences(paramsOf(old.request, schema), params);
    if (moved.length === 0) throw new BackendError('validation_error', 'Nothing changed: these are the plan’s own params.');
    const { plan, changed, said } = successor(old, moved, params, this.plans.length + 10);
    // As the console does: the approver confirms each param changed before the gateway sees it.
    const consequence = `You write a new request for ${old.agent_id} and the gateway previews it as plan ${planId}'s successor. `
      + 'You cannot approve what you wrote: someone else must.';
    if (!(await this.confirm('Change this request?', consequence, said))) {
      throw new BackendError('cancelled', 'The change was not confirmed; nothing was sent.');
    }
    const why = invalid(schema, params);
    if (why) throw new BackendError('validation_error', why);
    this.amendments.push({ planId, params: structuredClone(params) });
    old.status = 'superseded';
    old.superseded_by = plan.plan_id;
    old.approvable = false;
    old.not_approvable_reason = `Superseded by ${plan.plan_id}.`;
    this.plans.push(plan);
    this.changed();
    return structuredClone({ plan: this.withPolicy(plan), changed, amended: `Dana ${and(said)}.` });
  }

  async snooze(planId: string, minutes: number): Promise<void> {
    const p = this.find(planId);
    if (!PENDING.includes(p.status)) throw new BackendError('plan_not_pending', `Plan ${planId} is ${p.status}.`);
    if (!(minutes > 0)) throw new BackendError('invalid_input', 'Snooze for at least a minute.');
    // Never past two minutes before it expires: the approver sees it again while it can be signed.
    const until = Math.min(Date.now() + minutes * 60_000, Date.parse(p.expires_at) - 2 * 60_000);
    if (until <= Date.now()) throw new BackendError('invalid_input', `${planId} expires in under two minutes: too soon to snooze.`);
    this.snoozed.set(planId, new Date(until).toISOString());
    this.changed();
  }

  async unsnooze(planId: string): Promise<void> {
    this.find(planId);
    this.snoozed.delete(planId);
    this.changed();
  }

  async settings(): Promise<SettingsView> {
    return { settings: structuredClone(this.settingsValue), overridden: [...this.overridden], config_path: '/home/dana/.config/countersign/settings.json' };
  }

  async saveSettings(settings: Settings): Promise<SettingsView> {
    if (settings.poll_interval_secs < 1) throw new BackendError('invalid_input', 'The poll interval is at least 1 second.');
    const url = settings.gateway_url?.trim() || null;
    if (url && url !== this.settingsValue.gateway_url && url !== this.enrolled) {
      throw new BackendError('not_enrolled', `This machine holds no credential for ${url}: enroll with it, or move your credential there.`);
    }
    this.settingsValue = structuredClone(settings);
    return this.settings();
  }

  async enroll(gatewayUrl: string, code: string): Promise<StatusView> {
    if (!/^https?:\/\//.test(gatewayUrl)) throw new BackendError('invalid_input', 'The gateway URL must start with https://.');
    if (!code.trim()) throw new BackendError('invalid_input', 'Paste the enrollment code.');
    this.enrolled = gatewayUrl;
    this.settingsValue.gateway_url = gatewayUrl;
    return this.status();
  }

  async moveCredential(gatewayUrl: string): Promise<StatusView> {
    if (!this.enrolled) throw new BackendError('invalid_input', "The demo gateway's credential follows it by itself.");
    const from = this.enrolled;
    if (!this.confirm('Move your credential to another URL?', `Your approver credential is sent only to ${from}. Send it to ${gatewayUrl} from now on?`, [])) {
      throw new BackendError('cancelled', 'Not moved: the confirmation was declined.');
    }
    this.enrolled = gatewayUrl;
    this.settingsValue.gateway_url = gatewayUrl;
    return this.status();
  }

  async onQueueChanged(listener: (change: QueueChange | null) => void): Promise<() => void> {
    this.queueListeners.add(listener);
    return () => this.queueListeners.delete(listener);
  }

  async onPlansChanged(listener: () => void): Promise<() => void> {
    this.plansListeners.add(listener);
    return () => this.plansListeners.delete(listener);
  }

  /** A standing approval of the list was used by a plan that ran, as the gateway's stream says. */
  useStanding(id: string, planId: string) {
    const found = this.standings.find((s) => s.id === id);
    if (!found) throw new Error(`no standing approval ${id}`);
    found.plans_used += 1;
    found.uses = [...found.uses, { plan_id: planId, number: found.plans_used, credits: '0.00', at: new Date().toISOString() }];
    found.covered = found.covered.filter((p) => p !== planId);
    this.plansListeners.forEach((l) => l());
  }

  async onOpenPlan(listener: (planId: string) => void): Promise<() => void> {
    this.openListeners.add(listener);
    return () => this.openListeners.delete(listener);
  }

  private find(planId: string): PlanView {
    const found = this.plans.find((p) => p.plan_id === planId);
    if (!found) throw new BackendError('not_found', `No such plan ${planId}.`);
    return found;
  }

  private schemaOf(p: PlanView): Schema {
    return (SCHEMAS[p.capability_id] as Schema | undefined) ?? inferred(paramsOf(p.request, undefined));
  }

  private amendable(planId: string): PlanView {
    const p = this.find(planId);
    if (!PENDING.includes(p.status)) throw new BackendError('plan_not_pending', `Plan ${planId} is ${p.status}.`);
    if (this.offline) throw new BackendError('unreachable', 'The gateway does not answer.');
    return p;
  }

  private decidable(planId: string, digest: string): PlanView {
    const p = this.find(planId);
    if (p.digest !== digest) throw new BackendError('digest_mismatch', 'The plan changed since it was shown.');
    if (!p.approvable) throw new BackendError('not_approvable', p.not_approvable_reason ?? 'The plan cannot be decided.');
    return p;
  }

  private line(p: PlanView): string {
    return `${p.plan_id}  ${p.gist} · ${short(p.digest)}`;
  }

  private send(p: PlanView, decision: 'approve' | 'reject', reason: string | null): DecisionView {
    const entry = this.entry(p.plan_id, decision, reason, 'pending', 0, p.digest);
    this.entries.push(entry);
    if (this.offline) {
      this.outbox.push({ entry, planId: p.plan_id, decision });
      p.queued = true;
      p.approvable = false;
      p.not_approvable_reason = 'Your decision is queued; it goes out when the gateway answers again.';
      this.changed();
      throw new BackendError('queued', 'The gateway does not answer; the decision waits in the outbox.');
    }
    this.apply(p, decision);
    entry.state = 'answered';
    entry.answered_at = new Date().toISOString();
    this.changed();
    return { plan_id: p.plan_id, status: p.status, approvals_received: p.approvals_received, approvals_required: p.approvals_required };
  }

  private apply(p: PlanView, decision: 'approve' | 'reject') {
    p.approvable = false;
    p.not_approvable_reason = 'You already decided this plan.';
    if (decision === 'reject') {
      p.status = 'rejected';
      return;
    }
    p.approvals_received += 1;
    p.approved_by.push('Dana');
    p.approvals.push({ approver_id: 'apr_dana', display_name: 'Dana', decision: 'approve', at: new Date().toISOString() });
    if (p.approvals_received >= p.approvals_required) {
      p.status = 'executed';
      p.execution = {
        ...execution(), content: `Applied ${p.effects.length} effects of ${p.plan_id}.`,
        journal: p.changes.map((c, n) => ({ effect_id: `eff_${n + 1}`, resource: c.resource, before: c.before, after: c.after })),
      };
    }
  }

  private unchanged(old: PlanView): { plan: PlanView; changed: WhatChanged } {
    const n = this.plans.length + 10;
    const plan: PlanView = { ...structuredClone(old), plan_id: `plan_${String(n).padStart(4, '0')}`, supersedes: old.plan_id,
      digest: `sha256:${(n * 7919).toString(16).padStart(8, '0')}${old.digest.slice(15)}` };
    return { plan, changed: { from_plan: old.plan_id, to_plan: plan.plan_id, effects_added: [], effects_removed: [],
      effects_changed: [], cost_delta: '+0.00', moved: [], request: [] } };
  }

  private subjectsOf(planId: string, effectId: string, sample: string[]): string[] {
    const rows = subjectRows(planId, effectId);
    return rows.length > 0 ? rows.map((r) => r.id) : sample;
  }

  private column(p: PlanView): BatchColumn {
    const r = row(p, true);
    return {
      plan_id: p.plan_id, label: p.label, capability_id: p.capability_id, gist: p.gist, agent_id: p.agent_id,
      on_behalf_of: p.on_behalf_of, effects_direct: r.effects_direct, effects_derived: r.effects_derived,
      subjects: r.subjects_total, warnings: r.warnings, errors: r.errors, credits_max: p.cost.max,
      currency: p.cost.currency, approvals_received: p.approvals_received, approvals_required: p.approvals_required,
      digest: p.digest, digest_matches: p.digest_matches, risk: p.risk, consequence: p.consequence,
      approvable: p.approvable, not_approvable_reason: p.not_approvable_reason,
    };
  }

  private entry(planId: string, decision: string, reason: string | null, state: string, minutesAgo: number, digest = 'sha256:7c0de5e5'): HistoryEntry {
    const at = new Date(Date.now() - minutesAgo * 60_000).toISOString();
    const statement = { plan_id: planId, decision, plan_digest: digest, reason, issued_at: at };
    return {
      id: this.entries.length + 1, plan_id: planId, decision, reason, plan_digest: digest, issued_at: at, recorded_at: at,
      attempts: state === 'pending' ? 0 : 1, state,
      answer: state === 'refused' ? { code: 'plan_stale', message: 'projects/prj_184 moved from revision 9 to 10.' } : state === 'answered' ? { status: 'approved' } : null,
      answered_at: state === 'pending' ? null : at, verified: state !== 'refused', verify_error: state === 'refused' ? 'signed by a key this console no longer holds' : null,
      envelope: { payloadType: 'application/vnd.countersign.decision+json', payload: btoa(JSON.stringify(statement)),
        signatures: [{ keyid: 'key_dana1', sig: 'MEUCIQDx3v9p1k6Qy1q0Zk2b0W4m0f8n3d1c2a9b8e7f6a5b4c3d2e1f0' }] },
    };
  }

  /** As the shell does: each change crosses as what moved within the window since it was told. */
  private changed() {
    const rows = this.queueRows();
    const arrived = rows.filter((r) => !this.known.has(r.plan_id));
    this.known = new Set(rows.map((r) => r.plan_id));
    if (!this.asked) return;
    this.generation += 1;
    const next = windowOf(rows, this.asked.ask, Date.now(), this.generation);
    const change = changeOf(this.asked.sent, next, arrived);
    this.asked.sent = next;
    this.queueListeners.forEach((l) => l(structuredClone(change)));
  }
}
