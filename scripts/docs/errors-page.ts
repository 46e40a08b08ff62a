/**
 * The errors page (errors.html): every code of the catalogue (generated/error-catalogue.ts) with
 * its status, meaning, what a client should do, and the operations whose documented responses
 * carry it; job-only codes apart. Each code has an anchor (errors.html#RATE_LIMITED).
 */
import { errorCatalogue, type ErrorCatalogueEntry } from '../../generated/error-catalogue.ts';
import { escapeHtml, inline } from './markdown.ts';

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function deref(doc: Node, node: unknown): unknown {
  for (let i = 0; i < 20 && isObject(node) && typeof node.$ref === 'string'; i++) {
    const ref: string = node.$ref;
    node = ref.slice(2).split('/').reduce<unknown>((cur, part) => (isObject(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), doc);
  }
  return node;
}

/** Code → the operations ("POST /api/v1/backup") whose responses name it, in a description or an example. */
export function codeUsage(docs: { doc: Node; basePath: string }[]): Map<string, string[]> {
  const usage = new Map<string, string[]>();
  for (const { doc, basePath } of docs) {
    for (const [path, item] of Object.entries((doc.paths as Record<string, Node>) ?? {})) {
      for (const method of METHODS) {
        const op = item[method];
        if (!isObject(op)) continue;
        const name = `${method.toUpperCase()} ${basePath}${path}`;
        // Descriptions and examples of the responses name the codes (schemas would name them all).
        const text = Object.values((op.responses as Node) ?? {})
          .map((ref) => deref(doc, ref))
          .filter(isObject)
          .flatMap((response) => [
            String(response.description ?? ''),
            ...Object.values(isObject(response.content) ? response.content : {}).flatMap((media) =>
              Object.values(isObject(media) && isObject(media.examples) ? media.examples : {}).map((example) => JSON.stringify(deref(doc, example))),
            ),
          ])
          .join('\n');
        for (const code of Object.keys(errorCatalogue)) {
          if (!new RegExp(`\\b${code}\\b`).test(text)) continue;
          const list = usage.get(code) ?? [];
          list.push(name);
          usage.set(code, list);
        }
      }
    }
  }
  return usage;
}

function row(code: string, entry: ErrorCatalogueEntry, usage: string[], operations: number): string {
  const where = usage.length === 0 ? 'any operation (not named per operation)' : usage.length >= operations * 0.8 ? 'almost every operation' : usage.map((u) => `<code>${escapeHtml(u)}</code>`).join(', ');
  return `<tr id="${code}"><td><a href="#${code}"><code>${code}</code></a></td><td>${entry.status ?? '—'}</td><td>${inline(entry.meaning)}</td><td>${inline(entry.action)}</td><td>${where}</td></tr>`;
}

export function errorsPage(docs: { doc: Node; basePath: string }[]): string {
  const usage = codeUsage(docs);
  const operations = docs.reduce((n, { doc }) => n + Object.values((doc.paths as Record<string, Node>) ?? {}).reduce((m, item) => m + METHODS.filter((x) => isObject(item[x])).length, 0), 0);
  const entries = Object.entries(errorCatalogue as Record<string, ErrorCatalogueEntry>);
  const inResponses = entries.filter(([, e]) => e.status !== undefined).sort((a, b) => a[1].status! - b[1].status!);
  const jobOnly = entries.filter(([, e]) => e.status === undefined);
  const head = '<thead><tr><th>code</th><th>status</th><th>meaning and typical cause</th><th>what a client should do</th><th>returned by</th></tr></thead>';
  const table = (list: [string, ErrorCatalogueEntry][]) => `<table class="errors">${head}<tbody>${list.map(([code, e]) => row(code, e, usage.get(code) ?? [], operations)).join('')}</tbody></table>`;
  return `<h1>Errors</h1>
<p>Every error of both APIs is one envelope, <code>{"success": false, "error": {"code", "message", "details"}, "meta": {…}}</code>,
with a code from one catalogue. Each code always comes with the same HTTP status. Branch on <code>error.code</code>, never on the
message; <code>details</code> is always an object (a <code>VALIDATION_ERROR</code> lists each problem in <code>details.errors[]</code>
as <code>{path, message}</code>). A later minor version may add codes: act on the HTTP status of a code you do not know. The
SDK's <code>errorInfo(code)</code> returns the same meaning and advice.</p>
<h2 id="responses">Error answers</h2>
${table(inResponses)}
<h2 id="jobs">Codes of failed jobs</h2>
<p>A job that ends <code>failed</code> carries <code>error: {code, message}</code>. Besides the codes above marked for jobs, these occur only there:</p>
${table(jobOnly)}
<p>The codes above marked for jobs: ${entries.filter(([, e]) => e.in.includes('job')).map(([code]) => `<a href="#${code}"><code>${code}</code></a>`).join(', ')}.</p>`;
}
