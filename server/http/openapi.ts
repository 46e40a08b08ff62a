import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as legacyUrlParse } from 'node:url';
import type { RequestHandler } from 'express';
import { AjvOptions } from 'express-openapi-validator/dist/framework/ajv/options.js';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader.js';
import type { OpenApiRequest, OpenApiRequestMetadata, OpenAPIV3, OpenApiValidatorOpts, ValidateResponseOpts } from 'express-openapi-validator/dist/framework/types.js';
import { RequestValidator, ResponseValidator } from 'express-openapi-validator/dist/middlewares/index.js';
import { ContentType } from 'express-openapi-validator/dist/middlewares/util.js';
import { SchemaPreprocessor } from 'express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js';
import { dereferenceParameter, normalizeParameter } from 'express-openapi-validator/dist/middlewares/parsers/util.js';
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator.js';
import { isSettled } from './envelope.ts';

export type OpenApiDocument = {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
};

export const GENERATED_DIR = join(import.meta.dirname, '..', '..', 'generated');

export function loadDocument(dir: string, name: 'backup' | 'tools'): OpenApiDocument {
  return JSON.parse(readFileSync(join(dir, `${name}.openapi.json`), 'utf8')) as OpenApiDocument;
}

/**
 * One document for the validator holding both APIs, each path under its base path and the
 * server URL at the origin. express-openapi-validator mishandles several specs at once (responses
 * are checked against the first spec's components), so the two are merged; shared components
 * must be identical in both, which the build guarantees (they come from openapi/shared).
 */
export function mergeDocuments(parts: Array<{ doc: OpenApiDocument; basePath: string }>): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const components: Record<string, Record<string, unknown>> = {};
  for (const { doc, basePath } of parts) {
    for (const [path, item] of Object.entries(doc.paths)) {
      const full = basePath + path;
      if (paths[full]) throw new Error(`Both documents define ${full}`);
      paths[full] = item;
    }
    for (const [section, entries] of Object.entries(doc.components ?? {})) {
      const target = (components[section] ??= {});
      for (const [name, value] of Object.entries(entries)) {
        if (name in target && JSON.stringify(target[name]) !== JSON.stringify(value)) {
          throw new Error(`Component ${section}/${name} differs between the documents`);
        }
        target[name] = value;
      }
    }
  }
  const first = parts[0]!.doc;
  return { openapi: first.openapi, info: { title: 'Backup service', version: first.info.version }, servers: [{ url: '/' }], paths, components };
}

/** Whether the operation at `path` (full, with its base path) and `method` takes a request body. */
export function takesBody(doc: OpenApiDocument, path: string, method: string): boolean {
  const operation = doc.paths[path]?.[method.toLowerCase()] as { requestBody?: unknown } | undefined;
  return operation?.requestBody !== undefined;
}

/**
 * The validator calls the legacy url.parse() on every request. Until url.parse() has issued its
 * deprecation warning once, Node decides on each call whether the caller lies in node_modules
 * (whose calls do not warn) by walking the call stack, which costs more than the parse; called
 * once here, with deprecation warnings silenced, it is marked as warned and every later call
 * skips the walk. Nothing is printed.
 */
function settleUrlParseWarning(): void {
  const silenced = process.noDeprecation;
  process.noDeprecation = true;
  try {
    legacyUrlParse('/');
  } finally {
    process.noDeprecation = silenced;
  }
}

/** The validation of one operation: request (always), then response (when enabled). */
export type OperationValidator = ((method: string, path: string) => RequestHandler[]) & {
  /** How many validators the library has compiled so far (none more once start-up is done). */
  compiled(): number;
};

/** The request media types a body is expected in: each gets its validator before the first request. */
const BODY_MEDIA_TYPES = ['application/json', 'application/json; charset=utf-8'];

type Middleware = (req: unknown, res: unknown, next: unknown) => void;
/** The library's per-(method, route, request media type) caches, filled here at start instead of on first use. */
type Check = ((data: unknown) => boolean) | undefined;
interface RequestValidatorInternals {
  middlewareCache: Record<string, Middleware>;
  buildMiddleware(path: string, schema: OpenAPIV3.OperationObject, contentType: ContentType, ajvCacheKey: string): Middleware;
  ajv: { schemas: object; getSchema(key: string): Check };
  ajvBody: { schemas: object; getSchema(key: string): Check };
}

const SCALAR_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

/**
 * Whether the library's per-request rewriting of the request (query parsing, exploded and
 * delimited arrays, JSON-encoded parameters) can change nothing for a request without a query
 * string: the operation takes no body, and only path and header parameters of scalar types.
 */
