/** The shapes shared by the mock's layers. */
import type { MockResponse } from './answers.ts';
import type { ApiName, Route } from './routes.ts';

/** An account of the mock: its id and plan. */
export interface Account {
  id: string;
  plan: string;
}

export interface MockRequest {
  api: ApiName;
  method: string;
  url: URL;
  headers: Headers;
  /** The body as text; undefined when none was sent. */
  body?: string;
  /** The body's size in bytes (it may have been cut short past the limit). */
  bodyBytes: number;
  /** False when the body's bytes were not valid UTF-8 (a transport that sees bytes says so). */
  utf8?: boolean;
  /** The caller's address: the key of per-address limits. */
  clientAddress: string;
}

export interface MockOptions {
  /** Seconds a job takes from creation to completed (default 5; queued for the first fifth, at most 1 s). */
  jobSeconds?: number;
  /** Lifetime of the tokens the mock mints, in seconds (default 900, as the server's). */
  tokenSeconds?: number;
  /**
   * The API keys POST /auth/token accepts, each with its plan. Default: any well-formed key and
   * secret, each key its own account, on `plan`.
   */
  credentials?: { apiKey: string; secret: string; plan?: string }[];
  /** The plan of accounts when `credentials` does not say (default "pro"). */
  plan?: string;
  /** Where sources and restore targets may lie (default: anywhere); outside → 403 SOURCE_NOT_ALLOWED / TARGET_NOT_ALLOWED. */
  allowedRoots?: string[];
  /** The destinations that exist (default cloud and local); others → 422 DESTINATION_UNAVAILABLE. */
  destinations?: string[];
}

/** One request as the state layer sees it, after routing, authentication and validation. */
export interface MockCall {
  request: MockRequest;
  route: Route;
  /** The API's base path ('/api/v1' or ''), for Location headers. */
  basePath: string;
  /** Query parameters, the spec's defaults filled in. */
  query: URLSearchParams;
  /** The JSON body, the spec's defaults filled in. */
  body: unknown;
  prefer: string | null;
  /** The caller's account (operations that need a token). */
  account?: Account;
}

/** Answers one operation from the state; undefined leaves it to the spec's examples. */
export type Handler = (call: MockCall) => MockResponse | undefined | Promise<MockResponse | undefined>;
