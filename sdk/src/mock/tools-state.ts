/** The public tools' state in the mock: newsletter subscribers and contact messages. */
import { merge, newId, successResponse } from './answers.ts';
import type { Routes } from './routes.ts';
import type { Handler } from './types.ts';

/** Addresses are compared with the domain lower-cased, as the server stores them. */
function normalEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 0 ? email : email.slice(0, at) + email.slice(at).toLowerCase();
}

export class ToolsState {
  readonly #subscribers = new Map<string, Record<string, unknown>>();
  readonly #messages: Record<string, unknown>[] = [];
  readonly #routes: Routes;

  constructor(routes: Routes) {
    this.#routes = routes;
  }

  reset(): void {
    this.#subscribers.clear();
    this.#messages.length = 0;
  }

  /** Messages received since the last reset (for tests of a contact form). */
  get messages(): readonly Record<string, unknown>[] {
    return this.#messages;
  }

  readonly handlers: Record<string, Handler> = {
    subscribeNewsletter: (call) => {
      const { email, source } = call.body as { email: string; source: string };
      const key = normalEmail(email);
      const existing = this.#subscribers.get(key);
      if (existing) return successResponse(200, existing);
      const subscription = merge(this.#routes.template('tools', 'subscribeNewsletter'), { email: key, source, subscribed_at: new Date().toISOString() });
      this.#subscribers.set(key, subscription);
      return successResponse(201, subscription);
    },
    submitContact: (call) => {
      const receipt = merge(this.#routes.template('tools', 'submitContact'), { id: newId('msg'), type: call.route.params.type, received_at: new Date().toISOString() });
      this.#messages.push({ ...(call.body as object), ...receipt });
      return successResponse(201, receipt);
    },
  };
}
