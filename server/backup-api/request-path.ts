import { EscapedPathError, textToPath } from '../escaped-path.ts';
import { validationError } from '../http/errors.ts';

/** The bytes a path of the request stands for (server/escaped-path.ts); a malformed escape is 400 at `pointer`. */
export function requestPath(text: string, pointer: string): Uint8Array {
  try {
    return textToPath(text);
  } catch (err) {
    if (err instanceof EscapedPathError) throw validationError([{ path: pointer, message: err.message }]);
    throw err;
  }
}
