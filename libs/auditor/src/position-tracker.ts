import type { ConversationRef, StoredCommit } from '@flotilla/log';
import { AuditRule } from './audit-rule.js';
import type { Violation } from './audit-report.js';

/**
 * Positions: event seqs 1..N without gaps, each commit continuing the previous one, stream
 * sequences increasing, commit and event ids unique, everything in the audited conversation.
 * After a gap or overlap it resynchronises on the offending commit, so one fault is one violation.
 */
export class PositionTracker {
  readonly #commitIds = new Set<string>();
  readonly #eventIds = new Map<string, number>();
  #lastSeq = 0;
  #lastStreamSeq = 0;

  constructor(
    private readonly ref: ConversationRef,
    private readonly report: (violation: Violation) => void,
  ) {}

  check(commit: StoredCommit): void {
    const at = { streamSeq: commit.streamSeq };
    const { ref } = this;
    if (commit.tenant !== ref.tenant || commit.conversation !== ref.conversation) {
      this.report({
        rule: AuditRule.WrongConversation,
        ...at,
        detail: `commit ${commit.id} belongs to ${commit.tenant}/${commit.conversation}`,
      });
    }
    if (commit.streamSeq <= this.#lastStreamSeq) {
      this.report({
        rule: AuditRule.StreamSeqNotIncreasing,
        ...at,
        detail: `stream sequence ${commit.streamSeq} after ${this.#lastStreamSeq}`,
      });
    }
    if (this.#commitIds.has(commit.id)) {
      this.report({ rule: AuditRule.DuplicateCommitId, ...at, detail: `commit id ${commit.id} appears twice` });
    }
    this.#commitIds.add(commit.id);
    if (commit.events.length === 0) {
      this.report({ rule: AuditRule.EmptyCommit, ...at, detail: `commit ${commit.id} holds no events` });
    }
    if (commit.firstSeq !== this.#lastSeq + 1) {
      const kind = commit.firstSeq > this.#lastSeq + 1 ? 'gap' : 'overlap';
      this.report({
        rule: AuditRule.SeqNotContiguous,
        seq: commit.firstSeq,
        ...at,
        detail: `${kind}: commit starts at seq ${commit.firstSeq}, expected ${this.#lastSeq + 1}`,
      });
    }
    if (commit.events.length > 0 && commit.lastSeq !== commit.firstSeq + commit.events.length - 1) {
      this.report({
        rule: AuditRule.CommitRangeMismatch,
        ...at,
        detail: `commit claims seqs ${commit.firstSeq}..${commit.lastSeq} but holds ${commit.events.length} events`,
      });
    }
    commit.events.forEach((event, index) => {
      const where = { seq: event.seq, ...at };
      if (event.seq !== commit.firstSeq + index) {
        this.report({
          rule: AuditRule.CommitRangeMismatch,
          ...where,
          detail: `event #${index} of the commit has seq ${event.seq}, expected ${commit.firstSeq + index}`,
        });
      }
      if (event.tenant !== ref.tenant || event.conversation !== ref.conversation) {
        this.report({
          rule: AuditRule.WrongConversation,
          ...where,
          detail: `event ${event.id} belongs to ${event.tenant}/${event.conversation}`,
        });
      }
      const earlier = this.#eventIds.get(event.id);
      if (earlier !== undefined) {
        this.report({
          rule: AuditRule.DuplicateEventId,
          ...where,
          detail: `event id ${event.id} already used at seq ${earlier}`,
        });
      } else {
        this.#eventIds.set(event.id, event.seq);
      }
    });
    this.#lastSeq = Math.max(commit.lastSeq, commit.firstSeq + commit.events.length - 1);
    this.#lastStreamSeq = Math.max(this.#lastStreamSeq, commit.streamSeq);
  }

  get tail(): { streamSeq: number; lastSeq: number } {
    return { streamSeq: this.#lastStreamSeq, lastSeq: this.#lastSeq };
  }
}
