import type { CheckResult, Context } from '../lib/check.ts';
import type { ServerHandle } from '../lib/stack.ts';
export async function arazzoCheck(_ctx: Context, _s: ServerHandle): Promise<CheckResult> { return { name: 'arazzo', ok: false, summary: 'not built yet', failures: ['todo'] }; }
