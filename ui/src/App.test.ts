import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import App from './App.svelte';
import { BackendError } from './backend';
import { demoPlans, plan } from './backend/demo';
import { FakeBackend, type FakeOptions } from './backend/fake';
import { KEYS } from './lib/keys';

// jsdom lays nothing out: give every scroll container a screen's height so the virtualized
// lists render the rows a window would.
beforeAll(() => {
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get: () => 800 });
});
afterAll(() => {
  Reflect.deleteProperty(HTMLElement.prototype, 'clientHeight');
});

const ORDER = ['plan_0003', 'plan_0004', 'plan_0001', 'plan_0002', 'plan_0015', 'plan_0006', 'plan_0007', 'plan_0008', 'plan_0009'];

async function renderApp(options: FakeOptions = {}) {
  const backend = new FakeBackend(options);
  render(App, { props: { backend } });
  await waitFor(() => expect(screen.getAllByTestId('queue-row').length).toBe(ORDER.length));
  await shown('plan_0003');
  return backend;
}

const shown = (id: string) => waitFor(() => expect(screen.getByTestId('plan').dataset.planId).toBe(id));
const row = (id: string) => document.querySelector<HTMLElement>(`[data-testid='queue-row'][data-plan-id='${id}']`)!;
const key = (k: string, extra: KeyboardEventInit = {}) => fireEvent.keyDown(window, { key: k, ...extra });
const state = () => screen.getByTestId('decision-state');

async function open(id: string) {
  await fireEvent.click(row(id));
  await shown(id);
}

