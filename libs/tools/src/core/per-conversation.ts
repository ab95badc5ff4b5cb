/**
 * Runs tasks one at a time per conversation (a tool's calls on one conversation share its shell or
 * browser), in the order they come, each whether or not the one before failed.
 */
export class PerConversation {
  readonly #queues = new Map<string, Promise<unknown>>();

  /** Run `task` exclusively for this conversation. */
  exclusive<T>(conversationId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(conversationId) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.catch(() => undefined);
    this.#queues.set(conversationId, settled);
    void settled.then(() => {
      if (this.#queues.get(conversationId) === settled) this.#queues.delete(conversationId);
    });
    return next;
  }
}
