import { API_KEY_HEADER, API_PREFIX } from '@flotilla/api/constants';
import type {
  AskAnswer,
  BatchConversations,
  CommandResult,
  ConfirmationBody,
  Conversation,
  ConversationPage,
  ConversationSpec,
  CountConversationsQuery,
  CountEventsQuery,
  CountResult,
  CreateConversationBody,
  CreatedApiKey,
  CreatedWebhook,
  CreateScheduleBody,
  CreateWebhookBody,
  DeadLetter,
  DeadLetterList,
  EventPage,
  FileListing,
  FinalResponse,
  ForkConversationBody,
  GitDiff,
  GitStatus,
  ImageUpload,
  ListConversationsQuery,
  RewindBody,
  Schedule,
  ScheduleList,
  SearchEventsQuery,
  SecretNames,
  ServerInfo,
  TenantUsage,
  TenantUsageReport,
  UpdateConversationBody,
  UpdateSpecBody,
  UploadedFile,
  Webhook,
  WebhookList,
} from '@flotilla/api';
import type { Event, OnBusy } from '@flotilla/events';
import { FlotillaApiError } from './errors.js';
import { EventSubscription, type SubscribeOptions, type WebSocketLike } from './subscription.js';

export type ClientOptions = {
  /** The gateway's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** A WebSocket constructor: the browser's, or `ws` in Node (see `@flotilla/client/node`). */
  readonly WebSocket?: new (url: string) => WebSocketLike;
  /** Per-request timeout. Default 30 s. */
  readonly timeoutMs?: number;
};

export type CreateResult = { readonly conversation: Conversation; readonly created: boolean };

type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

