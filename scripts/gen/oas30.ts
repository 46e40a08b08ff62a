// Finishes the 3.1 → 3.0 down-conversion where @apiture/openapi-down-convert stops short, so the
// copy is valid 3.0 that Dredd 14 can run:
// - a `{ type: 'null' }` branch of oneOf/anyOf becomes `nullable: true`;
// - a falsy `const` (e.g. `success: false`, skipped by the converter) becomes a one-value enum;
// - `info.summary` (3.1 only) is dropped; siblings of a `$ref` (ignored in 3.0) are dropped when
//   they are documentation, else the $ref is wrapped in allOf so they keep their meaning;
// - a parameter gets the single `example` Dredd needs to expand a URI template: its first named
//   example, else its schema's example (Dredd reads neither of those).
type Node = Record<string, unknown>;

const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNullSchema = (s: unknown): boolean => isObject(s) && s.type === 'null' && Object.keys(s).length === 1;

export function finishOas30<T>(doc: T): T {
  const deref = (node: unknown): unknown => {
    if (!isObject(node) || typeof node.$ref !== 'string' || !node.$ref.startsWith('#/')) return node;
    const path = node.$ref.slice(2).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    return deref(path.reduce<unknown>((cur, part) => (isObject(cur) ? cur[part] : undefined), doc));
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(visit);
      return;
    }
    if (!isObject(node)) return;
    refSiblings(node);
    nullableBranches(node);
    if ('const' in node && !isObject(node.const)) {
      node.enum = [node.const];
      delete node.const;
    }
    if (typeof node.in === 'string' && typeof node.name === 'string' && !('example' in node)) parameterExample(node, deref);
    Object.values(node).forEach(visit);
  };
  if (isObject(doc) && isObject(doc.info)) delete doc.info.summary;
  visit(doc);
  return doc;
}

function refSiblings(node: Node): void {
  if (typeof node.$ref !== 'string') return;
  delete node.description;
  delete node.summary;
  if (Object.keys(node).length === 1) return;
  node.allOf = [{ $ref: node.$ref }];
  delete node.$ref;
}

function parameterExample(param: Node, deref: (node: unknown) => unknown): void {
  if (isObject(param.examples)) {
    const first = deref(Object.values(param.examples)[0]);
    if (isObject(first) && 'value' in first) param.example = first.value;
    delete param.examples;
    return;
  }
  const schema = deref(param.schema);
  if (isObject(schema) && 'example' in schema) param.example = schema.example;
  else if (isObject(schema) && Array.isArray(schema.examples) && schema.examples.length > 0) param.example = schema.examples[0];
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
