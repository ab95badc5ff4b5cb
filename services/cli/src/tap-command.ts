import {
  BusConfigError,
  BusVariables,
  connectBus,
  loadBusSettings,
  localTapFile,
  readLocalTap,
  withLocalTap,
} from '@flotilla/bus';
import type { Event } from '@flotilla/events';
import { tapStream, type TapItem } from '@flotilla/log';
import { ExitCode } from './commands.js';
import { renderEvent } from './render-event.js';
import { createStyle } from './style.js';
import type { TapCommand } from './tap-args.js';
import type { Terminal } from './terminal.js';

export type TapContext = {
  readonly out: Terminal;
  readonly err: Terminal;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly color: boolean;
  /** stdout is a terminal: a readable rendering, unless --json. */
  readonly interactive: boolean;
  readonly signal?: AbortSignal;
};

/**
 * The tap's NATS settings: the environment's (FLOTILLA_NATS_URL and FLOTILLA_NATS_USER with its
 * password, an nkey or a .creds file, as every service reads them), with what the local system's
 * `tap.json` (`./dev up` writes it into its home) adds where they say nothing. No server named
 * anywhere is an error: a tap never guesses one.
 */
export function tapEnvironment(env: Readonly<Record<string, string | undefined>>): NodeJS.ProcessEnv {
  const environment = withLocalTap(env, readLocalTap(env));
  if (!environment[BusVariables.url]?.trim()) {
    throw new BusConfigError(
      `no NATS server to tap: start the system with ./dev up (it writes ${localTapFile(env)} with the URL and the tap's credential; FLOTILLA_HOME names another home), or set ${BusVariables.url} and ${BusVariables.user} with its password, an nkey or a .creds file`,
    );
  }
  return environment;
}

/**
 * `flotilla tap`: reads the events stream directly from NATS (not through the gateway) with a
 * tap's credential (see tapEnvironment), filters, and prints each event: one JSON line on a
 * pipe, a readable rendering on a terminal. A message that is not a valid commit is reported on
 * stderr, never printed as an event.
 */
export async function runTap(command: TapCommand, context: TapContext): Promise<ExitCode> {
  const settings = loadBusSettings(tapEnvironment(context.env));
  // replies come to the credential's own inbox: a user's name, else the tap identity it stands for
  const identity =
    settings.auth.kind === 'user' ? settings.auth.user : command.tenant === undefined ? 'tap' : `tap-${command.tenant}`;
  // a server older than Flotilla's minimum is refused here, with the version it needs
  const nc = await connectBus(
    settings,
    { name: 'flotilla-tap', identity },
    { maxReconnectAttempts: -1, reconnectTimeWait: 500 },
  );
  const json = command.json || !context.interactive;
  const style = createStyle(context.color);
  const conversations = new Set(command.conversations);
  const types = command.types && new Set<string>(command.types);
  const sources = command.sources && new Set<string>(command.sources);
  const wanted = (event: Event): boolean =>
    (conversations.size === 0 || conversations.has(event.conversation)) &&
    (!types || types.has(event.type)) &&
    (!sources || sources.has(event.source));
  let printed = 0;
  let invalid = 0;
  const visit = (item: TapItem): void => {
    if (item.kind === 'invalid') {
      invalid += 1;
      context.err.line(
        `tap: stream position ${item.streamSeq} (${item.subject}) is not a valid commit, skipped: ${item.reason}`,
      );
      return;
    }
    for (const event of item.commit.events) {
      if (!wanted(event)) continue;
      printed += 1;
      if (json) context.out.line(JSON.stringify(event));
      else
        for (const line of renderEvent(event, { color: context.color, seq: true, verbose: true }))
          context.out.line(`${style.dim(`${event.tenant}/${event.conversation}`)} ${line}`);
    }
  };
  try {
    const result = await tapStream(
      nc,
      {
        streamName: context.env['FLOTILLA_STREAM'] || undefined,
        subjectPrefix: context.env['FLOTILLA_SUBJECT_PREFIX'] || undefined,
        ...(command.tenant === undefined ? {} : { tenant: command.tenant }),
        ...(command.conversations.length === 1 ? { conversation: command.conversations[0]! } : {}),
        start: command.start,
        follow: command.follow,
        ...(command.tapName === undefined ? {} : { name: command.tapName }),
        ...(context.signal ? { signal: context.signal } : {}),
        onRetry: (error) => context.err.line(`tap: NATS is not available (${(error as Error).message}); retrying`),
      },
      visit,
    );
    const where = result.lastStreamSeq > 0 ? ` up to stream position ${result.lastStreamSeq}` : '';
    context.err.line(
      `tap: ${printed} event(s)${invalid > 0 ? `, ${invalid} invalid message(s) skipped` : ''}${where}${result.resumed ? ` (named tap ${command.tapName} resumed)` : ''}`,
    );
    return context.signal?.aborted ? ExitCode.Interrupted : ExitCode.Ok;
  } finally {
    await nc.drain().catch(() => undefined);
  }
}
