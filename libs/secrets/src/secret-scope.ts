import { isSubjectToken } from '@flotilla/events';
import { SecretsError, SecretsErrorCode } from './errors.js';

/** Whose secrets: a conversation's own, or (no conversation) the tenant's defaults for all its conversations. */
export type SecretScope = { readonly tenant: string; readonly conversation?: string };

/**
 * KV keys, one per secret:
 *
 * - `<tenant>.defaults.<NAME>`: the tenant's defaults (3 tokens);
 * - `<tenant>.conversation.<conversation>.<NAME>`: a conversation's own (4 tokens).
 *
 * Ids are single tokens (A-Z a-z 0-9 _ -, no dots) and names too, so the token count alone tells
 * the two apart: no conversation id can make one look like the other. The tenant comes first, so
 * NATS permissions can confine a tenant to `$KV.<bucket>.<tenant>.>`.
 */
const DEFAULTS = 'defaults';
const CONVERSATION = 'conversation';

export function assertScope(scope: SecretScope): void {
  if (!isSubjectToken(scope.tenant))
    throw new SecretsError(
      SecretsErrorCode.InvalidScope,
      `tenant "${scope.tenant}" must be 1-64 characters of A-Z a-z 0-9 _ -`,
    );
  if (scope.conversation !== undefined && !isSubjectToken(scope.conversation)) {
    throw new SecretsError(
      SecretsErrorCode.InvalidScope,
      `conversation "${scope.conversation}" must be 1-64 characters of A-Z a-z 0-9 _ -`,
    );
  }
}

/** The KV key prefix of a scope's secrets (without the trailing dot). */
export function scopePrefix(scope: SecretScope): string {
  assertScope(scope);
  return scope.conversation === undefined
    ? `${scope.tenant}.${DEFAULTS}`
    : `${scope.tenant}.${CONVERSATION}.${scope.conversation}`;
}

/** The KV key of one secret. The name must have been checked. */
export function secretKey(scope: SecretScope, name: string): string {
  return `${scopePrefix(scope)}.${name}`;
}

/** The secret's name: the last token of its KV key. */
export function nameOfKey(key: string): string {
  return key.slice(key.lastIndexOf('.') + 1);
}
