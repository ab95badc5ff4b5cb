// The MCP tools that make a conversation run: start one, send one a message, answer its
// confirmation; each follows the run to rest unless told not to wait.
import type { FlotillaClient } from '@flotilla/client';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { StartedRun } from './agent-runs.js';
import { runProgress, type ToolExtra } from './mcp-progress.js';
import { ApproveInput, SendMessageInput, StartConversationInput } from './mcp-tool-inputs.js';
import { guarded, RunResult, runResult, type ToolScope } from './mcp-tool-results.js';

/** The rejection reason when the caller gives none (the API asks for one: the agent reads it). */
const DEFAULT_REJECTION = 'The user rejected these actions.';

export function registerRunTools(server: McpServer, scope: ToolScope): void {
  const { runs, client } = scope;

  server.registerTool(
    'start_conversation',
    {
      title: 'Start a conversation',
      description:
        'Starts a new Flotilla conversation with a user message: an agent works on it in its own sandbox (running commands, editing files) until it answers. With wait (the default) returns the answer, the status the run ended in and the conversation id; otherwise the id at once.',
      inputSchema: StartConversationInput,
      outputSchema: RunResult.shape,
    },
    (input, extra) =>
      guarded(scope, async () => {
        const started = await runs.start(client, {
          text: input.message,
          ...(input.template === undefined ? {} : { template: input.template }),
          ...(input.profile === undefined ? {} : { profile: input.profile }),
          ...(input.title === undefined ? {} : { title: input.title }),
        });
        return input.wait ? follow(scope, started, extra) : current(client, started.conversation);
      }),
  );

  server.registerTool(
    'send_message',
    {
      title: 'Send a message',
      description:
        'Sends a user message to an existing conversation and runs it (a message to a running conversation joins its run). With wait (the default) returns the answer to it and the status the run ended in.',
      inputSchema: SendMessageInput,
      outputSchema: RunResult.shape,
    },
    (input, extra) =>
      guarded(scope, async () => {
        if (input.wait) {
          // a message does not run a conversation awaiting confirmation: no rest would come to wait for
          const before = await client.getConversation(input.conversation);
          if (before.status === 'waiting_for_confirmation')
            return refusal(
              `Conversation "${input.conversation}" is waiting for confirmation of its actions: answer it with the approve tool first.`,
            );
        }
        const started = await runs.start(client, { text: input.message, conversation: input.conversation });
        return input.wait ? follow(scope, started, extra) : current(client, started.conversation);
      }),
  );

  server.registerTool(
    'approve',
    {
      title: 'Answer a confirmation',
      description:
        'Answers the actions a conversation holds for confirmation (status waiting_for_confirmation): approve runs them and the run goes on (with wait, to rest: its answer and status); reject refuses them with a reason the agent reads, and the conversation waits for a message.',
      inputSchema: ApproveInput,
      outputSchema: RunResult.shape,
    },
    (input, extra) =>
      guarded(scope, async () => {
        if (input.decision === 'reject') {
          await client.reject(input.conversation, input.reason ?? DEFAULT_REJECTION);
          return current(client, input.conversation);
        }
        const before = await client.getConversation(input.conversation);
        await client.approve(input.conversation);
        const started: StartedRun = { conversation: input.conversation, afterSeq: before.last_seq };
        return input.wait ? follow(scope, started, extra) : current(client, input.conversation);
      }),
  );
}

/** Follows a started run to rest, reporting progress when asked; the result after the last notification. */
async function follow(scope: ToolScope, started: StartedRun, extra: ToolExtra): Promise<CallToolResult> {
  const progress = runProgress(extra);
  try {
    return runResult(await scope.runs.follow(scope.client, started, { ...progress.follow, signal: extra.signal }));
  } catch (error) {
    // the caller cancelled or went away: nobody reads this, and the run goes on
    if (extra.signal.aborted) return refusal(`Stopped following conversation "${started.conversation}".`);
    throw error;
  } finally {
    await progress.flushed();
  }
}

/** The conversation as it is now, for a call that does not wait. */
async function current(client: FlotillaClient, conversation: string): Promise<CallToolResult> {
  const { status, queue } = await client.getConversation(conversation);
  return runResult({ conversation, status, text: null, error: null }, { queued: queue !== null });
}

function refusal(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
