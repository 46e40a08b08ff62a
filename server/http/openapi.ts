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
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator.js';

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
interface RequestValidatorInternals {
  middlewareCache: Record<string, Middleware>;
  buildMiddleware(path: string, schema: OpenAPIV3.OperationObject, contentType: ContentType, ajvCacheKey: string): Middleware;
  ajv: { schemas: object };
  ajvBody: { schemas: object };
}
interface ResponseValidatorInternals {
  validatorsCache: Record<string, unknown>;
  buildValidators(responses: unknown, ajvCacheKey: string): unknown;
  ajvBody: { schemas: object };
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
  const responses = responseValidator?.validate() ?? null;
  const responseIds = new Map<string, number>();

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
    if (responseCaches && responseSchema) {
      // Built one status at a time, each under a key naming its response's content: the many
      // operations that answer the same response (the shared error answers) share one compilation.
      const built: Record<string, unknown> = {};
      for (const [status, response] of Object.entries((responseSchema as { responses: Record<string, unknown> }).responses)) {
        const content = JSON.stringify(response);
        let id = responseIds.get(content);
        if (id === undefined) responseIds.set(content, (id = responseIds.size));
        Object.assign(built, responseCaches.buildValidators({ [status]: response }, `response-${id}`));
      }
      for (const mediaType of mediaTypes) responseCaches.validatorsCache[keyOf(mediaType)] = built;
    }
    // The request's Content-Type as sent picks its validator without the library parsing it again.
    const request: RequestHandler = (req, res, next) => {
      const built = byHeader.get(req.headers['content-type']);
      if (built) built(req, res, next);
      else requests.validate(req as unknown as OpenApiRequest, res, next);
    };
    return responses ? [metadata, request, responses as RequestHandler] : [metadata, request];
  };
  const schemaCount = (ajv: { schemas: object }) => Object.keys(ajv.schemas).length;
  validator.compiled = () => schemaCount(requestCaches.ajv) + schemaCount(requestCaches.ajvBody) + (responseCaches ? schemaCount(responseCaches.ajvBody) : 0);
  return validator;
}
