import { isSubjectToken } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { StateError, StateErrorCode } from './errors.js';

export function assertValidRef(ref: ConversationRef): void {
  for (const [field, value] of [
    ['tenant', ref.tenant],
    ['conversation', ref.conversation],
  ] as const) {
    if (!isSubjectToken(value)) {
      throw new StateError(StateErrorCode.InvalidRef, `${field} "${value}" must be 1-64 characters of A-Z a-z 0-9 _ -`);
    }
  }
}

/** The KV key of a conversation's snapshot: `<tenant>.<conversation>`. */
export function snapshotKey(ref: ConversationRef): string {
  assertValidRef(ref);
  return `${ref.tenant}.${ref.conversation}`;
}
