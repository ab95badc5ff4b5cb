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
    };

export const USAGE = `Usage: flotilla audit --nats <url> [options]

Audits conversation logs on the Flotilla events stream against the protocol's invariants.

Options:
  --nats <url>            NATS server URL(s), comma-separated (default: $NATS_URL)
  --stream <name>         events stream (default: ${DEFAULT_STREAM_NAME})
  --prefix <subject>      conversation subject prefix (default: ${DEFAULT_SUBJECT_PREFIX})
  --tenant <id>           audit only this tenant's conversations
  --conversation <id>     audit only this conversation (needs --tenant)
  --json                  print the reports as JSON
  -h, --help              show this help

Exit status: 0 no violation, 1 violations found, 2 usage error, 3 could not audit (server, stream).
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
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw usage((error as Error).message);
  }
  if (values.help) return { help: true };

  const nats = values.nats ?? env['NATS_URL'];
  if (nats === undefined || nats.trim() === '') throw usage('--nats is required (or set NATS_URL), e.g. --nats nats://127.0.0.1:4222');
  const servers = nats.split(',').map((server) => server.trim());
  for (const server of servers) {
    if (!isServerUrl(server)) throw usage(`--nats: "${server}" is not a NATS URL; use nats://host:port`);
  }
  const streamName = values.stream ?? DEFAULT_STREAM_NAME;
  if (!STREAM_NAME.test(streamName)) throw usage(`--stream: "${streamName}" is not a valid stream name (no spaces, dots, *, >, slashes)`);
  const subjectPrefix = values.prefix ?? DEFAULT_SUBJECT_PREFIX;
  if (!subjectPrefix.split('.').every((token) => SUBJECT_TOKEN.test(token))) {
    throw usage(`--prefix: "${subjectPrefix}" is not a subject prefix (dot-separated tokens, no wildcards or spaces)`);
  }
  const { tenant, conversation } = values;
  if (tenant !== undefined && !isSubjectToken(tenant)) throw usage(`--tenant: "${tenant}" must be 1-64 characters of A-Z a-z 0-9 _ -`);
  if (conversation !== undefined) {
    if (tenant === undefined) throw usage('--conversation needs --tenant (a conversation is named by tenant and id)');
    if (!isSubjectToken(conversation)) throw usage(`--conversation: "${conversation}" must be 1-64 characters of A-Z a-z 0-9 _ -`);
  }
  return {
    help: false,
    servers,
    streamName,
    subjectPrefix,
    ...(tenant === undefined ? {} : { tenant }),
    ...(conversation === undefined ? {} : { conversation }),
    json: values.json ?? false,
  };
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
