import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { requirePackages } from './packages.ts';
import { freePort } from './ports.ts';

const run = promisify(execFile);

/**
 * A throwaway one-node Ceph cluster serving S3 on loopback: one monitor, one bluestore OSD on a
 * sparse file, and the RADOS Gateway, all in a temp directory, stopped by PID. One per test file
 * (start it in beforeAll, share it, stop it in afterAll). The gateway alone can be stopped,
 * restarted on the same port, frozen (SIGSTOP) and thawed, for fault tests.
 */
export interface Rgw {
  /** http://127.0.0.1:PORT */
  endpoint: string;
  port: number;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A client for the test's own checks (path-style, checksums only when required, as RGW 16 needs). */
  client(credentials?: { accessKeyId: string; secretAccessKey: string }): S3Client;
  createBucket(name: string): Promise<void>;
  /** Runs radosgw-admin against this cluster (quotas, users). */
  admin(args: readonly string[]): Promise<string>;
  /** The environment that points the server's `cloud` at a bucket of this gateway. */
  env(bucket: string, prefix?: string): Record<string, string>;
  stopGateway(): Promise<void>;
  startGateway(): Promise<void>;
  freezeGateway(): void;
  thawGateway(): void;
  /** Stops the cluster and removes its directory. */
  cleanup(): Promise<void>;
}

const PACKAGES = ['ceph-mon', 'ceph-osd', 'radosgw'];
const READY_TIMEOUT_MS = 45_000;

/**
 * The settings that matter (services.md): no auth, one replica, a fast paxos interval, and the
 * bluestore device's AIO thread polled every few ms instead of 250 (each open/close of the block
 * file otherwise waits out one poll, seconds in all at mkfs and boot).
 */
