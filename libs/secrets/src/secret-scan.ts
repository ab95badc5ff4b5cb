import { needlesOf } from './mask-secrets.js';

/**
 * Finds which secrets' values occur in bytes that arrive in parts (a file read in chunks), in
 * every form maskSecrets masks (the value, its base64 and base64url, its JSON escaping, its CRLF
 * form, the long lines of a multi-line value), an occurrence split across two parts included.
 * For what cannot be masked without changing it: a file handed out byte for byte.
 */
export class SecretScanner {
  readonly #needles: readonly { readonly bytes: Buffer; readonly name: string }[];
  readonly #overlap: number;
  readonly #found = new Set<string>();
  /** The end of the previous part, where an occurrence may have begun. */
  #tail: Buffer = Buffer.alloc(0);

  constructor(secrets: Readonly<Record<string, string>>) {
    this.#needles = needlesOf(secrets).map((needle) => ({
      bytes: Buffer.from(needle.text, 'utf8'),
      name: needle.name,
    }));
    this.#overlap = Math.max(0, ...this.#needles.map((needle) => needle.bytes.length - 1));
  }

  /** Whether there is anything to look for at all. */
  get active(): boolean {
    return this.#needles.length > 0;
  }

  /** The names found so far, sorted. */
  get found(): string[] {
    return [...this.#found].sort();
  }

  push(part: Uint8Array): void {
    if (!this.active || part.length === 0) return;
    const window = Buffer.concat([this.#tail, part]);
    for (const needle of this.#needles) {
      if (!this.#found.has(needle.name) && window.includes(needle.bytes)) this.#found.add(needle.name);
    }
    this.#tail = Buffer.from(window.subarray(Math.max(0, window.length - this.#overlap)));
  }
}
