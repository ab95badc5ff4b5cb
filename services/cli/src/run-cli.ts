import { API_PREFIX, FLOTILLA_VERSION } from '@flotilla/api';
import { BusConfigError } from '@flotilla/bus';
import { FlotillaApiError } from '@flotilla/client';
import { CURRENT_PROTOCOL_VERSION } from '@flotilla/events';
import { parseCliArgs, type ParsedArgs } from './args.js';
import type { CliClient } from './cli-client.js';
import { ExitCode, executeCommand } from './commands.js';
import { CONFIG_FILE, resolveConnection, type Connection } from './connection.js';
import { CliError, CliErrorCode } from './errors.js';
import type { SecretInput } from './secret-commands.js';
import { wantsColor } from './style.js';
import { runTap } from './tap-command.js';
import { Terminal, type Output } from './terminal.js';
import { commandUsage, USAGE } from './usage.js';

export type CliIo = {
  readonly stdout: Output;
  readonly stderr: Output;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The text of `.flotilla/cli.json` in the current directory; undefined when there is none. */
  readonly readConfig: () => string | undefined;
  readonly createClient: (connection: Connection) => CliClient;
  /** Aborted on Ctrl-C: a watch stops cleanly. */
  readonly signal?: AbortSignal;
  readonly now?: () => Date;
  /** stdin and files, for `secret set` (absent: only --value works). */
  readonly input?: SecretInput;
  /** Called by a command that finishes its own work on Ctrl-C (a named tap acknowledges what it printed) instead of being ended at once. */
  readonly finishOnInterrupt?: () => void;
};

const SHORT_USAGE = 'Usage: flotilla <command> [options]    (flotilla --help lists the commands)';

/** The whole CLI: parse, connect, run the command, print. Returns the exit status; never throws. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const err = new Terminal(io.stderr);
  let parsed: ParsedArgs;
  try {
    parsed = parseCliArgs(argv);
  } catch (error) {
    err.line(`flotilla: ${(error as Error).message}`);
    err.line(SHORT_USAGE);
    return ExitCode.Usage;
  }
  const { command } = parsed;
  if (command.name === 'help') {
    io.stdout.write(command.topic === undefined ? USAGE : commandUsage(command.topic));
    return ExitCode.Ok;
  }
  if (command.name === 'version') {
    io.stdout.write(
      `flotilla ${FLOTILLA_VERSION} (API ${API_PREFIX.slice(1)}, protocol ${CURRENT_PROTOCOL_VERSION})\n`,
    );
    return ExitCode.Ok;
  }
  const out = new Terminal(io.stdout);
  if (command.name === 'tap') {
    // straight from NATS with a tap's credential: no gateway, no API key
    io.finishOnInterrupt?.();
    try {
      return await runTap(command, {
        out,
        err,
        env: io.env,
        color: wantsColor(io.stdout.isTTY, io.env),
        interactive: io.stdout.isTTY === true,
        ...(io.signal ? { signal: io.signal } : {}),
      });
    } catch (error) {
      out.endLine();
      err.lines(describeError(error));
      return error instanceof BusConfigError ? ExitCode.Usage : ExitCode.Failed;
    }
  }
  let connection: Connection | undefined;
  try {
    connection = resolveConnection(parsed.connection, io.env, io.readConfig);
    const client = io.createClient(connection);
    return await executeCommand(command, client, {
      out,
      err,
      color: wantsColor(io.stdout.isTTY, io.env),
      interactive: io.stdout.isTTY === true,
      ...(io.signal ? { signal: io.signal } : {}),
      now: io.now ?? (() => new Date()),
      ...(io.input ? { input: io.input } : {}),
    });
  } catch (error) {
    out.endLine();
    err.lines(describeError(error));
    if (error instanceof FlotillaApiError && error.code === 'network_error' && connection) {
      err.line(`  is the gateway running at ${connection.url}? (set by --url, FLOTILLA_URL or ${CONFIG_FILE})`);
    }
    return error instanceof CliError ? ExitCode.Usage : ExitCode.Failed;
  }
}

/** `error: <code>: <message>` and the field-level issues of a validation failure. */
export function describeError(error: unknown): string[] {
  if (error instanceof FlotillaApiError) {
    return [
      `error: ${error.code}: ${error.message}`,
      ...error.issues.map((issue) => `  ${issue.path}: ${issue.message}`),
    ];
  }
  if (error instanceof CliError)
    return [`flotilla: ${error.message}`, ...(error.code === CliErrorCode.Usage ? [SHORT_USAGE] : [])];
  return [`error: ${error instanceof Error ? error.message : String(error)}`];
}
