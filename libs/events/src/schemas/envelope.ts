import { z } from 'zod';
import { ConversationId, EventId, TenantId } from '../ids.js';

export const EventSource = z.enum(['user', 'agent', 'environment', 'system', 'hook']);
export type EventSource = z.infer<typeof EventSource>;

/** UTC, ISO 8601 with a `Z` suffix, e.g. `2026-11-29T21:04:05.123Z`. */
export const Timestamp = z.iso.datetime({ offset: false });

/**
 * The protocol versions an event may carry. Every v1 event type is valid in v2 unchanged, so its
 * events may say either; a type introduced later overrides `v` with its own versions.
 */
export const ProtocolVersionField = z.literal([1, 2]);

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
