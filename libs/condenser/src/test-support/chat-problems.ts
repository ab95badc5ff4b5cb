import type { ChatMessage } from '@flotilla/llm';

/** The rules every provider enforces on a message list; empty when the list is valid. */
export function chatProblems(messages: readonly ChatMessage[]): string[] {
  const problems: string[] = [];
  if (messages.some((message, index) => message.role === 'system' && index !== 0))
    problems.push('system message not first');
  let owed: string[] = [];
  for (const message of messages) {
    if (message.role === 'tool') {
      if (owed[0] !== message.toolCallId) problems.push(`tool result ${message.toolCallId} answers no pending call`);
      owed = owed.slice(1);
      continue;
    }
    if (owed.length > 0) problems.push(`calls ${owed.join()} unanswered before a ${message.role} message`);
    owed = message.role === 'assistant' ? message.toolCalls.map((call) => call.id) : [];
  }
  if (owed.length > 0) problems.push(`calls ${owed.join()} unanswered at the end`);
  return problems;
}
