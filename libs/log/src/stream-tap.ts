import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type ConsumerConfig,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { decodeCommit } from './codec.js';
import { DEFAULT_SUBJECT_PREFIX, parseConversationSubject } from './conversation-ref.js';
import type { StoredCommit } from './stored-commit.js';
import { DEFAULT_STREAM_NAME } from './stream-setup.js';

/** Where a tap starts (a named tap that exists resumes where it was instead). */
export type TapStart =
  | { readonly from: 'start' }
  | { readonly from: 'new' }
  | { readonly from: 'time'; readonly since: Date }
  | { readonly from: 'position'; readonly streamSeq: number };

export type StreamTapOptions = {
  readonly streamName?: string;
  readonly subjectPrefix?: string;
  /** One tenant's conversations (a tenant tap credential can read no other). */
  readonly tenant?: string;
  /** One conversation (with or without its tenant). */
  readonly conversation?: string;
  readonly start: TapStart;
  /** Keep reading as commits land; otherwise stop at the end of the stream as of the start. */
  readonly follow: boolean;
  /**
   * A durable tap: the consumer of this name keeps the position of the last commit handed out,
   * and a tap of the same name started again resumes after it.
   */
  readonly name?: string;
  readonly signal?: AbortSignal;
  /** Told when the tap waits out NATS being away (a server restart). */
  readonly onRetry?: (error: unknown) => void;
};

/** What a tap reads: a valid commit, or a message of the stream that is not one (never passed off as events). */
export type TapItem =
  | { readonly kind: 'commit'; readonly commit: StoredCommit }
  | { readonly kind: 'invalid'; readonly streamSeq: number; readonly subject: string; readonly reason: string };

export type TapResult = {
  /** Stream position of the last message read (0 when none). */
  readonly lastStreamSeq: number;
  readonly consumer: string;
  /** A named tap that existed: it resumed where it was (the start was not used). */
  readonly resumed: boolean;
};

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const BATCH = 256;
const CONSUMER_NOT_FOUND = 10014;

/** The consumer name of a named tap (kept apart from the services' groups). */
export function tapConsumerName(name: string): string {
  if (!NAME.test(name))
    throw new Error(`a tap's name must be 1-64 characters of A-Z a-z 0-9 _ -, not ${JSON.stringify(name)}`);
  return `tap-${name}`;
}

/**
 * Reads the events stream across conversations (all, one tenant's or one conversation's),
 * validating every message with the log's own decoding, and hands each to `visit` in stream
 * order. A named tap is a durable consumer acknowledged after each batch was visited: stopped
 * (the signal) and started again, it resumes right after the last message visited, with no gap
 * and no repeat; a tap killed mid-batch repeats at most that batch's visited messages. Needs only
 * read rights (the `tap` or a tenant's tap credential), never a stream info.
 */
