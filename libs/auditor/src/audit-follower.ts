import { ProtocolErrorCode } from '@flotilla/events';
import { decodeCommit, parseConversationSubject, type ConversationRef, type RawMessage } from '@flotilla/log';
import type { Violation } from './audit-report.js';
import { ConversationAuditor } from './conversation-auditor.js';

/** What a follower finds, as it finds it. */
export type FollowerSink = {
  /** A violation, once, as soon as the commit (or the quiet period) that shows it is audited. */
  violation(conversation: ConversationRef, violation: Violation): void;
  /** A conversation seen for the first time. */
  conversation?(conversation: ConversationRef): void;
  /** A message on a subject that names no conversation (foreign traffic on the stream). */
  stray?(subject: string, streamSeq: number): void;
};

export type AuditFollowerOptions = {
  /** The stream's conversation subject prefix (`flotilla.ev`). */
  readonly subjectPrefix: string;
  /**
   * How long a conversation stays quiet before the checks of a log's end run on it (an action
   * nobody will answer while it rests); default 30 s. 0 runs them after every commit.
   */
  readonly settleMs?: number;
};

const DEFAULT_SETTLE_MS = 30_000;

/**
 * The auditor as a tap: fed the events stream message by message, it audits each conversation
 * incrementally (one ConversationAuditor per conversation, fed each commit as it arrives, never a
 * re-read) and reports each violation once, when the commit showing it arrives. Memory grows with
 * the ids the rules remember (commit, event and tool-call ids), as for one whole audit.
 */
export class AuditFollower {
  readonly #sink: FollowerSink;
  readonly #settleMs: number;
  readonly #prefix: string;
  readonly #conversations = new Map<
    string,
    { readonly ref: ConversationRef; readonly auditor: ConversationAuditor; reported: number; timer?: NodeJS.Timeout }
  >();
  #commits = 0;

  constructor(sink: FollowerSink, options: AuditFollowerOptions) {
    this.#sink = sink;
    this.#prefix = options.subjectPrefix;
    this.#settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  }

  /** Conversations audited so far. */
  get conversations(): number {
    return this.#conversations.size;
  }

  /** Commits audited so far. */
  get commits(): number {
    return this.#commits;
  }

  /** One message of the stream, in stream order. Never throws for what the message holds. */
  visit(message: RawMessage): void {
    const ref = parseConversationSubject(this.#prefix, message.subject);
    if (!ref) {
      this.#sink.stray?.(message.subject, message.seq);
      return;
    }
    const state = this.#stateOf(ref);
    const decoded = decode(message, ref);
    if (decoded.ok) {
      this.#commits += 1;
      state.auditor.commit(decoded.commit);
    } else {
      state.auditor.invalidMessage({
        streamSeq: message.seq,
        reason: decoded.reason,
        unsupportedVersion: decoded.unsupportedVersion,
      });
    }
    this.#report(state);
    if (this.#settleMs === 0) {
      state.auditor.settle();
      this.#report(state);
      return;
    }
    if (state.timer) state.timer.refresh();
    else {
      state.timer = setTimeout(() => {
        state.timer = undefined;
        state.auditor.settle();
        this.#report(state);
      }, this.#settleMs);
      state.timer.unref();
    }
  }

  /** Stops the quiet-period timers (what they would still have found is not reported). */
  close(): void {
    for (const state of this.#conversations.values()) clearTimeout(state.timer);
  }

  #stateOf(ref: ConversationRef) {
    const key = `${ref.tenant}.${ref.conversation}`;
    let state = this.#conversations.get(key);
    if (!state) {
      state = { ref, auditor: new ConversationAuditor(ref), reported: 0 };
      this.#conversations.set(key, state);
      this.#sink.conversation?.(ref);
    }
    return state;
  }

  #report(state: { readonly ref: ConversationRef; readonly auditor: ConversationAuditor; reported: number }): void {
    if (state.auditor.violationCount === state.reported) return;
    for (const violation of state.auditor.violationsSince(state.reported)) this.#sink.violation(state.ref, violation);
    state.reported = state.auditor.violationCount;
  }
}

function decode(message: RawMessage, ref: ConversationRef) {
  try {
    const decoded = decodeCommit(message, ref);
    if (decoded.ok) return decoded;
    return {
      ok: false as const,
      reason: decoded.reason,
      unsupportedVersion: decoded.error?.code === ProtocolErrorCode.UnsupportedVersion,
    };
  } catch (error) {
    return { ok: false as const, reason: `undecodable: ${(error as Error).message}`, unsupportedVersion: false };
  }
}
