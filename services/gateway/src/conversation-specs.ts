import { readAgentSpec, SpecRefused, type AgentCatalog, type AgentSpec, type SpecRequest } from '@flotilla/agent';
import type { ConversationSpec, UpdateSpecBody } from '@flotilla/api';
import { draftEvent, type AgentSpecEvent, type EventDraft } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import type { ConversationSnapshot } from '@flotilla/state';
import { ApiError } from './api-error.js';
import type { ConversationCommands } from './conversation-commands.js';

/**
 * The conversations' specs (how their steps are made): made from the operator's catalog and
 * checked against its limits, recorded as agent_spec events, read back where the snapshot says
 * the one in force is.
 */
export class ConversationSpecs {
  constructor(
    readonly commands: ConversationCommands,
    /** The operator's agents: every conversation's spec is made from it. */
    readonly catalog: AgentCatalog,
  ) {}

  /** The spec in force: its agent_spec event, read with one direct get where the snapshot says it is (the default for a log without one). */
  async spec(ref: ConversationRef): Promise<ConversationSpec> {
    const { snapshot } = await this.commands.current(ref);
    const event = await this.event(ref, snapshot);
    if (!event) return { spec: this.catalog.defaultSpec, seq: null, template: null, reason: null };
    return { spec: event.spec, seq: event.seq, template: event.template ?? null, reason: event.reason };
  }

  /**
   * A new spec, from the next step on: the request's template and fields over the spec in force,
   * made and checked as at creation, appended as an agent_spec event. A spec changed meanwhile by
   * another request is a 409 (the fields were meant for the one read).
   */
  async update(ref: ConversationRef, body: UpdateSpecBody): Promise<ConversationSpec> {
    const { snapshot } = await this.commands.current(ref);
    const event = await this.event(ref, snapshot);
    // an unreadable spec (a newer schema's) is not a base to build on: the request's fields go over the default
    const current = event ? readAgentSpec(event) : undefined;
    const base = current?.ok ? current.spec : this.catalog.defaultSpec;
    const { spec, template } = this.resolve(
      {
        ...(body.template !== undefined ? { template: body.template } : {}),
        ...(body.spec !== undefined ? { spec: body.spec } : {}),
      },
      base,
    );
    const seenSeq = snapshot.agent_spec?.seq ?? null;
    await this.commands.command(ref, (state) => {
      if (((state as ConversationSnapshot).agent_spec?.seq ?? null) !== seenSeq)
        throw new ApiError(409, 'conflict', "The conversation's spec changed meanwhile: read it again and retry.");
      return [specDraft(ref, spec, body.reason ?? 'changed by the user', template)];
    });
    return this.spec(ref);
  }

  /** A spec from a request, or the request's refusal as the API's error (400 invalid, 403 outside the operator's limits), naming the field. */
  resolve(request: SpecRequest, base?: AgentSpec): { spec: AgentSpec; template?: string } {
    try {
      return this.catalog.resolve(request, base);
    } catch (error) {
      if (!(error instanceof SpecRefused)) throw error;
      const issues = error.issues.map((issue) => ({ path: `body.${issue.path}`, message: issue.message }));
      const first = issues[0]!;
      throw new ApiError(
        error.status,
        error.status === 403 ? 'spec_not_allowed' : 'validation_failed',
        `${first.path}: ${first.message}`,
        issues,
      );
    }
  }

  /** 400 images_not_supported when the model of the conversation's spec in force does not take images (404 when there is no conversation). */
  async takesImages(ref: ConversationRef): Promise<void> {
    const { spec } = await this.spec(ref);
    const llm = (spec as { llm?: { vision?: unknown; model?: unknown } }).llm;
    if (llm?.vision !== false) return;
    const issues = [{ path: 'body.images', message: `the model ${String(llm.model)} does not take images` }];
    throw new ApiError(
      400,
      'images_not_supported',
      `body.images: the conversation's model (${String(llm.model)}) does not take images (its spec says llm.vision: false): send text only, or switch to a model that takes them (PATCH …/spec)`,
      issues,
    );
  }

  /** The agent_spec event the snapshot points to, if any. */
  async event(ref: ConversationRef, snapshot: ConversationSnapshot): Promise<AgentSpecEvent | undefined> {
    const position = snapshot.agent_spec;
    if (!position) return undefined;
    const from = {
      afterSeq: position.seq - 1,
      afterStreamSeq: position.stream_seq - 1,
      untilStreamSeq: position.stream_seq,
    };
    let found: AgentSpecEvent | undefined;
    for await (const commit of this.commands.log.read(ref, from)) {
      for (const event of commit.events) if (event.seq === position.seq && event.type === 'agent_spec') found = event;
    }
    return found;
  }
}

/** The event recording a conversation's spec: the user's choice (through the gateway, which made and checked it). */
export function specDraft(
  ref: ConversationRef,
  spec: AgentSpec,
  reason: string,
  template: string | undefined,
): EventDraft {
  return draftEvent({ ...ref, source: 'user' }, 'agent_spec', {
    spec,
    reason,
    ...(template !== undefined ? { template } : {}),
  });
}
