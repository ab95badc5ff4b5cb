import { parseConversationSubject, type ConversationRef } from '@flotilla/log';
import type { LogLocation } from './log-location.js';

/** A subject in the stream's range that does not name a conversation (tokens that are not valid ids). */
export type StraySubject = { readonly subject: string; readonly messages: number };

export type ConversationListing = {
  readonly conversations: readonly (ConversationRef & { readonly messages: number })[];
  readonly strays: readonly StraySubject[];
};

/**
 * The conversations that have messages on the stream, from the stream's per-subject counts
 * (`STREAM.INFO` with `subjects_filter`, nats-server 2.9; paged by the client for large lists),
 * optionally confined to one tenant. Sorted by tenant then conversation.
 */
export async function listConversations(
  location: LogLocation,
  options: { readonly tenant?: string } = {},
): Promise<ConversationListing> {
  const filter =
    options.tenant === undefined ? `${location.subjectPrefix}.>` : `${location.subjectPrefix}.${options.tenant}.>`;
  const info = await location.jsm.streams.info(location.streamName, { subjects_filter: filter });
  // a conversation's commits are on a subject per kind (and, if it began before kinds were in the subject, its legacy one)
  const counts = new Map<string, ConversationRef & { messages: number }>();
  const strays: StraySubject[] = [];
  for (const [subject, messages] of Object.entries(info.state.subjects ?? {})) {
    const ref = parseConversationSubject(location.subjectPrefix, subject);
    if (!ref) {
      strays.push({ subject, messages });
      continue;
    }
    const key = `${ref.tenant}.${ref.conversation}`;
    const counted = counts.get(key);
    if (counted) counted.messages += messages;
    else counts.set(key, { ...ref, messages });
  }
  const conversations = [...counts.values()];
  conversations.sort((a, b) => a.tenant.localeCompare(b.tenant) || a.conversation.localeCompare(b.conversation));
  strays.sort((a, b) => a.subject.localeCompare(b.subject));
  return { conversations, strays };
}
