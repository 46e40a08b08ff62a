import type { CheckResult, Context } from '../lib/check.ts';
import type { ServerHandle } from '../lib/stack.ts';
export async function prismProxyCheck(_ctx: Context, _s: ServerHandle): Promise<CheckResult> { return { name: 'prism-proxy', ok: false, summary: 'not built yet', failures: ['todo'] }; }
