import { ProtocolErrorCode } from '@flotilla/events';
import { conversationSubject, decodeCommit, type ConversationRef, type StoredCommit } from '@flotilla/log';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { InvalidMessage } from './conversation-auditor.js';
import type { LogLocation } from './log-location.js';

export type SubjectEntry = { readonly kind: 'commit'; readonly commit: StoredCommit } | { readonly kind: 'invalid'; readonly message: InvalidMessage };

const READ_BATCH = 1024;

/**
 * Every message stored on a conversation's subject, up to its last message as of the call, decoded
 * one by one — WITHOUT the log reader's repairs. `EventLog.read` skips a commit that does not
 * continue the log (reporting only a reason string); the auditor wants to see it, so that a gap,
 * an overlap or a duplicate is reported under its own rule. Messages that do not decode as a
 * commit of this conversation (foreign, corrupt, another conversation's, a newer protocol) come
 * back as `invalid` entries, never as errors.
 */
export async function* readSubject(location: LogLocation, ref: ConversationRef, signal?: AbortSignal): AsyncGenerator<SubjectEntry> {
  const subject = conversationSubject(location.subjectPrefix, ref);
  const last = await location.jsm.streams.getMessage(location.streamName, { last_by_subj: subject });
  if (!last || signal?.aborted) return;
  const consumer = await jetstream(location.nc).consumers.get(location.streamName, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: 1,
  });
  const messages = await consumer.consume({ max_messages: READ_BATCH });
  const onAbort = (): void => void messages.stop();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const message of messages) {
      yield decode(message, ref);
      if (message.seq >= last.seq || message.info.pending === 0) break;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await messages.close().catch(() => undefined);
  }
}

function decode(message: Parameters<typeof decodeCommit>[0], ref: ConversationRef): SubjectEntry {
  try {
    const decoded = decodeCommit(message, ref);
    if (decoded.ok) return { kind: 'commit', commit: decoded.commit };
    return {
      kind: 'invalid',
      message: { streamSeq: message.seq, reason: decoded.reason, unsupportedVersion: decoded.error?.code === ProtocolErrorCode.UnsupportedVersion },
    };
  } catch (error) {
    return { kind: 'invalid', message: { streamSeq: message.seq, reason: `undecodable: ${(error as Error).message}` } };
  }
}
