import { parseArgs } from 'node:util';
import {
  ConversationStatus,
  EVENT_TYPES,
  isSubjectToken,
  MAX_IMAGES_PER_MESSAGE,
  OnBusy,
  SpecName,
  type EventType,
} from '@flotilla/events';
import { usageError } from './errors.js';
import { scheduleCommandOf, type ScheduleCommand } from './schedule-args.js';
import { secretCommandOf, type SecretCommand } from './secret-args.js';
import { tapCommandOf, type TapCommand } from './tap-args.js';
import { webhookCommandOf, type WebhookCommand } from './webhook-args.js';

/** `--url` / `--api-key` as given on the command line (the environment and config file come later). */
export type ConnectionFlags = { readonly url?: string; readonly apiKey?: string };

/** How to follow a conversation after a command (`--watch`), or in `watch` itself. */
export type FollowOptions = { readonly follow: boolean; readonly verbose: boolean };

export type Command =
  /** `--help`: all commands, or (`flotilla send --help`, `flotilla help send`) one command's. */
  | { readonly name: 'help'; readonly topic?: string }
  | { readonly name: 'version' }
  | {
      readonly name: 'create';
      readonly id?: string;
      readonly title?: string;
      readonly tags: readonly string[];
      readonly message?: string;
      readonly run: boolean;
      readonly watch?: FollowOptions;
      /** An operator's template to start from, and a file of spec fields over it. */
      readonly template?: string;
      readonly specFile?: string;
    }
  /** `textFromStdin`: TEXT was `-`, the message is read from standard input (`text` is then empty). */
  | {
      readonly name: 'send';
      readonly id: string;
      readonly text: string;
      readonly textFromStdin?: true;
      readonly images: readonly string[];
      readonly run: boolean;
      readonly onBusy?: OnBusy;
      readonly watch?: FollowOptions;
    }
  | { readonly name: 'run' | 'approve'; readonly id: string; readonly watch?: FollowOptions }
  | { readonly name: 'reject'; readonly id: string; readonly reason: string; readonly watch?: FollowOptions }
  | { readonly name: 'pause' | 'interrupt'; readonly id: string; readonly reason?: string }
  | ({ readonly name: 'watch'; readonly id: string; readonly afterSeq: number } & FollowOptions)
  | { readonly name: 'tail'; readonly id: string; readonly afterSeq: number; readonly follow: boolean }
  | { readonly name: 'list'; readonly status?: ConversationStatus; readonly limit: number; readonly json: boolean }
  | { readonly name: 'get'; readonly id: string; readonly json: boolean }
  | {
      readonly name: 'events';
      readonly id: string;
      readonly types?: readonly EventType[];
      readonly text?: string;
      readonly afterSeq?: number;
      readonly limit: number;
      readonly json: boolean;
    }
  | { readonly name: 'info'; readonly json: boolean }
  /** Shows the spec in force, or (with a template, settings or a file) changes it from the next step on. */
  | {
      readonly name: 'spec';
      readonly id: string;
      readonly json: boolean;
      readonly template?: string;
      readonly settings: readonly string[];
      readonly specFile?: string;
      readonly reason?: string;
    }
  | { readonly name: 'model'; readonly id: string; readonly profile: string; readonly reason?: string }
  | { readonly name: 'replay'; readonly id: string; readonly check?: string }
  /** A new conversation from this one's view after `atSeq` (default its last event). */
  | {
      readonly name: 'fork';
      readonly id: string;
      readonly childId?: string;
      readonly atSeq?: number;
      readonly title?: string;
      readonly message?: string;
      readonly run: boolean;
      readonly watch?: FollowOptions;
    }
  | { readonly name: 'rewind'; readonly id: string; readonly toSeq: number; readonly reason?: string }
  | { readonly name: 'ask'; readonly id: string; readonly question: string }
  | { readonly name: 'keys-create'; readonly tenant: string; readonly keyName: string; readonly json: boolean }
  | SecretCommand
  | TapCommand
  | WebhookCommand
  | ScheduleCommand;

export type CommandName = Command['name'];

export type ParsedArgs = { readonly command: Command; readonly connection: ConnectionFlags };

const OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
  id: { type: 'string' },
  title: { type: 'string' },
  tag: { type: 'string', multiple: true },
  message: { type: 'string' },
  run: { type: 'boolean' },
  watch: { type: 'boolean' },
  follow: { type: 'boolean' },
  verbose: { type: 'boolean' },
  'after-seq': { type: 'string' },
  reason: { type: 'string' },
  status: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  type: { type: 'string' },
  text: { type: 'string' },
  tenant: { type: 'string' },
  name: { type: 'string' },
  value: { type: 'string' },
  'value-file': { type: 'string' },
  template: { type: 'string' },
  spec: { type: 'string' },
  set: { type: 'string', multiple: true },
  check: { type: 'string' },
  conversation: { type: 'string', multiple: true },
  source: { type: 'string' },
  since: { type: 'string' },
  'start-seq': { type: 'string' },
  'at-seq': { type: 'string' },
  'to-seq': { type: 'string' },
  new: { type: 'boolean' },
  event: { type: 'string', multiple: true },
  description: { type: 'string' },
  image: { type: 'string', multiple: true },
  'on-busy': { type: 'string' },
  cron: { type: 'string' },
  every: { type: 'string' },
  at: { type: 'string' },
  'time-zone': { type: 'string' },
  to: { type: 'string' },
  missed: { type: 'string' },
} as const;
/** `secret … --tenant` is a flag (the defaults of the key's own tenant), where `keys create --tenant T` takes a value. */
const SECRET_OPTIONS = { ...OPTIONS, tenant: { type: 'boolean' } } as const;

type OptionName = keyof typeof OPTIONS;
type Values = Omit<
  {
    [K in OptionName]?: (typeof OPTIONS)[K] extends { multiple: true }
      ? string[]
      : (typeof OPTIONS)[K]['type'] extends 'string'
        ? string
        : boolean;
  },
  'tenant'
> & {
  tenant?: string | boolean;
};

const GLOBAL: readonly OptionName[] = ['url', 'api-key', 'help', 'version'];
const WATCHING: readonly OptionName[] = ['watch', 'follow', 'verbose'];

/** The options each command accepts besides the global ones. */
const COMMAND_OPTIONS: Record<string, readonly OptionName[]> = {
  create: ['id', 'title', 'tag', 'message', 'run', 'template', 'spec', ...WATCHING],
  send: ['run', 'image', 'on-busy', ...WATCHING],
  run: WATCHING,
  approve: WATCHING,
  reject: ['reason', ...WATCHING],
  pause: ['reason'],
  interrupt: ['reason'],
  watch: ['after-seq', 'follow', 'verbose'],
  tail: ['after-seq', 'follow'],
  list: ['status', 'limit', 'json'],
  get: ['json'],
  events: ['type', 'text', 'after-seq', 'limit', 'json'],
  info: ['json'],
  spec: ['json', 'template', 'set', 'spec', 'reason'],
  model: ['reason'],
  replay: ['check'],
  fork: ['id', 'at-seq', 'title', 'message', 'run', ...WATCHING],
  rewind: ['to-seq', 'reason'],
  ask: [],
  keys: ['tenant', 'name', 'json'],
  secret: ['tenant', 'value', 'value-file', 'json'],
  tap: ['tenant', 'conversation', 'type', 'source', 'since', 'start-seq', 'new', 'follow', 'name', 'json'],
  webhook: ['event', 'description', 'limit', 'json'],
  schedule: ['cron', 'every', 'at', 'time-zone', 'message', 'to', 'template', 'title', 'missed', 'description', 'json'],
};

const MAX_LIST = 1_000;
const MAX_EVENTS = 100_000;

