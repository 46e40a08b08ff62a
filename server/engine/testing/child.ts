import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** What an operation in a child process (testing/backup-child.ts) printed last. */
export interface ChildMessage {
  progress?: { bytesDone?: number; filesDone?: number; phase?: string; packsDone?: number; packsTotal?: number };
  done?: unknown;
}

/**
 * Runs `backup-child.ts <repo> ...args` and SIGKILLs it at the first message for which `killWhen`
 * is true. `pauseAt` ("phase:packsDone", or "bytes:N" for the first report of N bytes done) makes
 * the child stop dead at that progress report, so the kill lands at that exact step.
 */
export function runAndKill(repoDir: string, keyHex: string, args: string[], killWhen: (msg: ChildMessage) => boolean, pauseAt?: string): Promise<{ killed: boolean; last: ChildMessage | null }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'backup-child.ts'), repoDir, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ENGINE_KEY: keyHex, ...(pauseAt ? { PAUSE_AT: pauseAt } : {}) },
  });
  let finished = false;
  let last: ChildMessage | null = null;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line) as ChildMessage;
    last = msg;
    if (msg.done) finished = true;
    else if (killWhen(msg)) child.kill('SIGKILL');
  });
  return new Promise((resolve) => child.on('exit', (_code, signal) => resolve({ killed: signal === 'SIGKILL' && !finished, last })));
}
