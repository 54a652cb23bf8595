import { invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { asBackendError, type Backend } from './index';
import type { DecisionView, PlanView, QueueView, StatusView } from './types';

async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (e) {
    throw asBackendError(e);
  }
}

export class TauriBackend implements Backend {
  status(): Promise<StatusView> {
    return call('status');
  }
  queue(): Promise<QueueView> {
    return call('queue');
  }
  plan(planId: string): Promise<PlanView> {
    return call('plan', { planId });
  }
  approve(planId: string, digest: string, reason: string | null): Promise<DecisionView> {
    return call('approve', { planId, digest, reason });
  }
  async onQueueChanged(listener: () => void): Promise<() => void> {
    return listen('queue-changed', () => listener());
  }
}
