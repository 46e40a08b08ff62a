import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { authenticateKey } from '../auth/api-keys.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';

type Op = BackupOperations['createToken'];

/** POST /auth/token: an access token for a valid, unrevoked key and its secret. */
export async function createToken(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { store, tokens } = ctx.services;
  const key = await authenticateKey(store, req.body.api_key, req.body.secret);
  if (!key) throw new ApiError('INVALID_CREDENTIALS', 'The API key or secret is not valid.');
  const token = await tokens.issue(key.accountId, key.id);
  ctx.services.events.emit('auth.token_issued', { accountId: key.accountId, keyId: key.id, requestId: ctx.requestId, clientIp: ctx.clientIp });
  return {
    status: 200,
    headers: {},
    body: successBody(
      { access_token: token.accessToken, token_type: 'Bearer' as const, expires_in: token.expiresIn, expires_at: token.expiresAt.toISOString() },
      ctx.requestId,
    ),
  };
}
