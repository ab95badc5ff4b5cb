import { connectBus, loadBusSettings, readLocalTap, withLocalTap, type LocalTap } from '@flotilla/bus';
import { jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { auditAll, auditConversation } from './audit-conversation.js';
import type { AuditReport } from './audit-report.js';
import { parseCliArgs, USAGE } from './cli-args.js';
import { AuditorError, AuditorErrorCode } from './errors.js';
import { formatReport, formatStray } from './format-report.js';
import type { StraySubject } from './list-conversations.js';
import type { LogLocation } from './log-location.js';
import { runFollow } from './run-follow.js';

export const ExitCode = { Clean: 0, Violations: 1, Usage: 2, Failure: 3 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export type CliIo = {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** With --follow: aborted to stop following (the command wires SIGTERM and SIGINT to it). */
  readonly signal?: AbortSignal;
  /** With --follow: told the URL of /health, /ready and /metrics once they listen. */
  readonly onListening?: (url: string) => void;
};

const STREAM_NOT_FOUND = 10059;

/** The whole command: parse, connect, audit, print. Returns the exit code; never throws. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  let args;
  let local: LocalTap | undefined;
  try {
    // the local system's tap (./dev up's tap.json): its server when none is named, its credential for that server only
    local = readLocalTap(io.env);
    args = parseCliArgs(
      argv,
      local && !io.env['FLOTILLA_NATS_URL']?.trim() ? { ...io.env, FLOTILLA_NATS_URL: local.natsUrl } : io.env,
    );
  } catch (error) {
    io.stderr(`flotilla audit: ${(error as Error).message}\n\n${USAGE}`);
    return ExitCode.Usage;
  }
  if (args.help) {
    io.stdout(USAGE);
    return ExitCode.Clean;
  }
  const env = withLocalTap({ ...io.env, FLOTILLA_NATS_URL: args.servers.join(',') }, local);
  if (args.follow) {
    try {
      await runFollow(
        { ...args, follow: args.follow },
        {
          stdout: io.stdout,
          env,
          signal: io.signal ?? new AbortController().signal,
          ...(io.onListening ? { onListening: io.onListening } : {}),
        },
      );
      return ExitCode.Clean;
    } catch (error) {
      io.stderr(`flotilla audit: could not follow the stream: ${(error as Error).message}\n`);
      return ExitCode.Failure;
    }
  }
  let nc: NatsConnection | undefined;
  try {
    // a read-only credential is enough (a tap's); FLOTILLA_NATS_USER and the rest as for a service
    const bus = loadBusSettings(env);
    const identity = bus.auth.kind === 'user' ? bus.auth.user : 'tap';
    nc = await connectBus(bus, { name: 'flotilla-audit', identity }, { timeout: 5_000, maxReconnectAttempts: 0 });
    const jsm = await jetstreamManager(nc, { checkAPI: true });
    await jsm.streams.info(args.streamName).catch((error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) {
        throw new AuditorError(
          AuditorErrorCode.StreamUnavailable,
          `stream ${args.streamName} does not exist on ${nc!.getServer()} (check --stream)`,
        );
      }
      throw error;
    });
    const location: LogLocation = { nc, jsm, streamName: args.streamName, subjectPrefix: args.subjectPrefix };
    let reports: readonly AuditReport[];
    let strays: readonly StraySubject[] = [];
    const print = (report: AuditReport): void => (args.json ? undefined : io.stdout(`${formatReport(report)}\n`));
    if (args.conversation !== undefined && args.tenant !== undefined) {
      const report = await auditConversation(location, { tenant: args.tenant, conversation: args.conversation });
      print(report);
      reports = [report];
    } else {
      ({ reports, strays } = await auditAll(location, {
        ...(args.tenant === undefined ? {} : { tenant: args.tenant }),
        onReport: print,
      }));
    }
    const failed = reports.filter((report) => report.violations.length > 0).length;
    const violations = reports.reduce((total, report) => total + report.violations.length, 0) + strays.length;
    if (args.json) {
      io.stdout(`${JSON.stringify({ conversations: reports.length, failed, violations, strays, reports }, null, 2)}\n`);
    } else {
      for (const stray of strays) io.stdout(`${formatStray(stray)}\n`);
      io.stdout(
        `audited ${reports.length} conversation(s) on ${args.streamName}: ${failed} with violations, ${violations} violation(s) in all\n`,
      );
    }
    return violations > 0 ? ExitCode.Violations : ExitCode.Clean;
  } catch (error) {
    io.stderr(`flotilla audit: could not audit: ${(error as Error).message}\n`);
    return ExitCode.Failure;
  } finally {
    await nc?.close().catch(() => undefined);
  }
}
