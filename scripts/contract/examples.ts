// Validates every example of a bundled OpenAPI 3.1 document against its schema with Ajv
// (JSON Schema 2020-12, formats checked). Schemas are compiled by JSON pointer into the whole
// document, so `#/components/...` $refs resolve inside the bundle.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';

// ajv-formats is CommonJS; under Node's ESM loader its default export is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

export interface ExampleCase {
  /** Where the example is: JSON pointer of the example value in the document. */
  at: string;
  /** JSON pointer of the schema it must satisfy. */
  schema: string;
  value: unknown;
}

export interface ExampleProblem {
  at: string;
  message: string;
}

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const esc = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** Keywords whose value is one subschema, a list of them, or a map of them. */
const SUBSCHEMA = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties'];
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'];

function resolveRef(doc: unknown, node: unknown): unknown {
  if (!isObject(node) || typeof node.$ref !== 'string' || !node.$ref.startsWith('#/')) return node;
  let cur: unknown = doc;
  for (const part of node.$ref.slice(2).split('/')) {
    cur = isObject(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  }
  return resolveRef(doc, cur);
}

/** Every example of the document with the schema it belongs to. */
export function collectExamples(doc: unknown): ExampleCase[] {
  const cases: ExampleCase[] = [];

  const schemaExamples = (ptr: string, schema: unknown): void => {
    if (!isObject(schema)) return;
    if ('example' in schema) cases.push({ at: `${ptr}/example`, schema: ptr, value: schema.example });
    if (Array.isArray(schema.examples)) schema.examples.forEach((value, i) => cases.push({ at: `${ptr}/examples/${i}`, schema: ptr, value }));
    for (const k of SUBSCHEMA) if (isObject(schema[k])) schemaExamples(`${ptr}/${k}`, schema[k]);
    for (const k of SUBSCHEMA_LISTS) {
      const list = schema[k];
      if (Array.isArray(list)) list.forEach((s, i) => schemaExamples(`${ptr}/${k}/${i}`, s));
    }
    for (const k of SUBSCHEMA_MAPS) {
      const map = schema[k];
      if (isObject(map)) for (const [name, s] of Object.entries(map)) schemaExamples(`${ptr}/${k}/${esc(name)}`, s);
    }
  };

  // Media types, parameters and headers: `schema` beside `example` / `examples: { name: { value } }`.
  const walk = (ptr: string, node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((n, i) => walk(`${ptr}/${i}`, n));
      return;
    }
    if (!isObject(node)) return;
    if (isObject(node.schema)) {
      const schemaPtr = `${ptr}/schema`;
      if ('example' in node) cases.push({ at: `${ptr}/example`, schema: schemaPtr, value: node.example });
      if (isObject(node.examples)) {
        for (const [name, ex] of Object.entries(node.examples)) {
          const example = resolveRef(doc, ex);
          if (isObject(example) && 'value' in example) cases.push({ at: `${ptr}/examples/${esc(name)}`, schema: schemaPtr, value: example.value });
        }
      }
      schemaExamples(schemaPtr, node.schema);
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'schema' || key === 'example' || key === 'examples') continue;
      if (ptr === '#/components' && key === 'schemas' && isObject(value)) {
        for (const [name, s] of Object.entries(value)) schemaExamples(`#/components/schemas/${esc(name)}`, s);
        continue;
      }
      walk(`${ptr}/${esc(key)}`, value);
    }
  };
  walk('#', doc);
  return cases;
}

/** Checks every example; returns one problem per example that does not match its schema. */
export function validateExamples(doc: unknown): { checked: number; problems: ExampleProblem[] } {
  const id = 'https://contract.invalid/openapi.json';
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema({ ...(doc as object), $id: id });
  const cases = collectExamples(doc);
  const problems: ExampleProblem[] = [];
  for (const c of cases) {
    const validate = ajv.getSchema(`${id}${c.schema}`);
    if (!validate) {
      problems.push({ at: c.at, message: `schema ${c.schema} not found` });
      continue;
    }
    if (!validate(c.value)) problems.push({ at: c.at, message: ajv.errorsText(validate.errors, { dataVar: 'example' }) });
  }
  return { checked: cases.length, problems };
}
