// What the MCP tools answer: a text for the calling model and the same as structured content for
// programs, and failures as tool results with isError (the MCP way: the caller's model reads them).
import { FlotillaApiError, type FlotillaClient } from '@flotilla/client';
import { ConversationStatus } from '@flotilla/events';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AgentRuns, RunOutcome } from './agent-runs.js';

/** What the tools of one MCP request act with: the caller's own client of the API. */
export type ToolScope = {
  readonly runs: AgentRuns;
  readonly client: FlotillaClient;
  readonly logger: Logger;
};

/** A run's outcome (or a conversation's state) as the run tools return it. */
export const RunResult = z.object({
  conversation: z.string(),
  status: ConversationStatus,
  /** The agent's final message of this run; null when it gave none (yet). */
  answer: z.string().nullable(),
  /** The conversation's error from this run, `code: detail`. */
  error: z.string().nullable(),
});
export type RunResult = z.infer<typeof RunResult>;

/** What the calling model should do next, by where the conversation is. */
const NEXT: Partial<Record<ConversationStatus, string>> = {
  waiting_for_confirmation:
    'actions await confirmation: answer with the approve tool (decision "approve" or "reject"), or inspect them with read_events first',
  running: 'it runs on: read its answer later with get_conversation, its events with read_events',
  idle: 'it waits for a message: send_message goes on with it',
  paused: 'it was paused: send_message goes on with it',
  stuck: 'the agent was stuck repeating itself: send_message with guidance goes on with it',
  error: 'send_message runs it again from where it failed',
};
const QUEUED =
  "its run waits for its turn behind the tenant's running ones: read its answer later with get_conversation";

/** A run's outcome: the answer itself when it finished with one, else its status and what to do next. */
export function runResult(outcome: RunOutcome, options: { readonly queued?: boolean } = {}): CallToolResult {
  const result: RunResult = {
    conversation: outcome.conversation,
    status: outcome.status,
    answer: outcome.text,
    error: outcome.error,
  };
  return {
    content: [{ type: 'text', text: describeRun(result, options.queued === true) }],
    structuredContent: result,
    ...(outcome.status === 'error' ? { isError: true } : {}),
  };
}

/** The answer (if any), the error (if any), then where the conversation is and what to do next. */
export function describeRun(result: RunResult, queued: boolean): string {
  const where = `[conversation "${result.conversation}": ${result.status}]`;
  const next = queued ? QUEUED : NEXT[result.status];
  return [
    result.answer,
    result.error === null ? null : `The run failed: ${result.error}`,
    next === undefined ? where : `${where} ${next}.`,
  ]
    .filter((line): line is string => line !== null)
    .join('\n\n');
}

/** Structured content as its JSON text too (for clients that read only the text). */
export function jsonResult(structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

const REFUSALS: Record<number, string> = {
  0: 'Unavailable',
  400: 'Invalid input',
  401: 'Refused key',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  413: 'Too large',
  415: 'Invalid input',
  429: 'Rate limited',
  503: 'Unavailable',
};

/**
 * A failed call as a tool result: the API's refusal as it gave it (what was wrong and its code),
 * anything else logged and answered without internals.
 */
export function toolFailure(error: unknown, logger: Logger): CallToolResult {
  let text: string;
  if (error instanceof FlotillaApiError) {
    const kind = REFUSALS[error.status] ?? (error.status >= 500 ? 'Server error' : `Refused (${error.status})`);
    const retry = error.retryAfterSeconds === undefined ? '' : ` Retry after ${error.retryAfterSeconds} s.`;
    text = `${kind}: ${error.message} (code ${error.code}).${retry}`;
  } else {
    logger.error({ err: error }, 'an MCP tool call failed');
    text = 'Internal error: the gateway could not complete the call; it is logged. Retry later.';
  }
  return { content: [{ type: 'text', text }], isError: true };
}

/** Runs a tool's work, its failures answered as tool results. */
export async function guarded(scope: ToolScope, work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    return toolFailure(error, scope.logger);
  }
}
