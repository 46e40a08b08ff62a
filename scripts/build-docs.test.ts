// Builds the docs site, serves it on loopback and opens it in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core): every operation renders, the pages load, the
// frontend example runs against the mock, and no request leaves loopback.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock, type RunningMock } from '../mock/start.ts';
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
let context: BrowserContext;
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
  mock = await startMock({ backupPort: 0, toolsPort: 0 });
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
  await site?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('docs site', () => {
  it('builds self-contained reference pages (no CDN)', async () => {
    expect(built.pages).toEqual(
      expect.arrayContaining(['backup.html', 'tools.html', 'index.html', 'getting-started.html', 'mock.html', 'example/index.html']),
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
    expect(body).toContain('createBackupClient');
    expect(body).toContain('export async function createAndPoll');
    expect(await index.locator('table').count()).toBeGreaterThanOrEqual(3);
    await index.close();

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
    expect(log).toMatch(/bkp_\w+\s+queued/);
    expect(log).toMatch(/bkp_\w+\s+completed/);
    // The calls went to the mock, token first.
    const apiCalls = requested.filter((url) => url.startsWith(mock.backupUrl));
    expect(apiCalls[0]).toBe(`${mock.backupUrl}/auth/token`);
    expect(apiCalls).toContain(`${mock.backupUrl}/backup`);
    await page.close();
  });

  it('made no request outside loopback and raised no page errors', () => {
    expect(requested.length).toBeGreaterThan(5);
    expect(requested.filter((url) => !isLoopback(url))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
