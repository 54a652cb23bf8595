import { invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { asBackendError, type Backend, type InsightsWindow } from './index';
import { visible } from './visible';
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

async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return visible(await invoke<T>(command, args));
  } catch (e) {
    throw asBackendError(visible(e));
  }
}

export class TauriBackend implements Backend {
  status(): Promise<StatusView> {
    return call('status');
  }
  queueWindow(ask: WindowAsk): Promise<QueueWindow> {
    return call('queue_window', { ask });
  }
  queueBetween(query: QueueQuery, from: string, to: string): Promise<string[]> {
    return call('queue_between', { query, from, to });
  }
  gists(planIds: string[]): Promise<RowGist[]> {
    return call('gists', { planIds });
  }
  plan(planId: string): Promise<PlanView> {
    return call('plan', { planId });
  }
  approve(planId: string, digest: string, reason: string | null): Promise<DecisionView> {
    return call('approve', { planId, digest, reason });
  }
  reject(planId: string, digest: string, reason: string): Promise<DecisionView> {
    return call('reject', { planId, digest, reason });
  }
  refresh(planId: string): Promise<RefreshView> {
    return call('refresh', { planId });
  }
  subjects(planId: string, effectId: string, query: string, offset: number, limit: number): Promise<SubjectsPage> {
    return call('subjects', { planId, effectId, query, offset, limit });
  }
  batch(planIds: string[]): Promise<BatchView> {
    return call('batch', { planIds });
  }
  decideBatch(decision: 'approve' | 'reject', items: BatchItem[], reason: string | null): Promise<BatchOutcome> {
    return call('decide_batch', { decision, items, reason });
  }
  history(): Promise<HistoryEntry[]> {
    return call('history');
  }
  exportHistory(format: 'json' | 'in-toto'): Promise<string | null> {
    return call('export_history', { format });
  }
  insights(window: InsightsWindow): Promise<InsightsView> {
    return call('insights', { window });
  }
  standing(): Promise<StandingView[]> {
    return call('standing');
  }
  standingDraft(planId: string): Promise<StandingDraft> {
    return call('standing_draft', { planId });
  }
  createStanding(draft: StandingDraft): Promise<StandingView> {
    return call('create_standing', { draft });
  }
  revokeStanding(id: string): Promise<StandingView> {
    return call('revoke_standing', { id });
  }
  remedyMail(planId: string, messageId: number, remedy: 'release' | 'resend' | 'cancel', digest: string): Promise<RemedyOutcome> {
    return call('remedy_mail', { planId, messageId, remedy, digest });
  }
  amendDraft(planId: string): Promise<AmendDraft> {
    return call('amend_draft', { planId });
  }
  amend(planId: string, params: unknown): Promise<RefreshView> {
    return call('amend', { planId, params });
  }
  snooze(planId: string, minutes: number): Promise<void> {
    return call('snooze', { planId, minutes });
  }
  unsnooze(planId: string): Promise<void> {
    return call('unsnooze', { planId });
  }
  settings(): Promise<SettingsView> {
    return call('settings');
  }
  saveSettings(settings: Settings): Promise<SettingsView> {
    return call('save_settings', { settings });
  }
  enroll(gatewayUrl: string, code: string): Promise<StatusView> {
    return call('enroll', { gatewayUrl, code });
  }
  moveCredential(gatewayUrl: string): Promise<StatusView> {
    return call('move_credential', { gatewayUrl });
  }
  async onQueueChanged(listener: (change: QueueChange | null) => void): Promise<() => void> {
    return listen<QueueChange | null>('queue-changed', (event) => listener(event.payload ? visible(event.payload) : null));
  }
  async onPlansChanged(listener: () => void): Promise<() => void> {
    return listen('plans-changed', () => listener());
  }
  async onOpenPlan(listener: (planId: string) => void): Promise<() => void> {
    const unlisten = await listen<string>('open-plan', (event) => listener(visible(event.payload)));
    // A link on the command line came before this page listened: the shell kept it.
    const linked = await call<string | null>('linked_plan');
    if (linked) listener(linked);
    return unlisten;
  }
}
