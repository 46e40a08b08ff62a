/**
 * CORS_ORIGINS: the web origins whose pages may call the APIs from a browser. Empty (the
 * default) sends no CORS headers at all; `*` allows any origin; otherwise a comma-separated list
 * of origins (`scheme://host[:port]`), compared exactly.
 */
export type CorsOrigins = '*' | readonly string[];

export function parseCorsOrigins(raw: string | undefined): CorsOrigins {
  const entries = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 1 && entries[0] === '*') return '*';
  return entries.map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.origin !== entry.replace(/\/$/, '')) {
      throw new Error(`CORS_ORIGINS must be "*" or a comma-separated list of origins like https://app.example.org, got "${entry}"`);
    }
    return url.origin;
  });
}

export function originAllowed(origins: CorsOrigins, origin: string): boolean {
  return origins === '*' || origins.includes(origin);
}
