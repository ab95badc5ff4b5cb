/** `flotilla --help`. */
export const USAGE = `Usage: flotilla <command> [options]

Conversations:
  create [--id ID] [--title T] [--tag X]... [--message TEXT] [--run] [--watch]
                                   create a conversation; prints its id
  send ID TEXT [--run] [--watch]   send a user message (--run starts the agent)
  run ID [--watch]                 start (or continue) the agent
  approve ID [--watch]             approve the actions awaiting confirmation
  reject ID --reason R [--watch]   reject them, telling the agent why
  pause ID [--reason R]            pause after the current step
  interrupt ID [--reason R]        stop the in-flight LLM call or tool now
  list [--status S] [--limit N] [--json]
  get ID [--json]
  events ID [--type a,b] [--text T] [--after-seq N] [--limit N] [--json]

Following:
  watch ID [--after-seq N] [--follow] [--verbose]
                                   show events as they happen; exits when the conversation
                                   comes to rest (finished, error, stuck, paused, idle,
                                   waiting for confirmation) unless --follow
  tail ID [--after-seq N] [--follow]
                                   every event as one JSON line; stops at the end of the log
                                   unless --follow

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

Server:
  info [--json]                    what the gateway offers
  keys create --tenant T --name N [--json]
                                   mint an API key for a tenant (needs the admin key)

Connection (each: flag, else environment, else .flotilla/cli.json in the current directory):
  --url URL                        gateway URL        FLOTILLA_URL       "url"
  --api-key KEY                    API key            FLOTILLA_API_KEY   "api_key"

  -h, --help                       show this help

Exit status: 0 success, 1 the gateway refused or failed (error: <code>: <message>), 2 usage or
configuration error, 130 interrupted.
`;
