/**
 * fast-check arbitraries from the JSON Schemas of the bundled documents: values a schema
 * accepts (with a few named properties drawn from realistic values instead, so requests get past
 * validation into the handlers), and the mutations that break them.
 */
import fc from 'fast-check';
import { pointer, type Json } from '../lib/spec.ts';

type Arb = fc.Arbitrary<unknown>;

/** Property name → arbitrary used instead of the schema (paths, ids, URLs that must stay local). */
export type Overrides = Record<string, Arb>;

function resolve(doc: Json, schema: Json): Json {
  let s = schema;
  for (let i = 0; i < 20 && s && typeof s.$ref === 'string'; i++) {
    const { $ref, ...rest } = s;
    s = { ...pointer(doc, $ref), ...rest };
  }
  return s ?? {};
}

function stringArb(s: Json): Arb {
  const min: number = s.minLength ?? 0;
  const max: number = Math.min(s.maxLength ?? 40, Math.max(min, 40));
  if (s.format === 'email') return fc.emailAddress().filter((e) => e.length >= min && e.length <= (s.maxLength ?? 254));
  if (s.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (s.pattern) {
    const re = new RegExp(s.pattern);
    const fits = (v: string) => v.length >= min && v.length <= (s.maxLength ?? 4096);
    try {
      return fc.stringMatching(re).filter(fits);
    } catch {
      // fast-check cannot generate from some constructs (lookahead): filter plain strings instead.
      return fc.string({ minLength: Math.max(min, 1), maxLength: max }).filter((v) => fits(v) && re.test(v));
    }
  }
  return fc.string({ minLength: min, maxLength: max, unit: 'grapheme' });
}

export function valueArb(doc: Json, raw: Json, overrides: Overrides = {}, depth = 0): Arb {
  const s = resolve(doc, raw);
  if (depth > 6) return fc.constant(null);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) {
    return fc.oneof(...((s.oneOf ?? s.anyOf) as Json[]).map((x) => valueArb(doc, x, overrides, depth + 1)));
  }
  if (Array.isArray(s.allOf)) {
    const merged: Json = { type: 'object', properties: {}, required: [] };
    for (const part of s.allOf as Json[]) {
      const p = resolve(doc, part);
      Object.assign(merged.properties, p.properties ?? {});
      merged.required.push(...(p.required ?? []));
      if (p.additionalProperties === false) merged.additionalProperties = false;
    }
    return valueArb(doc, merged, overrides, depth + 1);
  }
  const type = Array.isArray(s.type) ? s.type : [s.type ?? (s.properties ? 'object' : 'string')];
  const arbs: Arb[] = type.map((t: string) => {
    switch (t) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer({ min: s.minimum ?? -1_000_000, max: s.maximum ?? 1_000_000 });
      case 'number':
        return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
      case 'array':
        return fc.array(valueArb(doc, s.items ?? {}, overrides, depth + 1), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) }).map((a) =>
          s.uniqueItems ? [...new Map(a.map((v) => [JSON.stringify(v), v])).values()] : a,
        );
      case 'object': {
        const props: Record<string, Arb> = {};
        for (const [name, sub] of Object.entries<Json>(s.properties ?? {})) {
          props[name] = overrides[name] ?? valueArb(doc, sub, overrides, depth + 1);
        }
        return fc.record(props, { requiredKeys: (s.required ?? []).filter((k: string) => k in props) });
      }
      default:
        return stringArb(s);
    }
  });
  return arbs.length === 1 ? (arbs[0] as Arb) : fc.oneof(...arbs);
}

/** A value of some other JSON type than the schema wants. */
export const wrongTypeArb: Arb = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 2 }),
  fc.string({ maxLength: 20 }),
);

/** Strings meant to upset parsers, routers and file-system code. */
export const nastyStringArb: Arb = fc.oneof(
  fc.constantFrom('', ' ', '..', '../..', '/..', '%00', '\u0000', 'null', 'undefined', '{}', '[]', 'NaN', '-1', '1e309', '\u202e\u0041', 'ä½ å¥½', '😀', '<script>', "' OR 1=1 --", '${7*7}', '/etc/passwd', 'C:\\Windows'),
  fc.string({ maxLength: 64, unit: 'binary' }),
  fc.string({ minLength: 5000, maxLength: 9000 }),
);
