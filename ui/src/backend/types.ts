// Generated from crates/console by `UPDATE_TS=1 cargo test -p countersign-console --test console ts_types`.
// Do not edit.

export type ErrorView = { code: string, message: string, };

export type InsightRow = { name: string, 
/**
 * An approver's id, beside their name; none for a capability.
 */
id: string | null, decided: number, 
/**
 * Approved of decided, 0 to 1; none before any decision.
 */
approval_rate: number | null, median_seconds: number | null, p90_seconds: number | null, faster_than_reading: number, 
/**
 * Plans that expired waiting (capabilities), or approved by standing approvals (approvers).
 */
other: number, };

export type InsightDay = { day: string, decided: number, median_seconds: number | null, };

export type InsightsView = { window: string, since: string, until: string, 
/**
 * How "faster than it can be read" is judged, in words.
 */
reading: string, capabilities: Array<InsightRow>, approvers: Array<InsightRow>, days: Array<InsightDay>, };

export type Turn = "me" | "decided" | "others";

export type RuleView = { id: string, description: string, 
/**
 * "Needs 2 of leads — 1 received (Lena)", "Met: 1 of finance — 1 received (Fay)".
 */
line: string, missing: number, 
/**
 * Display names of the approvers counted for it.
 */
met_by: Array<string>, 
/**
 * "approval.rego:34", where the rule is written in the policy.
 */
source: string | null, 
/**
 * It is not met and asks for this approver.
 */
asks_me: boolean, 
/**
 * "also oncall since 10:42Z" once the rule widened to its escalation.
 */
escalated: string | null, 
/**
 * "not agt_ops's team (finance)" when it leaves the requesting agent's team out.
 */
excludes: string | null, };

export type QueueItem = { plan_id: string, title: string, capability_id: string, agent_id: string, on_behalf_of: string | null, status: string, risk: Array<string>, credits_max: string, currency: string, effects_direct: number, effects_derived: number, subjects_total: number, warnings: number, errors: number, approvals_received: number, approvals_required: number, expires_at: string, 
/**
 * One line: "prj_184 retention days 30 → 14", "grp_support −37" once the plan's content was
 * read; until then what the summary counts ("37 subjects").
 */
gist: string, 
/**
 * The gist is the plan's own (read, and checked against its digest), not a count.
 */
gist_read: boolean, 
/**
 * Not executable: an error-severity validation entry.
 */
blocked: boolean, 
/**
 * A decision on this plan waits in the local outbox.
 */
queued: boolean, 
/**
 * Display names of the approvers who approved.
 */
approved_by: Array<string>, 
/**
 * Whether the plan waits on this approver (an open rule asks for them), on others, or was
 * decided by them.
 */
turn: Turn, 
/**
 * Until when this console hides the plan from the default view (the approver snoozed it);
 * null when not snoozed.
 */
snoozed_until: string | null, };

export type Facet = "all" | "mine" | "risky" | "bulk" | "access" | "money" | "blocked" | "stale" | "snoozed";

export type Sort = "expiry" | "credits" | "subjects";

export type QueueQuery = { 
/**
 * Words every shown row contains, in any field the row shows, case aside.
 */
text: string, facet: Facet, 
/**
 * One capability id, or empty for all.
 */
capability: string, sort: Sort, };

export type WindowAsk = { query: QueueQuery, offset: number, limit: number, 
/**
 * Plans whose rows come with every answer and change, wherever they are.
 */
pins: Array<string>, };

export type FacetCount = { facet: Facet, count: number, };

export type QueueCounts = { 
/**
 * The rows the query shows: the list's length.
 */
matching: number, 
/**
 * Every pending plan, snoozed or not.
 */
all: number, 
/**
 * How many rows each facet would show under no other filter; snoozed plans count only
 * under `snoozed`.
 */
facets: Array<FacetCount>, 
/**
 * The capabilities of the pending plans, sorted: what the capability filter offers.
 */
capabilities: Array<string>, 
/**
 * Sum of `amount_max` over the pending plans priced in credits.
 */
total_credits: string, };

export type PinnedRow = { at: number | null, item: QueueItem, };

