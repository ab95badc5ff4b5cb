import type { ConversationRef, StoredCommit } from '@flotilla/log';
import { applyCommit, CommitOrderError, initialSnapshot, type ConversationSnapshot } from '@flotilla/state';
import type { Pool, PoolClient } from 'pg';
import { insertCommits } from './commit-rows.js';
import { isConnectionError } from './connection-errors.js';
import { conversationValues, upsertConversations } from './conversation-rows.js';
import { deletedUpToOf, writeDeletion, type Deletion } from './deletion-queries.js';
import { pgText } from './pg-text.js';
import { writeToolCalls } from './tool-call-rows.js';

export type { Deletion } from './deletion-queries.js';

/** What writing one commit did. */
export type WriteOutcome =
  /** Its events and derived rows are in the database, with its stream position. */
  | { readonly kind: 'written' }
  /** Its stream position was already recorded: nothing was changed. */
  | { readonly kind: 'duplicate' }
  /** Its conversation was deleted (a notice covers it) and its rows dropped: not written. */
  | { readonly kind: 'deleted' }
  /** An earlier commit of its conversation is not written yet: try again later (it comes first). */
  | { readonly kind: 'out_of_order'; readonly expectedSeq: number };

export type CommitWriterOptions = {
  /**
   * The stream sequence of the conversation's first commit the stream still holds: a commit that
   * does not continue the conversation's row is written only when it is that one (the log was
   * cut by retention, or deleted and created again).
   */
  readonly firstCommitSeq: (ref: ConversationRef) => Promise<number | undefined>;
  /** Told when a conversation's row starts again from a commit that does not continue it. */
  readonly onRestart?: (ref: ConversationRef, commit: StoredCommit, reason: string) => void;
  /**
   * Transactions written at once (default 2), each on a connection of its own. Each is a lane:
   * a conversation's commits always take the same lane, in the order they were given.
   */
  readonly transactions?: number;
  /** The most commits one transaction writes (default 64). */
  readonly maxBatch?: number;
  /** A deleted conversation's rows are dropped, and a commit of it that comes late is not written (default: kept). */
  readonly dropDeleted?: boolean;
};

type Queued = {
  readonly commit: StoredCommit;
  readonly resolve: (outcome: WriteOutcome) => void;
  readonly reject: (error: unknown) => void;
};
type Lane = { readonly queue: Queued[]; running: boolean };
type ConversationState = { snapshot: ConversationSnapshot; model: string | null; changed: boolean };

/**
 * Writes commits into the sink's tables: their stream positions, their events, each
 * conversation's row (folded with libs/state's applyCommit from the snapshot the row keeps), its
 * model calls and the tool calls a commit opens or answers. Commits given while a transaction is
 * under way are written together in the next one (group commit: a backlog drains in few round
 * trips, a lone commit is written at once); `write` resolves only after the transaction that
 * holds the commit committed, so the caller acknowledges it after that. Idempotent: a commit
 * whose stream position is recorded changes nothing; an event id seen before is not inserted
 * twice. Commits of one conversation are written in order (one lane per conversation, a
 * per-conversation lock across instances, taken in one order so two instances never deadlock,
 * and the fold's own order check).
 */
export class CommitWriter {
  readonly #lanes: Lane[];
  readonly #maxBatch: number;

  constructor(
    readonly pool: Pool,
    readonly options: CommitWriterOptions,
  ) {
    this.#lanes = Array.from({ length: options.transactions ?? 2 }, () => ({ queue: [], running: false }));
    this.#maxBatch = options.maxBatch ?? 64;
  }

  write(commit: StoredCommit): Promise<WriteOutcome> {
    const lane = this.#lanes[laneOf(`${commit.tenant}/${commit.conversation}`, this.#lanes.length)]!;
    return new Promise((resolve, reject) => {
      lane.queue.push({ commit, resolve, reject });
      void this.#drain(lane);
    });
  }

