// Finishes the 3.1 → 3.0 down-conversion where @apiture/openapi-down-convert stops short, so the
// copy is valid 3.0 that Dredd 14 can run:
// - a `{ type: 'null' }` branch of oneOf/anyOf becomes `nullable: true`;
// - a falsy `const` (e.g. `success: false`, skipped by the converter) becomes a one-value enum;
// - a parameter's named `examples` become the single `example` Dredd reads for URI parameters.
type Node = Record<string, unknown>;

const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNullSchema = (s: unknown): boolean => isObject(s) && s.type === 'null' && Object.keys(s).length === 1;

export function finishOas30<T>(doc: T): T {
  visit(doc);
  return doc;
}

function visit(node: unknown): void {
  if (Array.isArray(node)) {
    node.forEach(visit);
    return;
  }
  if (!isObject(node)) return;
  nullableBranches(node);
  if ('const' in node && !isObject(node.const)) {
    node.enum = [node.const];
    delete node.const;
  }
  if (typeof node.in === 'string' && typeof node.name === 'string' && isObject(node.examples) && !('example' in node)) {
    const first = Object.values(node.examples)[0];
    if (isObject(first) && 'value' in first) node.example = first.value;
    delete node.examples;
  }
  Object.values(node).forEach(visit);
}

function nullableBranches(node: Node): void {
  for (const keyword of ['oneOf', 'anyOf'] as const) {
    const branches = node[keyword];
    if (!Array.isArray(branches) || !branches.some(isNullSchema)) continue;
    const rest = branches.filter((b) => !isNullSchema(b));
    node.nullable = true;
    if (rest.length !== 1) {
      node[keyword] = rest;
      continue;
    }
    delete node[keyword];
    const only = rest[0] as Node;
    // `nullable` has no effect beside a $ref in 3.0; wrapping it in allOf keeps both.
    if ('$ref' in only) node.allOf = [only];
    else Object.assign(node, only, { nullable: true });
  }
}
