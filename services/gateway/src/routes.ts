import {
  API_PREFIX,
  AskAnswer,
  AskBody,
  BatchConversations,
  BatchGetQuery,
  CommandResult,
  ConfirmationBody,
  Conversation,
  ConversationPage,
  CountConversationsQuery,
  CountEventsQuery,
  CountResult,
  CreateApiKeyBody,
  ConversationSpec,
  CreateConversationBody,
  CreatedApiKey,
  TenantUsage,
  TenantUsageReport,
  EventPage,
  FinalResponse,
  ForkConversationBody,
  ListConversationsQuery,
  MAX_MESSAGE_BODY_BYTES,
  ReasonBody,
  RewindBody,
  SearchEventsQuery,
  SendMessageBody,
  ServerInfo,
  UpdateConversationBody,
  UpdateSpecBody,
} from '@flotilla/api';
import { ConversationId, Event, EventId } from '@flotilla/events';
import type { TenantBudgets, TenantUsageStore } from '@flotilla/runtime';
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { ApiError } from './api-error.js';
import type { ApiKeyStore } from './api-keys.js';
import type { ConversationIndex } from './conversation-index.js';
import type { ConversationService } from './conversation-service.js';
import { listConversations } from './conversation-list.js';
import { askConversation } from './ask.js';
import { getEvent, searchEvents } from './event-search.js';
import { route, type RouteSpec } from './route-table.js';
import { secretRoutes } from './secret-routes.js';
import { ownUsage, tenantUsageReport } from './tenant-usage.js';
import type { SecretService } from './secret-service.js';
import { scheduleRoutes } from './schedule-routes.js';
import type { ScheduleService } from './schedule-service.js';
import { webhookRoutes } from './webhook-routes.js';
import type { WebhookService } from './webhook-service.js';

export type RouteDependencies = {
  /** Side questions go to the step workers over it. */
  readonly nc: NatsConnection;
  readonly conversations: ConversationService;
  readonly index: ConversationIndex;
  readonly keys: ApiKeyStore;
  readonly secrets: SecretService;
  readonly webhooks: WebhookService;
  readonly schedules: ScheduleService;
  readonly serverInfo: (tenant: string) => ServerInfo;
  /** The tenants' usage and budgets, for the operator (undefined: no budgets configured, nothing counted). */
  readonly usage?: { readonly store: TenantUsageStore; readonly budgets: TenantBudgets };
};

const IdParams = z.strictObject({ id: ConversationId });
const EventParams = z.strictObject({ id: ConversationId, event: z.union([z.string().regex(/^\d{1,15}$/), EventId]) });
const EmptyBody = z.strictObject({}).optional();

const p = (path: string): string => `${API_PREFIX}${path}`;

