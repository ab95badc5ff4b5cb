import { ProtocolErrorCode, type ProtocolIssue } from '@flotilla/events';
import { decodeCommit, type RawMessage } from './codec.js';
import type { ConversationMessages } from './conversation-messages.js';
import type { ConversationRef } from './conversation-ref.js';
import { LogError, LogErrorCode } from './errors.js';
import type { EventLogOptions, InvalidMessagePolicy } from './event-log-options.js';
import type { StoredCommit } from './stored-commit.js';

/** A bounded or live read, resolved: where it starts and stops, and about how many messages it covers. */
export type ScanPlan = {
  readonly start: number;
  readonly until: number | undefined;
  readonly afterSeq: number;
  readonly policy: InvalidMessagePolicy | undefined;
  readonly signal: AbortSignal | undefined;
  readonly expected: number | undefined;
};

/** What a read is told by the log's options: whom to report invalid messages to, and its default policy. */
export type InvalidMessageHandling = Pick<EventLogOptions, 'onInvalid' | 'invalidPolicy'>;

/** The commits a read's messages hold (see commitAcceptor), one at a time. */
export async function* scanCommits(
  messages: ConversationMessages,
  ref: ConversationRef,
  plan: ScanPlan,
  handling: InvalidMessageHandling,
): AsyncGenerator<StoredCommit> {
  if (plan.signal?.aborted) return;
  const accept = commitAcceptor(ref, plan, handling);
  for await (const message of messages.messages(ref, plan.start, plan.until, plan.expected, plan.signal)) {
    const commit = accept(message);
    if (commit) yield commit;
  }
}

/**
 * Decodes a read's messages in order: the commits after `afterSeq` that continue one another.
 * Foreign and corrupt messages, and commits that leave a gap, are reported (and skipped or
 * thrown, by policy).
 */
export function commitAcceptor(
  ref: ConversationRef,
  plan: ScanPlan,
  handling: InvalidMessageHandling,
): (message: RawMessage) => StoredCommit | undefined {
  const { afterSeq, policy } = plan;
  let expectedFirst: number | undefined;
  return (message) => {
    const subject = message.subject;
    const decoded = decodeCommit(message, ref);
    if (!decoded.ok) {
      reportInvalid(
        handling,
        subject,
        message.seq,
        decoded.reason,
        decoded.error?.issues ?? [],
        policy,
        decoded.error?.code,
      );
      return undefined;
    }
    const commit = decoded.commit;
    if (commit.lastSeq <= afterSeq) return undefined; // before the requested position
    if (
      expectedFirst === undefined ? commit.firstSeq > afterSeq + 1 && afterSeq > 0 : commit.firstSeq !== expectedFirst
    ) {
      const wanted = expectedFirst ?? afterSeq + 1;
      reportInvalid(
        handling,
        subject,
        message.seq,
        `commit starts at seq ${commit.firstSeq}, expected ${wanted}`,
        [],
        policy,
      );
      return undefined;
    }
    expectedFirst = commit.lastSeq + 1;
    return commit;
  };
}

/**
 * Reports a message that is not a valid next commit to `onInvalid`, then throws when the read
 * must stop there: always for a commit of a newer protocol version, and by policy otherwise (the
 * read's, else the log's, else skip).
 */
export function reportInvalid(
  handling: InvalidMessageHandling,
  subject: string,
  streamSeq: number,
  reason: string,
  issues: readonly ProtocolIssue[],
  policy: InvalidMessagePolicy | undefined,
  code?: string,
): void {
  const report = { subject, streamSeq, reason, issues };
  handling.onInvalid?.(report);
  if (code === ProtocolErrorCode.UnsupportedVersion) {
    // Never skip what a newer writer wrote: that would silently lose events.
    throw new LogError(LogErrorCode.UnsupportedVersion, `${subject} #${streamSeq}: ${reason}`, { issues });
  }
  if ((policy ?? handling.invalidPolicy ?? 'skip') === 'stop') {
    throw new LogError(LogErrorCode.CorruptCommit, `invalid message at ${subject} #${streamSeq}: ${reason}`, {
      issues,
    });
  }
}
