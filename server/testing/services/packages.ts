import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const SCRIPT = join(import.meta.dirname, '..', '..', '..', 'scripts', 'ensure-packages.sh');

/**
 * Makes sure Debian packages a test needs are installed (installing them when it may, as
 * `npm test`'s first step does), or throws naming what to install. Never a silent skip.
 */
export function requirePackages(packages: readonly string[]): void {
  const run = spawnSync('bash', [SCRIPT, ...packages], { encoding: 'utf8' });
  if (run.status !== 0) {
    throw new Error(run.stderr.trim() || `scripts/ensure-packages.sh ${packages.join(' ')} failed (exit ${run.status})`);
  }
}
