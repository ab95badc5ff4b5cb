import { z } from 'zod';
import { BusConfigError } from './errors.js';

/** Replicas and retention of the events stream and of every bucket: from configuration, never a silent default. */
export type StorageSettings = {
  /** Replicas of the events stream and of every bucket: 1 on one server, 3 in a cluster. */
  readonly replicas: number;
  /** Commits older than this are dropped from the events stream; 0 keeps them forever. */
  readonly streamMaxAgeMs: number;
  /** The events stream keeps at most this many bytes (the oldest commits go first); -1 for no limit. */
  readonly streamMaxBytes: number;
};

export const StorageVariables = {
  replicas: 'FLOTILLA_REPLICAS',
  streamMaxAgeMs: 'FLOTILLA_STREAM_MAX_AGE_MS',
  streamMaxBytes: 'FLOTILLA_STREAM_MAX_BYTES',
} as const;

const Settings = z.object({
  replicas: z.coerce.number().int().min(1).max(5),
  streamMaxAgeMs: z.coerce.number().int().min(0),
  streamMaxBytes: z.coerce.number().int().min(-1),
});

export function loadStorageSettings(environment: NodeJS.ProcessEnv = process.env): StorageSettings {
  const read = (name: string, fallback: string): string =>
    environment[name]?.trim() ? environment[name].trim() : fallback;
  const result = Settings.safeParse({
    replicas: read(StorageVariables.replicas, '1'),
    streamMaxAgeMs: read(StorageVariables.streamMaxAgeMs, '0'),
    streamMaxBytes: read(StorageVariables.streamMaxBytes, '-1'),
  });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const variable = StorageVariables[issue.path[0] as keyof StorageSettings];
    throw new BusConfigError(`${variable}: ${issue.message}`);
  }
  return result.data;
}

/** One setting of an existing stream that differs from the configured one. */
export type SettingDrift = {
  readonly setting: string;
  readonly actual: string;
  readonly configured: string;
  readonly flag: string;
};

/** The configured settings a stream is compared on (stream config field names). */
export type WantedStream = { readonly num_replicas: number; readonly max_age?: number; readonly max_bytes?: number };

const NANOS_PER_MS = 1_000_000;

/** What differs between an existing stream's config and the configured one (ages in nanoseconds, as the server keeps them). */
export function streamDrift(
  actual: { num_replicas?: number; max_age?: number; max_bytes?: number },
  wanted: WantedStream,
): SettingDrift[] {
  const drifts: SettingDrift[] = [];
  const replicas = actual.num_replicas ?? 1;
  if (replicas !== wanted.num_replicas)
    drifts.push({
      setting: 'replicas',
      actual: String(replicas),
      configured: String(wanted.num_replicas),
      flag: `--replicas ${wanted.num_replicas}`,
    });
  if (wanted.max_age !== undefined && (actual.max_age ?? 0) !== wanted.max_age) {
    drifts.push({
      setting: 'max age',
      actual: age(actual.max_age ?? 0),
      configured: age(wanted.max_age),
      flag: `--max-age ${Math.round(wanted.max_age / NANOS_PER_MS)}ms`,
    });
  }
  if (wanted.max_bytes !== undefined && (actual.max_bytes ?? -1) !== wanted.max_bytes) {
    drifts.push({
      setting: 'max bytes',
      actual: bytes(actual.max_bytes ?? -1),
      configured: bytes(wanted.max_bytes),
      flag: `--max-bytes ${wanted.max_bytes}`,
    });
  }
  return drifts;
}

/** A warning naming each difference and the command (with the admin credential) that applies the configured settings. */
export function describeDrift(stream: string, drifts: readonly SettingDrift[]): string {
  const list = drifts.map((drift) => `${drift.setting} ${drift.actual} (configured ${drift.configured})`).join(', ');
  return `stream ${stream} exists with other settings than configured: ${list}. They are not changed automatically; to apply them, run with the admin credential: nats stream edit ${stream} ${drifts.map((drift) => drift.flag).join(' ')}`;
}

/** A warning when a clustered server is given one replica (losing one node would lose acknowledged data). */
export function replicasWarning(serverInfo: { cluster?: string } | undefined, replicas: number): string | undefined {
  if (!serverInfo?.cluster || replicas > 1) return undefined;
  return `nats-server is part of cluster ${serverInfo.cluster} but ${StorageVariables.replicas}=${replicas}: the events stream and the buckets keep one copy, so losing one node loses acknowledged events; set ${StorageVariables.replicas}=3`;
}

function age(nanos: number): string {
  if (nanos === 0) return 'unlimited';
  const ms = nanos / NANOS_PER_MS;
  return ms % 86_400_000 === 0 ? `${ms / 86_400_000}d` : ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${ms}ms`;
}

function bytes(value: number): string {
  return value < 0 ? 'unlimited' : `${value} B`;
}
