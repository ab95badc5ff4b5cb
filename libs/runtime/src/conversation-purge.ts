import { PURGE_SUBJECT, requestAnswer } from '@flotilla/bus';
import { assertConversationRef, type ConversationRef, type EventLog } from '@flotilla/log';
import { headers, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import { RunnerHeader } from './runner-registry.js';

const PURGE_QUEUE = 'flotilla-purge';

/**
 * Answers requests to remove one conversation's log (the gateway's delete): the purge of exactly
 * that conversation's subjects, and nothing else whatever the request says. The service that runs
 * this is the only one whose credential may purge (see docs/operations.md, "Permissions").
 */
export type PurgeOptions = {
  /**
   * Removes what else this service keeps of the conversation (its view checkpoint), after the log:
   * a deleted conversation keeps nothing. A failure fails the request, which the gateway retries.
   */
  readonly alsoRemove?: (ref: ConversationRef) => Promise<void>;
};

export function servePurges(
  nc: NatsConnection,
  log: EventLog,
  logger: Logger,
  options: PurgeOptions = {},
): Subscription {
  return nc.subscribe(PURGE_SUBJECT, {
    queue: PURGE_QUEUE,
    callback: (error, message) => {
      if (error) return;
      const ref = {
        tenant: message.headers?.get(RunnerHeader.Tenant) ?? '',
        conversation: message.headers?.get(RunnerHeader.Conversation) ?? '',
      };
      try {
        assertConversationRef(ref);
      } catch (invalid) {
        message.respond(JSON.stringify({ ok: false, error: (invalid as Error).message }));
        return;
      }
      const purge = async (): Promise<PurgeAnswer & { ok: true }> => {
        const purged = await log.purge(ref);
        // read after the purge: every commit of the conversation purged is at or below it
        const upTo = (await log.jsm.streams.info(log.streamName)).state.last_seq;
        await options.alsoRemove?.(ref);
        return { ok: true, purged, up_to_stream_seq: upTo };
      };
      purge().then(
        (result) => {
          logger.info({ ...ref, purged: result.purged }, 'conversation log removed');
          message.respond(JSON.stringify(result));
        },
        (failure: unknown) => message.respond(JSON.stringify({ ok: false, error: (failure as Error).message })),
      );
    },
  });
}

/** What the purging service answers: the commits removed, and the events stream's last sequence after the purge. */
const PurgeAnswer = z.union([
  z.object({
    ok: z.literal(true),
    purged: z.number().int().nonnegative(),
    up_to_stream_seq: z.number().int().nonnegative(),
  }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
type PurgeAnswer = z.infer<typeof PurgeAnswer>;

/**
 * Asks the purging service to remove a conversation's log; throws when none answers or it failed.
 * Returns the events stream's last sequence after the purge (every purged commit is at or below it).
 */
export async function requestPurge(
  nc: NatsConnection,
  ref: ConversationRef,
  timeoutMs = 10_000,
): Promise<{ readonly upToStreamSeq: number }> {
  const request = headers();
  request.set(RunnerHeader.Tenant, ref.tenant);
  request.set(RunnerHeader.Conversation, ref.conversation);
  const reply = await requestAnswer(nc, PURGE_SUBJECT, undefined, { headers: request, timeout: timeoutMs });
  const answer = PurgeAnswer.safeParse(reply.json<unknown>());
  if (!answer.success)
    throw new Error(
      `removing the conversation's log: the purging service's answer is not one (${answer.error.issues[0]?.message ?? 'invalid'})`,
    );
  if (!answer.data.ok) throw new Error(`removing the conversation's log failed: ${answer.data.error}`);
  return { upToStreamSeq: answer.data.up_to_stream_seq };
}