/** A typed client for the gateway's REST API and its event WebSocket (with auto-resume). */
export class FlotillaClient {
  readonly #base: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(readonly options: ClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  // ── conversations ────────────────────────────────────────────────────────────────────────
  async createConversation(body: CreateConversationBody = {}): Promise<CreateResult> {
    const { status, data } = await this.#request<Conversation>('POST', '/conversations', { body });
    return { conversation: data, created: status === 201 };
  }
  getConversation(id: string): Promise<Conversation> {
    return this.#json('GET', `/conversations/${enc(id)}`);
  }
  batchGetConversations(ids: readonly string[]): Promise<BatchConversations> {
    return this.#json('GET', '/conversations/batch', { query: { ids: ids.join(',') } });
  }
  listConversations(query: ListConversationsQuery = {}): Promise<ConversationPage> {
    return this.#json('GET', '/conversations', { query });
  }
  /** Every conversation matching the query, following cursors. */
  async *allConversations(query: Omit<ListConversationsQuery, 'cursor'> = {}): AsyncGenerator<Conversation> {
    let cursor: string | undefined;
    do {
      const page = await this.listConversations({ ...query, ...(cursor ? { cursor } : {}) });
      yield* page.items;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
  async countConversations(query: CountConversationsQuery = {}): Promise<number> {
    return (await this.#json<CountResult>('GET', '/conversations/count', { query })).count;
  }
  updateConversation(id: string, body: UpdateConversationBody): Promise<Conversation> {
    return this.#json('PATCH', `/conversations/${enc(id)}`, { body });
  }
  /** A new conversation that starts from this one's view after `at_seq` (default its last event); `created` false when the given id already existed. */
  async forkConversation(id: string, body: ForkConversationBody = {}): Promise<CreateResult> {
    const { status, data } = await this.#request<Conversation>('POST', `/conversations/${enc(id)}/fork`, { body });
    return { conversation: data, created: status === 201 };
  }
  /** A side question answered by the conversation's model from its current view; nothing is logged. */
  ask(id: string, question: string): Promise<AskAnswer> {
    return this.#json('POST', `/conversations/${enc(id)}/ask`, { body: { question } });
  }
  /** Go on from after event `to_seq`: the later events leave the view and stay in the log. */
  rewind(id: string, body: RewindBody): Promise<CommandResult> {
    return this.#json('POST', `/conversations/${enc(id)}/rewind`, { body });
  }
  /** The agent spec in force: the whole spec the conversation's steps follow, and the event that set it. */
  getSpec(id: string): Promise<ConversationSpec> {
    return this.#json('GET', `/conversations/${enc(id)}/spec`);
  }
  /** Changes the spec from the next step on (switch the model, the tools, the policy): a template and/or fields over the current spec. */
  updateSpec(id: string, body: UpdateSpecBody): Promise<ConversationSpec> {
    return this.#json('PATCH', `/conversations/${enc(id)}/spec`, { body });
  }
  async deleteConversation(id: string): Promise<void> {
    await this.#request('DELETE', `/conversations/${enc(id)}`);
  }

  // ── commands ─────────────────────────────────────────────────────────────────────────────
  /** A user message: its text (may be empty with images) and images (base64; png, jpeg, gif or webp), optionally starting the run. */
  /** A user message; `on_busy` says what it does if the conversation is running (its spec's when absent: docs/api.md, "Messages while running"). */
  sendMessage(
    id: string,
    text: string,
    options: { run?: boolean; images?: readonly ImageUpload[]; on_busy?: OnBusy } = {},
  ): Promise<CommandResult> {
    const body = { ...(text === '' && options.images?.length ? {} : { text }), ...options };
    return this.#json('POST', `/conversations/${enc(id)}/messages`, { body });
  }
  run(id: string): Promise<CommandResult> {
    return this.#json('POST', `/conversations/${enc(id)}/run`, { body: {} });
  }
  pause(id: string, reason?: string): Promise<CommandResult> {
    return this.#json('POST', `/conversations/${enc(id)}/pause`, { body: reason === undefined ? {} : { reason } });
  }
  interrupt(id: string, reason?: string): Promise<CommandResult> {
    return this.#json('POST', `/conversations/${enc(id)}/interrupt`, { body: reason === undefined ? {} : { reason } });
  }
  condense(id: string): Promise<CommandResult> {
    return this.#json('POST', `/conversations/${enc(id)}/condense`, { body: {} });
  }
  respond(id: string, body: ConfirmationBody): Promise<CommandResult> {
    return this.#json('POST', `/conversations/${enc(id)}/confirmation`, { body });
  }
  approve(id: string): Promise<CommandResult> {
    return this.respond(id, { decision: 'approve' });
  }
  reject(id: string, reason: string): Promise<CommandResult> {
    return this.respond(id, { decision: 'reject', reason });
  }
  finalResponse(id: string): Promise<FinalResponse> {
    return this.#json('GET', `/conversations/${enc(id)}/final-response`);
  }

  // ── events ───────────────────────────────────────────────────────────────────────────────
  searchEvents(id: string, query: SearchEventsQuery = {}): Promise<EventPage> {
    return this.#json('GET', `/conversations/${enc(id)}/events`, { query: flattenFilters(query) });
  }
  async countEvents(id: string, query: CountEventsQuery = {}): Promise<number> {
    return (
      await this.#json<CountResult>('GET', `/conversations/${enc(id)}/events/count`, { query: flattenFilters(query) })
    ).count;
  }
  /** One event by its seq (a number) or its id (a string). */
  getEvent(id: string, seqOrId: number | string): Promise<Event> {
    return this.#json('GET', `/conversations/${enc(id)}/events/${enc(String(seqOrId))}`);
  }

  /**
   * Follow a conversation's events over WebSocket from `afterSeq`: every event exactly once, in
   * order, reconnecting (with the last seq seen) after drops and slow-consumer closes.
   */
  subscribe(id: string, options: SubscribeOptions = {}): EventSubscription {
    const WebSocketImpl =
      this.options.WebSocket ?? (globalThis as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
    if (!WebSocketImpl) throw new Error('no WebSocket implementation: pass one (in Node, from @flotilla/client/node)');
    const url = `${this.#base.replace(/^http/, 'ws')}${API_PREFIX}/conversations/${enc(id)}/events`;
    return new EventSubscription(url, this.options.apiKey, WebSocketImpl, options);
  }

  // ── secrets (values go in, never out) ───────────────────────────────────────────────────────
  /** The names of a conversation's own secrets, sorted. */
  async listConversationSecrets(id: string): Promise<string[]> {
    return (await this.#json<SecretNames>('GET', `/conversations/${enc(id)}/secrets`)).names;
  }
  /** Set one of a conversation's secrets: its sandbox gets it as the environment variable `name`. */
  async setConversationSecret(id: string, name: string, value: string): Promise<void> {
    await this.#request('PUT', `/conversations/${enc(id)}/secrets/${enc(name)}`, { body: { value } });
  }
  /** Remove one of a conversation's secrets (FlotillaApiError secret_not_found when it has none of that name). */
  async removeConversationSecret(id: string, name: string): Promise<void> {
    await this.#request('DELETE', `/conversations/${enc(id)}/secrets/${enc(name)}`);
  }
  /** The names of the tenant's default secrets (every conversation gets them unless it sets the same name). */
  async listTenantSecrets(): Promise<string[]> {
    return (await this.#json<SecretNames>('GET', '/secrets')).names;
  }
  async setTenantSecret(name: string, value: string): Promise<void> {
    await this.#request('PUT', `/secrets/${enc(name)}`, { body: { value } });
  }
  async removeTenantSecret(name: string): Promise<void> {
    await this.#request('DELETE', `/secrets/${enc(name)}`);
  }

  // ── webhooks (the signing secret is returned by the creation only) ─────────────────────────
  /** Register a webhook of this tenant: its URL gets the chosen kinds of event, signed with the returned `secret` (shown once). */
  createWebhook(body: CreateWebhookBody): Promise<CreatedWebhook> {
    return this.#json('POST', '/webhooks', { body });
  }
  /** The tenant's webhooks, oldest first. */
  async listWebhooks(): Promise<Webhook[]> {
    return (await this.#json<WebhookList>('GET', '/webhooks')).webhooks;
  }
  getWebhook(id: string): Promise<Webhook> {
    return this.#json('GET', `/webhooks/${enc(id)}`);
  }
  /** Remove a webhook and its dead letters (FlotillaApiError webhook_not_found when the tenant has none of that id). */
  async removeWebhook(id: string): Promise<void> {
    await this.#request('DELETE', `/webhooks/${enc(id)}`);
  }
  /** The webhook's deliveries that failed every attempt, the latest first. */
  async listWebhookDeadLetters(id: string, options: { limit?: number } = {}): Promise<DeadLetter[]> {
    return (
      await this.#json<DeadLetterList>('GET', `/webhooks/${enc(id)}/dead-letters`, { query: { limit: options.limit } })
    ).dead_letters;
  }

  // ── schedules (run by nats-server's scheduler, taken by a gateway) ─────────────────────────
  /** Schedule a run: a conversation created from a template with a message, or a message sent to a conversation; at a time, every interval or on a cron expression in a time zone. */
  createSchedule(body: CreateScheduleBody): Promise<Schedule> {
    return this.#json('POST', '/schedules', { body });
  }
  /** The tenant's schedules, oldest first. */
  async listSchedules(): Promise<Schedule[]> {
    return (await this.#json<ScheduleList>('GET', '/schedules')).schedules;
  }
  /** One schedule, with its status, next run and last run (FlotillaApiError schedule_not_found when the tenant has none of that id). */
  getSchedule(id: string): Promise<Schedule> {
    return this.#json('GET', `/schedules/${enc(id)}`);
  }
  /** No run until resumed. */
  pauseSchedule(id: string): Promise<Schedule> {
    return this.#json('POST', `/schedules/${enc(id)}/pause`);
  }
  /** Runs again from now on. */
  resumeSchedule(id: string): Promise<Schedule> {
    return this.#json('POST', `/schedules/${enc(id)}/resume`);
  }
  /** Run it now, once (its outcome shows in the schedule's `last_run` soon after). */
  runSchedule(id: string): Promise<Schedule> {
    return this.#json('POST', `/schedules/${enc(id)}/run`);
  }
  async deleteSchedule(id: string): Promise<void> {
    await this.#request('DELETE', `/schedules/${enc(id)}`);
  }

  // ── workspace files and git (answered by the tool runner that owns the workspace) ────────────
  /** One folder of the conversation's workspace (`''`: its root), one level: its entries, folders first. Paths are relative to the workspace root. */
  listFiles(id: string, path = ''): Promise<FileListing> {
    return this.#json('GET', `/conversations/${enc(id)}/files`, { query: { path: path || undefined } });
  }
  /** A file of the workspace, byte for byte (FlotillaApiError file_not_found, is_a_directory, path_outside_workspace, file_too_large, secret_in_file…). */
  async downloadFile(id: string, path: string): Promise<Uint8Array> {
    const response = await this.#send(
      'GET',
      `/conversations/${enc(id)}/files/content`,
      { query: { path } },
      'application/octet-stream',
    );
    return new Uint8Array(await response.arrayBuffer());
  }
  /** Puts a file in the workspace at `path` (made or replaced at once, its folders made); the conversation's log records it as a `workspace_file` event. */
  async uploadFile(id: string, path: string, content: Uint8Array | ArrayBuffer | Blob | string): Promise<UploadedFile> {
    // a copy of a view (it may be of a shared or larger buffer), the bytes as they are otherwise
    const bytes =
      typeof content === 'string'
        ? new TextEncoder().encode(content)
        : content instanceof Uint8Array
          ? new Uint8Array(content)
          : content;
    return (
      await this.#request<UploadedFile>('PUT', `/conversations/${enc(id)}/files/content`, { query: { path }, bytes })
    ).data;
  }
  /** `git status` of the repository holding the folder (`''`: the workspace root), its changes under that folder (FlotillaApiError not_a_git_repository). */
  gitStatus(id: string, path = ''): Promise<GitStatus> {
    return this.#json('GET', `/conversations/${enc(id)}/git/status`, { query: { path: path || undefined } });
  }
  /** The diff of the folder's repository against HEAD (untracked files as new), under that folder. */
  gitDiff(id: string, path = ''): Promise<GitDiff> {
    return this.#json('GET', `/conversations/${enc(id)}/git/diff`, { query: { path: path || undefined } });
  }

  // ── server ───────────────────────────────────────────────────────────────────────────────
  serverInfo(): Promise<ServerInfo> {
    return this.#json('GET', '/server-info');
  }
  /** This key's tenant's model usage this UTC day and month, beside its budgets. */
  usage(): Promise<TenantUsage> {
    return this.#json('GET', '/usage');
  }
  /** Every tenant's usage and budgets (needs the gateway's admin key as this client's key). */
  tenantUsage(): Promise<TenantUsageReport> {
    return this.#json('GET', '/admin/usage');
  }
  /** Mint an API key for a tenant (needs the gateway's admin key as this client's key). */
  createApiKey(tenant: string, name: string): Promise<CreatedApiKey> {
    return this.#json('POST', '/admin/api-keys', { body: { tenant, name } });
  }

  async #json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.#request<T>(method, path, options)).data;
  }

  async #request<T>(method: string, path: string, options: RequestOptions = {}): Promise<{ status: number; data: T }> {
    const response = await this.#send(method, path, options, 'application/json');
    const text = await response.text();
    let data: unknown = undefined;
    if (text.length > 0) {
      try {
        data = JSON.parse(text);
      } catch {
        throw new FlotillaApiError(
          response.status,
          'bad_response',
          `${method} ${new URL(response.url || this.#base).pathname}: the gateway answered ${response.status} with non-JSON`,
        );
      }
    }
    return { status: response.status, data: data as T };
  }

  /** The gateway's answer to a request (a JSON body, or `bytes` sent as application/octet-stream); an error answer is thrown as a FlotillaApiError. */
  async #send(method: string, path: string, options: RequestOptions, accept: string): Promise<Response> {
    const url = new URL(`${this.#base}${API_PREFIX}${path}`);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, Array.isArray(value) ? value.join(',') : String(value));
    }
    const headers: Record<string, string> = { [API_KEY_HEADER]: this.options.apiKey, accept };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.bytes !== undefined) headers['content-type'] = 'application/octet-stream';
    const body = options.bytes ?? (options.body !== undefined ? JSON.stringify(options.body) : undefined);
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      throw new FlotillaApiError(0, 'network_error', `${method} ${url.pathname}: ${(error as Error).message}`);
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => '');
    let data: unknown;
    try {
      data = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      throw new FlotillaApiError(
        response.status,
        'bad_response',
        `${method} ${url.pathname}: the gateway answered ${response.status} with non-JSON`,
      );
    }
    const error = (
      data as { error?: { code?: string; message?: string; issues?: { path: string; message: string }[] } } | undefined
    )?.error;
    const retryAfter = response.headers.get('retry-after');
    throw new FlotillaApiError(
      response.status,
      (error?.code ?? 'bad_response') as FlotillaApiError['code'],
      error?.message ?? `${method} ${url.pathname}: HTTP ${response.status}`,
      error?.issues ?? [],
      retryAfter === null ? undefined : Number(retryAfter),
    );
  }
}

type RequestOptions = {
  readonly body?: unknown;
  readonly query?: Query;
  /** Raw bytes as the body (application/octet-stream), instead of JSON. */
  readonly bytes?: Uint8Array<ArrayBuffer> | ArrayBuffer | Blob;
};

const enc = encodeURIComponent;

function flattenFilters(query: SearchEventsQuery | CountEventsQuery): Query {
  const flat: Query = {};
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) flat[key] = Array.isArray(value) ? value.join(',') : (value as string | number);
  }
  return flat;
}
