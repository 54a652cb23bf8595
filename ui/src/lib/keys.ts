// Every key the console answers to: the ? overlay lists exactly these.

export type View = 'queue' | 'history' | 'standing' | 'settings';

export const KEYS: { keys: string; what: string }[] = [
  { keys: 'j / k', what: 'Next / previous plan' },
  { keys: 'a', what: 'Approve and sign the plan (or the batch)' },
  { keys: 'r', what: 'Reject, with a reason' },
  { keys: 'f', what: 'Refresh: a new preview and what changed' },
  { keys: 'x', what: 'Select the plan for batch review' },
  { keys: 'Shift / Ctrl + click', what: 'Select a range / one more plan' },
  { keys: '/', what: 'Filter the queue' },
  { keys: 's', what: 'All subjects: search the list' },
  { keys: 'Esc', what: 'Close, clear the selection or the filter' },
  { keys: '?', what: 'Show these keys' },
];

/** Keys typed into a field belong to the field. */
export function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName) || el.isContentEditable);
}
