/** Earlier contents of edited files, per conversation and path; `null` means the file did not exist. */
export class EditHistory {
  readonly #entries = new Map<string, (string | null)[]>();

  constructor(private readonly depth = 20) {}

  push(conversationId: string, filePath: string, previous: string | null): void {
    const key = `${conversationId}\0${filePath}`;
    const stack = this.#entries.get(key) ?? [];
    stack.push(previous);
    if (stack.length > this.depth) stack.shift();
    this.#entries.set(key, stack);
  }

  /** The content before the latest edit, or `undefined` when there is none. */
  pop(conversationId: string, filePath: string): string | null | undefined {
    const stack = this.#entries.get(`${conversationId}\0${filePath}`);
    return stack === undefined || stack.length === 0 ? undefined : stack.pop();
  }
}
