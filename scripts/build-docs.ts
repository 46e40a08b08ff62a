// `npm run docs` builds the static documentation site into docs/site/ (git-ignored):
// the Redocly reference of both APIs (Redoc inlined, no CDN; each operation with its generated
// curl and SDK samples), an index, the how-to pages from docs/*.md, the errors page from the
// catalogue, the changelog from the released versions, and the runnable frontend example with
// the SDK compiled for the browser.
//   node scripts/build-docs.ts [--out <dir, default docs/site>]
import { spawn } from 'node:child_process';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { compileForBrowser, importClosure } from './docs/browser-bundle.ts';
import { changelogMarkdown } from './docs/changelog.ts';
import { errorsPage } from './docs/errors-page.ts';
import { escapeHtml, renderMarkdown } from './docs/markdown.ts';
import { listOperations, type ApiDocument, type OperationSummary } from './docs/operations.ts';
import { rateLimitTable, readRateLimits } from './gen/facts.ts';
import type { OpenApiDocument } from './gen/apis.ts';

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const API_PAGES = [
  { name: 'backup', page: 'backup.html' },
  { name: 'tools', page: 'tools.html' },
] as const;

/** How-to pages: docs/<name>.md becomes <name>.html. */
const MARKDOWN_PAGES = ['getting-started', 'mock'];

/** The SDK's entry point: the example page loads it, compiled for the browser, as `@backup-service/client`. */
const SDK_ENTRY = 'sdk/src/index.ts';

export interface BuildResult {
  outDir: string;
  pages: string[];
  operations: Record<string, OperationSummary[]>;
}

function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // The CLI's own usage telemetry and update check would dial out: both off.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolvePromise() : reject(new Error(`${args.slice(0, 2).join(' ')} failed (${code}):\n${output}`)),
    );
  });
}

