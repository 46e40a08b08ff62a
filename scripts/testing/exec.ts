/** Runs a command to its end for a test: its exit code and output; never throws. */
import { execFile } from 'node:child_process';

export interface Ran {
  code: number;
  stdout: string;
  /** stdout and stderr together. */
  out: string;
}

export function exec(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, out: stdout + stderr }),
    );
  });
}
