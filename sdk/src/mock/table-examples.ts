/**
 * Answers from the generated operation table alone, without a schema validator: what the MSW
 * handlers run on in a browser or a test. Requests are checked for the body's presence and its
 * required and unknown top-level properties; the SDK's types check the rest before a request is
 * sent.
 */
import { chosenExample, type Route } from './routes.ts';
import type { ExampleSource, MockRequest, Problem } from './service.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const tableExamples: ExampleSource = {
  async validate(request: MockRequest, route: Route): Promise<Problem[]> {
    const problems: Problem[] = [];
    const shape = route.op.requestBody;
    if (!shape) return problems;
    if (request.body === undefined || request.bodyBytes === 0) {
      if (shape.required) problems.push({ path: '/body', message: 'a JSON body is required' });
      return problems;
    }
    const body: unknown = JSON.parse(request.body);
    if (!isObject(body)) return [...problems, { path: '/body', message: 'must be object' }];
    for (const name of shape.requiredProperties) if (!(name in body)) problems.push({ path: '/body', message: `must have required property '${name}'` });
    if (shape.properties) {
      for (const name of Object.keys(body)) if (!shape.properties.includes(name)) problems.push({ path: `/body/${name}`, message: 'must NOT have additional properties' });
    }
    return problems;
  },

  async example(request: MockRequest, route: Route) {
    const prefer = request.headers.get('prefer');
    const chosen = chosenExample(route.op, prefer);
    if (!chosen) {
      return { status: 404, headers: {}, contentType: 'application/problem+json', body: { title: 'No such example', detail: `${route.operationId} has no example for "${prefer}"` } };
    }
    return { status: chosen.status, headers: {}, body: structuredClone(chosen.value) };
  },
};
