import { newId } from './ids.js';
import type { EventDraft, EventType } from './event.js';
import type { EventSource } from './schemas/envelope.js';
import { protocolVersionOf } from './version.js';

/** Where a new event is going and who writes it. */
export type DraftContext = {
  readonly tenant: string;
  readonly conversation: string;
  readonly source: EventSource;
  readonly parent?: string;
  /** Defaults to the wall clock; tests pass a fixed clock. */
  readonly now?: () => Date;
};

type DraftBody<T extends EventType> = Omit<
  Extract<EventDraft, { type: T }>,
  'v' | 'id' | 'tenant' | 'conversation' | 'source' | 'timestamp' | 'parent' | 'type'
> & { readonly id?: string; readonly source?: EventSource; readonly parent?: string };

/**
 * Builds an event draft with the envelope filled in (version, id, tenant, conversation,
 * source, UTC timestamp, parent). The version is the oldest that can express the event: its
 * type's, or a later field's it uses (`protocolVersionOf`). The log validates the draft and assigns `seq` on append.
 */
export function draftEvent<T extends EventType>(
  context: DraftContext,
  type: T,
  body: DraftBody<T>,
): Extract<EventDraft, { type: T }> {
  const { id, source, parent, ...payload } = body;
  const resolvedParent = parent ?? context.parent;
  return {
    v: protocolVersionOf({ type, ...payload }),
    id: id ?? newId(),
    type,
    tenant: context.tenant,
    conversation: context.conversation,
    source: source ?? context.source,
    timestamp: (context.now?.() ?? new Date()).toISOString(),
    ...(resolvedParent === undefined ? {} : { parent: resolvedParent }),
    ...payload,
  } as unknown as Extract<EventDraft, { type: T }>;
}
