import { createHash } from 'node:crypto';
import { Buckets, openBucket } from '@flotilla/bus';
import { MAX_IMAGE_BYTES, sniffImageType, type StoredImageMediaType } from '@flotilla/events';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

export const DEFAULT_IMAGES_BUCKET = Buckets.images;

/** The size of each value an image is stored in: well under any server's max_payload (1 MiB by default). */
export const IMAGE_CHUNK_BYTES = 256 * 1024;

/** What a message's event records of a stored image (its bytes are in the bucket). */
export type StoredImage = {
  readonly sha256: string;
  readonly bytes: number;
  readonly media_type: StoredImageMediaType;
  readonly name?: string;
};

export const ImageErrorCode = {
  /** The bytes are not a png, jpeg, gif or webp image. */
  NotAnImage: 'not_an_image',
  /** The bytes are another image format than the one claimed. */
  MediaTypeMismatch: 'media_type_mismatch',
  TooLarge: 'image_too_large',
} as const;
export type ImageErrorCode = (typeof ImageErrorCode)[keyof typeof ImageErrorCode];

/** An image the store refuses to keep, saying why. */
export class ImageError extends Error {
  override readonly name = 'ImageError';

  constructor(
    readonly code: ImageErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export type ImageStoreOptions = {
  readonly bucket?: string;
  /** 1 locally, 3 in a cluster. Only used when the bucket is created. */
  readonly replicas?: number;
};

/**
 * The images of user messages, outside the log (a commit is one NATS message, and the log is read
 * again on every view build): in a KV bucket, content-addressed within each tenant. An image is
 * kept as values of `IMAGE_CHUNK_BYTES` under `<tenant>.<sha256>.<index>`; its event records
 * `{sha256, bytes, media_type, name?}`. Writing the same image again writes the same values (so two
 * messages, or two conversations of a tenant, share it); a reader checks the size and the digest,
 * so a value that is missing, partly written or altered is never sent to a model as the image.
 * Tenants never share an image: the key starts with the tenant of the event that names it.
 */
export class ImageStore {
  private constructor(
    readonly kv: KV,
    readonly bucket: string,
  ) {}

  /** Creates the bucket (history 1) or opens the existing one; safe to call from every instance at once. */
  static async open(nc: NatsConnection, options: ImageStoreOptions = {}): Promise<ImageStore> {
    const bucket = options.bucket ?? DEFAULT_IMAGES_BUCKET;
    const kv = await openBucket(nc, bucket, {
      history: 1,
      replicas: options.replicas ?? 1,
      description: 'Flotilla images of user messages (<tenant>.<sha256>.<chunk>)',
    });
    return new ImageStore(kv, bucket);
  }

  /**
   * Stores an image of `tenant` and says how an event names it. Its format is read from its first
   * bytes; a `claimed` media type must agree. Refuses (`ImageError`) anything but png, jpeg, gif and
   * webp, and more than `MAX_IMAGE_BYTES`.
   */
  async put(
    tenant: string,
    bytes: Uint8Array,
    options: { readonly claimed?: string; readonly name?: string } = {},
  ): Promise<StoredImage> {
    const image = describeImage(bytes, options);
    const puts: Promise<unknown>[] = [];
    for (let index = 0; index * IMAGE_CHUNK_BYTES < bytes.length; index += 1) {
      puts.push(
        this.kv.put(
          chunkKey(tenant, image.sha256, index),
          bytes.subarray(index * IMAGE_CHUNK_BYTES, (index + 1) * IMAGE_CHUNK_BYTES),
        ),
      );
    }
    await Promise.all(puts);
    return image;
  }

  /**
   * The bytes of an image of `tenant`, or undefined when the bucket does not hold it whole (never
   * stored, removed, partly written) or holds other bytes than it names.
   */
  async get(tenant: string, image: Pick<StoredImage, 'sha256' | 'bytes'>): Promise<Uint8Array | undefined> {
    if (!Number.isSafeInteger(image.bytes) || image.bytes <= 0 || image.bytes > MAX_IMAGE_BYTES) return undefined;
    const count = Math.ceil(image.bytes / IMAGE_CHUNK_BYTES);
    const entries = await Promise.all(
      Array.from({ length: count }, (_, index) => this.kv.get(chunkKey(tenant, image.sha256, index))),
    );
    const bytes = new Uint8Array(image.bytes);
    let offset = 0;
    for (const entry of entries) {
      if (!entry || entry.operation !== 'PUT' || offset + entry.value.length > bytes.length) return undefined;
      bytes.set(entry.value, offset);
      offset += entry.value.length;
    }
    if (offset !== image.bytes || sha256(bytes) !== image.sha256) return undefined;
    return bytes;
  }
}

/** How an event names these bytes, or the `ImageError` saying why they cannot be stored. */
export function describeImage(
  bytes: Uint8Array,
  options: { readonly claimed?: string; readonly name?: string } = {},
): StoredImage {
  if (bytes.length > MAX_IMAGE_BYTES) {
    throw new ImageError(
      ImageErrorCode.TooLarge,
      `the image has ${bytes.length} bytes; at most ${MAX_IMAGE_BYTES} (3.75 MiB) are taken`,
    );
  }
  const mediaType = sniffImageType(bytes);
  if (mediaType === undefined)
    throw new ImageError(ImageErrorCode.NotAnImage, 'the data is not a png, jpeg, gif or webp image');
  if (options.claimed !== undefined && options.claimed !== mediaType) {
    throw new ImageError(
      ImageErrorCode.MediaTypeMismatch,
      `the data is ${mediaType}, not ${options.claimed} as its media_type says`,
    );
  }
  return {
    sha256: sha256(bytes),
    bytes: bytes.length,
    media_type: mediaType,
    ...(options.name === undefined ? {} : { name: options.name }),
  };
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function chunkKey(tenant: string, digest: string, index: number): string {
  return `${tenant}.${digest}.${index}`;
}
