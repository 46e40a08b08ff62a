// What changed between two versions of an API document, as `redocly diff` rates it, told for
// people: the breaking-change check's output, a pull-request comment (`--format markdown`) and
// the changelog page of the docs site.

export interface DiffVerdict {
  ruleId: string;
  impact: 'major' | 'minor' | 'patch';
  message: string;
  location?: { pointer?: string };
}

/** One change, once (redocly reports a change of a shared component at every place that uses it). */
export interface Change {
  impact: 'major' | 'minor' | 'patch';
  kind: string;
  /** Where, readable: "POST /backup › requestBody …" or "schema ErrorCode › enum". */
  where: string;
  property?: string;
  messages: string[];
  /** A major change the APIs' compatibility policy allows in a minor version. */
  allowed: boolean;
}

export interface DiffResult {
  title: string;
  baseVersion: string;
  revisionVersion: string;
  bump: 'major' | 'minor' | 'patch' | 'none';
  /** Changes rated major by the rules and not allowed by the policy. */
  breaking: DiffVerdict[];
  changes: Change[];
  /** True when there is no breaking change, or the major of info.version was raised. */
  ok: boolean;
}

const unescape = (part: string): string => decodeURIComponent(part.replace(/~1/g, '/').replace(/~0/g, '~'));

/** A JSON Pointer into an OpenAPI document, readable. */
export function readablePointer(pointer: string): string {
  const parts = pointer.replace(/^#\/?/, '').split('/').filter((p) => p !== '').map(unescape);
  if (parts[0] === 'paths' && parts.length >= 2) {
    const [, path, method, ...rest] = parts;
    const head = method ? `${method.toUpperCase()} ${path}` : path!;
    return [head, ...rest].join(' › ');
  }
  if (parts[0] === 'components' && parts.length >= 3) return [`${parts[1]!.replace(/s$/, '')} ${parts[2]}`, ...parts.slice(3)].join(' › ');
  return parts.join(' › ') || 'document';
}

const IMPACT_TITLE = { major: 'Breaking', minor: 'Added', patch: 'Changed' } as const;

function changeLine(c: Change): string {
  const what = c.messages.length > 0 ? c.messages.join(' ') : `${c.kind}${c.property ? ` ${c.property}` : ''}`;
  return `- \`${c.where}\`: ${what}`;
}

/** A report for a pull-request comment (or the changelog): breaking changes first, then additions, then the rest. */
export function markdownReport(result: DiffResult, options: { collapse?: boolean; heading?: string } = {}): string {
  const { collapse = true } = options;
  const verdict = result.ok
    ? result.breaking.length > 0
      ? `✅ ${result.breaking.length} breaking change(s), major version raised`
      : `✅ no breaking change${result.bump === 'none' ? '' : ` (a ${result.bump} release)`}`
    : `❌ ${result.breaking.length} breaking change(s) without a new major version`;
  const lines = [`${options.heading ?? '###'} ${result.title}: ${result.baseVersion} → ${result.revisionVersion} — ${verdict}`, ''];
  const groups: [string, Change[]][] = [
    [`**${IMPACT_TITLE.major}** (need a new major version)`, result.changes.filter((c) => c.impact === 'major' && !c.allowed)],
    ['**Allowed by the compatibility policy** (rated major, allowed in a minor version)', result.changes.filter((c) => c.impact === 'major' && c.allowed)],
    [`**${IMPACT_TITLE.minor}**`, result.changes.filter((c) => c.impact === 'minor')],
    [`**${IMPACT_TITLE.patch}** (descriptions, examples and other compatible changes)`, result.changes.filter((c) => c.impact === 'patch')],
  ];
  for (const [title, changes] of groups) {
    if (changes.length === 0) continue;
    const list = changes.map(changeLine);
    if (collapse && changes[0]!.impact === 'patch') {
      lines.push(`<details><summary>${title.replace(/\*\*/g, '')}: ${changes.length}</summary>`, '', ...list, '', '</details>', '');
    } else lines.push(`${title}:`, '', ...list, '');
  }
  if (result.changes.length === 0) lines.push('No changes.', '');
  return lines.join('\n');
}

/** The check's plain output: one line per API, breaking changes under it. */
export function textReport(result: DiffResult): string {
  const changes = result.bump === 'none' ? 'no changes' : `changes need a ${result.bump} release`;
  const head = `${result.title}: ${result.baseVersion} → ${result.revisionVersion}, ${changes}`;
  if (result.ok) return `${head}${result.breaking.length ? ` (${result.breaking.length} breaking, major raised)` : ''}: ok`;
  return [`${head}; breaking changes without a new major version:`, ...result.breaking.map((v) => `  ✖ ${v.message} (${v.ruleId}) at ${v.location?.pointer ?? '?'}`)].join('\n');
}
