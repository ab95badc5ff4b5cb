import { z } from 'zod';

/** The sink's own variables (the NATS and service ones are libs/runtime's). */
export const SinkVariables = {
  databaseUrl: 'FLOTILLA_DATABASE_URL',
  lagIntervalMs: 'FLOTILLA_SINK_LAG_INTERVAL_MS',
  transactions: 'FLOTILLA_SINK_TRANSACTIONS',
  deleted: 'FLOTILLA_SINK_DELETED',
} as const;

const DatabaseUrl = z
  .string()
  .trim()
  .min(1, 'is required: the PostgreSQL database the sink writes to, e.g. postgres://flotilla@db:5432/analytics')
  .refine(
    (value) => URL.canParse(value) && /^postgres(ql)?:$/.test(new URL(value).protocol),
    'must be a postgres:// or postgresql:// URL',
  );

export type SinkConfig = {
  readonly databaseUrl: string;
  /** How often the lag and pending gauges are measured. */
  readonly lagIntervalMs: number;
  /** Transactions written at once, each on a PostgreSQL connection of its own (CommitWriter's lanes). */
  readonly transactions: number;
  /**
   * What the sink does with its rows of a conversation deleted (by a user or its retention): `keep`
   * them (the deletion is recorded in `deletions`) or `drop` them (and what comes late of it).
   */
  readonly deleted: 'keep' | 'drop';
};

/** Reads the sink's settings; throws naming the variable. */
export function loadSinkConfig(environment: NodeJS.ProcessEnv = process.env): SinkConfig {
  const url = DatabaseUrl.safeParse(environment[SinkVariables.databaseUrl] ?? '');
  if (!url.success) throw new Error(`${SinkVariables.databaseUrl} ${url.error.issues[0]?.message ?? 'is invalid'}`);
  const interval = z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .safeParse(environment[SinkVariables.lagIntervalMs] ?? 1_000);
  if (!interval.success)
    throw new Error(`${SinkVariables.lagIntervalMs} must be a whole number of milliseconds from 100 to 60000`);
  const transactions = z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .safeParse(environment[SinkVariables.transactions] ?? 2);
  if (!transactions.success) throw new Error(`${SinkVariables.transactions} must be a whole number from 1 to 64`);
  const deleted = z.enum(['keep', 'drop']).safeParse(environment[SinkVariables.deleted] ?? 'keep');
  if (!deleted.success)
    throw new Error(
      `${SinkVariables.deleted} must be keep or drop (what the sink does with its rows of a deleted conversation)`,
    );
  return {
    databaseUrl: url.data,
    lagIntervalMs: interval.data,
    transactions: transactions.data,
    deleted: deleted.data,
  };
}

/** The URL without its password, for logs. */
export function describeDatabase(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  if (url.password !== '') url.password = '***';
  return url.toString();
}
