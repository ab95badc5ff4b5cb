import { jetstreamManager, JetStreamApiError, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  commitSubjects,
  commitSubjectTransform,
  describeDrift,
  isLostCreationRace,
  legacyCommitSubjects,
  streamDrift,
} from '@flotilla/bus';
import { LogError, LogErrorCode } from './errors.js';

export type EventStreamOptions = {
  /** Stream name; default FLOTILLA_EVENTS. */
  readonly streamName?: string;
  /** Subject prefix; conversations' commits live on `<prefix>.<tenant>.<conversation>.<kind>`. Default flotilla.ev. */
  readonly subjectPrefix?: string;
  /** 1 locally, 3 in a cluster. */
  readonly replicas?: number;
  /** Window in which a repeated Nats-Msg-Id is dropped as a duplicate. Default 2 minutes. */
  readonly duplicateWindowMs?: number;
  /** Largest commit in bytes; default: the server's max_payload. */
  readonly maxMessageBytes?: number;
  /** Drop commits older than this (limits retention); default: keep forever. */
  readonly maxAgeMs?: number;
  /** Keep at most this many bytes, dropping the oldest commits; default -1: no limit. */
  readonly maxBytes?: number;
  /**
   * Create the stream when it is missing (default true). A reader whose credential may not create
   * it (the PostgreSQL sink) says false: a missing stream is then a transient error, to wait out.
   */
  readonly createIfMissing?: boolean;
  /**
   * Move an existing stream that captures the legacy subjects (`<prefix>.*.*`, written before
   * commits carried their kind) or does not partition its commits yet to the current layout:
   * only the admin credential may (the launcher does, on its own server). Its stored commits stay
   * where they are and are read as before.
   */
  readonly upgradeSubjects?: boolean;
};

export { DEFAULT_STREAM_NAME } from '@flotilla/bus';

/** The stream as found: its replicas, and a warning when its settings differ from the configured ones. */
export type EventStreamState = { readonly replicas: number; readonly warning: string | undefined };

const STREAM_NOT_FOUND = 10059;

export async function connectManager(nc: NatsConnection): Promise<JetStreamManager> {
  try {
    return await jetstreamManager(nc, { checkAPI: true });
  } catch (error) {
    throw new LogError(
      LogErrorCode.JetStreamUnavailable,
      `JetStream is not available at ${nc.getServer()}: ${(error as Error).message}. Start nats-server with -js.`,
      { cause: error },
    );
  }
}

/**
 * Creates the events stream, or checks an existing one: one that cannot work (other subjects,
 * another retention, no direct gets) is refused; settings that differ from the configured ones
 * (replicas, retention, duplicate window) are returned as a warning naming the command that
 * applies them. Nothing is changed on an existing stream: that takes the admin credential.
 * Safe to call from every service at start-up, concurrently.
 */
