/** Every failure the engine reports carries a stable code (SOURCE_NOT_FOUND, CORRUPT_DATA, CANCELLED, ...). */
export class EngineError extends Error {
  code: string;
  details: Record<string, unknown>;

  constructor(code: string, message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EngineError';
    this.code = code;
    this.details = details;
  }
}

export function cancelled(): EngineError {
  return new EngineError('CANCELLED', 'the operation was cancelled');
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw cancelled();
}

export function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}
