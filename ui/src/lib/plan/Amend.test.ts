import { fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import type { AmendDraft, Backend, RefreshView } from '../../backend';
import Amend from './Amend.svelte';

// Only what the editor asks of a backend: the draft, and the params it sends.
function backendWith(draft: AmendDraft, sent: unknown[]): Backend {
  return {
    amendDraft: async () => draft,
    amend: async (_planId: string, params: unknown) => {
      sent.push(params);
      return {} as RefreshView;
    },
  } as unknown as Backend;
}

describe('the amend editor', () => {
  it('offers an enum of numbers as a choice and sends the number chosen', async () => {
    const draft: AmendDraft = {
      plan_id: 'plan_1', capability_id: 'projects.settings.update',
      params: { project: 'prj_184', retention_days: 14 },
      schema: {},
      form: [
        { name: 'project', label: 'project', kind: 'string', choices: [], required: true, description: null },
        { name: 'retention_days', label: 'retention days', kind: 'number_choice', choices: ['7', '14', '30'], required: true, description: null },
      ],
    };
    const sent: unknown[] = [];
    render(Amend, { props: { backend: backendWith(draft, sent), planId: 'plan_1', onamended: () => {}, oncancel: () => {} } });
    const days = (await screen.findByTestId('amend-field-retention_days')) as HTMLSelectElement;
    expect(days.tagName).toBe('SELECT');
    expect([...days.options].map((o) => o.value)).toEqual(['7', '14', '30']);
    expect(days.value).toBe('14');
    await fireEvent.change(days, { target: { value: '30' } });
    await fireEvent.click(screen.getByTestId('amend-submit'));
    await screen.findByTestId('amend-editor');
    expect(sent).toEqual([{ project: 'prj_184', retention_days: 30 }]);
  });
});
