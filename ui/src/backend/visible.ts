// Gateway- and agent-written text reaches the window only as visible characters: bidirectional
// overrides, zero-width marks and control characters (other than line breaks and tabs, which
// diffs and results need) could reorder or hide what the approver reads before signing.

const HIDDEN = /[\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|\uDB40[\uDC00-\uDC7F]/g;
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

export function visibleText(text: string): string {
  return text.replace(HIDDEN, '\uFFFD').replace(CONTROL, '\uFFFD');
}

/** The same answer with every string made visible; numbers, booleans and shape untouched. */
export function visible<T>(value: T): T {
  if (typeof value === 'string') return visibleText(value) as T;
  if (Array.isArray(value)) return value.map(visible) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [visibleText(k), visible(v)])) as T;
  }
  return value;
}
