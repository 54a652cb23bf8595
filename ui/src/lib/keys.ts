// Every key the console answers to: the ? overlay lists exactly these.

export type View = 'queue' | 'history' | 'standing' | 'insights' | 'settings';

export const KEYS: { keys: string; what: string }[] = [
  { keys: 'j / k', what: 'Next / previous plan' },
  { keys: 'Enter', what: 'On a plan in the queue: open it and move to it' },
  { keys: 'q', what: 'Back to the queue, on the selected plan' },
  { keys: 'a', what: 'Approve and sign the plan (or the batch)' },
  { keys: 'r', what: 'Reject, with a reason' },
  { keys: 'l', what: 'Approve, and approve plans like this (a standing approval)' },
  { keys: 'e', what: 'Change the request: the gateway previews it as a new plan' },
  { keys: 'f', what: 'Refresh: a new preview and what changed' },
  { keys: 'z / u', what: 'Snooze the plan for 15 minutes / unsnooze it' },
  { keys: 'x / Shift + x', what: 'Select the plan for batch review / every plan from the last one selected to it' },
  { keys: 'Shift / Ctrl + click', what: 'Select a range / one more plan' },
  { keys: '/', what: 'Filter the queue' },
  { keys: 's', what: 'All subjects: search the list' },
  { keys: '1 – 5', what: 'Queue, History, Standing approvals, Settings, Insights' },
  { keys: 'Ctrl + Enter', what: 'Send the open form (a rejection, a standing approval, a changed request)' },
  { keys: 'Tab / Shift + Tab', what: 'Move between controls; Enter or Space presses one' },
  { keys: 'Esc', what: 'Close, clear the selection or the filter' },
  { keys: '?', what: 'Show these keys' },
];

/** Keys typed into a field belong to the field. */
export function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName) || el.isContentEditable);
}

/** A form that Ctrl (or Cmd) + Enter sends, from any of its fields (`use:ctrlEnterSends`). */
export function ctrlEnterSends(form: HTMLFormElement) {
  const listener = (event: KeyboardEvent) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  };
  form.addEventListener('keydown', listener);
  return { destroy: () => form.removeEventListener('keydown', listener) };
}
