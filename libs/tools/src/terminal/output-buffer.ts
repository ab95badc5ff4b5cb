import { StringDecoder } from 'node:string_decoder';

/**
 * Accumulates a command's output (its bytes) between observations, looks for the completion
 * marker, and bounds memory: beyond `capacity` bytes the middle is dropped (head and tail kept)
 * and the number dropped is counted. Each chunk costs a search for the marker and a reference,
 * never a copy of what is kept nor a decoding of what is dropped, so 100 MB printed is read at the
 * pipe's pace and leaves little garbage; only what is kept is decoded, when it is taken.
 */
export type MarkerMatch = { readonly exitCode: number; readonly cwd: string };

/** Longest marker line looked for across chunks (it carries the cwd). */
const MAX_MARKER_LINE = 4_200;
const NEWLINE = 0x0a;
const SMALL_CHUNK = 4_096;
const STAGING_BYTES = 65_536;

/** The line standing for what was dropped from the middle of an output. */
export function droppedNote(dropped: number): string {
  return `\n[... ${dropped.toLocaleString('en-US')} bytes of output were dropped here ...]\n`;
}

export class OutputBuffer {
  #head: Buffer[] = [];
  #headSize = 0;
  /** The tail, in chunks (oldest first): dropping from its front touches one chunk, not all of it. */
  #tail: Buffer[] = [];
  #tailSize = 0;
  #dropped = 0;
  /** Small chunks copied together, not yet placed in the head or the tail. */
  #staging: Buffer | undefined;
  #staged = 0;
  #marker: MarkerMatch | undefined;
  #afterMarker: Buffer[] = [];
  /** Decodes what is kept, carrying a character split between two observations over. */
  #decoder = new StringDecoder('utf8');
  readonly #markerBytes: Buffer;
  readonly #line: RegExp;
  readonly #headCapacity: number;
  readonly #tailCapacity: number;

  constructor(marker: string, capacity: number) {
    this.#markerBytes = Buffer.from(`${marker} `);
    this.#line = new RegExp(`^${marker} (\\d+) ([^\\n]*)$`);
    this.#headCapacity = Math.floor(capacity / 2);
    this.#tailCapacity = capacity - this.#headCapacity;
  }

  get size(): number {
    return this.#headSize + this.#tailSize + this.#staged;
  }

  get marker(): MarkerMatch | undefined {
    return this.#marker;
  }

