import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import App from './App.svelte';
import { BackendError } from './backend';
import { demoPlans, plan } from './backend/demo';
import { FakeBackend } from './backend/fake';
import { KEYS } from './lib/keys';
import { ROW_HEIGHT } from './lib/queueFilter';
import { ORDER, key, open, renderApp, row, shown, state, withScreenHeight } from './appTest';

withScreenHeight();

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

  it('moves the focus predictably: to the plan on Enter, back to its row with q and after deciding', async () => {
    await renderApp();
    row('plan_0004').focus();
    await fireEvent.keyDown(row('plan_0004'), { key: 'Enter' });
    await shown('plan_0004');
    await waitFor(() => expect(document.activeElement?.getAttribute('aria-label')).toBe('Plan'));
    await key('q');
    await waitFor(() => expect(document.activeElement).toBe(row('plan_0004')));
    // With the focus on a row, j takes it to the next row.
    await key('j');
    await shown('plan_0001');
    await waitFor(() => expect(document.activeElement).toBe(row('plan_0001')));
    await key('k');
    await shown('plan_0004');
    await key('a');
    await waitFor(() => expect(state().dataset.state).toBe('answered'));
    await waitFor(() => expect(document.activeElement?.getAttribute('data-testid')).toBe('queue-row'));
  });

  it('gives the focus back where the keys dialog found it', async () => {
    await renderApp();
    row('plan_0003').focus();
    await key('?');
    await waitFor(() => expect(document.activeElement).toBe(screen.getByTestId('keymap')));
    await fireEvent.keyDown(screen.getByTestId('keymap'), { key: 'Escape' });
    await waitFor(() => expect(document.activeElement).toBe(row('plan_0003')));
  });

  it('opens the standing approval form with l, on its reason, and sends it with Ctrl+Enter', async () => {
    const asked: string[] = [];
    await renderApp({ confirm: (title) => (asked.push(title), true) });
    await open('plan_0001');
    await key('l');
    const reason = await screen.findByTestId('standing-reason');
    await waitFor(() => expect(document.activeElement).toBe(reason));
    await fireEvent.input(reason, { target: { value: 'Retention work this week.' } });
    await fireEvent.keyDown(reason, { key: 'Enter', ctrlKey: true });
    await waitFor(() => expect(asked).toEqual(['Sign a standing approval for agt_ops?']));
    await waitFor(() => expect(state().dataset.state).toBe('answered'));
  });

  it('announces a plan that arrives, politely, and not every change of the queue', async () => {
    const backend = await renderApp();
    const announcer = screen.getByTestId('announcer');
    expect(announcer.getAttribute('aria-live')).toBe('polite');
    await key('j');
    await key('a');
    await waitFor(() => expect(state().dataset.state).toBe('answered'));
    expect(announcer.textContent).toBe('');
    const arrived = { ...demoPlans()[0], plan_id: 'plan_0100', label: 'Rename a project' };
    backend.arrive(arrived);
    await waitFor(() => expect(announcer.textContent).toContain('New plan:'));
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

describe('a long queue, held as a window', () => {
  it('holds only the rows in view, reads the next ones as j walks past them, and picks a range it does not hold', async () => {
    const plans = Array.from({ length: 3_000 }, (_, n) =>
      plan({ plan_id: `plan_${String(n).padStart(5, '0')}`, label: `Plan ${n}`, expires_at: new Date(Date.now() + 60_000 + n * 1000).toISOString() }));
    const backend = new FakeBackend({ plans });
    const given: number[] = [];
    const window = backend.queueWindow.bind(backend);
    backend.queueWindow = async (ask) => {
      const answer = await window(ask);
      given.push(answer.items.length);
      return answer;
    };
    render(App, { props: { backend } });
    await shown('plan_00000');
    expect(screen.getByTestId('queue-rows').querySelector('ul')!.style.height).toBe(`${3_000 * ROW_HEIGHT}px`);
    for (let n = 1; n <= 70; n++) {
      await key('j');
      await shown(`plan_${String(n).padStart(5, '0')}`);
    }
    expect(row('plan_00070').getAttribute('aria-selected')).toBe('true');
    expect(Math.max(...given)).toBeLessThanOrEqual(100);
    expect(given.reduce((a, b) => a + b, 0)).toBeLessThan(3_000);

    // From plan_00070 to one far below: the range is the console's, not the rows held.
    await fireEvent.click(row('plan_00070').querySelector('[data-testid=select-plan]')!);
    const viewport = screen.getByTestId('queue-rows');
    viewport.scrollTop = 150 * ROW_HEIGHT;
    await fireEvent.scroll(viewport);
    await waitFor(() => expect(row('plan_00150')).not.toBeNull());
    await fireEvent.click(row('plan_00150'), { shiftKey: true });
    await waitFor(() => expect(screen.getByTestId('queue-total').textContent).toContain('81 selected'));

    // Past a batch's hundred plans, nothing more is picked and the queue goes on answering.
    viewport.scrollTop = 200 * ROW_HEIGHT;
    await fireEvent.scroll(viewport);
    await waitFor(() => expect(row('plan_00200')).not.toBeNull());
    await fireEvent.click(row('plan_00200'), { shiftKey: true });
    await waitFor(() => expect(screen.getByTestId('batch-note').textContent).toContain('at most 100 plans'));
    expect(screen.getByTestId('queue-total').textContent).toContain('81 selected');
    viewport.scrollTop = 400 * ROW_HEIGHT;
    await fireEvent.scroll(viewport);
    await waitFor(() => expect(row('plan_00400')).not.toBeNull());
  }, 30_000);
});

describe('a long queue, live', () => {
  it('reads the gists of the rows in view only, each once, and takes a live change without the whole queue', async () => {
    const plans = Array.from({ length: 10_000 }, (_, n) =>
      plan({ plan_id: `plan_${String(n).padStart(5, '0')}`, label: `Plan ${n}`, gist: `prj_${n} retention 30 → 14`,
        expires_at: new Date(Date.now() + 60_000 + n * 1000).toISOString() }));
    const backend = new FakeBackend({ plans });
    let windows = 0;
    const window = backend.queueWindow.bind(backend);
    backend.queueWindow = async (ask) => {
      windows += 1;
      return window(ask);
    };
    render(App, { props: { backend } });
    await shown('plan_00000');
    await waitFor(() => expect(row('plan_00001').textContent).toContain('prj_1 retention 30 → 14'));
    expect(backend.gistReads.length).toBeLessThan(30);
    expect(new Set(backend.gistReads).size).toBe(backend.gistReads.length);
    expect(backend.gistReads).not.toContain('plan_05000');
    const read = windows;

    backend.goOffline();
    await waitFor(() => expect(screen.getByTestId('link-state').dataset.link).toBe('offline'));
    expect(windows).toBe(read);
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
    // What a screen reader hears: each row checked for the batch says aria-checked.
    expect(screen.getAllByTestId('queue-row').filter((r) => r.getAttribute('aria-checked') === 'true')).toHaveLength(4);
    expect(screen.getAllByTestId('select-plan').filter((c) => c.dataset.checked === 'true')).toHaveLength(4);
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

  it('selects a range with the keyboard alone: x, moves, then Shift+x', async () => {
    await renderApp();
    await key('x');
    await key('j');
    await key('j');
    await key('X', { shiftKey: true });
    await screen.findByTestId('batch');
    const checked = screen.getAllByTestId('queue-row').filter((r) => r.getAttribute('aria-checked') === 'true');
    expect(checked.map((r) => r.dataset.planId)).toEqual(ORDER.slice(0, 3));
  });

  it('leaves the batch for good on Esc, even while its answer is on the way, and the plan keys work again', async () => {
    const backend = await renderApp();
    // x asks for the batch; Esc clears it before the answer comes.
    const real = backend.batch.bind(backend);
    let answer = () => {};
    backend.batch = (ids) => new Promise((resolve) => (answer = () => resolve(real(ids))));
    await key('x');
    await key('Escape');
    answer();
    await new Promise((r) => setTimeout(r, 10));
    expect(screen.queryByTestId('batch')).toBeNull();
    await open('plan_0001');
    await key('l');
    await screen.findByTestId('standing-form');
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
    const realWindow = backend.queueWindow.bind(backend);
    let ready = false;
    backend.queueWindow = async (ask) => {
      if (!ready) throw new BackendError('starting', 'Connecting to the gateway…');
      return realWindow(ask);
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
