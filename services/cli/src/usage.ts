/** `flotilla --help`. */
export const USAGE = `Usage: flotilla <command> [options]

Conversations:
  create [--id ID] [--title T] [--tag X]... [--message TEXT] [--run] [--watch]
         [--template NAME] [--spec FILE]
                                   create a conversation; prints its id. Its agent: the
                                   operator's template NAME (flotilla info lists them), and/or
                                   the spec fields in FILE (JSON) over it
  send ID TEXT [--image FILE]... [--run] [--watch]
       [--on-busy enqueue|reject|interrupt|rollback]
                                   send a user message (--run starts the agent), with images
                                   (png, jpeg, gif, webp; TEXT may be left out with --image);
                                   TEXT - reads the message from standard input; --on-busy: what
                                   it does to a run in progress (default: the spec's on_busy)
  run ID [--watch]                 start (or continue) the agent
  approve ID [--watch]             approve the actions awaiting confirmation
  reject ID --reason R [--watch]   reject them, telling the agent why
  pause ID [--reason R]            pause after the current step
  interrupt ID [--reason R]        stop the in-flight LLM call or tool now
  list [--status S] [--limit N] [--json]
  get ID [--json]
  events ID [--type a,b] [--text T] [--after-seq N] [--limit N] [--json]
  fork ID [--at-seq N] [--id CHILD] [--title T] [--message TEXT] [--run] [--watch]
                                   a new conversation from ID's view after event N (default
                                   its last); prints the child's id
  rewind ID --to-seq N [--reason R]
                                   go on from after event N: later events leave the view
                                   (they stay in the log)
  ask ID QUESTION                  a side question answered by the conversation's model from
                                   its view; nothing is logged

Agent spec (how the conversation's steps are made; each change applies from the next step):
  spec ID [--json]                 the spec in force: model, tools, policies, limits
  spec ID [--template NAME] [--set PATH=VALUE]... [--spec FILE] [--reason R]
                                   change it: a template, and/or fields over the current spec
                                   (--set llm.profile=fast, --set 'tools=["terminal","finish"]';
                                   a VALUE that is JSON is that value; each top-level field
                                   given replaces the current one whole, but an llm of tuning
                                   only, e.g. --set llm.temperature=0.5, tunes the model in force)
  model ID PROFILE [--reason R]    switch the model to the operator's profile PROFILE
  replay ID [--check FILE]         rebuild every step's model request from the log alone: one
                                   JSON line each (seq, spec_seq, provider, model, body);
                                   --check compares them, byte for byte, with the requests in
                                   FILE (JSON lines with "body" and optionally "seq"); exit 1
                                   when one differs

Following:
  watch ID [--after-seq N] [--follow] [--verbose]
                                   show events as they happen; exits when the conversation
                                   comes to rest (finished, error, stuck, paused, idle,
                                   waiting for confirmation) unless --follow
  tail ID [--after-seq N] [--follow]
                                   every event as one JSON line; stops at the end of the log
                                   unless --follow

Taps (straight from NATS with a tap's read-only credential, not through the gateway; see
\`flotilla tap --help\` for where it finds them):
  tap [--tenant T] [--conversation ID]... [--type a,b] [--source s,...]
      [--since TIME|DURATION | --start-seq N | --new] [--follow] [--name NAME] [--json]
                                   every event of every conversation (or of the filters), in
                                   stream order: JSON lines on a pipe, readable on a terminal;
                                   from the start, a time (2026-11-29T21:00:00Z, 10m, 2h) or a
                                   stream position; --follow keeps reading; --name makes it
                                   durable: started again, it resumes where it stopped. Invalid
                                   messages are reported on stderr, never printed

Secrets (the sandbox gets each as the environment variable NAME; values are never shown):
  secret set ID NAME [--value-file F]
                                   set a secret of a conversation; the value is read from
                                   stdin (typed without echo on a terminal; one final newline
                                   dropped) or, exactly, from file F. --value V works too, but
                                   leaves V in your shell history
  secret rm ID NAME                remove it
  secret ls ID [--json]            the names of a conversation's secrets
  secret set|rm|ls --tenant [NAME] the same for your tenant's defaults, which every
                                   conversation gets unless it sets the same NAME

Webhooks (signed POSTs of your conversations' events to your URL, at least once; docs/api.md):
  webhook add URL --event KIND[,KIND]... [--description D] [--json]
                                   register one; KIND: status_changed, confirmation_pending,
                                   finished (or conversation.<kind>). Prints its id, then its
                                   signing secret, shown only this once
  webhook list [--json]            your webhooks
  webhook rm ID                    remove one, with its dead letters
  webhook dead ID [--limit N] [--json]
                                   its deliveries that failed every attempt, the latest first

Schedules (a conversation created, or a message sent, on a schedule; docs/api.md):
  schedule add WHEN --message TEXT [--template T] [--title T] [--to ID]
               [--missed run_once|skip] [--description D] [--json]
                                   WHEN: --cron "SEC MIN HOUR DOM MON DOW" [--time-zone TZ],
                                   --every 30m, or --at 2026-12-24T18:00:00Z. Each run creates a
                                   conversation with the message and runs it, or with --to ID
                                   sends the message to that conversation and runs it
  schedule list [--json]           your schedules, their next and last runs
  schedule get ID [--json]         one, with its last run's outcome or error
  schedule pause|resume|run|rm ID  stop its runs, restart them, run it now, delete it

Server:
  info [--json]                    what the gateway offers
  keys create --tenant T --name N [--json]
                                   mint an API key for a tenant (needs the admin key)

Connection (each: flag, else environment, else .flotilla/cli.json in the current directory):
  --url URL                        gateway URL        FLOTILLA_URL       "url"
  --api-key KEY                    API key            FLOTILLA_API_KEY   "api_key"

  -h, --help                       show this help (after a command: that command's)
  -V, --version                    the CLI's version

Exit status: 0 success, 1 the gateway refused or failed (error: <code>: <message>), 2 usage or
configuration error, 130 interrupted.
`;