function cephConf(dir: string, fsid: string, monPort: number, gatewayPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monPort}
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc secure
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd pool default pg num = 8
osd pool default pgp num = 8
mon max pg per osd = 1000
mon data avail crit = 1
paxos propose interval = 0.05
run dir = ${dir}/run
log file = ${dir}/log/$name.log
admin socket = ${dir}/run/$name.asok
mon data = ${dir}/mon/$name
osd data = ${dir}/osd/$name
osd objectstore = bluestore
bluestore block create = true
bluestore block size = ${32 * 2 ** 30}
bluestore fsck on mkfs = false
bluestore cache size = ${256 * 2 ** 20}
bdev aio poll ms = 5
osd memory target = ${512 * 2 ** 20}
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${gatewayPort}
rgw data = ${dir}/rgw
`;
}

async function until(what: string, check: () => boolean | Promise<boolean>, logFile: string, timeoutMs = READY_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) {
      let tail = '';
      try {
        tail = readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n');
      } catch {
        // no log yet
      }
      throw new Error(`Ceph test cluster: ${what} not ready after ${timeoutMs} ms. ${logFile}:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function fileHas(file: string, text: string): boolean {
  try {
    return readFileSync(file, 'utf8').includes(text);
  } catch {
    return false;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

async function servesUser(client: S3Client): Promise<boolean> {
  try {
    await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

export async function startRgw(): Promise<Rgw> {
  requirePackages(PACKAGES);
  const dir = mkdtempSync(join(tmpdir(), 'rgw-'));
  const processes = new Map<string, ChildProcess>();
  const killAll = (): void => {
    for (const child of processes.values()) {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          child.kill('SIGCONT');
          child.kill('SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  };
  // A test process that dies leaves no daemon and no temp dir behind.
  const onExit = (): void => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  const daemon = (name: string, command: string, args: string[]): ChildProcess => {
    const child = spawn(command, args, { cwd: dir, stdio: 'ignore' });
    processes.set(name, child);
    return child;
  };
  const exited = (child: ChildProcess): Promise<void> =>
    child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));

  try {
    const fsid = randomUUID();
    const [monPort, port] = [await freePort(), await freePort()];
    const conf = join(dir, 'ceph.conf');
    for (const sub of ['run', 'log', 'mon', 'osd/osd.0', 'rgw']) mkdirSync(join(dir, sub), { recursive: true });
    writeFileSync(conf, cephConf(dir, fsid, monPort, port));
    const ceph = (command: string, args: string[]) => run(command, ['-c', conf, ...args], { cwd: dir, timeout: READY_TIMEOUT_MS });

    // The OSD's store is made without the monitor (--no-mon-config), while the monitor starts
    // and registers the OSD; the OSD then boots into the map.
    const osdUuid = randomUUID();
    const osdMkfs = ceph('ceph-osd', ['-i', '0', '--no-mon-config', '--mkfs', '--osd-uuid', osdUuid]);
    osdMkfs.catch(() => {}); // awaited below
    await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, join(dir, 'monmap')]);
    await ceph('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap')]);
    daemon('mon', 'ceph-mon', ['-c', conf, '-i', 'a', '-f']);
    const { stdout: osdId } = await ceph('ceph', ['osd', 'new', osdUuid, '0']);
    if (osdId.trim() !== '0') throw new Error(`ceph osd new gave id ${osdId.trim()}, expected 0`);
    await osdMkfs;
    daemon('osd', 'ceph-osd', ['-c', conf, '-i', '0', '-f']);
    const osdLog = join(dir, 'log', 'osd.0.log');
    await until('the OSD', () => fileHas(osdLog, 'booting -> active'), osdLog);

    const endpoint = `http://127.0.0.1:${port}`;
    const gatewayLog = join(dir, 'log', 'client.rgw.log');
    const accessKeyId = 'TESTACCESSKEY';
    const secretAccessKey = 'test-secret-key-of-the-throwaway-cluster';
    const region = 'us-east-1';
    const client = (credentials = { accessKeyId, secretAccessKey }): S3Client =>
      new S3Client({
        endpoint,
        region,
        credentials,
        forcePathStyle: true,
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
    let userMade = false;
    /** Ready once it answers HTTP; once the test user exists, once it serves that user (a restarted gateway answers before it knows its users). */
    const startGateway = async (): Promise<void> => {
      daemon('rgw', 'radosgw', ['-c', conf, '-n', 'client.rgw', '-f']);
      await until('the gateway', () => (userMade ? servesUser(client()) : answers(endpoint)), gatewayLog);
    };
    await startGateway();

    const admin = async (args: readonly string[]): Promise<string> => (await ceph('radosgw-admin', [...args])).stdout;
    await admin(['user', 'create', '--uid=test', '--display-name=test', `--access-key=${accessKeyId}`, `--secret-key=${secretAccessKey}`]);
    userMade = true;
    const gateway = (): ChildProcess => processes.get('rgw')!;

    return {
      endpoint,
      port,
      region,
      accessKeyId,
      secretAccessKey,
      client,
      async createBucket(name) {
        const c = client();
        try {
          await c.send(new CreateBucketCommand({ Bucket: name }));
        } finally {
          c.destroy();
        }
      },
      admin,
      env(bucket, prefix) {
        return {
          CLOUD_S3_BUCKET: bucket,
          ...(prefix ? { CLOUD_S3_PREFIX: prefix } : {}),
          CLOUD_S3_FORCE_PATH_STYLE: 'true',
          AWS_ENDPOINT_URL_S3: endpoint,
          AWS_REGION: region,
          AWS_ACCESS_KEY_ID: accessKeyId,
          AWS_SECRET_ACCESS_KEY: secretAccessKey,
        };
      },
      async stopGateway() {
        const child = gateway();
        child.kill('SIGCONT');
        child.kill('SIGKILL');
        await exited(child);
      },
      startGateway,
      freezeGateway() {
        gateway().kill('SIGSTOP');
      },
      thawGateway() {
        gateway().kill('SIGCONT');
      },
      async cleanup() {
        killAll();
        await Promise.all([...processes.values()].map(exited));
        process.removeListener('exit', onExit);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    killAll();
    await Promise.all([...processes.values()].map(exited));
    process.removeListener('exit', onExit);
    const keep = process.env.KEEP_RGW_DIR ? ` (kept in ${dir})` : '';
    if (!keep) rmSync(dir, { recursive: true, force: true });
    throw new Error(`Could not start the Ceph RADOS Gateway for the tests${keep}: ${(err as Error).message}`, { cause: err });
  }
}
