import type { ResponseInputContent, ResponseInputItem } from 'openai/resources/responses/responses';
import { EncodedJson } from '../../core/json-body.js';
import type { ChatMessage, ContentPart } from '../../messages.js';
import { imageUrl, toolText } from '../openai-chat/to-chat-messages.js';

export type ResponsesInput = {
  readonly instructions: string | undefined;
  /** Each message's input items as UTF-8 JSON, joined by commas (empty for a message with none). */
  readonly input: Uint8Array[];
};

// Each step sends the whole conversation again, mostly as the same message objects as the step
// before: each message's items are encoded once. A message is never changed.
const encoded = new EncodedJson<Exclude<ChatMessage, { role: 'system' }>>((message) =>
  JSON.stringify(toInputItems(message)).slice(1, -1),
);

/** Provider-neutral messages to Responses `instructions` + input items, reasoning items replayed. */
export function toResponsesInput(messages: readonly ChatMessage[]): ResponsesInput {
  const instructions: string[] = [];
  const input: Uint8Array[] = [];
  for (const message of messages) {
    if (message.role === 'system') instructions.push(...message.content.map((block) => block.text));
    else input.push(encoded.of(message));
  }
  return { instructions: instructions.length > 0 ? instructions.join('\n\n') : undefined, input };
}

/** The input items of a message other than a system one. */
function toInputItems(message: Exclude<ChatMessage, { role: 'system' }>): ResponseInputItem[] {
  switch (message.role) {
    case 'user':
      return [{ type: 'message', role: 'user', content: message.content.map(toInputContent) }];
    case 'assistant': {
      const items: ResponseInputItem[] = [];
      // With store: false an item can only be replayed with its encrypted content.
      for (const item of message.reasoning?.items ?? []) {
        if (!item.encryptedContent) continue;
        items.push({
          type: 'reasoning',
          id: item.id,
          summary: (item.summary ?? []).map((text) => ({ type: 'summary_text' as const, text })),
          encrypted_content: item.encryptedContent,
        });
      }
      const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
      if (text.length > 0) items.push({ type: 'message', role: 'assistant', content: text });
      for (const call of message.toolCalls) {
        items.push({ type: 'function_call', call_id: call.id, name: call.name, arguments: call.arguments });
      }
      return items;
    }
    case 'tool':
      return [
        {
          type: 'function_call_output',
          call_id: message.toolCallId,
          // text alone as a string; with images (a screenshot) as text and image parts, which Responses takes there
          output: message.content.some((part) => part.type === 'image')
            ? [
                { type: 'input_text', text: toolText(message.content, message.isError, '[image: below]') },
                ...message.content.flatMap((part) =>
                  part.type === 'image'
                    ? [{ type: 'input_image' as const, image_url: imageUrl(part), detail: 'auto' as const }]
                    : [],
                ),
              ]
            : toolText(message.content, message.isError),
        },
      ];
  }
}

function toInputContent(part: ContentPart): ResponseInputContent {
  return part.type === 'text'
    ? { type: 'input_text', text: part.text }
    : { type: 'input_image', image_url: imageUrl(part), detail: 'auto' };
}
