import { describe, expect, it } from 'vitest';
import { mockDocument, resolveRef, serverBasePath } from './document.ts';
import { indexExamples, preferWithCode } from './prefer.ts';

const doc = {
  openapi: '3.1.0',
  servers: [{ url: 'https://{host}/api/v1/', variables: { host: { default: 'example.com' } } }],
  components: { responses: { Gone: { content: { 'application/json': { examples: { gone: { value: 1 } } } } } } },
  paths: {
    '/backup/{id}': {
      get: {
        responses: {
          '200': { content: { 'application/json': { examples: { completed: { value: 2 } } } } },
          '410': { $ref: '#/components/responses/Gone' },
        },
      },
    },
    '/backup/latest': { get: { responses: { '200': { content: { 'application/json': { examples: { latest: {} } } } } } } },
  },
};

describe('mock document', () => {
  it('takes the base path from the first server, variables filled in', () => {
    expect(serverBasePath(doc)).toBe('/api/v1');
    expect(serverBasePath({ openapi: '3.1.0', servers: [{ url: 'http://localhost:8080' }] })).toBe('');
    expect(serverBasePath({ openapi: '3.1.0' })).toBe('');
  });

  it('prefixes every path and leaves the source untouched', () => {
    const mocked = mockDocument(doc);
    expect(Object.keys(mocked.paths ?? {})).toEqual(['/api/v1/backup/{id}', '/api/v1/backup/latest']);
    expect(mocked.servers).toEqual([{ url: '/' }]);
    expect(Object.keys(doc.paths)).toEqual(['/backup/{id}', '/backup/latest']);
  });

  it('resolves local $refs', () => {
    expect(resolveRef(doc, { $ref: '#/components/responses/Gone' })).toBe(doc.components.responses.Gone);
    expect(resolveRef(doc, { $ref: '#/nowhere' })).toBeUndefined();
  });

  it('adds the owning status to Prefer: example=<name>, through $refs, and only then', () => {
    const index = indexExamples(mockDocument(doc));
    expect(preferWithCode(index, 'GET', '/api/v1/backup/bkp_1', 'example=gone')).toBe('example=gone, code=410');
    expect(preferWithCode(index, 'GET', '/api/v1/backup/bkp_1', 'example=completed')).toBe('example=completed, code=200');
    expect(preferWithCode(index, 'GET', '/api/v1/backup/latest', 'example=latest')).toBe('example=latest, code=200');
    expect(preferWithCode(index, 'GET', '/api/v1/backup/latest', 'example=gone')).toBe('example=gone');
    expect(preferWithCode(index, 'GET', '/api/v1/backup/bkp_1', 'code=200, example=gone')).toBe('code=200, example=gone');
    expect(preferWithCode(index, 'GET', '/api/v1/backup/bkp_1', 'dynamic=true')).toBe('dynamic=true');
    expect(preferWithCode(index, 'POST', '/api/v1/backup/bkp_1', 'example=gone')).toBe('example=gone');
  });
});
