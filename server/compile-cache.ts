import { enableCompileCache, getCompileCacheDir } from 'node:module';
import { join } from 'node:path';

/**
 * Node strips the types of every TypeScript module each time a thread loads it, with a compiler
 * that costs about 40 MB and most of the start-up time per thread (the main thread and each engine
 * worker). Node's compile cache keeps the result on disk: here, beside the code it comes from
 * (whoever can write there can change the code anyway, which a cache in a shared /tmp would not
 * guarantee). Entries are keyed by the source's content, so an edited module is compiled afresh.
 *
 * `npm start` also names this directory in NODE_COMPILE_CACHE: Node reads the entry module
 * (server/main.ts) before any of its code runs, and a cache turned on from there comes too late
 * for it. Stripping that one module's types loaded the compiler (WebAssembly) on every start:
 * 60–100 ms of an incremental backup's engine process, 5–10 % of its time.
 */
export const COMPILE_CACHE_DIR = join(import.meta.dirname, '..', 'node_modules', '.cache', 'node-compile');

/** Modules loaded by this thread after the call come from the cache (a cache that cannot be written is ignored). */
export function useCompileCache(): void {
  enableCompileCache(COMPILE_CACHE_DIR);
}

/**
 * The environment of a worker thread: enableCompileCache covers only the calling thread, a worker
 * takes the cache from NODE_COMPILE_CACHE when it starts.
 */
export function workerEnv(): NodeJS.ProcessEnv {
  const dir = getCompileCacheDir();
  return dir ? { ...process.env, NODE_COMPILE_CACHE: dir } : process.env;
}
