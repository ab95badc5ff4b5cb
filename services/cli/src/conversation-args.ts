import { MAX_IMAGES_PER_MESSAGE, OnBusy } from '@flotilla/events';
import { conversationId, expectPositionals, integer, optional, singleId, specName } from './arg-values.js';
import type { FollowOptions, OptionValues } from './cli-options.js';
import { usageError } from './errors.js';

/**
 * The commands that act on one conversation: create it, send it a message, run, approve, reject,
 * pause or interrupt its agent, fork or rewind it, or ask it a side question.
 */
export type ConversationCommand =
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
  | { readonly name: 'ask'; readonly id: string; readonly question: string };

/** The command `name` from its arguments; `withWatch` holds --watch's FollowOptions when given. */
export function conversationCommandOf(
  name: ConversationCommand['name'],
  rest: readonly string[],
  values: OptionValues,
  withWatch: { readonly watch?: FollowOptions },
): ConversationCommand {
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
  }
}
