import type { DeltaFrame, SyncFrame } from '@flotilla/api';
import { PendingActions } from '@flotilla/client';
import type { ActionEvent, ConversationStatus, Event } from '@flotilla/events';
import type { CliClient, Subscription } from './cli-client.js';
import { closeError } from './close-error.js';
import { contentText, renderEvent, renderPendingActions, speakerPrefix } from './render-event.js';
import { Spinner } from './spinner.js';
import { createStyle } from './style.js';
import type { Terminal } from './terminal.js';

export type WatchOptions = {
  /** Show events after this seq (0: from the start). */
  readonly afterSeq: number;
  /** Keep watching after the conversation comes to rest. */
  readonly follow: boolean;
  readonly verbose: boolean;
  readonly color: boolean;
  /** Show a spinner while running and quiet (only ever true on a TTY). */
  readonly spinner: boolean;
  /** Stops the watch (Ctrl-C). */
  readonly signal?: AbortSignal;
  /** Reconnect notices (with `verbose`), for stderr. */
  readonly onNotice?: (text: string) => void;
};

export type WatchResult = {
  /** The status the watch ended at (undefined if interrupted before it was known). */
  readonly status: ConversationStatus | undefined;
  readonly lastSeq: number;
  readonly interrupted: boolean;
};

type WatchClient = Pick<CliClient, 'getConversation' | 'searchEvents' | 'subscribe'>;

/**
 * Shows a conversation's events as they happen, streams the agent's text as it is generated,
 * and returns once the conversation comes to rest (anything but `running`) unless `follow`.
 * At `waiting_for_confirmation` it lists the pending actions and how to answer them.
 */
export async function watchConversation(
  client: WatchClient,
  id: string,
  terminal: Terminal,
  options: WatchOptions,
): Promise<WatchResult> {
  await client.getConversation(id); // fails fast on an unknown id, a bad key or an unreachable gateway
  const style = createStyle(options.color);
  const spinner = new Spinner(terminal, options.spinner, style.dim);
  const pending = new PendingActions();
  let live = false;
  let stopping = false;
  let done = false;
  let syncStatus: ConversationStatus | undefined;
  let logStatus: ConversationStatus | undefined;
  let lastSeq = options.afterSeq;
  let streamed = '';
  /** Lines of bookkeeping events that arrived while a streamed line was still open. */
  const deferred: string[] = [];
  let subscription: Subscription | undefined;

  return new Promise<WatchResult>((resolve, reject) => {
    const end = (outcome: { result: WatchResult } | { error: Error }): void => {
      if (done) return;
      done = true;
      spinner.stop();
      terminal.endLine();
      options.signal?.removeEventListener('abort', onAbort);
      subscription?.close();
      if ('error' in outcome) reject(outcome.error);
      else resolve(outcome.result);
    };
    const onAbort = (): void => end({ result: { status: logStatus ?? syncStatus, lastSeq, interrupted: true } });

    const showPending = async (): Promise<void> => {
      let actions = pending.list();
      if (actions.length === 0 && options.afterSeq > 0) actions = await pendingFromLog(client, id);
      if (done) return;
      terminal.lines(renderPendingActions(id, actions, { color: options.color }));
    };

    const reached = (status: ConversationStatus): void => {
      spinner.setActive(status === 'running');
      if (status === 'running') return;
      if (!options.follow) stopping = true; // show nothing that arrives after the resting point
      const shown = status === 'waiting_for_confirmation' ? showPending() : Promise.resolve();
      shown.then(
        () => (options.follow ? undefined : end({ result: { status, lastSeq, interrupted: false } })),
        (error: unknown) => end({ error: error as Error }),
      );
    };

    const goLive = (): void => {
      if (live) return;
      live = true;
      const status = logStatus ?? syncStatus;
      if (status !== undefined) reached(status);
    };

    const onSync = (sync: SyncFrame): void => {
      if (!live) syncStatus = sync.status;
      if (sync.last_seq <= sync.after_seq) goLive(); // nothing to replay
    };

    const onDelta = (delta: DeltaFrame): void => {
      if (done || stopping || delta.kind !== 'text' || delta.text === '') return;
      spinner.touch();
      if (streamed === '') terminal.inline(speakerPrefix('agent', options.color));
      terminal.inline(delta.text);
      streamed += delta.text;
    };

    const onEvent = (event: Event): void => {
      if (done || stopping) return;
      lastSeq = event.seq;
      spinner.touch();
      pending.add(event);
      const render = (omitText: boolean): string[] =>
        renderEvent(event, { color: options.color, verbose: options.verbose, omitText });
      if (streamed !== '' && BOOKKEEPING.has(event.type)) {
        // the step's usage comes before its message or actions: keep the streamed line open for them
        deferred.push(...render(false));
        return;
      }
      let omitText = false;
      if (streamed !== '') {
        // the streamed text becomes this event's text: finish the line instead of repeating it
        const text = streamedText(event)?.trim();
        const already = streamed.trim();
        if (text !== undefined && text.startsWith(already)) {
          terminal.inline(text.slice(already.length));
          omitText = true;
        }
        terminal.endLine();
        streamed = '';
      }
      terminal.lines(render(omitText));
      terminal.lines(deferred.splice(0));
      if (event.type === 'state_change' && event.status !== undefined) {
        logStatus = event.status;
        if (live) reached(event.status);
      }
    };

    options.signal?.addEventListener('abort', onAbort);
    if (options.signal?.aborted) {
      onAbort();
      return;
    }
    subscription = client.subscribe(id, {
      afterSeq: options.afterSeq,
      onSync,
      onEvent,
      onDelta,
      onLive: goLive,
      onReconnect: (reason, delayMs) => {
        if (options.verbose)
          options.onNotice?.(
            `event stream closed (${reason.code} ${reason.reason}); reconnecting in ${Math.round(delayMs)} ms`,
          );
      },
      onClose: (reason) => {
        if (!done) end({ error: closeError(reason.code, reason.reason) });
      },
    });
  });
}

/** Events a step writes around its message or actions without being the streamed text. */
const BOOKKEEPING: ReadonlySet<Event['type']> = new Set(['llm_usage', 'system_prompt', 'execution_started']);

/** The text an event carries that the model streamed: an agent message's, or an action's thought. */
function streamedText(event: Event): string | undefined {
  if (event.type === 'message' && event.source === 'agent') return contentText(event.content);
  if (event.type === 'action') return contentText(event.thought);
  return undefined;
}

/** The pending actions from the log's latest events (when the watch began after them). */
async function pendingFromLog(client: WatchClient, id: string): Promise<ActionEvent[]> {
  const page = await client.searchEvents(id, {
    type: 'action,observation,agent_error,user_rejection,approval',
    order: 'desc',
    limit: 200,
  });
  const pending = new PendingActions();
  for (const event of [...page.items].reverse()) pending.add(event);
  return pending.list();
}
