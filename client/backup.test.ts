import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { PUBLIC_PATHS } from './backup.ts';

describe('backup client', () => {
  it('sends no token exactly to the operations the spec leaves unauthenticated', async () => {
    const doc = JSON.parse(await readFile(new URL('../generated/backup.openapi.json', import.meta.url), 'utf8')) as {
      security?: unknown[];
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    const open = Object.entries(doc.paths)
      .filter(([, item]) =>
        Object.values(item).some((op) => typeof op === 'object' && (op.security ?? doc.security ?? []).length === 0),
      )
      .map(([path]) => path);
    expect([...PUBLIC_PATHS].sort()).toEqual(open.sort());
  });
});
