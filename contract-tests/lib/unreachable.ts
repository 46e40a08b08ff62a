/** Why a documented response is reached by no check on the real server (listed under the table). */
export function unreachableWhy(_operationId: string, status: string): string {
  if (status === '500') return 'INTERNAL_ERROR needs a fault inside the server (a bug, a broken disk or database); no request provokes it. Reached on the mock only.';
  if (status === '503') return 'SERVICE_UNAVAILABLE needs the database or storage down, or a shutdown in progress; not provokable from outside a healthy server. Reached on the mock only.';
  return 'not reached: no check has a recipe for it (a gap to close)';
}