/** Fails the build if a page would load anything from another origin. */
export function externalResources(html: string): string[] {
  const found: string[] = [];
  const pattern = /<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*["']?((?:https?:)?\/\/[^"'\s>]+)/gi;
  for (const match of html.matchAll(pattern)) {
    const [, tag, , url] = match;
    if (tag!.toLowerCase() === 'link' && !/rel=["']?(stylesheet|preload|icon|modulepreload)/i.test(match[0])) continue;
    found.push(url!);
  }
  for (const match of html.matchAll(/@import\s+url\(["']?((?:https?:)?\/\/[^"')]+)/gi)) found.push(match[1]!);
  return found;
}

/**
 * Redoc's "API docs by" badge loads its logo from cdn.redoc.ly; the site must not dial out, so the
 * badge shows this local text mark instead (the attribution link stays).
 */
const REDOCLY_BADGE = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="16" viewBox="0 0 64 16">' +
    '<text x="0" y="12" font-family="sans-serif" font-size="12" font-weight="600" fill="#0044d4">Redocly</text></svg>',
)}`;

/** The generated x-codeSamples (scripts/gen/code-samples.ts) are labelled curl and SDK: the tabs of the reference. */
const CODE_SAMPLE_LANGUAGES = { languages: [{ lang: 'curl' }, { lang: 'typescript', label: 'SDK' }] };

async function buildReference(root: string, outDir: string, api: string, page: string, title: string): Promise<void> {
  const cli = join(root, 'node_modules/@redocly/cli/bin/cli.js');
  const output = join(outDir, page);
  await run(
    process.execPath,
    [
      cli,
      'build-docs',
      join(root, 'generated', `${api}.openapi.json`),
      ...['-o', output, '--title', title],
      // Embed the Redoc bundle instead of loading it from the Redocly CDN.
      '--inlineBundle',
      // Redoc 3 otherwise sends page telemetry to otel.cloud.redocly.com.
      '--openapi.disableTelemetry=true',
    ],
    root,
  );
  const html = (await readFile(output, 'utf8'))
    .replace(/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(?:-full)?\.svg/g, REDOCLY_BADGE)
    // The CLI takes no list options on its command line: the code-sample languages go in here.
    .replace(/const __redoc_options = \{/, `const __redoc_options = {"codeSamples":${JSON.stringify(CODE_SAMPLE_LANGUAGES)},`);
  if (!html.includes('"codeSamples":{"languages"')) throw new Error(`${page}: could not set the code-sample languages`);
  await writeFile(output, html);
  const external = externalResources(html);
  if (external.length > 0) throw new Error(`${page} loads external resources: ${external.join(', ')}`);
}

function layoutPage(layout: string, title: string, content: string, root = ''): string {
  return layout
    .replaceAll('{{title}}', escapeHtml(title))
    .replaceAll('{{root}}', root)
    .replace('{{content}}', () => content);
}

/** Tables generated from the spec's facts, for `<!-- generated: name -->` lines of the pages. */
function generatedTables(apis: { doc: ApiDocument }[]): Record<string, string> {
  const limits = apis
    .map(({ doc }) => {
      const base = new URL(doc.servers?.[0]?.url ?? '/', 'http://site.invalid').pathname.replace(/\/$/, '');
      return `${doc.info.title}:\n\n${rateLimitTable(readRateLimits(doc as unknown as OpenApiDocument), base)}`;
    })
    .join('\n\n');
  return { 'rate-limits': limits };
}

/**
 * `<!-- include: path -->` lines become a code block with that file's text, and
 * `<!-- generated: name -->` lines a table generated from the spec, so nothing is copied.
 */
async function expandIncludes(root: string, source: string, format: 'markdown' | 'html', tables: Record<string, string> = {}): Promise<string> {
  const lines = await Promise.all(
    source.split('\n').map(async (line) => {
      const generated = /^<!-- generated: (\S+) -->$/.exec(line.trim());
      if (generated) {
        const table = tables[generated[1]!];
        if (table === undefined) throw new Error(`no generated table named ${generated[1]}`);
        return table;
      }
      const include = /^<!-- include: (\S+) -->$/.exec(line.trim());
      if (!include) return line;
      const path = include[1]!;
      const text = (await readFile(join(root, path), 'utf8')).trimEnd();
      const lang = path.split('.').pop() ?? '';
      if (format === 'html') return `<pre><code class="language-${lang}">${escapeHtml(text)}</code></pre>`;
      return '```' + lang + '\n' + text + '\n```';
    }),
  );
  return lines.join('\n');
}

function indexPage(apis: { name: string; page: string; doc: ApiDocument; ops: OperationSummary[] }[]): string {
  const cards = apis.map(({ page, doc, ops }) => {
    const items = ops
      .map((op) => `<li><span class="method">${op.method}</span> <code>${escapeHtml(op.path)}</code> ${escapeHtml(op.summary)}</li>`)
      .join('');
    return `<section class="card"><h2><a href="${page}">${escapeHtml(doc.info.title)}</a> <small>v${escapeHtml(doc.info.version)}</small></h2>
<p>${ops.length} operations · <a href="openapi/${page.replace('.html', '.openapi.yaml')}">OpenAPI (YAML)</a> · <a href="openapi/${page.replace('.html', '.openapi.json')}">JSON</a></p>
<ul class="ops">${items}</ul></section>`;
  });
  return `<h1>Backup service documentation</h1>
<p>Two HTTP/JSON APIs, described first in OpenAPI 3.1: the <strong>Backup API</strong> (token-authenticated backup
and restore jobs) and the <strong>public tools API</strong> (site check, IP info, newsletter, contact forms).</p>
<ul>
<li><a href="getting-started.html">Getting started</a>: from <code>npm install</code> of the SDK to a working screen, against the mock, then the server.</li>
<li><a href="errors.html">Errors</a>: every error code, its status, what it means and what a client should do.</li>
<li><a href="changelog.html">Changelog</a>: what changed between the released versions of both APIs.</li>
<li><a href="mock.html">The mock</a>: what <code>npm run mock</code> answers and where it differs from the server.</li>
<li><a href="example/index.html">Frontend example</a>: the SDK in a browser page, against the mock or the server.</li>
</ul>
<div class="cards">${cards.join('\n')}</div>`;
}

export async function buildDocs(options: { root?: string; outDir?: string } = {}): Promise<BuildResult> {
  const root = options.root ?? projectRoot;
  const outDir = resolve(options.outDir ?? join(root, 'docs/site'));
  await rm(outDir, { recursive: true, force: true });
  await mkdir(join(outDir, 'openapi'), { recursive: true });
  const layout = await readFile(join(root, 'docs/site-src/layout.html'), 'utf8');
  const pages: string[] = [];

  const apis = [];
  for (const { name, page } of API_PAGES) {
    const doc = JSON.parse(await readFile(join(root, 'generated', `${name}.openapi.json`), 'utf8')) as ApiDocument;
    await buildReference(root, outDir, name, page, `${doc.info.title} reference`);
    for (const ext of ['json', 'yaml']) {
      await copyFile(join(root, 'generated', `${name}.openapi.${ext}`), join(outDir, 'openapi', `${name}.openapi.${ext}`));
    }
    apis.push({ name, page, doc, ops: listOperations(doc) });
    pages.push(page);
  }

  await writeFile(join(outDir, 'index.html'), layoutPage(layout, 'Documentation', indexPage(apis)));
  pages.push('index.html');

  const withBase = apis.map(({ doc }) => ({ doc: doc as unknown as Record<string, unknown>, basePath: new URL(doc.servers?.[0]?.url ?? '/', 'http://site.invalid').pathname.replace(/\/$/, '') }));
  await writeFile(join(outDir, 'errors.html'), layoutPage(layout, 'Errors', errorsPage(withBase)));
  pages.push('errors.html');
  await writeFile(join(outDir, 'changelog.html'), layoutPage(layout, 'Changelog', renderMarkdown(await changelogMarkdown(root)).html));
  pages.push('changelog.html');

  const tables = generatedTables(apis);
  for (const name of MARKDOWN_PAGES) {
    const source = await expandIncludes(root, await readFile(join(root, 'docs', `${name}.md`), 'utf8'), 'markdown', tables);
    // Links between the Markdown pages point at their built HTML.
    const { html, headings } = renderMarkdown(source.replace(/\]\((?!https?:)([\w-]+)\.md(#[\w-]*)?\)/g, ']($1.html$2)'));
    const title = headings.find((h) => h.level === 1)?.text ?? name;
    await writeFile(join(outDir, `${name}.html`), layoutPage(layout, title, html));
    pages.push(`${name}.html`);
  }

  await mkdir(join(outDir, 'example/vendor'), { recursive: true });
  await compileForBrowser(root, await importClosure(root, SDK_ENTRY), join(outDir, 'example/js'));
  await copyFile(join(root, 'node_modules/openapi-fetch/dist/index.mjs'), join(outDir, 'example/vendor/openapi-fetch.mjs'));
  const example = await expandIncludes(root, await readFile(join(root, 'docs/site-src/example.html'), 'utf8'), 'html');
  await writeFile(join(outDir, 'example/index.html'), layoutPage(layout, 'Frontend example', example, '../'));
  await copyFile(join(root, 'docs/site-src/example-page.js'), join(outDir, 'example/example-page.js'));
  pages.push('example/index.html');

  await copyFile(join(root, 'docs/site-src/styles.css'), join(outDir, 'styles.css'));
  return { outDir, pages, operations: Object.fromEntries(apis.map((a) => [a.name, a.ops])) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const result = await buildDocs({ outDir: values.out });
  const count = Object.values(result.operations).reduce((n, ops) => n + ops.length, 0);
  process.stdout.write(`Docs built in ${result.outDir}: ${result.pages.length} pages, ${count} operations.\n`);
}
