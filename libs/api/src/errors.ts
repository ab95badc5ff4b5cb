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
  'conversation_not_found',
  'event_not_found',
  'secret_not_found',
  'webhook_not_found',
  'schedule_not_found',
  'route_not_found',
  'already_running',
  'conversation_running',
  /** 409: a message with on_busy `reject` while the conversation runs (the message names where the run began). */
  'conversation_busy',
  'not_waiting',
  'nothing_pending',
  /** A fork or rewind point where a call still waits for its result, or one that is not on the current branch. */
  'not_a_branch_point',
  /** A side question the conversation's model could not answer (the message says why). */
  'ask_failed',
  'conflict',
  'rate_limited',
  'capacity_exhausted',
  'too_many_subscribers',
  'unavailable',
  'secrets_not_configured',
  /** An agent spec outside what the operator allows (a model, a tool, a limit): the issues name the fields. */
  'spec_not_allowed',
  /** The tenant has as many webhooks as it may (MAX_WEBHOOKS_PER_TENANT): remove one first. */
  'webhook_limit_reached',
  /** The tenant has as many schedules as it may (MAX_SCHEDULES_PER_TENANT): delete one first. */
  'schedule_limit_reached',
  /** 413: an image over MAX_IMAGE_BYTES, or a message's images over MAX_MESSAGE_IMAGE_BYTES together. */
  'image_too_large',
  /** 415: an image that is not png, jpeg, gif or webp by its bytes, or other than its media_type says. */
  'unsupported_image',
  /** 400: images for a conversation whose model does not take them (its spec's llm.vision is false). */
  'images_not_supported',
  /** Workspace files and git (docs/api.md, "Workspace files"). */
  'file_not_found',
  'path_outside_workspace',
  'not_a_directory',
  'is_a_directory',
  'not_a_regular_file',
  'file_too_large',
  'file_changed',
  'secret_in_file',
  'workspace_quota_exceeded',
  'not_a_git_repository',
  'git_failed',
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
