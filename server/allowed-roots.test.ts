import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confine } from './allowed-roots.ts';

describe('confine', () => {
  let base: string;
  let root: string;
  let outside: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), 'confine-')));
    root = join(base, 'root');
    outside = join(base, 'outside');
    mkdirSync(join(root, 'docs'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(root, 'docs', 'a.txt'), 'a');
    writeFileSync(join(outside, 'secret.txt'), 's');
    symlinkSync(outside, join(root, 'escape'));
    symlinkSync(join(root, 'docs'), join(root, 'inner-link'));
    symlinkSync(join(base, 'nowhere'), join(root, 'dangling'));
    symlinkSync(join(root, 'loop'), join(root, 'loop'));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('allows existing paths inside a root', async () => {
    expect(await confine(join(root, 'docs'), [root])).toEqual({ allowed: true, resolved: join(root, 'docs'), exists: true, isDirectory: true });
    expect(await confine(join(root, 'docs', 'a.txt'), [root])).toMatchObject({ allowed: true, exists: true, isDirectory: false });
    expect(await confine(root, [root])).toMatchObject({ allowed: true, exists: true });
  });

  it('follows symlinks that stay inside', async () => {
    expect(await confine(join(root, 'inner-link'), [root])).toMatchObject({ allowed: true, resolved: join(root, 'docs') });
  });

  it('reports missing paths inside a root as not existing', async () => {
    expect(await confine(join(root, 'docs', 'new', 'deeper'), [root])).toEqual({ allowed: true, resolved: join(root, 'docs', 'new', 'deeper'), exists: false, isDirectory: false });
  });

  it('refuses .. escapes, symlink escapes and outside paths alike, existing or not', async () => {
    for (const p of [
      join(root, '..', 'outside'),
      `${root}/docs/../../outside/secret.txt`,
      join(root, 'escape'),
      join(root, 'escape', 'secret.txt'),
      join(root, 'escape', 'missing.txt'),
      join(outside, 'missing'),
      '/etc/passwd',
      '/',
      join(root, 'dangling'),
      join(root, 'dangling', 'x'),
      join(root, 'loop'),
      'relative/path',
      `${root}/docs\0`,
      `${root}-sibling`,
    ]) {
      expect(await confine(p, [root]), p).toEqual({ allowed: false });
    }
  });

  it('checks against every root and nothing when there are no roots', async () => {
    expect(await confine(join(outside, 'secret.txt'), [root, outside])).toMatchObject({ allowed: true });
    expect(await confine(join(root, 'docs'), [])).toEqual({ allowed: false });
  });

  it('resolves a root given through a symlink', async () => {
    const link = join(base, 'root-link');
    symlinkSync(root, link);
    expect(await confine(join(root, 'docs'), [link])).toMatchObject({ allowed: true });
    expect(await confine(join(link, 'docs'), [root])).toMatchObject({ allowed: true, resolved: join(root, 'docs') });
  });

  it('refuses paths inside the excluded data directory, or containing it', async () => {
    const data = join(root, 'data');
    mkdirSync(join(data, 'secrets'), { recursive: true });
    expect(await confine(join(data, 'secrets'), [root], [data])).toEqual({ allowed: false });
    expect(await confine(data, [root], [data])).toEqual({ allowed: false });
    expect(await confine(root, [root], [data])).toEqual({ allowed: false });
    expect(await confine(join(root, 'docs'), [root], [data])).toMatchObject({ allowed: true });
    expect(await confine(`${data}-other`, [root], [data])).toMatchObject({ allowed: true });
  });
});
