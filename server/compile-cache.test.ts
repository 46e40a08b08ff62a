import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { COMPILE_CACHE_DIR } from './compile-cache.ts';

it('npm start names the compile cache that useCompileCache turns on (for its entry module, read before any code runs)', () => {
  const root = join(import.meta.dirname, '..');
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const dir = /\benv(?: \w+=\S+)* NODE_COMPILE_CACHE=(\S+)/.exec(start)?.[1];
  expect(dir && resolve(root, dir)).toBe(COMPILE_CACHE_DIR);
});
