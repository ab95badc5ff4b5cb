import type { ConversationStatus } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import type { AuditRule } from './audit-rule.js';

/** One broken rule, located by event seq and/or commit stream sequence where it has one. */
export type Violation = {
  readonly rule: AuditRule;
  readonly seq?: number;
  readonly streamSeq?: number;
  readonly detail: string;
};

/** An executable action without a result at the tail. */
export type PendingAction = {
  readonly seq: number;
  readonly streamSeq: number;
  readonly actionId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  /** execution_started was recorded for it (it is running, or was cut off by a crash). */
  readonly started: boolean;
};

export type AuditSummary = {
  readonly actions: number;
  readonly observations: number;
  /** agent_error events (answers to tool calls and general agent errors). */
  readonly errors: number;
  readonly conversationErrors: number;
  readonly rejections: number;
  /** Step commits (see STEP definition in conversation-auditor.ts). */
  readonly steps: number;
  readonly condensations: number;
  /** Messages on the subject that were not valid commits. */
  readonly invalidMessages: number;
};

export type AuditReport = {
  readonly conversation: ConversationRef;
  readonly commits: number;
  readonly events: number;
  readonly finalStatus: ConversationStatus;
  /** Last event seq and stream sequence audited. */
  readonly tail: { readonly streamSeq: number; readonly lastSeq: number };
  readonly summary: AuditSummary;
  /** Unanswered actions at the tail; a violation only when the conversation rests in a status nobody works in. */
  readonly pending: readonly PendingAction[];
  readonly violations: readonly Violation[];
};

export function isClean(report: AuditReport): boolean {
  return report.violations.length === 0;
}
