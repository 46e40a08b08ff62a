/** Why a documented response is reached by no check (shown under the coverage table). */
export function unreachableWhy(operationId: string, status: string): string {
  if (status === '500') return 'INTERNAL_ERROR needs a bug or a broken disk/database inside the server; nothing a client sends provokes it';
  if (status === '503') return 'SERVICE_UNAVAILABLE needs the store or storage to be down (or shutdown in progress); not provokable from outside a healthy server';
  if (status === '429' && operationId !== 'createToken')
    return 'the per-account limit (100-10000 requests/hour) is only exhausted on the free_trial server of the Prism flows; see which operations those flows exhaust';
  return 'not reached: no recipe in any check (see the check notes)';
}
