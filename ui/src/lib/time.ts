// Countdown text for an expiry, from a clock the caller ticks.

/** Under this much time left a plan is urgent, and its countdown counts seconds. */
const URGENT_MS = 3 * 60_000;

/**
 * "13 min" while there is time, "02:59" in the last three minutes: the text changes once a
 * minute until seconds matter, so a window left open is not repainted every second for nothing.
 */
export function remaining(expiresAt: string, now: number): string {
  const ms = Date.parse(expiresAt) - now;
  if (Number.isNaN(ms)) return '—';
  if (ms <= 0) return 'expired';
  if (ms >= URGENT_MS) {
    // Rounded up, so the text never claims less time than is left.
    const minutes = Math.ceil(ms / 60_000);
    if (minutes < 60) return `${minutes} min`;
    return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
  }
  const total = Math.floor(ms / 1000);
  const m = Math.floor(total / 60);
  const s = total % 60;
  return `${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
}

export function isUrgent(expiresAt: string, now: number): boolean {
  return Date.parse(expiresAt) - now < URGENT_MS;
}

export function isExpired(expiresAt: string, now: number): boolean {
  return Date.parse(expiresAt) <= now;
}

/** "synced 4 s ago", coarser as it gets older. */
export function ago(at: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
  if (Number.isNaN(s)) return '—';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  return `${Math.floor(s / 3600)} h ago`;
}

/** "in 5 days", "in 3 h", "in 12 min", "2 days ago": a time further off than a countdown's,
 *  to the nearest unit. */
export function relative(at: string, now: number): string {
  const ms = Date.parse(at) - now;
  if (Number.isNaN(ms)) return '—';
  const abs = Math.abs(ms);
  const text = abs < 60_000 ? 'under a minute'
    : abs < 3_600_000 ? `${Math.round(abs / 60_000)} min`
    : abs < 86_400_000 ? `${Math.round(abs / 3_600_000)} h`
    : counted(Math.round(abs / 86_400_000), 'day');
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

/** "14:05": a time of day on this machine's clock, for a snooze that ends today. */
export function clock(at: string): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return '—';
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

export function shortDigest(digest: string): string {
  const hex = digest.replace(/^sha256:/, '');
  return hex.length > 8 ? `sha256:${hex.slice(0, 4)}…${hex.slice(-4)}` : digest;
}

export function label(flag: string): string {
  return flag.replace(/_/g, ' ');
}

/** A type name as a heading: "direct_membership_removed" → "Direct membership removed",
 *  "mcp_tool_call" → "MCP tool call". */
export function heading(flag: string): string {
  const text = label(flag).replace(/\b(mcp|api|url)\b/gi, (acronym) => acronym.toUpperCase());
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** "1 plan", "3 plans", "100,000 subjects". */
export function counted(count: number, noun: string): string {
  return `${count.toLocaleString('en-US')} ${noun}${count === 1 ? '' : 's'}`;
}
