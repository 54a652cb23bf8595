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
    // The confirmation names the param the removed row leaves open.
    expect(asked[1].lines).toEqual(['group is grp_support or grp_sales', 'Left open: any value of filter (no constraint on them).']);
    expect(asked[1].consequence).toContain('group is grp_support or grp_sales; any filter;');
    expect(asked[1].consequence).toContain('up to 5 plans');
    expect(state().dataset.state).toBe('answered');
    const made = (await backend.standing()).find((s) => s.id === 'sa_0004')!;
    expect(made).toMatchObject({ max_plans: 5, reason: 'Contractor clean-up this week.', risk_flags: ['bulk', 'access_change', 'irreversible', 'external', 'money'] });
    expect(made.constraints.map((c) => c.values)).toEqual([['"grp_support"', '"grp_sales"']]);
    expect(Date.parse(made.expires_at) - Date.parse(made.issued_at)).toBe(3 * 86_400_000);
  });

  it('offers no "approve plans like this" where the policy would refuse it, saying why in words', async () => {
    await renderApp();
    await open('plan_0002');
    expect((screen.getByTestId('approve-like-this') as HTMLButtonElement).disabled).toBe(false);
    expect(screen.queryByTestId('standing-refused')).toBeNull();

    await open('plan_0008');
    const like = screen.getByTestId('approve-like-this') as HTMLButtonElement;
    const why = 'The approval policy lets no standing approval cover high_cost plans.';
    expect(like.disabled).toBe(true);
    expect(like.title).toBe(why);
    // In words on the screen, not only on hover, and tied to the button for a screen reader.
    const refused = screen.getByTestId('standing-refused');
    expect(refused.textContent).toContain(why);
    expect(like.getAttribute('aria-describedby')).toBe(refused.id);
    // Approving the plan itself is not refused.
    expect((screen.getByTestId('approve') as HTMLButtonElement).disabled).toBe(false);
  });

  it('leaves the flags the policy refuses out of what it signs', async () => {
    const backend = await renderApp({ standingFlags: ['access_change'] });
    await open('plan_0015');
    expect((screen.getByTestId('approve-like-this') as HTMLButtonElement).disabled).toBe(false);
    await open('plan_0002');
    expect(screen.getByTestId('standing-refused').textContent)
      .toContain('The approval policy lets no standing approval cover bulk or irreversible or external or money plans.');
    const draft = await backend.standingDraft('plan_0002');
    await expect(backend.createStanding({ ...draft, reason: 'Clean-up.' })).rejects.toMatchObject({ code: 'policy_denied' });
  });

  it('names the params it leaves open to any value, and one more when a row is removed', async () => {
    await renderApp();
    await open('plan_0001');
    await fireEvent.click(screen.getByTestId('approve-like-this'));
    let form = await screen.findByTestId('standing-form');
    await waitFor(() => expect(within(form).getAllByTestId('standing-constraint')).toHaveLength(2));
    // The capability takes notify_owners too; the plan did not set it, so no row constrains it.
    expect(within(form).getByTestId('standing-open').textContent).toBe('Left open (any value): notify_owners.');
    const days = within(form).getAllByTestId('standing-constraint').find((r) => r.dataset.param === '/retention_days')!;
    await fireEvent.click(within(days).getByTestId('standing-remove'));
    expect(within(form).getByTestId('standing-open').textContent).toBe('Left open (any value): notify_owners, retention_days.');
    expect(within(form).getByTestId('standing-warning').textContent).toContain('Left open (any value): notify_owners, retention_days.');
    await key('Escape');

    // A row on /filter/employment constrains /filter: nothing is open until it is removed.
    await open('plan_0002');
    await fireEvent.click(screen.getByTestId('approve-like-this'));
    form = await screen.findByTestId('standing-form');
    await waitFor(() => expect(within(form).getAllByTestId('standing-constraint')).toHaveLength(2));
    expect(within(form).queryByTestId('standing-open')).toBeNull();
    const employment = within(form).getAllByTestId('standing-constraint').find((r) => r.dataset.param === '/filter/employment')!;
    await fireEvent.click(within(employment).getByTestId('standing-remove'));
    expect(within(form).getByTestId('standing-open').textContent).toBe('Left open (any value): filter.');
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

  it('lists each with what it allows, its use and expiry, opens the plans it let run, and revokes only my active ones', async () => {
    const backend = await renderApp();
    await fireEvent.click(screen.getByTestId('nav-standing'));
    const rows = await screen.findAllByTestId('standing-row');
    expect(rows.map((r) => r.dataset.id)).toEqual(['sa_0003', 'sa_0002', 'sa_0001']);
    const [mine, adas, revoked] = rows;
    expect(within(mine).getByTestId('standing-allows').textContent).toContain('retention_days ≥ 7');
    expect(within(mine).getByTestId('standing-use').textContent).toBe('1 of 10 plans run · 0.09 of 0.90 credits');
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

    await fireEvent.click(within(screen.getAllByTestId('standing-row')[0]).getByTestId('standing-use-plan'));
    await shown('plan_0005');
  });

  it('shows the plans each let run apart from those it approved that have not run yet', async () => {
    await renderApp();
    await fireEvent.click(screen.getByTestId('nav-standing'));
    const [mine, adas] = await screen.findAllByTestId('standing-row');
    const uses = within(mine).getByTestId('standing-uses');
    expect(uses.textContent).toContain('Ran:');
    expect(within(uses).getAllByTestId('standing-use-plan').map((b) => b.textContent)).toEqual(['plan_0005']);
    expect(within(uses).getByTestId('standing-use-row').textContent).toContain('use 1 · 0.09 credits');
    expect(uses.textContent).not.toContain('plan_0007');
    const covered = within(mine).getByTestId('standing-covered');
    expect(covered.textContent).toContain('Covered, not yet run:');
    expect(within(covered).getAllByTestId('standing-plan').map((b) => b.textContent)).toEqual(['plan_0007']);
    expect(covered.textContent).not.toContain('plan_0005');
    expect(within(adas).getByTestId('standing-uses').textContent).toBe('No plan has run under it yet.');
    expect(within(adas).queryByTestId('standing-covered')).toBeNull();

    await fireEvent.click(within(covered).getByTestId('standing-plan'));
    await shown('plan_0007');
  });

  it('follows the gateway: a use made while the screen is open shows at once', async () => {
    const backend = await renderApp();
    await fireEvent.click(screen.getByTestId('nav-standing'));
    const [mine] = await screen.findAllByTestId('standing-row');
    expect(within(mine).getAllByTestId('standing-use-plan').map((b) => b.textContent)).toEqual(['plan_0005']);
    backend.useStanding('sa_0003', 'plan_0007');
    await waitFor(() => expect(within(screen.getAllByTestId('standing-row')[0]).getAllByTestId('standing-use-plan')
      .map((b) => b.textContent)).toEqual(['plan_0005', 'plan_0007']));
    expect(within(screen.getAllByTestId('standing-row')[0]).queryByTestId('standing-covered')).toBeNull();
  });

  it('shows one whose signature does not match its terms as a warning, without its terms, still revocable', async () => {
    const backend = await renderApp();
    backend.tamperStanding('sa_0003', 'its signature does not verify: bad signature');
    await fireEvent.click(screen.getByTestId('nav-standing'));
    const [forged, adas] = await screen.findAllByTestId('standing-row');
    const alert = within(forged).getByRole('alert');
    expect(alert.dataset.testid).toBe('standing-unverified');
    expect(alert.textContent).toContain('Its signature does not match the terms the gateway shows: its signature does not verify: bad signature.');
    expect(alert.textContent).toContain('Its terms are not shown.');
    expect(within(forged).queryByTestId('standing-allows')).toBeNull();
    expect(within(forged).queryByTestId('standing-use')).toBeNull();
    expect(forged.textContent).not.toContain('retention_days');
    expect(forged.textContent).not.toContain('Retention clean-up');
    // Its id, signer, state and expiry stay, and it can be revoked.
    expect(forged.textContent).toContain('signed by Dana (you) sa_0003');
    expect(within(forged).getByTestId('standing-state').textContent).toBe('active');
    expect(within(forged).getByTestId('standing-expires').textContent).toBe('expires in 5 days');
    expect(within(adas).queryByTestId('standing-unverified')).toBeNull();
    expect(within(adas).getByTestId('standing-allows').textContent).toContain('documents/*');

    await fireEvent.click(within(forged).getByTestId('standing-revoke'));
    await fireEvent.click(within(forged).getByTestId('standing-revoke-confirm'));
    await waitFor(() => expect(screen.getAllByTestId('standing-row')[0].dataset.state).toBe('revoked'));
    expect(within(screen.getAllByTestId('standing-row')[0]).getByTestId('standing-unverified')).toBeTruthy();
  });

  it('warns, without its terms, when the one just signed does not verify as the gateway serves it', async () => {
    const backend = await renderApp();
    backend.tamperStanding('sa_0004', 'the terms the gateway shows are not the ones signed');
    await open('plan_0001');
    await fireEvent.click(screen.getByTestId('approve-like-this'));
    const form = await screen.findByTestId('standing-form');
    await fireEvent.input(await within(form).findByTestId('standing-reason'), { target: { value: 'Retention work.' } });
    await fireEvent.click(within(form).getByTestId('standing-submit'));
    const created = await screen.findByTestId('standing-created');
    expect(created.getAttribute('role')).toBe('alert');
    expect(created.textContent).toContain('the terms the gateway shows are not the ones signed');
    expect(created.textContent).not.toContain('Approves plans of');
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

  it('sends nothing when the approver declines the confirmation of the change, and says so quietly', async () => {
    const asked: { title: string; lines: string[] }[] = [];
    const backend = await renderApp({ confirm: (title, _consequence, lines) => (asked.push({ title, lines }), false) });
    await open('plan_0001');
    await fireEvent.click(screen.getByTestId('amend-open'));
    const editor = await screen.findByTestId('amend-editor');
    const days = (await within(editor).findByTestId('amend-field-retention_days')) as HTMLInputElement;
    await fireEvent.input(days, { target: { value: '21' } });
    await fireEvent.click(within(editor).getByTestId('amend-submit'));
    const note = await within(editor).findByTestId('amend-note');
    expect(note.textContent).toBe('The change was not confirmed; nothing was sent.');
    expect(note.getAttribute('role')).toBe('status');
    expect(within(editor).queryByTestId('amend-error')).toBeNull();
    expect(asked).toEqual([{ title: 'Change this request?', lines: ['changed retention_days from 14 to 21'] }]);
    expect(backend.amendments).toEqual([]);
    // The editor stays open as typed, to send again or cancel.
    expect(screen.getByTestId('amend-editor')).toBe(editor);
    expect(days.value).toBe('21');
    expect(screen.queryByTestId('what-changed')).toBeNull();
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
    await waitFor(() => expect(screen.getByTestId('snooze-note').textContent).toMatch(/plan_0001 is snoozed until \d\d:\d\d/));
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

  it('keeps its note about a snooze only while the snooze lasts', async () => {
    const backend = await renderApp();
    await open('plan_0001');
    await fireEvent.click(screen.getByTestId('snooze-15'));
    await waitFor(() => expect(screen.getByTestId('snooze-note')).toBeTruthy());
    // The snooze ends in the backend (its clock), and the row comes back in a live change.
    await backend.unsnooze('plan_0001');
    await waitFor(() => expect(row('plan_0001')).not.toBeNull());
    expect(screen.queryByTestId('snooze-note')).toBeNull();
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
