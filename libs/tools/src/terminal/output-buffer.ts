/**
 * Accumulates a command's output between observations, looks for the
 * completion marker, and bounds memory: beyond `capacity` characters the
 * middle is dropped (head and tail kept) and the number dropped is counted.
 */
export type MarkerMatch = { readonly exitCode: number; readonly cwd: string };

const MAX_MARKER_LINE = 4_200;

export class OutputBuffer {
  #head = '';
  #tail = '';
  #dropped = 0;
  #scanFrom = 0;
  #marker: MarkerMatch | undefined;
  #afterMarker = '';
  readonly #pattern: RegExp;

  constructor(
    marker: string,
    private readonly capacity: number,
  ) {
    this.#pattern = new RegExp(`\\n?${marker} (\\d+) ([^\\n]*)\\n`, 'g');
  }

  get size(): number {
    return this.#head.length + this.#tail.length;
  }

  get marker(): MarkerMatch | undefined {
    return this.#marker;
  }

  append(text: string): void {
    if (this.#marker !== undefined) {
      this.#afterMarker += text;
      return;
    }
    this.#tail += text;
    this.#pattern.lastIndex = this.#scanFrom;
    const match = this.#pattern.exec(this.#tail);
    if (match !== null) {
      this.#marker = { exitCode: Number(match[1]), cwd: match[2] ?? '' };
      this.#afterMarker = this.#tail.slice(match.index + match[0].length);
      this.#tail = this.#tail.slice(0, match.index);
      return;
    }
    this.#scanFrom = Math.max(0, this.#tail.length - MAX_MARKER_LINE);
    this.#enforceCapacity();
  }

  /** Output collected so far (and the marker if the command ended); resets for the next observation. */
  take(): { text: string; dropped: number; marker: MarkerMatch | undefined } {
    const text = this.#head + (this.#dropped > 0 ? `\n[... ${this.#dropped} characters of output were dropped here ...]\n` : '') + this.#tail;
    const result = { text, dropped: this.#dropped, marker: this.#marker };
    const leftover = this.#afterMarker;
    this.#head = '';
    this.#tail = '';
    this.#dropped = 0;
    this.#scanFrom = 0;
    this.#marker = undefined;
    this.#afterMarker = '';
    if (leftover !== '') this.append(leftover);
    return result;
  }

  #enforceCapacity(): void {
    const half = Math.floor(this.capacity / 2);
    if (this.size <= this.capacity) return;
    if (this.#head.length < half) {
      const moved = half - this.#head.length;
      this.#head += this.#tail.slice(0, moved);
      this.#tail = this.#tail.slice(moved);
      this.#scanFrom = Math.max(0, this.#scanFrom - moved);
    }
    if (this.#tail.length > half) {
      const drop = this.#tail.length - half;
      this.#tail = this.#tail.slice(drop);
      this.#dropped += drop;
      this.#scanFrom = Math.max(0, this.#scanFrom - drop);
    }
  }
}
