/**
 * Cross-origin requests from the browser pages of the origins in CORS_ORIGINS: preflights are
 * answered at once (204, before authentication, routing and rate limits), and every answer to
 * such an origin, errors included, says the origin may read it and its headers. Other origins
 * get no CORS header, as when CORS_ORIGINS is unset.
 */
import type { RequestHandler } from 'express';
import { originAllowed, type CorsOrigins } from '../cors-origins.ts';

const PREFLIGHT_MAX_AGE_SECONDS = 600;

/** Null when no origin is allowed: then there is nothing to mount. */
export function cors(origins: CorsOrigins): RequestHandler | null {
  if (origins !== '*' && origins.length === 0) return null;
  return (req, res, next) => {
    res.vary('Origin');
    const origin = req.get('origin');
    if (!origin || !originAllowed(origins, origin)) {
      next();
      return;
    }
    res.setHeader('Access-Control-Allow-Origin', origin);
    // Tokens travel in Authorization, not cookies, so no credentials mode is needed and `*` exposes every header.
    res.setHeader('Access-Control-Expose-Headers', '*');
    const method = req.get('access-control-request-method');
    if (req.method === 'OPTIONS' && method) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE');
      // Authorization cannot be allowed by a wildcard: name what the page asked for.
      const headers = req.get('access-control-request-headers');
      if (headers) res.setHeader('Access-Control-Allow-Headers', headers);
      res.setHeader('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS));
      res.status(204).end();
      return;
    }
    next();
  };
}
