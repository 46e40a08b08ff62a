/**
 * The certificate the server presents, rotated without a restart: the files are read again every
 * few seconds (and on demand, e.g. SIGHUP); when their bytes change and the new pair loads, it
 * becomes the secure context of new connections (`setSecureContext`), while connections already
 * open, and the requests on them, finish on the old one. A pair that does not load keeps the old
 * one serving and is logged once, clearly.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import { CertificateError, loadCertificatePair, TLS_VERSIONS, type CertificatePair, type TlsFiles } from './certificate.ts';

/** How often the files are read again (the contract: at least every 10 s). */
export const RELOAD_INTERVAL_MS = 5000;
/** A change is loaded once the files have stayed the same this long (both files are written in turn). */
const SETTLE_MS = 250;
/** `/status` turns degraded this close to the certificate's expiry. */
export const EXPIRY_WARNING_DAYS = 14;

/** Fingerprint of what both files hold now; unreadable files count as their error. */
function filesDigest(files: TlsFiles): string {
  const hash = createHash('sha256');
  for (const file of [files.certFile, files.keyFile]) {
    try {
      hash.update(readFileSync(file));
    } catch (err) {
      hash.update(`error:${(err as NodeJS.ErrnoException).code ?? ''}`);
    }
    hash.update('\0');
  }
  return hash.digest('hex');
}

export class ServerCertificate {
  readonly files: TlsFiles;
  readonly #logger: Logger;
  #pair: CertificatePair;
  #seen: string;
  #server: TlsServer | undefined;
  #timer: NodeJS.Timeout | undefined;
  #reloading: Promise<boolean> | undefined;

  /** Loads the pair now; throws CertificateError when it does not load. */
  constructor(files: TlsFiles, logger: Logger) {
    this.files = files;
    this.#logger = logger;
    this.#seen = filesDigest(files);
    this.#pair = loadCertificatePair(files);
  }

  get current(): CertificatePair {
    return this.#pair;
  }

  /** Options for `https.createServer`: the pair and the protocol versions. */
  secureOptions(): { cert: Buffer; key: Buffer } & typeof TLS_VERSIONS {
    return { cert: this.#pair.cert, key: this.#pair.key, ...TLS_VERSIONS };
  }

  /** Applies every later rotation to `server`, checking the files every `intervalMs`. */
  watch(server: TlsServer, intervalMs = RELOAD_INTERVAL_MS): void {
    this.#server = server;
    this.#timer = setInterval(() => void this.reload('files changed'), intervalMs);
    this.#timer.unref();
  }

  /**
   * Loads the files again if their bytes changed since last seen (or always, when `force`), once
   * they have stopped changing: resolves true when a new pair was applied. Each broken pair is
   * logged once.
   */
  reload(reason: string, force = false): Promise<boolean> {
    this.#reloading ??= this.#reload(reason, force).finally(() => (this.#reloading = undefined));
    return this.#reloading;
  }

  async #reload(reason: string, force: boolean): Promise<boolean> {
    let digest = filesDigest(this.files);
    if (digest === this.#seen && !force) return false;
    for (let i = 0; i < 8; i++) {
      await sleep(SETTLE_MS);
      const again = filesDigest(this.files);
      if (again === digest) break;
      digest = again;
    }
    this.#seen = digest;
    let pair: CertificatePair;
    try {
      pair = loadCertificatePair(this.files);
    } catch (err) {
      if (!(err instanceof CertificateError)) throw err;
      this.#logger.error({ reason, serial: this.#pair.serial, error: err.message }, `new TLS certificate not loaded, still serving the previous one: ${err.message}`);
      return false;
    }
    this.#server?.setSecureContext({ cert: pair.cert, key: pair.key, ...TLS_VERSIONS });
    this.#logger.info({ reason, serial: pair.serial, previous_serial: this.#pair.serial, expires_at: pair.notAfter.toISOString() }, 'TLS certificate reloaded');
    this.#pair = pair;
    return true;
  }

  close(): void {
    clearInterval(this.#timer);
    this.#server = undefined;
  }
}

/**
 * The `certificate` health check (server/health.ts; advisory: it never makes /readyz fail): failed
 * once the served certificate is within 14 days of expiry, with its `expires_at`.
 */
export function certificateCheck(certificate: ServerCertificate, now = Date.now()): { ok: boolean; details: { expires_at: string } } {
  const { notAfter } = certificate.current;
  return { ok: notAfter.getTime() - now > EXPIRY_WARNING_DAYS * 86_400_000, details: { expires_at: notAfter.toISOString() } };
}
