import type { JetStreamManager } from '@nats-io/jetstream';
import type { RawMessage } from './codec.js';
import { LogError, LogErrorCode } from './errors.js';

/** One message get: a subject's last message, or its next message at or after a stream sequence. */
export type GetQuery = { last_by_subj: string } | { seq: number; next_by_subj: string };

/**
 * Single-message gets on the events stream, where the log looks up a tail, a commit's position
 * or the next message of a conversation (bounded and live reads page through direct-get batches
 * instead: see direct-batch and live-follow).
 */
export class StreamGets {
  constructor(
    readonly jsm: JetStreamManager,
    readonly streamName: string,
    /**
     * Reads that decide go to the stream's leader (message gets), not to any replica (direct gets):
     * a replica can be behind (one catching up after a restart answers with an old tail), and a
     * decision made on a stale tail could miss that an action started. Set for a replicated stream.
     */
    readonly fromLeader: boolean,
  ) {}

  async get(query: GetQuery): Promise<RawMessage | null> {
    try {
      const message = this.fromLeader
        ? await this.jsm.streams.getMessage(this.streamName, query)
        : await this.jsm.direct.getMessage(this.streamName, query);
      return message && { subject: message.subject, seq: message.seq, data: message.data, headers: message.header };
    } catch (error) {
      throw new LogError(
        LogErrorCode.Transient,
        `${this.fromLeader ? 'message' : 'direct'} get on ${this.streamName} failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /**
   * For a batch read or a follow of `subject` on a replicated stream: the subject's next message
   * at or after a stream sequence, from the leader, which answers what a replica that is behind
   * left out of its batch (undefined on a single server's stream).
   */
  leaderGet(subject: string): ((seq: number) => Promise<RawMessage | null>) | undefined {
    return this.fromLeader
      ? (seq: number): Promise<RawMessage | null> => this.get({ seq, next_by_subj: subject })
      : undefined;
  }
}
