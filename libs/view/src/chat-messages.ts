import type { ActionEvent, ContentPart as EventContentPart, Reasoning as EventReasoning } from '@flotilla/events';
import type {
  AssistantMessage,
  ChatMessage,
  ContentPart,
  Reasoning,
  SystemBlock,
  ThinkingBlock,
  ToolCall,
  ToolMessage,
  UserMessage,
} from '@flotilla/llm';
import { isResultEvent, type ResultEvent, type View, type ViewItem } from './types.js';

const NO_OUTPUT = '(no output)';

function text(value: string): ContentPart {
  return { type: 'text', text: value };
}

function toContent(parts: readonly EventContentPart[]): ContentPart[] {
  return parts.map((part) => {
    if (part.type === 'text') return text(part.text);
    return {
      type: 'image',
      ...(part.url === undefined ? {} : { url: part.url }),
      ...(part.data === undefined ? {} : { data: part.data }),
      ...(part.media_type === undefined ? {} : { mediaType: part.media_type }),
      // a stored image's bytes are read in where the model is called (withStoredImages)
      ...(part.sha256 === undefined
        ? {}
        : {
            stored: {
              sha256: part.sha256,
              bytes: part.bytes ?? 0,
              ...(part.name === undefined ? {} : { name: part.name }),
            },
          }),
    };
  });
}

/** Joins the reasoning carried by the calls of one response (normally only the first has any). */
function mergeReasoning(reasonings: readonly (EventReasoning | undefined)[]): Reasoning | undefined {
  const texts: string[] = [];
  const thinkingBlocks: ThinkingBlock[] = [];
  const items: NonNullable<Reasoning['items']>[number][] = [];
  for (const reasoning of reasonings) {
    if (reasoning === undefined) continue;
    if (reasoning.text !== undefined) texts.push(reasoning.text);
    thinkingBlocks.push(...(reasoning.thinking_blocks ?? []));
    for (const item of reasoning.items ?? []) {
      items.push({
        id: item.id,
        ...(item.encrypted_content === undefined ? {} : { encryptedContent: item.encrypted_content }),
        ...(item.summary === undefined ? {} : { summary: item.summary }),
      });
    }
  }
  if (texts.length === 0 && thinkingBlocks.length === 0 && items.length === 0) return undefined;
  return {
    ...(texts.length === 0 ? {} : { text: texts.join('\n') }),
    ...(thinkingBlocks.length === 0 ? {} : { thinkingBlocks }),
    ...(items.length === 0 ? {} : { items }),
  };
}

function toolMessage(action: ActionEvent, result: ResultEvent): ToolMessage {
  const base = { role: 'tool', toolCallId: action.tool_call_id, toolName: action.tool_name } as const;
  if (result.type === 'observation') {
    const content = toContent(result.content);
    return {
      ...base,
      content: content.length === 0 ? [text(NO_OUTPUT)] : content,
      ...(result.is_error ? { isError: true } : {}),
    };
  }
  if (result.type === 'agent_error') return { ...base, content: [text(result.error)], isError: true };
  const who = result.rejection_source === 'hook' ? 'A hook' : 'The user';
  const reason = result.reason.trim() === '' ? '' : ` Reason: ${result.reason}`;
  return { ...base, content: [text(`${who} rejected this action; it was not run.${reason}`)] };
}

function answers(result: ResultEvent, action: ActionEvent): boolean {
  if (result.action_id !== undefined) return result.action_id === action.id;
  return result.tool_call_id === action.tool_call_id;
}

/**
 * One assistant message with every call of the response that has an answer, then one tool
 * message per answered call in call order. Calls without an answer and answers without a call
 * are left out, so the output stays valid even for a hand-made view.
 */
