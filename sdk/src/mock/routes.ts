/** Which operation of the spec a request is for, and the examples of each, from an operation table. */
import type { MockApis, MockOperation } from '../../../generated/mock-operations.ts';

export type { MockApis, MockOperation };
export type ApiName = keyof MockApis;

export interface Route {
  api: ApiName;
  operationId: string;
  op: MockOperation;
  /** Path parameters, decoded. */
  params: Record<string, string>;
}

interface Template {
  operationId: string;
  op: MockOperation;
  pattern: RegExp;
  names: string[];
}

export class Routes {
  readonly apis: MockApis;
  readonly #templates = new Map<ApiName, Template[]>();

  constructor(apis: MockApis) {
    this.apis = apis;
    for (const api of Object.keys(apis) as ApiName[]) {
      const { basePath, operations } = apis[api];
      const list = Object.entries(operations).map(([operationId, op]) => {
        const names: string[] = [];
        const source = (basePath + op.path)
          .split(/(\{[^}]+\})/)
          .map((part) => {
            if (!part.startsWith('{')) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
            names.push(part.slice(1, -1));
            return '([^/]+)';
          })
          .join('');
        return { operationId, op, pattern: new RegExp(`^${source}$`), names };
      });
      // Literal segments win over templated ones, as in the server's router.
      list.sort((a, b) => a.names.length - b.names.length);
      this.#templates.set(api, list);
    }
  }

  /** The operation for a method and a full path (base path included); `allow` when only the method is wrong; null when no path matches. */
  match(api: ApiName, method: string, pathname: string): Route | { allow: string[] } | null {
    const allow = new Set<string>();
    for (const t of this.#templates.get(api) ?? []) {
      const m = t.pattern.exec(pathname);
      if (!m) continue;
      if (t.op.method.toUpperCase() !== method.toUpperCase()) {
        allow.add(t.op.method.toUpperCase());
        continue;
      }
      const params: Record<string, string> = {};
      t.names.forEach((name, i) => {
        try {
          params[name] = decodeURIComponent(m[i + 1]!);
        } catch {
          params[name] = m[i + 1]!;
        }
      });
      return { api, operationId: t.operationId, op: t.op, params };
    }
    return allow.size > 0 ? { allow: [...allow].sort() } : null;
  }

  /** The `data` of an operation's first success example: the template the state builds its records on. */
  template(api: ApiName, operationId: string): Record<string, unknown> {
    const op = this.apis[api].operations[operationId];
    const value = op ? successExample(op)?.value : undefined;
    const data = typeof value === 'object' && value !== null ? (value as { data?: unknown }).data : undefined;
    return typeof data === 'object' && data !== null ? structuredClone(data as Record<string, unknown>) : {};
  }
}

/** The first success example of an operation. */
export function successExample(op: MockOperation): { status: number; value: unknown } | undefined {
  for (const [status, response] of Object.entries(op.responses)) {
    if (!/^2\d\d$/.test(status)) continue;
    const first = Object.values(response.examples)[0];
    if (first !== undefined) return { status: Number(status), value: first };
  }
  return undefined;
}

/** The example `Prefer: example=<name>` / `code=<status>` asks for, else the first success example. */
export function chosenExample(op: MockOperation, prefer: string | null): { status: number; value: unknown } | undefined {
  const name = prefer ? /(?:^|[\s,;])example=("?)([^",;\s]+)\1/.exec(prefer)?.[2] : undefined;
  const code = prefer ? /(?:^|[\s,;])code=(\d{3})/.exec(prefer)?.[1] : undefined;
  for (const [status, response] of Object.entries(op.responses)) {
    if (code !== undefined && status !== code) continue;
    if (name !== undefined) {
      if (name in response.examples) return { status: Number(status), value: response.examples[name] };
      continue;
    }
    const first = Object.values(response.examples)[0];
    if (code !== undefined && first !== undefined) return { status: Number(status), value: first };
  }
  return name === undefined && code === undefined ? successExample(op) : undefined;
}
