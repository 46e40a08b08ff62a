/**
 * A test client for the server over TLS: one request, verified against the test's own CA, with
 * what the handshake agreed (protocol, the served certificate's serial) next to the answer.
 */
import { request, type Agent } from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  protocol: string | null;
  /** Upper-case hex serial of the certificate the server presented. */
  serial: string;
}

export interface HttpsRequest {
  ca: string | Buffer;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  agent?: Agent;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

export function httpsRequest(url: string, options: HttpsRequest): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        ca: options.ca,
        headers: { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) },
        agent: options.agent ?? false,
        ...(options.minVersion ? { minVersion: options.minVersion } : {}),
        ...(options.maxVersion ? { maxVersion: options.maxVersion } : {}),
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const protocol = socket.getProtocol();
        const serial = socket.getPeerCertificate().serialNumber?.toUpperCase() ?? '';
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: leave the text for the assertion to show
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, protocol, serial });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
