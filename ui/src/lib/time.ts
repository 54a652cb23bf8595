// Countdown text for an expiry, from a clock the caller ticks.

export function remaining(expiresAt: string, now: number): string {
  const ms = Date.parse(expiresAt) - now;
  if (Number.isNaN(ms)) return '—';
  if (ms <= 0) return 'expired';
  const total = Math.floor(ms / 1000);
  const m = Math.floor(total / 60);
  const s = total % 60;
  return `${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
}

export function isUrgent(expiresAt: string, now: number): boolean {
  return Date.parse(expiresAt) - now < 3 * 60_000;
}

export function shortDigest(digest: string): string {
  const hex = digest.replace(/^sha256:/, '');
  return hex.length > 8 ? `sha256:${hex.slice(0, 4)}…${hex.slice(-4)}` : digest;
}

export function label(flag: string): string {
  return flag.replace(/_/g, ' ');
}
