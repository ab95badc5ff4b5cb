import {
  ConversationId,
  ConversationStatus,
  EventSource,
  EVENT_TYPES,
  MAX_IMAGE_BYTES,
  MAX_IMAGES_PER_MESSAGE,
  OnBusy,
  SpecName,
  StoredImageMediaType,
  TenantId,
  Timestamp,
} from '@flotilla/events';
import { z } from 'zod';
import { Tags, Title } from './resources.js';

export const MAX_MESSAGE_CHARS = 100_000;
export const MessageText = z.string().min(1).max(MAX_MESSAGE_CHARS);

/** Agent spec fields as a request gives them: what they may hold is the agent spec's (checked where the spec is made). */
export const SpecFields = z.record(z.string(), z.unknown());

export const CreateConversationBody = z.strictObject({
  /** Client-given id: creating it again returns the existing conversation (200, not 201). */
  id: ConversationId.optional(),
  title: Title.optional(),
  tags: Tags.optional(),
  /** A first user message. */
  message: MessageText.optional(),
  /** Start the run right away (needs `message`). */
  run: z.boolean().optional(),
  /** An operator-defined template to start from (GET /v1/server-info lists them); default the deployment's spec. */
  template: SpecName.optional(),
  /**
   * Agent spec fields over the template's (or the default's): each top-level field given replaces
   * the whole of it, e.g. `{ "llm": { "profile": "fast" }, "tools": ["terminal", "finish"] }`.
   * Checked against the agent spec's schema and the operator's limits (400 / 403 naming the field).
   */
  spec: SpecFields.optional(),
});
export type CreateConversationBody = z.infer<typeof CreateConversationBody>;

/** A new conversation that starts from this one's history (POST …/fork). */
export const ForkConversationBody = z.strictObject({
  /** The child's id (client-given, as at creation); default a fresh one. */
  id: ConversationId.optional(),
  /** Fork after this event of the parent (a point where no call waits for its result); default the parent's last. */
  at_seq: z.number().int().positive().optional(),
  /** Default the parent's title with " (fork)". */
  title: Title.optional(),
  tags: Tags.optional(),
  /** The child's agent: a template and/or spec fields as at creation; default the parent's spec in force. */
  template: SpecName.optional(),
  spec: SpecFields.optional(),
  /** A first user message of the child, and whether to start its run (needs the message). */
  message: MessageText.optional(),
  run: z.boolean().optional(),
});
export type ForkConversationBody = z.infer<typeof ForkConversationBody>;

/** Go on from an earlier point of this conversation (POST …/rewind): the events after it leave the view. */
export const RewindBody = z.strictObject({
  /** The event to go on after: on the current branch, where no call waits for its result. */
  to_seq: z.number().int().positive(),
  reason: z.string().max(2_000).optional(),
});
export type RewindBody = z.infer<typeof RewindBody>;

/** A side question about a conversation (POST …/ask), answered from its current view by its model; nothing is logged. */
export const AskBody = z.strictObject({ question: MessageText });
export type AskBody = z.infer<typeof AskBody>;

export const UpdateConversationBody = z
  .strictObject({ title: Title.optional(), tags: Tags.optional() })
  .refine((body) => body.title !== undefined || body.tags !== undefined, {
    message: 'give title or tags',
    path: ['title'],
  });
export type UpdateConversationBody = z.infer<typeof UpdateConversationBody>;

/**
 * A new spec for a conversation, applying from its next step: `template` starts over from a
 * template, `spec` fields replace the current spec's (or the template's). At least one.
 */
export const UpdateSpecBody = z
  .strictObject({
    template: SpecName.optional(),
    spec: SpecFields.optional(),
    reason: z.string().min(1).max(500).optional(),
  })
  .refine((body) => body.template !== undefined || body.spec !== undefined, {
    message: 'give template or spec',
    path: ['spec'],
  });
export type UpdateSpecBody = z.infer<typeof UpdateSpecBody>;

/** The most bytes the images of one message may have together: four of the largest. */
export const MAX_MESSAGE_IMAGE_BYTES = 4 * MAX_IMAGE_BYTES;
/** The body limit of the routes that take a message with images: their base64, and room for the rest. */
export const MAX_MESSAGE_BODY_BYTES = Math.ceil(MAX_MESSAGE_IMAGE_BYTES / 3) * 4 + 1024 * 1024;

const NOT_BASE64 = /[^A-Za-z0-9+/]/;

/** Standard base64 with its padding (checked without a repeated group: a regex of one would overflow the stack on megabytes). */
function isBase64(text: string): boolean {
  if (text.length % 4 !== 0) return false;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return !NOT_BASE64.test(padding === 0 ? text : text.slice(0, -padding));
}

/**
 * An image of a user message as a request gives it: its bytes as base64 (no data: prefix), the
 * media type it claims (optional: the bytes tell), and a file name. Stored apart, the event names it.
 */
export const ImageUpload = z.strictObject({
  data: z.string().min(4).refine(isBase64, 'must be standard base64 (no data: prefix, no line breaks)'),
  media_type: StoredImageMediaType.optional(),
  name: z.string().min(1).max(255).optional(),
});
export type ImageUpload = z.infer<typeof ImageUpload>;