/** Every REST route of the gateway (the WebSocket is registered beside GET …/events). */
export function restRoutes(deps: RouteDependencies): RouteSpec[] {
  const { conversations, index, secrets } = deps;
  const ref = (tenant: string, id: string) => ({ tenant, conversation: id });
  return [
    route({
      method: 'GET',
      url: p('/server-info'),
      operationId: 'getServerInfo',
      summary: 'Versions, tools, capabilities and limits of this gateway',
      tag: 'server',
      access: 'tenant',
      responses: { 200: ServerInfo },
      handler: async ({ tenant }) => deps.serverInfo(tenant),
    }),
    route({
      method: 'POST',
      url: p('/conversations'),
      operationId: 'createConversation',
      summary: 'Create a conversation (idempotent by client-given id: 201 new, 200 existing)',
      tag: 'conversations',
      access: 'tenant',
      body: CreateConversationBody,
      responses: { 200: Conversation, 201: Conversation },
      errors: [403, 429],
      handler: async ({ tenant, body, reply }) => {
        const result = await conversations.create(tenant, body ?? {});
        reply.code(result.created ? 201 : 200);
        return result.conversation;
      },
    }),
    route({
      method: 'GET',
      url: p('/conversations'),
      operationId: 'listConversations',
      summary: 'List conversations with a status filter, a sort and cursor paging',
      tag: 'conversations',
      access: 'tenant',
      query: ListConversationsQuery,
      responses: { 200: ConversationPage },
      handler: async ({ tenant, query }) =>
        listConversations(index, tenant, query, (conversation) => conversations.queued({ tenant, conversation })),
    }),
    route({
      method: 'GET',
      url: p('/conversations/count'),
      operationId: 'countConversations',
      summary: 'Count conversations (optionally of one status)',
      tag: 'conversations',
      access: 'tenant',
      query: CountConversationsQuery,
      responses: { 200: CountResult },
      handler: async ({ tenant, query }) => ({ count: index.count(tenant, query.status) }),
    }),
    route({
      method: 'GET',
      url: p('/conversations/batch'),
      operationId: 'batchGetConversations',
      summary: 'Get up to 100 conversations by id (null where one does not exist)',
      tag: 'conversations',
      access: 'tenant',
      query: BatchGetQuery,
      responses: { 200: BatchConversations },
      handler: async ({ tenant, query }) => ({
        items: await Promise.all(
          query.ids.map((id) =>
            conversations.get(ref(tenant, id)).catch((error: unknown) => {
              if ((error as { statusCode?: number }).statusCode === 404) return null;
              throw error;
            }),
          ),
        ),
      }),
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id'),
      operationId: 'getConversation',
      summary: 'Get a conversation (its snapshot, caught up with the log)',
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      responses: { 200: Conversation },
      errors: [404],
      handler: async ({ tenant, params }) => conversations.get(ref(tenant, params.id)),
    }),
    route({
      method: 'PATCH',
      url: p('/conversations/:id'),
      operationId: 'updateConversation',
      summary: 'Set the title and/or tags',
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      body: UpdateConversationBody,
      responses: { 200: Conversation },
      errors: [404],
      handler: async ({ tenant, params, body }) => conversations.update(ref(tenant, params.id), body),
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/spec'),
      operationId: 'getConversationSpec',
      summary: 'The agent spec in force: the whole spec its steps follow, and the event that set it',
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      responses: { 200: ConversationSpec },
      errors: [404],
      handler: async ({ tenant, params }) => conversations.spec(ref(tenant, params.id)),
    }),
    route({
      method: 'PATCH',
      url: p('/conversations/:id/spec'),
      operationId: 'updateConversationSpec',
      summary:
        'Change the agent spec from the next step on (switch the model, the tools, the policy, the limits): template and/or fields over the current spec',
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      body: UpdateSpecBody,
      responses: { 200: ConversationSpec },
      errors: [403, 404, 409],
      handler: async ({ tenant, params, body }) => conversations.updateSpec(ref(tenant, params.id), body),
    }),
    route({
      method: 'DELETE',
      url: p('/conversations/:id'),
      operationId: 'deleteConversation',
      summary: 'Delete a conversation: its log and snapshot (409 while it runs)',
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      responses: { 204: null },
      errors: [404, 409],
      handler: async ({ tenant, params, reply }) => {
        await conversations.delete(ref(tenant, params.id));
        reply.code(204);
        return undefined;
      },
    }),
    route({
      method: 'POST',
      url: p('/conversations/:id/messages'),
      operationId: 'sendMessage',
      summary: 'Send a user message (text, images or both), optionally starting the run',
      tag: 'commands',
      access: 'tenant',
      params: IdParams,
      body: SendMessageBody,
      bodyLimit: MAX_MESSAGE_BODY_BYTES,
      responses: { 202: CommandResult },
      errors: [404, 413, 415, 429],
      handler: async ({ tenant, params, body, reply }) => {
        reply.code(202);
        return conversations.sendMessage(ref(tenant, params.id), body, body.run ?? false);
      },
    }),
    ...(
      [
        [
          'run',
          'runConversation',
          "Start or resume the run (409 already_running); past the tenant's limit of running conversations it waits in the tenant's queue (`queue` in the answer)",
          (r) => conversations.run(r),
          [404, 409, 429],
        ],
        [
          'pause',
          'pauseConversation',
          'Pause after the current step (idempotent); a run waiting in the queue leaves it',
          (r, reason) => conversations.pause(r, reason),
          [404],
        ],
        [
          'interrupt',
          'interruptConversation',
          'Cancel the in-flight LLM call or tool now, and pause; a run waiting in the queue leaves it',
          (r, reason) => conversations.interrupt(r, reason),
          [404],
        ],
        [
          'condense',
          'condenseConversation',
          'Request a condensation (done at once when running, else before the next step)',
          (r) => conversations.condense(r),
          [404],
        ],
      ] as const satisfies readonly (readonly [
        string,
        string,
        string,
        (r: { tenant: string; conversation: string }, reason?: string) => Promise<CommandResult>,
        readonly number[],
      ])[]
    ).map(([path, operationId, summary, run, errors]) =>
      route({
        method: 'POST',
        url: p(`/conversations/:id/${path}`),
        operationId,
        summary,
        tag: 'commands',
        access: 'tenant',
        params: IdParams,
        body: path === 'pause' || path === 'interrupt' ? ReasonBody.optional() : EmptyBody,
        responses: { 202: CommandResult },
        errors,
        handler: async ({ tenant, params, body, reply }) => {
          reply.code(202);
          return run(ref(tenant, params.id), (body as { reason?: string } | undefined)?.reason);
        },
      }),
    ),
    route({
      method: 'POST',
      url: p('/conversations/:id/fork'),
      operationId: 'forkConversation',
      summary:
        "A new conversation that starts from this one's view after an event (idempotent by client-given id: 201 new, 200 existing)",
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      body: ForkConversationBody.optional(),
      responses: { 200: Conversation, 201: Conversation },
      errors: [403, 404, 409, 429],
      handler: async ({ tenant, params, body, reply }) => {
        const result = await conversations.fork(ref(tenant, params.id), body ?? {});
        reply.code(result.created ? 201 : 200);
        return result.conversation;
      },
    }),
    route({
      method: 'POST',
      url: p('/conversations/:id/ask'),
      operationId: 'askConversation',
      summary:
        'A side question answered from the conversation\'s current view by its model; nothing is logged. With Accept: text/event-stream, server-sent events: delta ({"text"}) as it is written, then answer or error',
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      body: AskBody,
      responses: { 200: AskAnswer },
      errors: [404, 502],
      handler: async ({ tenant, params, body, request, reply }) => {
        const conversation = ref(tenant, params.id);
        await conversations.snapshot(conversation); // 404 for another tenant's, or none
        if (!String(request.headers.accept ?? '').includes('text/event-stream'))
          return askConversation(deps.nc, conversation, body.question);
        // streamed: the head goes out with the first event, so a failure before it is still a plain error answer
        let started = false;
        const event = (name: string, data: unknown): void => {
          if (!started) {
            started = true;
            reply.hijack();
            reply.raw.writeHead(200, {
              'content-type': 'text/event-stream; charset=utf-8',
              'cache-control': 'no-cache',
              'x-accel-buffering': 'no',
            });
          }
          reply.raw.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
        };
        try {
          event(
            'answer',
            await askConversation(deps.nc, conversation, body.question, (text) => event('delta', { text })),
          );
        } catch (error) {
          if (!started) throw error;
          event(
            'error',
            error instanceof ApiError ? error.body() : { error: { code: 'internal', message: 'the answer failed' } },
          );
        }
        reply.raw.end();
        return reply;
      },
    }),
    route({
      method: 'POST',
      url: p('/conversations/:id/rewind'),
      operationId: 'rewindConversation',
      summary:
        'Go on from after an earlier event: what came later leaves the view and stays in the log (409 while running or waiting)',
      tag: 'commands',
      access: 'tenant',
      params: IdParams,
      body: RewindBody,
      responses: { 202: CommandResult },
      errors: [404, 409],
      handler: async ({ tenant, params, body, reply }) => {
        reply.code(202);
        return conversations.rewind(ref(tenant, params.id), body);
      },
    }),
    route({
      method: 'POST',
      url: p('/conversations/:id/confirmation'),
      operationId: 'respondToConfirmation',
      summary: 'Approve or reject (with a reason) the actions awaiting confirmation',
      tag: 'commands',
      access: 'tenant',
      params: IdParams,
      body: ConfirmationBody,
      responses: { 202: CommandResult },
      errors: [404, 409],
      handler: async ({ tenant, params, body, reply }) => {
        reply.code(202);
        const target = ref(tenant, params.id);
        return body.decision === 'approve' ? conversations.approve(target) : conversations.reject(target, body.reason);
      },
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/final-response'),
      operationId: 'getFinalResponse',
      summary: "The agent's final response of the latest run",
      tag: 'conversations',
      access: 'tenant',
      params: IdParams,
      responses: { 200: FinalResponse },
      errors: [404],
      handler: async ({ tenant, params }) => conversations.finalResponse(ref(tenant, params.id)),
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/events'),
      operationId: 'searchEvents',
      summary:
        'Search events (type, source, time range, text) with cursor paging both ways; a WebSocket upgrade here streams them',
      tag: 'events',
      access: 'tenant',
      params: IdParams,
      query: SearchEventsQuery,
      responses: { 200: EventPage },
      errors: [404],
      handler: async ({ tenant, params, query }) =>
        searchEvents(conversations.log, ref(tenant, params.id), {
          ...query,
          ...(query.after_seq !== undefined ? { afterSeq: query.after_seq } : {}),
        }),
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/events/count'),
      operationId: 'countEvents',
      summary: 'Count events matching the filters',
      tag: 'events',
      access: 'tenant',
      params: IdParams,
      query: CountEventsQuery,
      responses: { 200: CountResult },
      errors: [404],
      handler: async ({ tenant, params, query }) => ({
        count: await conversations.countEvents(ref(tenant, params.id), query),
      }),
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/events/:event'),
      operationId: 'getEvent',
      summary: 'One event, by seq or by event id',
      tag: 'events',
      access: 'tenant',
      params: EventParams,
      responses: { 200: Event },
      errors: [404],
      handler: async ({ tenant, params }) => getEvent(conversations.log, ref(tenant, params.id), params.event),
    }),
    ...secretRoutes(secrets),
    ...webhookRoutes(deps.webhooks),
    ...scheduleRoutes(deps.schedules),
    route({
      method: 'GET',
      url: p('/usage'),
      operationId: 'getUsage',
      summary: "Your tenant's model usage in the current UTC day and month, beside its budgets",
      tag: 'server',
      access: 'tenant',
      responses: { 200: TenantUsage },
      handler: async ({ tenant }) => ownUsage(deps.usage, tenant, new Date()),
    }),
    route({
      method: 'GET',
      url: p('/admin/usage'),
      operationId: 'getTenantUsage',
      summary: "The tenants' model usage in the current UTC day and month, beside their budgets (admin key only)",
      tag: 'admin',
      access: 'admin',
      responses: { 200: TenantUsageReport },
      errors: [403],
      handler: async () => tenantUsageReport(deps.usage, new Date()),
    }),
    route({
      method: 'POST',
      url: p('/admin/api-keys'),
      operationId: 'createApiKey',
      summary: 'Mint an API key for a tenant (admin key only; the key is shown once)',
      tag: 'admin',
      access: 'admin',
      body: CreateApiKeyBody,
      responses: { 201: CreatedApiKey },
      errors: [403],
      handler: async ({ body, reply }) => {
        reply.code(201);
        return { tenant: body.tenant, name: body.name, api_key: await deps.keys.create(body.tenant, body.name) };
      },
    }),
  ];
}