describe('the console', () => {
  it('lists pending plans soonest expiry first with the credit total', async () => {
    await renderApp();
    expect(screen.getAllByTestId('queue-row').map((r) => r.dataset.planId)).toEqual(ORDER);
    // Plans priced in another currency are not added to the credits.
    expect(screen.getByTestId('pending-count').textContent).toContain('9 pending · 900.52 credits');
    expect(row('plan_0003').getAttribute('aria-selected')).toBe('true');
  });

  it('shows the gateway, its link state and the approver in the header', async () => {
    const backend = await renderApp();
    const link = screen.getByTestId('link-state');
    expect(link.dataset.link).toBe('online');
    expect(link.textContent?.replace(/\s+/g, ' ').trim()).toBe('Demo gateway · live');
    expect(screen.getByTestId('approver').textContent).toContain('Dana · key_dana1');
    expect(screen.queryByTestId('outbox')).toBeNull();
    backend.goOffline();
    await waitFor(() => expect(screen.getByTestId('link-state').dataset.link).toBe('offline'));
    expect(screen.getByTestId('link-state').textContent).toMatch(/offline · synced \d+ (s|min|h) ago/);
  });

  it('shows an agent-written title as text, never as HTML', async () => {
    await renderApp();
    expect(row('plan_0003').textContent).toContain('<img src=x onerror=alert(1)>');
    expect(document.querySelector('img')).toBeNull();
  });

  it('disables approval of a blocked plan and says why', async () => {
    await renderApp();
    expect((screen.getByTestId('approve') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('not-approvable').textContent).toContain('blocked');
  });

  it('moves with j and approves with a; the answer shows and the plan leaves the queue', async () => {
    const backend = await renderApp();
    await key('j');
    await shown('plan_0004');
    expect(screen.getByTestId('sign-line').textContent).toMatch(/You will sign sha256:51ee…0000 with key_dana1\.\s+Approval 1 of 1 executes the plan\./);
    await key('a');
    await waitFor(() => expect(state().dataset.state).toBe('answered'));
    expect(backend.approvals).toEqual(['plan_0004']);
    expect(screen.getByTestId('notice').textContent).toContain('1 of 1');
    await waitFor(() => expect(row('plan_0004')).toBeNull());
  });

  it('asks the confirmation hook before a risky approval; declining leaves the plan as it was', async () => {
    const asked: string[][] = [];
    const backend = await renderApp({ confirm: (_t, consequence, lines) => (asked.push([consequence, ...lines]), false) });
    await open('plan_0002');
    expect(screen.getByTestId('consequence').textContent).toContain('If signed, this plan removes 37 members from grp_support');
    await key('a');
    await waitFor(() => expect(screen.getByTestId('decision-note').textContent).toContain('Not signed'));
    expect(asked[0][0]).toContain('irreversible');
    expect(asked[0][1]).toMatch(/^plan_0002 {2}grp_support −37 · sha256:4c30…0000$/);
    expect(backend.approvals).toEqual([]);
    expect(screen.getByTestId('approvals').textContent).toBe('1 of 2');
    expect(screen.queryByTestId('decision-state')).toBeNull();
  });

  it('shows a decision written while the gateway is down as queued, and sends it when it answers', async () => {
    const backend = await renderApp();
    await open('plan_0001');
    backend.goOffline();
    await key('a');
    await waitFor(() => expect(state().dataset.state).toBe('queued'));
    expect(state().textContent).toContain('goes out when it answers again');
    await waitFor(() => expect(screen.getByTestId('outbox').textContent).toContain('1 queued'));
    expect(row('plan_0001').querySelector('.chip.queued')).not.toBeNull();
    expect((screen.getByTestId('approve') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('last-fetched').textContent).toContain('as last fetched');
    expect((screen.getByTestId('refresh') as HTMLButtonElement).disabled).toBe(true);
    backend.goOnline();
    await waitFor(() => expect(row('plan_0001')).toBeNull());
    await waitFor(() => expect(screen.queryByTestId('outbox')).toBeNull());
    expect(screen.queryByTestId('last-fetched')).toBeNull();
  });

  it('keeps a decision\'s answer when reloading the plan fails', async () => {
    const backend = await renderApp();
    await open('plan_0001');
    await key('a');
    await waitFor(() => expect(state().dataset.state).toBe('answered'));
    backend.failPlanLoads = { code: 'unreachable', message: 'The gateway does not answer.' };
    backend.goOffline();
    await waitFor(() => expect(screen.getByTestId('link-state').dataset.link).toBe('offline'));
    expect(state().dataset.state).toBe('answered');
  });

  it('shows a refusal with its code and message, unknown codes too', async () => {
    const backend = await renderApp();
    await open('plan_0001');
    backend.refuseNext = { code: 'plan_expired', message: 'The plan expired at 10:15.' };
    await key('a');
    await waitFor(() => expect(state().dataset.state).toBe('refused'));
    expect(state().textContent).toContain('plan_expired');
    expect(state().textContent).toContain('The plan expired at 10:15.');
    backend.refuseNext = { code: 'brand_new_code', message: 'Something the console has never heard of.' };
    await key('a');
    await waitFor(() => expect(state().textContent).toContain('brand_new_code'));
    expect(state().textContent).toContain('Something the console has never heard of.');
  });

  it('rejects with r only once a reason is written', async () => {
    const backend = await renderApp();
    await open('plan_0001');
    await key('r');
    const reason = screen.getByTestId('reject-reason') as HTMLTextAreaElement;
    await waitFor(() => expect(document.activeElement).toBe(reason));
    const confirm = screen.getByTestId('reject-confirm') as HTMLButtonElement;
    expect(confirm.disabled).toBe(true);
    await fireEvent.input(reason, { target: { value: 'Wrong project.' } });
    expect(confirm.disabled).toBe(false);
    await fireEvent.click(confirm);
    await waitFor(() => expect(state().dataset.state).toBe('answered'));
    expect(backend.rejections).toEqual([{ planId: 'plan_0001', reason: 'Wrong project.' }]);
  });

  it('shows the moved revisions of a stale plan and, after f, what changed; the new plan is approved from there', async () => {
    const backend = await renderApp();
    await open('plan_0007');
    expect(screen.getByTestId('moved').textContent).toMatch(/projects\/prj_184 revision 73 → 74/);
    expect(screen.getByTestId('not-approvable').textContent).toContain('stale');
    await key('f');
    const changed = await screen.findByTestId('what-changed');
    expect(within(changed).getByTestId('changed-moved').textContent).toContain('moved from revision 73 to 74');
    expect(within(changed).getByTestId('effect-removed').textContent).toContain('itm_19, itm_20 were released');
    expect(within(changed).getByTestId('subjects-in').textContent).toContain('itm_21');
    expect(within(changed).getAllByTestId('effect-changed')[1].textContent).toContain('18 → 19 subjects');
    expect(within(changed).getByTestId('cost-delta').textContent).toContain('no change');
    await fireEvent.click(screen.getByTestId('approve-new'));
    await waitFor(() => expect(backend.approvals).toEqual(['plan_0011']));
    await shown('plan_0011');
    expect(state().dataset.state).toBe('answered');
  });

  it('lists every key in the ? overlay, and Esc closes it', async () => {
    await renderApp();
    await key('?');
    const map = screen.getByTestId('keymap');
    for (const k of KEYS) expect(map.textContent).toContain(k.what);
    await key('Escape');
    expect(screen.queryByTestId('keymap')).toBeNull();
  });

  it('focuses the filter with / and the subject search with s', async () => {
    await renderApp();
    await key('/');
    await waitFor(() => expect(document.activeElement).toBe(screen.getByTestId('queue-filter')));
    (document.activeElement as HTMLElement).blur();
    await open('plan_0002');
    await key('s');
    await waitFor(() => expect(document.activeElement).toBe(screen.getByTestId('subjects-search')));
  });

  it('opens the plan a deep link or notification names, with its execution result', async () => {
    const backend = await renderApp();
    backend.openPlan('plan_0005');
    await shown('plan_0005');
    const result = screen.getByTestId('execution');
    expect(result.textContent).toContain('Retention set to 7 days');
    expect(within(result).getByTestId('execution-metadata').textContent).toContain('x_region_hint');
    expect(within(result).getByTestId('execution-journal').textContent).toContain('retention_days = 30');
    expect(within(result).getByTestId('execution-media').textContent).toContain('retention-report.csv');
    expect(screen.queryByTestId('consequence'), 'nothing left to sign').toBeNull();
    // What became of it, in place of buttons that could only be refused; the budget is settled.
    expect(screen.getByTestId('closed').textContent).toContain('Executed');
    for (const button of ['approve', 'reject', 'refresh']) expect(screen.queryByTestId(button), button).toBeNull();
    expect(screen.getByTestId('wallet-left').textContent).not.toContain('after');
    await key('r');
    await key('f');
    expect(screen.queryByTestId('reject-reason')).toBeNull();
    expect(backend.refreshes).toEqual([]);
  });

  it('says a plan that ran without approval needed none, not "0 of 1"', async () => {
    const plans = demoPlans().map((p) => p.plan_id === 'plan_0005'
      ? { ...p, approvals_required: 0, approvals_received: 0, approved_by: [], approvals: [] } : p);
    const backend = await renderApp({ plans });
    backend.openPlan('plan_0005');
    await shown('plan_0005');
    expect(screen.getByTestId('approvals').textContent).toBe('none needed');
  });
});

describe('a long queue', () => {
  it('renders a screenful of 10,000 pending plans and walks them with j', async () => {
    const plans = Array.from({ length: 10_000 }, (_, n) =>
      plan({ plan_id: `plan_${String(n).padStart(5, '0')}`, label: `Plan ${n}`, expires_at: new Date(Date.now() + 60_000 + n * 1000).toISOString() }));
    render(App, { props: { backend: new FakeBackend({ plans }) } });
    await waitFor(() => expect(screen.getByTestId('pending-count').textContent).toContain('10000 pending'));
    await shown('plan_00000');
    expect(screen.getAllByTestId('queue-row').length).toBeLessThan(30);
    await key('j');
    await shown('plan_00001');
    expect(row('plan_00001').getAttribute('aria-selected')).toBe('true');
  });
});

describe('a long queue, live', () => {
  it('reads the gists of the rows in view only, each once, and takes a live change without the whole queue', async () => {
    const plans = Array.from({ length: 10_000 }, (_, n) =>
      plan({ plan_id: `plan_${String(n).padStart(5, '0')}`, label: `Plan ${n}`, gist: `prj_${n} retention 30 → 14`,
        expires_at: new Date(Date.now() + 60_000 + n * 1000).toISOString() }));
    const backend = new FakeBackend({ plans });
    let wholeQueues = 0;
    const whole = backend.queue.bind(backend);
    backend.queue = async () => {
      wholeQueues += 1;
      return whole();
    };
    render(App, { props: { backend } });
    await shown('plan_00000');
    await waitFor(() => expect(row('plan_00001').textContent).toContain('prj_1 retention 30 → 14'));
    expect(backend.gistReads.length).toBeLessThan(30);
    expect(new Set(backend.gistReads).size).toBe(backend.gistReads.length);
    expect(backend.gistReads).not.toContain('plan_05000');
    const read = wholeQueues;

    backend.goOffline();
    await waitFor(() => expect(screen.getByTestId('link-state').dataset.link).toBe('offline'));
    expect(wholeQueues).toBe(read);
    expect(screen.getAllByTestId('queue-row').length).toBeLessThan(30);
    expect(row('plan_00001').textContent).toContain('prj_1 retention 30 → 14');
  });
});

describe('batch review', () => {
  it('selects with x and shift-click, shows the plans side by side and approves each over its own digest', async () => {
    const asked: string[][] = [];
    const backend = await renderApp({ confirm: (_t, _c, lines) => (asked.push(lines), true) });
    await key('x');
    await fireEvent.click(row('plan_0002'), { shiftKey: true });
    const batch = await screen.findByTestId('batch');
    expect(screen.getAllByTestId('select-plan').filter((c) => (c as HTMLInputElement).checked)).toHaveLength(4);
    await waitFor(() => expect(within(batch).getByTestId('batch-apart').textContent).toContain('plan_0003'));
    expect(within(batch).getByTestId('batch-credits').textContent).toContain('0.37');
    expect(within(batch).getByTestId('batch-subjects').textContent).toContain('59');
    await fireEvent.click(screen.getByTestId('batch-approve'));
    await waitFor(() => expect(screen.getAllByTestId('batch-result')).toHaveLength(3));
    expect(asked[0]).toHaveLength(3);
    expect(backend.approvals.sort()).toEqual(['plan_0001', 'plan_0002', 'plan_0004']);
    expect(screen.getAllByTestId('batch-result').map((r) => r.dataset.outcome)).toEqual(['answered', 'answered', 'answered']);
    await key('Escape');
    await waitFor(() => expect(screen.queryByTestId('batch')).toBeNull());
  });

  it('names the subjects two selected plans share', async () => {
    await renderApp();
    await fireEvent.click(row('plan_0002').querySelector('[data-testid=select-plan]')!);
    await fireEvent.click(row('plan_0015').querySelector('[data-testid=select-plan]')!);
    const batch = await screen.findByTestId('batch');
    await waitFor(() => expect(within(batch).getByTestId('overlap').textContent).toContain('6 subjects in plan_0002 and plan_0015'));
    expect(within(batch).getByTestId('overlap').textContent).toContain('usr_02, usr_07');
    expect(within(batch).getByTestId('batch-credits').textContent).toContain('0.43');
  });

  it('rejects the selected plans with one reason', async () => {
    const backend = await renderApp();
    await fireEvent.click(row('plan_0001').querySelector('[data-testid=select-plan]')!);
    await fireEvent.click(row('plan_0006'), { ctrlKey: true });
    await screen.findByTestId('batch');
    await fireEvent.click(screen.getByTestId('batch-reject'));
    await fireEvent.input(screen.getByTestId('reject-reason'), { target: { value: 'Not this week.' } });
    await fireEvent.click(screen.getByTestId('reject-confirm'));
    await waitFor(() => expect(screen.getAllByTestId('batch-result')).toHaveLength(2));
    expect(backend.rejections.map((r) => r.reason)).toEqual(['Not this week.', 'Not this week.']);
  });
});

describe('history and settings', () => {
  it('lists the decisions sent with state, verification and envelope, and exports them', async () => {
    await renderApp();
    await fireEvent.click(screen.getByTestId('nav-history'));
    const rows = await screen.findAllByTestId('history-row');
    expect(rows.map((r) => r.dataset.state)).toEqual(['answered', 'refused']);
    expect(within(rows[0]).getByTestId('verified').dataset.verified).toBe('true');
    expect(within(rows[1]).getByTestId('verified').textContent).toContain('no longer holds');
    expect(rows[0].querySelector('pre.envelope')!.textContent).toContain('"keyid": "key_dana1"');
    await fireEvent.click(screen.getByTestId('export-history'));
    await waitFor(() => expect(screen.getByTestId('export-path').textContent).toContain('countersign-history.jsonl'));
  });

  it('applies a theme at once, saves the settings and shows overridden fields read-only', async () => {
    await renderApp({ overridden: ['gateway_url'] });
    await fireEvent.click(screen.getByTestId('nav-settings'));
    const url = (await screen.findByTestId('gateway-url')) as HTMLInputElement;
    expect(url.readOnly).toBe(true);
    expect(screen.getByTestId('overridden-gateway_url').textContent).toContain('COUNTERSIGN_GATEWAY_URL');
    expect((screen.getByTestId('poll-interval') as HTMLInputElement).readOnly).toBe(false);
    await fireEvent.click(screen.getByTestId('theme-dark'));
    expect(document.documentElement.dataset.theme).toBe('dark');
    await fireEvent.click(screen.getByTestId('notify-money'));
    await fireEvent.click(screen.getByTestId('save-settings'));
    await waitFor(() => expect(screen.getByTestId('settings-saved').textContent).toContain('settings.json'));
    expect((screen.getByTestId('notify-money') as HTMLInputElement).checked).toBe(true);
  });

  it('enrolls with a gateway URL and a pasted code', async () => {
    await renderApp();
    await fireEvent.click(screen.getByTestId('nav-settings'));
    await fireEvent.input(await screen.findByTestId('gateway-url'), { target: { value: 'https://gw.example.com' } });
    await fireEvent.input(screen.getByTestId('enroll-code'), { target: { value: 'ENR-1234' } });
    await fireEvent.click(screen.getByTestId('enroll'));
    await waitFor(() => expect(screen.getByTestId('enrolled').textContent).toContain('key_dana1'));
  });

  it('offers no move on the demo gateway, whose credential follows it by itself', async () => {
    await renderApp();
    await fireEvent.click(screen.getByTestId('nav-settings'));
    await fireEvent.input(await screen.findByTestId('gateway-url'), { target: { value: 'https://gw.example.com' } });
    await fireEvent.click(screen.getByTestId('save-settings'));
    await waitFor(() => expect(screen.getByTestId('settings-error').textContent).toContain('not_enrolled'));
    expect(screen.queryByTestId('move-offer')).toBeNull();
  });

  it('refuses a new gateway URL without a credential there, and moves the credential only when confirmed', async () => {
    const asked: string[] = [];
    let answer = false;
    const backend = new FakeBackend({ confirm: (title) => { asked.push(title); return answer; } });
    await backend.enroll('https://gw.example.com', 'ENR-1234');
    render(App, { props: { backend } });
    await fireEvent.click(await screen.findByTestId('nav-settings'));
    await fireEvent.input(await screen.findByTestId('gateway-url'), { target: { value: 'https://elsewhere.example.com' } });
    await fireEvent.click(screen.getByTestId('save-settings'));
    await waitFor(() => expect(screen.getByTestId('settings-error').textContent).toContain('not_enrolled'));
    expect((await backend.settings()).settings.gateway_url).toBe('https://gw.example.com');
    await fireEvent.click(screen.getByTestId('move-credential'));
    await waitFor(() => expect(screen.getByTestId('settings-error').textContent).toContain('cancelled'));
    expect(asked).toEqual(['Move your credential to another URL?']);
    expect((await backend.status()).gateway_url).toBe('https://gw.example.com');
    answer = true;
    await fireEvent.click(screen.getByTestId('move-credential'));
    await waitFor(() => expect(screen.getByTestId('enrolled').textContent).toContain('https://elsewhere.example.com'));
    expect((await backend.settings()).settings.gateway_url).toBe('https://elsewhere.example.com');
  });
});

describe('while the gateway is starting', () => {
  it('says so, then shows the queue once it changes', async () => {
    const backend = new FakeBackend();
    const realQueue = backend.queue.bind(backend);
    let ready = false;
    backend.queue = async () => {
      if (!ready) throw new BackendError('starting', 'Connecting to the gateway…');
      return realQueue();
    };
    let notify: () => void = () => {};
    backend.onQueueChanged = async (listener) => {
      notify = () => listener(null);
      return () => {};
    };
    render(App, { props: { backend } });
    await waitFor(() => expect(screen.getByTestId('load-error').textContent).toContain('starting'));
    ready = true;
    notify();
    await waitFor(() => expect(screen.getAllByTestId('queue-row').length).toBe(ORDER.length));
    expect(screen.queryByTestId('load-error')).toBeNull();
  });
});

describe('standing approvals', () => {
  it('offers "approve plans like this" only where Approve is, prefilled from the plan', async () => {
    await renderApp();
    expect((screen.getByTestId('approve-like-this') as HTMLButtonElement).disabled).toBe(true);
    await open('plan_0002');
    await fireEvent.click(screen.getByTestId('approve-like-this'));
    const form = await screen.findByTestId('standing-form');
    await waitFor(() => expect(within(form).getAllByTestId('standing-constraint')).toHaveLength(2));
    expect(within(form).getByTestId('standing-agent').textContent).toBe('agt_ops');
    expect(within(form).getByTestId('standing-capability').textContent).toBe('groups.members.remove');
    const rows = within(form).getAllByTestId('standing-constraint');
    expect(rows.map((r) => r.dataset.param)).toEqual(['/group', '/filter/employment']);
    expect((within(rows[0]).getByTestId('standing-value') as HTMLInputElement).value).toBe('grp_support');
    expect((within(rows[1]).getByTestId('standing-op') as HTMLSelectElement).value).toBe('one_of');
    expect(within(form).getByTestId('standing-resources').textContent).toContain('entitlements/on_call');
    expect(within(form).getByTestId('standing-risks').textContent).toContain('irreversible');
    expect((within(form).getByTestId('standing-max-plans') as HTMLInputElement).value).toBe('10');
    expect((within(form).getByTestId('standing-cap-plan') as HTMLInputElement).value).toBe('0.37');
    expect((within(form).getByTestId('standing-cap-total') as HTMLInputElement).value).toBe('3.70');
    expect((within(form).getByTestId('standing-days') as HTMLInputElement).value).toBe('7');
    expect(within(form).getByTestId('standing-warning').textContent).toContain('without asking anyone');
    // A reason is required before anything is signed.
    expect((within(form).getByTestId('standing-submit') as HTMLButtonElement).disabled).toBe(true);
    await key('Escape');
    expect(screen.queryByTestId('standing-form')).toBeNull();
  });

  it('approves the plan in view, then signs the standing approval as edited', async () => {
    const asked: { title: string; consequence: string; lines: string[] }[] = [];
    const backend = await renderApp({ confirm: (title, consequence, lines) => (asked.push({ title, consequence, lines }), true) });
    await open('plan_0002');
    await fireEvent.click(screen.getByTestId('approve-like-this'));
    const form = await screen.findByTestId('standing-form');
    await waitFor(() => expect(within(form).getAllByTestId('standing-constraint')).toHaveLength(2));
    const [group, employment] = within(form).getAllByTestId('standing-constraint');
    await fireEvent.input(within(group).getByTestId('standing-value'), { target: { value: 'grp_support, grp_sales' } });
    await fireEvent.click(within(employment).getByTestId('standing-remove'));
    await fireEvent.input(within(form).getByTestId('standing-max-plans'), { target: { value: '5' } });
    await fireEvent.input(within(form).getByTestId('standing-days'), { target: { value: '3' } });
    await fireEvent.input(within(form).getByTestId('standing-reason'), { target: { value: 'Contractor clean-up this week.' } });
    await fireEvent.click(within(form).getByTestId('standing-submit'));

    await waitFor(() => expect(screen.getByTestId('standing-created').textContent).toContain('sa_0004'));
    expect(screen.queryByTestId('standing-form')).toBeNull();
    expect(backend.approvals).toEqual(['plan_0002']);
    expect(asked.map((a) => a.title)).toEqual(['Approve plan_0002?', 'Sign a standing approval for agt_ops?']);
    expect(asked[1].lines).toEqual(['group is grp_support or grp_sales']);
    expect(asked[1].consequence).toContain('up to 5 plans');
    expect(state().dataset.state).toBe('answered');
    const made = (await backend.standing()).find((s) => s.id === 'sa_0004')!;
    expect(made).toMatchObject({ max_plans: 5, reason: 'Contractor clean-up this week.', risk_flags: ['bulk', 'access_change', 'irreversible', 'external', 'money'] });
    expect(made.constraints.map((c) => c.values)).toEqual([['"grp_support"', '"grp_sales"']]);
    expect(Date.parse(made.expires_at) - Date.parse(made.issued_at)).toBe(3 * 86_400_000);
  });

  it('signs nothing more when the plan\'s own approval is declined, and says so quietly', async () => {
    const backend = await renderApp({ confirm: () => false });
    await open('plan_0002');
    await fireEvent.click(screen.getByTestId('approve-like-this'));
    const form = await screen.findByTestId('standing-form');
    await fireEvent.input(await within(form).findByTestId('standing-reason'), { target: { value: 'Clean-up.' } });
    await fireEvent.click(within(form).getByTestId('standing-submit'));
    await waitFor(() => expect(within(form).getByTestId('standing-note').textContent).toContain('Not signed'));
    expect(within(form).queryByTestId('standing-error')).toBeNull();
    expect(backend.approvals).toEqual([]);
    expect((await backend.standing()).map((s) => s.id)).toEqual(['sa_0003', 'sa_0002', 'sa_0001']);
  });

  it('shows a refusal of the standing approval with its code, the plan\'s approval standing', async () => {
    const backend = await renderApp();
    await open('plan_0001');
    await fireEvent.click(screen.getByTestId('approve-like-this'));
    const form = await screen.findByTestId('standing-form');
    await fireEvent.input(await within(form).findByTestId('standing-reason'), { target: { value: 'Retention work.' } });
    backend.goOffline();
    await fireEvent.click(within(form).getByTestId('standing-submit'));
    // Offline, the plan's approval waits in the outbox and the standing approval is not sent.
    await waitFor(() => expect(within(form).getByTestId('standing-error').textContent).toContain('queued'));
    await waitFor(() => expect(state().dataset.state).toBe('queued'));
    expect((await backend.standing())).toHaveLength(3);
  });

  it('lists each with what it allows, its use and expiry, opens the plans it covered, and revokes only my active ones', async () => {
    const backend = await renderApp();
    await fireEvent.click(screen.getByTestId('nav-standing'));
    const rows = await screen.findAllByTestId('standing-row');
    expect(rows.map((r) => r.dataset.id)).toEqual(['sa_0003', 'sa_0002', 'sa_0001']);
    const [mine, adas, revoked] = rows;
    expect(within(mine).getByTestId('standing-allows').textContent).toContain('retention_days ≥ 7');
    expect(within(mine).getByTestId('standing-use').textContent).toBe('1 of 10 plans · 0.00 of 1.00 credits');
    expect(within(mine).getByTestId('standing-expires').textContent).toBe('expires in 5 days');
    expect(mine.textContent).toContain('Retention clean-up on prj_184 this week.');
    expect(within(adas).queryByTestId('standing-revoke')).toBeNull();
    expect(within(revoked).getByTestId('standing-state').textContent).toBe('revoked · revoked by Dana');
    expect(within(revoked).queryByTestId('standing-revoke')).toBeNull();

    await fireEvent.click(within(mine).getByTestId('standing-revoke'));
    expect(mine.dataset.state).toBe('active');
    await fireEvent.click(within(mine).getByTestId('standing-revoke-confirm'));
    await waitFor(() => expect(screen.getAllByTestId('standing-row')[0].dataset.state).toBe('revoked'));
    expect(within(screen.getAllByTestId('standing-row')[0]).getByTestId('standing-state').textContent).toContain('revoked by Dana');
    expect(screen.queryAllByTestId('standing-revoke')).toHaveLength(0);
    expect((await backend.standing())[0].state).toBe('revoked');

    await fireEvent.click(within(screen.getAllByTestId('standing-row')[0]).getByTestId('standing-plan'));
    await shown('plan_0005');
  });

  it('explains what a standing approval is when there is none', async () => {
    const backend = new FakeBackend();
    backend.standing = async () => [];
    render(App, { props: { backend } });
    await fireEvent.click(await screen.findByTestId('nav-standing'));
    const empty = await screen.findByTestId('standing-empty');
    expect(empty.textContent).toContain('without asking anyone');
    expect(empty.textContent).toContain('Approve, and approve plans like this');
  });
});

describe('changing the request', () => {
  it('edits a flat request field by field, and shows the new plan as a refresh does, with who changed what', async () => {
    const backend = await renderApp();
    await open('plan_0001');
    await fireEvent.click(screen.getByTestId('amend-open'));
    const editor = await screen.findByTestId('amend-editor');
    const days = (await within(editor).findByTestId('amend-field-retention_days')) as HTMLInputElement;
    expect(days.type).toBe('number');
    expect(days.value).toBe('14');
    expect((within(editor).getByTestId('amend-field-project') as HTMLInputElement).value).toBe('prj_184');
    expect((within(editor).getByTestId('amend-field-notify_owners') as HTMLInputElement).type).toBe('checkbox');
    expect(within(editor).queryByTestId('amend-json')).toBeNull();
    expect((within(editor).getByTestId('amend-submit') as HTMLButtonElement).disabled, 'nothing changed yet').toBe(true);

    // The gateway's refusal names the field; nothing is previewed.
    await fireEvent.input(days, { target: { value: '0' } });
    await fireEvent.click(within(editor).getByTestId('amend-submit'));
    await waitFor(() => expect(within(editor).getByTestId('amend-error').textContent).toContain('validation_error'));
    expect(within(editor).getByTestId('amend-error').textContent).toContain('/retention_days must be at least 1');
    expect(backend.amendments).toEqual([]);

    await fireEvent.input(days, { target: { value: '21' } });
    await fireEvent.click(within(editor).getByTestId('amend-submit'));
    const changed = await screen.findByTestId('what-changed');
    expect(backend.amendments).toEqual([{ planId: 'plan_0001', params: { project: 'prj_184', retention_days: 21 } }]);
    expect(within(changed).getByTestId('amended').textContent).toBe('Dana changed retention_days from 14 to 21.');
    expect(within(changed).getByTestId('request-changed').textContent).toContain('/retention_days');
    await fireEvent.click(screen.getByTestId('approve-new'));
    await waitFor(() => expect(backend.approvals).toEqual(['plan_0020']));
    await shown('plan_0020');
    expect(screen.getByTestId('request').textContent).toContain('21');
  });

  it('edits a nested request as JSON, and will not send JSON that does not parse', async () => {
    const backend = await renderApp();
    let sent = 0;
    const amend = backend.amend.bind(backend);
    backend.amend = (planId, params) => ((sent += 1), amend(planId, params));
    await open('plan_0002');
    await fireEvent.click(screen.getByTestId('amend-open'));
    const editor = await screen.findByTestId('amend-editor');
    const json = (await within(editor).findByTestId('amend-json')) as HTMLTextAreaElement;
    expect(within(editor).queryByTestId('amend-field-group')).toBeNull();
    expect(JSON.parse(json.value)).toEqual({ group: 'grp_support', filter: { employment: 'contractor' } });
    await fireEvent.input(json, { target: { value: '{ "group": "grp_support", "filter": { "employment": "staff" }' } });
    expect(within(editor).getByTestId('amend-json-error').textContent).toContain('Not JSON');
    const submit = within(editor).getByTestId('amend-submit') as HTMLButtonElement;
    expect(submit.disabled).toBe(true);
    await fireEvent.submit(editor);
    expect(sent).toBe(0);

    await fireEvent.input(json, { target: { value: '{ "group": "grp_support", "filter": { "employment": "staff" } }' } });
    expect(within(editor).queryByTestId('amend-json-error')).toBeNull();
    await fireEvent.click(submit);
    const changed = await screen.findByTestId('what-changed');
    expect(within(changed).getByTestId('amended').textContent).toBe('Dana changed filter.employment from contractor to staff.');
    expect(sent).toBe(1);
    expect(backend.amendments[0].params).toEqual({ group: 'grp_support', filter: { employment: 'staff' } });
    // Closing the preview goes back to the old plan, superseded now, with the editor closed.
    await key('Escape');
    await waitFor(() => expect(screen.getByTestId('superseded').textContent).toContain('plan_0020'));
    expect(screen.queryByTestId('amend-editor')).toBeNull();
    expect(screen.queryByTestId('amend-open')).toBeNull();
  });

  it('offers no change of a plan that is closed', async () => {
    const backend = await renderApp();
    expect(screen.getByTestId('amend-open')).toBeTruthy();
    backend.openPlan('plan_0005');
    await shown('plan_0005');
    expect(screen.queryByTestId('amend-open')).toBeNull();
    expect(screen.queryByTestId('snooze-15')).toBeNull();
  });
});

describe('snoozing', () => {
  it('hides the plan from the queue, shows it under Snoozed until then, and brings it back on Unsnooze', async () => {
    await renderApp();
    await open('plan_0001');
    await fireEvent.click(screen.getByTestId('snooze-15'));
    await waitFor(() => expect(row('plan_0001')).toBeNull());
    // The next plan in the list takes its place in view.
    await shown('plan_0002');
    expect(screen.getByTestId('snooze-note').textContent).toMatch(/plan_0001 is snoozed until \d\d:\d\d/);
    expect(screen.getByTestId('facet-snoozed').textContent).toBe('Snoozed 1');

    await fireEvent.click(screen.getByTestId('facet-snoozed'));
    expect(screen.getAllByTestId('queue-row').map((r) => r.dataset.planId)).toEqual(['plan_0001']);
    // plan_0001 expires in 8 minutes: the snooze ends two minutes before that, not in 15.
    const until = row('plan_0001').querySelector('[data-testid=row-snoozed]')!.textContent!;
    const [h, m] = until.replace('until ', '').split(':').map(Number);
    const end = new Date();
    end.setHours(h, m, 0, 0);
    // Past midnight, the time of day is tomorrow's.
    const minutes = ((end.getTime() - Date.now()) / 60_000 + 24 * 60) % (24 * 60);
    expect(minutes).toBeGreaterThan(4);
    expect(minutes).toBeLessThan(7);

    await fireEvent.click(row('plan_0001').querySelector('[data-testid=unsnooze]')!);
    await waitFor(() => expect(screen.queryByTestId('facet-snoozed')).toBeNull());
    expect(screen.getAllByTestId('queue-row').map((r) => r.dataset.planId)).toEqual(ORDER);
  });

  it('says when the open plan is snoozed, and unsnoozes it from there', async () => {
    const backend = await renderApp();
    await backend.snooze('plan_0004', 60);
    await waitFor(() => expect(row('plan_0004')).toBeNull());
    backend.openPlan('plan_0004');
    await shown('plan_0004');
    expect(screen.getByTestId('snoozed-until').textContent).toMatch(/Snoozed until \d\d:\d\d/);
    await fireEvent.click(screen.getByTestId('plan-unsnooze'));
    await waitFor(() => expect(row('plan_0004')).not.toBeNull());
    expect(screen.queryByTestId('snoozed-until')).toBeNull();
  });
});

describe('history exports', () => {
  it('exports in-toto statements as well as JSON, showing where each was written', async () => {
    const backend = await renderApp();
    await fireEvent.click(screen.getByTestId('nav-history'));
    await fireEvent.click(await screen.findByTestId('export-in-toto'));
    await waitFor(() => expect(screen.getByTestId('export-path').textContent).toContain('countersign-history.intoto.jsonl'));
    await fireEvent.click(screen.getByTestId('export-history'));
    await waitFor(() => expect(screen.getByTestId('export-path').textContent).toContain('/home/dana/countersign-history.jsonl'));
    expect(backend.exports).toEqual(['in-toto', 'json']);
  });
});
