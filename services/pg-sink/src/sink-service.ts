import type { ServiceContext, ServiceParts } from '@flotilla/runtime';
import pg from 'pg';
import { CommitWriter } from './commit-writer.js';
import { migrate } from './migrations.js';
import { describeDatabase, loadSinkConfig } from './sink-config.js';
import { createSinkHandler } from './sink-handler.js';
import { startSinkLag } from './sink-lag.js';

/** The durable consumer of the sink's instances (libs/bus CONSUMER_GROUPS). */
export const SINK_GROUP = 'pg-sink';

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The PostgreSQL sink's part of runService: a connection pool (one connection per transaction
 * written at once, and one for the rest), the schema migrated (waiting for the database at start), the group's commits written
 * by the handler, the lag gauges, and /ready false while the database does not answer.
 */
export async function startSink({ config, logger, jsm, log, metrics }: ServiceContext): Promise<ServiceParts> {
  const sink = loadSinkConfig(process.env);
  const pool = new pg.Pool({ connectionString: sink.databaseUrl, max: sink.transactions + 1, connectionTimeoutMillis: 5_000, application_name: config.instanceId });
  // an idle connection whose server went away: the pool drops it; the next commit opens another
  pool.on('error', (error) => logger.warn({ err: error }, 'a PostgreSQL connection failed; it is replaced'));
  const database = describeDatabase(sink.databaseUrl);
  for (let attempt = 1; ; attempt += 1) {
    try {
      const applied = await migrate(pool);
      logger.info({ database, applied }, applied.length > 0 ? 'sink schema migrated' : 'sink schema is current');
      break;
    } catch (error) {
      if ((error as Error).message.startsWith('the database has sink schema version') || (error as Error).message.startsWith('sink migration')) throw error;
      logger.warn({ err: error, attempt, database }, 'PostgreSQL is not reachable yet; retrying');
      await delay(Math.min(5_000, 200 * attempt));
    }
  }
  const writer = new CommitWriter(pool, {
    transactions: sink.transactions,
    firstCommitSeq: (ref) => log.firstCommitSeq(ref),
    onRestart: (ref, commit, reason) => logger.warn({ ...ref, streamSeq: commit.streamSeq, reason }, 'a conversation row starts again from this commit'),
  });
  const lag = startSinkLag({
    jsm,
    stream: log.streamName,
    consumer: SINK_GROUP,
    subjectPrefix: log.subjectPrefix,
    registry: metrics.registry,
    intervalMs: sink.lagIntervalMs,
    onError: (error) => logger.debug({ err: error }, 'could not measure the sink lag'),
  });
  return {
    handler: createSinkHandler(writer),
    ready: () => pool.query('SELECT 1').then(() => true, () => false),
    stop: async () => {
      lag.stop();
      await pool.end();
    },
  };
}
