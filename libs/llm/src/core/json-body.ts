/**
 * Request bodies copied together from JSON encoded once per message.
 *
 * Each step sends the whole conversation again, mostly as the same message objects as the step
 * before (the view keeps what it rendered). Serialising all of it per step (the SDK's
 * `JSON.stringify`, then UTF-8 for the socket) grew with the conversation: at 400 steps it was a
 * third of a step worker's CPU. Here each message is encoded the first time it is sent, and a body
 * is its messages' bytes copied into one buffer.
 */

const utf8 = new TextEncoder();
const COMMA = utf8.encode(',');

/**
 * The UTF-8 JSON text `toJson` makes of each key, computed once per key object and kept while
 * the key lives. The text is an item of `jsonBody`'s array, or several items joined by commas.
 */
export class EncodedJson<K extends object> {
  readonly #encoded = new WeakMap<K, Uint8Array>();

  constructor(private readonly toJson: (key: K) => string) {}

  of(key: K): Uint8Array {
    let bytes = this.#encoded.get(key);
    if (bytes === undefined) {
      bytes = utf8.encode(this.toJson(key));
      this.#encoded.set(key, bytes);
    }
    return bytes;
  }
}

/**
 * `{ ...head, [key]: [items], ...tail }` as UTF-8 JSON, the array's items already encoded: each
 * one's bytes, or parts copied one after the other (an empty item stands for no item). Keys of
 * `head` and `tail` whose value is undefined are left out, as `JSON.stringify` leaves them out.
 */
export function jsonBody(
  head: Readonly<Record<string, unknown>>,
  key: string,
  items: readonly (Uint8Array | readonly Uint8Array[])[],
  tail: Readonly<Record<string, unknown>> = {},
): Buffer {
  const headJson = JSON.stringify(head);
  const tailJson = JSON.stringify(tail);
  const open = utf8.encode(`${headJson.slice(0, -1)}${headJson.length > 2 ? ',' : ''}${JSON.stringify(key)}:[`);
  const close = utf8.encode(`]${tailJson.length > 2 ? `,${tailJson.slice(1)}` : '}'}`);
  const parts: Uint8Array[] = [open];
  let length = open.byteLength + close.byteLength;
  for (const item of items) {
    const pieces = item instanceof Uint8Array ? [item] : item;
    const bytes = pieces.reduce((sum, piece) => sum + piece.byteLength, 0);
    if (bytes === 0) continue;
    if (parts.length > 1) {
      parts.push(COMMA);
      length += 1;
    }
    parts.push(...pieces);
    length += bytes;
  }
  parts.push(close);
  return Buffer.concat(parts, length);
}
