// `npm run dev-cert`: a local certificate authority and a localhost / 127.0.0.1 / ::1 server
// certificate it signs, for running the server over HTTPS on a development machine.
//   node scripts/dev-cert.ts [--dir <directory>]   (default ./dev-cert, or DEV_CERT_DIR)
// The CA is kept and reused when it exists (clients that trust it keep working); the server
// certificate is issued anew on every run (397 days). Keys are 0600. The directory must lie
// outside DATA_DIR: a backup of the data directory must never carry a private key.
import { existsSync, realpathSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { createCa, issueCertificate, type Ca } from './dev-cert/pki.ts';

function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep));
}

/** Resolves symlinks of the part that exists, so `inside` compares real locations. */
function real(path: string): string {
  let head = path;
  const tail: string[] = [];
  while (!existsSync(head)) {
    tail.unshift(head.slice(head.lastIndexOf(sep) + 1));
    head = head.slice(0, head.lastIndexOf(sep)) || sep;
  }
  return resolve(realpathSync(head), ...tail);
}

const { values } = parseArgs({ options: { dir: { type: 'string' } } });
const dir = resolve(values.dir ?? process.env.DEV_CERT_DIR ?? 'dev-cert');
const dataDir = resolve(process.env.DATA_DIR?.trim() || 'data');
if (inside(real(dir), real(dataDir))) {
  process.stderr.write(`dev-cert: ${dir} is inside DATA_DIR (${dataDir}); choose a directory outside it (--dir).\n`);
  process.exit(2);
}

const ca: Ca = { cert: resolve(dir, 'ca.pem'), key: resolve(dir, 'ca-key.pem') };
const reused = existsSync(ca.cert) && existsSync(ca.key);
if (!reused) createCa(dir);
const server = issueCertificate({ ca, dir, name: 'localhost', commonName: 'localhost', altNames: ['DNS:localhost', 'IP:127.0.0.1', 'IP:::1'] });

const show = (p: string) => relative(process.cwd(), p) || p;
process.stdout.write(
  [
    `${reused ? 'Reused the' : 'Created a'} local CA:   ${show(ca.cert)} (key ${show(ca.key)}, 0600)`,
    `Issued for localhost, 127.0.0.1, ::1: ${show(server.cert)} (key ${show(server.key)}, 0600), serial ${server.serial}`,
    '',
    'Serve HTTPS with it:',
    `  TLS_CERT_FILE=${show(server.cert)} TLS_KEY_FILE=${show(server.key)} npm start`,
    'Let a Node client (or the SDK) trust it:',
    `  NODE_EXTRA_CA_CERTS=${show(ca.cert)} node your-client.js`,
    `  curl --cacert ${show(ca.cert)} https://localhost:8080/api/v1/status`,
    '',
  ].join('\n'),
);
