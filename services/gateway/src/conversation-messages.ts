import { interruptForMessage, messageCommand } from '@flotilla/agent';
import type { CommandResult, ImageUpload } from '@flotilla/api';
import type { EventDraft, OnBusy } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import type { CurrentSnapshot } from '@flotilla/state';
import { ApiError } from './api-error.js';
import { answeredPointAtOrBefore, checkBranchPoint, rewindDrafts } from './conversation-branching.js';
import type { ConversationCommands } from './conversation-commands.js';
import type { ConversationSpecs } from './conversation-specs.js';
import { storeMessageImages, type ImageWriter } from './message-images.js';

/** A user's message, at rest or while the conversation runs (double-texting): what it says, and what it does to the run. */
export type UserMessage = {
  readonly text?: string;
  readonly images?: readonly ImageUpload[];
  readonly on_busy?: OnBusy | undefined;
};

/** The users' messages to their conversations, and what a message does to a run it finds going on. */
export class ConversationMessages {
  constructor(
    readonly commands: ConversationCommands,
    readonly specs: ConversationSpecs,
    /** Where the images of user messages go (undefined: a message with images is answered 503). */
    readonly images: ImageWriter | undefined,
  ) {}

  /**
   * A user message: its text and its images (checked, stored in the images bucket and named in
   * the event; refused with 400 images_not_supported when the spec in force has a model that does
   * not take images, before anything is stored). While the conversation runs, its `on_busy` (else
   * the spec's) says what it does to the run (OnBusy; `#busyDrafts`).
   */
  send(ref: ConversationRef, message: UserMessage, run: boolean): Promise<CommandResult> {
    // the turn is taken on arrival, the images stored in it: a message keeps its place among the commands around it
    return this.commands.inTurn(
      ref,
      async () => {
        const uploads = message.images ?? [];
        if (uploads.length > 0) await this.specs.takesImages(ref);
        const images = await storeMessageImages(this.images, ref.tenant, uploads, 'body.images');
        return this.commands.decideAndAppend(
          ref,
          async (state, current) => [
            ...(state.status === 'running'
              ? await this.#busyDrafts(
                  ref,
                  current,
                  message.on_busy ?? current.snapshot.agent_spec?.on_busy ?? 'enqueue',
                )
              : []),
            ...messageCommand(state, ref, message.text ?? '', { run, images }),
          ],
          { admit: run },
        );
      },
      { bounded: true },
    );
  }

  /**
   * What comes before a message to a running conversation: nothing (`enqueue`); a 409 naming
   * where the run began (`reject`); an interrupt and the rejection of calls not started
   * (`interrupt`); those and a rewind to where the run began (`rollback`): what the run did
   * since leaves the model's view, the log keeping it (the point moves back past calls still
   * waiting there, so the view holds no call without its answer).
   */
  async #busyDrafts(ref: ConversationRef, current: CurrentSnapshot, onBusy: OnBusy): Promise<EventDraft[]> {
    const { snapshot, tail } = current;
    const run = snapshot.run_started;
    switch (onBusy) {
      case 'enqueue':
        return [];
      case 'reject':
        throw new ApiError(
          409,
          'conversation_busy',
          `The conversation is running${run ? ` (the run began at event ${run.seq}, ${run.at})` : ''}: wait for it to end, or send the message with on_busy enqueue, interrupt or rollback.`,
        );
      case 'interrupt':
        return interruptForMessage(snapshot, ref);
      case 'rollback': {
        const stop = interruptForMessage(snapshot, ref);
        if (!run) return stop;
        const { events } = await this.commands.log.readEvents(ref, { until: tail });
        const point = answeredPointAtOrBefore(events, run.seq);
        if (point === 0 || point >= tail.lastSeq) return stop;
        checkBranchPoint(snapshot, events, point, 'on_busy');
        return [...stop, ...rewindDrafts(ref, events, point, 'rolled back by a new user message')];
      }
    }
  }
}
