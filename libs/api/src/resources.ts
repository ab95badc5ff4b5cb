import { ConversationId, ConversationStatus, Event, EventSource, Timestamp } from '@flotilla/events';
import { z } from 'zod';

const Count = z.number().int().nonnegative();

export const Title = z.string().min(1).max(200);
export const Tag = z.string().min(1).max(64);
export const Tags = z.array(Tag).max(32);

/**
 * Tokens and cost of model calls, as `llm_usage` events count them (a conversation's sums them;
 * a side question's is its one call): prompt tokens include cached ones; `cost_usd` is 0 where
 * the model's price is unknown.
 */
export const Usage = z.strictObject({
  prompt_tokens: Count,
  completion_tokens: Count,
  cache_read_tokens: Count,
  cache_write_tokens: Count,
  reasoning_tokens: Count,
  cost_usd: z.number().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

/**
 * A run waiting for a slot of its tenant's (the operator's FLOTILLA_MAX_RUNNING_PER_TENANT): its
 * place in the tenant's queue (1 = next) and when it was queued. It starts when a run of the
 * tenant ends, in the order runs were queued.
 */
export const QueuedRun = z.strictObject({ position: z.number().int().positive(), queued_at: Timestamp });
export type QueuedRun = z.infer<typeof QueuedRun>;

/** A conversation as the API shows it (its snapshot, derived from the log). */
export const Conversation = z.strictObject({
  id: ConversationId,
  status: ConversationStatus,
  title: z.string().nullable(),
  tags: z.array(z.string()),
  created_at: Timestamp.nullable(),
  updated_at: Timestamp.nullable(),
  /** seq of the last event: a client holding every event up to it is current. */
  last_seq: Count,
  counters: z.strictObject({
    events: Count,
    user_messages: Count,
    agent_messages: Count,
    actions: Count,
    observations: Count,
    agent_errors: Count,
    rejections: Count,
    condensations: Count,
    llm_calls: Count,
  }),
  usage: Usage,
  last_error: z.strictObject({ code: z.string(), detail: z.string(), seq: z.number().int().positive() }).nullable(),
  /** The agent spec in force (GET …/spec has all of it); null for a conversation created before specs were logged. */
  agent: z
    .strictObject({
      model: z.string().nullable(),
      template: z.string().nullable(),
      spec_seq: z.number().int().positive(),
    })
    .nullable(),
  /**
   * Which of its events make the current branch: the conversation it was forked from (and after
   * which of its events), and the seq ranges of its own log that rewinds left (still readable,
   * out of the view). Every event outside those ranges is on the current branch.
   */
  branch: z.strictObject({
    forked_from: z.strictObject({ conversation: ConversationId, seq: z.number().int().positive() }).nullable(),
    abandoned: z.array(z.strictObject({ first: z.number().int().positive(), last: z.number().int().positive() })),
  }),
  /** Where its latest run began (the seq of the state_change that set it running from rest, and when); null before its first run. */
  run_started: z.strictObject({ seq: z.number().int().positive(), at: Timestamp }).nullable(),
  /** Its run waiting for a slot of its tenant's, or null (not queued). The status stays what it was (e.g. idle) until the run starts. */
  queue: QueuedRun.nullable(),
});
export type Conversation = z.infer<typeof Conversation>;

/**
 * The answer to a side question: the model's text, which model gave it and what it used (not
 * counted in the conversation's usage: it is in no event). With `Accept: text/event-stream` it
 * comes as server-sent events: `delta` ({"text"}) as the model writes, then `answer` (this) or
 * `error` (the API's error body).
 */
export const AskAnswer = z.strictObject({
  answer: z.string(),
  model: z.string(),
  usage: Usage,
});
export type AskAnswer = z.infer<typeof AskAnswer>;

/** A conversation's agent spec in force: the whole spec its steps follow, and the event that set it. */
export const ConversationSpec = z.strictObject({
  spec: z.record(z.string(), z.unknown()),
  /** seq of its agent_spec event; null when the conversation has none (the deployment's default applies). */
  seq: z.number().int().positive().nullable(),
  template: z.string().nullable(),
  reason: z.string().nullable(),
});
export type ConversationSpec = z.infer<typeof ConversationSpec>;

export const ConversationPage = z.strictObject({
  items: z.array(Conversation),
  /** Pass as `cursor` for the next page; null on the last page. */
  next_cursor: z.string().nullable(),
});
export type ConversationPage = z.infer<typeof ConversationPage>;

export const BatchConversations = z.strictObject({
  /** In the order asked; null where the id does not exist. */
  items: z.array(Conversation.nullable()),
});
export type BatchConversations = z.infer<typeof BatchConversations>;

export const CountResult = z.strictObject({ count: Count });
export type CountResult = z.infer<typeof CountResult>;

export const EventPage = z.strictObject({
  items: z.array(Event),
  /** Continue in the same direction; null when the log holds nothing further. */
  next_cursor: z.string().nullable(),
  /** Page back the other way from this page's first item; null before the first event. */
  prev_cursor: z.string().nullable(),
});
export type EventPage = z.infer<typeof EventPage>;

/** What a command appended. */
export const CommandResult = z.strictObject({
  conversation: ConversationId,
  status: ConversationStatus,
  /** seq of the last event the command appended (or the tail when it appended nothing). */
  last_seq: Count,
  /** False when the command was a no-op (e.g. pause on a conversation that is not running). */
  appended: z.boolean(),
  /** Present when the run it asked for was queued (the tenant's runs are at the operator's limit): its place. */
  queue: QueuedRun.optional(),
});
export type CommandResult = z.infer<typeof CommandResult>;

export const FinalResponse = z.strictObject({
  /** The agent's last message (or finish message) of the latest run; null if none yet. */
  text: z.string().nullable(),
  seq: Count.nullable(),
  status: ConversationStatus,
});
export type FinalResponse = z.infer<typeof FinalResponse>;

export const ServerInfo = z.strictObject({
  name: z.literal('flotilla-gateway'),
  version: z.string(),
  protocol_version: z.number().int(),
  api_version: z.literal('v1'),
  instance: z.string(),
  tenant: z.string(),
  /** The tools a spec may offer here. */
  tools: z.array(z.strictObject({ name: z.string(), description: z.string() })),
  /** The operator's agents: templates to create from, model profiles a spec may name (never their keys), and whether a spec may bring its own model. */
  agents: z.strictObject({
    templates: z.array(z.strictObject({ name: z.string(), model: z.string(), tools: z.array(z.string()) })),
    /** Each profile's model, and the profiles it falls back on, in order, when its provider is out. */
    profiles: z.array(
      z.strictObject({ name: z.string(), provider: z.string(), model: z.string(), fallbacks: z.array(z.string()) }),
    ),
    custom_models: z.union([
      z.literal(false),
      z.strictObject({ providers: z.array(z.string()).nullable(), base_urls: z.array(z.string()) }),
    ]),
    default: z.strictObject({ model: z.string(), tools: z.array(z.string()) }),
    /** The MCP servers a spec may name: stdio commands (run in the conversation's sandbox) and HTTP URL prefixes; none by default. */
    mcp: z.strictObject({ commands: z.array(z.string()), url_prefixes: z.array(z.string()) }),
    /** The sub-agents a spec may name (`subAgents`) for its `task` tool: what each is for, its tools, its workspace (shared or own) and its model's profile (null: the parent's model). */
    sub_agents: z.array(
      z.strictObject({
        name: z.string(),
        description: z.string(),
        tools: z.array(z.string()),
        workspace: z.enum(['shared', 'own']),
        model: z.string().nullable(),
      }),
    ),
  }),
  capabilities: z.strictObject({
    websocket: z.boolean(),
    token_streaming: z.boolean(),
    confirmation: z.boolean(),
    condensation: z.boolean(),
    event_search: z.boolean(),
    /** Secrets can be set (the gateway has a secrets key: FLOTILLA_SECRETS_KEY_FILE). */
    secrets: z.boolean(),
  }),
  /** How the live tool runners sandbox what the agent runs (from their heartbeats). */
  sandbox: z.strictObject({
    runners: Count,
    /** `bwrap`, `docker`, `none`. */
    kinds: z.array(z.string()),
    /** `none`, `egress`. */
    networks: z.array(z.string()),
    /** Runners whose agent runs with the service's own privileges (kind `none`). */
    unsandboxed_runners: Count,
    warning: z.string().optional(),
  }),
  limits: z.strictObject({
    max_body_bytes: Count,
    max_frame_bytes: Count,
    max_subscribers_per_conversation: Count,
    /** 0 = no limit. */
    max_running: Count,
    /** 0 = no limit. */
    max_running_per_tenant: Count,
    /** A message's images: each at most `max_image_bytes`, at most `max_images_per_message`, `max_message_image_bytes` together; the message routes' body limit is `max_message_body_bytes`. */
    images: z.strictObject({
      max_image_bytes: Count,
      max_images_per_message: Count,
      max_message_image_bytes: Count,
      max_message_body_bytes: Count,
      media_types: z.array(z.string()),
    }),
  }),
});
export type ServerInfo = z.infer<typeof ServerInfo>;

/** The names of a scope's secrets, sorted. Values are never returned. */
export const SecretNames = z.strictObject({ names: z.array(z.string()) });
export type SecretNames = z.infer<typeof SecretNames>;

export const CreatedApiKey = z.strictObject({
  tenant: z.string(),
  name: z.string(),
  /** Shown once; only its hash is stored. */
  api_key: z.string(),
});
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;

/** What a tenant spent in a period, against its budget for it (null: none). */
const PeriodUsage = z.strictObject({
  usd: z.number().nonnegative(),
  tokens: z.number().int().nonnegative(),
  budget: z
    .strictObject({ usd: z.number().positive().optional(), tokens: z.number().int().positive().optional() })
    .nullable(),
});

/**
 * The tenants' model usage (the steps' `llm_usage`: `cost_usd`, prompt + completion tokens) in the
 * current UTC day and month, beside their budgets (the operator's FLOTILLA_TENANT_BUDGETS).
 */
export const TenantUsageReport = z.strictObject({
  day: z.string(),
  month: z.string(),
  /** False when no budgets are configured (FLOTILLA_TENANT_BUDGETS): the step workers count nothing. */
  counting: z.boolean(),
  tenants: z.array(
    z.strictObject({ tenant: z.string(), day: PeriodUsage, month: PeriodUsage, reached: z.string().nullable() }),
  ),
});
export type TenantUsageReport = z.infer<typeof TenantUsageReport>;

/** The caller's own tenant's usage this UTC day and month, beside its budgets (`reached`: why its runs are stopped, or null). */
export const TenantUsage = z.strictObject({
  day: z.string(),
  month: z.string(),
  counting: z.boolean(),
  tenant: z.string(),
  usage: z.strictObject({ day: PeriodUsage, month: PeriodUsage }),
  reached: z.string().nullable(),
});
export type TenantUsage = z.infer<typeof TenantUsage>;

export { EventSource };

// webhooks' resources and requests, and the payload their receivers get
export * from './webhooks.js';