export type QueueWindow = { offset: number, items: Array<QueueItem>, counts: QueueCounts, pinned: Array<PinnedRow>, 
/**
 * What a live change applies to: a window at any other generation asks again.
 */
generation: number, };

export type PlacedRow = { 
/**
 * The row's index in the window after the change.
 */
at: number, item: QueueItem, };

export type Arrival = { title: string, agent_id: string, };

export type QueueChange = { from: number, to: number, upserted: Array<PlacedRow>, removed: Array<string>, 
/**
 * How many rows the window holds after the change.
 */
total: number, counts: QueueCounts, pinned: Array<PinnedRow>, 
/**
 * Plans new to the queue since the last change, wherever they are in it: what a screen
 * reader is told. The first is named when it is the only one.
 */
arrivals: number, first_arrival: Arrival | null, };

export type RowGist = { plan_id: string, gist: string, };

export type Segment = { text: string, 
/**
 * The words that changed within a changed line.
 */
emphasized: boolean, };

export type DiffLine = { 
/**
 * `equal`, `delete` or `insert`.
 */
tag: string, old_line: number | null, new_line: number | null, segments: Array<Segment>, };

export type JsonChange = { pointer: string, 
/**
 * `added`, `removed` or `changed`.
 */
change: string, before: string | null, after: string | null, };

export type ValueDiff = { "kind": "scalar", before: string, after: string, } | { "kind": "text", lines: Array<DiffLine>, 
/**
 * True when the deadline cut the diff short: whole lines only, no word highlights.
 */
coarse: boolean, } | { "kind": "json", entries: Array<JsonChange>, 
/**
 * Pointers that differ beyond the ones listed.
 */
omitted: number, };

export type ChangeView = { resource: string, path: string, 
/**
 * JSON text of the value, or the string itself for strings.
 */
before: string, after: string, diff: ValueDiff, };

export type EffectView = { id: string, effect_type: string, kind: string, description: string, resource: string, derived: boolean, cause: string | null, badges: Array<string>, subjects_total: number | null, 
/**
 * The gateway's sample of the subjects, outside the digest: empty when it contradicts the
 * signed set, and shown as the plan's only when `sample_check` holds.
 */
sample: Array<string>, sample_check: SampleCheck | null, cost: string | null, };

export type EffectGroup = { effect_type: string, kind: string, derived: boolean, effects: number, subjects: number, badges: Array<string>, };

export type ValidationView = { severity: string, code: string, path: string | null, message: string, repair: string | null, blocks_execution: boolean, 
/**
 * The items behind the entry as the gateway named them (the first 100): the items a
 * retention change leaves under legal hold, say.
 */
items: Array<NamedItem>, 
/**
 * How many items the entry counts in all.
 */
items_total: number, };

export type NamedItem = { id: string, label: string, 
/**
 * Its detail in words: `expires 2027-01-02 · legal hold`.
 */
detail: string | null, };

export type AssumptionView = { dependency: string, description: string, execution_can_proceed_without: boolean, };

export type CostView = { min: string, max: string, currency: string, cost_class: string, preflight: string, };

export type MovedView = { resource: string, planned: string, current: string, };

export type PlanView = { plan_id: string, 
/**
 * The gateway's name for the plan (its queue summary's title, or the capability id): not
 * signed, so shown as the gateway's label and never in a dialog or a notification.
 */
label: string, capability_id: string, version: string, agent_id: string, on_behalf_of: string | null, status: string, created_at: string, expires_at: string, 
/**
 * The digest the console computed and would sign.
 */
digest: string, digest_matches: boolean, approvals_received: number, approvals_required: number, approved_by: Array<string>, risk: Array<string>, 
/**
 * The parameters the plan signs: for a provider plan, the text that leaves.
 */
request: RequestView, changes: Array<ChangeView>, effects: Array<EffectView>, groups: Array<EffectGroup>, validation: Array<ValidationView>, assumptions: Array<AssumptionView>, cost: CostView, stale: Array<MovedView>, approvable: boolean, not_approvable_reason: string | null, approvals: Array<ApprovalView>, wallet: WalletView | null, 
/**
 * The risky-plan sentence in words; empty when the plan has no risk flag.
 */
consequence: string, gist: string, 
/**
 * A decision on this plan waits in the local outbox.
 */
queued: boolean, 
/**
 * The gateway did not answer: this is the plan as the console last fetched it.
 */
last_fetched: boolean, execution: ExecutionView | null, supersedes: string | null, superseded_by: string | null, 
/**
 * Who must approve, as the gateway's approval policy set it: not part of the signed plan.
 */
rules: Array<RuleView>, 
/**
 * Whether the plan waits on this approver.
 */
turn: Turn, 
/**
 * Why the gateway's approval policy would refuse a standing approval for plans like this
 * one ("approve plans like this" is disabled with it), or null.
 */
standing_refused: string | null, };

