import { parseArgs } from 'node:util';
import { isSubjectToken } from '@flotilla/events';
import { DEFAULT_STREAM_NAME, DEFAULT_SUBJECT_PREFIX } from '@flotilla/log';
import { AuditorError, AuditorErrorCode } from './errors.js';

export type CliArgs =
  | { readonly help: true }
  | {
      readonly help: false;
      readonly servers: readonly string[];
      readonly streamName: string;
      readonly subjectPrefix: string;
      readonly tenant?: string;
      readonly conversation?: string;
      readonly json: boolean;
      /** Keep following the stream (a tap): violations as metrics and log lines, until stopped. */
      readonly follow?: { readonly healthPort: number; readonly healthHost: string; readonly settleMs: number };
    };

export const USAGE = `Usage: flotilla audit [--nats <url>] [options]

Audits conversation logs on the Flotilla events stream against the protocol's invariants.

Options:
  --nats <url>            NATS server URL(s), comma-separated (default: $NATS_URL, else $FLOTILLA_NATS_URL, else
                          the local system's: .flotilla/tap.json, or in $FLOTILLA_HOME, which ./dev up writes)
                          Credential: FLOTILLA_NATS_USER with its password, an nkey or a .creds file, as for a
                          service; else, on the local system's server, its read-only tap user from tap.json
  --stream <name>         events stream (default: ${DEFAULT_STREAM_NAME})
  --prefix <subject>      conversation subject prefix (default: ${DEFAULT_SUBJECT_PREFIX})
  --tenant <id>           audit only this tenant's conversations
  --conversation <id>     audit only this conversation (needs --tenant)
  --json                  print the reports as JSON
  --follow                keep following the stream from its start: each conversation audited as its
                          commits arrive, violations as JSON log lines and Prometheus metrics, until
                          SIGTERM or SIGINT (a tap: the read-only \`tap\` credential, or a tenant's with --tenant)
  --health-port <n>       with --follow: port of /health, /ready and /metrics (default: $FLOTILLA_HEALTH_PORT or 9465; 0 picks one)
  --health-host <host>    with --follow: where it listens (default: $FLOTILLA_HEALTH_HOST or 127.0.0.1)
  --settle-ms <ms>        with --follow: quiet time before a conversation's end-of-log checks (default 30000)
  -h, --help              show this help

Exit status: 0 no violation, 1 violations found, 2 usage error, 3 could not audit (server, stream).
With --follow: 0 when stopped by a signal, 3 when the stream cannot be read (e.g. a refused credential).
`;

const STREAM_NAME = /^[^\s.*>/\\]{1,255}$/;
const SUBJECT_TOKEN = /^[^\s.*>]+$/;

/** Parses and validates the command line. Throws AuditorError('usage') with a message that says what to fix. */
export function parseCliArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): CliArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        nats: { type: 'string' },
        stream: { type: 'string' },
        prefix: { type: 'string' },
        tenant: { type: 'string' },
        conversation: { type: 'string' },
        json: { type: 'boolean' },
        follow: { type: 'boolean' },
        'health-port': { type: 'string' },
        'health-host': { type: 'string' },
        'settle-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw usage((error as Error).message);
  }
  if (values.help) return { help: true };

  const nats = [values.nats, env['NATS_URL'], env['FLOTILLA_NATS_URL']].find(
    (value) => value !== undefined && value.trim() !== '',
  );
  if (nats === undefined)
    throw usage(
      'no NATS server: pass --nats (e.g. --nats nats://127.0.0.1:14222), set FLOTILLA_NATS_URL, or start the local system with ./dev up (it writes .flotilla/tap.json)',
    );
  const servers = nats.split(',').map((server) => server.trim());
  for (const server of servers) {
    if (!isServerUrl(server)) throw usage(`--nats: "${server}" is not a NATS URL; use nats://host:port`);
  }
  const streamName = values.stream ?? DEFAULT_STREAM_NAME;
  if (!STREAM_NAME.test(streamName))
    throw usage(`--stream: "${streamName}" is not a valid stream name (no spaces, dots, *, >, slashes)`);
  const subjectPrefix = values.prefix ?? DEFAULT_SUBJECT_PREFIX;
  if (!subjectPrefix.split('.').every((token) => SUBJECT_TOKEN.test(token))) {
    throw usage(`--prefix: "${subjectPrefix}" is not a subject prefix (dot-separated tokens, no wildcards or spaces)`);
  }
  const { tenant, conversation } = values;
  if (tenant !== undefined && !isSubjectToken(tenant))
    throw usage(`--tenant: "${tenant}" must be 1-64 characters of A-Z a-z 0-9 _ -`);
  if (conversation !== undefined) {
    if (tenant === undefined) throw usage('--conversation needs --tenant (a conversation is named by tenant and id)');
    if (!isSubjectToken(conversation))
      throw usage(`--conversation: "${conversation}" must be 1-64 characters of A-Z a-z 0-9 _ -`);
  }
  const follow = values.follow ? followSettings(values, env) : undefined;
  if (!follow && (values['health-port'] ?? values['health-host'] ?? values['settle-ms']) !== undefined) {
    throw usage('--health-port, --health-host and --settle-ms go with --follow');
  }
  if (follow && conversation !== undefined)
    throw usage("--follow follows every conversation (or a tenant's): drop --conversation");
  if (follow && values.json) throw usage('--follow writes JSON log lines already: drop --json');
  return {
    help: false,
    servers,
    streamName,
    subjectPrefix,
    ...(tenant === undefined ? {} : { tenant }),
    ...(conversation === undefined ? {} : { conversation }),
    json: values.json ?? false,
    ...(follow ? { follow } : {}),
  };
}

const DEFAULT_FOLLOW_HEALTH_PORT = 9465;

function followSettings(
  values: { readonly 'health-port'?: string; readonly 'health-host'?: string; readonly 'settle-ms'?: string },
  env: Readonly<Record<string, string | undefined>>,
): NonNullable<Extract<CliArgs, { help: false }>['follow']> {
  const port = values['health-port'] ?? env['FLOTILLA_HEALTH_PORT'] ?? String(DEFAULT_FOLLOW_HEALTH_PORT);
  const healthPort = Number(port);
  if (!/^\d+$/.test(port) || healthPort > 65_535) throw usage(`--health-port: "${port}" is not a port (0-65535)`);
  const healthHost = values['health-host'] ?? (env['FLOTILLA_HEALTH_HOST'] || '127.0.0.1');
  if (!/^[A-Za-z0-9.:_-]+$/.test(healthHost))
    throw usage(`--health-host: "${healthHost}" is not a host name or address`);
  const settle = values['settle-ms'] ?? '30000';
  const settleMs = Number(settle);
  if (!/^\d+$/.test(settle) || settleMs > 3_600_000)
    throw usage(`--settle-ms: "${settle}" must be 0-3600000 milliseconds`);
  return { healthPort, healthHost, settleMs };
}

function isServerUrl(server: string): boolean {
  try {
    const url = new URL(server.includes('://') ? server : `nats://${server}`);
    return ['nats:', 'tls:', 'ws:', 'wss:'].includes(url.protocol) && url.hostname !== '';
  } catch {
    return false;
  }
}

function usage(message: string): AuditorError {
  return new AuditorError(AuditorErrorCode.Usage, message);
}
