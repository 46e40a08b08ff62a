/**
 * `Prefer: example=<name>` in Prism looks for the example only in the response it picked by
 * status (the lowest 2xx unless `code=` is given), so an error example is unreachable by name
 * alone. The mock's front adds the status code that owns the named example.
 */
import { resolveRef, type MockableDocument } from './document.ts';

interface OperationExamples {
  method: string;
  pattern: RegExp;
  /** Example name → the status codes whose responses define it. */
  codes: Map<string, string[]>;
}

interface ResponseObject {
  $ref?: string;
  content?: Record<string, { examples?: Record<string, unknown> }>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function pathPattern(template: string): RegExp {
  const escaped = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${escaped}$`);
}

/** Indexes every named example of every response of the (already prefixed) mock document. */
export function indexExamples(doc: MockableDocument): OperationExamples[] {
  const index: OperationExamples[] = [];
  for (const [template, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const operation = (item as Record<string, { responses?: Record<string, ResponseObject> }>)[method];
      if (!operation?.responses) continue;
      const codes = new Map<string, string[]>();
      for (const [code, ref] of Object.entries(operation.responses)) {
        const response = resolveRef<ResponseObject>(doc, ref);
        for (const media of Object.values(response?.content ?? {})) {
          for (const name of Object.keys(media.examples ?? {})) {
            const owners = codes.get(name) ?? [];
            if (!owners.includes(code)) owners.push(code);
            codes.set(name, owners);
          }
        }
      }
      index.push({ method: method.toUpperCase(), pattern: pathPattern(template), codes });
    }
  }
  // Literal segments win over templated ones, as in Prism's router.
  return index.sort((a, b) => a.pattern.source.split('[^/]+').length - b.pattern.source.split('[^/]+').length);
}

/**
 * The Prefer header to hand to Prism: unchanged unless it names an example without a code and
 * exactly one numeric status of the matched operation defines that example.
 */
export function preferWithCode(
  index: readonly OperationExamples[],
  method: string,
  pathname: string,
  prefer: string | undefined,
): string | undefined {
  if (!prefer || /(?:^|[\s,;])code=/.test(prefer)) return prefer;
  const example = /(?:^|[\s,;])example=("?)([^",;\s]+)\1/.exec(prefer)?.[2];
  if (!example) return prefer;
  const operation = index.find((op) => op.method === method.toUpperCase() && op.pattern.test(pathname));
  const owners = operation?.codes.get(example) ?? [];
  if (owners.length !== 1 || !/^\d{3}$/.test(owners[0]!)) return prefer;
  return `${prefer}, code=${owners[0]}`;
}
