import type { ResponseInputContent, ResponseInputItem } from 'openai/resources/responses/responses';
import type { ChatMessage, ContentPart } from '../../messages.js';
import { imageUrl, toolText } from '../openai-chat/to-chat-messages.js';

export type ResponsesInput = { readonly instructions: string | undefined; readonly input: ResponseInputItem[] };

/** Provider-neutral messages to Responses `instructions` + input items, reasoning items replayed. */
export function toResponsesInput(messages: readonly ChatMessage[]): ResponsesInput {
  const instructions: string[] = [];
  const input: ResponseInputItem[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        instructions.push(...message.content.map((block) => block.text));
        break;
      case 'user':
        input.push({ type: 'message', role: 'user', content: message.content.map(toInputContent) });
        break;
      case 'assistant': {
        // With store: false an item can only be replayed with its encrypted content.
        for (const item of message.reasoning?.items ?? []) {
          if (!item.encryptedContent) continue;
          input.push({
            type: 'reasoning',
            id: item.id,
            summary: (item.summary ?? []).map((text) => ({ type: 'summary_text' as const, text })),
            encrypted_content: item.encryptedContent,
          });
        }
        const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
        if (text.length > 0) input.push({ type: 'message', role: 'assistant', content: text });
        for (const call of message.toolCalls) {
          input.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: call.arguments });
        }
        break;
      }
      case 'tool':
        input.push({ type: 'function_call_output', call_id: message.toolCallId, output: toolText(message.content, message.isError) });
        break;
    }
  }
  return { instructions: instructions.length > 0 ? instructions.join('\n\n') : undefined, input };
}

function toInputContent(part: ContentPart): ResponseInputContent {
  return part.type === 'text'
    ? { type: 'input_text', text: part.text }
    : { type: 'input_image', image_url: imageUrl(part), detail: 'auto' };
}
