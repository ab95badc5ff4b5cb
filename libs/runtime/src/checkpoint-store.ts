import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { Buckets, openBucket } from '@flotilla/bus';
import { isSubjectToken } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';

export const DEFAULT_CHECKPOINT_BUCKET = Buckets.viewCheckpoints;

/**
 * The record format this build writes, its state's shape included; a record of another version
 * is not read (it is rebuilt). 2: the record is gzipped JSON (a view's JSON is repetitive: a
 * 4 MiB view is stored in about a tenth of that, so much longer views fit a KV value), and what a
 * conversation owes carries whether the agent's finish call came back. 3: the state carries the
 * agent spec in force. 4: the workspace context in force, the skills and rules shown, and whether
 * the context is owed. 5: the run state carries every response id used (a step replaces a repeated
 * one). 1 was plain JSON.
 */
export const CHECKPOINT_FORMAT_VERSION = 5;

/** The most a stored record may inflate to: a value that claims more is refused, not inflated. */
const MAX_INFLATED_BYTES = 256 * 1024 * 1024;
const GZIP_MAGIC = [0x1f, 0x8b] as const;
const JSON_OPEN_BRACE = 0x7b;
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Where a checkpoint stands in its conversation's log. A reader checks all of it against the log
 * before it uses the checkpoint, and reads the whole log instead when anything differs.
 */
export type CheckpointPosition = {
  /** The commit the checkpoint was taken after: its stream sequence, id and last event seq. */
  readonly streamSeq: number;
  readonly commit: string;
  readonly lastSeq: number;
  /** The conversation's first commit when the checkpoint was made: a log whose first commit moved is not the log it was taken from. */
  readonly origin: number;
  /** Where its reader starts reading the log: the commit holding the first event before the checkpoint that a step may still look back at, and that event's seq. */
  readonly readFrom: { readonly streamSeq: number; readonly seq: number };
};

/** A stored checkpoint: its position, its state (parsed by the store's `parse`) and its KV revision. */
export type StoredCheckpoint<S> = CheckpointPosition & { readonly state: S; readonly revision: number };

/** What a write left: the new revision, or why nothing was written. */
export type CheckpointPut =
  | { readonly ok: true; readonly revision: number }
  | { readonly ok: false; readonly reason: 'conflict' | 'too_large'; readonly bytes: number };

export type CheckpointParseResult<S> =
  { readonly ok: true; readonly checkpoint: S } | { readonly ok: false; readonly reason: string };

export type CheckpointStoreOptions<S> = {
  /** Checks a stored state and gives it its type; a state it refuses is treated as missing. */
  readonly parse: (state: unknown) => CheckpointParseResult<S>;
  readonly bucket?: string;
  /** 1 locally, 3 in a cluster. Only used when the bucket is created. */
  readonly replicas?: number;
  /** The largest record to store (default and at most: the server's max_payload, less room for the message's subject and headers). */
  readonly maxBytes?: number;
  /** Told of every stored value that is not a readable checkpoint (it is then ignored). */
  readonly onCorrupt?: (report: { readonly key: string; readonly reason: string }) => void;
};

const Position = z.strictObject({
  v: z.literal(CHECKPOINT_FORMAT_VERSION),
  tenant: z.string(),
  conversation: z.string(),
  stream_seq: z.number().int().positive(),
  commit: z.string().min(1),
  last_seq: z.number().int().positive(),
  origin: z.number().int().positive(),
  read_from: z.strictObject({ stream_seq: z.number().int().positive(), seq: z.number().int().positive() }),
  state: z.unknown(),
});

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * View checkpoints in a KV bucket, one key per conversation (`<tenant>.<conversation>`): derived
 * records of a conversation at a point of its log, which let a reader read the log from there
 * instead of from the start (docs/architecture.md, "View checkpoints"). Never a second truth:
 * readers check a checkpoint against the log, and without one read the whole log, deciding the
 * same.
 */
export class CheckpointStore<S> {
  private constructor(
    readonly kv: KV,
    readonly bucket: string,
    /** The largest record stored. */
    readonly maxBytes: number,
    private readonly options: CheckpointStoreOptions<S>,
  ) {}

