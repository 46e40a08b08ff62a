import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { listAll, type Backend } from './backend.ts';
import { ObjectNotFoundError } from './errors.ts';

/**
 * The conformance suite every Backend passes (restic's internal/backend/test is the model). Each
 * implementation's test file calls it with a factory for an empty backend of its kind.
 */
export function backendSuite(kind: string, open: () => Promise<{ backend: Backend; cleanup: () => Promise<void> }>): void {
  const withBackend = (fn: (b: Backend) => Promise<void>) => async () => {
    const { backend, cleanup } = await open();
    try {
      await fn(backend);
    } finally {
      await cleanup();
    }
  };

  describe(`${kind} backend conformance`, () => {
    it('saves from parts, loads whole and by range, stats and removes', withBackend(async (b) => {
      expect(await b.save('data/ab/abc', [Buffer.from('hello '), Buffer.from('world')])).toBe(true);
      expect(Buffer.from(await b.load('data/ab/abc')).toString()).toBe('hello world');
      expect(Buffer.from(await b.load('data/ab/abc', { offset: 6, length: 5 })).toString()).toBe('world');
      expect(Buffer.from(await b.load('data/ab/abc', { offset: 0, length: 0 })).length).toBe(0);
      const info = await b.stat('data/ab/abc');
      expect(info).toMatchObject({ name: 'data/ab/abc', size: 11 });
      expect(info.modified).toBeInstanceOf(Date);
      await b.remove('data/ab/abc');
      await b.remove('data/ab/abc'); // removing what is gone is not an error
      await expect(b.load('data/ab/abc')).rejects.toBeInstanceOf(ObjectNotFoundError);
    }));

    it('reports a missing object as its own not-found error, everywhere', withBackend(async (b) => {
      await expect(b.load('index/none')).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(b.load('index/none', { offset: 0, length: 1 })).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(b.stat('index/none')).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await listAll(b, 'missing/')).toEqual([]);
    }));

    it('refuses a range past the end', withBackend(async (b) => {
      await b.save('index/short', [Buffer.from('12345')]);
      await expect(b.load('index/short', { offset: 3, length: 5 })).rejects.toBeInstanceOf(RangeError);
    }));

    it('replaces on a plain save and never on ifAbsent', withBackend(async (b) => {
      await b.save('snapshots/s', [Buffer.from('one')]);
      await b.save('snapshots/s', [Buffer.from('two')]);
      expect(Buffer.from(await b.load('snapshots/s')).toString()).toBe('two');
      expect(await b.save('config', [Buffer.from('a')], { ifAbsent: true })).toBe(true);
      expect(await b.save('config', [Buffer.from('b')], { ifAbsent: true })).toBe(false);
      expect(Buffer.from(await b.load('config')).toString()).toBe('a');
    }));

    it('lets exactly one of many concurrent ifAbsent saves win', withBackend(async (b) => {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => b.save('config', [Buffer.from(`writer ${i}`)], { ifAbsent: true })));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect(Buffer.from(await b.load('config')).toString()).toBe(`writer ${winner}`);
    }));

    it('lists by prefix, recursively, with sizes, and only complete objects', withBackend(async (b) => {
      await b.save('data/00/a', [Buffer.alloc(3)]);
      await b.save('data/ff/b', [Buffer.alloc(5)]);
      await b.save('index/i', [Buffer.alloc(1)]);
      const data = await listAll(b, 'data/');
      expect(data.map((o) => [o.name, o.size])).toEqual([['data/00/a', 3], ['data/ff/b', 5]]);
      expect((await listAll(b, 'index/')).map((o) => o.name)).toEqual(['index/i']);
      expect((await listAll(b, 'data/0')).map((o) => o.name)).toEqual(['data/00/a']);
    }));

    it('lists many objects completely', withBackend(async (b) => {
      const names = Array.from({ length: 1200 }, (_, i) => `index/${String(i).padStart(5, '0')}`);
      for (let i = 0; i < names.length; i += 100) await Promise.all(names.slice(i, i + 100).map((n) => b.save(n, [Buffer.from(n)])));
      const listed = await listAll(b, 'index/');
      expect(listed.map((o) => o.name)).toEqual(names);
    }));

    it('keeps concurrent writers of different objects apart', withBackend(async (b) => {
      const payloads = Array.from({ length: 16 }, () => randomBytes(64 * 1024));
      await Promise.all(payloads.map((p, i) => b.save(`data/${String(i).padStart(2, '0')}/obj`, [p])));
      for (const [i, p] of payloads.entries()) expect(Buffer.from(await b.load(`data/${String(i).padStart(2, '0')}/obj`)).equals(p)).toBe(true);
    }));

    it('stores a large object from many parts and reads ranges of it', withBackend(async (b) => {
      const parts = Array.from({ length: 1500 }, () => randomBytes(16 * 1024)); // 24 MiB in more parts than one writev takes
      const whole = Buffer.concat(parts);
      await b.save('data/bb/large', parts);
      expect((await b.stat('data/bb/large')).size).toBe(whole.length);
      const at = 17 * 1024 * 1024 + 5;
      expect(Buffer.from(await b.load('data/bb/large', { offset: at, length: 4096 })).equals(whole.subarray(at, at + 4096))).toBe(true);
      expect(Buffer.from(await b.load('data/bb/large')).equals(whole)).toBe(true);
    }));

    it('rejects names that are not clean relative paths', withBackend(async (b) => {
      for (const bad of ['../escape', 'data//x', './config', '', 'a/../b']) {
        await expect(b.save(bad, [Buffer.from('x')])).rejects.toBeInstanceOf(TypeError);
        await expect(b.load(bad)).rejects.toBeInstanceOf(TypeError);
      }
    }));
  });
}
