import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

/** Every TypeScript source file (tests excluded) under the given top-level folders. */
function sources(...tops: string[]): Array<{ path: string; text: string }> {
  const out: Array<{ path: string; text: string }> = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== 'fixtures' && e.name !== 'dist') walk(p);
      } else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
        out.push({ path: relative(ROOT, p), text: readFileSync(p, 'utf8') });
      }
    }
  };
  for (const top of tops) if (existsSync(join(ROOT, top))) walk(join(ROOT, top));
  return out;
}

// The product's code; test harnesses (contract-tests/, *.test.ts) may play another process holding a database lock.
const code = sources('server', 'scripts', 'bench', 'sdk', 'checks', 'mock');

describe('the seam between the server and its stores', () => {
  it('lets only the store implementations import a database driver', () => {
    const drivers = /from ['"](node:sqlite|pg|pg-[a-z-]+|postgres|better-sqlite3)['"]|import\(['"](node:sqlite|pg)['"]\)/;
    const importers = code.filter((f) => drivers.test(f.text)).map((f) => f.path);
    expect(importers.length).toBeGreaterThan(0);
    expect(importers.filter((p) => !p.startsWith('server/store/sqlite/') && !p.startsWith('server/store/postgres/'))).toEqual([]);
  });

  it('lets only the job state machine call the compare-and-set of job status', () => {
    const callers = code.filter((f) => /\.transition\(/.test(f.text)).map((f) => f.path);
    expect(callers).toEqual(['server/jobs/state.ts']);
  });

  it('keeps SQL in the store and store internals out of everything else', () => {
    const sql = /\b(SELECT\s+[\w*]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/;
    const outside = code.filter((f) => !f.path.startsWith('server/store/') && sql.test(f.text)).map((f) => f.path);
    expect(outside).toEqual([]);
    // The server and the keys command open a store only through store/index.ts; tests and the
    // instances benchmark may open one implementation or the other directly, to compare them.
    const internals = code.filter((f) => f.path.startsWith('server/') && !f.path.startsWith('server/store/') && /\bstore\.db\b|store\/(sql|sqlite|postgres)\//.test(f.text));
    expect(internals.map((f) => f.path)).toEqual([]);
  });
});
