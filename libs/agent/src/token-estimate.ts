import { IMAGE_ESTIMATE_CHARACTERS, type ChatMessage, type ToolSchema } from '@flotilla/llm';

/**
 * A provider-independent estimate of prompt tokens (about 4 characters a token), good enough
 * to decide when to condense; providers' exact counts arrive in llm_usage events.
 */
export function estimateTokens(messages: readonly ChatMessage[], tools: readonly ToolSchema[] = []): number {
  let characters = 0;
  for (const message of messages) characters += messageCharacters(message);
  return tokensOf(characters, tools);
}

/** What one message adds to the estimate, in characters (a `ChatRenderer`'s measure). */
export function messageCharacters(message: ChatMessage): number {
  let characters = 16;
  if (message.role === 'system') for (const block of message.content) characters += block.text.length;
  else
    for (const part of message.content)
      characters += part.type === 'text' ? part.text.length : IMAGE_ESTIMATE_CHARACTERS;
  if (message.role === 'assistant') {
    for (const call of message.toolCalls) characters += call.name.length + call.arguments.length + 16;
    characters += message.reasoning?.text?.length ?? 0;
    for (const block of message.reasoning?.thinkingBlocks ?? [])
      characters += block.type === 'thinking' ? block.thinking.length : block.data.length;
  }
  return characters;
}

/** The estimate for messages measuring `characters` in all (`messageCharacters`), with `tools` offered. */
export function tokensOf(characters: number, tools: readonly ToolSchema[] = []): number {
  return Math.ceil((characters + toolCharacters(tools)) / 4);
}

// A step offers the same tool list every time: measure its schemas once.
const measuredTools = new WeakMap<readonly ToolSchema[], number>();

function toolCharacters(tools: readonly ToolSchema[]): number {
  let characters = measuredTools.get(tools);
  if (characters === undefined) {
    characters = 0;
    for (const tool of tools)
      characters += tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length;
    measuredTools.set(tools, characters);
  }
  return characters;
}