export async function tapStream(
  nc: NatsConnection,
  options: StreamTapOptions,
  visit: (item: TapItem) => void,
): Promise<TapResult> {
  const stream = options.streamName ?? DEFAULT_STREAM_NAME;
  const prefix = options.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX;
  // a tenant's commits of both layouts (legacy `<prefix>.<tenant>.<conversation>`, current `….<kind>`);
  // one conversation's in the current layout (its legacy commits are in its tenant's tap)
  const filterSubject =
    options.conversation !== undefined
      ? `${prefix}.${options.tenant ?? '*'}.${options.conversation}.>`
      : options.tenant !== undefined
        ? `${prefix}.${options.tenant}.>`
        : `${prefix}.>`;
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const js = jetstream(nc);
  const durable = options.name === undefined ? undefined : tapConsumerName(options.name);
  let lastStreamSeq = 0;
  let resumed = false;

  const create = async (start: TapStart): Promise<string> => {
    const config: Partial<ConsumerConfig> = { filter_subject: filterSubject, ...deliverFrom(start) };
    if (durable) {
      await jsm.consumers.add(stream, {
        ...config,
        name: durable,
        durable_name: durable,
        ack_policy: AckPolicy.All,
        ack_wait: nanos(30_000),
        max_ack_pending: BATCH * 4,
      });
      return durable;
    }
    const name = `tap-${Math.random().toString(36).slice(2, 12)}`;
    await jsm.consumers.add(stream, {
      ...config,
      name,
      ack_policy: AckPolicy.None,
      inactive_threshold: nanos(60_000),
      mem_storage: true,
    });
    return name;
  };

  let consumerName: string;
  if (durable) {
    const existing = await consumerInfo(jsm, stream, durable);
    if (existing) {
      if (existing.config.filter_subject !== filterSubject) {
        throw new Error(
          `the named tap ${options.name} reads ${existing.config.filter_subject ?? 'everything'}, not ${filterSubject}: give the same filters, or another name`,
        );
      }
      resumed = true;
      if (existing.num_ack_pending > 0) {
        // its last run stopped holding messages it had not acknowledged: start again right after
        // the last acknowledged one (redeliveries would otherwise come after newer messages)
        await jsm.consumers.delete(stream, durable);
        await create({ from: 'position', streamSeq: existing.ack_floor.stream_seq + 1 });
      }
      consumerName = durable;
    } else consumerName = await create(options.start);
  } else consumerName = await create(options.start);

  const decode = (message: JsMsg): TapItem => {
    const ref = parseConversationSubject(prefix, message.subject);
    if (!ref)
      return {
        kind: 'invalid',
        streamSeq: message.seq,
        subject: message.subject,
        reason: 'the subject is not <prefix>.<tenant>.<conversation>.<kind>',
      };
    const decoded = decodeCommit({ subject: message.subject, seq: message.seq, data: message.data }, ref);
    return decoded.ok
      ? { kind: 'commit', commit: decoded.commit }
      : { kind: 'invalid', streamSeq: message.seq, subject: message.subject, reason: decoded.reason };
  };

  const signal = options.signal;
  while (!signal?.aborted) {
    let atEnd = false;
    try {
      const consumer = await js.consumers.get(stream, consumerName);
      if (!options.follow && (await consumer.info()).num_pending === 0) break;
      const messages = await consumer.fetch({ max_messages: BATCH, expires: options.follow ? 5_000 : 2_000 });
      const stop = (): void => void messages.stop();
      signal?.addEventListener('abort', stop, { once: true });
      let last: JsMsg | undefined;
      try {
        for await (const message of messages) {
          if (message.seq <= lastStreamSeq) continue; // a consumer made again after a restart
          visit(decode(message));
          last = message;
          lastStreamSeq = message.seq;
          if (!options.follow && message.info.pending === 0) {
            atEnd = true;
            break;
          }
          if (signal?.aborted) break;
        }
      } finally {
        signal?.removeEventListener('abort', stop);
      }
      // everything up to the last visited message, at once (ack policy all), confirmed by the server
      if (durable && last) await last.ackAck();
    } catch (error) {
      if (signal?.aborted) break;
      if (error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND && !durable) {
        // an ephemeral tap's consumer does not outlive a server restart: made again after the last message read
        consumerName = await create(
          lastStreamSeq > 0 ? { from: 'position', streamSeq: lastStreamSeq + 1 } : options.start,
        ).catch(() => consumerName);
      }
      if (isPermissionError(error)) throw error;
      options.onRetry?.(error);
      await new Promise((resolve) => setTimeout(resolve, 500));
      continue;
    }
    if (atEnd) break;
  }
  if (!durable) await jsm.consumers.delete(stream, consumerName).catch(() => undefined);
  return { lastStreamSeq, consumer: consumerName, resumed };
}

function deliverFrom(start: TapStart): Partial<ConsumerConfig> {
  switch (start.from) {
    case 'start':
      return { deliver_policy: DeliverPolicy.All };
    case 'new':
      return { deliver_policy: DeliverPolicy.New };
    case 'time':
      return { deliver_policy: DeliverPolicy.StartTime, opt_start_time: start.since.toISOString() };
    case 'position':
      return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start.streamSeq };
  }
}

async function consumerInfo(jsm: JetStreamManager, stream: string, name: string) {
  try {
    return await jsm.consumers.info(stream, name);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND) return undefined;
    throw error;
  }
}

function isPermissionError(error: unknown): boolean {
  return /permission/i.test(`${(error as Error).message} ${String((error as { cause?: unknown }).cause ?? '')}`);
}
