/** Why a documented response is reached by no check on the real server (listed under the table). */
export function unreachableWhy(operationId: string, status: string): string {
  if (status === '500') return 'INTERNAL_ERROR needs a fault inside the server (a bug, a broken disk or database); no request provokes it. Reached on the mock only.';
  if (status === '503' && operationId === 'cancelBackup')
    return 'SERVICE_UNAVAILABLE: cancel only writes for a running job, whose own progress writes would hit the same database lock the Prism flows use. Reached on the mock only.';
  if (status === '503')
    return 'SERVICE_UNAVAILABLE: the Prism flows provoke it by locking the database, which only stops writes, and this operation only reads (WAL readers are not blocked). Reached on the mock only.';
  if (status === '507')
    return 'STORAGE_FULL needs the disk of the database to be full; server/disk-full.test.ts fills a real filesystem for it. Reached on the mock only.';
  return 'not reached: no check has a recipe for it (a gap to close)';
}
