import { beforeEach, describe, expect, it, vi } from 'vitest';

const calls: [string, unknown][] = [];
let answer: unknown = null;
vi.mock('@tauri-apps/api/core', () => ({
  invoke: async (command: string, args?: unknown) => {
    calls.push([command, args]);
    if (answer instanceof Error) throw { code: 'plan_stale', message: 'moved\u202E' };
    return answer;
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: async () => () => {} }));

const { TauriBackend } = await import('./tauri');

beforeEach(() => {
  calls.length = 0;
  answer = null;
});

describe('the Tauri backend', () => {
  it('calls each command of the contract with its argument names', async () => {
    const b = new TauriBackend();
    const settings = { gateway_url: null, poll_interval_secs: 5, theme: 'dark' as const, notify: { risk: [], capabilities: [], every_plan: false } };
    const draft = {
      plan_id: 'p1', agent_id: 'agt_ops', capability_id: 'projects.settings.update',
      constraints: [{ param: '/project', op: 'one_of' as const, values: ['"prj_184"'], line: 'project is prj_184' }],
      resources: ['projects/prj_184'], risk_flags: [], params: ['/project'], max_cost_per_plan: '0.10', max_cost_total: '1.00', max_plans: 10, days: 7, reason: 'cleanup',
    };
    await b.status();
    const query = { text: 'prj', facet: 'bulk' as const, capability: '', sort: 'credits' as const };
    await b.queueWindow({ query, offset: 40, limit: 60, pins: ['p1'] });
    await b.queueBetween(query, 'p1', 'p2');
    await b.gists(['p1']);
    await b.plan('p1');
    await b.approve('p1', 'sha256:aa', null);
    await b.reject('p1', 'sha256:aa', 'no');
    await b.refresh('p1');
    await b.subjects('p1', 'eff_1', 'ana', 200, 100);
    await b.batch(['p1', 'p2']);
    await b.decideBatch('approve', [{ plan_id: 'p1', digest: 'sha256:aa' }], null);
    await b.history();
    await b.exportHistory('json');
    await b.exportHistory('in-toto');
    await b.settings();
    await b.saveSettings(settings);
    await b.enroll('https://gw', 'ENR-1');
    await b.standing();
    await b.standingDraft('p1');
    await b.createStanding(draft);
    await b.revokeStanding('sa_1');
    await b.remedyMail('p1', 22, 'release', 'sha256:bb');
    await b.amendDraft('p1');
    await b.amend('p1', { retention_days: 21 });
    await b.snooze('p1', 15);
    await b.unsnooze('p1');
    expect(calls).toEqual([
      ['status', undefined],
      ['queue_window', { ask: { query, offset: 40, limit: 60, pins: ['p1'] } }],
      ['queue_between', { query, from: 'p1', to: 'p2' }],
      ['gists', { planIds: ['p1'] }],
      ['plan', { planId: 'p1' }],
      ['approve', { planId: 'p1', digest: 'sha256:aa', reason: null }],
      ['reject', { planId: 'p1', digest: 'sha256:aa', reason: 'no' }],
      ['refresh', { planId: 'p1' }],
      ['subjects', { planId: 'p1', effectId: 'eff_1', query: 'ana', offset: 200, limit: 100 }],
      ['batch', { planIds: ['p1', 'p2'] }],
      ['decide_batch', { decision: 'approve', items: [{ plan_id: 'p1', digest: 'sha256:aa' }], reason: null }],
      ['history', undefined],
      ['export_history', { format: 'json' }],
      ['export_history', { format: 'in-toto' }],
      ['settings', undefined],
      ['save_settings', { settings }],
      ['enroll', { gatewayUrl: 'https://gw', code: 'ENR-1' }],
      ['standing', undefined],
      ['standing_draft', { planId: 'p1' }],
      ['create_standing', { draft }],
      ['revoke_standing', { id: 'sa_1' }],
      ['remedy_mail', { planId: 'p1', messageId: 22, remedy: 'release', digest: 'sha256:bb' }],
      ['amend_draft', { planId: 'p1' }],
      ['amend', { planId: 'p1', params: { retention_days: 21 } }],
      ['snooze', { planId: 'p1', minutes: 15 }],
      ['unsnooze', { planId: 'p1' }],
    ]);
  });

  it('shows agent text only as visible characters, line breaks kept', async () => {
    answer = { title: 'Grant \u202Enimda\u202C role', content: 'line 1\nline\u0007 2', approvals_received: 1 };
    expect(await new TauriBackend().plan('p1')).toEqual({
      title: 'Grant \uFFFDnimda\uFFFD role', content: 'line 1\nline\uFFFD 2', approvals_received: 1,
    });
  });

  it('opens the plan a link named before the page listened, once it listens', async () => {
    answer = 'plan_42';
    const opened: string[] = [];
    await new TauriBackend().onOpenPlan((id) => opened.push(id));
    expect(calls).toEqual([['linked_plan', undefined]]);
    expect(opened).toEqual(['plan_42']);
    answer = null;
    await new TauriBackend().onOpenPlan((id) => opened.push(id));
    expect(opened).toEqual(['plan_42']);
  });

  it('passes refusals on as code and message', async () => {
    answer = new Error();
    await expect(new TauriBackend().approve('p1', 'd', null)).rejects.toMatchObject({ code: 'plan_stale', message: 'moved\uFFFD' });
  });
});
