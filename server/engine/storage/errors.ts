/**
 * The errors every backend throws in its own terms, so the engine never inspects an errno string
 * or an SDK's error names. Anything else a backend throws is an unexpected fault.
 */
export class StorageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The object does not exist. */
export class ObjectNotFoundError extends StorageError {
  readonly objectName: string;
  constructor(objectName: string, options?: { cause?: unknown }) {
    super(`no object ${objectName}`, options);
    this.objectName = objectName;
  }
}

/** The storage cannot be reached, answers with server errors after retries, times out, or refuses the credentials. */
export class StorageUnavailableError extends StorageError {}

/** No space (or quota) is left for the write; nothing of it stays visible. */
export class StorageFullError extends StorageError {}
