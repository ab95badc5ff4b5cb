import { CloseCode, SocketQuery } from '@flotilla/api';
import { ConversationId } from '@flotilla/events';
import type { EventLog } from '@flotilla/log';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import type { ZodError } from 'zod';
import { ApiError } from './api-error.js';
import { hashApiKey, type ApiKeyStore } from './api-keys.js';
import type { GatewayConfig } from './config.js';
import type { ConversationIndex } from './conversation-index.js';
import type { ConversationService } from './conversation-service.js';
import { RateLimiter } from './rate-limiter.js';
import type { RefusedUpgrades } from './request-hooks.js';
import type { SecretService } from './secret-service.js';
import type { SocketHub } from './socket-hub.js';
import { SocketSession } from './socket-session.js';

const SOCKET_PING_MS = 30_000;

export type SocketConnectionsOptions = {
  readonly config: Pick<GatewayConfig, 'authTimeoutMs' | 'maxSubscribersPerConversation' | 'socketHighWaterBytes'>;
  readonly keys: ApiKeyStore;
  /** Auth frames per API key (the requests' limiter). */
  readonly limiter: RateLimiter;
  /** Upgrades whose key the access hook refused: their sockets are closed with the reason. */
  readonly refusedUpgrades: RefusedUpgrades;
  readonly hub: SocketHub;
  readonly log: EventLog;
  readonly index: ConversationIndex;
  readonly conversations: ConversationService;
  readonly secrets: SecretService;
  readonly logger: Logger;
};

/**
 * The event WebSocket, from its upgrade to its session: the conversation and query checked, the
 * key (in the upgrade's header or a first auth frame) checked, pings, frames rate-limited, and a
 * SocketSession on the conversation's shared feed once a slot of it is taken.
 */
export class SocketConnections {
  readonly #sessions = new Set<SocketSession>();

  constructor(readonly options: SocketConnectionsOptions) {}