  /**
   * Records a conversation's deletion and, with `dropDeleted`, removes its rows up to the notice's
   * stream sequence (its conversation row only when that row is of the deleted log, not of one
   * created again since), under the conversation's lock, so a commit being written meanwhile is
   * either removed with the rest or, coming after, finds the deletion and is not written.
   */
  async recordDeletion(deletion: Deletion): Promise<void> {
    await this.#inTransaction(async (client) => {
      await lockConversations(client, [`${deletion.tenant}/${deletion.conversation}`]);
      await writeDeletion(client, deletion, this.options.dropDeleted === true);
      return { result: undefined, commit: true };
    });
  }

  /** Records a message of the stream that is not a valid commit (reported, never an event). */
  async recordInvalid(streamSeq: number, subject: string, reason: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO invalid_messages (stream_seq, subject, reason) VALUES ($1, $2, $3) ON CONFLICT (stream_seq) DO NOTHING',
      [streamSeq, pgText(subject), pgText(reason)],
    );
  }

  async #drain(lane: Lane): Promise<void> {
    if (lane.running) return;
    lane.running = true;
    try {
      while (lane.queue.length > 0) await this.#writeBatch(lane.queue.splice(0, this.#maxBatch));
    } finally {
      lane.running = false;
    }
  }

  async #writeBatch(batch: readonly Queued[]): Promise<void> {
    try {
      const outcomes = await this.#transaction(batch.map((queued) => queued.commit));
      batch.forEach((queued, index) => queued.resolve(outcomes[index]!));
    } catch (error) {
      if (batch.length === 1 || isConnectionError(error as Error)) {
        for (const queued of batch) queued.reject(error);
        return;
      }
      // a commit the database refuses fails alone, not the others written with it
      for (const queued of batch) {
        await this.#transaction([queued.commit]).then((outcomes) => queued.resolve(outcomes[0]!), queued.reject);
      }
    }
  }

  /** One transaction writing `commits` (in their order); what it did with each. */
  #transaction(commits: readonly StoredCommit[]): Promise<WriteOutcome[]> {
    return this.#inTransaction(async (client) => {
      const outcomes = await this.#write(client, commits);
      return { result: outcomes, commit: outcomes.some((outcome) => outcome.kind === 'written') };
    });
  }

  /** `work` in a transaction of its own connection, committed when it says so (rolled back otherwise, or when it throws). */
  async #inTransaction<T>(work: (client: PoolClient) => Promise<{ result: T; commit: boolean }>): Promise<T> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    // the server going away between two queries: the next query fails, and this connection is dropped
    const onError = (error: Error): void => void (failure ??= error);
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const { result, commit } = await work(client);
      await client.query(commit ? 'COMMIT' : 'ROLLBACK');
      return result;
    } catch (error) {
      failure = error as Error;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', onError);
      // a connection that failed mid-transaction is not given to the next commit
      client.release(failure !== undefined && isConnectionError(failure) ? failure : undefined);
    }
  }

  async #write(client: PoolClient, commits: readonly StoredCommit[]): Promise<WriteOutcome[]> {
    const keys = [...new Set(commits.map((commit) => `${commit.tenant}/${commit.conversation}`))];
    await lockConversations(client, keys);
    const recorded = await client.query<{ stream_seq: string | number }>(
      'SELECT stream_seq FROM commits WHERE stream_seq = ANY($1::bigint[])',
      [commits.map((commit) => commit.streamSeq)],
    );
    const seen = new Set(recorded.rows.map((row) => Number(row.stream_seq)));
    const refs = keys.map((key) => commits.find((commit) => `${commit.tenant}/${commit.conversation}` === key)!);
    const { rows } = await client.query<{
      tenant: string;
      conversation: string;
      snapshot: ConversationSnapshot;
      model: string | null;
    }>(
      'SELECT c.tenant, c.conversation, c.snapshot, c.model FROM conversations c JOIN unnest($1::text[], $2::text[]) AS r(tenant, conversation) USING (tenant, conversation)',
      [refs.map((commit) => commit.tenant), refs.map((commit) => commit.conversation)],
    );
    const states = new Map<string, ConversationState>(
      rows.map((row) => [
        `${row.tenant}/${row.conversation}`,
        { snapshot: row.snapshot, model: row.model, changed: false },
      ]),
    );
    const deletedUpTo = this.options.dropDeleted
      ? await deletedUpToOf(
          client,
          refs.filter((ref) => !states.has(`${ref.tenant}/${ref.conversation}`)),
        )
      : new Map<string, number>();

    const outcomes: WriteOutcome[] = [];
    const written: StoredCommit[] = [];
    for (const commit of commits) {
      if (seen.has(commit.streamSeq)) {
        outcomes.push({ kind: 'duplicate' });
        continue;
      }
      const key = `${commit.tenant}/${commit.conversation}`;
      if (commit.streamSeq <= (deletedUpTo.get(key) ?? 0)) {
        outcomes.push({ kind: 'deleted' });
        continue;
      }
      const state = states.get(key) ?? {
        snapshot: initialSnapshot({ tenant: commit.tenant, conversation: commit.conversation }),
        model: null,
        changed: false,
      };
      const snapshot = await this.#fold(state.snapshot, commit);
      if ('expectedSeq' in snapshot) {
        outcomes.push({ kind: 'out_of_order', expectedSeq: snapshot.expectedSeq });
        continue;
      }
      const lastUsage = commit.events.findLast((event) => event.type === 'llm_usage');
      states.set(key, {
        snapshot,
        model: lastUsage?.model ?? state.model ?? snapshot.agent_spec?.model ?? null,
        changed: true,
      });
      seen.add(commit.streamSeq);
      written.push(commit);
      outcomes.push({ kind: 'written' });
    }
    if (written.length === 0) return outcomes;

    await insertCommits(client, written);
    await writeToolCalls(client, written);
    const changed = [...states.values()].filter((state) => state.changed);
    await client.query(
      upsertConversations(changed.length),
      changed.flatMap((state) => conversationValues(state.snapshot, state.model)),
    );
    return outcomes;
  }

  /** The conversation's snapshot with the commit folded in, or the seq it waits for. */
  async #fold(
    start: ConversationSnapshot,
    commit: StoredCommit,
  ): Promise<ConversationSnapshot | { expectedSeq: number }> {
    try {
      return applyCommit(start, commit);
    } catch (error) {
      if (!(error instanceof CommitOrderError)) throw error;
      const ref = { tenant: commit.tenant, conversation: commit.conversation };
      // an earlier commit still on its way, unless the stream holds nothing earlier of this conversation
      if ((await this.options.firstCommitSeq(ref)) !== commit.streamSeq) return { expectedSeq: error.expectedFirstSeq };
      const restarted = commit.firstSeq <= start.last_seq;
      this.options.onRestart?.(
        ref,
        commit,
        restarted
          ? 'the log starts again (deleted and created again)'
          : `events ${start.last_seq + 1}..${commit.firstSeq - 1} are no longer in the stream (retention)`,
      );
      const base = restarted ? initialSnapshot(ref) : start;
      return applyCommit({ ...base, last_seq: commit.firstSeq - 1 }, commit);
    }
  }
}

/**
 * Each conversation's lock (`tenant/conversation`) for the transaction, taken at once in the order
 * of the locks' keys: two sinks never wait on each other in a cycle.
 */
async function lockConversations(client: PoolClient, keys: readonly string[]): Promise<void> {
  await client.query(
    'SELECT pg_advisory_xact_lock(l.key) FROM (SELECT DISTINCT hashtextextended(k, 0) AS key FROM unnest($1::text[]) AS k) AS l ORDER BY l.key',
    [keys],
  );
}

/** The lane of a conversation: a stable hash of its key (FNV-1a). */
function laneOf(key: string, lanes: number): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index += 1) hash = Math.imul(hash ^ key.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % lanes;
}
