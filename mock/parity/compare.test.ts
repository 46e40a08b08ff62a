import { describe, expect, it } from 'vitest';
import { differences, documentedDifferences, shape } from './compare.ts';

const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => ({ status, headers: new Headers(headers), body });

describe('parity comparison', () => {
  it('compares values a client branches on, and only the types of the rest', () => {
    expect(shape({ data: { id: 'bkp_1', status: 'completed', size_bytes: 3, items: [{ type: 'file' }, { type: 'file' }] } })).toEqual({
      data: { id: 'string', items: [{ type: 'file' }], size_bytes: 'number', status: 'completed' },
    });
    expect(differences(answer(200, { data: { id: 'a', status: 'completed' } }), answer(200, { data: { id: 'b', status: 'completed' } }))).toEqual([]);
    expect(differences(answer(200, { data: { status: 'completed' } }), answer(200, { data: { status: 'running' } }))).toHaveLength(1);
    expect(differences(answer(200, { data: { items: [] } }), answer(200, { data: { items: [{ path: 'a' }] } }))).toHaveLength(1);
    expect(differences(answer(404, {}), answer(200, {}))[0]).toBe('status: server 404, mock 200');
  });

  it('compares rate-limit headers by value, Retry-After within a second, Location with its id', () => {
    const h = (remaining: string, retry: string, location: string, id: string) =>
      answer(202, { data: { id } }, { 'x-ratelimit-remaining': remaining, 'retry-after': retry, location });
    expect(differences(h('3', '10', '/api/v1/backup/bkp_a', 'bkp_a'), h('3', '11', '/api/v1/backup/bkp_b', 'bkp_b'))).toEqual([]);
    expect(differences(h('3', '10', '/x', 'a'), h('2', '10', '/x', 'a'))).toEqual(['header x-ratelimit-remaining: server 3, mock 2']);
    expect(differences(h('3', '10', '/x', 'a'), h('3', '12', '/x', 'a'))).toEqual(['header retry-after: server 10, mock 12']);
  });

  it('reads the documented differences from the parity table of docs/mock.md', () => {
    const page = '# The mock\n\n## Where the mock differs from the server\n\n| step | server | mock | why |\n|---|---|---|---|\n| `check-site` | 422 | 200 | the network |\n| `no-reason` | a | b |  |\n\n## Next\n| `elsewhere` | a | b | c |\n';
    expect([...documentedDifferences(page)]).toEqual([['check-site', 'the network']]);
  });
});
