import { ConversationId, ConversationStatus, Event, OnBusy, SecretName } from '@flotilla/events';
import { z } from 'zod';
import { ErrorCode } from './errors.js';
import { MessageImages, MessageText, ReasonBody, SecretValue } from './requests.js';

/**
 * WebSocket frames, server → client. Durable `event` frames carry the event's `seq` and arrive
 * in log order with no gap and no duplicate from `after_seq` on; every other frame is transient
 * and never advances the client's cursor.
 */
export const SyncFrame = z.strictObject({
  type: z.literal('sync'),
  conversation: ConversationId,
  /** The position the stream resumes after (the query's after_seq). */
  after_seq: z.number().int().nonnegative(),
  /** The log's last seq when the socket opened: frames up to it are replay, later ones live. */
  last_seq: z.number().int().nonnegative(),
  status: ConversationStatus,
});
export const EventFrame = z.strictObject({ type: z.literal('event'), seq: z.number().int().positive(), event: Event });
/** Replay has reached the tail: what follows is live. */
export const LiveFrame = z.strictObject({ type: z.literal('live'), last_seq: z.number().int().nonnegative() });
/** Token deltas of an in-flight LLM call. Best effort: dropped for a client that is behind. */
export const DeltaFrame = z.strictObject({
  type: z.literal('delta'),
  /** `restart`: the call is being retried; discard what it streamed so far. */
  kind: z.enum(['text', 'reasoning', 'tool_call', 'restart']),
  text: z.string(),
});
export const AckFrame = z.strictObject({
  type: z.literal('ack'),
  id: z.string().optional(),
  status: ConversationStatus,
  last_seq: z.number().int().nonnegative(),
  appended: z.boolean(),
});
export const ErrorFrame = z.strictObject({
  type: z.literal('error'),
  id: z.string().optional(),
  code: ErrorCode,
  message: z.string(),
});

export const ServerFrame = z.discriminatedUnion('type', [
  SyncFrame,
  EventFrame,
  LiveFrame,
  DeltaFrame,
  AckFrame,
  ErrorFrame,
]);
export type ServerFrame = z.infer<typeof ServerFrame>;
export type SyncFrame = z.infer<typeof SyncFrame>;
export type EventFrame = z.infer<typeof EventFrame>;
export type DeltaFrame = z.infer<typeof DeltaFrame>;
export type AckFrame = z.infer<typeof AckFrame>;
export type ErrorFrame = z.infer<typeof ErrorFrame>;

/** Client → server. `id` is echoed in the ack or error frame. */
const FrameId = z.string().min(1).max(64).optional();
export const ClientFrame = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('auth'), api_key: z.string().min(1).max(256) }),
  /** A user message, as `POST …/messages` takes it: text, images or both (images within the socket's max_frame_bytes). */
  z
    .strictObject({
      type: z.literal('message'),
      id: FrameId,
      text: MessageText.optional(),
      images: MessageImages.optional(),
      run: z.boolean().optional(),
      on_busy: OnBusy.optional(),
    })
    .refine((frame) => frame.text !== undefined || frame.images !== undefined, {
      message: 'give text, images or both',
      path: ['text'],
    }),
  z.strictObject({ type: z.literal('run'), id: FrameId }),
  /** Pause after the step / interrupt now, with the `reason` the REST routes take (validated the same). */
  z.strictObject({ type: z.literal('pause'), id: FrameId, reason: ReasonBody.shape.reason }),
  z.strictObject({ type: z.literal('interrupt'), id: FrameId, reason: ReasonBody.shape.reason }),
  z.strictObject({ type: z.literal('approve'), id: FrameId }),
  z.strictObject({ type: z.literal('reject'), id: FrameId, reason: z.string().min(1).max(2_000) }),
  z.strictObject({ type: z.literal('ping'), id: FrameId }),
  /** Set (create or replace) one of this conversation's secrets; acked with the seq of its secret_changed event. */
  z.strictObject({ type: z.literal('secret_set'), id: FrameId, name: SecretName, value: SecretValue }),
  /** Remove one of this conversation's secrets (error secret_not_found when there is none). */
  z.strictObject({ type: z.literal('secret_remove'), id: FrameId, name: SecretName }),
]);
export type ClientFrame = z.infer<typeof ClientFrame>;
