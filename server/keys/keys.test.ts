import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import { runKeysCli } from '../keys-cli.ts';
import { openStore, SHARED_SECRETS } from '../store/index.ts';
import { startHarness } from '../testing/harness.ts';
import { readKeyFile, writeKeyFile } from './key-file.ts';
import { fingerprint, KeyUnwrapError, unwrapKey, wrapKey } from './master-key.ts';
import { loadKeySettings } from './settings.ts';
import { SecretMismatchError } from './shared-secrets.ts';

describe('repository keys wrapped by the master key', () => {
  const master = randomBytes(32);
  const key = randomBytes(32);

  it('open only with the same master key, for the same account and destination, untampered', () => {
    const wrapped = wrapKey(master, key, 'acc_1', 'cloud');
    expect(unwrapKey(master, wrapped, 'acc_1', 'cloud').equals(key)).toBe(true);
    expect(wrapped.includes(key)).toBe(false);
    expect(() => unwrapKey(randomBytes(32), wrapped, 'acc_1', 'cloud')).toThrow(KeyUnwrapError);
    expect(() => unwrapKey(master, wrapped, 'acc_2', 'cloud')).toThrow(KeyUnwrapError);
    expect(() => unwrapKey(master, wrapped, 'acc_1', 'local')).toThrow(KeyUnwrapError);
    const tampered = Buffer.from(wrapped);
    tampered[20]! ^= 1;
    expect(() => unwrapKey(master, tampered, 'acc_1', 'cloud')).toThrow(KeyUnwrapError);
    expect(fingerprint(master)).toMatch(/^[0-9a-f]{32}$/);
    expect(fingerprint(master)).not.toBe(fingerprint(randomBytes(32)));
  });
});

describe('key settings', () => {
  it('default the master key file outside DATA_DIR, and refuse one inside it, a bad key, or both forms', () => {
    expect(loadKeySettings({ XDG_CONFIG_HOME: '/etc/xdg-test' }, '/srv/data', '/').master).toEqual({ kind: 'file', name: 'MASTER_KEY_FILE', file: '/etc/xdg-test/backup-service/master.key' });
    expect(loadKeySettings({ HOME: '/home/u' }, '/srv/data', '/').tokenSigning).toMatchObject({ kind: 'file', file: '/srv/data/secrets/token-signing-key' });
    expect(() => loadConfig({ DATA_DIR: '/srv/data', MASTER_KEY_FILE: '/srv/data/keys/master.key' })).toThrow(/MASTER_KEY_FILE must lie outside DATA_DIR/);
    expect(() => loadConfig({ DATA_DIR: '/srv', XDG_CONFIG_HOME: '/srv/.config' })).toThrow(/outside DATA_DIR/);
    expect(() => loadConfig({ MASTER_KEY: 'c2hvcnQ=' })).toThrow(/MASTER_KEY must be 32 bytes in base64/);
    const good = randomBytes(32).toString('base64');
    expect(() => loadConfig({ MASTER_KEY: good, MASTER_KEY_FILE: '/k' })).toThrow(/set MASTER_KEY or MASTER_KEY_FILE, not both/);
    expect(loadConfig({ MASTER_KEY: good }).keys.master).toMatchObject({ kind: 'env', name: 'MASTER_KEY' });
    expect(() => loadConfig({ TOKEN_SIGNING_KEY: 'c2hvcnQ=' })).toThrow(/TOKEN_SIGNING_KEY must be at least 32 bytes/);
  });
});

describe('secrets every instance shares', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'keys-')));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuse to start an instance whose master key or token signing key is not the deployment\'s', async () => {
    const first = await startHarness({}, {}, dir);
    const env = first.env;
    await first.stop();
    const otherKey = join(dir, 'other', 'master.key');
    writeKeyFile(otherKey, randomBytes(32));
    await expect(startHarness({ ...env, MASTER_KEY_FILE: otherKey }, {}, dir)).rejects.toThrow(SecretMismatchError);
    await expect(startHarness({ ...env, MASTER_KEY_FILE: otherKey }, {}, dir)).rejects.toThrow(/master key from .*other\/master.key .* is not the one/);
    await expect(startHarness({ ...env, TOKEN_SIGNING_KEY: randomBytes(32).toString('base64') }, {}, dir)).rejects.toThrow(/token signing key from TOKEN_SIGNING_KEY/);
    // The same key given another way is the same key.
    const again = await startHarness({ ...env, MASTER_KEY_FILE: undefined as unknown as string, MASTER_KEY: readKeyFile(env.MASTER_KEY_FILE!).toString('base64') }, {}, dir);
    await again.stop();
  });
});

