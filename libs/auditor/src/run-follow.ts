import { connectBus, loadBusSettings } from '@flotilla/bus';
import { startHealthServer } from '@flotilla/runtime';
import { pino } from 'pino';
import { AuditFollower } from './audit-follower.js';
import { AuditMetrics } from './audit-metrics.js';
import { AuditRule } from './audit-rule.js';
import type { CliArgs } from './cli-args.js';
import { followStream } from './follow-stream.js';

export type FollowIo = {
  readonly stdout: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted to stop (SIGTERM, SIGINT). */
  readonly signal: AbortSignal;
  /** Told where /health, /ready and /metrics listen, once they do. */
  readonly onListening?: (url: string) => void;
};

type FollowArgs = Extract<CliArgs, { help: false }> & {
  readonly follow: NonNullable<Extract<CliArgs, { help: false }>['follow']>;
};

/**
 * `flotilla audit --follow`: the auditor as a tap. Reads the events stream from its start with a
 * read-only credential and keeps following it; each conversation is audited incrementally as its
 * commits arrive (AuditFollower); every violation becomes one pino log line (level error, with the
 * conversation, rule and positions) and counts in `flotilla_audit_violations_total{rule}`. NATS
 * going away (a server restart) is waited out; reading resumes after the last message audited.
 * Resolves when the signal aborts; throws when the stream cannot be read at all (a refused credential).
 */
export async function runFollow(args: FollowArgs, io: FollowIo): Promise<void> {
  const logger = pino(
    { level: io.env['FLOTILLA_LOG_LEVEL'] ?? 'info', base: { service: 'auditor' } },
    { write: (line: string) => io.stdout(line) },
  );
  const bus = loadBusSettings({ ...io.env, FLOTILLA_NATS_URL: args.servers.join(',') });
  const identity = bus.auth.kind === 'user' ? bus.auth.user : 'tap';
  const nc = await connectBus(
    bus,
    { name: 'flotilla-audit-follow', identity },
    { waitOnFirstConnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 5_000 },
  );
  const metrics = new AuditMetrics();
  metrics.initialise(Object.values(AuditRule));
  const follower = new AuditFollower(
    {
      violation: (conversation, violation) => {
        metrics.violations.inc({ rule: violation.rule });
        logger.error(
          {
            tenant: conversation.tenant,
            conversation: conversation.conversation,
            rule: violation.rule,
            seq: violation.seq,
            streamSeq: violation.streamSeq,
            detail: violation.detail,
          },
          'invariant violated',
        );
      },
      conversation: () => metrics.conversations.inc(),
      stray: (subject, streamSeq) => {
        metrics.strays.inc();
        logger.warn({ subject, streamSeq }, 'a message on a subject that names no conversation');
      },
    },
    { subjectPrefix: args.subjectPrefix, settleMs: args.follow.settleMs },
  );
  let reading = false;
  const health = await startHealthServer(
    args.follow.healthPort,
    { ready: async () => !nc.isClosed() && reading },
    metrics,
    args.follow.healthHost,
  );
  io.onListening?.(health.url);
  logger.info(
    { health: health.url, stream: args.streamName, tenant: args.tenant ?? '*', identity },
    'auditor following the stream',
  );
  try {
    await followStream(
      nc,
      {
        streamName: args.streamName,
        subjectPrefix: args.subjectPrefix,
        ...(args.tenant === undefined ? {} : { tenant: args.tenant }),
        signal: io.signal,
        onRetry: (error) => {
          reading = false;
          metrics.restarts.inc();
          logger.warn({ err: error }, 'reading the stream failed; trying again');
        },
      },
      ({ message, pending }) => {
        reading = true;
        follower.visit(message);
        metrics.commits.inc();
        metrics.lagMessages.set(pending);
        metrics.lagSeconds.set(pending === 0 ? 0 : Math.max(0, Date.now() - message.info.timestampNanos / 1e6) / 1_000);
      },
    );
  } finally {
    follower.close();
    logger.info({ conversations: follower.conversations, commits: follower.commits }, 'auditor stopped');
    await health[Symbol.asyncDispose]();
    await nc.close().catch(() => undefined);
  }
}
