import type { Response } from 'express';
import type { Plan } from '../config.ts';

/** Per-request values the middleware chain hands on, kept in res.locals behind typed accessors. */
export interface AuthContext {
  accountId: string;
  keyId: string;
  plan: Plan;
}

export function setRequestId(res: Response, id: string): void {
  res.locals.requestId = id;
}

export function requestIdOf(res: Response): string {
  return (res.locals.requestId as string | undefined) ?? 'req_unknown';
}

export function setAuth(res: Response, auth: AuthContext): void {
  res.locals.auth = auth;
}

/** The authenticated caller; only call behind the auth middleware. */
export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new Error('authOf called on a request that did not pass authentication');
  return auth;
}

export function maybeAuthOf(res: Response): AuthContext | undefined {
  return res.locals.auth as AuthContext | undefined;
}
