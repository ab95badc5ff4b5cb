// One agent run as the reach endpoints (MCP, A2A, OpenAI-compatible) see it: start a conversation
// (or go on with one) with a message, follow it to rest, read its answer. Each goes through the
// gateway's own REST and WebSocket API with the caller's key, so authentication, tenant
// confinement, validation, limits and queues are the API's, decided in one place.
import type { DeltaFrame } from '@flotilla/api';
import { FlotillaClient } from '@flotilla/client';
import { NodeWebSocket } from '@flotilla/client/node';
import type { ConversationStatus, Event } from '@flotilla/events';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../api-error.js';
import { presentedKey } from '../request-hooks.js';

/** What a caller asks the agent: a message, to a new conversation (from a template) or an existing one. */
export type RunInput = {
  readonly text: string;
  /** Go on with this conversation of the caller's tenant; otherwise a new one is created. */
  readonly conversation?: string;
  /** The operator's template a new conversation starts from (server-info lists them). */
  readonly template?: string;
  /** The model profile a new conversation uses instead of its template's. */
  readonly profile?: string;
  readonly title?: string;
};

/** A started run: where to follow it from. */
export type StartedRun = {
  readonly conversation: string;
  /** The conversation's last event before the message: the run's events come after it. */
  readonly afterSeq: number;
  /**
   * The message's seq when it joined a run already going (read at that run's next step): the first
   * rest after it ends the run, with no new start.
   */
  readonly joinedAtSeq?: number;
};

/** Where a run came to rest, and its answer. */
export type RunOutcome = {
  readonly conversation: string;
  /** Anything but `running`: `finished`, `waiting_for_confirmation` (an action awaits approval), `paused`, `error`, `stuck`. */
  readonly status: ConversationStatus;
  /** The agent's final message of the run (null if it gave none). */
  readonly text: string | null;
  /** The conversation's last error, when the run ended in one. */
  readonly error: string | null;
};

export type FollowOptions = {
  /** The model's text as it streams. */
  readonly onDelta?: (text: string) => void;
  /** Every event of the run, in order. */
  readonly onEvent?: (event: Event) => void;
  /** Stops following (the run goes on). */
  readonly signal?: AbortSignal;
};

/** The statuses a run rests at. */
export const isAtRest = (status: ConversationStatus): boolean => status !== 'running' && status !== 'idle';

/**
 * Runs on behalf of a request: a client of this gateway's own API (over loopback) with the
 * request's key. `baseUrl` is read when first needed (the port is known once the server listens).
 */
export class AgentRuns {
  readonly #baseUrl: () => string;

  constructor(baseUrl: () => string) {
    this.#baseUrl = baseUrl;
  }

  /** The gateway's own loopback address, as `app` listens (for `new AgentRuns(selfUrl(app))`). */
  static selfUrl(app: FastifyInstance): () => string {
    return () => {
      const address = app.server.address();
      if (address === null || typeof address === 'string')
        throw new Error('the gateway is not listening on a TCP port');
      const host = address.family === 'IPv6' ? '[::1]' : '127.0.0.1';
      return `http://${host}:${address.port}`;
    };
  }

  /** A client acting with the request's own key (the access hook has checked it already). */
  clientFor(request: FastifyRequest): FlotillaClient {
    const key = presentedKey(request);
    if (key === undefined)
      throw new ApiError(401, 'unauthorized', 'Send the API key as "Authorization: Bearer <key>".');
    return new FlotillaClient({ baseUrl: this.#baseUrl(), apiKey: key, WebSocket: NodeWebSocket, timeoutMs: 60_000 });
  }

  /** Sends the message (creating the conversation when none is named) and starts its run. */
  async start(client: FlotillaClient, input: RunInput): Promise<StartedRun> {
    if (input.conversation !== undefined) {
      const before = await client.getConversation(input.conversation);
      const sent = await client.sendMessage(input.conversation, input.text, { run: true });
      const joinedAtSeq =
        before.status === 'running' && sent.status === 'running'
          ? await joinedAt(client, input.conversation, sent.last_seq)
          : undefined;
      return {
        conversation: input.conversation,
        afterSeq: before.last_seq,
        ...(joinedAtSeq === undefined ? {} : { joinedAtSeq }),
      };
    }
    const { conversation } = await client.createConversation({
      message: input.text,
      run: true,
      ...(input.title === undefined ? {} : { title: input.title }),
      ...(input.template === undefined ? {} : { template: input.template }),
      ...(input.profile === undefined ? {} : { spec: { llm: { profile: input.profile } } }),
    });
    return { conversation: conversation.id, afterSeq: 0 };
  }

  /** Follows a started run until it comes to rest and reads its answer. */
  async follow(client: FlotillaClient, run: StartedRun, options: FollowOptions = {}): Promise<RunOutcome> {
    const status = await restingStatus(client, run, options);
    const [final, conversation] = await Promise.all([
      client.finalResponse(run.conversation),
      client.getConversation(run.conversation),
    ]);
    const error =
      conversation.last_error && conversation.last_error.seq > run.afterSeq ? conversation.last_error : null;
    return {
      conversation: run.conversation,
      status,
      text: final.seq !== null && final.seq > run.afterSeq ? final.text : null,
      error: error ? `${error.code}: ${error.detail}` : null,
    };
  }

  /** Starts a run and follows it to rest. */
  async run(client: FlotillaClient, input: RunInput, options: FollowOptions = {}): Promise<RunOutcome> {
    return this.follow(client, await this.start(client, input), options);
  }
}

/**
 * Where a message sent to a running conversation joined its run: its command's last event,
 * unless that is the `running` state change of a run the message started (the run had just
 * come to rest).
 */
async function joinedAt(client: FlotillaClient, conversation: string, lastSeq: number): Promise<number | undefined> {
  const last = await client.getEvent(conversation, lastSeq);
  return last.type === 'state_change' && last.status === 'running' ? undefined : lastSeq;
}

/**
 * The status the run comes to rest at: the first status change after the run went `running`
 * (a run waiting in its tenant's queue goes `running` later), or after the message that joined a
 * run going on. Rejects when `signal` aborts or the event stream ends for good.
 */
function restingStatus(client: FlotillaClient, run: StartedRun, options: FollowOptions): Promise<ConversationStatus> {
  return new Promise<ConversationStatus>((resolve, reject) => {
    let started = false;
    let settled = false;
    const finish = (outcome: { status: ConversationStatus } | { error: Error }): void => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      subscription.close();
      if ('error' in outcome) reject(outcome.error);
      else resolve(outcome.status);
    };
    const onAbort = (): void => finish({ error: new Error('stopped following the run') });
    const subscription = client.subscribe(run.conversation, {
      afterSeq: run.afterSeq,
      onDelta: (delta: DeltaFrame) => {
        if (delta.kind === 'text' && delta.text !== '') options.onDelta?.(delta.text);
      },
      onEvent: (event) => {
        if (settled) return;
        options.onEvent?.(event);
        if (event.type !== 'state_change' || event.status === undefined) return;
        if (event.status === 'running') started = true;
        const joined = run.joinedAtSeq !== undefined && event.seq > run.joinedAtSeq;
        if ((started || joined) && isAtRest(event.status)) finish({ status: event.status });
      },
      onClose: (reason) => finish({ error: new Error(`the event stream closed: ${reason.code} ${reason.reason}`) }),
    });
    options.signal?.addEventListener('abort', onAbort);
    if (options.signal?.aborted) onAbort();
  });
}
