import { EVENT_TYPES, EventSource, isSubjectToken, type EventType } from '@flotilla/events';
import type { TapStart } from '@flotilla/log';
import { usageError } from './errors.js';

/** `flotilla tap`: the events stream read directly with a tap's NATS credential (docs/operations.md, "Taps"). */
export type TapCommand = {
  readonly name: 'tap';
  readonly tenant?: string;
  readonly conversations: readonly string[];
  readonly types?: readonly EventType[];
  readonly sources?: readonly EventSource[];
  readonly start: TapStart;
  readonly follow: boolean;
  /** A durable tap: started again, it resumes where it was. */
  readonly tapName?: string;
  /** JSON Lines on a terminal too. */
  readonly json: boolean;
};

export type TapFlags = {
  readonly tenant?: string;
  readonly conversation?: readonly string[];
  readonly type?: string;
  readonly source?: string;
  readonly since?: string;
  readonly startSeq?: string;
  readonly new?: boolean;
  readonly follow?: boolean;
  readonly name?: string;
  readonly json?: boolean;
};

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The tap command from its flags; `now` for a relative --since. */
export function tapCommandOf(rest: readonly string[], flags: TapFlags, now: () => Date = () => new Date()): TapCommand {
  if (rest.length > 0)
    throw usageError(`tap takes no argument ("${rest[0]}"): filter with --tenant, --conversation, --type, --source`);
  if (flags.tenant !== undefined && !isSubjectToken(flags.tenant))
    throw usageError('--tenant must be 1-64 characters of A-Z a-z 0-9 _ -');
  const conversations = flags.conversation ?? [];
  for (const conversation of conversations)
    if (!isSubjectToken(conversation))
      throw usageError(`--conversation "${conversation}" is not a conversation id: 1-64 characters of A-Z a-z 0-9 _ -`);
  const starts = [
    flags.since !== undefined && '--since',
    flags.startSeq !== undefined && '--start-seq',
    flags.new && '--new',
  ].filter(Boolean);
  if (starts.length > 1) throw usageError(`give one start, not ${starts.join(' and ')}`);
  if (flags.name !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(flags.name))
    throw usageError('--name must be 1-64 characters of A-Z a-z 0-9 _ -');
  return {
    name: 'tap',
    ...(flags.tenant === undefined ? {} : { tenant: flags.tenant }),
    conversations,
    ...(flags.type === undefined ? {} : { types: listOf('--type', flags.type, EVENT_TYPES) }),
    ...(flags.source === undefined ? {} : { sources: listOf('--source', flags.source, EventSource.options) }),
    start: startOf(flags, now),
    follow: flags.follow ?? false,
    ...(flags.name === undefined ? {} : { tapName: flags.name }),
    json: flags.json ?? false,
  };
}

function startOf(flags: TapFlags, now: () => Date): TapStart {
  if (flags.new) return { from: 'new' };
  if (flags.startSeq !== undefined) {
    const streamSeq = /^\d+$/.test(flags.startSeq) ? Number(flags.startSeq) : Number.NaN;
    if (!Number.isSafeInteger(streamSeq) || streamSeq < 1)
      throw usageError(`--start-seq must be a stream position (a whole number from 1), not "${flags.startSeq}"`);
    return { from: 'position', streamSeq };
  }
  if (flags.since !== undefined) {
    const relative = DURATION.exec(flags.since);
    const since = relative
      ? new Date(now().getTime() - Number(relative[1]) * UNIT_MS[relative[2] as keyof typeof UNIT_MS])
      : new Date(flags.since);
    if (!/^\d{4}-\d{2}-\d{2}/.test(flags.since) && !relative)
      throw usageError(
        `--since must be a time (2026-11-29T21:04:05Z) or a duration back from now (30s, 10m, 2h, 7d), not "${flags.since}"`,
      );
    if (Number.isNaN(since.getTime())) throw usageError(`--since "${flags.since}" is not a valid time`);
    return { from: 'time', since };
  }
  return { from: 'start' };
}

function listOf<T extends string>(option: string, value: string, known: readonly T[]): T[] {
  const items = value.split(',').map((item) => item.trim());
  for (const item of items)
    if (!(known as readonly string[]).includes(item))
      throw usageError(`${option}: unknown value "${item}"; known: ${known.join(', ')}`);
  return items as T[];
}
