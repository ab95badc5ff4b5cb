import { z } from 'zod';
import { ConversationId, EventId, TenantId } from '../ids.js';
import { laterFieldOf, versionsSince, type ProtocolVersion } from '../version.js';

export const EventSource = z.enum(['user', 'agent', 'environment', 'system', 'hook']);
export type EventSource = z.infer<typeof EventSource>;

/** UTC, ISO 8601 with a `Z` suffix, e.g. `2026-11-29T21:04:05.123Z`. */
export const Timestamp = z.iso.datetime({ offset: false });

/**
 * The protocol versions an event may carry. Every v1 event type is valid in later versions
 * unchanged, so its events may say any; a type introduced later overrides `v` with `versionField`.
 */
export const ProtocolVersionField = z.literal(versionsSince(1) as [ProtocolVersion, ...ProtocolVersion[]]);

/** The `v` of an event type introduced in `introduced`: that version or a later one, with an error naming the type. */
export function versionField(type: string, introduced: ProtocolVersion) {
  return z.literal(versionsSince(introduced) as [ProtocolVersion, ...ProtocolVersion[]], {
    error: `${type} exists from protocol version ${introduced} on: v must be at least ${introduced}`,
  });
}

/**
 * Fields every event carries. `seq` is the event's position in its conversation
 * (1, 2, 3, …, contiguous); the log assigns it at append time.
 */
export const envelope = {
  v: ProtocolVersionField,
  id: EventId,
  seq: z.number().int().positive(),
  tenant: TenantId,
  conversation: ConversationId,
  source: EventSource,
  timestamp: Timestamp,
  parent: EventId.optional(),
};

/**
 * Refuses an event whose `v` is older than a field it uses needs (`protocolVersionOf`, e.g. a
 * stored image needs v4): the refinement of every event type whose content lists may hold one.
 */
export function requireFieldVersions(
  event: { readonly v: number; readonly type: string },
  context: z.RefinementCtx,
): void {
  const later = laterFieldOf(event);
  if (later !== undefined && event.v < later.version) {
    context.addIssue({
      code: 'custom',
      path: ['v'],
      message: `${later.field} exists from protocol version ${later.version} on: v must be at least ${later.version}`,
    });
  }
}