function batchMessages(actions: readonly ActionEvent[], results: readonly ResultEvent[]): ChatMessage[] {
  const answered: { action: ActionEvent; result: ResultEvent }[] = [];
  for (const action of actions) {
    const result = results.find((candidate) => answers(candidate, action));
    if (result !== undefined) answered.push({ action, result });
  }
  if (answered.length === 0) return [];
  const first = actions[0] as ActionEvent;
  const toolCalls: ToolCall[] = answered.map(({ action }) => ({
    id: action.tool_call_id,
    name: action.tool_name,
    arguments: action.arguments,
  }));
  const reasoning = mergeReasoning(actions.map((action) => action.reasoning));
  const assistant: AssistantMessage = {
    role: 'assistant',
    content: actions.flatMap((action) => toContent(action.thought)),
    toolCalls,
    ...(reasoning === undefined ? {} : { reasoning }),
    responseId: first.response_id,
  };
  return [assistant, ...answered.map(({ action, result }) => toolMessage(action, result))];
}

function itemMessage(item: ViewItem): ChatMessage | undefined {
  switch (item.type) {
    case 'system_prompt': {
      const content: SystemBlock[] = [{ text: item.static_prompt, cache: true }];
      if (item.dynamic_prompt !== undefined && item.dynamic_prompt !== '')
        content.push({ text: item.dynamic_prompt, cache: false });
      return { role: 'system', content };
    }
    case 'message': {
      const content = toContent([...item.content, ...(item.extended_content ?? [])]);
      if (item.role === 'user') return { role: 'user', content };
      const reasoning = mergeReasoning([item.reasoning]);
      return {
        role: 'assistant',
        content,
        toolCalls: [],
        ...(reasoning === undefined ? {} : { reasoning }),
        ...(item.response_id === undefined ? {} : { responseId: item.response_id }),
      };
    }
    case 'condensation_summary':
      return { role: 'user', content: [text(item.summary)] };
    case 'agent_error':
      return { role: 'user', content: [text(item.error)] };
    default:
      return undefined;
  }
}

// A step renders the whole view again, but its items are the same event objects as at the last
// step: what an item or a batch rendered to is kept beside it, so only new items are rendered.
// Messages are never changed after they are made, so sharing them between renders is safe.
const renderedItems = new WeakMap<ViewItem, ChatMessage | null>();
const renderedBatches = new WeakMap<
  ActionEvent,
  {
    readonly actions: readonly ActionEvent[];
    readonly results: readonly ResultEvent[];
    readonly messages: ChatMessage[];
  }
>();

