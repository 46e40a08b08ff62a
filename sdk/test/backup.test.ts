import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { needsBearer, SAFE_POSTS as BACKUP_SAFE_POSTS } from '../src/backup.ts';
import { SAFE_POSTS as TOOLS_SAFE_POSTS } from '../src/tools.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

interface Doc {
  security?: unknown[];
  servers: { url: string }[];
  paths: Record<string, Record<string, { security?: unknown[] }>>;
}

async function load(api: string): Promise<Doc> {
  return JSON.parse(await readFile(new URL(`../../generated/${api}.openapi.json`, import.meta.url), 'utf8')) as Doc;
}

function operations(doc: Doc): { method: string; path: string; security: unknown[] }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ method: m, path, security: item[m]!.security ?? doc.security ?? [] })),
  );
}

describe('client operation lists match the spec', () => {
  it('sends no token exactly to the operations the spec leaves unauthenticated', async () => {
    const ops = operations(await load('backup'));
    expect(ops.some((op) => op.security.length === 0)).toBe(true);
    for (const op of ops) {
      const path = op.path.replace(/\{[^}]+\}/g, 'x_1');
      expect(needsBearer(op.method, path), `${op.method} ${op.path}`).toBe(op.security.length > 0);
    }
    expect(needsBearer('get', '/not-in-the-spec')).toBe(true);
  });

  it('names only POST operations that exist as safe to repeat', async () => {
    for (const [api, patterns, prefix] of [
      ['backup', BACKUP_SAFE_POSTS, '/api/v1'],
      ['tools', TOOLS_SAFE_POSTS, ''],
    ] as const) {
      const posts = operations(await load(api))
        .filter((op) => op.method === 'post')
        .map((op) => prefix + op.path.replace(/\{[^}]+\}/g, 'x_1'));
      for (const pattern of patterns) expect(posts.some((p) => pattern.test(p)), `${api} ${pattern}`).toBe(true);
    }
  });
});
