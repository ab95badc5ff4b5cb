import { LlmError, ScriptedLanguageModel, type GenerateRequest, type ModelInfo } from '@flotilla/llm';

export const SUMMARY_TEXT = [
  'USER_CONTEXT: fix the build',
  'TASK_TRACKING: none',
  'COMPLETED: listed files',
  'PENDING: run tests',
  'CODE_STATE: none',
  'TESTS: none',
  'CHANGES: none',
  'DEPS: none',
  'VERSION_CONTROL_STATUS: none',
].join('\n');

/** A scripted summarizer that answers every request with a structured summary. */
export function summarizer(info: Partial<ModelInfo> = {}, text = SUMMARY_TEXT): ScriptedLanguageModel {
  return new ScriptedLanguageModel({
    replies: () => ({ text, usage: { inputTokens: 900, outputTokens: 120 }, costUsd: 0.002 }),
    info: { model: 'summary-model', ...info },
  });
}

/** Overflows while the user prompt is longer than `maxCharacters`, then summarises. */
export function overflowingSummarizer(maxCharacters: number): ScriptedLanguageModel {
  return new ScriptedLanguageModel({
    replies: (request) =>
      userPromptOf(request).length > maxCharacters
        ? new LlmError('context_window_exceeded', 'prompt is too long')
        : { text: SUMMARY_TEXT, usage: { inputTokens: 100, outputTokens: 50 } },
    info: { model: 'small-model' },
  });
}

export function userPromptOf(request: GenerateRequest | undefined): string {
  const user = request?.messages.find((message) => message.role === 'user');
  if (user === undefined || user.role !== 'user') return '';
  return user.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}
