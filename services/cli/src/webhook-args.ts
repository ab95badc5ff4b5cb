import { WEBHOOK_EVENT_TYPES, WebhookId, WebhookUrl, type WebhookEventType } from '@flotilla/api';
import { usageError } from './errors.js';

export type WebhookCommand =
  | {
      readonly name: 'webhook-add';
      readonly url: string;
      readonly events: readonly WebhookEventType[];
      readonly description?: string;
      readonly json: boolean;
    }
  | { readonly name: 'webhook-list'; readonly json: boolean }
  | { readonly name: 'webhook-rm'; readonly id: string }
  | { readonly name: 'webhook-dead'; readonly id: string; readonly limit: number; readonly json: boolean };

export type WebhookFlags = {
  readonly event?: readonly string[];
  readonly description?: string;
  readonly limit?: number;
  readonly json?: boolean;
};

const SHAPE =
  'the webhook command is: flotilla webhook add URL --event KIND[,KIND], webhook list, webhook rm ID, or webhook dead ID';
/** A kind by its full name (`conversation.finished`) or its last part (`finished`). */
const SHORT = new Map(WEBHOOK_EVENT_TYPES.map((kind) => [kind.slice(kind.indexOf('.') + 1), kind]));

/** `webhook add|list|rm|dead …` (the words after `webhook`). */
export function webhookCommandOf(rest: readonly string[], flags: WebhookFlags): WebhookCommand {
  const [sub, ...words] = rest;
  const only = (allowed: readonly (keyof WebhookFlags)[]): void => {
    for (const flag of ['event', 'description', 'limit', 'json'] as const) {
      if (flags[flag] !== undefined && !allowed.includes(flag))
        throw usageError(`webhook ${sub} does not take --${flag}`);
    }
  };
  const id = (): string => {
    if (words.length !== 1)
      throw usageError(
        `webhook ${sub} needs the webhook's ID (flotilla webhook list shows them), e.g. flotilla webhook ${sub} wh_0123…`,
      );
    if (!WebhookId.safeParse(words[0]).success)
      throw usageError(
        `ID "${words[0]}" is not a webhook id: wh_ and 32 hex digits (flotilla webhook list shows them)`,
      );
    return words[0]!;
  };
  switch (sub) {
    case 'add': {
      only(['event', 'description', 'json']);
      if (words.length !== 1)
        throw usageError(
          'webhook add needs the URL, e.g. flotilla webhook add https://hooks.example.com/flotilla --event finished',
        );
      const url = WebhookUrl.safeParse(words[0]);
      if (!url.success) throw usageError(`URL "${words[0]}" ${url.error.issues[0]?.message ?? 'is not valid'}`);
      const given = (flags.event ?? [])
        .flatMap((value) => value.split(','))
        .map((kind) => kind.trim())
        .filter(Boolean);
      if (given.length === 0)
        throw usageError(
          `webhook add needs --event: one or more of ${WEBHOOK_EVENT_TYPES.join(', ')} (or their last part: ${[...SHORT.keys()].join(', ')})`,
        );
      const events = [
        ...new Set(
          given.map(
            (kind): WebhookEventType =>
              SHORT.get(kind) ?? WEBHOOK_EVENT_TYPES.find((known) => known === kind) ?? unknownKind(kind),
          ),
        ),
      ];
      return {
        name: 'webhook-add',
        url: url.data,
        events,
        ...(flags.description === undefined ? {} : { description: flags.description }),
        json: flags.json ?? false,
      };
    }
    case 'list':
      only(['json']);
      if (words.length > 0) throw usageError(`webhook list: unexpected argument "${words[0]}"`);
      return { name: 'webhook-list', json: flags.json ?? false };
    case 'rm':
      only([]);
      return { name: 'webhook-rm', id: id() };
    case 'dead':
      only(['limit', 'json']);
      return { name: 'webhook-dead', id: id(), limit: flags.limit ?? 100, json: flags.json ?? false };
    default:
      throw usageError(SHAPE);
  }
}

function unknownKind(kind: string): never {
  throw usageError(`--event: unknown event kind "${kind}"; the kinds are ${WEBHOOK_EVENT_TYPES.join(', ')}`);
}
