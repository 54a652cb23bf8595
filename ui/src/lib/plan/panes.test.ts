import { fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import { demoPlans, execution } from '../../backend/demo';
import { FakeBackend } from '../../backend/fake';
import type { PlanView } from '../../backend';
import Plan from '../Plan.svelte';
import Changes from './Changes.svelte';
import Cost from './Cost.svelte';
import Effects from './Effects.svelte';
import Execution from './Execution.svelte';
import Request from './Request.svelte';
import Rules from './Rules.svelte';
import Validation from './Validation.svelte';

const demo = (id: string): PlanView => demoPlans().find((p) => p.plan_id === id)!;
/** The execution pane's props around `view`, on a fake gateway that holds the executed plan. */
const executed = (view = execution(), backend = new FakeBackend(), onremedied = () => {}) =>
  ({ props: { execution: view, planId: 'plan_0005', backend, onremedied } });

describe('the changes pane', () => {
  it('groups changes per resource and renders each diff by kind', () => {
    render(Changes, { props: { changes: demo('plan_0002').changes } });
    const pane = screen.getByTestId('pane-changes');
    expect([...pane.querySelectorAll('.resource')].map((r) => r.textContent)).toEqual(['groups/grp_support', 'entitlements/on_call']);
    expect(pane.querySelectorAll('[data-testid=diff-scalar]')).toHaveLength(2);
    expect(pane.querySelectorAll('[data-testid=diff-json]')).toHaveLength(1);
    expect(pane.querySelectorAll('[data-testid=diff-text]')).toHaveLength(1);
  });
});

describe('the rules pane', () => {
  it('shows each rule of the gateway policy, what it still needs, where it is written, and says it is not signed', () => {
    render(Rules, { props: { rules: demo('plan_0002').rules } });
    expect(screen.getByTestId('rules-note').textContent).toContain('not part of what you sign');
    const rules = screen.getAllByTestId('rule');
    expect(rules.map((r) => r.querySelector('[data-testid=rule-line]')!.textContent)).toEqual([
      'Needs 1 of leads — 0 received',
      'Met: 1 approver — 1 received (Ada)',
    ]);
    expect(rules[0].querySelector('[data-testid=rule-asks-me]')).not.toBeNull();
    expect(rules[1].querySelector('[data-testid=rule-asks-me]')).toBeNull();
    expect(rules[0].querySelector('[data-testid=rule-source]')!.textContent).toBe('approval.rego:34');
  });

  it('shows nothing for a plan without rules', () => {
    render(Rules, { props: { rules: [] } });
    expect(screen.queryByTestId('rules')).toBeNull();
  });
});

describe('the effects pane', () => {
  it('puts derived effects under their cause, with groups, counts and badges', async () => {
    const p = demo('plan_0002');
    // The gateway may list a derived effect before its cause; an orphan still shows, last.
    const effects = [p.effects[2], p.effects[0], { ...p.effects[1], id: 'eff_9', cause: 'eff_missing' }, p.effects[3]];
    const opened: string[] = [];
    render(Effects, { props: { effects, groups: p.groups, onsubjects: (id: string) => opened.push(id) } });
    const shown = screen.getAllByTestId('effect');
    expect(shown.map((e) => e.dataset.effectId)).toEqual(['eff_1', 'eff_3', 'eff_4', 'eff_9']);
    expect(shown.map((e) => e.classList.contains('derived'))).toEqual([false, true, true, true]);
    expect(shown[1].style.marginLeft).toBe('14px');
    expect(shown[1].textContent).toContain('irreversible');
    expect(screen.getByText('Effects · 1 direct, 3 derived')).toBeTruthy();
    expect(screen.getByTestId('effect-groups').textContent).toContain('On call entitlement removed');
    await fireEvent.click(shown[0].querySelector('button')!);
    expect(opened).toEqual(['eff_1']);
  });
});

describe('the validation pane', () => {
  it('puts blockers first, then warnings, then info, with code, path, message and repair', () => {
    const v = (severity: string, code: string) => ({ severity, code, path: '/x', message: `${code} happened`, repair: severity === 'error' ? 'Do this.' : null, blocks_execution: severity === 'error', items: [], items_total: 0 });
    render(Validation, { props: { validation: [v('info', 'i1'), v('warning', 'w1'), v('error', 'e1'), v('warning', 'w2')], assumptions: [] } });
    const entries = screen.getAllByTestId('validation');
    expect(entries.map((e) => e.dataset.severity)).toEqual(['error', 'warning', 'warning', 'info']);
    expect(entries[0].textContent).toContain('Blocker');
    expect(entries[0].textContent).toContain('e1');
    expect(entries[0].textContent).toContain('/x');
    expect(entries[0].textContent).toContain('Repair: Do this.');
    expect(screen.queryByTestId('no-blockers')).toBeNull();
  });
});

describe('the validation pane names what an entry counts', () => {
  it('lists the items under legal hold with their expiry, and how many more there are', () => {
    const p = demo('plan_0001');
    const held = { ...p.validation[0], items: p.validation[0].items.slice(0, 1), items_total: 40 };
    render(Validation, { props: { validation: [held], assumptions: [] } });
    const items = screen.getAllByTestId('named-item');
    expect(items.map((i) => i.dataset.itemId)).toEqual(['itm_19']);
    expect(items[0].textContent).toContain('Audit bundle · expires 2027-01-05 · legal hold');
    expect(screen.getByTestId('validation').textContent).toContain('and 39 more');
  });
});

describe('the cost pane', () => {
  it('says a plan the wallet cannot pay cannot be paid', () => {
    const p = demo('plan_0008');
    render(Cost, { props: { cost: p.cost, wallet: p.wallet, queueTotal: null } });
    expect(screen.getByTestId('cannot-pay').textContent).toContain('cannot be paid');
    expect(screen.getByTestId('wallet').textContent).toContain('50.00 of 50.00 left → -850.00 after');
  });

  it('shows what a payable plan leaves of the wallet, without a warning', () => {
    const p = demo('plan_0002');
    render(Cost, { props: { cost: p.cost, wallet: p.wallet, queueTotal: '900.46' } });
    expect(screen.getByTestId('wallet').textContent).toContain('12.63 of 50.00 left → 12.26 after');
    expect(screen.queryByTestId('cannot-pay')).toBeNull();
    expect(screen.getByTestId('pane-cost').textContent).toContain('flat · estimate');
  });

  it('says a plan in another currency needs the contract re-read', () => {
    const p = demo('plan_0009');
    render(Cost, { props: { cost: p.cost, wallet: null, queueTotal: null } });
    expect(screen.getByTestId('pane-cost').textContent).toContain('4.00–6.50 EUR');
    expect(screen.getByTestId('currency').textContent).toContain('the contract must be re-read');
  });
});

describe('the execution pane', () => {
  it('counts the emails and names each one held, with why', () => {
    const view = execution();
    render(Execution, executed(view));
    expect(screen.getByTestId('execution-deliveries').textContent).toContain('21 sent');
    expect(screen.getByTestId('execution-deliveries').textContent).toContain('1 held for you');
    const held = screen.getByTestId('execution-attention').textContent ?? '';
    expect(held).toContain('usr_07');
    expect(held).toContain('recipient_changed');
  });

  it('offers each held email the remedies that fit it, signs one, and reads the plan again', async () => {
    const backend = new FakeBackend();
    const shown = (await backend.plan('plan_0005')).execution!;
    let reread = 0;
    render(Execution, executed(shown, backend, () => { reread += 1; }));
    const buttons = [...screen.getByTestId('attention-22').querySelectorAll('button')].map((b) => b.textContent);
    expect(buttons).toEqual(['Send to dana@elsewhere.example', 'Cancel (refund 0.01 credits)']);
    await fireEvent.click(screen.getByTestId('remedy-release'));
    expect((await screen.findByTestId('remedy-answer')).textContent).toBe('Queued for dana@elsewhere.example.');
    expect(reread).toBe(1);
    const after = (await backend.plan('plan_0005')).execution!.deliveries!;
    expect([after.held, after.pending, after.remedies[0].remedy]).toEqual([0, 1, 'release']);
  });

  it('offers no remedy for an email whose members do not match their digest', () => {
    const view = execution();
    view.deliveries!.attention[0].remedies = [];
    render(Execution, executed(view));
    expect(screen.getByTestId('attention-22').textContent).toContain('no remedy can be signed');
    expect(screen.queryByTestId('remedy-release')).toBeNull();
  });

  it('says nothing about emails when the execution queued none', () => {
    render(Execution, executed({ ...execution(), deliveries: null }));
    expect(screen.queryByTestId('execution-deliveries')).toBeNull();
  });

  it('plays inline audio, shows a remote image only as its address, and the cost beside the estimate', () => {
    const { container } = render(Execution, executed(execution()));
    expect(screen.getByTestId('media-audio').getAttribute('src')).toMatch(/^data:audio\/wav;base64,/);
    expect(screen.getByTestId('media-link').textContent).toBe('https://replicate.delivery/demo/out-0.png');
    expect(container.querySelector('img[src^="http"]')).toBeNull();
    expect(container.querySelector('a')).toBeNull();
    const cost = screen.getByTestId('execution-cost').textContent ?? '';
    expect(cost).toContain('0.05–0.12 credits');
    expect(cost).toContain('0.09 credits');
    expect(cost).toContain('22 subjects');
    const counted = { ...execution(), usage: { input_tokens: 0, output_tokens: 0, credits: '0.50', units: [['predict_ms', 5000]] as [string, number][] } };
    render(Execution, executed(counted));
    expect(screen.getAllByTestId('execution-usage')[1].textContent).toBe('5000 predict ms');
  });

  it('shows a failed provider call as its error, not as content', () => {
    const failed = { ...execution(), success: false, content: '', media: [],
      error: { code: 'provider_rate_limited', message: 'openai: Rate limit reached.', retryable: true } };
    render(Execution, executed(failed));
    expect(screen.getByTestId('execution-success').textContent).toContain('failed');
    expect(screen.getByTestId('execution-error').textContent).toContain('provider_rate_limited');
    expect(screen.getByTestId('execution-error').textContent).toContain('may succeed if tried again');
    expect(screen.queryByTestId('execution-content')).toBeNull();
  });
});

describe('the request pane', () => {
  it('shows a short request on one line', () => {
    render(Request, { props: { request: demo('plan_0001').request } });
    const inline = screen.getByTestId('request-inline');
    expect(inline.textContent).toContain('/project prj_184');
    expect(inline.textContent).toContain('/retention_days 14');
  });

  it('says a provider request leaves, and opens long text on request', async () => {
    const text = 'Summarise the contract.\n'.repeat(20);
    const request = { leaves: true, mcp: null, params: [{ path: '/messages/0/content', text, long: true }, { path: '/model', text: 'small', long: false }] };
    render(Request, { props: { request } });
    expect(screen.getByTestId('request-leaves').textContent).toContain('outside service');
    const param = screen.getAllByTestId('request-param')[0];
    expect(param.querySelector('pre')!.textContent!.length).toBeLessThan(text.length);
    await fireEvent.click(screen.getByTestId('request-expand'));
    expect(param.querySelector('pre')!.textContent).toBe(text);
  });
});

describe('a call through the MCP proxy', () => {
  it('names the server and the tool its arguments go to', () => {
    const request = { leaves: true, mcp: { upstream: 'files', tool: 'write_file' }, params: [{ path: '/path', text: '/srv/a.txt', long: false }] };
    render(Request, { props: { request } });
    const note = screen.getByTestId('request-leaves').textContent!;
    expect(note).toContain('write_file is called with on the MCP server files');
    expect(note).not.toContain('outside service');
  });

  it("is told apart from a capability of the gateway's own in the plan's header", () => {
    const base = demo('plan_0001');
    const plan = { ...base, capability_id: 'files.write_file', request: { ...base.request, mcp: { upstream: 'files', tool: 'write_file' } } };
    const none = () => {};
    render(Plan, { props: { plan, now: Date.now(), busy: false, backend: new FakeBackend(), onapprove: none, onreject: none, onrefresh: none, onopen: none, ondecided: none, onamended: none, onsnooze: none, onunsnooze: none } });
    expect(screen.getByTestId('mcp-call').textContent).toBe('MCP tool write_file of the server files');
  });
});

describe('a sample outside the digest', () => {
  it('is marked until checked, and a contradicted one is not shown', () => {
    const p = demo('plan_0002');
    const effects = [{ ...p.effects[0], sample_check: 'unchecked' as const }, { ...p.effects[2], sample: [], sample_check: 'mismatch' as const }];
    render(Effects, { props: { effects, groups: p.groups, onsubjects: () => {} } });
    expect(screen.getByTestId('sample').textContent).toContain('not yet checked');
    expect(screen.getByTestId('sample-mismatch').textContent).toContain('not the set this plan signs');
  });
});
