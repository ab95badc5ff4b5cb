import { ProtocolErrorCode } from '@flotilla/events';
import {
  conversationFilter,
  decodeCommit,
  legacyConversationSubject,
  readSubjectRange,
  type ConversationRef,
  type RawMessage,
  type StoredCommit,
} from '@flotilla/log';
import type { InvalidMessage } from './conversation-auditor.js';
import type { LogLocation } from './log-location.js';

export type SubjectEntry =
  | { readonly kind: 'commit'; readonly commit: StoredCommit }
  | { readonly kind: 'invalid'; readonly message: InvalidMessage };

/**
 * Every message stored on a conversation's subject, up to its last message as of the call, decoded
 * one by one — WITHOUT the log reader's repairs. `EventLog.read` skips a commit that does not
 * continue the log (reporting only a reason string); the auditor wants to see it, so that a gap,
 * an overlap or a duplicate is reported under its own rule. Messages that do not decode as a
 * commit of this conversation (foreign, corrupt, another conversation's, a newer protocol) come
 * back as `invalid` entries, never as errors.
 */
export async function* readSubject(
  location: LogLocation,
  ref: ConversationRef,
  signal?: AbortSignal,
): AsyncGenerator<SubjectEntry> {
  // a conversation begun before commits carried their kind has its first commits on its legacy subject
  for (const subject of [
    legacyConversationSubject(location.subjectPrefix, ref),
    conversationFilter(location.subjectPrefix, ref),
  ]) {
    const last = await location.jsm.streams.getMessage(location.streamName, { last_by_subj: subject });
    if (!last) continue;
    if (signal?.aborted) return;
    // direct-get batches (no consumer); what a replica that is behind leaves out, the leader answers
    const leaderGet = async (seq: number): Promise<RawMessage | null> => {
      // a message get takes `next_by_subj` as a direct get does (nats.js types only `seq`)
      const query = { seq, next_by_subj: subject };
      const message = await location.jsm.streams.getMessage(location.streamName, query);
      return message && { subject: message.subject, seq: message.seq, data: message.data, headers: message.header };
    };
    for await (const message of readSubjectRange(location.nc, {
      stream: location.streamName,
      subject,
      from: 1,
      until: last.seq,
      signal,
      leaderGet,
    })) {
      yield decode(message, ref);
    }
  }
}

function decode(message: RawMessage, ref: ConversationRef): SubjectEntry {
  try {
    const decoded = decodeCommit(message, ref);
    if (decoded.ok) return { kind: 'commit', commit: decoded.commit };
    return {
      kind: 'invalid',
      message: {
        streamSeq: message.seq,
        reason: decoded.reason,
        unsupportedVersion: decoded.error?.code === ProtocolErrorCode.UnsupportedVersion,
      },
    };
  } catch (error) {
    return { kind: 'invalid', message: { streamSeq: message.seq, reason: `undecodable: ${(error as Error).message}` } };
  }
}
