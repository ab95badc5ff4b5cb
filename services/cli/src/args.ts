import { parseArgs } from 'node:util';
import { integer, optional } from './arg-values.js';
import {
  COMMAND_OPTIONS,
  GLOBAL_OPTIONS,
  OPTIONS,
  SECRET_OPTIONS,
  type OptionName,
  type OptionValues,
} from './cli-options.js';
import { conversationCommandOf, type ConversationCommand } from './conversation-args.js';
import { usageError } from './errors.js';
import { readingCommandOf, type ReadingCommand } from './reading-args.js';
import { scheduleCommandOf, type ScheduleCommand } from './schedule-args.js';
import { secretCommandOf, type SecretCommand } from './secret-args.js';
import { serverCommandOf, type ServerCommand } from './server-args.js';
import { specCommandOf, type SpecCommand } from './spec-args.js';
import { tapCommandOf, type TapCommand } from './tap-args.js';
import { webhookCommandOf, type WebhookCommand } from './webhook-args.js';

/** `--url` / `--api-key` as given on the command line (the environment and config file come later). */
export type ConnectionFlags = { readonly url?: string; readonly apiKey?: string };

export type Command =
  /** `--help`: all commands, or (`flotilla send --help`, `flotilla help send`) one command's. */
  | { readonly name: 'help'; readonly topic?: string }
  | { readonly name: 'version' }
  | ConversationCommand
  | ReadingCommand
  | SpecCommand
  | ServerCommand
  | SecretCommand
  | TapCommand
  | WebhookCommand
  | ScheduleCommand;

export type CommandName = Command['name'];

export type ParsedArgs = { readonly command: Command; readonly connection: ConnectionFlags };

/** Parses the command line. Throws CliError('usage') naming what is wrong. */
export function parseCliArgs(argv: readonly string[]): ParsedArgs {
  let values: OptionValues;
  let positionals: string[];
  try {
    const options = commandWord(argv) === 'secret' ? SECRET_OPTIONS : OPTIONS;
    ({ values, positionals } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true }) as {
      values: OptionValues;
      positionals: string[];
    });
  } catch (error) {
    throw usageError((error as Error).message);
  }
  const connection: ConnectionFlags = {
    ...(values.url === undefined ? {} : { url: values.url }),
    ...(values['api-key'] === undefined ? {} : { apiKey: values['api-key'] }),
  };
  const [name, ...rest] = positionals;
  if (values.version) return { command: { name: 'version' }, connection };
  if (values.help || name === 'help') {
    const topic = name === 'help' ? rest[0] : name;
    if (topic !== undefined && COMMAND_OPTIONS[topic] === undefined) throw usageError(`unknown command "${topic}"`);
    return { command: { name: 'help', ...optional('topic', topic) }, connection };
  }
  if (name === undefined) throw usageError('no command given');
  const allowed = COMMAND_OPTIONS[name];
  if (allowed === undefined) throw usageError(`unknown command "${name}"`);
  for (const option of Object.keys(values) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(option) && !allowed.includes(option))
      throw usageError(`${name} does not take --${option}`);
  }
  return { command: commandOf(name, rest, values), connection };
}

/** The command word: the first argument that is neither an option nor the value of a global one. */
function commandWord(argv: readonly string[]): string | undefined {
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index]!;
    if (argument === '--') return argv[index + 1];
    if (argument === '--url' || argument === '--api-key') index += 1;
    else if (!argument.startsWith('-')) return argument;
  }
  return undefined;
}

/**
 * The command `name` names, from its arguments and options: the commands of each group are built
 * by that group's parser (conversation-args, reading-args, spec-args, server-args, and the secret,
 * webhook, schedule and tap commands' own), after --follow and --verbose without --watch are refused.
 */
function commandOf(name: string, rest: readonly string[], values: OptionValues): Command {
  const watch = values.watch ? { follow: values.follow ?? false, verbose: values.verbose ?? false } : undefined;
  if ((values.follow || values.verbose) && !values.watch && name !== 'watch' && name !== 'tail' && name !== 'tap') {
    throw usageError(`--follow and --verbose go with --watch`);
  }
  const withWatch = watch ? { watch } : {};
  switch (name) {
    case 'create':
    case 'send':
    case 'run':
    case 'approve':
    case 'reject':
    case 'pause':
    case 'interrupt':
    case 'fork':
    case 'rewind':
    case 'ask':
      return conversationCommandOf(name, rest, values, withWatch);
    case 'watch':
    case 'tail':
    case 'list':
    case 'get':
    case 'events':
      return readingCommandOf(name, rest, values);
    case 'spec':
    case 'model':
    case 'replay':
      return specCommandOf(name, rest, values);
    case 'info':
    case 'keys':
      return serverCommandOf(name, rest, values);
    case 'secret':
      return secretCommandOf(rest, {
        ...(values.tenant === true ? { tenant: true } : {}),
        ...optional('value', values.value),
        ...optional('valueFile', values['value-file']),
        ...(values.json ? { json: true } : {}),
      });
    case 'webhook':
      return webhookCommandOf(rest, {
        ...optional('event', values.event),
        ...optional('description', values.description),
        ...optional('limit', integer('--limit', values.limit, 1, 500)),
        ...optional('json', values.json),
      });
    case 'schedule':
      return scheduleCommandOf(rest, {
        ...optional('cron', values.cron),
        ...optional('every', values.every),
        ...optional('at', values.at),
        ...optional('timeZone', values['time-zone']),
        ...optional('message', values.message),
        ...optional('to', values.to),
        ...optional('template', values.template),
        ...optional('title', values.title),
        ...optional('missed', values.missed),
        ...optional('description', values.description),
        ...optional('json', values.json),
      });
    case 'tap':
      return tapCommandOf(rest, {
        ...optional('tenant', typeof values.tenant === 'string' ? values.tenant : undefined),
        ...optional('conversation', values.conversation),
        ...optional('type', values.type),
        ...optional('source', values.source),
        ...optional('since', values.since),
        ...optional('startSeq', values['start-seq']),
        ...optional('new', values.new),
        ...optional('follow', values.follow),
        ...optional('name', values.name),
        ...optional('json', values.json),
      });
    default:
      throw usageError(`unknown command "${name}"`);
  }
}
