// How the Insights screen writes its numbers.

/** `42 s`, `7 min`, `3.5 h`, `2.0 d`; an em dash for none. */
export function duration(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86_400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

/** A share as a whole percentage; an em dash for none. */
export function percent(share: number | null): string {
  return share === null ? '—' : `${Math.round(share * 100)} %`;
}
