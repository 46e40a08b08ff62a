// The getting-started screen (sdk/examples/backup-screen.ts) against the mock, then against a
// real server on loopback: the same code, only the API URL (and real credentials and paths) changed.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock, type RunningMock } from '../../mock/start.ts';
import { startHarness, type Harness } from '../../server/testing/harness.ts';
import { backupScreen } from '../examples/backup-screen.ts';

let mock: RunningMock;
let h: Harness;
const KEY = { apiKey: 'key_screen', secret: 'screen-secret-0123456789' };

beforeAll(async () => {
  [mock, h] = await Promise.all([
    startMock({ backupPort: 0, toolsPort: 0, jobSeconds: 1 }),
    startHarness({ BACKUP_BOOTSTRAP_API_KEY: KEY.apiKey, BACKUP_BOOTSTRAP_SECRET: KEY.secret }),
  ]);
}, 60_000);
afterAll(async () => {
  await mock?.close();
  await h?.cleanup();
});

describe('the getting-started screen', () => {
  it('runs against the mock: progress, files, restore', async () => {
    const lines: string[] = [];
    const job = await backupScreen({ apiUrl: mock.backupUrl, apiKey: 'key_anything', secret: 'any-secret-0123456789' }, { source: '/home/ann/documents', restoreTo: '/home/ann/restored' }, { show: (l) => lines.push(l) });
    expect(job?.status).toBe('completed');
    expect(lines[0]).toBe('0 recent backups');
    expect(lines).toContain('restore completed: 2 files');
    // Prefer: wait=5 held the first answer until the one-second job had ended.
    expect(lines[1]).toMatch(/^backup completed: (\d+) of \1 bytes$/);
  });

  it('runs against the server with only the URL, credentials and paths changed', async () => {
    const source = join(h.root, 'documents');
    await mkdir(join(source, 'letters'), { recursive: true });
    await writeFile(join(source, 'letters/to-bob.txt'), 'Dear Bob,\n');
    const lines: string[] = [];
    const job = await backupScreen({ apiUrl: `${h.base}/api/v1`, ...KEY }, { source, restoreTo: join(h.root, 'restored') }, { show: (l) => lines.push(l) });
    expect(job?.status).toBe('completed');
    expect(lines).toContain('file letters/to-bob.txt');
    expect(lines.at(-1)).toMatch(/^restore completed: \d+ files$/);
    expect(await readFile(join(h.root, 'restored/letters/to-bob.txt'), 'utf8')).toBe('Dear Bob,\n');

    const refused: string[] = [];
    await backupScreen({ apiUrl: `${h.base}/api/v1`, ...KEY }, { source: '/etc', restoreTo: '/tmp' }, { show: (l) => refused.push(l) });
    expect(refused.at(-1)).toMatch(/^SOURCE_NOT_ALLOWED: Back up a path inside the roots .* \(request req_/);
  });
});
