import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { tempDir } from '../testing/fixtures.ts';
import { LocalBackend } from './local.ts';

let dir: string;
let cleanup: () => Promise<void>;
let backend: LocalBackend;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-storage-'));
  backend = new LocalBackend(join(dir, 'repo'));
});
afterEach(async () => {
  await cleanup();
});

it('puts, gets, reads ranges, lists, sizes and deletes objects', async () => {
  await backend.put('data/ab/abc', [Buffer.from('hello '), Buffer.from('world')]);
  await backend.put('index/1', [Buffer.from('x')]);
  expect(Buffer.from(await backend.get('data/ab/abc')).toString()).toBe('hello world');
  const r = await backend.openRead('data/ab/abc');
  expect(Buffer.from(await r.read(6, 5)).toString()).toBe('world');
  await expect(r.read(8, 10)).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
  await r.close();
  expect(await backend.list('data')).toEqual(['data/ab/abc']);
  expect(await backend.list('missing')).toEqual([]);
  expect(await backend.size('index/1')).toBe(1);
  expect(await backend.size('index/2')).toBeNull();
  await backend.delete('index/1');
  await backend.delete('index/1');
  expect(await backend.list('index')).toEqual([]);
});

it('replaces on put, leaves no temp files, and never lists temps', async () => {
  await backend.put('snapshots/s', [Buffer.from('one')]);
  await backend.put('snapshots/s', [Buffer.from('two')]);
  expect(Buffer.from(await backend.get('snapshots/s')).toString()).toBe('two');
  expect(await readdir(join(dir, 'repo', 'snapshots'))).toEqual(['s']);
  await writeFile(join(dir, 'repo', 'snapshots', '.s.tmp-123'), 'half written');
  expect(await backend.list('snapshots')).toEqual(['snapshots/s']);
});

it('create succeeds once and then reports the object exists', async () => {
  expect(await backend.create('config', [Buffer.from('a')])).toBe(true);
  expect(await backend.create('config', [Buffer.from('b')])).toBe(false);
  expect(Buffer.from(await backend.get('config')).toString()).toBe('a');
  expect(await readdir(join(dir, 'repo'))).toEqual(['config']);
});

it('rejects names that would leave the repository', async () => {
  await expect(backend.put('../escape', [Buffer.from('x')])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  await expect(backend.get('data//x')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
});