function needsNoRewriting(doc: OpenAPIV3.DocumentV3, ajv: unknown, schema: OpenAPIV3.OperationObject, expressRoute: string): boolean {
  if (schema.requestBody || expressRoute.endsWith('*')) return false;
  return (schema.parameters ?? []).every((p) => {
    const parameter = dereferenceParameter(doc, p) as OpenAPIV3.ParameterObject;
    if ((parameter.in !== 'path' && parameter.in !== 'header') || parameter.content) return false;
    const type = (normalizeParameter(ajv as never, parameter).schema as { type?: unknown }).type;
    return typeof type === 'string' && SCALAR_TYPES.has(type);
  });
}
type ResponseCheck = (data: { response: unknown }) => boolean;
/** Per status (or `4XX`, `default`), per response media type: the compiled check of the body. */
type BuiltResponses = Record<string, Record<string, ResponseCheck>>;
interface ResponseValidatorInternals {
  validatorsCache: Record<string, unknown>;
  buildValidators(responses: unknown, ajvCacheKey: string): BuiltResponses;
  canValidateContentType(contentType: string): boolean;
  /** Checks one answer, throwing the library's InternalServerError when it breaks the document. */
  _validate(args: { validators: BuiltResponses; body: unknown; statusCode: number; path: string; accepts: string[] }): void;
  ajvBody: { schemas: object; getSchema(key: string): ResponseCheck | undefined; addSchema(schema: object, key: string): void };
  spec: { components?: object; paths?: object };
}

/**
 * A success answer's check in two parts, for answers whose `data` was marked by settledData:
 * the envelope without `data` (every answer) and `data` alone, whose passing objects are
 * remembered (settled data is frozen, and the check is a pure function of it).
 */
interface SplitCheck {
  envelope: ResponseCheck;
  data: ResponseCheck;
  passed: WeakSet<object>;
}

const SUCCESS_ENVELOPE = '#/components/schemas/SuccessEnvelope';

/**
 * The schema of `data` when `schema` is exactly the success envelope with `data` of that schema
 * (`allOf` of SuccessEnvelope and an object requiring only `data`), so that the two parts'
 * checks together decide what the whole does; otherwise undefined.
 */
function envelopeData(schema: unknown, schemas: Record<string, unknown>): unknown {
  let s = schema as Record<string, unknown>;
  const ref = s?.$ref;
  if (typeof ref === 'string' && Object.keys(s).length === 1 && ref.startsWith('#/components/schemas/')) s = schemas[ref.slice('#/components/schemas/'.length)] as Record<string, unknown>;
  if (!s || !Object.keys(s).every((k) => k === 'allOf' || k === 'description')) return undefined;
  const allOf = s.allOf as Array<Record<string, unknown>> | undefined;
  if (!Array.isArray(allOf) || allOf.length !== 2) return undefined;
  const [base, own] = allOf as [Record<string, unknown>, Record<string, unknown>];
  if (Object.keys(base).length !== 1 || base.$ref !== SUCCESS_ENVELOPE) return undefined;
  if (!Object.keys(own).every((k) => k === 'type' || k === 'required' || k === 'properties' || k === 'description')) return undefined;
  const properties = own.properties as Record<string, unknown> | undefined;
  const required = (own.required ?? []) as unknown[];
  if (own.type !== 'object' || !properties || Object.keys(properties).join() !== 'data' || !required.every((r) => r === 'data')) return undefined;
  return properties.data;
}

/**
 * Response validation of one operation: res.json is wrapped as the library's own hook wraps it
 * (no check of 5xx answers or of answers already sent; a failure is handed to the error
 * handler), and an answer whose status has one JSON media type is checked by that status's
 * validator, found when the operation was mounted. Anything else, and every answer that fails
 * the check, goes through the library's own per-request path, which finds the same validator
 * and throws its own error.
 */
