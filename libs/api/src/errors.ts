import { z } from 'zod';

/**
 * Every error the gateway returns has one of these stable codes (REST bodies and WebSocket
 * `error` frames alike). Clients branch on `code`; `message` is for people.
 */
export const ERROR_CODES = [
  'invalid_json',
  'validation_failed',
  'body_too_large',
  'unsupported_media_type',
  'invalid_cursor',
  'unauthorized',
  'forbidden',
  'not_found',
  'conversation_not_found',
  'event_not_found',
  'route_not_found',
  'method_not_allowed',
  'already_running',
  'conversation_running',
  'not_waiting',
  'nothing_pending',
  'conflict',
  'rate_limited',
  'capacity_exhausted',
  'too_many_subscribers',
  'unavailable',
  'internal',
] as const;
export const ErrorCode = z.enum(ERROR_CODES);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorBody = z.strictObject({
  error: z.strictObject({
    code: ErrorCode,
    message: z.string(),
    /** Field-level problems of a validation failure: `path` is dotted (`body.text`, `query.limit`). */
    issues: z.array(z.strictObject({ path: z.string(), message: z.string() })).optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** WebSocket close codes the gateway uses (4000-4999 are application codes). */
export const CloseCode = {
  /** The gateway is shutting down: reconnect (to any gateway) with after_seq. */
  GoingAway: 1001,
  /** No valid API key in the header or the first frame. */
  Unauthorized: 4001,
  /** A frame that is not valid JSON or not a known frame type. */
  BadFrame: 4002,
  /** The conversation does not exist (for this tenant). */
  NotFound: 4004,
  /** The client did not read fast enough: its buffer filled up. Reconnect with after_seq. */
  SlowConsumer: 4008,
  /** An inbound frame over the size limit (the WebSocket standard's code). */
  MessageTooBig: 1009,
  /** The per-conversation subscriber limit of this gateway is reached. */
  TooManySubscribers: 4029,
  /** The log could not be read (NATS unreachable): reconnect later with after_seq. */
  Unavailable: 4503,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
