import { decodeCommit } from '@flotilla/log';
import type { CommitHandler, HandleOutcome } from '@flotilla/runtime';
import type { CommitWriter } from './commit-writer.js';
import { isConnectionError } from './connection-errors.js';

/** How long a commit waits before it is tried again when the database is away, or an earlier commit of its conversation is not written yet. */
export const RETRY_DELAYS = { databaseUnavailableMs: 1_000, outOfOrderMs: 250 } as const;

/**
 * What the sink does with a delivered commit: validate it (libs/log's decoding: a foreign or
 * corrupt message is recorded in invalid_messages and reported, never written as events), write
 * it in one transaction, and ack only after that transaction committed.
 */
export function createSinkHandler(writer: CommitWriter): CommitHandler {
  return async (delivery): Promise<HandleOutcome> => {
    try {
      if (!delivery.ref) {
        delivery.logger.warn(
          { streamSeq: delivery.streamSeq },
          'a message outside the conversation subjects: recorded as invalid, not written',
        );
        await writer.recordInvalid(
          delivery.streamSeq,
          delivery.subject,
          'the subject is not <prefix>.<tenant>.<conversation>',
        );
        return { ack: true, outcome: 'invalid' };
      }
      const decoded = decodeCommit(delivery.message, delivery.ref);
      if (!decoded.ok) {
        delivery.logger.warn(
          { streamSeq: delivery.streamSeq, reason: decoded.reason },
          'an invalid message in the log: recorded as invalid, not written',
        );
        await writer.recordInvalid(delivery.streamSeq, delivery.subject, decoded.reason);
        return { ack: true, outcome: 'invalid' };
      }
      const outcome = await writer.write(decoded.commit);
      if (outcome.kind === 'out_of_order')
        return { ack: false, outcome: 'out_of_order', delayMs: RETRY_DELAYS.outOfOrderMs };
      return { ack: true, outcome: outcome.kind };
    } catch (error) {
      if (!isConnectionError(error as Error)) throw error;
      delivery.logger.warn({ err: error }, 'PostgreSQL is not available: the commit will be written when it is back');
      return { ack: false, outcome: 'database_unavailable', delayMs: RETRY_DELAYS.databaseUnavailableMs };
    }
  };
}
