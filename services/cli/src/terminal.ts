/** Where the CLI writes: process.stdout / process.stderr, or a buffer in tests. */
export type Output = { write(text: string): unknown; readonly isTTY?: boolean };

const CLEAR_LINE = '\r\u001b[K';

/**
 * Line-oriented output that can also stream text inline (token deltas) and show a transient
 * overlay line (the spinner) that is erased before anything else is written.
 */
export class Terminal {
  #midLine = false;
  #overlay = false;

  constructor(readonly output: Output) {}

  get isTTY(): boolean {
    return this.output.isTTY === true;
  }
  /** Inline text was written and its line is not ended yet. */
  get midLine(): boolean {
    return this.#midLine;
  }

  line(text: string): void {
    this.#clearOverlay();
    this.output.write(`${this.#midLine ? '\n' : ''}${text}\n`);
    this.#midLine = false;
  }

  lines(texts: readonly string[]): void {
    for (const text of texts) this.line(text);
  }

  inline(text: string): void {
    if (text === '') return;
    this.#clearOverlay();
    this.output.write(text);
    this.#midLine = !text.endsWith('\n');
  }

  endLine(): void {
    if (this.#midLine) this.inline('\n');
  }

  /** A transient line (only between full lines): replaced by the next overlay, erased by any other write. */
  overlay(text: string): void {
    if (this.#midLine) return;
    this.output.write(`${CLEAR_LINE}${text}`);
    this.#overlay = true;
  }

  clearOverlay(): void {
    this.#clearOverlay();
  }

  #clearOverlay(): void {
    if (!this.#overlay) return;
    this.output.write(CLEAR_LINE);
    this.#overlay = false;
  }
}