export async function ensureEventStream(
  jsm: JetStreamManager,
  streamName: string,
  prefix: string,
  options: EventStreamOptions,
): Promise<EventStreamState> {
  const wanted: Partial<StreamConfig> & { name: string } = {
    name: streamName,
    subjects: [commitSubjects(prefix)],
    // nats-server appends each commit's partition to its subject (libs/bus PARTITIONS)
    subject_transform: commitSubjectTransform(prefix),
    retention: 'limits' as StreamConfig['retention'],
    storage: 'file' as StreamConfig['storage'],
    num_replicas: options.replicas ?? 1,
    allow_direct: true,
    duplicate_window: nanos(options.duplicateWindowMs ?? 120_000),
    max_age: nanos(options.maxAgeMs ?? 0),
    max_bytes: options.maxBytes ?? -1,
    ...(options.maxMessageBytes === undefined ? {} : { max_msg_size: options.maxMessageBytes }),
    discard: 'old' as StreamConfig['discard'],
  };
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const existing = await jsm.streams.info(streamName).catch((error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return undefined;
      throw error;
    });
    if (!existing) {
      if (options.createIfMissing === false)
        throw new LogError(
          LogErrorCode.Transient,
          `stream ${streamName} does not exist yet (this reader may not create it)`,
        );
      try {
        const created = await jsm.streams.add(wanted);
        return { replicas: created.config.num_replicas ?? 1, warning: undefined };
      } catch (error) {
        if (isLostCreationRace(error)) continue; // lost a creation race: read what won it
        throw error;
      }
    }
    const config = existing.config;
    const legacy = config.subjects?.includes(legacyCommitSubjects(prefix)) === true;
    const transform = commitSubjectTransform(prefix);
    const partitioned =
      config.subject_transform?.src === transform.src && config.subject_transform.dest === transform.dest;
    const current = config.subjects?.includes(commitSubjects(prefix)) === true;
    // the legacy subjects, none, or the current ones not partitioned yet: moved to the current layout
    const upgradable = legacy || config.subjects?.length === 0 || (current && !config.subject_transform);
    if (options.upgradeSubjects === true && upgradable && !(current && partitioned)) {
      await jsm.streams.update(streamName, { subjects: [commitSubjects(prefix)], subject_transform: transform });
      continue;
    }
    if (legacy) {
      // an older service still running would append there, on a subject an append of the current
      // layout does not expect: both must never write one log
      throw new LogError(
        LogErrorCode.StreamMisconfigured,
        `stream ${streamName} captures ${legacyCommitSubjects(prefix)}, the subjects older versions of Flotilla append to (commits now carry their kind: ${commitSubjects(prefix)}). ` +
          `Stop every service of the older version, then run with the admin credential: nats stream edit ${streamName} --subjects '${commitSubjects(prefix)}' (the commits stored stay and are read as before)`,
      );
    }
    if (!config.subjects?.includes(commitSubjects(prefix))) {
      throw new LogError(
        LogErrorCode.StreamMisconfigured,
        `stream ${streamName} exists but does not capture ${commitSubjects(prefix)} (it has ${JSON.stringify(config.subjects)})`,
      );
    }
    if (config.subject_transform && !partitioned) {
      throw new LogError(
        LogErrorCode.StreamMisconfigured,
        `stream ${streamName} transforms its subjects as ${JSON.stringify(config.subject_transform)}; Flotilla's commits are stored as ${JSON.stringify(transform)} (their partitions are protocol)`,
      );
    }
    if (config.retention !== 'limits') {
      throw new LogError(
        LogErrorCode.StreamMisconfigured,
        `stream ${streamName} must use limits retention, not ${config.retention}`,
      );
    }
    if (config.allow_direct !== true) {
      throw new LogError(
        LogErrorCode.StreamMisconfigured,
        `stream ${streamName} does not allow direct gets, which every reader of the log uses: run with the admin credential: nats stream edit ${streamName} --allow-direct`,
      );
    }
    const drifts = streamDrift(config, {
      num_replicas: wanted.num_replicas ?? 1,
      max_age: wanted.max_age ?? 0,
      max_bytes: wanted.max_bytes ?? -1,
    });
    if (config.duplicate_window !== wanted.duplicate_window) {
      const ms = (nanoseconds: number): string => `${Math.round(nanoseconds / 1e6)}ms`;
      drifts.push({
        setting: 'duplicate window',
        actual: ms(config.duplicate_window),
        configured: ms(wanted.duplicate_window ?? 0),
        flag: `--dupe-window ${ms(wanted.duplicate_window ?? 0)}`,
      });
    }
    const warnings = [
      ...(drifts.length > 0 ? [describeDrift(streamName, drifts)] : []),
      // it works: every commit then reaches each group through its own consumer, and a group's instances share conversations at random
      ...(partitioned
        ? []
        : [
            `stream ${streamName} does not partition its commits (no subject transform): conversations are not held by one instance of a group. ` +
              `Once every service of an older version has stopped, run with the admin credential: nats stream edit ${streamName} --transform-source '${transform.src}' --transform-destination '${transform.dest}' (the launcher does it on its own server)`,
          ]),
    ];
    return { replicas: config.num_replicas ?? 1, warning: warnings.length > 0 ? warnings.join('; ') : undefined };
  }
  throw new LogError(LogErrorCode.StreamMisconfigured, `could not create or read stream ${streamName}`);
}
