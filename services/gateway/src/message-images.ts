import type { ImageUpload } from '@flotilla/api';
import { MAX_MESSAGE_IMAGE_BYTES } from '@flotilla/api';
import type { ImageContent } from '@flotilla/events';
import { describeImage, ImageError, ImageErrorCode, type ImageStore, type StoredImage } from '@flotilla/runtime';
import { ApiError } from './api-error.js';

/** Where the gateway stores images: it writes them, never reads one back. */
export type ImageWriter = Pick<ImageStore, 'put'>;

/**
 * A message's images checked and stored, as the parts of its event: each decoded, told by its
 * bytes to be png, jpeg, gif or webp (agreeing with its media_type, if given), within the size
 * limits, or refused naming it (`<where>.<index>.data`) before anything is written.
 */
export async function storeMessageImages(
  store: ImageWriter | undefined,
  tenant: string,
  uploads: readonly ImageUpload[],
  where: string,
): Promise<ImageContent[]> {
  if (uploads.length === 0) return [];
  if (!store)
    throw new ApiError(
      503,
      'unavailable',
      'This gateway cannot store images (it has no images bucket); retry on another.',
    );
  let total = 0;
  const checked = uploads.map((upload, index) => {
    const bytes = Buffer.from(upload.data, 'base64');
    total += bytes.length;
    const options = {
      ...(upload.media_type === undefined ? {} : { claimed: upload.media_type }),
      ...(upload.name === undefined ? {} : { name: upload.name }),
    };
    try {
      describeImage(bytes, options);
    } catch (error) {
      throw refusal(error, `${where}.${index}.data`);
    }
    return { bytes, options };
  });
  if (total > MAX_MESSAGE_IMAGE_BYTES) {
    const path = `${where}`;
    throw new ApiError(
      413,
      'image_too_large',
      `${path}: the images have ${total} bytes together; a message takes at most ${MAX_MESSAGE_IMAGE_BYTES}`,
      [{ path, message: `at most ${MAX_MESSAGE_IMAGE_BYTES} bytes together` }],
    );
  }
  const stored = await Promise.all(checked.map(({ bytes, options }) => store.put(tenant, bytes, options)));
  return stored.map(imagePart);
}

function imagePart(image: StoredImage): ImageContent {
  return {
    type: 'image',
    sha256: image.sha256,
    bytes: image.bytes,
    media_type: image.media_type,
    ...(image.name === undefined ? {} : { name: image.name }),
  };
}

function refusal(error: unknown, path: string): ApiError {
  if (!(error instanceof ImageError)) throw error;
  const [status, code] =
    error.code === ImageErrorCode.TooLarge
      ? ([413, 'image_too_large'] as const)
      : ([415, 'unsupported_image'] as const);
  return new ApiError(status, code, `${path}: ${error.message}`, [{ path, message: error.message }]);
}
