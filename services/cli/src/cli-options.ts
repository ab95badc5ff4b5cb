/** How to follow a conversation after a command (`--watch`), or in `watch` itself. */
export type FollowOptions = { readonly follow: boolean; readonly verbose: boolean };

/** Every option of the command line (node:util parseArgs' configuration); which command takes which is COMMAND_OPTIONS. */
export const OPTIONS = {
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
export const SECRET_OPTIONS = { ...OPTIONS, tenant: { type: 'boolean' } } as const;

export type OptionName = keyof typeof OPTIONS;
/** The options' values as parseArgs gives them (`--tenant` a string, or for `secret` a flag). */
export type OptionValues = Omit<
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

/** The options every command takes. */
export const GLOBAL_OPTIONS: readonly OptionName[] = ['url', 'api-key', 'help', 'version'];
const WATCHING: readonly OptionName[] = ['watch', 'follow', 'verbose'];

/** The options each command accepts besides the global ones. */
export const COMMAND_OPTIONS: Record<string, readonly OptionName[]> = {
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
