// The streamed text of a run's model calls, kept per call, so a streamed answer is exactly the
// agent's final message: text a call wrote before it made tool calls was a step, not the answer.
import type { Event } from '@flotilla/events';

/** Feed it the run's deltas and events in order; ask it for the answer's pieces at the end. */
export class AnswerPieces {
  /** The text deltas of the model call in progress. */
  #current: string[] = [];
  /** The deltas of the call that wrote the last agent message. */
  #lastMessage: string[] = [];

  delta(text: string): void {
    this.#current.push(text);
  }

  event(event: Event): void {
    if (event.type === 'action') this.#current = [];
    else if (event.type === 'message' && event.role === 'assistant') {
      this.#lastMessage = this.#current;
      this.#current = [];
    }
  }

  /**
   * The pieces that make `answer`: as the model streamed them when they add up to it, else the
   * answer whole (a `finish` tool's message, a retried call, deltas dropped for a slow socket).
   */
  piecesOf(answer: string): string[] {
    return this.#lastMessage.length > 0 && this.#lastMessage.join('') === answer ? [...this.#lastMessage] : [answer];
  }
}
