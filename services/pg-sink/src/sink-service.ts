import { DELETIONS } from '@flotilla/bus';
import {
  DeletionNotice,
  ensureDeletionNotices,
  ensureDurableConsumer,
  startCommitConsumer,
  type CommitHandler,
  type ServiceContext,
  type ServiceParts,
} from '@flotilla/runtime';
import pg from 'pg';
import { CommitWriter } from './commit-writer.js';
import { isConnectionError } from './connection-errors.js';
import { migrate } from './migrations.js';
import { describeDatabase, loadSinkConfig } from './sink-config.js';
import { createSinkHandler, RETRY_DELAYS } from './sink-handler.js';
import { startSinkLag } from './sink-lag.js';

/** The durable consumer of the sink's instances (libs/bus CONSUMER_GROUPS). */
export const SINK_GROUP = 'pg-sink';

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The PostgreSQL sink's part of runService: a connection pool (one connection per transaction
 * written at once, and one for the rest), the schema migrated (waiting for the database at start), the group's commits written
 * by the handler, the lag gauges, and /ready false while the database does not answer.
 */
export async function startSink({ config, logger, js, jsm, log, metrics }: ServiceContext): Promise<ServiceParts> {
  const sink = loadSinkConfig(process.env);
  const pool = new pg.Pool({
    connectionString: sink.databaseUrl,
    max: sink.transactions + 1,
    connectionTimeoutMillis: 5_000,
    application_name: config.instanceId,
  });
  // an idle connection whose server went away: the pool drops it; the next commit opens another
  pool.on('error', (error) => logger.warn({ err: error }, 'a PostgreSQL connection failed; it is replaced'));
  const database = describeDatabase(sink.databaseUrl);
  for (let attempt = 1; ; attempt += 1) {
    try {
      const applied = await migrate(pool);
      logger.info({ database, applied }, applied.length > 0 ? 'sink schema migrated' : 'sink schema is current');
      break;
    } catch (error) {
      if (
        (error as Error).message.startsWith('the database has sink schema version') ||
        (error as Error).message.startsWith('sink migration')
      )
        throw error;
      logger.warn({ err: error, attempt, database }, 'PostgreSQL is not reachable yet; retrying');
      await delay(Math.min(5_000, 200 * attempt));
    }
  }
  const writer = new CommitWriter(pool, {
    transactions: sink.transactions,
    dropDeleted: sink.deleted === 'drop',
    firstCommitSeq: (ref) => log.firstCommitSeq(ref),
    onRestart: (ref, commit, reason) =>
      logger.warn({ ...ref, streamSeq: commit.streamSeq, reason }, 'a conversation row starts again from this commit'),
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
  // the notices of deleted conversations: each recorded, and the conversation's rows kept or dropped (FLOTILLA_SINK_DELETED)
  await ensureDeletionNotices(jsm, config.storage.replicas);
  await ensureDurableConsumer(jsm, {
    stream: DELETIONS.stream,
    name: DELETIONS.group,
    filterSubjects: [`${DELETIONS.subjectPrefix}.>`],
    ackWaitMs: config.ackWaitMs,
    maxAckPending: 256,
  });
  const deletions = await startCommitConsumer({
    js,
    stream: DELETIONS.stream,
    consumer: DELETIONS.group,
    subjectPrefix: DELETIONS.subjectPrefix,
    concurrency: 4,
    ackWaitMs: config.ackWaitMs,
    handler: createDeletionHandler(writer),
    logger: logger.child({ consumer: 'deletions' }),
    metrics,
  });
  logger.info(
    { deleted: sink.deleted },
    `a deleted conversation's rows are ${sink.deleted === 'drop' ? 'dropped' : 'kept'} (FLOTILLA_SINK_DELETED)`,
  );
  return {
    handler: createSinkHandler(writer),
    ready: () =>
      pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
    stop: async () => {
      await deletions.stop();
      lag.stop();
      await pool.end();
    },
  };
}

/** A deletion notice: validated (one whose body is not a notice of its own subject's conversation is reported and dropped), then recorded. */
export function createDeletionHandler(writer: CommitWriter): CommitHandler {
  return async (delivery) => {
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(delivery.message.data).toString('utf8'));
    } catch {
      json = undefined;
    }
    const notice = DeletionNotice.safeParse(json);
    if (
      !notice.success ||
      !delivery.ref ||
      notice.data.tenant !== delivery.ref.tenant ||
      notice.data.conversation !== delivery.ref.conversation
    ) {
      delivery.logger.error(
        {
          subject: delivery.subject,
          reason: notice.success ? 'it is not the notice of its subject' : notice.error.issues[0]?.message,
        },
        'an invalid deletion notice: dropped',
      );
      return { ack: true, outcome: 'invalid' };
    }
    try {
      await writer.recordDeletion({
        tenant: notice.data.tenant,
        conversation: notice.data.conversation,
        upToStreamSeq: notice.data.up_to_stream_seq,
        reason: notice.data.reason,
        at: notice.data.at,
      });
      return { ack: true, outcome: 'deletion_recorded' };
    } catch (error) {
      if (!isConnectionError(error as Error)) throw error;
      delivery.logger.warn(
        { err: error },
        'PostgreSQL is not available: the deletion will be recorded when it is back',
      );
      return { ack: false, outcome: 'database_unavailable', delayMs: RETRY_DELAYS.databaseUnavailableMs };
    }
  };
}