export type StatusView = { gateway_name: string, gateway_url: string, demo: boolean, 
/**
 * The approver's display name, e.g. "Dana".
 */
approver: string, key_id: string, link: Link, last_sync: string | null, last_error: ErrorView | null, 
/**
 * Decisions written but not yet answered.
 */
outbox: number, 
/**
 * The approver's teams at the gateway (empty when in none, or while unknown): someone in a
 * team is asked by its rules, and the queue opens on the plans waiting on them.
 */
teams: Array<string>, };

export type DecisionView = { plan_id: string, status: string, approvals_received: number, approvals_required: number, };

export type EffectRef = { effect_type: string, resource: string, description: string, subjects_total: number | null, };

export type ValueChange = { path: string, diff: ValueDiff, };

export type EffectChange = { effect_type: string, resource: string, description_before: string, description_after: string, values: Array<ValueChange>, subjects_before: number | null, subjects_after: number | null, subjects_added: Array<string>, subjects_removed: Array<string>, };

export type RevisionMove = { resource: string, before: string | null, after: string | null, };

export type WhatChanged = { from_plan: string, to_plan: string, effects_added: Array<EffectRef>, effects_removed: Array<EffectRef>, effects_changed: Array<EffectChange>, 
/**
 * New `amount_max` minus old, signed, e.g. `+0.05`.
 */
cost_delta: string, moved: Array<RevisionMove>, 
/**
 * The request's values that differ from the old plan's: none, when the gateway asked again
 * with the same parameters, as a refresh does.
 */
request: Array<ValueChange>, };

export type SubjectCheck = { plan_id: string, effect_id: string, total: number, received: number, expected_digest: string, computed_digest: string, ascending: boolean, matches: boolean, };

export type SampleCheck = "signed" | "checked" | "unchecked" | "mismatch";

export type RequestView = { 
/**
 * Each value of the parameters, by JSON pointer (`/messages/0/content`), in document order.
 */
params: Array<ParamView>, 
/**
 * The plan calls an outside service: these parameters are what leaves for it.
 */
leaves: boolean, 
/**
 * The plan calls a tool of an MCP server the gateway stands in front of: these parameters
 * are the tool's arguments.
 */
mcp: McpCallView | null, };

export type ParamView = { path: string, 
/**
 * Strings as they are, anything else as JSON.
 */
text: string, 
/**
 * Shown collapsed until expanded.
 */
long: boolean, };

export type McpCallView = { upstream: string, tool: string, };

export type JournalEntry = { id: number, gateway_id: string, plan_id: string, decision: string, 
/**
 * The DSSE envelope exactly as sent.
 */
envelope: unknown, public_key: string, recorded_at: string, attempts: number, 
/**
 * `pending` (not yet answered), `answered` (accepted) or `refused` (with the gateway's code).
 */
state: string, answer: unknown, answered_at: string | null, };

export type NotifyRules = { 
/**
 * Risk flags (PROTOCOL section 3) that make a plan worth a notification.
 */
risk: Array<string>, 
/**
 * Capabilities whose every plan is worth one.
 */
capabilities: Array<string>, 
/**
 * Count (in the tray) and announce every plan in the queue, not only those waiting on this
 * approver (a rule of the gateway's policy asks for them).
 */
every_plan: boolean, };

export type Link = "online" | "degraded" | "offline";

export type ApprovalView = { approver_id: string, display_name: string, decision: string, at: string, };