function responseChecker(library: ResponseValidatorInternals, built: BuiltResponses, splits: Map<string, SplitCheck>): RequestHandler {
  const single = new Map<string, ResponseCheck>();
  for (const [status, byType] of Object.entries(built)) {
    const types = Object.keys(byType);
    if (types.length !== 1) continue;
    let validatable = false;
    try {
      validatable = library.canValidateContentType(types[0]!);
    } catch {
      // the library's path decides
    }
    if (validatable) single.set(status, byType[types[0]!]!);
  }
  const statusOf = (status: number): string | undefined => {
    if (String(status) in built) return String(status);
    const range = `${String(status)[0]}XX`;
    if (range in built) return range;
    return 'default' in built ? 'default' : undefined;
  };
  const passes = (status: string | undefined, body: unknown): boolean => {
    const check = status === undefined ? undefined : single.get(status);
    if (!check || body === undefined || body === null) return false;
    const data = (body as { data?: unknown }).data;
    const split = isSettled(data) ? splits.get(status!) : undefined;
    if (!split) return check({ response: body });
    if (!split.envelope({ response: body })) return false;
    if (split.passed.has(data as object)) return true;
    if (!split.data({ response: data })) return false;
    split.passed.add(data as object);
    return true;
  };
  return (req, res, next) => {
    const json = res.json;
    res.json = function checked(body: unknown) {
      res.json = json;
      if (res.headersSent) return res;
      if (res.statusCode >= 500) return json.call(this, body);
      if (!passes(statusOf(res.statusCode), body)) {
        try {
          const contentType = res.getHeader('content-type');
          const accept = req.headers.accept;
          const accepts = contentType ? [String(contentType)] : accept ? accept.split(',').map((h) => h.trim()) : [];
          library._validate({ validators: built, body, statusCode: res.statusCode, path: req.originalUrl, accepts });
        } catch (err) {
          next(err);
          return res;
        }
      }
      if (res.headersSent) return res;
      return json.call(this, body);
    };
    next();
  };
}

/**
 * express-openapi-validator, built once at start for every operation of the merged document.
 * Its `middleware()` resolves the document behind a promise every request waits on, and matches
 * each request by compiling the path pattern of every route of the document in turn; here the
 * document is loaded and preprocessed once, and each operation's chain is mounted on that
 * operation's own Express route, so the route Express matched (with the same strict,
 * case-sensitive routing) names the operation. Request and response validation are the library's
 * own, with the options below; security is checked by our own middleware, and no operation takes
 * multipart bodies.
 *
 * The library compiles an operation's validators on the first request to it (per request media
 * type), which made the first requests after a start wait on compilations; here each operation's
 * request validator (bodiless, and for every BODY_MEDIA_TYPES) and response validators are
 * compiled when the operation is mounted, before the server listens, into the library's own
 * caches, so a later request of another media type still gets the library's own handling.
 */
