import type { ChatCompletionContentPart, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { EncodedJson } from '../../core/json-body.js';
import { LlmError } from '../../core/errors.js';
import type { ChatMessage, ContentPart, ImagePart, ToolMessage } from '../../messages.js';

// Each step sends the whole conversation again, mostly as the same message objects as the step
// before (the view keeps what it rendered): each is encoded once. A message is never changed.
const encoded = new EncodedJson<ChatMessage>((message) => JSON.stringify(toChatMessage(message)));
const imagesOfTools = new EncodedJson<ToolMessage>((message) => JSON.stringify(toolImagesMessage(message)));

/**
 * Provider-neutral messages to Chat Completions messages, each as its UTF-8 JSON. A tool message
 * holds text only there, so the images of a tool's result (a screenshot) follow the run of tool
 * messages as a user message each, as OpenAI-compatible servers expect them.
 */
export function encodedChatMessages(messages: readonly ChatMessage[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let withImages: ToolMessage[] = [];
  for (const message of messages) {
    if (message.role !== 'tool' && withImages.length > 0) {
      for (const tool of withImages) out.push(imagesOfTools.of(tool));
      withImages = [];
    }
    out.push(encoded.of(message));
    if (message.role === 'tool' && message.content.some((part) => part.type === 'image')) withImages.push(message);
  }
  for (const tool of withImages) out.push(imagesOfTools.of(tool));
  return out;
}

function toolImagesMessage(message: ToolMessage): ChatCompletionMessageParam {
  const images = message.content.filter((part): part is ImagePart => part.type === 'image');
  return {
    role: 'user',
    content: [
      {
        type: 'text',
        text: `The image${images.length === 1 ? '' : 's'} of the ${message.toolName} result ${message.toolCallId}:`,
      },
      ...images.map((part): ChatCompletionContentPart => ({ type: 'image_url', image_url: { url: imageUrl(part) } })),
    ],
  };
}

/** A provider-neutral message as a Chat Completions message (system blocks joined into one). */
function toChatMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content.map((block) => block.text).join('\n\n') };
    case 'user':
      return { role: 'user', content: toUserContent(message.content) };
    case 'assistant': {
      const text = textOf(message.content);
      const reasoning = message.reasoning?.text;
      return {
        role: 'assistant',
        content: text.length > 0 ? text : null,
        ...(message.toolCalls.length > 0
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
        // OpenAI-compatible reasoning servers (vLLM, DeepSeek-style) read this back.
        ...(reasoning ? { reasoning_content: reasoning } : {}),
      };
    }
    case 'tool':
      return {
        role: 'tool',
        tool_call_id: message.toolCallId,
        content: toolText(message.content, message.isError, '[image: in the user message after the tool results]'),
      };
  }
}

function toUserContent(parts: readonly ContentPart[]): string | ChatCompletionContentPart[] {
  if (parts.every((part) => part.type === 'text')) return textOf(parts);
  return parts.map((part): ChatCompletionContentPart =>
    part.type === 'text'
      ? { type: 'text', text: part.text }
      : { type: 'image_url', image_url: { url: imageUrl(part) } },
  );
}

export function imageUrl(part: ImagePart): string {
  return part.url ?? `data:${part.mediaType ?? 'image/png'};base64,${imageData(part)}`;
}

/** An image's base64 data; a stored image not read in (`withStoredImages`) is a bug of the caller, refused rather than sent empty. */
export function imageData(part: ImagePart): string {
  if (part.data !== undefined) return part.data;
  if (part.stored !== undefined)
    throw new LlmError(
      'invalid_config',
      `the stored image ${part.stored.sha256} was not read in before the call (withStoredImages)`,
      { isRetryable: false },
    );
  return '';
}

function textOf(parts: readonly ContentPart[]): string {
  return parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/** Chat Completions tool messages are text only; images are noted, errors flagged. */
export function toolText(
  parts: readonly ContentPart[],
  isError: boolean | undefined,
  imageNote = '[image omitted]',
): string {
  const text = parts.map((part) => (part.type === 'text' ? part.text : imageNote)).join('\n');
  return isError ? `[An error occurred during execution.]\n${text}` : text;
}
