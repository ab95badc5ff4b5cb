import { createInbox, type Msg, type NatsConnection } from '@nats-io/transport-node';
import type { RawMessage } from './codec.js';
import { LogError, LogErrorCode } from './errors.js';

/** The most messages one batch request asks for (the next request starts after the last one). */
export const DIRECT_BATCH_SIZE = 1_024;

/** One batch's answer: its messages in order, and whether the answering server holds more for the subject. */
export type DirectBatch = { readonly messages: RawMessage[]; readonly more: boolean };

export type DirectBatchRequest = {
  readonly stream: string;
  readonly subject: string;
  /** The first stream sequence to look at. */
  readonly from: number;
  /** The most messages to take (at most DIRECT_BATCH_SIZE). */
  readonly batch: number;
  /** Without a message for this long, the request fails (a transient error). Default 5 s. */
  readonly idleTimeoutMs?: number;
  /** The JetStream API prefix. Default `$JS.API`. */
  readonly apiPrefix?: string;
};

/**
 * One direct-get batch (nats-server 2.11+, ADR-31): the subject's messages from `from`, answered
 * by the stream's server (any replica of a replicated stream, so possibly one that is behind) as
 * a run of messages ending with an EOB status. No consumer is created: a read of any length, by
 * any number of readers, costs the stream nothing but the answers.
 *
 * nats.js' `jsm.direct.getBatch` does the same, but its iterator form never unsubscribes its inbox
 * (one leaked subscription per batch) and it wraps every message; this keeps one inbox for the
 * request, closed when the batch ends, fails, or times out.
 */
export function directBatch(nc: NatsConnection, request: DirectBatchRequest): Promise<DirectBatch> {
  const batch = Math.max(1, Math.min(DIRECT_BATCH_SIZE, Math.floor(request.batch)));
  const idleMs = request.idleTimeoutMs ?? 5_000;
  const messages: RawMessage[] = [];
  return new Promise<DirectBatch>((resolve, reject) => {
    // one timer for the whole batch (not one per message): it fails the request when a whole
    // period passes without a message
    let received = 0;
    let checked = 0;
    const timer = setInterval(() => {
      if (received === checked) fail(`no answer for ${idleMs} ms`);
      checked = received;
    }, idleMs);
    const fail = (reason: string, cause?: unknown): void => {
      finish();
      reject(
        new LogError(
          LogErrorCode.Transient,
          `direct batch get on ${request.stream} (${request.subject} from #${request.from}) failed: ${reason}`,
          { cause },
        ),
      );
    };
    const finish = (): void => {
      clearInterval(timer);
      subscription.unsubscribe();
    };
    const onMessage = (error: Error | null, message: Msg): void => {
      if (error) return fail(error.message, error);
      const headers = message.headers;
      const code = headers?.code ?? 0;
      if (code === 204 || code === 404) {
        // 204 EOB ends a batch that found messages (Nats-Num-Pending: what the server holds after them); 404: none at all
        finish();
        const pending = Number(headers?.get('Nats-Num-Pending') || '0');
        return resolve({ messages, more: code === 204 && pending > 0 });
      }
      if (code !== 0 || !headers)
        return fail(code !== 0 ? `${code} ${headers?.description ?? ''}`.trim() : 'an answer without headers');
      const seq = Number(headers.get('Nats-Sequence'));
      messages.push({ subject: headers.get('Nats-Subject'), seq, data: message.data, headers });
      received += 1;
    };
    // the connection's inbox prefix: a user's permissions may allow answers only under it
    const inbox = createInbox((nc as NatsConnection & { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
    const subscription = nc.subscribe(inbox, { callback: onMessage });
    const body = JSON.stringify({ seq: Math.max(1, request.from), next_by_subj: request.subject, batch });
    try {
      nc.publish(`${request.apiPrefix ?? '$JS.API'}.DIRECT.GET.${request.stream}`, body, { reply: inbox });
    } catch (error) {
      fail((error as Error).message, error);
    }
  });
}

export type SubjectRange = {
  readonly stream: string;
  readonly subject: string;
  /** The first stream sequence to read. */
  readonly from: number;
  /** The last stream sequence to read (the subject's last message as the reader saw it). */
  readonly until: number;
  /** About how many messages the range holds: the first batch asks for that many. */
  readonly expected?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  /**
   * The subject's next message at or after `seq`, as the stream's LEADER answers it (a message
   * get). Given, it reads what a batch left out before `until`: a direct get of a replicated
   * stream may be answered by a replica that is behind. Omit it for a single-server stream.
   */
  readonly leaderGet?: ((seq: number) => Promise<RawMessage | null>) | undefined;
};

/**
 * The subject's messages in `[from, until]`, in order, paging through direct-get batches: no
 * consumer is created, however long the range and however many readers.
 *
 * A replica that is behind (one catching up after a restart) answers with what it has, which is
 * right (replicas apply the same log in order) but may stop short of `until`; with `leaderGet`
 * the rest then comes from the leader, so the range is always whole.
 */
export async function* readSubjectRange(nc: NatsConnection, range: SubjectRange): AsyncGenerator<RawMessage> {
  for await (const messages of readSubjectBatches(nc, range)) yield* messages;
}

/**
 * What `readSubjectRange` reads, a batch at a time (an array of messages in order): a reader that
 * handles messages synchronously pays one promise turn per batch instead of one per message.
 */
export async function* readSubjectBatches(nc: NatsConnection, range: SubjectRange): AsyncGenerator<RawMessage[]> {
  const { until, signal } = range;
  let cursor = Math.max(1, range.from);
  // never more than the range can hold: a batch does not stop at `until` by itself
  const ask = (from: number, wanted: number): { size: number; answer: Promise<DirectBatch> } => {
    const size = Math.min(DIRECT_BATCH_SIZE, wanted, until - from + 1);
    const answer = batchWithRetry(nc, { stream: range.stream, subject: range.subject, from, batch: size });
    answer.catch(() => undefined); // awaited below, or dropped when the reader stops early
    return { size, answer };
  };
  let next =
    cursor <= until
      ? ask(cursor, range.expected !== undefined && range.expected > 0 ? range.expected : DIRECT_BATCH_SIZE)
      : undefined;
  // whether the answers showed there is nothing more up to `until` (a message past it came)
  let passed = false;
  while (next && !signal?.aborted) {
    const { messages, more } = await next.answer;
    next = undefined;
    let within = messages.length;
    while (within > 0 && messages[within - 1]!.seq > until) within -= 1;
    if (within > 0) cursor = messages[within - 1]!.seq + 1;
    passed = within < messages.length;
    // the next batch is asked for before this one is handed over: the server sends it meanwhile
    if (more && !passed && cursor <= until) next = ask(cursor, DIRECT_BATCH_SIZE);
    if (within > 0) yield within === messages.length ? messages : messages.slice(0, within);
  }
  if (!range.leaderGet || passed) return;
  while (cursor <= until && !signal?.aborted) {
    const message = await range.leaderGet(cursor);
    if (!message || message.seq > until) return;
    yield [message];
    cursor = message.seq + 1;
  }
}

/** Tries left after a batch request went unanswered: a busy server may drop a direct get; reading again is harmless. */
const BATCH_TRIES = 3;

async function batchWithRetry(nc: NatsConnection, request: DirectBatchRequest): Promise<DirectBatch> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await directBatch(nc, request);
    } catch (error) {
      if (attempt >= BATCH_TRIES || nc.isClosed()) throw error;
    }
  }
}
