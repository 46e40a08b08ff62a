/** Longest `Prefer: wait` honoured, in seconds. */
export const MAX_WAIT_SECONDS = 30;

/**
 * The `wait` preference of an RFC 7240 Prefer header, capped at 30 s; null when absent or
 * malformed (unknown preferences are ignored, as the RFC requires).
 */
export function preferWait(header: string | undefined): number | null {
  if (!header) return null;
  for (const part of header.split(',')) {
    const pref = part.split(';')[0]!.trim();
    const m = /^wait\s*=\s*"?(\d{1,9})"?$/i.exec(pref);
    if (m) return Math.min(Number(m[1]), MAX_WAIT_SECONDS);
  }
  return null;
}
