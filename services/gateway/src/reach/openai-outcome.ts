// What a run's resting place answers: the agent's final message, or an error naming the
// conversation and what to do. Never retried by OpenAI's SDKs: the run happened, a retry would
// start another.
import type { RunOutcome } from './agent-runs.js';
import { OpenAiError } from './openai-errors.js';

/** The answer's text, or throws the error the outcome is. */
export function answerOf(outcome: RunOutcome): string {
  const where = `conversation "${outcome.conversation}"`;
  switch (outcome.status) {
    case 'finished':
      if (outcome.text !== null) return outcome.text;
      throw new OpenAiError(502, 'no_answer', `The agent finished in ${where} without a final message.`).final();
    case 'waiting_for_confirmation':
      throw new OpenAiError(
        409,
        'confirmation_required',
        `The agent in ${where} waits for a confirmation of an action before it goes on: approve or reject it (POST /v1/conversations/${outcome.conversation}/confirmation), then read its answer (GET /v1/conversations/${outcome.conversation}/final-response).`,
      ).final();
    case 'paused':
      throw new OpenAiError(
        409,
        'run_paused',
        `The run of ${where} was paused before the agent answered; resume it with POST /v1/conversations/${outcome.conversation}/run.`,
      ).final();
    case 'stuck':
      throw new OpenAiError(
        502,
        'run_stuck',
        `The agent in ${where} got stuck (it repeated itself or ran out of iterations) before it answered${detail(outcome)}.`,
      ).final();
    default:
      throw new OpenAiError(
        502,
        'run_failed',
        `The run of ${where} ended in ${outcome.status} before the agent answered${detail(outcome)}.`,
      ).final();
  }
}

const detail = (outcome: RunOutcome): string => (outcome.error ? `: ${outcome.error}` : '');
