import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { LocalBackend } from './local.ts';
import { backendSuite } from './suite.ts';

async function open(): Promise<{ backend: LocalBackend; dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'local-backend-'));
  return { backend: new LocalBackend(join(dir, 'repo')), dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

backendSuite('local', open);

it('creates files 0600 and directories 0700, and leaves no temp behind', async () => {
  const { backend, dir, cleanup } = await open();
  try {
    await backend.save('data/ab/x', [Buffer.from('x')]);
    await backend.save('data/ab/x', [Buffer.from('y')], { ifAbsent: true });
    expect((await stat(join(dir, 'repo', 'data', 'ab', 'x'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'repo', 'data', 'ab'))).mode & 0o777).toBe(0o700);
    expect(await readdir(join(dir, 'repo', 'data', 'ab'))).toEqual(['x']);
  } finally {
    await cleanup();
  }
});
