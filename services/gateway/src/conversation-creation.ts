import { messageCommand, readAgentSpec } from '@flotilla/agent';
import type { Conversation, CreateConversationBody, ForkConversationBody } from '@flotilla/api';
import { draftEvent, newId, withPositionalIds, type EventDraft } from '@flotilla/events';
import { appendSurely, EMPTY_TAIL, isConflict, type ConversationRef } from '@flotilla/log';
import { initialState } from '@flotilla/state';
import { buildView, planBranch } from '@flotilla/view';
import { ApiError } from './api-error.js';
import { checkBranchPoint } from './conversation-branching.js';
import type { ConversationCommands } from './conversation-commands.js';
import { specDraft, type ConversationSpecs } from './conversation-specs.js';

type Created = { conversation: Conversation; created: boolean };

/**
 * New conversations, fresh or forked from another: each one's first commit, written expecting an
 * empty log, holds its state, its spec and (when the body has one) its first message and run.
 */
export class ConversationCreation {
  constructor(
    readonly commands: ConversationCommands,
    readonly specs: ConversationSpecs,
  ) {}

  /** Create with a client-given or fresh id; an existing id returns it (created false). */
  async create(tenant: string, body: CreateConversationBody): Promise<Created> {
    checkRunHasMessage(body);
    const ref = { tenant, conversation: body.id ?? newId() };
    const { spec, template } = this.specs.resolve({
      ...(body.template !== undefined ? { template: body.template } : {}),
      ...(body.spec !== undefined ? { spec: body.spec } : {}),
    });
    const admitted = body.run ? this.commands.admit(tenant) : 'start';
    const context = { ...ref, source: 'system' as const };
    const drafts: EventDraft[] = [
      draftEvent(context, 'state_change', {
        status: 'idle',
        reason: 'conversation created',
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.tags !== undefined ? { tags: body.tags } : {}),
      }),
      // how its steps are made is in its log from the start (DESIGN invariant 14)
      specDraft(ref, spec, 'conversation created', template),
    ];
    return this.#createAdmitted(ref, drafts, body, admitted);
  }

  /**
   * A new conversation of the same tenant that starts from the parent's view after `at_seq`: its
   * first commit holds its spec (the parent's in force, or the one asked for), a `branch` event
   * naming the parent and the point, and copies of that view (nothing outside it: no control
   * events, nothing a condensation forgot). The parent is not written to.
   */
  async fork(parent: ConversationRef, body: ForkConversationBody): Promise<Created> {
    checkRunHasMessage(body);
    const { snapshot, tail } = await this.commands.current(parent);
    const { events } = await this.commands.log.readEvents(parent, { until: tail });
    const seq = body.at_seq ?? tail.lastSeq;
    checkBranchPoint(snapshot, events, seq, 'body.at_seq');
    const ownSpec = body.template !== undefined || body.spec !== undefined;
    const base = ownSpec ? undefined : await this.specs.event(parent, snapshot);
    const baseSpec = base ? readAgentSpec(base) : undefined;
    const { spec, template } = ownSpec
      ? this.specs.resolve({
          ...(body.template !== undefined ? { template: body.template } : {}),
          ...(body.spec !== undefined ? { spec: body.spec } : {}),
        })
      : { spec: baseSpec?.ok ? baseSpec.spec : this.specs.catalog.defaultSpec, template: base?.template };
    const ref = { tenant: parent.tenant, conversation: body.id ?? newId() };
    // a child with the parent's spec keeps the parent's system prompt; another spec makes its own
    const plan = planBranch(undefined, buildView(events.filter((event) => event.seq <= seq)), ref, {
      systemPrompt: !ownSpec,
    });
    const admitted = body.run ? this.commands.admit(ref.tenant) : 'start';
    const title = body.title ?? (snapshot.title === null ? undefined : `${snapshot.title.slice(0, 193)} (fork)`);
    const drafts: EventDraft[] = [
      draftEvent({ ...ref, source: 'system' }, 'state_change', {
        status: 'idle',
        reason: `forked from ${parent.conversation} after event ${seq}`,
        ...(title !== undefined ? { title } : {}),
        tags: body.tags ?? snapshot.tags,
      }),
      specDraft(ref, spec, `forked from ${parent.conversation}`, template),
      draftEvent({ ...ref, source: 'user' }, 'branch', {
        kind: 'fork',
        from: { conversation: parent.conversation, seq },
        forgotten_event_ids: [],
        copied: plan.copies.length,
      }),
      ...plan.copies,
    ];
    return this.#createAdmitted(ref, drafts, body, admitted);
  }

  /** A new conversation; a run the tenant's limit queues starts it without running, then waits in the queue. */
  async #createAdmitted(
    ref: ConversationRef,
    drafts: readonly EventDraft[],
    body: { readonly message?: string; readonly run?: boolean },
    admitted: 'start' | 'queue',
  ): Promise<Created> {
    if (admitted === 'start') return this.#createWith(ref, drafts, body);
    const result = await this.#createWith(ref, drafts, { ...body, run: false });
    if (!result.created) return result;
    await this.commands.admission.runQueue!.enqueue(ref);
    return { conversation: await this.commands.get(ref), created: true };
  }

  /**
   * A new conversation's first commit (with the body's first message and run, if any), expecting
   * an empty log: of two creates of one id, exactly one wins and the other gets the existing
   * conversation (under a fixed commit id the second would find the first's commit as its own and
   * report it created).
   */
  async #createWith(
    ref: ConversationRef,
    drafts: readonly EventDraft[],
    body: { readonly message?: string; readonly run?: boolean },
  ): Promise<Created> {
    const first = body.message
      ? [...drafts, ...messageCommand(initialState(), ref, body.message, { run: body.run ?? false })]
      : drafts;
    try {
      await appendSurely(this.commands.log, ref, withPositionalIds(first, 1), { expected: EMPTY_TAIL });
    } catch (error) {
      if (!isConflict(error)) throw error;
      return { conversation: await this.commands.get(ref), created: false };
    }
    return { conversation: await this.commands.get(ref), created: true };
  }
}

/** 400 for a body that starts a run without a first message. */
function checkRunHasMessage(body: { readonly message?: string; readonly run?: boolean }): void {
  if (body.run && !body.message)
    throw new ApiError(400, 'validation_failed', 'body.run: starting a run needs a first message', [
      { path: 'body.run', message: 'needs body.message' },
    ]);
}
