import { llmUsageDraft } from '@flotilla/condenser';
import { draftEvent, type DraftContext, type EventDraft, type MessageEvent } from '@flotilla/events';
import { isLlmError, type LanguageModel } from '@flotilla/llm';
import { cleanTitle, titleRequest } from './title-request.js';
import { GENERATED_TITLE_REASON, messageText, TITLE_FAILED } from './title-progress.js';

/** What one title generation came to: the commit to append (see `titleOrFail`) and the title, when there is one. */
export type TitleResult = { readonly drafts: readonly EventDraft[]; readonly title: string | undefined };

/**
 * Asks the model for a title of the conversation opened by `firstMessage`, one call (the model
 * client retries what is retryable, up to `llm.retry.maxAttempts`). The commit to append: the
 * call's `llm_usage` (purpose `other`) and a `state_change` setting the cleaned title; or, when
 * the call failed after its last attempt or its reply held no title, a `conversation_error
 * title_failed` saying why (the status is left alone: a title is not the run's business). A
 * cancelled call (a shutdown) is thrown.
 */
export async function titleOrFail(
  firstMessage: MessageEvent,
  llm: LanguageModel,
  context: DraftContext,
  signal?: AbortSignal,
): Promise<TitleResult> {
  const system: DraftContext = { ...context, source: 'system' };
  const failed = (detail: string): TitleResult => ({
    drafts: [draftEvent(system, 'conversation_error', { code: TITLE_FAILED, detail })],
    title: undefined,
  });
  let result;
  try {
    result = await llm.generate(titleRequest(messageText(firstMessage)), signal === undefined ? {} : { signal });
  } catch (error) {
    signal?.throwIfAborted();
    if (!isLlmError(error) || error.code === 'cancelled') throw error;
    return failed(
      `The title could not be generated (${error.code}: ${error.message.replace(/\.$/, '')}); the conversation stays untitled until one is set.`,
    );
  }
  const usage = llmUsageDraft(result, system, 'other');
  const title = cleanTitle(result.content.map((part) => part.text).join(''));
  if (title === undefined) {
    return {
      drafts: [
        usage,
        ...failed(
          'The title could not be generated (the model answered without text for a title); the conversation stays untitled until one is set.',
        ).drafts,
      ],
      title: undefined,
    };
  }
  return { drafts: [usage, draftEvent(system, 'state_change', { title, reason: GENERATED_TITLE_REASON })], title };
}
