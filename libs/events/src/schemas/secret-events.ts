import { z } from 'zod';
import { envelope, versionField } from './envelope.js';

/**
 * A secret's name as the log records it: an environment-variable name (the sandbox gets the
 * secret as that variable). Which names a store accepts (reserved ones, the FLOTILLA_ prefix) is
 * the secret store's policy; the log only checks the syntax, so old events keep loading if that
 * policy changes.
 */
export const SecretName = z
  .string()
  .regex(/^[A-Z_][A-Z0-9_]{0,127}$/, 'must be 1-128 characters of A-Z 0-9 _, not starting with a digit');
export type SecretName = z.infer<typeof SecretName>;

/**
 * A secret of this conversation was set (created or replaced) or removed. Never its value: the
 * value lives encrypted in the secrets bucket. Tenant-wide defaults have no log and no event.
 * Introduced in protocol version 2.
 */
export const SecretChangedEvent = z.strictObject({
  ...envelope,
  v: versionField('secret_changed', 2),
  type: z.literal('secret_changed'),
  name: SecretName,
  action: z.enum(['set', 'removed']),
});
export type SecretChangedEvent = z.infer<typeof SecretChangedEvent>;