function renderedItem(item: ViewItem): ChatMessage | undefined {
  let message = renderedItems.get(item);
  if (message === undefined) {
    message = itemMessage(item) ?? null;
    renderedItems.set(item, message);
  }
  return message ?? undefined;
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

function renderedBatch(actions: readonly ActionEvent[], results: readonly ResultEvent[]): ChatMessage[] {
  const first = actions[0]!;
  const known = renderedBatches.get(first);
  if (known && sameItems(known.actions, actions) && sameItems(known.results, results)) return known.messages;
  const messages = batchMessages(actions, results);
  renderedBatches.set(first, { actions, results, messages });
  return messages;
}

/**
 * Renders a view as provider-neutral chat messages: the system prompt as one system message
 * (static block cache-marked, dynamic block not), each batch as one assistant message with all
 * its calls followed by their tool results, summaries and free-standing errors as user turns,
 * and consecutive user turns merged. Messages that would have no content at all are left out.
 */
export function toChatMessages(view: View | readonly ViewItem[]): ChatMessage[] {
  return new ChatRenderer().render('items' in view ? view.items : view).messages;
}

export type RenderedChat = {
  readonly messages: ChatMessage[];
  /** The sum of `measure` over `messages`; undefined for a renderer without a measure. */
  readonly measured: number | undefined;
};

/** The renderer's state before one unit of items (a batch, or a single item) was rendered. */
type Checkpoint = { readonly start: number; readonly length: number; readonly users: readonly UserMessage[] };

const NO_USERS: readonly UserMessage[] = [];

/**
 * Renders a conversation's successive views as `toChatMessages` does, re-rendering only what
 * changed since the last call: a step's view is the last one with a few items appended, so the
 * messages of the common prefix are kept (the same objects) and only the unit holding its last
 * item and what follows are rendered again. Any other change (a condensation) re-renders from
 * where the views first differ. Keeps, per message, a running sum of `measure` (a token
 * estimate), so the total costs no pass over the history either.
 */
export class ChatRenderer {
  #items: readonly ViewItem[] = [];
  /** Coalesced messages of the units rendered so far, without the trailing run of user messages. */
  readonly #out: ChatMessage[] = [];
  /** Running sums of `measure` over `#out`. */
  readonly #sums: number[] = [];
  /** User messages waiting to be merged with the next ones. */
  #users: readonly UserMessage[] = NO_USERS;
  readonly #checkpoints: Checkpoint[] = [];

  constructor(private readonly measure?: (message: ChatMessage) => number) {}

  render(items: readonly ViewItem[]): RenderedChat {
    const previous = this.#items;
    let common = 0;
    const shorter = Math.min(previous.length, items.length);
    while (common < shorter && previous[common] === items[common]) common += 1;
    // the unit holding the last common item can grow (a batch gets its results): render it again
    let restart = this.#checkpoints.length;
    while (restart > 0 && this.#checkpoints[restart - 1]!.start >= common) restart -= 1;
    if (restart > 0 && common > 0) restart -= 1;
    const from = this.#checkpoints[restart];
    const position = from?.start ?? 0;
    this.#out.length = from?.length ?? 0;
    this.#sums.length = this.#out.length;
    this.#users = from?.users ?? NO_USERS;
    this.#checkpoints.length = restart;
    this.#items = items;
    this.#renderFrom(items, position);

    const messages = this.#out.slice();
    let measured = this.#sums.at(-1) ?? 0;
    const trailing = mergeUsers(this.#users);
    if (trailing) {
      messages.push(trailing);
      measured += this.measure?.(trailing) ?? 0;
    }
    return { messages, measured: this.measure ? measured : undefined };
  }

  #renderFrom(items: readonly ViewItem[], start: number): void {
    let position = start;
    while (position < items.length) {
      this.#checkpoints.push({ start: position, length: this.#out.length, users: this.#users });
      const item = items[position]!;
      if (item.type === 'action') {
        const actions: ActionEvent[] = [];
        while (position < items.length) {
          const next = items[position]!;
          if (next.type !== 'action' || next.response_id !== item.response_id) break;
          actions.push(next);
          position += 1;
        }
        const results: ResultEvent[] = [];
        while (position < items.length && isResultEvent(items[position]!)) {
          results.push(items[position] as ResultEvent);
          position += 1;
        }
        for (const message of renderedBatch(actions, results)) this.#add(message);
        continue;
      }
      position += 1;
      if (isResultEvent(item)) continue;
      const message = renderedItem(item);
      if (message !== undefined) this.#add(message);
    }
  }

  /** Appends one message, merging consecutive user messages and dropping empty assistant ones. */
  #add(message: ChatMessage): void {
    if (message.role === 'user') {
      this.#users = [...this.#users, message];
      return;
    }
    if (message.role === 'assistant' && message.content.length === 0 && message.toolCalls.length === 0) return;
    const users = mergeUsers(this.#users);
    this.#users = NO_USERS;
    if (users) this.#push(users);
    this.#push(message);
  }

  #push(message: ChatMessage): void {
    this.#out.push(message);
    this.#sums.push((this.#sums.at(-1) ?? 0) + (this.measure?.(message) ?? 0));
  }
}

/** What a run of user messages merged to, kept beside its first message (as batches are). */
const mergedRuns = new WeakMap<
  UserMessage,
  { readonly users: readonly UserMessage[]; readonly merged: UserMessage | undefined }
>();

/** One user message for a run of them (the same object for a run of one); none when all are empty. */
function mergeUsers(users: readonly UserMessage[]): UserMessage | undefined {
  if (users.length === 1) return users[0]!.content.length > 0 ? users[0] : undefined;
  if (users.length === 0) return undefined;
  const known = mergedRuns.get(users[0]!);
  if (known && sameItems(known.users, users)) return known.merged;
  const content = users.flatMap((user) => user.content);
  const merged: UserMessage | undefined = content.length > 0 ? { role: 'user', content } : undefined;
  mergedRuns.set(users[0]!, { users, merged });
  return merged;
}