export type WalletView = { agent_id: string, remaining: string, limit: string, 
/**
 * Remaining minus the plan's `amount_max` (may be negative).
 */
after_max: string, can_pay: boolean, };

export type DeliveryIssue = { message_id: number, user_id: string, recipient: string, subject: string, state: string, reason: string, 
/**
 * Where a release sends it: the address its recipient has now.
 */
release_to: string | null, 
/**
 * Refunded to the agent if it is cancelled.
 */
charge: string, digest: string, 
/**
 * `release`, `resend`, `cancel`: what fits it as it stands; none when it did not check.
 */
remedies: Array<string>, };

export type RemedyTaken = { user_id: string, remedy: string, approver: string, refunded: string, decided_at: string, };

export type RemedyOutcome = { message_id: number, remedy: string, 
/**
 * `pending` (it goes out again) or `cancelled`.
 */
state: string, recipient: string | null, refunded: string, };

export type MediaKind = "image" | "video" | "audio" | "file";

export type MediaView = { kind: MediaKind, 
/**
 * A name to show: the entry's own, or the last part of its URL.
 */
name: string, mime_type: string | null, size_bytes: number | null, sha256: string | null, 
/**
 * A `data:` URL safe to render inline (audio, raster image).
 */
inline: string | null, 
/**
 * An http(s) address, shown as text.
 */
link: string | null, };

export type FailureView = { code: string, message: string, retryable: boolean, };

export type DeliveriesView = { sent: number, pending: number, held: number, failed: number, cancelled: number, 
/**
 * Held or failed messages: who, where, and why, in the gateway's words.
 */
attention: Array<DeliveryIssue>, 
/**
 * Releases, resends and cancellations, oldest first.
 */
remedies: Array<RemedyTaken>, };

export type ExecutionView = { success: boolean, content: string, provider: string, usage: { input_tokens: number, output_tokens: number, credits: string | null, units: Array<[string, number]> }, 
/**
 * Every metadata key, unknown ones included, value as compact JSON text (strings unquoted).
 */
metadata: Array<[string, string]>, 
/**
 * The envelope's images, files and videos, with what may be shown inline.
 */
media: Array<MediaView>, 
/**
 * The error contract of a failed execution.
 */
error: FailureView | null, 
/**
 * What the wallet was charged, and the range the plan estimated.
 */
charged: string | null, estimated: string | null, 
/**
 * The provider call has been sent and has not answered yet.
 */
in_flight: boolean, 
/**
 * What was applied, before → after, as the gateway recorded it.
 */
journal: Array<{ effect_id: string, resource: string, before: string, after: string }>, executed_at: string | null, 
/**
 * How the emails the execution queued stand, when the gateway says.
 */
deliveries: DeliveriesView | null, };

export type RefreshView = { plan: PlanView, changed: WhatChanged, 
/**
 * Who changed what, when the plan is an amendment: "Dana changed retention_days from 7 to
 * 14.".
 */
amended: string | null, };

export type SubjectRow = { id: string, label: string | null, 
/**
 * What the effect does to this subject in particular, in words: `expires 2026-12-30 →
 * 2026-12-14`.
 */
detail: string | null, 
/**
 * What else happens to this subject: the plan's other effects whose subject set holds it.
 */
also: Array<string>, };

export type SubjectsPage = { plan_id: string, effect_id: string, effect_description: string, 
/**
 * Subjects in the effect.
 */
total: number, 
/**
 * Rows matching the query.
 */
matched: number, offset: number, rows: Array<SubjectRow>, check: SubjectCheck, };

export type BatchColumn = { plan_id: string, 
/**
 * The gateway's label for the plan, not signed.
 */
label: string, capability_id: string, gist: string, agent_id: string, on_behalf_of: string | null, effects_direct: number, effects_derived: number, subjects: number, warnings: number, errors: number, credits_max: string, currency: string, approvals_received: number, approvals_required: number, digest: string, digest_matches: boolean, risk: Array<string>, consequence: string, approvable: boolean, not_approvable_reason: string | null, };

export type Overlap = { plans: Array<string>, subjects: number, sample: Array<string>, };

