import type { CliClient, Subscription } from './cli-client.js';
import { closeError } from './close-error.js';
import type { Terminal } from './terminal.js';

export type TailOptions = {
  readonly afterSeq: number;
  /** Keep printing new events instead of stopping at the end of the log. */
  readonly follow: boolean;
  readonly signal?: AbortSignal;
};

export type TailResult = { readonly lastSeq: number; readonly interrupted: boolean };

/** Prints every event after `afterSeq` as one JSON line, in order, until the end of the log (or for ever with `follow`). */
export async function tailConversation(
  client: Pick<CliClient, 'getConversation' | 'subscribe'>,
  id: string,
  terminal: Terminal,
  options: TailOptions,
): Promise<TailResult> {
  await client.getConversation(id); // fails fast on an unknown id, a bad key or an unreachable gateway
  let lastSeq = options.afterSeq;
  let done = false;
  let subscription: Subscription | undefined;
  return new Promise<TailResult>((resolve, reject) => {
    const end = (outcome: { result: TailResult } | { error: Error }): void => {
      if (done) return;
      done = true;
      options.signal?.removeEventListener('abort', onAbort);
      subscription?.close();
      if ('error' in outcome) reject(outcome.error);
      else resolve(outcome.result);
    };
    const onAbort = (): void => end({ result: { lastSeq, interrupted: true } });
    const atTail = (): void => {
      if (!options.follow) end({ result: { lastSeq, interrupted: false } });
    };
    options.signal?.addEventListener('abort', onAbort);
    if (options.signal?.aborted) {
      onAbort();
      return;
    }
    subscription = client.subscribe(id, {
      afterSeq: options.afterSeq,
      onSync: (sync) => {
        if (sync.last_seq <= sync.after_seq) atTail();
      },
      onEvent: (event) => {
        if (done) return;
        lastSeq = event.seq;
        terminal.line(JSON.stringify(event));
      },
      onLive: atTail,
      onClose: (reason) => {
        if (!done) end({ error: closeError(reason.code, reason.reason) });
      },
    });
  });
}
