import {
  COMMIT_CONTENT_TYPE,
  CommitHeader,
  commitEventTypes,
  commitVersionOf,
  describeIssues,
  positionalIdIssues,
  readCommit,
  ProtocolError,
  type Event,
} from '@flotilla/events';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import type { ConversationRef } from './conversation-ref.js';
import { LogError, LogErrorCode } from './errors.js';
import type { StoredCommit } from './stored-commit.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export type EncodedCommit = { readonly data: Uint8Array; readonly headers: MsgHdrs };

/**
 * Serialises a validated commit and the headers consumers route on. The commit's version is the
 * newest of its events' (1 unless it holds an event type of a later version). Refuses positional
 * event ids that name another commit (a lookup by id trusts the position an id says).
 */
export function encodeCommit(id: string, ref: ConversationRef, events: readonly Event[]): EncodedCommit {
  const firstSeq = events[0]?.seq ?? 0;
  const issues = positionalIdIssues(events, firstSeq);
  if (issues.length > 0)
    throw new LogError(LogErrorCode.InvalidEvent, `refused to append invalid events: ${describeIssues(issues)}`, {
      issues,
    });
  const version = commitVersionOf(events);
  const body = {
    v: version,
    commit: id,
    tenant: ref.tenant,
    conversation: ref.conversation,
    first_seq: firstSeq,
    events,
  };
  const headers = natsHeaders();
  headers.set(CommitHeader.Protocol, String(version));
  headers.set(CommitHeader.EventTypes, commitEventTypes(events).join(','));
  headers.set(CommitHeader.FirstSeq, String(firstSeq));
  headers.set(CommitHeader.EventCount, String(events.length));
  headers.set(CommitHeader.ContentType, COMMIT_CONTENT_TYPE);
  return { data: encoder.encode(JSON.stringify(body)), headers };
}

/** The parts of a NATS message a decoder needs (JsMsg and StoredMsg both have them). */
export type RawMessage = {
  readonly subject: string;
  readonly seq: number;
  readonly data: Uint8Array;
  readonly headers?: MsgHdrs | undefined;
};

export type DecodeResult = { ok: true; commit: StoredCommit } | { ok: false; reason: string; error?: ProtocolError };

/** Header-only placement of a commit, read without parsing its body. */
export type CommitPlacement = { readonly firstSeq: number; readonly count: number };

export function placementOf(message: { readonly headers?: MsgHdrs | undefined }): CommitPlacement | undefined {
  const headers = message.headers;
  if (!headers || headers.get(CommitHeader.Protocol) === '') return undefined;
  const firstSeq = Number(headers.get(CommitHeader.FirstSeq));
  const count = Number(headers.get(CommitHeader.EventCount));
  if (!Number.isSafeInteger(firstSeq) || firstSeq < 1 || !Number.isSafeInteger(count) || count < 1) return undefined;
  return { firstSeq, count };
}

/** The event types a commit's header names, read without parsing its body (none for a foreign message). */
export function eventTypesOf(message: { readonly headers?: MsgHdrs | undefined }): string[] {
  return (message.headers?.get(CommitHeader.EventTypes) ?? '').split(',').filter(Boolean);
}

/**
 * Decodes and validates one message of a conversation subject. Never throws for bad
 * input: foreign and corrupt messages come back as `{ ok: false, reason }`.
 */
export function decodeCommit(message: RawMessage, ref: ConversationRef): DecodeResult {
  // The body alone decides: headers are for routing without parsing, and reading them would
  // cost more than the body. A body that is not a commit is reported as foreign or corrupt.
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(message.data));
  } catch (error) {
    return { ok: false, reason: `foreign message: the body is not UTF-8 JSON (${(error as Error).message})` };
  }
  if (typeof body !== 'object' || body === null || !('commit' in body) || !('v' in body)) {
    return { ok: false, reason: 'foreign message: the body is not a Flotilla commit' };
  }
  let commit;
  try {
    commit = readCommit(body);
  } catch (error) {
    if (error instanceof ProtocolError) return { ok: false, reason: error.message, error };
    throw error;
  }
  if (commit.tenant !== ref.tenant || commit.conversation !== ref.conversation) {
    return { ok: false, reason: `commit names ${commit.tenant}/${commit.conversation} but sits on ${message.subject}` };
  }
  return {
    ok: true,
    commit: {
      streamSeq: message.seq,
      id: commit.commit,
      tenant: commit.tenant,
      conversation: commit.conversation,
      firstSeq: commit.first_seq,
      lastSeq: commit.first_seq + commit.events.length - 1,
      events: commit.events,
    },
  };
}