  append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.#marker !== undefined) {
      this.#afterMarker.push(chunk);
      return;
    }
    // a marker line ends with a newline: a chunk without one cannot complete it
    if (chunk.indexOf(NEWLINE) === -1) {
      this.#store(chunk);
      return;
    }
    // the last bytes stored (where a marker that arrived in parts starts) and this chunk: a copy of one chunk, outside the JS heap
    const recent = this.#lastBytes(MAX_MARKER_LINE);
    const window = recent.length === 0 ? chunk : Buffer.concat([recent, chunk]);
    for (let at = window.indexOf(this.#markerBytes); at !== -1; at = window.indexOf(this.#markerBytes, at + 1)) {
      const end = window.indexOf(NEWLINE, at);
      if (end === -1) break; // the rest of its line is still to come
      const match = this.#line.exec(window.toString('utf8', at, end));
      if (match === null) continue;
      const start = at > 0 && window[at - 1] === NEWLINE ? at - 1 : at;
      if (start < recent.length) this.#removeLast(recent.length - start);
      else this.#store(chunk.subarray(0, start - recent.length));
      this.#marker = { exitCode: Number(match[1]), cwd: match[2] ?? '' };
      this.#afterMarker = [window.subarray(end + 1)];
      return;
    }
    this.#store(chunk);
  }

  /** The last `count` bytes stored (fewer when less is kept): the end of the staged bytes, the tail, then the head. */
  #lastBytes(count: number): Buffer {
    const parts: Buffer[] = [];
    let left = count;
    const sources = [
      this.#staging === undefined ? [] : [this.#staging.subarray(0, this.#staged)],
      this.#tail,
      this.#head,
    ];
    for (const source of sources) {
      for (let index = source.length - 1; index >= 0 && left > 0; index -= 1) {
        const part = source[index]!;
        const piece = part.length > left ? part.subarray(part.length - left) : part;
        parts.push(piece);
        left -= piece.length;
      }
    }
    return Buffer.concat(parts.reverse(), count - left);
  }

  /**
   * Output collected so far, decoded (and the marker if the command ended); resets for the next
   * observation. `final`: no more output follows (the shell exited), so a character cut short ends it.
   */
  take(final = false): { text: string; dropped: number; marker: MarkerMatch | undefined } {
    this.#seal();
    const head = this.#decoder.write(Buffer.concat(this.#head, this.#headSize));
    let text: string;
    if (this.#dropped > 0) {
      // the tail starts wherever the drop left it: a fresh decoder (a cut character shows as U+FFFD)
      const tailDecoder = new StringDecoder('utf8');
      text =
        head +
        this.#decoder.end() +
        droppedNote(this.#dropped) +
        tailDecoder.write(Buffer.concat(this.#tail, this.#tailSize));
      this.#decoder = tailDecoder;
    } else {
      text = head + this.#decoder.write(Buffer.concat(this.#tail, this.#tailSize));
    }
    if (final) text += this.#decoder.end();
    const result = { text, dropped: this.#dropped, marker: this.#marker };
    const leftover = this.#afterMarker;
    this.#head = [];
    this.#headSize = 0;
    this.#tail = [];
    this.#tailSize = 0;
    this.#dropped = 0;
    this.#marker = undefined;
    this.#afterMarker = [];
    for (const chunk of leftover) this.append(chunk);
    return result;
  }

  /** Small chunks (a command printing a byte at a time) are copied together, so they never become millions of buffers. */
  #store(chunk: Buffer): void {
    if (chunk.length >= SMALL_CHUNK) {
      this.#seal();
      this.#place(chunk);
      return;
    }
    if (this.#staging !== undefined && this.#staged + chunk.length > this.#staging.length) this.#seal();
    this.#staging ??= Buffer.allocUnsafe(STAGING_BYTES);
    chunk.copy(this.#staging, this.#staged);
    this.#staged += chunk.length;
  }

  #seal(): void {
    if (this.#staging === undefined) return;
    const staged = this.#staging.subarray(0, this.#staged);
    this.#staging = undefined;
    this.#staged = 0;
    this.#place(staged);
  }

  #place(chunk: Buffer): void {
    let rest = chunk;
    if (this.#tailSize === 0 && this.#dropped === 0 && this.#headSize < this.#headCapacity) {
      const room = this.#headCapacity - this.#headSize;
      const part = rest.subarray(0, room);
      this.#head.push(part);
      this.#headSize += part.length;
      rest = rest.subarray(part.length);
    }
    if (rest.length === 0) return;
    this.#tail.push(rest);
    this.#tailSize += rest.length;
    let excess = this.#tailSize - this.#tailCapacity;
    while (excess > 0) {
      const first = this.#tail[0]!;
      const cut = Math.min(first.length, excess);
      if (cut === first.length) this.#tail.shift();
      else this.#tail[0] = first.subarray(cut);
      this.#tailSize -= cut;
      this.#dropped += cut;
      excess -= cut;
    }
  }

  /** Take back the last `count` bytes stored (the start of a marker that arrived in parts). */
  #removeLast(count: number): void {
    this.#seal();
    let left = count;
    for (const parts of [this.#tail, this.#head]) {
      while (left > 0 && parts.length > 0) {
        const last = parts.pop()!;
        const cut = Math.min(last.length, left);
        if (cut < last.length) parts.push(last.subarray(0, last.length - cut));
        if (parts === this.#tail) this.#tailSize -= cut;
        else this.#headSize -= cut;
        left -= cut;
      }
    }
    // what is left was dropped already (a capacity below the marker's length): it no longer counts
    this.#dropped = Math.max(0, this.#dropped - left);
  }
}
