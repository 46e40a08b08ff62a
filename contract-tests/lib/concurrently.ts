/**
 * Runs the tasks at most `limit` at a time and returns their results in the tasks' order. The
 * checks spend most of their time waiting on servers they started, so a few at once finish the
 * run sooner even on two cores.
 */
export async function concurrently<T>(tasks: ReadonlyArray<() => Promise<T>>, limit: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
  return results;
}
