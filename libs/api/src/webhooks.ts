import { ConversationId, ConversationStatus, EventId, TenantId, Timestamp } from '@flotilla/events';
import { z } from 'zod';

/**
 * The kinds of event a webhook may choose, each derived from the conversation's log (a
 * `state_change` that changes its status): any status change, a change to
 * `waiting_for_confirmation` (actions wait for the user's approval), a change to `finished`.
 */
export const WEBHOOK_EVENT_TYPES = [
  'conversation.status_changed',
  'conversation.confirmation_pending',
  'conversation.finished',
  'conversation.expiring',
] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES, {
  error: (issue) =>
    `unknown event kind ${JSON.stringify(issue.input)}: the kinds are ${WEBHOOK_EVENT_TYPES.join(', ')}`,
});
export type WebhookEventType = z.infer<typeof WebhookEventType>;

export const MAX_WEBHOOK_URL_CHARS = 2_048;
/** A tenant has at most this many webhooks. */
export const MAX_WEBHOOKS_PER_TENANT = 20;

/** True for an absolute http(s) URL with a host, without credentials or a fragment. */
function isHttpUrl(value: string): boolean {
  if (value !== value.trim() || !URL.canParse(value)) return false;
  const url = new URL(value);
  return (
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.hostname !== '' &&
    url.username === '' &&
    url.password === '' &&
    url.hash === ''
  );
}

/**
 * Where a webhook's events are POSTed. Whether the address it resolves to may be reached is the
 * webhooks service's decision at each delivery (private, loopback, link-local and metadata
 * addresses are refused unless the operator allows them; docs/security.md).
 */
export const WebhookUrl = z
  .string({ error: 'a webhook URL is a string' })
  .max(MAX_WEBHOOK_URL_CHARS, `a webhook URL has at most ${MAX_WEBHOOK_URL_CHARS} characters`)
  .refine(isHttpUrl, 'must be an absolute http:// or https:// URL with a host, without user:password@ or a #fragment');

export const WebhookId = z.string().regex(/^wh_[0-9a-f]{32}$/, 'is not a webhook id (wh_ and 32 hex digits)');

/** `POST /v1/webhooks`. */
export const CreateWebhookBody = z.strictObject({
  url: WebhookUrl,
  events: z
    .array(WebhookEventType, { error: `events is a list of event kinds: ${WEBHOOK_EVENT_TYPES.join(', ')}` })
    .min(1, `choose at least one event kind: ${WEBHOOK_EVENT_TYPES.join(', ')}`)
    .max(WEBHOOK_EVENT_TYPES.length)
    .refine((events) => new Set(events).size === events.length, 'lists an event kind twice'),
  description: z.string().max(200).optional(),
});
export type CreateWebhookBody = z.infer<typeof CreateWebhookBody>;

/** A webhook as the API shows it: never its signing secret. */
export const Webhook = z.strictObject({
  id: WebhookId,
  url: z.string(),
  events: z.array(WebhookEventType),
  description: z.string().nullable(),
  created_at: Timestamp,
});
export type Webhook = z.infer<typeof Webhook>;

/** The answer to a creation: the webhook and its signing secret, shown this once (it is stored encrypted). */
export const CreatedWebhook = z.strictObject({ ...Webhook.shape, secret: z.string() });
export type CreatedWebhook = z.infer<typeof CreatedWebhook>;

export const WebhookList = z.strictObject({ webhooks: z.array(Webhook) });
export type WebhookList = z.infer<typeof WebhookList>;

/** Deterministic per event: the same event, delivered again, has the same id (de-duplicate on it). */
export const WebhookEventId = z.string().regex(/^evt_[A-Za-z0-9_-]{32}$/, 'is not a webhook event id');

const StatusChange = {
  conversation: ConversationId,
  /** seq of the conversation's `state_change` event that made the change. */
  seq: z.number().int().positive(),
  status: ConversationStatus,
  previous_status: ConversationStatus,
  reason: z.string().optional(),
};
const envelope = {
  /** The version of this payload's format. */
  v: z.literal(1),
  id: WebhookEventId,
  /** When the change happened (the `state_change` event's timestamp), not when it was delivered. */
  created_at: Timestamp,
  tenant: TenantId,
};

/** The body of a webhook POST (docs/api.md, "Webhooks"). */
export const WebhookEvent = z.discriminatedUnion('type', [
  z.strictObject({ ...envelope, type: z.literal('conversation.status_changed'), data: z.strictObject(StatusChange) }),
  z.strictObject({
    ...envelope,
    type: z.literal('conversation.confirmation_pending'),
    data: z.strictObject({
      ...StatusChange,
      /** The actions that wait for the user's approval (POST …/confirmation approves or rejects them). */
      actions: z.array(z.strictObject({ id: EventId, tool_call_id: z.string(), tool_name: z.string() })),
    }),
  }),
  z.strictObject({ ...envelope, type: z.literal('conversation.finished'), data: z.strictObject(StatusChange) }),
  /** Sent before a conversation idle past its retention is deleted (docs/api.md, "Retention"); `created_at` is when it was found expired. */
  z.strictObject({
    ...envelope,
    type: z.literal('conversation.expiring'),
    data: z.strictObject({
      conversation: ConversationId,
      /** seq of its last event: nothing happened after it. */
      seq: z.number().int().positive(),
      status: ConversationStatus,
      /** Its last event's timestamp. */
      last_activity_at: Timestamp,
      /** The retention that expired: seconds after the last event. */
      idle_seconds: z.number().int().positive(),
    }),
  }),
]);
export type WebhookEvent = z.infer<typeof WebhookEvent>;

/** Compile-time check that WEBHOOK_EVENT_TYPES and the payload union name the same kinds. */
const _sameKinds: [
  Exclude<WebhookEvent['type'], WebhookEventType> | Exclude<WebhookEventType, WebhookEvent['type']>,
] extends [never]
  ? true
  : never = true;

/** A delivery that failed every attempt (or was refused for good), kept for the tenant to read. */
export const DeadLetter = z.strictObject({
  webhook: WebhookId,
  event: WebhookEvent,
  attempts: z.number().int().positive(),
  /** When the delivery was queued (its first attempt followed at once). */
  enqueued_at: Timestamp,
  last_attempt_at: Timestamp,
  /** What went wrong the last time: `HTTP 500`, `timed out after 10000 ms`, a refused address, … */
  last_error: z.string(),
  /** The receiver's HTTP status the last time, null when no answer came. */
  last_status: z.number().int().nullable(),
});
export type DeadLetter = z.infer<typeof DeadLetter>;

export const DeadLetterList = z.strictObject({ dead_letters: z.array(DeadLetter) });
export type DeadLetterList = z.infer<typeof DeadLetterList>;

export const DeadLetterQuery = z.strictObject({
  limit: z.coerce.number<number | string>().int().min(1).max(500).default(100),
});
export type DeadLetterQuery = z.input<typeof DeadLetterQuery>;
