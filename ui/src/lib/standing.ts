// A standing approval's constraints as the approver edits them, and its use in a line.
import type { ConstraintOp, StandingView } from '../backend';
import { counted } from './time';

export const OPS: { op: ConstraintOp; name: string }[] = [
  { op: 'one_of', name: 'is one of' },
  { op: 'at_least', name: 'at least' },
  { op: 'at_most', name: 'at most' },
];

/** Each value as typed: a JSON string bare, anything else as its JSON. */
function word(json: string): string {
  try {
    const v = JSON.parse(json);
    return typeof v === 'string' ? v : json;
  } catch {
    return json;
  }
}

/** The values, comma-separated, as one field shows them. */
export function valuesText(values: string[]): string {
  return values.map(word).join(', ');
}

/** The values all are JSON strings: what is typed stays text, "14" included. */
export function allStrings(values: string[]): boolean {
  return values.length > 0 && values.every((v) => {
    try {
      return typeof JSON.parse(v) === 'string';
    } catch {
      return false;
    }
  });
}

export type Parsed = { values: string[]; error: null } | { values: null; error: string };

/** What the approver typed as JSON text each, or why it cannot be: `at least` and `at most` take
 *  one number; `is one of` takes values separated by commas, kept as text when `strings`. */
export function parseValues(text: string, op: ConstraintOp, strings: boolean): Parsed {
  const parts = text.split(',').map((p) => p.trim()).filter(Boolean);
  if (parts.length === 0) return { values: null, error: 'Give a value.' };
  if (op !== 'one_of') {
    const n = Number(parts[0]);
    if (parts.length !== 1 || !Number.isFinite(n)) return { values: null, error: `“${OPS.find((o) => o.op === op)!.name}” takes one number.` };
    return { values: [JSON.stringify(n)], error: null };
  }
  return {
    values: parts.map((p) => {
      if (strings) return JSON.stringify(p);
      try {
        return JSON.stringify(JSON.parse(p));
      } catch {
        return JSON.stringify(p);
      }
    }),
    error: null,
  };
}

/** A constraint in words, as the core words it: "project is prj_184 or prj_201", "retention_days ≥ 7". */
export function constraintLine(param: string, op: ConstraintOp, values: string[]): string {
  const name = param.replace(/^\//, '');
  const words = values.map(word);
  if (op === 'at_least') return `${name} ≥ ${words[0]}`;
  if (op === 'at_most') return `${name} ≤ ${words[0]}`;
  return `${name} is ${words.join(' or ')}`;
}

/** "3 of 10 plans run · 6.00 of 20.00 credits": only plans that ran count, not those it
 *  approved that have not run yet. */
export function useText(s: StandingView): string {
  return `${s.plans_used} of ${counted(s.max_plans, 'plan')} run · ${s.credits_used} of ${s.max_cost_total} credits`;
}

/** The params in `params` no constraint reaches (one on "/filter/team" reaches "/filter"), by
 *  name: what a standing approval leaves open to any value. */
export function openParams(params: string[], constrained: string[]): string[] {
  return params.filter((p) => !constrained.some((c) => c === p || c.startsWith(`${p}/`)))
    .map((p) => p.replace(/^\//, ''));
}

/** Credits as the caps take them: digits, and at most two after the point. */
export function isCredits(text: string): boolean {
  return /^\d+(\.\d{1,2})?$/.test(text.trim());
}
