import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/**
 * syncfs(2) for a restore, which Node does not have: coreutils' `sync --file-system`, run by one
 * shell started with the first sync and kept until `close`. Each sync is a line of paths on its
 * standard input and a line of answer on its output. Spawning `sync` from Node each time forked
 * the whole restore process (page tables of 200 MB copied and torn down per sync); the shell is
 * small, so its forks are cheap. If the restore's process dies, the shell reads end-of-file and
 * exits.
 */
const LOOP = 'while IFS= read -r p; do if m=$(sync --file-system $p 2>&1); then echo ok; else printf "failed %s\\n" "$(printf %s "$m" | tr "\\n" " ")"; fi; done';

interface Shell {
  child: ChildProcessByStdio<Writable, Readable, null>;
  waiting: { resolve: () => void; reject: (err: Error) => void }[];
  ended: boolean;
}

export class SyncFs {
  private shell: Shell | null = null;

  /** Syncs the filesystems holding `paths` (names without blanks, such as /proc/<pid>/fd/<n>); rejects with `sync`'s message. */
  run(paths: string[]): Promise<void> {
    if (this.shell?.ended) this.shell = null;
    const shell = (this.shell ??= start());
    return new Promise((resolve, reject) => {
      if (shell.waiting.length === 0) hold(shell, true);
      shell.waiting.push({ resolve, reject });
      shell.child.stdin.write(`${paths.join(' ')}\n`);
    });
  }

  /** Ends the shell: its input closes, and it exits once the syncs asked for are answered. */
  close(): void {
    this.shell?.child.stdin.end();
    this.shell = null;
  }
}

function start(): Shell {
  const child = spawn('/bin/sh', ['-c', LOOP], { stdio: ['pipe', 'pipe', 'ignore'] });
  const shell: Shell = { child, waiting: [], ended: false };
  let text = '';
  child.stdin.on('error', () => {}); // a shell that died shows through 'close' below
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    text += chunk;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n')) {
      const line = text.slice(0, nl);
      text = text.slice(nl + 1);
      const w = shell.waiting.shift();
      if (shell.waiting.length === 0) hold(shell, false);
      if (line === 'ok') w?.resolve();
      else w?.reject(new Error(line.replace(/^failed /, '').trim() || 'sync failed'));
    }
  });
  const gone = (err: Error): void => {
    shell.ended = true;
    for (const w of shell.waiting.splice(0)) w.reject(err);
  };
  child.on('error', gone);
  child.on('close', () => gone(new Error('the sync process ended')));
  (child.stdin as unknown as { unref(): void }).unref();
  hold(shell, false);
  return shell;
}

/** The shell keeps the event loop alive only while a sync is awaited. */
function hold(shell: Shell, on: boolean): void {
  const out = shell.child.stdout as unknown as { ref(): void; unref(): void };
  if (on) {
    shell.child.ref();
    out.ref();
  } else {
    shell.child.unref();
    out.unref();
  }
}
