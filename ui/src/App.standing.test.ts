// The App's standing approvals, amend editor, snooze and exports, over the fake backend.
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import App from './App.svelte';
import { FakeBackend } from './backend/fake';
import { ORDER, key, open, renderApp, row, shown, state, withScreenHeight } from './appTest';

withScreenHeight();

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