/**
 * One command's entries of USAGE (`flotilla send --help`): each line that starts the command's
 * entry (two spaces, then the command's word) with the lines that continue it, then the
 * connection options and the exit status, which every command shares.
 */
export function commandUsage(command: string): string {
  const lines = USAGE.split('\n');
  const entries: string[] = [];
  let inEntry = false;
  for (const line of lines) {
    const starts = /^  \S/.test(line);
    if (starts) inEntry = line.slice(2).split(/[\s|]/, 1)[0] === command;
    else if (!/^ {3,}\S/.test(line)) inEntry = false;
    if (inEntry) entries.push(line);
  }
  // a tap reads NATS, not the gateway: its own settings instead of --url and --api-key
  const shared =
    command === 'tap'
      ? `${TAP_CONNECTION}\n${USAGE.slice(USAGE.indexOf('Exit status:'))}`
      : USAGE.slice(USAGE.indexOf('Connection ('));
  return `Usage: flotilla ${command} …\n\n${entries.join('\n')}\n\n${shared}`;
}

/** Where `flotilla tap` finds its NATS server and credential. */
const TAP_CONNECTION = `NATS (each: environment, else .flotilla/tap.json in the current directory, or in $FLOTILLA_HOME,
which ./dev up writes: its nats-server's URL and the read-only tap user's password file):
  FLOTILLA_NATS_URL                the NATS server(s)
  FLOTILLA_NATS_USER with FLOTILLA_NATS_PASSWORD or FLOTILLA_NATS_PASSWORD_FILE,
  FLOTILLA_NATS_NKEY_SEED_FILE or FLOTILLA_NATS_CREDS_FILE
                                   the tap's credential (tap.json's only for its own server)
  FLOTILLA_STREAM, FLOTILLA_SUBJECT_PREFIX
                                   the events stream and its subjects (defaults: Flotilla's)

  -h, --help                       show this help
`;
