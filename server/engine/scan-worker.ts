import { closeSync, lstatSync, openSync, readdirSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { DIR_FLAGS, atPath, fdDir } from './source.ts';

/** Thread side of scan.ts: counts regular files and their bytes under the root, through directory handles. */
let files = 0;
let bytes = 0;

function walk(fd: number): void {
  let entries;
  try {
    entries = readdirSync(fdDir(fd), { encoding: 'buffer', withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const path = atPath(fd, e.name);
    if (e.isFile()) {
      try {
        bytes += Number(lstatSync(path).size);
        files++;
      } catch {
        // vanished: the backup reports it
      }
    } else if (e.isDirectory()) {
      let sub: number;
      try {
        sub = openSync(path, DIR_FLAGS);
      } catch {
        continue;
      }
      try {
        walk(sub);
      } finally {
        closeSync(sub);
      }
    }
  }
}

const { root } = workerData as { root: string };
try {
  const st = lstatSync(root);
  if (st.isFile()) {
    files = 1;
    bytes = st.size;
  } else {
    const fd = openSync(root, DIR_FLAGS);
    walk(fd);
    closeSync(fd);
  }
  parentPort!.postMessage({ files, bytes });
} catch {
  // the backup reports an unreadable source itself
}
