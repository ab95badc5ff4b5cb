import { z } from 'zod';

/**
 * Tenant and conversation ids become NATS subject tokens and KV key parts, so they are
 * restricted to characters that are safe in both: no dots, wildcards or whitespace.
 */
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

export const TenantId = z.string().regex(SUBJECT_TOKEN, 'must be 1-64 characters of A-Z a-z 0-9 _ -');
export type TenantId = z.infer<typeof TenantId>;

export const ConversationId = z.string().regex(SUBJECT_TOKEN, 'must be 1-64 characters of A-Z a-z 0-9 _ -');
export type ConversationId = z.infer<typeof ConversationId>;

/** Event and commit ids: opaque, printable, bounded. */
export const EventId = z.string().regex(/^[A-Za-z0-9_:.-]{1,128}$/, 'must be 1-128 printable id characters');
export type EventId = z.infer<typeof EventId>;

export function isSubjectToken(value: string): boolean {
  return SUBJECT_TOKEN.test(value);
}

/** A fresh random id (UUID v4). */
export function newId(): string {
  return globalThis.crypto.randomUUID();
}
