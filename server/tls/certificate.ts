/**
 * The server's certificate pair: read from TLS_CERT_FILE (PEM, leaf first, chain allowed) and
 * TLS_KEY_FILE (PEM private key), checked before use. A pair that does not load is refused with
 * a message naming the file and what is wrong with it, at start and on rotation alike.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createSecureContext, type SecureContextOptions } from 'node:tls';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** TLS 1.2 and 1.3 only, Node's default ciphers. */
export const TLS_VERSIONS = { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' } as const satisfies SecureContextOptions;

export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
  leaf: X509Certificate;
  /** Upper-case hex serial number of the leaf. */
  serial: string;
  notAfter: Date;
}

export class CertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertificateError';
  }
}

function readPem(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new CertificateError(`${variable} ${file}: cannot be read (${why})`);
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM file, leaf first; throws naming the file when there is none or one is broken. */
function parseChain(file: string, pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new CertificateError(`TLS_CERT_FILE ${file}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new CertificateError(`TLS_CERT_FILE ${file}: certificate ${i + 1} is not valid PEM/X.509 (${(err as Error).message})`);
    }
  });
}

function parseKey(file: string, pem: Buffer): KeyObject {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem.toString('latin1'))) {
    throw new CertificateError(`TLS_KEY_FILE ${file}: no PEM private key in it (expected -----BEGIN PRIVATE KEY-----)`);
  }
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem.toString('latin1'))) {
    throw new CertificateError(`TLS_KEY_FILE ${file}: the key is encrypted with a passphrase; give the server an unencrypted key (mode 0600)`);
  }
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new CertificateError(`TLS_KEY_FILE ${file}: not a valid PEM private key (${(err as Error).message})`);
  }
}

/**
 * TLS_CERT_FILE + TLS_KEY_FILE (paths resolved against `cwd`): null when neither is set; the
 * files when both are and the pair loads; otherwise throws naming the variable, file and problem.
 */
export function tlsFilesFromEnv(env: NodeJS.ProcessEnv, cwd: string): TlsFiles | null {
  const cert = env.TLS_CERT_FILE?.trim();
  const key = env.TLS_KEY_FILE?.trim();
  if (!cert && !key) return null;
  if (!cert || !key) throw new CertificateError(`TLS_CERT_FILE and TLS_KEY_FILE must be set together (only ${cert ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE'} is set)`);
  const files = { certFile: resolve(cwd, cert), keyFile: resolve(cwd, key) };
  loadCertificatePair(files);
  return files;
}

/** Reads and checks the pair: both files readable PEM, key matching the leaf, leaf valid now. */
export function loadCertificatePair(files: TlsFiles, now = new Date()): CertificatePair {
  const cert = readPem('TLS_CERT_FILE', files.certFile);
  const key = readPem('TLS_KEY_FILE', files.keyFile);
  const [leaf] = parseChain(files.certFile, cert) as [X509Certificate];
  const keyObject = parseKey(files.keyFile, key);
  if (!leaf.checkPrivateKey(keyObject)) {
    throw new CertificateError(`TLS_KEY_FILE ${files.keyFile}: the key does not match the certificate in TLS_CERT_FILE ${files.certFile} (the leaf must come first)`);
  }
  const notBefore = new Date(leaf.validFrom);
  const notAfter = new Date(leaf.validTo);
  if (notAfter <= now) throw new CertificateError(`TLS_CERT_FILE ${files.certFile}: the certificate expired on ${notAfter.toISOString()}`);
  if (notBefore > now) throw new CertificateError(`TLS_CERT_FILE ${files.certFile}: the certificate is not valid before ${notBefore.toISOString()}`);
  try {
    createSecureContext({ cert, key, ...TLS_VERSIONS });
  } catch (err) {
    throw new CertificateError(`TLS_CERT_FILE ${files.certFile}: OpenSSL refuses the pair (${(err as Error).message})`);
  }
  return { cert, key, leaf, serial: leaf.serialNumber.toUpperCase(), notAfter };
}
