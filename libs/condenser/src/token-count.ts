import { IMAGE_ESTIMATE_CHARACTERS, type ChatMessage, type ToolSchema } from '@flotilla/llm';
import { toChatMessages, viewBlocks, type View, type ViewItem } from '@flotilla/view';

/**
 * Counts the prompt tokens of messages and tools. Inject a real tokenizer, or the step's own
 * estimator, so the condenser and the step agree on when the view is too large.
 */
export type TokenCounter = (messages: readonly ChatMessage[], tools?: readonly ToolSchema[]) => number;

const MESSAGE_OVERHEAD_CHARACTERS = 16;

/** About four characters a token; provider-independent and good enough to plan a condensation. */
export const approximateTokens: TokenCounter = (messages, tools = []) => {
  let characters = 0;
  for (const message of messages) {
    characters += MESSAGE_OVERHEAD_CHARACTERS;
    if (message.role === 'system') {
      for (const block of message.content) characters += block.text.length;
      continue;
    }
    for (const part of message.content)
      characters += part.type === 'text' ? part.text.length : IMAGE_ESTIMATE_CHARACTERS;
    if (message.role !== 'assistant') continue;
    for (const call of message.toolCalls)
      characters += call.name.length + call.arguments.length + MESSAGE_OVERHEAD_CHARACTERS;
    characters += message.reasoning?.text?.length ?? 0;
    for (const block of message.reasoning?.thinkingBlocks ?? [])
      characters += block.type === 'thinking' ? block.thinking.length : block.data.length;
  }
  for (const tool of tools)
    characters += tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length;
  return Math.ceil(characters / 4);
};

/** The tools a view's system prompt offers, as the model is shown them. */
export function viewTools(items: readonly ViewItem[]): ToolSchema[] {
  const first = items[0];
  if (first?.type !== 'system_prompt') return [];
  return first.tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters }));
}

/** Token weights of a view: the system prompt with its tools, and every block after it. */
export type ViewTokens = {
  readonly system: number;
  /** Tokens of the items before each position: `before[i]` covers items[0..i). Defined at block starts and at items.length. */
  readonly before: ReadonlyMap<number, number>;
  readonly total: number;
};

/** Weighs a view block by block (a batch with its results is one block, so each slice renders validly). */
export function weighView(view: View | readonly ViewItem[], countTokens: TokenCounter = approximateTokens): ViewTokens {
  const items = 'items' in view ? view.items : view;
  const system =
    items[0]?.type === 'system_prompt' ? countTokens(toChatMessages(items.slice(0, 1)), viewTools(items)) : 0;
  const before = new Map<number, number>();
  let running = system;
  for (const block of viewBlocks(items)) {
    before.set(block.start, running);
    running += countTokens(toChatMessages(items.slice(block.start, block.end)));
  }
  before.set(items.length, running);
  return { system, before, total: running };
}
