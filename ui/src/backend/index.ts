// The one interface the UI talks to. Only this folder knows how it reaches the Rust side.
import type {
  BatchItem,
  BatchOutcome,
  BatchView,
  DecisionView,
  HistoryEntry,
  PlanView,
  QueueChange,
  QueueView,
  RefreshView,
  RowGist,
  Settings,
  SettingsView,
  StatusView,
  SubjectsPage,
} from './types';

export type * from './types';

export interface Backend {
  status(): Promise<StatusView>;
  queue(): Promise<QueueView>;
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
  /** The path written, or null when the save dialog was cancelled. */
  exportHistory(): Promise<string | null>;
  settings(): Promise<SettingsView>;
  saveSettings(settings: Settings): Promise<SettingsView>;
  enroll(gatewayUrl: string, code: string): Promise<StatusView>;
  /** Sends the current gateway's credential to `gatewayUrl` from now on (the gateway moved); the
   * core asks a native confirmation naming both URLs and a fresh identity proof first. */
  moveCredential(gatewayUrl: string): Promise<StatusView>;
  /** Calls `listener` whenever the queue may have changed, with what moved in it (null: ask for
   *  the whole queue); returns an unsubscribe function. */
  onQueueChanged(listener: (change: QueueChange | null) => void): Promise<() => void>;
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
