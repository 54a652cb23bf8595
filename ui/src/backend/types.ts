// Generated from crates/console by `UPDATE_TS=1 cargo test -p countersign-console --test ts_types`.
// Do not edit.

export type ErrorView = { code: string, message: string, };

export type QueueItem = { plan_id: string, title: string, capability_id: string, agent_id: string, on_behalf_of: string | null, status: string, risk: Array<string>, credits_max: string, currency: string, effects_direct: number, effects_derived: number, subjects_total: number, warnings: number, errors: number, approvals_received: number, approvals_required: number, expires_at: string, };

export type QueueView = { items: Array<QueueItem>, 
/**
 * Sum of `amount_max` over the pending plans priced in credits.
 */
total_credits: string, };

export type ChangeView = { resource: string, path: string, 
/**
 * JSON text of the value, or the string itself for strings.
 */
before: string, after: string, };

export type EffectView = { id: string, effect_type: string, kind: string, description: string, resource: string, derived: boolean, cause: string | null, badges: Array<string>, subjects_total: number | null, sample: Array<string>, cost: string | null, };

export type ValidationView = { severity: string, code: string, path: string | null, message: string, repair: string | null, blocks_execution: boolean, };

export type AssumptionView = { dependency: string, description: string, execution_can_proceed_without: boolean, };

export type CostView = { min: string, max: string, currency: string, cost_class: string, preflight: string, };

export type MovedView = { resource: string, planned: string, current: string, };

export type PlanView = { plan_id: string, title: string, capability_id: string, version: string, agent_id: string, on_behalf_of: string | null, status: string, created_at: string, expires_at: string, 
/**
 * The digest the console computed and would sign.
 */
digest: string, digest_matches: boolean, approvals_received: number, approvals_required: number, approved_by: Array<string>, risk: Array<string>, changes: Array<ChangeView>, effects: Array<EffectView>, validation: Array<ValidationView>, assumptions: Array<AssumptionView>, cost: CostView, stale: Array<MovedView>, approvable: boolean, not_approvable_reason: string | null, };

export type StatusView = { gateway_name: string, gateway_url: string, demo: boolean, approver: string, key_id: string, online: boolean, last_sync: string | null, last_error: ErrorView | null, };

export type DecisionView = { plan_id: string, status: string, approvals_received: number, approvals_required: number, };
