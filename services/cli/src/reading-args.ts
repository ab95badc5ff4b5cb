import { ConversationStatus, type EventType } from '@flotilla/events';
import { afterSeqOf, eventTypes, expectPositionals, integer, optional, singleId } from './arg-values.js';
import type { FollowOptions, OptionValues } from './cli-options.js';
import { usageError } from './errors.js';

/** The commands that read conversations: one's events as they happen, or as stored, and the list. */
export type ReadingCommand =
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
    };

const MAX_LIST = 1_000;
const MAX_EVENTS = 100_000;

/** The command `name` from its arguments. */
export function readingCommandOf(
  name: ReadingCommand['name'],
  rest: readonly string[],
  values: OptionValues,
): ReadingCommand {
  switch (name) {
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
  }
}
