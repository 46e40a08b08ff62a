import { lstat, mkdir, symlink, writeFile } from 'node:fs/promises';
import { closeSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { decodeListing, listDirectory } from './listing.ts';
import { SCAN_THREAD, startScan } from './scan.ts';
import type { Scan } from './scan.ts';
import { DIR_FLAGS } from './source.ts';
import { tempDir } from './testing/fixtures.ts';

let dir: string;
let cleanup: () => Promise<void>;
let scan: Scan | null = null;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
});
afterEach(async () => {
  scan?.stop();
  await cleanup();
});

async function key(path: string): Promise<{ dev: bigint; ino: bigint }> {
  const st = await lstat(path, { bigint: true });
  return { dev: st.dev, ino: st.ino };
}

it('counts the files and hands over each directory listed as a worker lists it, once', async () => {
  const src = join(dir, 'src');
  for (const d of ['a/b', 'c']) await mkdir(join(src, d), { recursive: true });
  for (const d of ['a', 'a/b', 'c']) for (let i = 0; i < 3; i++) await writeFile(join(src, d, `f${i}`), 'x'.repeat(10 * (i + 1)));
  await symlink('../c', join(src, 'a/link'));
  const totals = new Promise<[number, number]>((resolve) => {
    scan = startScan(src, (files, bytes) => resolve([files, bytes]));
  });
  expect(await totals).toEqual([9, 180]);
  for (const d of ['', 'a', 'a/b', 'c']) {
    const data = await scan!.listing(await key(join(src, d)));
    expect(data).not.toBeNull();
    const fd = openSync(join(src, d), DIR_FLAGS);
    const own = listDirectory(fd);
    closeSync(fd);
    if ('error' in own) throw new Error(own.error);
    expect(decodeListing(data!)).toEqual(decodeListing(own.data));
  }
  expect(await scan!.listing(await key(join(src, 'a')))).toBeNull(); // handed over already
  expect(await scan!.listing(await key(dir))).toBeNull(); // not under the source
  scan!.stop();
  expect(await scan!.listing(await key(join(src, 'c')))).toBeNull(); // stopped: the backup lists itself
});

it('ends its thread once the walk is done, and the listings it kept are still handed over', async () => {
  const src = join(dir, 'src');
  for (const d of ['a', 'b']) await mkdir(join(src, d), { recursive: true });
  for (const d of ['a', 'b']) await writeFile(join(src, d, 'f'), d);
  const scanThreads = (): number => readdirSync('/proc/self/task').filter((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === SCAN_THREAD).length;
  const totals = new Promise<[number, number]>((resolve) => {
    scan = startScan(src, (files, bytes) => resolve([files, bytes]));
  });
  expect(await totals).toEqual([2, 2]);
  for (let waited = 0; scanThreads() > 0 && waited < 10_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
  expect(scanThreads()).toBe(0); // the scan's thread is gone: what follows comes from the listings it handed over
  for (const d of ['b', '', 'a']) expect(decodeListing((await scan!.listing(await key(join(src, d))))!).map((e) => Buffer.from(e.name).toString())).toEqual(d === '' ? ['a', 'b'] : ['f']);
  expect(await scan!.listing(await key(join(src, 'a')))).toBeNull(); // handed over already
});
