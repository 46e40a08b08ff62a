import type { Express, Response } from 'express';

type Json = (this: Response, body: unknown) => Response;

/**
 * Makes `res.json` of `app` write a JSON answer itself in the common case: no Content-Type or
 * Transfer-Encoding set yet, a status with a body, not a HEAD request, the request not fresh
 * (conditional headers). It sends what Express's own res.json sends then — the same headers,
 * set in the same order and spelling, the same body — without Express's settings lookups, its
 * MIME lookup and its Content-Type parse and format on every answer. Any other answer, and an
 * app whose JSON or ETag settings would change the bytes, goes through Express's res.json.
 * Call it once the app's settings are final.
 */
export function directJson(app: Express): void {
  const expressJson = app.response.json as Json;
  if (app.get('json escape') || app.get('json replacer') || app.get('json spaces') !== undefined || typeof app.get('etag fn') === 'function') return;
  const json: Json = function (this: Response, obj: unknown) {
    const status = this.statusCode;
    if (status === 204 || status === 205 || status === 304 || this.req.method === 'HEAD') return expressJson.call(this, obj);
    if (this.getHeader('content-type') !== undefined || this.getHeader('transfer-encoding') !== undefined || this.req.fresh) return expressJson.call(this, obj);
    const body = JSON.stringify(obj) as string | undefined;
    if (typeof body !== 'string') return expressJson.call(this, obj);
    this.setHeader('Content-Type', 'application/json; charset=utf-8');
    this.setHeader('Content-Length', String(Buffer.byteLength(body, 'utf8')));
    this.end(body, 'utf8');
    return this;
  };
  app.response.json = json as Response['json'];
}
