import type { StoredImageMediaType } from './schemas/content.js';

/**
 * The largest image a message may store, in bytes: 3.75 MiB, whose base64 is the 5 MiB
 * Anthropic's Messages API takes at most per image (OpenAI's APIs take more), so a stored
 * image reaches every provider path.
 */
export const MAX_IMAGE_BYTES = 3_932_160;

/** The most images one message may hold. */
export const MAX_IMAGES_PER_MESSAGE = 8;

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];
const ascii = (text: string): number[] => [...text].map((character) => character.charCodeAt(0));

function startsWith(bytes: Uint8Array, prefix: readonly number[], at = 0): boolean {
  if (bytes.length < at + prefix.length) return false;
  return prefix.every((byte, index) => bytes[at + index] === byte);
}

/**
 * The format of an image, told by its first bytes (not by a name or a claimed type): PNG, JPEG,
 * GIF (87a or 89a) or WebP (a RIFF container of type WEBP); undefined for anything else.
 */
export function sniffImageType(bytes: Uint8Array): StoredImageMediaType | undefined {
  if (startsWith(bytes, PNG)) return 'image/png';
  if (startsWith(bytes, JPEG)) return 'image/jpeg';
  if (startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'image/webp';
  return undefined;
}
