import { z } from 'zod';
import { ProtocolError, ProtocolErrorCode, type ProtocolIssue } from './errors.js';
import { assertSupportedVersion, describeIssues, Event, issuesOf, type EventType } from './event.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from './version.js';
import { ConversationId, EventId, TenantId } from './ids.js';
import { ProtocolVersionField } from './schemas/envelope.js';

/**
 * A commit: the unit of append. One JetStream message holding one or more events that
 * become visible together. Event `seq`s are contiguous from `first_seq`. Its `v` is at least
 * each of its events' (writers use the newest of them), so a reader that does not support a
 * commit's version stops at the commit, before it could misread one of its events.
 */
export const Commit = z.strictObject({
  v: ProtocolVersionField,
  commit: EventId,
  tenant: TenantId,
  conversation: ConversationId,
  first_seq: z.number().int().positive(),
  events: z.array(z.unknown()).min(1).max(1024),
});
export type Commit = Omit<z.infer<typeof Commit>, 'events'> & { events: Event[] };

/** Header names on every commit message. Consumers can route on them without parsing bodies. */
export const CommitHeader = {
  MessageId: 'Nats-Msg-Id',
  ExpectedLastSubjectSequence: 'Nats-Expected-Last-Subject-Sequence',
  Protocol: 'Flotilla-Protocol',
  EventTypes: 'Flotilla-Event-Types',
  FirstSeq: 'Flotilla-First-Seq',
  EventCount: 'Flotilla-Event-Count',
  ContentType: 'Content-Type',
  /**
   * Optional: the W3C Trace Context of the span that appended the commit (`00-<trace>-<span>-<flags>`),
   * so a service reacting to the commit continues the trace. Readers ignore a malformed value.
   */
  Traceparent: 'traceparent',
} as const;

export const COMMIT_CONTENT_TYPE = 'application/vnd.flotilla.commit+json';

/** The distinct event types of a commit, in first-seen order, as carried in the header. */
export function commitEventTypes(events: readonly { type: EventType }[]): EventType[] {
  return [...new Set(events.map((event) => event.type))];
}

/**
 * Validates a whole commit: the envelope, every event, and the placement rules
 * (same tenant and conversation, contiguous seqs). Throws a ProtocolError naming the
 * offending field, e.g. `events.2.tool_call_id`.
 */
export type ParseCommitOptions = {
  /** A faster check that, when it passes, vouches for an event exactly as zod would. */
  readonly isValidEvent?: (value: unknown) => value is Event;
  /** Likewise for the commit's own fields (events unchecked). */
  readonly isValidEnvelope?: (value: unknown) => boolean;
};

export function parseCommit(value: unknown, options: ParseCommitOptions = {}): Commit {
  assertSupportedVersion(value, 'commit');
  let head: z.infer<typeof Commit>;
  if (options.isValidEnvelope?.(value)) {
    head = value as z.infer<typeof Commit>;
  } else {
    const parsed = Commit.safeParse(value);
    if (!parsed.success) throw invalid(issuesOf(parsed.error));
    head = parsed.data;
  }
  const meta = {
    v: head.v,
    commit: head.commit,
    tenant: head.tenant,
    conversation: head.conversation,
    first_seq: head.first_seq,
  };
  const rawEvents = head.events;
  const issues: ProtocolIssue[] = [];
  const events: Event[] = [];
  // every commit a reader meets takes this loop: no strings are built unless something is wrong
  for (let index = 0; index < rawEvents.length; index += 1) {
    const raw = rawEvents[index];
    if (!isSupportedVersion(raw)) assertSupportedVersion(raw, `event ${index} of the commit`, `events.${index}.v`);
    let event: Event;
    if (options.isValidEvent?.(raw)) {
      event = raw;
    } else {
      const parsed = Event.safeParse(raw);
      if (!parsed.success) {
        issues.push(...issuesOf(parsed.error, `events.${index}.`));
        continue;
      }
      event = parsed.data;
    }
    if (
      event.tenant !== meta.tenant ||
      event.conversation !== meta.conversation ||
      event.v > meta.v ||
      event.seq !== meta.first_seq + index
    ) {
      issues.push(...placementIssues(event, index, meta));
    }
    events.push(event);
  }
  if (issues.length > 0) throw invalid(issues);
  return { ...meta, events };
}

function isSupportedVersion(value: unknown): boolean {
  const version = typeof value === 'object' && value !== null ? (value as { v?: unknown }).v : undefined;
  return typeof version === 'number' && SUPPORTED_PROTOCOL_VERSIONS.includes(version);
}

/** What places event `index` wrongly in its commit: another tenant or conversation, a newer version, the wrong seq. */
function placementIssues(event: Event, index: number, meta: Omit<Commit, 'events'>): ProtocolIssue[] {
  const prefix = `events.${index}.`;
  const issues: ProtocolIssue[] = [];
  if (event.tenant !== meta.tenant)
    issues.push({ path: `${prefix}tenant`, message: `must be the commit's tenant "${meta.tenant}"` });
  if (event.conversation !== meta.conversation)
    issues.push({ path: `${prefix}conversation`, message: `must be the commit's conversation "${meta.conversation}"` });
  if (event.v > meta.v) issues.push({ path: `${prefix}v`, message: `must not be newer than its commit (v ${meta.v})` });
  if (event.seq !== meta.first_seq + index)
    issues.push({ path: `${prefix}seq`, message: `must be ${meta.first_seq + index} (first_seq + index)` });
  return issues;
}

function invalid(issues: readonly ProtocolIssue[]): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidCommit, `invalid commit: ${describeIssues(issues)}`, issues);
}