export type BatchView = { plans: Array<BatchColumn>, total_credits: string, distinct_subjects: number, overlaps: Array<Overlap>, };

export type BatchItem = { plan_id: string, digest: string, };

export type BatchResult = { plan_id: string, 
/**
 * `answered`, `queued` or `refused`.
 */
outcome: string, decision: DecisionView | null, error: ErrorView | null, };

export type BatchOutcome = { results: Array<BatchResult>, };

export type HistoryEntry = { id: number, plan_id: string, decision: string, reason: string | null, plan_digest: string, issued_at: string, recorded_at: string, attempts: number, 
/**
 * `pending`, `answered` or `refused`.
 */
state: string, answer: unknown, answered_at: string | null, 
/**
 * The envelope's signature checked offline against this console's keys.
 */
verified: boolean, verify_error: string | null, envelope: unknown, };

export type Theme = "light" | "dark" | "system";

export type Settings = { gateway_url: string | null, poll_interval_secs: number, theme: Theme, notify: NotifyRules, };

export type SettingsView = { settings: Settings, 
/**
 * Settings fields overridden by `COUNTERSIGN_*` variables, e.g. `["gateway_url"]`.
 */
overridden: Array<string>, config_path: string, };

export type ConstraintOp = "one_of" | "at_least" | "at_most";

export type ConstraintView = { 
/**
 * A JSON pointer into the request's params, e.g. "/project".
 */
param: string, op: ConstraintOp, 
/**
 * The values as JSON text each: ["\"prj_184\""] for one_of, ["7"] for at_least / at_most.
 */
values: Array<string>, 
/**
 * "project is prj_184", "retention_days ≥ 7"
 */
line: string, };

export type StandingDraft = { plan_id: string, agent_id: string, capability_id: string, constraints: Array<ConstraintView>, 
/**
 * Every effect's resource must be one of these ("projects/prj_184"; a trailing * matches a
 * prefix).
 */
resources: Array<string>, 
/**
 * The risk flags it may cover: the plan's own.
 */
risk_flags: Array<string>, 
/**
 * Every param the capability takes (JSON pointers, "/filter"): those without a constraint
 * are left open ("any filter"), and the confirmation says so.
 */
params: Array<string>, max_cost_per_plan: string, max_cost_total: string, max_plans: number, 
/**
 * 1 to 30.
 */
days: number, reason: string, };

export type StandingState = "active" | "expired" | "used_up" | "revoked" | "suspended";

export type StandingUseView = { 
/**
 * 1 for the first plan it let run.
 */
number: number, plan_id: string, credits: string, at: string, };

export type StandingView = { id: string, 
/**
 * The signer's display name.
 */
approver: string, mine: boolean, agent_id: string, capability_id: string, constraints: Array<ConstraintView>, resources: Array<string>, risk_flags: Array<string>, max_plans: number, plans_used: number, max_cost_per_plan: string, max_cost_total: string, credits_used: string, issued_at: string, expires_at: string, reason: string, state: StandingState, 
/**
 * Why it is not active, in words ("revoked by Dana", "the key that signed it was revoked").
 */
state_reason: string | null, 
/**
 * What it allows, in words: the sentence the native confirmation showed.
 */
allows: string, 
/**
 * Its envelope verifies under its signer's key and says exactly the terms shown; when not,
 * the terms are left empty and `verify_error` says why.
 */
verified: boolean, verify_error: string | null, 
/**
 * The plans it let run, newest first: its uses.
 */
uses: Array<StandingUseView>, 
/**
 * The plans it approved that have not run ("covered, not yet run"), newest first.
 */
covered: Array<string>, };

export type FormFieldKind = "string" | "integer" | "number" | "boolean" | "choice" | "number_choice";

export type FormField = { name: string, label: string, kind: FormFieldKind, choices: Array<string>, required: boolean, description: string | null, };

export type AmendDraft = { plan_id: string, capability_id: string, 
/**
 * The plan's params now.
 */
params: unknown, 
/**
 * The capability's input_schema.
 */
schema: unknown, 
/**
 * A form when the schema is a flat object of scalar properties; null: edit JSON.
 */
form: Array<FormField> | null, };
