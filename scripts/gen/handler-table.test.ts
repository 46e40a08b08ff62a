import { describe, expect, it } from 'vitest';
import type { OpenApiDocument } from './apis.ts';
import { basePath, expressPath, operationRows } from './handler-table.ts';

const doc = (extra: Record<string, unknown>): OpenApiDocument => ({ openapi: '3.1.0', info: { title: 'T', version: '1.0.0' }, paths: {}, ...extra });

describe('handler table helpers', () => {
  it('writes OpenAPI paths in Express 5 syntax', () => {
    expect(expressPath('/backup/{id}/cancel')).toBe('/backup/:id/cancel');
    expect(expressPath('/api/contacts/{type}')).toBe('/api/contacts/:type');
    expect(expressPath('/a/{backup-id}')).toBe('/a/:"backup-id"');
  });

  it('takes the mount path from the first server URL', () => {
    expect(basePath(doc({ servers: [{ url: 'http://localhost:8080/api/v1' }] }))).toBe('/api/v1');
    expect(basePath(doc({ servers: [{ url: '{origin}/api/v1/' }] }))).toBe('/api/v1');
    expect(basePath(doc({ servers: [{ url: '{scheme}://{host}:{port}/api/v1' }] }))).toBe('/api/v1');
    expect(basePath(doc({ servers: [{ url: '/api/v1' }] }))).toBe('/api/v1');
    expect(basePath(doc({ servers: [{ url: 'https://example.net' }] }))).toBe('');
    expect(basePath(doc({}))).toBe('');
  });

  it('lists operations with their security and the response headers that are not required', () => {
    const rows = operationRows(
      doc({
        security: [{ bearerAuth: [] }],
        components: { headers: { Applied: { required: false, schema: { type: 'string' } }, Loc: { required: true, schema: { type: 'string' } } } },
        paths: {
          '/backup': {
            post: {
              operationId: 'createBackup',
              responses: { '202': { description: 'ok', headers: { Location: { $ref: '#/components/headers/Loc' }, 'Preference-Applied': { $ref: '#/components/headers/Applied' } } } },
            },
          },
          '/status': { get: { operationId: 'getStatus', security: [], responses: { '200': { description: 'ok' } } } },
        },
      }),
    );
    expect(rows).toEqual([
      { operationId: 'createBackup', optionalHeaders: ['202 Preference-Applied'], method: 'post', path: '/backup', expressPath: '/backup', security: ['bearerAuth'], summary: '' },
      { operationId: 'getStatus', optionalHeaders: [], method: 'get', path: '/status', expressPath: '/status', security: [], summary: '' },
    ]);
  });

  it('refuses an operation without an operationId', () => {
    expect(() => operationRows(doc({ paths: { '/x': { get: { responses: {} } } } }))).toThrow(/GET \/x has no operationId/);
  });
});
