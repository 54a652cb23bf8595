// The one interface the UI talks to. Only this folder knows how it reaches the Rust side.
import type { DecisionView, PlanView, QueueView, StatusView } from './types';

export type { DecisionView, PlanView, QueueView, QueueItem, StatusView } from './types';

export interface Backend {
  status(): Promise<StatusView>;
  queue(): Promise<QueueView>;
  plan(planId: string): Promise<PlanView>;
  /** Signs an approval of `digest`, the digest the approver was shown; refused if the plan moved. */
  approve(planId: string, digest: string, reason: string | null): Promise<DecisionView>;
  /** Calls `listener` whenever the queue may have changed; returns an unsubscribe function. */
  onQueueChanged(listener: () => void): Promise<() => void>;
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
  return new FakeBackend();
}
