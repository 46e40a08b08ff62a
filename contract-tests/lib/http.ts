/**
 * A raw HTTP(S) client for the checks: sends exactly the bytes and headers it is given (no
 * automatic Content-Type, bad JSON allowed) and can pick its loopback source address, so
 * per-address rate limits of the public tools can be spread over 127.0.0.0/8. `https://` URLs
 * are verified against the system's CAs plus those given to trustCa (the checks' own test CA).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';

const extraCas: string[] = [];

/** Trusts this CA (PEM) for every later https:// request. */
export function trustCa(pem: string): void {
  extraCas.push(pem);
}

export interface RawRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** A string or Buffer is sent as is; any other value is sent as JSON. */
  body?: unknown;
  localAddress?: string;
  timeoutMs?: number;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: unknown;
}

export async function send(req: RawRequest): Promise<RawResponse> {
  const url = new URL(req.url);
  const headers: Record<string, string> = { ...req.headers };
  let payload: Buffer | undefined;
  if (req.body !== undefined) {
    payload =
      typeof req.body === 'string'
        ? Buffer.from(req.body)
        : Buffer.isBuffer(req.body)
          ? req.body
          : Buffer.from(JSON.stringify(req.body));
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type') && typeof req.body !== 'string' && !Buffer.isBuffer(req.body)) {
      headers['Content-Type'] = 'application/json';
    }
    headers['Content-Length'] = String(payload.length);
  }
  return await new Promise<RawResponse>((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const r = (secure ? httpsRequest : httpRequest)(
      {
        ...(secure ? { ca: [...rootCertificates, ...extraCas] } : {}),
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: req.method,
        headers,
        localAddress: req.localAddress,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown = undefined;
          try {
            json = text.length > 0 ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          const flat: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) {
            if (v !== undefined) flat[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
          }
          resolve({ status: res.statusCode ?? 0, headers: flat, text, json });
        });
        res.on('error', reject);
      },
    );
    r.setTimeout(req.timeoutMs ?? 30_000, () => r.destroy(new Error(`timeout: ${req.method} ${req.url}`)));
    r.on('error', reject);
    if (payload) r.write(payload);
    r.end();
  });
}