describe('npm run keys -- rotate-master', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'rotate-')));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('rewraps every repository key under a new master key without rewriting data; backups restore after', async () => {
    const h = await startHarness({}, {}, dir);
    const src = join(h.root, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'f.bin'), randomBytes(100_000));
    const key = await h.newKey('pro');
    const token = await h.tokenFor(key);
    const backup = (await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src } })).body.data;
    expect(backup.status).toBe('completed');
    const local = (await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src, destination: 'local' } })).body.data;
    expect(local.status).toBe('completed');
    const env = h.env;
    const repositories = join(h.dataDir, 'repositories');
    const before = snapshot(repositories);
    await h.stop();

    const file = env.MASTER_KEY_FILE!;
    const oldKey = readKeyFile(file);
    const out: string[] = [];
    expect(await runKeysCli(['rotate-master'], env, (l) => out.push(l))).toBe(0);
    expect(out.join('\n')).toContain('2 repository keys rewrapped');
    const newKey = readKeyFile(file);
    expect(newKey.equals(oldKey)).toBe(false);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'keys'))).toEqual(['master.key']);
    expect(snapshot(repositories)).toEqual(before); // no repository file written or removed

    const old = join(dir, 'old.key');
    writeKeyFile(old, oldKey);
    await expect(startHarness({ ...env, MASTER_KEY_FILE: old }, {}, dir)).rejects.toThrow(SecretMismatchError);
    const after = await startHarness(env, {}, dir);
    try {
      const token2 = await after.tokenFor(key);
      for (const [id, target] of [[backup.id, 'r1'], [local.id, 'r2']] as const) {
        const restore = await after.request('/api/v1/restore', { method: 'POST', token: token2, headers: { Prefer: 'wait=30' }, json: { backup_id: id, target_path: join(after.root, target) } });
        expect(restore.body.data.status).toBe('completed');
        expect(readFileSync(join(after.root, target, 'f.bin'))).toEqual(readFileSync(join(src, 'f.bin')));
      }
    } finally {
      await after.stop();
    }
  });

  it('finishes a rotation interrupted after its database commit, and the server says so until then', async () => {
    const env = loadConfig({ DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key') });
    const current = readKeyFile(env.keys.master.kind === 'file' ? env.keys.master.file : '');
    const next = randomBytes(32);
    writeKeyFile(join(dir, 'keys', 'master.key.new'), next);
    const store = await openStore(env);
    expect(await store.keys.rotateMaster(fingerprint(current), fingerprint(next), (k) => wrapKey(next, unwrapKey(current, k.wrapped, k.accountId, k.destination), k.accountId, k.destination))).toBe(true);
    expect(await store.keys.fingerprint(SHARED_SECRETS.master, 'x')).toBe(fingerprint(next));
    await store.close();
    const settings = { DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), BACKUP_ALLOWED_ROOTS: join(dir, 'root') };
    await expect(startHarness(settings, {}, dir)).rejects.toThrow(/rotation was interrupted.*rotate-master/);
    expect(await runKeysCli(['rotate-master'], settings, () => {})).toBe(0);
    expect(readKeyFile(join(dir, 'keys', 'master.key')).equals(next)).toBe(true);
    expect(existsSync(join(dir, 'keys', 'master.key.new'))).toBe(false);
    const h = await startHarness(settings, {}, dir);
    await h.stop();
  });
});

/** Every file under dir with its size and modification time. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = statSync(p);
        out[p] = `${st.size} ${st.mtimeMs}`;
      }
    }
  };
  walk(dir);
  return out;
}
