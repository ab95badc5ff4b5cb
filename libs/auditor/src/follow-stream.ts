import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type ConsumerConfig,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';

export type FollowStreamOptions = {
  readonly streamName: string;
  readonly subjectPrefix: string;
  /** One tenant's conversations (what a tenant's tap credential may read); default every tenant's. */
  readonly tenant?: string;
  readonly signal: AbortSignal;
  /** Told each time reading failed and is tried again (NATS away, a server restart, a leader election). */
  readonly onRetry?: (error: unknown) => void;
};

/** A message as the follower sees it, with how far behind the stream's end it was read. */
export type FollowedMessage = {
  readonly message: JsMsg;
  /** Messages of the filter stored after this one when it was delivered. */
  readonly pending: number;
};

const BATCH = 512;
const RETRY_MS = 500;
const CONSUMER_NOT_FOUND = 10014;

/**
 * Reads the events stream from its first message on and keeps following it, handing each message
 * to `visit` once, in stream order, until the signal aborts. Its consumer is an ephemeral one of
 * its own (a `tap` credential creates it; a tenant's tap only with the tenant's filter, which is
 * why this asks for no stream info); when the consumer is lost (a nats-server restart forgets
 * memory consumers) it is made again right after the last message visited, so a restart neither
 * skips nor repeats a message.
 */
export async function followStream(
  nc: NatsConnection,
  options: FollowStreamOptions,
  visit: (followed: FollowedMessage) => void,
): Promise<void> {
  const { streamName: stream, signal } = options;
  const filter_subject =
    options.tenant === undefined ? `${options.subjectPrefix}.>` : `${options.subjectPrefix}.${options.tenant}.>`;
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const js = jetstream(nc);
  let last = 0;
  let consumer: string | undefined;
  const create = async (): Promise<string> => {
    const name = `audit-${Math.random().toString(36).slice(2, 12)}`;
    const from: Partial<ConsumerConfig> =
      last === 0
        ? { deliver_policy: DeliverPolicy.All }
        : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: last + 1 };
    await jsm.consumers.add(stream, {
      name,
      filter_subject,
      ...from,
      ack_policy: AckPolicy.None,
      inactive_threshold: nanos(60_000),
      mem_storage: true,
      num_replicas: 1,
    });
    return name;
  };
  try {
    while (!signal.aborted) {
      try {
        consumer ??= await create();
        const messages = await (
          await js.consumers.get(stream, consumer)
        ).fetch({ max_messages: BATCH, expires: 5_000 });
        const stop = (): void => void messages.stop();
        signal.addEventListener('abort', stop, { once: true });
        try {
          for await (const message of messages) {
            if (message.seq <= last) continue;
            last = message.seq;
            visit({ message, pending: message.info.pending });
            if (signal.aborted) break;
          }
        } finally {
          signal.removeEventListener('abort', stop);
        }
      } catch (error) {
        if (signal.aborted) break;
        if (isPermissionError(error)) throw error;
        // lost with a restart, or never made: made again after the last message visited
        if (error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND) consumer = undefined;
        else if (consumer !== undefined && !(await exists(jsm, stream, consumer))) consumer = undefined;
        options.onRetry?.(error);
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  } finally {
    if (consumer !== undefined) await jsm.consumers.delete(stream, consumer).catch(() => undefined);
  }
}

async function exists(
  jsm: Awaited<ReturnType<typeof jetstreamManager>>,
  stream: string,
  name: string,
): Promise<boolean> {
  try {
    await jsm.consumers.info(stream, name);
    return true;
  } catch (error) {
    // unknown (NATS still away): keep the name, the next round finds out
    return !(error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND);
  }
}

function isPermissionError(error: unknown): boolean {
  return /permissions? violation/i.test(
    `${(error as Error).message} ${String((error as { cause?: unknown }).cause ?? '')}`,
  );
}