  /** Takes a socket upgraded on the events route; it closes itself with a close code saying why when it cannot go on. */
  open(socket: WebSocket, request: FastifyRequest): void {
    const { config, keys, limiter, refusedUpgrades, hub, log, index, conversations, secrets, logger } = this.options;
    const sessions = this.#sessions;
    const queued: string[] = [];
    let session: SocketSession | undefined;
    let authed = request.tenant !== '';
    let authenticating = false;
    let alive = true;
    const fail = (code: number, reason: string): void => socket.close(code, reason);
    const refused = refusedUpgrades.get(request);
    if (refused !== undefined) return fail(CloseCode.Unauthorized, refused);
    const id = ConversationId.safeParse((request.params as { id?: unknown }).id);
    const query = SocketQuery.safeParse(request.query ?? {});
    if (!id.success) return fail(CloseCode.BadFrame, 'invalid conversation id');
    if (!query.success) return fail(CloseCode.BadFrame, socketQueryProblem(query.error));
    const authTimer = authed
      ? undefined
      : setTimeout(() => fail(CloseCode.Unauthorized, 'no auth frame in time'), config.authTimeoutMs);
    const ping = setInterval(() => {
      if (!alive) return socket.terminate();
      alive = false;
      socket.ping();
    }, SOCKET_PING_MS);
    socket.on('pong', () => (alive = true));
    let release: (() => void) | undefined;
    socket.on('close', () => {
      clearTimeout(authTimer);
      clearInterval(ping);
      if (session) {
        session.feed.remove(session);
        sessions.delete(session);
      }
      release?.();
    });
    const frames = new RateLimiter(20);
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      const text = isBinary ? '' : data.toString('utf8');
      if (!authed && !authenticating) {
        authenticating = true;
        void authenticate(text);
        return;
      }
      if (!session) {
        // frames sent right behind the auth frame wait for the session
        if (queued.length < 16) queued.push(text);
        else
          socket.send(
            JSON.stringify({
              type: 'error',
              ...frameId(text),
              code: 'rate_limited',
              message: 'Too many frames before the subscription started; this one was dropped.',
            }),
          );
        return;
      }
      if (frames.take('socket') > 0) {
        // with the frame's id, so the client knows which of its commands was dropped
        socket.send(
          JSON.stringify({
            type: 'error',
            ...frameId(text),
            code: 'rate_limited',
            message: 'Too many frames: at most 20 per second.',
          }),
        );
        return;
      }
      void session.onFrame(text);
    });

    const authenticate = async (text: string): Promise<void> => {
      let key: unknown;
      try {
        const frame = JSON.parse(text) as { type?: unknown; api_key?: unknown };
        key = frame.type === 'auth' ? frame.api_key : undefined;
      } catch {
        key = undefined;
      }
      if (typeof key !== 'string' || key.length === 0 || key.length > 256)
        return fail(CloseCode.Unauthorized, 'the first frame must be {"type":"auth","api_key":"..."}');
      if (limiter.take(hashApiKey(key)) > 0) return fail(CloseCode.Unauthorized, 'rate limited: retry later');
      const record = await keys.resolve(key).catch(() => null);
      if (!record) return fail(CloseCode.Unauthorized, 'the API key is not valid');
      clearTimeout(authTimer);
      request.tenant = record.tenant;
      authed = true;
      await begin();
    };

    const begin = async (): Promise<void> => {
      const ref = { tenant: request.tenant, conversation: id.data };
      // the shared feed knows the tail: a socket on a conversation others already watch costs no NATS request
      const slot = await hub.acquire(ref).catch((error: unknown) => {
        logger.warn({ err: error }, 'socket could not load the conversation');
        return undefined;
      });
      if (slot === undefined) return fail(CloseCode.Unavailable, 'the log is unavailable; reconnect later');
      if (slot === null)
        return fail(
          CloseCode.TooManySubscribers,
          `too many subscribers on this conversation (limit ${config.maxSubscribersPerConversation})`,
        );
      release = slot.release;
      if (socket.readyState !== socket.OPEN) return release(); // closed while the slot was taken: its close handler has run
      if (slot.feed.tail.lastSeq === 0) return fail(CloseCode.NotFound, `no conversation "${id.data}"`);
      const afterSeq = query.data.after_seq;
      if (afterSeq > slot.feed.tail.lastSeq) {
        // past the feed's tail: the feed may trail another gateway's by a moment, so the log's own tail decides
        const tail = await log.tail(ref).catch(() => undefined);
        if (socket.readyState !== socket.OPEN) return;
        if (tail === undefined) return fail(CloseCode.Unavailable, 'the log is unavailable; reconnect later');
        if (afterSeq > tail.lastSeq)
          return fail(
            CloseCode.BadFrame,
            `after_seq ${afterSeq} is past the last seq ${tail.lastSeq}: reconnect with after_seq at most ${tail.lastSeq}`,
          );
      }
      const indexed = index.get(ref.tenant, ref.conversation);
      let status: string;
      try {
        status =
          indexed && indexed.last_seq >= slot.feed.tail.lastSeq
            ? indexed.status
            : (await conversations.snapshot(ref)).status;
      } catch (error) {
        if (error instanceof ApiError && error.statusCode === 404)
          return fail(CloseCode.NotFound, `no conversation "${id.data}"`);
        logger.warn({ err: error }, 'socket could not load the conversation');
        return fail(CloseCode.Unavailable, 'the log is unavailable; reconnect later');
      }
      if (socket.readyState !== socket.OPEN) return release();
      session = new SocketSession(socket, slot.feed, {
        ref,
        afterSeq: query.data.after_seq,
        highWaterBytes: config.socketHighWaterBytes,
        log,
        conversations,
        secrets,
        logger,
      });
      sessions.add(session);
      slot.feed.add(session);
      session.start(status);
      for (const text of queued.splice(0)) void session.onFrame(text);
    };

    if (authed) void begin();
  }

  /** Closes every socket (1001: reconnect elsewhere, with after_seq). */
  closeAll(): void {
    for (const session of this.#sessions)
      session.close(CloseCode.GoingAway, 'the gateway is shutting down; reconnect with after_seq');
  }
}

/** `{ id }` of a client frame that has a string id (as SocketSession echoes it), else nothing. */
function frameId(text: string): { id?: string } {
  try {
    const id = (JSON.parse(text) as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? { id: id.slice(0, 64) } : {};
  } catch {
    return {};
  }
}

/** Why a socket's query string was refused, in a close reason's few bytes. */
function socketQueryProblem(error: ZodError): string {
  const unknown = error.issues.find((issue) => issue.code === 'unrecognized_keys');
  if (unknown)
    return `unknown query parameter ${unknown.keys.map((key) => `"${key.slice(0, 32)}"`).join(', ')}: only after_seq is taken`;
  return 'after_seq must be a non-negative integer';
}
