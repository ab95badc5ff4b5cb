// A Chat Completions request's messages as the one user message that starts the run. A new
// conversation gets the request's earlier turns (system, user, assistant, tool) as a delimited
// transcript before the last user message; a conversation gone on with has them already, so it
// gets the last user message alone.
import { MAX_MESSAGE_CHARS } from '@flotilla/api';
import { OpenAiError } from './openai-errors.js';
import type { ChatMessage } from './openai-request.js';

export const TRANSCRIPT_OPENING = 'Earlier turns of this chat, oldest first, each between <turn> tags:';
export const LATEST_MESSAGE_HEADING = "The user's new message, to answer now:";

/** The run's message: the last user message, after a transcript of the earlier turns when `withEarlierTurns`. */
export function runMessageText(messages: readonly ChatMessage[], withEarlierTurns: boolean): string {
  const last = messages.at(-1);
  if (last?.role !== 'user')
    throw OpenAiError.invalid(
      `messages: the last message must be the user's (it is ${last ? `"${last.role}"` : 'missing'}): the agent answers it.`,
      'messages',
    );
  if (last.content.trim() === '')
    throw OpenAiError.invalid(
      'messages: the last user message has no text.',
      `messages.${messages.length - 1}.content`,
    );
  const earlier = messages.slice(0, -1);
  const text =
    !withEarlierTurns || earlier.length === 0
      ? last.content
      : [TRANSCRIPT_OPENING, '', ...earlier.map(turnText), '', LATEST_MESSAGE_HEADING, '', last.content].join('\n');
  if (text.length > MAX_MESSAGE_CHARS)
    throw OpenAiError.invalid(
      `messages: they make a message of ${text.length} characters, past the ${MAX_MESSAGE_CHARS} a conversation's message may have; send fewer or shorter turns.`,
      'messages',
    );
  return text;
}

/** One earlier turn: its role (and name or call id) in the tag, its text, an assistant's tool calls as lines. */
function turnText(message: ChatMessage): string {
  const attributes = [`role=${JSON.stringify(message.role)}`];
  if ('name' in message && message.name !== undefined) attributes.push(`name=${JSON.stringify(message.name)}`);
  if (message.role === 'tool') attributes.push(`tool_call_id=${JSON.stringify(message.tool_call_id)}`);
  const lines: string[] = [];
  if (message.content) lines.push(message.content);
  if (message.role === 'assistant') {
    if (message.refusal) lines.push(`(refused: ${message.refusal})`);
    for (const call of message.tool_calls ?? [])
      lines.push(`(called the tool ${call.function.name} with ${call.function.arguments}, call id ${call.id})`);
  }
  return `<turn ${attributes.join(' ')}>\n${lines.join('\n')}\n</turn>`;
}
