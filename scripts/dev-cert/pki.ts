/**
 * A small private CA on the system's openssl (no ASN.1 of our own): a CA certificate and
 * server certificates it signs, with chosen names, serial and validity. Used by
 * `npm run dev-cert` and by the tests that need real certificates. Keys are EC P-256, written
 * 0600; certificates 0644.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Ca {
  cert: string;
  key: string;
}

export interface Issued {
  cert: string;
  key: string;
  /** Upper-case hex, as X509Certificate.serialNumber shows it. */
  serial: string;
}

export interface IssueOptions {
  ca: Ca;
  /** Directory the files go to, as `<name>.pem` and `<name>-key.pem`. */
  dir: string;
  name: string;
  commonName?: string;
  /** subjectAltName entries, e.g. `DNS:localhost`, `IP:127.0.0.1`. */
  altNames?: string[];
  /** Upper-case hex; random when absent. */
  serial?: string;
  /** Validity; default from an hour ago for `days` (default 397) days. */
  notBefore?: Date;
  notAfter?: Date;
  days?: number;
  /** Write the CA certificate after the leaf in `<name>.pem` (a chain). */
  withChain?: boolean;
}

function openssl(args: string[], cwd?: string): string {
  try {
    return execFileSync('openssl', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { code?: string; stderr?: string };
    if (e.code === 'ENOENT') throw new Error('openssl is not installed (Debian: apt-get install -y openssl)');
    throw new Error(`openssl ${args[0]} failed: ${e.stderr?.trim() ?? String(err)}`);
  }
}

function newKey(path: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path]);
  chmodSync(path, 0o600);
}

/** 16 random bytes, first byte 0x10-0x7f: positive, and no leading zero the encoding would drop. */
const randomSerial = () => (((randomBytes(1)[0]! & 0x6f) | 0x10).toString(16) + randomBytes(15).toString('hex'));

/** openssl's ASN.1 time for `openssl ca`: YYYYMMDDHHMMSSZ. */
const asn1Time = (d: Date) => d.toISOString().replace(/[-:T]/g, '').replace(/\.\d+Z$/, 'Z');

export function createCa(dir: string, options: { name?: string; commonName?: string; days?: number } = {}): Ca {
  mkdirSync(dir, { recursive: true });
  const name = options.name ?? 'ca';
  const ca = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`) };
  newKey(ca.key);
  openssl([
    'req', '-x509', '-new', '-key', ca.key, '-out', ca.cert, '-sha256',
    '-days', String(options.days ?? 3650),
    '-subj', `/CN=${options.commonName ?? 'Backup service development CA'}`,
    '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  chmodSync(ca.cert, 0o644);
  return ca;
}

/** Issues a server certificate signed by `ca` (through `openssl ca`, which takes explicit dates). */
export function issueCertificate(options: IssueOptions): Issued {
  const { ca, dir, name } = options;
  mkdirSync(dir, { recursive: true });
  const serial = (options.serial ?? randomSerial()).toUpperCase();
  const notBefore = options.notBefore ?? new Date(Date.now() - 3_600_000);
  const notAfter = options.notAfter ?? new Date(notBefore.getTime() + (options.days ?? 397) * 86_400_000);
  const altNames = options.altNames ?? ['DNS:localhost', 'IP:127.0.0.1', 'IP:::1'];
  const out = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`), serial };
  const work = mkdtempSync(join(dir, '.issue-'));
  try {
    newKey(out.key);
    const csr = join(work, 'req.csr');
    openssl(['req', '-new', '-key', out.key, '-out', csr, '-subj', `/CN=${options.commonName ?? 'localhost'}`]);
    writeFileSync(join(work, 'index.txt'), '');
    writeFileSync(join(work, 'index.txt.attr'), 'unique_subject = no\n');
    writeFileSync(join(work, 'serial'), `${serial}\n`);
    writeFileSync(
      join(work, 'ca.cnf'),
      [
        '[ca]',
        'default_ca = issuer',
        '[issuer]',
        `dir = ${work}`,
        'database = $dir/index.txt',
        'serial = $dir/serial',
        'new_certs_dir = $dir',
        'default_md = sha256',
        'policy = any',
        'copy_extensions = none',
        'x509_extensions = server',
        '[any]',
        'commonName = supplied',
        '[server]',
        'basicConstraints = critical,CA:FALSE',
        'keyUsage = critical,digitalSignature',
        'extendedKeyUsage = serverAuth',
        'subjectKeyIdentifier = hash',
        'authorityKeyIdentifier = keyid',
        `subjectAltName = ${altNames.join(',')}`,
        '',
      ].join('\n'),
    );
    const issued = join(work, 'issued.pem');
    openssl(['ca', '-batch', '-notext', '-config', join(work, 'ca.cnf'), '-cert', ca.cert, '-keyfile', ca.key, '-in', csr, '-out', issued, '-startdate', asn1Time(notBefore), '-enddate', asn1Time(notAfter)]);
    const leaf = openssl(['x509', '-in', issued]);
    const chain = options.withChain ? openssl(['x509', '-in', ca.cert]) : '';
    writeFileSync(out.cert, leaf + chain, { mode: 0o644 });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}
