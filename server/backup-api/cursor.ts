import { createHash } from 'node:crypto';
import { ApiError } from '../http/errors.ts';

/**
 * Opaque page cursors: an 11-character fingerprint of the listing they belong to (account and
 * filters), then the position. A cursor from another listing, or one that was edited, is a
 * 400 VALIDATION_ERROR rather than a silently wrong page.
 */
function fingerprint(listing: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(listing)).digest('base64url').slice(0, 11);
}

export function encodeCursor(listing: readonly string[], position: string): string {
  return fingerprint(listing) + position;
}

export function decodeCursor(listing: readonly string[], cursor: string, positionPattern: RegExp): string {
  const position = cursor.slice(11);
  if (cursor.slice(0, 11) !== fingerprint(listing) || !positionPattern.test(position)) {
    throw new ApiError('VALIDATION_ERROR', 'The cursor is not valid for this listing.', {
      errors: [{ path: '/query/cursor', message: 'is not a cursor of this listing (pass next_cursor with the same other parameters)' }],
    });
  }
  return position;
}
