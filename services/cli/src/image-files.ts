import { basename } from 'node:path';
import type { ImageUpload } from '@flotilla/api';
import { MAX_IMAGE_BYTES, sniffImageType } from '@flotilla/events';
import { usageError } from './errors.js';
import type { SecretInput } from './secret-commands.js';

/**
 * The `--image` files of `send`, read and checked here so that a wrong file is named at once (the
 * gateway checks them again): png, jpeg, gif or webp by their first bytes, within the size limit.
 */
export async function readImageFiles(
  paths: readonly string[],
  context: { readonly input?: SecretInput },
): Promise<ImageUpload[]> {
  const readBytes = context.input?.readBytes;
  if (!readBytes) throw usageError('--image cannot read files here');
  return Promise.all(
    paths.map(async (path) => {
      let bytes: Uint8Array;
      try {
        bytes = await readBytes(path);
      } catch (error) {
        throw usageError(`--image ${path}: ${(error as Error).message}`);
      }
      const mediaType = sniffImageType(bytes);
      if (mediaType === undefined) throw usageError(`--image ${path}: not a png, jpeg, gif or webp image`);
      if (bytes.length > MAX_IMAGE_BYTES)
        throw usageError(`--image ${path}: ${bytes.length} bytes; an image has at most ${MAX_IMAGE_BYTES} (3.75 MiB)`);
      const name = basename(path).slice(0, 255);
      return { data: Buffer.from(bytes).toString('base64'), media_type: mediaType, ...(name === '' ? {} : { name }) };
    }),
  );
}