export const MessageImages = z.array(ImageUpload).min(1).max(MAX_IMAGES_PER_MESSAGE);

/**
 * A user message: text, images (png, jpeg, gif, webp; at most MAX_IMAGES_PER_MESSAGE), or both;
 * `on_busy` says what it does if the conversation is running (its spec's `on_busy` when absent).
 */
export const SendMessageBody = z
  .strictObject({
    text: MessageText.optional(),
    images: MessageImages.optional(),
    run: z.boolean().optional(),
    on_busy: OnBusy.optional(),
  })
  .refine((body) => body.text !== undefined || body.images !== undefined, {
    message: 'give text, images or both',
    path: ['text'],
  });
export type SendMessageBody = z.infer<typeof SendMessageBody>;

export const ReasonBody = z.strictObject({ reason: z.string().max(2_000).optional() });
export type ReasonBody = z.infer<typeof ReasonBody>;

export const ConfirmationBody = z.discriminatedUnion('decision', [
  z.strictObject({ decision: z.literal('approve') }),
  z.strictObject({ decision: z.literal('reject'), reason: z.string().min(1).max(2_000) }),
]);
export type ConfirmationBody = z.infer<typeof ConfirmationBody>;

/** Shorter values would mask ordinary text in the agent's output (the secret store refuses them too). */
export const MIN_SECRET_VALUE_CHARS = 4;
export const MAX_SECRET_VALUE_CHARS = 64 * 1024;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A secret's value. Its error messages never quote it (the gateway's validation errors echo
 * messages, never inputs), so a refused value appears in no response and no log.
 */
export const SecretValue = z
  .string({ error: 'a secret value is a string' })
  .min(
    MIN_SECRET_VALUE_CHARS,
    `a secret value needs at least ${MIN_SECRET_VALUE_CHARS} characters (shorter ones would mask ordinary text in the agent's output)`,
  )
  .max(MAX_SECRET_VALUE_CHARS, `a secret value has at most ${MAX_SECRET_VALUE_CHARS} characters`)
  .refine(
    (value) => !value.includes('\u0000'),
    'a secret value cannot hold a NUL character (an environment variable cannot)',
  )
  .refine((value) => !LONE_SURROGATE.test(value), 'a secret value must be well-formed Unicode');

/** `PUT …/secrets/{name}`: create or replace the secret. */
export const SetSecretBody = z.strictObject({ value: SecretValue });
export type SetSecretBody = z.infer<typeof SetSecretBody>;

export const CreateApiKeyBody = z.strictObject({ tenant: TenantId, name: z.string().min(1).max(100) });
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;

export const CONVERSATION_SORTS = ['created_at', '-created_at', 'updated_at', '-updated_at'] as const;
const Limit = z.coerce.number<number | string>().int().min(1).max(200);

export const ListConversationsQuery = z.strictObject({
  status: ConversationStatus.optional(),
  sort: z.enum(CONVERSATION_SORTS).default('-updated_at'),
  limit: Limit.default(50),
  cursor: z.string().max(512).optional(),
});
export type ListConversationsQuery = z.input<typeof ListConversationsQuery>;

export const CountConversationsQuery = z.strictObject({ status: ConversationStatus.optional() });
export type CountConversationsQuery = z.input<typeof CountConversationsQuery>;

export const BatchGetQuery = z.strictObject({
  /** Comma-separated, at most 100. */
  ids: z
    .string()
    .min(1)
    .max(6_600)
    .transform((value) => value.split(','))
    .pipe(z.array(ConversationId).min(1).max(100)),
});
export type BatchGetQuery = z.input<typeof BatchGetQuery>;

const csv = <T extends z.ZodType<string, string>>(item: T) =>
  z
    .string()
    .min(1)
    .max(512)
    .transform((value) => value.split(','))
    .pipe(z.array(item).min(1).max(32));

/** Filters shared by event search and event count. */
export const EventFilterQuery = z.strictObject({
  /** Comma-separated event types. */
  type: csv(z.enum(EVENT_TYPES)).optional(),
  /** Comma-separated sources. */
  source: csv(EventSource).optional(),
  /** Only events at or after this UTC timestamp. */
  since: Timestamp.optional(),
  /** Only events before this UTC timestamp. */
  until: Timestamp.optional(),
  /** Case-insensitive substring of the event's JSON. */
  text: z.string().min(1).max(200).optional(),
});

export const SearchEventsQuery = EventFilterQuery.extend({
  /** Start after this seq (ascending) — the shortcut WebSocket clients also use. */
  after_seq: z.coerce.number<number | string>().int().nonnegative().optional(),
  order: z.enum(['asc', 'desc']).default('asc'),
  limit: Limit.default(100),
  cursor: z.string().max(512).optional(),
});
export type SearchEventsQuery = z.input<typeof SearchEventsQuery>;

export const CountEventsQuery = EventFilterQuery;
export type CountEventsQuery = z.input<typeof CountEventsQuery>;

/** The WebSocket's query string. */
export const SocketQuery = z.strictObject({
  after_seq: z.coerce.number<number | string>().int().nonnegative().default(0),
});