  /** Creates the bucket (history 1) or opens the existing one; safe to call from every instance at once. */
  static async open<S>(nc: NatsConnection, options: CheckpointStoreOptions<S>): Promise<CheckpointStore<S>> {
    const bucket = options.bucket ?? DEFAULT_CHECKPOINT_BUCKET;
    const kv = await openBucket(nc, bucket, {
      history: 1,
      replicas: options.replicas ?? 1,
      description: 'Flotilla view checkpoints (derived from the log)',
    });
    const serverLimit = (nc.info?.max_payload ?? 1024 * 1024) - 1024;
    return new CheckpointStore(kv, bucket, Math.min(serverLimit, options.maxBytes ?? serverLimit), options);
  }

  /** The conversation's checkpoint, or undefined when none is stored or it cannot be read. */
  async get(ref: ConversationRef): Promise<StoredCheckpoint<S> | undefined> {
    const key = checkpointKey(ref);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return undefined;
    const stored = entry.value;
    // a plain-JSON record is one of format 1, written before: ignored, as a record of another version is, and rewritten
    if (stored[0] === JSON_OPEN_BRACE) return undefined;
    if (stored[0] !== GZIP_MAGIC[0] || stored[1] !== GZIP_MAGIC[1]) return this.#corrupt(key, 'not a gzipped record');
    let value: unknown;
    try {
      value = JSON.parse(decoder.decode(await gunzipAsync(stored, { maxOutputLength: MAX_INFLATED_BYTES })));
    } catch (error) {
      return this.#corrupt(key, `not gzipped JSON (${(error as Error).message})`);
    }
    const position = Position.safeParse(value);
    if (!position.success) return this.#corrupt(key, position.error.issues[0]?.message ?? 'not a checkpoint');
    const record = position.data;
    if (record.tenant !== ref.tenant || record.conversation !== ref.conversation)
      return this.#corrupt(key, `a checkpoint of ${record.tenant}/${record.conversation}`);
    const state = this.options.parse(record.state);
    if (!state.ok) return this.#corrupt(key, state.reason);
    return {
      streamSeq: record.stream_seq,
      commit: record.commit,
      lastSeq: record.last_seq,
      origin: record.origin,
      readFrom: { streamSeq: record.read_from.stream_seq, seq: record.read_from.seq },
      state: state.checkpoint,
      revision: entry.revision,
    };
  }

  /**
   * Stores a checkpoint with compare-and-set on `revision` (0: none stored). Nothing is written
   * when another writer stored one meanwhile (`conflict`), or when the record is larger than the
   * server takes (`too_large`: readers then read the log).
   */
  async put(ref: ConversationRef, position: CheckpointPosition, state: S, revision: number): Promise<CheckpointPut> {
    const key = checkpointKey(ref);
    const record = {
      v: CHECKPOINT_FORMAT_VERSION,
      tenant: ref.tenant,
      conversation: ref.conversation,
      stream_seq: position.streamSeq,
      commit: position.commit,
      last_seq: position.lastSeq,
      origin: position.origin,
      read_from: { stream_seq: position.readFrom.streamSeq, seq: position.readFrom.seq },
      state,
    };
    const bytes = await gzipAsync(encoder.encode(JSON.stringify(record)));
    if (bytes.length > this.maxBytes) return { ok: false, reason: 'too_large', bytes: bytes.length };
    try {
      return {
        ok: true,
        revision: revision === 0 ? await this.kv.create(key, bytes) : await this.kv.update(key, bytes, revision),
      };
    } catch (error) {
      if (isRevisionConflict(error)) return { ok: false, reason: 'conflict', bytes: bytes.length };
      throw error;
    }
  }

  /** Removes the conversation's checkpoint (a deleted conversation keeps nothing here). */
  async delete(ref: ConversationRef): Promise<void> {
    await this.kv.purge(checkpointKey(ref));
  }

  #corrupt(key: string, reason: string): undefined {
    this.options.onCorrupt?.({ key, reason });
    return undefined;
  }
}

/** The KV key of a conversation's checkpoint: `<tenant>.<conversation>`. */
export function checkpointKey(ref: ConversationRef): string {
  if (!isSubjectToken(ref.tenant) || !isSubjectToken(ref.conversation))
    throw new Error(`not a conversation reference: ${ref.tenant}/${ref.conversation}`);
  return `${ref.tenant}.${ref.conversation}`;
}

function isRevisionConflict(error: unknown): boolean {
  if (error instanceof JetStreamApiError) {
    return (
      error.code === JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown
    );
  }
  return error instanceof Error && /wrong last sequence/i.test(error.message);
}
