// Builds the docs site, serves it on loopback and opens it in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core): every operation renders, the pages load, the
// frontend example runs against the mock, and no request leaves loopback.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock, type RunningMock } from '../mock/start.ts';
import { errorCatalogue } from '../generated/error-catalogue.ts';
import { startHarness, type Harness } from '../server/testing/harness.ts';
import { buildDocs, externalResources, type BuildResult } from './build-docs.ts';
import { slug } from './docs/markdown.ts';
import { serveDirectory } from './docs/static-server.ts';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let work: string;
let built: BuildResult;
let site: { origin: string; close(): Promise<void> };
let mock: RunningMock;
let server: Harness;
let context: BrowserContext;
const KEY = { apiKey: 'key_docs_example', secret: 'docs-example-secret-0123456789' };
const requested: string[] = [];
const pageErrors: string[] = [];

function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  if (['data:', 'blob:', 'about:', 'chrome:', 'chrome-extension:'].includes(protocol)) return true;
  return ['127.0.0.1', 'localhost', '[::1]'].includes(hostname);
}

async function open(path: string): Promise<Page> {
  const page = await context.newPage();
  page.on('request', (request) => requested.push(request.url()));
  page.on('pageerror', (error) => pageErrors.push(`${path}: ${error.message}`));
  const response = await page.goto(`${site.origin}/${path}`, { waitUntil: 'load' });
  expect(response?.status(), path).toBe(200);
  return page;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'docs-test-'));
  built = await buildDocs({ outDir: join(work, 'site') });
  site = await serveDirectory(built.outDir);
  mock = await startMock({ backupPort: 0, toolsPort: 0, jobSeconds: 1 });
  // The real server lets the docs site's origin call it from the browser.
  server = await startHarness({ CORS_ORIGINS: site.origin, BACKUP_BOOTSTRAP_API_KEY: KEY.apiKey, BACKUP_BOOTSTRAP_SECRET: KEY.secret });
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
  });
  // Anything that tries to leave loopback is recorded (above) and refused here.
  await context.route(
    (url) => !isLoopback(url.href),
    (route) => route.abort('blockedbyclient'),
  );
}, 120_000);

