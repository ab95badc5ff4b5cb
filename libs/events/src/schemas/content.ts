import { z } from 'zod';

export const TextContent = z.strictObject({ type: z.literal('text'), text: z.string() });
export type TextContent = z.infer<typeof TextContent>;

/** The image formats a stored image may have: what every provider path takes, told apart by their first bytes. */
export const STORED_IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export const StoredImageMediaType = z.enum(STORED_IMAGE_MEDIA_TYPES);
export type StoredImageMediaType = z.infer<typeof StoredImageMediaType>;

/** A SHA-256 digest as 64 lowercase hexadecimal characters. */
export const Sha256 = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 digest: 64 lowercase hexadecimal characters');

/**
 * An image: by `url` (https or a data URL), inline as base64 `data` with its `media_type`, or
 * (protocol v4) stored: `sha256` names its bytes in the images bucket (under the event's
 * tenant), with their size (`bytes`), its `media_type` (png, jpeg, gif or webp) and the file
 * `name` it was sent as, if any. Exactly one of `url`, `data` and `sha256`.
 */
export const ImageContent = z
  .strictObject({
    type: z.literal('image'),
    url: z.string().min(1).optional(),
    data: z.string().min(1).optional(),
    sha256: Sha256.optional(),
    bytes: z.number().int().positive().optional(),
    name: z.string().min(1).max(255).optional(),
    media_type: z
      .string()
      .regex(/^image\/[A-Za-z0-9.+-]+$/, 'must be an image media type such as image/png')
      .optional(),
  })
  .superRefine((image, context) => {
    const forms = [image.url, image.data, image.sha256].filter((form) => form !== undefined).length;
    if (forms === 0) {
      context.addIssue({
        code: 'custom',
        path: ['url'],
        message: 'an image needs url, data with media_type, or sha256 with bytes and media_type',
      });
    } else if (forms > 1) {
      context.addIssue({
        code: 'custom',
        path: [image.sha256 === undefined ? 'data' : 'sha256'],
        message: 'an image has one of url, data or sha256',
      });
    }
    if ((image.data !== undefined || image.sha256 !== undefined) && image.media_type === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['media_type'],
        message: `${image.data === undefined ? 'a stored image' : 'inline image data'} needs its media_type`,
      });
    }
    if (image.sha256 !== undefined && image.bytes === undefined)
      context.addIssue({ code: 'custom', path: ['bytes'], message: 'a stored image needs its size in bytes' });
    for (const field of ['bytes', 'name'] as const) {
      if (image[field] !== undefined && image.sha256 === undefined)
        context.addIssue({
          code: 'custom',
          path: [field],
          message: `${field} belongs to a stored image (with sha256)`,
        });
    }
    if (
      image.sha256 !== undefined &&
      image.media_type !== undefined &&
      !StoredImageMediaType.safeParse(image.media_type).success
    ) {
      context.addIssue({
        code: 'custom',
        path: ['media_type'],
        message: `a stored image is one of ${STORED_IMAGE_MEDIA_TYPES.join(', ')}`,
      });
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