/** Parses the command line. Throws CliError('usage') naming what is wrong. */
export function parseCliArgs(argv: readonly string[]): ParsedArgs {
  let values: Values;
  let positionals: string[];
  try {
    const options = commandWord(argv) === 'secret' ? SECRET_OPTIONS : OPTIONS;
    ({ values, positionals } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true }) as {
      values: Values;
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
    if (!GLOBAL.includes(option) && !allowed.includes(option)) throw usageError(`${name} does not take --${option}`);
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

function commandOf(name: string, rest: readonly string[], values: Values): Command {
  const watch = values.watch ? { follow: values.follow ?? false, verbose: values.verbose ?? false } : undefined;
  if ((values.follow || values.verbose) && !values.watch && name !== 'watch' && name !== 'tail' && name !== 'tap') {
    throw usageError(`--follow and --verbose go with --watch`);
  }
  const withWatch = watch ? { watch } : {};
  switch (name) {
    case 'create': {
      expectPositionals(name, rest, []);
      if (values.run && values.message === undefined)
        throw usageError('create --run needs --message (the agent needs something to do)');
      if (values.id !== undefined) conversationId(values.id, '--id');
      return {
        name,
        ...optional('id', values.id),
        ...optional('title', values.title),
        tags: values.tag ?? [],
        ...optional('message', values.message),
        run: values.run ?? false,
        ...withWatch,
        ...optional('template', values.template === undefined ? undefined : specName(values.template, '--template')),
        ...optional('specFile', values.spec),
      };
    }
    case 'fork': {
      const id = singleId(name, rest);
      if (values.run && values.message === undefined)
        throw usageError('fork --run needs --message (the agent needs something to do)');
      if (values.id !== undefined) conversationId(values.id, '--id');
      const atSeq = integer('--at-seq', values['at-seq'], 1, Number.MAX_SAFE_INTEGER);
      return {
        name,
        id,
        ...optional('childId', values.id),
        ...optional('atSeq', atSeq),
        ...optional('title', values.title),
        ...optional('message', values.message),
        run: values.run ?? false,
        ...withWatch,
      };
    }
    case 'rewind': {
      const id = singleId(name, rest);
      const toSeq = integer('--to-seq', values['to-seq'], 1, Number.MAX_SAFE_INTEGER);
      if (toSeq === undefined)
        throw usageError('rewind needs --to-seq N (the event to go on after: flotilla events ID lists them)');
      return { name, id, toSeq, ...optional('reason', values.reason) };
    }
    case 'ask': {
      if (rest.length < 2)
        throw usageError('ask needs ID and QUESTION, e.g. flotilla ask my-conversation "what is left to do?"');
      const [id, ...words] = rest as [string, ...string[]];
      const question = words.join(' ');
      if (question.trim() === '') throw usageError('ask: QUESTION is empty');
      return { name, id: conversationId(id), question };
    }
    case 'send': {
      const images = values.image ?? [];
      if (rest.length < (images.length > 0 ? 1 : 2))
        throw usageError(
          'send needs ID and TEXT (or --image FILE), e.g. flotilla send my-conversation "fix the failing test"',
        );
      const [id, ...words] = rest as [string, ...string[]];
      // TEXT `-`: the message is standard input (`git log | flotilla send ID -`)
      const textFromStdin = words.length === 1 && words[0] === '-';
      const text = textFromStdin ? '' : words.join(' ');
      if (!textFromStdin && text.trim() === '' && images.length === 0) throw usageError('send: TEXT is empty');
      if (images.length > MAX_IMAGES_PER_MESSAGE)
        throw usageError(`send: at most ${MAX_IMAGES_PER_MESSAGE} --image files a message`);
      const onBusy = values['on-busy'] === undefined ? undefined : OnBusy.safeParse(values['on-busy']);
      if (onBusy && !onBusy.success) throw usageError(`send: --on-busy must be one of ${OnBusy.options.join(', ')}`);
      return {
        name,
        id: conversationId(id),
        text,
        ...(textFromStdin ? { textFromStdin: true as const } : {}),
        images,
        run: values.run ?? false,
        ...(onBusy ? { onBusy: onBusy.data } : {}),
        ...withWatch,
      };
    }
    case 'run':
    case 'approve':
      return { name, id: singleId(name, rest), ...withWatch };
    case 'reject': {
      const id = singleId(name, rest);
      if (values.reason === undefined || values.reason.trim() === '')
        throw usageError('reject needs --reason, e.g. --reason "do not delete files"');
      return { name, id, reason: values.reason, ...withWatch };
    }
    case 'pause':
    case 'interrupt':
      return { name, id: singleId(name, rest), ...optional('reason', values.reason) };
    case 'watch':
      return {
        name,
        id: singleId(name, rest),
        afterSeq: afterSeqOf(values) ?? 0,
        follow: values.follow ?? false,
        verbose: values.verbose ?? false,
      };
    case 'tail':
      return { name, id: singleId(name, rest), afterSeq: afterSeqOf(values) ?? 0, follow: values.follow ?? false };
    case 'list': {
      expectPositionals(name, rest, []);
      let status: ConversationStatus | undefined;
      if (values.status !== undefined) {
        const parsed = ConversationStatus.safeParse(values.status);
        if (!parsed.success) throw usageError(`--status must be one of ${ConversationStatus.options.join(', ')}`);
        status = parsed.data;
      }
      return {
        name,
        ...optional('status', status),
        limit: integer('--limit', values.limit, 1, MAX_LIST) ?? 50,
        json: values.json ?? false,
      };
    }
    case 'get':
      return { name, id: singleId(name, rest), json: values.json ?? false };
    case 'events':
      return {
        name,
        id: singleId(name, rest),
        ...optional('types', values.type === undefined ? undefined : eventTypes(values.type)),
        ...optional('text', values.text),
        ...optional('afterSeq', afterSeqOf(values)),
        limit: integer('--limit', values.limit, 1, MAX_EVENTS) ?? 100,
        json: values.json ?? false,
      };
    case 'info':
      expectPositionals(name, rest, []);
      return { name, json: values.json ?? false };
    case 'spec': {
      const id = singleId(name, rest);
      const changes = values.template !== undefined || values.set !== undefined || values.spec !== undefined;
      if (!changes && values.reason !== undefined)
        throw usageError('spec --reason goes with a change: --template, --set or --spec');
      if (changes && values.json)
        throw usageError('spec --json shows the spec; a change prints the new spec as the gateway made it');
      return {
        name,
        id,
        json: values.json ?? false,
        ...optional('template', values.template === undefined ? undefined : specName(values.template, '--template')),
        settings: values.set ?? [],
        ...optional('specFile', values.spec),
        ...optional('reason', values.reason),
      };
    }
    case 'model': {
      if (rest.length !== 2)
        throw usageError(
          'model needs ID and PROFILE, e.g. flotilla model my-conversation fast (flotilla info lists the profiles)',
        );
      return {
        name,
        id: conversationId(rest[0]!),
        profile: specName(rest[1]!, 'PROFILE'),
        ...optional('reason', values.reason),
      };
    }
    case 'replay':
      return { name, id: singleId(name, rest), ...optional('check', values.check) };
    case 'keys': {
      if (rest[0] !== 'create' || rest.length !== 1)
        throw usageError('the keys command is: flotilla keys create --tenant T --name N');
      if (typeof values.tenant !== 'string' || !isSubjectToken(values.tenant))
        throw usageError('keys create needs --tenant: 1-64 characters of A-Z a-z 0-9 _ -');
      if (values.name === undefined || values.name.trim() === '')
        throw usageError('keys create needs --name, e.g. --name ci');
      return { name: 'keys-create', tenant: values.tenant, keyName: values.name, json: values.json ?? false };
    }
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

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function expectPositionals(name: string, rest: readonly string[], expected: readonly string[]): void {
  if (rest.length !== expected.length) {
    const extra = rest.slice(expected.length);
    throw usageError(
      extra.length > 0 ? `${name}: unexpected argument "${extra[0]}"` : `${name} needs ${expected.join(' ')}`,
    );
  }
}

function singleId(name: string, rest: readonly string[]): string {
  if (rest.length === 0) throw usageError(`${name} needs the conversation ID, e.g. flotilla ${name} my-conversation`);
  expectPositionals(name, rest, ['ID']);
  return conversationId(rest[0]!);
}

function conversationId(value: string, what = 'ID'): string {
  if (!isSubjectToken(value))
    throw usageError(`${what} "${value}" is not a conversation id: 1-64 characters of A-Z a-z 0-9 _ -`);
  return value;
}

/** A template's or profile's name, as the operator's catalog spells them. */
function specName(value: string, what: string): string {
  const parsed = SpecName.safeParse(value);
  if (!parsed.success)
    throw usageError(
      `${what} "${value}" is not a template or profile name: it ${parsed.error.issues[0]?.message ?? 'is not valid'}`,
    );
  return value;
}

function afterSeqOf(values: Values): number | undefined {
  return integer('--after-seq', values['after-seq'], 0, Number.MAX_SAFE_INTEGER);
}

function integer(option: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max)
    throw usageError(`${option} must be a whole number from ${min} to ${max}, not "${value}"`);
  return number;
}

function eventTypes(value: string): EventType[] {
  const types = value.split(',').map((type) => type.trim());
  for (const type of types) {
    if (!(EVENT_TYPES as readonly string[]).includes(type))
      throw usageError(`--type: unknown event type "${type}"; known types: ${EVENT_TYPES.join(', ')}`);
  }
  return types as EventType[];
}
