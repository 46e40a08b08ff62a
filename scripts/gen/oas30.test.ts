import { describe, expect, it } from 'vitest';
import { finishOas30 } from './oas30.ts';

describe('finishOas30', () => {
  it('turns a null branch of oneOf into nullable, keeping a lone $ref under allOf', () => {
    const doc = finishOas30({
      a: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Job' }] },
      b: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'x' },
      c: { oneOf: [{ type: 'null' }, { type: 'string' }, { type: 'integer' }] },
    });
    expect(doc).toEqual({
      a: { nullable: true, allOf: [{ $ref: '#/components/schemas/Job' }] },
      b: { type: 'string', nullable: true, description: 'x' },
      c: { nullable: true, oneOf: [{ type: 'string' }, { type: 'integer' }] },
    });
  });

  it('turns a leftover const, including false, into a one-value enum', () => {
    expect(finishOas30({ s: { type: 'boolean', const: false } })).toEqual({ s: { type: 'boolean', enum: [false] } });
  });

  it('drops documentation beside a $ref and wraps a $ref with other siblings in allOf', () => {
    const doc = finishOas30({
      info: { title: 't', version: '1', summary: 'gone' },
      p: { $ref: '#/a', description: 'gone' },
      q: { $ref: '#/b', default: 'zstd', description: 'gone' },
    });
    expect(doc).toEqual({ info: { title: 't', version: '1' }, p: { $ref: '#/a' }, q: { allOf: [{ $ref: '#/b' }], default: 'zstd' } });
  });

  it('gives a parameter the example Dredd needs: its first named example, else its schema example', () => {
    const doc = finishOas30({
      components: {
        schemas: { Id: { type: 'string', examples: ['bkp_1'] } },
        examples: { one: { value: 'general' } },
      },
      params: [
        { name: 'id', in: 'path', schema: { $ref: '#/components/schemas/Id' } },
        { name: 'type', in: 'path', schema: { type: 'string' }, examples: { first: { $ref: '#/components/examples/one' } } },
        { name: 'kept', in: 'query', schema: { type: 'string' }, example: 'k' },
      ],
    }) as { params: unknown[] };
    expect(doc.params).toEqual([
      { name: 'id', in: 'path', schema: { $ref: '#/components/schemas/Id' }, example: 'bkp_1' },
      { name: 'type', in: 'path', schema: { type: 'string' }, example: 'general' },
      { name: 'kept', in: 'query', schema: { type: 'string' }, example: 'k' },
    ]);
  });
});
