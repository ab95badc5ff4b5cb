import type { ChatMessage, ContentPart, ImagePart, StoredImageRef } from '../messages.js';
import type { GenerateOptions, GenerateRequest, GenerateResult, LanguageModel } from './language-model.js';

/**
 * Reads a stored image's bytes: undefined when the store does not hold it (removed, or never
 * whole). A failure to reach the store is thrown (the step is then tried again), never sent.
 */
export type StoredImageSource = (image: StoredImageRef) => Promise<Uint8Array | undefined>;

// A step sends the conversation's messages again, as the same objects as the step before (the
// view keeps what it rendered): each message is resolved once, and its resolved copy (the same
// object every step) keeps the provider adapters' per-message encodings useful.
const resolvedForVision = new WeakMap<ChatMessage, Promise<ChatMessage>>();
const resolvedAsText = new WeakMap<ChatMessage, ChatMessage>();

/**
 * A model whose requests have their stored images read in (`data`, base64) before the call,
 * so every provider path sends them in its own format. For a model that does not take images
 * (`info.vision` false) every image becomes a line of text saying that it is not shown, as does
 * a stored image the store no longer holds: a step never fails for an image.
 */
export function withStoredImages(model: LanguageModel, source: StoredImageSource): LanguageModel {
  return {
    info: model.info,
    generate: async (request: GenerateRequest, options?: GenerateOptions): Promise<GenerateResult> => {
      // most requests hold no image: sent as they are, with no copy and no promise per message
      if (model.info.vision === false)
        return model.generate(
          request.messages.some(hasImage) ? { ...request, messages: request.messages.map(imagesAsText) } : request,
          options,
        );
      if (!request.messages.some(hasUnreadImage)) return model.generate(request, options);
      const messages = await Promise.all(
        request.messages.map((message) => (hasUnreadImage(message) ? readIn(message, source) : message)),
      );
      return model.generate({ ...request, messages }, options);
    },
  };
}

type WithParts = Exclude<ChatMessage, { readonly role: 'system' }>;
const hasImage = (message: ChatMessage): message is WithParts =>
  message.role !== 'system' && message.content.some((part) => part.type === 'image');
const hasUnreadImage = (message: ChatMessage): message is WithParts =>
  message.role !== 'system' &&
  message.content.some((part) => part.type === 'image' && part.stored !== undefined && part.data === undefined);

function readIn(message: WithParts, source: StoredImageSource): Promise<ChatMessage> {
  let resolved = resolvedForVision.get(message);
  if (resolved === undefined) {
    resolved = Promise.all(message.content.map((part) => readPart(part, source))).then(
      (content) => ({ ...message, content }) as ChatMessage,
    );
    // a failure is not kept: the next step tries the store again
    resolved.catch(() => resolvedForVision.delete(message));
    resolvedForVision.set(message, resolved);
  }
  return resolved;
}

async function readPart(part: ContentPart, source: StoredImageSource): Promise<ContentPart> {
  if (part.type !== 'image' || part.stored === undefined || part.data !== undefined) return part;
  const bytes = await source(part.stored);
  if (bytes === undefined) return { type: 'text', text: imageNote(part, 'the image is no longer stored') };
  return { ...part, data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}

function imagesAsText(message: ChatMessage): ChatMessage {
  if (!hasImage(message)) return message;
  let resolved = resolvedAsText.get(message);
  if (resolved === undefined) {
    const content = message.content.map((part): ContentPart =>
      part.type === 'image' ? { type: 'text', text: imageNote(part, 'this model does not take images') } : part,
    );
    resolved = { ...message, content } as ChatMessage;
    resolvedAsText.set(message, resolved);
  }
  return resolved;
}

/** The line of text sent instead of an image: what it was, and why it is not shown. */
export function imageNote(part: ImagePart, why: string): string {
  const name = part.stored?.name === undefined ? '' : ` ${part.stored.name}`;
  const size = part.stored === undefined ? '' : `, ${Math.max(1, Math.round(part.stored.bytes / 1024))} KiB`;
  return `[image${name} (${part.mediaType ?? 'image'}${size}) not shown: ${why}]`;
}
