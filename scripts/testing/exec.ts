/** Commands and packages for tests: a command run to its end, a package packed and installed elsewhere. */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Ran {
  code: number;
  stdout: string;
  /** stdout and stderr together. */
  out: string;
}

/** Runs a command to its end: its exit code and output; never throws. */
export function exec(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, out: stdout + stderr }),
    );
  });
}

/**
 * A package as another project gets it: its dist/ removed, `npm pack` of its directory (its
 * prepack builds it afresh) into `work`, and the tarball installed into a new empty project
 * there (dependencies from npm's cache, else the registry).
 */
export async function packAndInstall(packageDir: string, work: string, install: string[] = []): Promise<{ tarball: string; app: string }> {
  await rm(join(packageDir, 'dist'), { recursive: true, force: true });
  const packed = await exec('npm', ['pack', '--pack-destination', work], { cwd: packageDir });
  if (packed.code !== 0) throw new Error(`npm pack failed:\n${packed.out}`);
  const tarball = join(work, (await readdir(work)).find((f) => f.endsWith('.tgz'))!);
  const app = join(work, 'app');
  await mkdir(app);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'another-project', private: true, type: 'module' }));
  const installed = await exec('npm', ['install', ...install, tarball, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app });
  if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.out}`);
  return { tarball, app };
}
