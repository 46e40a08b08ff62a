import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { listAll, type Backend, type ObjectWriter } from './backend.ts';
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

    it('never shows part of an object: a reader polling during a large save sees nothing or all of it', withBackend(async (b) => {
      const parts = Array.from({ length: 32 }, () => randomBytes(1024 * 1024));
      const whole = Buffer.concat(parts);
      let done = false;
      const observations = { absent: 0, whole: 0 };
      const poll = (async () => {
        while (!done) {
          const listed = (await listAll(b, 'data/cc/')).find((o) => o.name === 'data/cc/big');
          if (listed) expect(listed.size).toBe(whole.length);
          else observations.absent++;
          try {
            const info = await b.stat('data/cc/big');
            expect(info.size).toBe(whole.length);
            const tail = Buffer.from(await b.load('data/cc/big', { offset: whole.length - 4096, length: 4096 }));
            expect(tail.equals(whole.subarray(whole.length - 4096))).toBe(true);
            observations.whole++;
          } catch (err) {
            if (!(err instanceof ObjectNotFoundError)) throw err;
            observations.absent++;
          }
        }
      })();
      try {
        await b.save('data/cc/big', parts);
      } finally {
        done = true;
        await poll;
      }
      expect(observations.absent).toBeGreaterThan(0); // the reader did look while the save ran
      expect(Buffer.from(await b.load('data/cc/big')).equals(whole)).toBe(true);
    }));

    it('reads ranges anywhere, up to the last byte, and stats the latest write', withBackend(async (b) => {
      const bytes = randomBytes(100_000);
      await b.save('index/r', [bytes.subarray(0, 30_000), bytes.subarray(30_000)]);
      for (const [offset, length] of [[0, 1], [29_999, 2], [99_999, 1], [0, 100_000], [50_000, 50_000]] as const) {
        expect(Buffer.from(await b.load('index/r', { offset, length })).equals(bytes.subarray(offset, offset + length))).toBe(true);
      }
      await b.save('index/r', [bytes.subarray(0, 10)]);
      expect((await b.stat('index/r')).size).toBe(10);
      expect((await listAll(b, 'index/')).map((o) => [o.name, o.size])).toEqual([['index/r', 10]]);
      await b.remove('index/r');
      expect(await listAll(b, 'index/')).toEqual([]);
    }));

    it('keeps names with every character the engine uses', withBackend(async (b) => {
      const names = ['config', 'keys/0123abcd', 'data/00/0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0', 'snapshots/01M7W3SPMRMFAYEKW7NHTX8GH8', 'a-b_c.d/e~f'];
      for (const n of names) await b.save(n, [Buffer.from(n)]);
      for (const n of names) expect(Buffer.from(await b.load(n)).toString()).toBe(n);
      expect((await listAll(b, '')).map((o) => o.name).sort()).toEqual([...names].sort());
    }));

    describe('objects written piece by piece (create)', () => {
      /** Writes `parts` to a new object without waiting for each write (a writer that saves whole objects resolves them at the commit). */
      const writeAll = (o: ObjectWriter, parts: readonly Uint8Array[]): Promise<void>[] => parts.map((p) => o.write(p));

      it('commits the parts in order under the name given at the end, every write resolved', withBackend(async (b) => {
        const parts = [Buffer.from('hello '), Buffer.alloc(0), Buffer.from('piece'), Buffer.from(' by piece')];
        const o = b.create();
        const writes = writeAll(o, parts);
        await o.commit('data/ab/streamed');
        let resolved = 0;
        await Promise.all(writes.map((w) => w.then(() => resolved++)));
        expect(resolved).toBe(parts.length);
        expect(Buffer.from(await b.load('data/ab/streamed')).toString()).toBe('hello piece by piece');
        expect(Buffer.from(await b.load('data/ab/streamed', { offset: 6, length: 5 })).toString()).toBe('piece');
        expect(await b.stat('data/ab/streamed')).toMatchObject({ name: 'data/ab/streamed', size: 20 });
        expect((await listAll(b, '')).map((o) => o.name)).toEqual(['data/ab/streamed']);
        await o.abort(); // after a commit: nothing to drop, and the object stays
        expect((await b.stat('data/ab/streamed')).size).toBe(20);
      }));

      it('shows nothing under any name before the commit, and nothing at all after an abort', withBackend(async (b) => {
        const o = b.create();
        const writes = writeAll(o, [randomBytes(3 * 1024 * 1024), randomBytes(1000)]);
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(await listAll(b, '')).toEqual([]);
        await o.abort();
        await Promise.all(writes);
        expect(await listAll(b, '')).toEqual([]);
        await expect(o.commit('data/00/never')).rejects.toThrow();
        await expect(b.stat('data/00/never')).rejects.toBeInstanceOf(ObjectNotFoundError);
        expect(await listAll(b, '')).toEqual([]);
      }));

      it('stores a large object from many writes, replacing one of that name, and reads ranges of it', withBackend(async (b) => {
        await b.save('data/bb/large', [Buffer.from('old')]);
        const parts = Array.from({ length: 1500 }, () => randomBytes(16 * 1024)); // 24 MiB
        const whole = Buffer.concat(parts);
        const o = b.create();
        const writes = writeAll(o, parts);
        await o.commit('data/bb/large');
        await Promise.all(writes);
        expect((await b.stat('data/bb/large')).size).toBe(whole.length);
        const at = 17 * 1024 * 1024 + 5;
        expect(Buffer.from(await b.load('data/bb/large', { offset: at, length: 4096 })).equals(whole.subarray(at, at + 4096))).toBe(true);
        expect(Buffer.from(await b.load('data/bb/large')).equals(whole)).toBe(true);
      }));

      it('keeps concurrent writers apart, writes of each interleaved with the others', withBackend(async (b) => {
        const payloads = Array.from({ length: 8 }, () => Array.from({ length: 8 }, () => randomBytes(32 * 1024)));
        const writers = payloads.map(() => b.create());
        const writes: Promise<void>[] = [];
        for (let k = 0; k < 8; k++) for (const [i, o] of writers.entries()) writes.push(o.write(payloads[i]![k]!));
        await Promise.all(writers.map((o, i) => o.commit(`data/${String(i).padStart(2, '0')}/obj`)));
        await Promise.all(writes);
        for (const [i, parts] of payloads.entries()) expect(Buffer.from(await b.load(`data/${String(i).padStart(2, '0')}/obj`)).equals(Buffer.concat(parts))).toBe(true);
      }));

      it('commits an empty object', withBackend(async (b) => {
        const o = b.create();
        await o.commit('index/empty');
        expect((await b.stat('index/empty')).size).toBe(0);
      }));

      it('never shows part of it: a reader polling while it is written and committed sees nothing or all of it', withBackend(async (b) => {
        const parts = Array.from({ length: 32 }, () => randomBytes(1024 * 1024));
        const whole = Buffer.concat(parts);
        let done = false;
        const seen = { absent: 0, whole: 0 };
        const poll = (async () => {
          while (!done) {
            for (const listed of await listAll(b, '')) expect([listed.name, listed.size]).toEqual(['data/cc/big', whole.length]);
            try {
              const info = await b.stat('data/cc/big');
              expect(info.size).toBe(whole.length);
              const tail = Buffer.from(await b.load('data/cc/big', { offset: whole.length - 4096, length: 4096 }));
              expect(tail.equals(whole.subarray(whole.length - 4096))).toBe(true);
              seen.whole++;
            } catch (err) {
              if (!(err instanceof ObjectNotFoundError)) throw err;
              seen.absent++;
            }
          }
        })();
        try {
          const o = b.create();
          for (const p of parts) {
            void o.write(p);
            await new Promise((resolve) => setImmediate(resolve)); // the pieces come over time, as a pack's do
          }
          await o.commit('data/cc/big');
        } finally {
          done = true;
          await poll;
        }
        expect(seen.absent).toBeGreaterThan(0);
        expect(Buffer.from(await b.load('data/cc/big')).equals(whole)).toBe(true);
      }));

      it('refuses a name that is not a clean relative path at the commit, leaving nothing', withBackend(async (b) => {
        const o = b.create();
        void o.write(Buffer.from('x'));
        await expect(o.commit('../escape')).rejects.toBeInstanceOf(TypeError);
        await o.abort();
        expect(await listAll(b, '')).toEqual([]);
      }));
    });

    it('rejects names that are not clean relative paths', withBackend(async (b) => {
      for (const bad of ['../escape', 'data//x', './config', '', 'a/../b']) {
        await expect(b.save(bad, [Buffer.from('x')])).rejects.toBeInstanceOf(TypeError);
        await expect(b.load(bad)).rejects.toBeInstanceOf(TypeError);
      }
    }));
  });
}
