/**
 * How the parity run compares an answer of the mock with the server's to the same request:
 * status, error code, the headers a client reads (rate-limit values included) and the body's
 * shape, with the values a client branches on (statuses, codes, enums, the paths it sent)
 * compared as values and the rest (ids, times, sizes, messages) as types.
 */

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

/** Keys whose values must be equal; every other value is compared by its type. */
const VALUE_KEYS = new Set([
  'success',
  'code',
  'status',
  'token_type',
  'expires_in',
  'type',
  'source',
  'destination',
  'compression',
  'encryption',
  'deduplication',
  'target_path',
  'paths',
  'overwrite',
]);

type Shape = string | null | boolean | number | Shape[] | { [key: string]: Shape };

export function shape(value: unknown, key = ''): Shape {
  if (value === null) return null;
  if (Array.isArray(value)) {
    if (VALUE_KEYS.has(key)) return value as Shape[];
    // A list is compared by whether it is empty and by the distinct shapes of its items.
    const items = [...new Map(value.map((item) => { const s = shape(item); return [JSON.stringify(s), s]; })).values()];
    return items.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  }
  if (typeof value === 'object') {
    return Object.fromEntries(Object.keys(value as object).sort().map((k) => [k, shape((value as Record<string, unknown>)[k], k)]));
  }
  if (VALUE_KEYS.has(key)) return value as Shape;
  return typeof value;
}

/** The headers a client reads, normalised: ids in Location become {id}. */
function headerView(answer: Answer): Record<string, string> {
  const h = answer.headers;
  const view: Record<string, string> = {};
  const id = (answer.body as { data?: { id?: string } } | undefined)?.data?.id;
  for (const name of ['x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'location', 'preference-applied', 'allow', 'www-authenticate']) {
    const value = h.get(name);
    if (value !== null) view[name] = name === 'location' && id ? value.replace(id, '{id}') : value;
  }
  const type = h.get('content-type');
  if (type !== null) view['content-type'] = type.split(';')[0]!.trim();
  if (h.get('retry-after') !== null) view['retry-after'] = 'present';
  return view;
}

/** Every way the two answers differ, one line each ([] when they agree). */
export function differences(server: Answer, mock: Answer): string[] {
  const out: string[] = [];
  if (server.status !== mock.status) out.push(`status: server ${server.status}, mock ${mock.status}`);
  const [sh, mh] = [headerView(server), headerView(mock)];
  for (const name of new Set([...Object.keys(sh), ...Object.keys(mh)])) {
    if (sh[name] !== mh[name]) out.push(`header ${name}: server ${sh[name] ?? '(none)'}, mock ${mh[name] ?? '(none)'}`);
  }
  const [sr, mr] = [Number(server.headers.get('retry-after')), Number(mock.headers.get('retry-after'))];
  if (Math.abs(sr - mr) > 1) out.push(`header retry-after: server ${sr}, mock ${mr}`);
  const [sb, mb] = [JSON.stringify(shape(server.body)), JSON.stringify(shape(mock.body))];
  if (sb !== mb) out.push(`body: server ${sb}, mock ${mb}`);
  return out;
}

/**
 * The differences docs/mock.md documents: rows of its parity table, whose first cell is a step
 * id in backticks and whose last cell says why the mock cannot avoid it.
 */
export function documentedDifferences(markdown: string): Map<string, string> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Where the mock differs from the server')) ?? '';
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const id = /^`([a-z0-9-]+)`$/.exec(cells[1] ?? '')?.[1];
    if (id && (cells.at(-2) ?? '').length > 0) rows.set(id, cells.at(-2)!);
  }
  return rows;
}
