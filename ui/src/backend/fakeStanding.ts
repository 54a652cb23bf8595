// The fake backend's standing approvals and amendments, worded as the core words them.
import { request } from './demo';
import { leaves, shown, type differences } from './schema';
import type { ConstraintOp, ConstraintView, EffectChange, PlanView, StandingDraft, StandingView, WhatChanged } from './types';

type Moved = ReturnType<typeof differences>[number];

const cents = (s: string) => Math.round(Number(s) * 100);

/** A constraint's line as the core words it: "project is prj_184 or prj_201", "retention_days ≥ 7". */
export function constraint(param: string, op: ConstraintOp, values: string[]): ConstraintView {
  const name = param.replace(/^\//, '');
  const words = values.map((v) => {
    try {
      return shown(JSON.parse(v));
    } catch {
      return v;
    }
  });
  const line = op === 'at_least' ? `${name} ≥ ${words[0]}` : op === 'at_most' ? `${name} ≤ ${words[0]}` : `${name} is ${words.join(' or ')}`;
  return { param, op, values, line };
}

/** The risk flags the demo gateway's approval policy lets a standing approval cover: all but
 *  high_cost (a real gateway's default leaves out irreversible and bulk too). */
export const COVERABLE = ['irreversible', 'access_change', 'money', 'external', 'bulk', 'uncertain', 'blocked'];

/** Why the approval policy would refuse a standing approval for a plan of `risk`, as the console
 *  words it (crates/console/src/rules.rs); null when it would not. */
export function standingRefused(risk: string[], coverable: string[]): string | null {
  const refused = risk.filter((f) => !coverable.includes(f));
  return refused.length === 0 ? null : `The approval policy lets no standing approval cover ${refused.join(' or ')} plans.`;
}

/** The params of `params` no constraint reaches (one on `/filter/team` reaches `/filter`), as
 *  the console finds them (crates/console/src/standing.rs). */
export function leftOpen(params: string[], constraints: { param: string }[]): string[] {
  return params.filter((p) => !constraints.some((c) => c.param === p || c.param.startsWith(`${p}/`)));
}

/** A standing approval whose envelope does not verify, as the console shows it: no terms. */
export function unverified(view: StandingView, why: string): StandingView {
  return { ...view, constraints: [], resources: [], risk_flags: [], reason: '', allows: '', verified: false, verify_error: why };
}

/** What a standing approval allows, in the core's words (crates/proto/src/standing.rs), naming
 *  the params it leaves `open` as the confirmation does ("any filter"). */
export function standingSentence(draft: StandingDraft, lines: string[], expires: Date, open: string[] = []): string {
  const when = [...lines, ...open.map((p) => `any ${p.replace(/^\//, '')}`)];
  if (draft.resources.length > 0) when.push(`acting only on ${draft.resources.join(', ')}`);
  when.push(draft.risk_flags.length === 0 ? 'carrying no risk flag' : `carrying at most these risks: ${draft.risk_flags.join(', ')}`);
  const until = `${expires.toISOString().slice(0, 10)} ${expires.toISOString().slice(11, 16)}Z`;
  return `Approves plans of ${draft.agent_id} for ${draft.capability_id} without asking, when ${when.join('; ')}: `
    + `up to ${draft.max_plans} plans, ${draft.max_cost_per_plan} credits each and ${draft.max_cost_total} credits in all, until ${until}.`;
}

/** "a", "a and b", "a, b and c". */
export const and = (items: string[]) => (items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`);

/** Why the core would refuse `draft` before asking anyone to confirm it; null when it fits. */
export function unfit(draft: StandingDraft): string | null {
  if (!draft.reason.trim()) return 'A standing approval needs a reason.';
  if (!Number.isInteger(draft.days) || draft.days < 1 || draft.days > 30) return 'A standing approval lasts 1 to 30 days.';
  if (!Number.isInteger(draft.max_plans) || draft.max_plans < 1) return 'A standing approval covers at least 1 plan.';
  const caps = [draft.max_cost_per_plan, draft.max_cost_total];
  if (caps.some((c) => !/^\d+(\.\d{1,2})?$/.test(c.trim()))) return 'The caps are credits, e.g. 0.37.';
  if (cents(draft.max_cost_total) < cents(draft.max_cost_per_plan)) return 'The total cap is less than one plan’s cap.';
  if (draft.resources.length === 0) return 'A standing approval names the resources it covers.';
  for (const c of draft.constraints) {
    let values: unknown[];
    try {
      values = c.values.map((v) => JSON.parse(v));
    } catch {
      return `${c.param}: a value is not JSON.`;
    }
    if (values.length === 0) return `${c.param}: no value.`;
    if (c.op !== 'one_of' && (values.length !== 1 || typeof values[0] !== 'number')) return `${c.param}: ${c.op.replace('_', ' ')} takes one number.`;
  }
  return null;
}


/** The plan an amendment of `old` to `params` previews (numbered `n`), what changed, and who
 *  changed what in words: the gateway would plan anew; the fake rewrites the words that named
 *  the old values. */
export function successor(old: PlanView, moved: Moved[], params: unknown, n: number): { plan: PlanView; changed: WhatChanged; said: string[] } {
  const word = (v: unknown) => (v === undefined ? '(none)' : shown(v));
  // The gateway would plan anew; the fake rewrites the words that named the old value.
  const literal = (v: unknown) => word(v).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const swap = (text: string) => moved.reduce((t, m) => (m.before === undefined || m.after === undefined ? t
    : t.replace(new RegExp(`(to |→ )${literal(m.before)}(?!\\w|\\.\\d)`), `$1${word(m.after)}`)), text);
  const plan: PlanView = {
    ...structuredClone(old), plan_id: `plan_${String(n).padStart(4, '0')}`, supersedes: old.plan_id, status: 'pending_approval',
    digest: `sha256:${(n * 7919).toString(16).padStart(8, '0')}${old.digest.slice(15)}`, stale: [],
    request: request(Object.fromEntries(leaves(params).map(([path, v]) => [path, shown(v)])), old.request.leaves),
    approvals_received: 0, approved_by: [], approvals: [], approvable: true, not_approvable_reason: null,
    gist: swap(old.gist), expires_at: new Date(Date.now() + 15 * 60_000).toISOString(),
  };
  plan.changes = plan.changes.map((c) => {
    const m = moved.find((x) => x.path === c.path);
    return m ? { ...c, after: word(m.after), diff: { kind: 'scalar', before: c.before, after: word(m.after) } } : c;
  });
  plan.effects = plan.effects.map((e) => ({ ...e, description: swap(e.description) }));
  const effectsChanged: EffectChange[] = old.effects.filter((e) => swap(e.description) !== e.description).map((e) => ({
    effect_type: e.effect_type, resource: e.resource, description_before: e.description, description_after: swap(e.description),
    values: old.changes.filter((c) => c.resource === e.resource && moved.some((m) => m.path === c.path)).map((c) => {
      const m = moved.find((x) => x.path === c.path)!;
      return { path: c.path, diff: { kind: 'scalar' as const, before: c.after, after: word(m.after) } };
    }),
    subjects_before: e.subjects_total, subjects_after: e.subjects_total, subjects_added: [], subjects_removed: [],
  }));
  const changed: WhatChanged = {
    from_plan: old.plan_id, to_plan: plan.plan_id, effects_added: [], effects_removed: [], effects_changed: effectsChanged,
    cost_delta: '+0.00', moved: [],
    request: moved.map((m) => ({ path: m.path, diff: { kind: 'scalar', before: word(m.before), after: word(m.after) } })),
  };
  const said = moved.map((m) => {
    // As the gateway words it: a nested param's pointer read with dots.
    const name = m.path.replace(/^\//, '').replaceAll('/', '.');
    if (m.before === undefined) return `set ${name} to ${word(m.after)}`;
    if (m.after === undefined) return `removed ${name}`;
    return `changed ${name} from ${word(m.before)} to ${word(m.after)}`;
  });
  return { plan, changed, said };
}
