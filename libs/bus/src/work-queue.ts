import {
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { z } from 'zod';
import { isLostCreationRace } from './availability.js';

const STREAM_NOT_FOUND = 10059;

export type WorkQueueSpec = {
  readonly stream: string;
  readonly description: string;
  /** One subject per item's owner, e.g. `<prefix>.*.*`. */
  readonly subjects: readonly string[];
  readonly replicas: number;
  /** A message published again within this window with the same message id is stored once. */
  readonly duplicateWindowMs: number;
  /** How long an item is kept when nobody takes it (default: until it is taken). */
  readonly maxAgeMs?: number;
};

/**
 * A stream created when missing; an existing one is left as it is (changing it takes the admin
 * credential). Several instances creating it at once: the one that loses the race finds it made,
 * or, when another stream holds its subjects, fails with the server's refusal.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  const exists = await jsm.streams.info(config.name).then(
    () => true,
    (error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return false;
      throw error;
    },
  );
  if (exists) return;
  await jsm.streams.add(config).catch(async (error: unknown) => {
    if (!isLostCreationRace(error)) throw error;
    await jsm.streams.info(config.name).catch(() => Promise.reject(error));
  });
}

/** A work-queue stream (a message leaves it when it is acknowledged), file storage, created when missing (ensureStream). */
export async function ensureWorkQueue(jsm: JetStreamManager, spec: WorkQueueSpec): Promise<void> {
  await ensureStream(jsm, {
    name: spec.stream,
    description: spec.description,
    subjects: [...spec.subjects],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: spec.replicas,
    duplicate_window: nanos(spec.duplicateWindowMs),
    ...(spec.maxAgeMs === undefined ? {} : { max_age: nanos(spec.maxAgeMs) }),
  });
}

/** A queue message's JSON body read with its schema: the value, or why it is not one (its first three issues). */
export function parseQueueMessage<T>(
  schema: z.ZodType<T>,
  data: Uint8Array,
): { ok: true; value: T } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    reason: parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .slice(0, 3)
      .join('; '),
  };
}