afterAll(async () => {
  await context?.close();
  await mock?.close();
  await server?.cleanup();
  await site?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('docs site', () => {
  it('builds self-contained reference pages (no CDN)', async () => {
    expect(built.pages).toEqual(
      expect.arrayContaining(['backup.html', 'tools.html', 'index.html', 'getting-started.html', 'mock.html', 'errors.html', 'changelog.html', 'example/index.html']),
    );
    for (const page of built.pages) {
      const html = await readFile(join(built.outDir, page), 'utf8');
      expect(externalResources(html), page).toEqual([]);
    }
    expect(externalResources('<script src="https://cdn.redocly.com/redoc.js"></script>')).toHaveLength(1);
  });

  for (const api of ['backup', 'tools'] as const) {
    it(`renders every operation of the ${api} reference`, async () => {
      const operations = built.operations[api]!;
      expect(operations.length).toBeGreaterThan(3);
      const page = await open(`${api}.html`);
      // Redoc 3 renders one tag at a time, an operation once it is navigated to: visit each.
      for (const op of operations) {
        const anchor = `${slug(op.tag)}/${op.operationId.toLowerCase()}`;
        await page.evaluate(`location.hash = ${JSON.stringify(`#/${anchor}`)}`);
        await page.waitForSelector(`[id="${anchor}"]`);
        const heading = page.locator('#api-content h2', { hasText: op.summary });
        expect(await heading.first().isVisible(), op.operationId).toBe(true);
      }
      // The generated code samples: curl and the SDK (the language chosen last is remembered across pages).
      const first = operations[0]!;
      const firstAnchor = `${slug(first.tag)}/${first.operationId.toLowerCase()}`;
      await page.evaluate(`location.hash = ${JSON.stringify(`#/${firstAnchor}`)}`);
      await page.waitForSelector(`[id="${firstAnchor}"]`);
      await page.getByRole('button', { name: /^(curl|SDK)$/ }).first().click();
      expect(await page.getByRole('menuitem').allInnerTexts()).toEqual(expect.arrayContaining(['curl', 'SDK']));
      await page.getByText('SDK', { exact: true }).first().click();
      await page.getByText(`from '@backup-service/client'`).first().waitFor();
      // Redoc re-renders after the hash change: poll until the first operation's sample shows.
      await expect.poll(() => page.locator('body').innerText(), { timeout: 15_000 })
        .toContain(`await ${api}.${first.method}('${first.path}'`);
      await page.close();
    });
  }

  it('loads the index, getting-started and mock pages', async () => {
    const index = await open('index.html');
    expect(await index.locator('h1').innerText()).toBe('Backup service documentation');
    for (const op of [...built.operations.backup!, ...built.operations.tools!]) {
      expect(await index.locator('body').innerText()).toContain(op.path);
    }
    await index.click('text=Getting started');
    await index.waitForURL(/getting-started\.html$/);
    expect(await index.locator('h1').innerText()).toBe('Getting started');
    const body = await index.locator('main').innerText();
    expect(body).toContain('npm install ../backup-service/sdk/backup-service-client-1.1.0.tgz');
    expect(body).toContain('export async function backupScreen');
    // The rate-limit tables are generated from the spec's x-rate-limit.
    expect(body).toMatch(/5 requests per minute per client address/);
    expect(await index.locator('table').count()).toBeGreaterThanOrEqual(3);
    await index.close();

    const errors = await open('errors.html');
    for (const [code, entry] of Object.entries(errorCatalogue)) {
      const row = errors.locator(`tr[id="${code}"]`);
      expect(await row.count(), code).toBe(1);
      expect(await row.innerText()).toContain(String('status' in entry ? entry.status : '—'));
    }
    expect(await errors.locator('tr[id="INVALID_SOURCE"]').innerText()).toMatch(/POST \/api\/v1\/backup/);
    await errors.close();

    const changelog = await open('changelog.html');
    const log = await changelog.locator('main').innerText();
    expect(log).toMatch(/Backup API/);
    expect(log).toMatch(/1\.0\.0 → 1\.1\.0/);
    expect(log).toMatch(/Enum of `?code`? gained values/);
    await changelog.close();

    const mockPage = await open('mock.html');
    expect(await mockPage.locator('h1').innerText()).toBe('The mock');
    await mockPage.close();
  });

  it('runs the frontend example in the browser against the mock', async () => {
    const page = await open(`example/index.html?api=${encodeURIComponent(mock.backupUrl)}`);
    await page.click('button[type=submit]');
    await page.locator('#status', { hasText: /^(finished|error)/ }).waitFor();
    expect(await page.locator('#status').innerText()).toBe('finished: completed');
    const log = await page.locator('#log').innerText();
    expect(log).toMatch(/bkp_\w+\s+completed/);
    // The calls went to the mock, token first.
    const apiCalls = requested.filter((url) => url.startsWith(mock.backupUrl));
    expect(apiCalls[0]).toBe(`${mock.backupUrl}/auth/token`);
    expect(apiCalls).toContain(`${mock.backupUrl}/backup`);
    await page.close();
  });

  it('runs the same page against the real server on another origin, with only the API URL (and a real key and path) changed', async () => {
    const source = join(server.root, 'documents');
    await mkdir(source, { recursive: true });
    await writeFile(join(source, 'note.txt'), 'from the browser\n');
    const query = new URLSearchParams({ api: `${server.base}/api/v1`, key: KEY.apiKey, secret: KEY.secret, source });
    const page = await open(`example/index.html?${query}`);
    await page.click('button[type=submit]');
    await page.locator('#status', { hasText: /^(finished|error)/ }).waitFor();
    expect(await page.locator('#status').innerText()).toBe('finished: completed');
    expect(requested).toContain(`${server.base}/api/v1/auth/token`);
    await page.close();
  });

  it('made no request outside loopback and raised no page errors', () => {
    expect(requested.length).toBeGreaterThan(5);
    expect(requested.filter((url) => !isLoopback(url))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