export async function openApiValidator(doc: OpenApiDocument, validateResponses: boolean): Promise<OperationValidator> {
  settleUrlParseWarning();
  const responseOpts: ValidateResponseOpts = { allErrors: true };
  const options = {
    apiSpec: doc as unknown as OpenAPIV3.DocumentV3,
    validateApiSpec: true,
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: validateResponses ? responseOpts : false,
    validateSecurity: false,
    ignoreUndocumented: true,
    validateFormats: true,
  } satisfies OpenApiValidatorOpts;
  const eov = new OpenApiValidator(options);
  const spec = await new OpenApiSpecLoader({ apiDoc: structuredClone(options.apiSpec), validateApiSpec: true, $refParser: { mode: 'bundle' } }).load();
  const { ajvOpts } = eov as unknown as { ajvOpts: AjvOptions };
  const { apiDocRes } = new SchemaPreprocessor(spec.apiDoc, ajvOpts.preprocessor, options.validateResponses as ValidateResponseOpts).preProcess();
  const requests = new RequestValidator(spec.apiDoc, ajvOpts.request);
  const requestCaches = requests as unknown as RequestValidatorInternals;
  const responseValidator = validateResponses ? new ResponseValidator(apiDocRes, ajvOpts.response, responseOpts, spec.serial) : null;
  const responseCaches = responseValidator as unknown as ResponseValidatorInternals | null;
  const responseIds = new Map<string, number>();
  const dataIds = new Map<string, number>();
  /** Compiled as the library compiles a response's check: `{ response }` against the schema, with the document's components. */
  const compileResponse = (schema: unknown, key: string): ResponseCheck => {
    const ajv = responseCaches!.ajvBody;
    let check = ajv.getSchema(key);
    if (!check) {
      ajv.addSchema({ type: 'object', properties: { response: schema }, components: responseCaches!.spec.components ?? {}, paths: responseCaches!.spec.paths }, key);
      check = ajv.getSchema(key)!;
    }
    return check;
  };
  /** Per status whose one JSON answer is a success envelope: its check in two parts. */
  const splitChecks = (responseSchema: { responses: Record<string, unknown> }): Map<string, SplitCheck> => {
    const splits = new Map<string, SplitCheck>();
    const schemas = ((responseCaches!.spec.components ?? {}) as { schemas?: Record<string, unknown> }).schemas ?? {};
    for (const [status, response] of Object.entries(responseSchema.responses)) {
      const content = (response as { content?: Record<string, { schema?: unknown }> }).content;
      if (!content || Object.keys(content).length !== 1) continue;
      const data = envelopeData(Object.values(content)[0]!.schema, schemas);
      if (data === undefined) continue;
      const text = JSON.stringify(data);
      let id = dataIds.get(text);
      if (id === undefined) dataIds.set(text, (id = dataIds.size));
      splits.set(status, { envelope: compileResponse({ $ref: SUCCESS_ENVELOPE }, 'response-envelope'), data: compileResponse(data, `response-data-${id}`), passed: new WeakSet() });
    }
    return splits;
  };

  const validator = (method: string, path: string): RequestHandler[] => {
    const route = spec.routes.find((r) => r.openApiRoute === path && r.method === method.toUpperCase());
    if (!route) throw new Error(`The document has no operation ${method.toUpperCase()} ${path}`);
    const key = route.openApiRoute.substring(route.basePath.length);
    const schema = spec.apiDoc.paths![key]![method.toLowerCase() as 'get'] as OpenAPIV3.OperationObject;
    const responseSchema = apiDocRes?.paths?.[key]?.[method.toLowerCase() as 'get'];
    // What the library's metadata middleware records for a request it matched to this route.
    const metadata: RequestHandler = (req, _res, next) => {
      (req as unknown as { openapi: OpenApiRequestMetadata & { _responseSchema?: unknown } }).openapi = {
        expressRoute: route.expressRoute,
        openApiRoute: route.openApiRoute,
        pathParams: req.params as Record<string, string>,
        schema,
        serial: spec.serial,
        _responseSchema: responseSchema,
      };
      next();
    };

    // The library's cache keys: `${method}-${expressRoute}-${normalized request media type}`.
    const mediaTypes: Array<string | undefined> = schema.requestBody ? BODY_MEDIA_TYPES : [undefined];
    const keyOf = (mediaType: string | undefined) => `${route.method}-${route.expressRoute}-${ContentType.fromString(mediaType as string).normalize() ?? 'not_provided'}`;
    const compiledKey = keyOf(mediaTypes[0]); // the variants share one body schema, so one compilation
    const byHeader = new Map<string | undefined, Middleware>();
    for (const mediaType of mediaTypes) {
      const built = requestCaches.buildMiddleware(route.expressRoute, schema, ContentType.fromString(mediaType as string), compiledKey);
      requestCaches.middlewareCache[keyOf(mediaType)] = built;
      byHeader.set(mediaType, built);
    }
    let responses: RequestHandler | null = null;
    if (responseCaches && responseSchema) {
      // Built one status at a time, each under a key naming its response's content: the many
      // operations that answer the same response (the shared error answers) share one compilation.
      const built: BuiltResponses = {};
      for (const [status, response] of Object.entries((responseSchema as { responses: Record<string, unknown> }).responses)) {
        const content = JSON.stringify(response);
        let id = responseIds.get(content);
        if (id === undefined) responseIds.set(content, (id = responseIds.size));
        Object.assign(built, responseCaches.buildValidators({ [status]: response }, `response-${id}`));
      }
      for (const mediaType of mediaTypes) responseCaches.validatorsCache[keyOf(mediaType)] = built;
      responses = responseChecker(responseCaches, built, splitChecks(responseSchema as { responses: Record<string, unknown> }));
    }
    // A request the library would not rewrite is checked by the library's own compiled
    // validators directly; one that fails them goes through the library to get its error.
    const general = requestCaches.ajv.getSchema(compiledKey);
    const bodyCheck = requestCaches.ajvBody.getSchema(compiledKey);
    const direct = general && bodyCheck && needsNoRewriting(spec.apiDoc as OpenAPIV3.DocumentV3, requestCaches.ajv, schema, route.expressRoute) ? { general, bodyCheck } : null;
    // The request's Content-Type as sent picks its validator without the library parsing it again.
    const request: RequestHandler = (req, res, next) => {
      if (direct && !req.url.includes('?')) {
        // Kept as a plain property, as the library leaves it, so what the checks set stays.
        const query = req.query;
        Object.defineProperty(req, 'query', { value: query, writable: true, enumerable: true, configurable: true });
        const data = { query, headers: req.headers, params: req.params, cookies: undefined, body: req.body };
        if (direct.general(data) && direct.bodyCheck(data)) {
          next();
          return;
        }
      }
      const built = byHeader.get(req.headers['content-type']);
      if (built) built(req, res, next);
      else requests.validate(req as unknown as OpenApiRequest, res, next);
    };
    return responses ? [metadata, request, responses] : [metadata, request];
  };
  const schemaCount = (ajv: { schemas: object }) => Object.keys(ajv.schemas).length;
  validator.compiled = () => schemaCount(requestCaches.ajv) + schemaCount(requestCaches.ajvBody) + (responseCaches ? schemaCount(responseCaches.ajvBody) : 0);
  return validator;
}
