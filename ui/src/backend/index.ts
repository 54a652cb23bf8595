// The one interface the UI talks to. Only this folder knows how it reaches the Rust side.
import type {
  AmendDraft,
  BatchItem,
  BatchOutcome,
  BatchView,
  DecisionView,
  HistoryEntry,
  InsightsView,
  PlanView,
  QueueChange,
  QueueQuery,
  QueueWindow,
  RefreshView,
  RemedyOutcome,
  RowGist,
  Settings,
  SettingsView,
  StandingDraft,
  StandingView,
  StatusView,
  SubjectsPage,
  WindowAsk,
} from './types';

export type * from './types';

/** The windows the Insights screen offers. */
export type InsightsWindow = '24h' | '7d' | '30d';

export interface Backend {
  status(): Promise<StatusView>;
  /** The rows `[offset, offset + limit)` (at most 500) of the list `query` shows, with the counts
   *  and the rows of the `pins` wherever they are; live changes are told against them from now on. */
  queueWindow(ask: WindowAsk): Promise<QueueWindow>;
  /** The plans from `from` to `to` in the list `query` shows, both included (at most a batch). */
  queueBetween(query: QueueQuery, from: string, to: string): Promise<string[]>;
  /** The gists of the rows in view (at most 100 at once), read from their plans and checked
   *  against their digests; a plan that cannot be read now is left out. */
  gists(planIds: string[]): Promise<RowGist[]>;
  plan(planId: string): Promise<PlanView>;
  /** Signs an approval of `digest`, the digest the approver was shown; refused if the plan moved.
   *  A risky plan is confirmed in a native dialog first (declined: `cancelled`). */
  approve(planId: string, digest: string, reason: string | null): Promise<DecisionView>;
  /** Signs a rejection; the reason is required. */
  reject(planId: string, digest: string, reason: string): Promise<DecisionView>;
  /** Asks the gateway for a new preview of the same request and what changed since the last one. */
  refresh(planId: string): Promise<RefreshView>;
  /** A window `[offset, offset + limit)` of the effect's subjects matching `query`. */
  subjects(planId: string, effectId: string, query: string, offset: number, limit: number): Promise<SubjectsPage>;
  batch(planIds: string[]): Promise<BatchView>;
  decideBatch(decision: 'approve' | 'reject', items: BatchItem[], reason: string | null): Promise<BatchOutcome>;
  /** Every decision this console sent, newest first. */
  history(): Promise<HistoryEntry[]>;
  /** Writes the history as JSON lines or as in-toto statements; the path written, or null when
   *  the save dialog was cancelled. */
  exportHistory(format: 'json' | 'in-toto'): Promise<string | null>;
  /** How approvals are going at the gateway over the last `window`. */
  insights(window: InsightsWindow): Promise<InsightsView>;
  /** Standing approvals at this gateway, newest first. */
  standing(): Promise<StandingView[]>;
  /** A standing approval prefilled from plan `planId`: its agent, capability and resources, each
   *  scalar param as a one_of constraint, its risk flags, this plan's cost as the per-plan cap, ×10
   *  as the total, 10 plans, 7 days. */
  standingDraft(planId: string): Promise<StandingDraft>;
  /** Signs and sends `draft`, after a native confirmation that says in words what it allows
   *  (declined: BackendError code `cancelled`). */
  createStanding(draft: StandingDraft): Promise<StandingView>;
  /** Revokes it at once; the approvals it gave to plans not yet run stop counting. */
  revokeStanding(id: string): Promise<StandingView>;
  /** Signs and sends a remedy for message `messageId` of an executed plan, shown with `digest`,
   *  after a native confirmation of where it goes or that it never does (declined: BackendError
   *  code `cancelled`). */
  remedyMail(planId: string, messageId: number, remedy: 'release' | 'resend' | 'cancel', digest: string): Promise<RemedyOutcome>;
  /** What the amend editor starts from. */
  amendDraft(planId: string): Promise<AmendDraft>;
  /** Sends the amended params; the gateway previews them as the plan's successor. Bad params:
   *  BackendError `validation_error` whose message names the field. */
  amend(planId: string, params: unknown): Promise<RefreshView>;
  /** Hides the plan from the queue's default view for `minutes` (never past two minutes before it
   *  expires); it comes back with a notification. */
  snooze(planId: string, minutes: number): Promise<void>;
  unsnooze(planId: string): Promise<void>;
  settings(): Promise<SettingsView>;
  saveSettings(settings: Settings): Promise<SettingsView>;
  enroll(gatewayUrl: string, code: string): Promise<StatusView>;
  /** Sends the current gateway's credential to `gatewayUrl` from now on (the gateway moved); the
   * core asks a native confirmation naming both URLs and a fresh identity proof first. */
  moveCredential(gatewayUrl: string): Promise<StatusView>;
  /** Calls `listener` whenever the queue may have changed, with what moved within the window's rows
   *  (null: ask for the window again); returns an unsubscribe function. */
  onQueueChanged(listener: (change: QueueChange | null) => void): Promise<() => void>;
  /** Calls `listener` whenever a plan changed at the gateway, shown in the queue or not (a plan
   *  ran, a standing approval was used); returns an unsubscribe function. */
  onPlansChanged(listener: () => void): Promise<() => void>;
  /** Calls `listener` with a plan id to show (a deep link or a notification click). */
  onOpenPlan(listener: (planId: string) => void): Promise<() => void>;
}

/** Every failure crosses as a stable code and a message. */
export class BackendError extends Error {
  constructor(
    public readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function asBackendError(e: unknown): BackendError {
  if (e instanceof BackendError) return e;
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    return new BackendError(String(e.code), String(e.message));
  }
  return new BackendError('internal', String(e));
}

/** The Tauri backend inside the desktop app; the fake one in a plain browser. */
export async function connect(): Promise<Backend> {
  if (typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window) {
    const { TauriBackend } = await import('./tauri');
    return new TauriBackend();
  }
  const { FakeBackend } = await import('./fake');
  // In a plain browser the page's own dialog stands in for the native one; `?offline` starts
  // with the gateway down, so queued decisions can be seen.
  const fake = new FakeBackend({
    confirm: (title, consequence, lines) => window.confirm([title, consequence, ...lines].join('\n')),
  });
  if (new URLSearchParams(window.location.search).has('offline')) fake.goOffline();
  return fake;
}
