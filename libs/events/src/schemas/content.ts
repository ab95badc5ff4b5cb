import { z } from 'zod';

export const TextContent = z.strictObject({ type: z.literal('text'), text: z.string() });
export type TextContent = z.infer<typeof TextContent>;

/**
 * An image, either by `url` (https or a data URL) or inline as base64 `data` with its
 * `media_type` — exactly one of the two.
 */
export const ImageContent = z
  .strictObject({
    type: z.literal('image'),
    url: z.string().min(1).optional(),
    data: z.string().min(1).optional(),
    media_type: z
      .string()
      .regex(/^image\/[A-Za-z0-9.+-]+$/, 'must be an image media type such as image/png')
      .optional(),
  })
  .superRefine((image, context) => {
    if (image.url === undefined && image.data === undefined) {
      context.addIssue({ code: 'custom', path: ['url'], message: 'an image needs either url, or data with media_type' });
    } else if (image.url !== undefined && image.data !== undefined) {
      context.addIssue({ code: 'custom', path: ['data'], message: 'an image has url or data, not both' });
    }
    if (image.data !== undefined && image.media_type === undefined) {
      context.addIssue({ code: 'custom', path: ['media_type'], message: 'inline image data needs its media_type' });
    }
  });
export type ImageContent = z.infer<typeof ImageContent>;

export const ContentPart = z.discriminatedUnion('type', [TextContent, ImageContent]);
export type ContentPart = z.infer<typeof ContentPart>;

export const ThinkingBlock = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.strictObject({ type: z.literal('redacted_thinking'), data: z.string() }),
]);
export type ThinkingBlock = z.infer<typeof ThinkingBlock>;

/** Reasoning a model returned, kept verbatim so it can be replayed to the same provider. */
export const Reasoning = z.strictObject({
  text: z.string().optional(),
  thinking_blocks: z.array(ThinkingBlock).optional(),
  items: z
    .array(
      z.strictObject({
        id: z.string().min(1),
        encrypted_content: z.string().optional(),
        summary: z.array(z.string()).optional(),
      }),
    )
    .optional(),
});
export type Reasoning = z.infer<typeof Reasoning>;
