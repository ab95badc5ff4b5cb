// The MCP tools that read a conversation: where it is and its last answer, and its events.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GetConversationInput, ReadEventsInput } from './mcp-tool-inputs.js';
import { describeRun, guarded, jsonResult, RunResult, type ToolScope } from './mcp-tool-results.js';

const ConversationResult = RunResult.extend({
  title: z.string().nullable(),
  /** seq of the answer's event (null without one). */
  answer_seq: z.number().int().nullable(),
  /** seq of the conversation's last event (read_events after it returns nothing yet). */
  last_seq: z.number().int(),
});

const EventsResult = z.object({
  events: z.array(z.record(z.string(), z.unknown())),
  /** Pass as after_seq to read on: the last event's seq here (without events, the after_seq given). */
  next_after_seq: z.number().int().nullable(),
});

export function registerReadTools(server: McpServer, scope: ToolScope): void {
  const { client } = scope;
  const reading = { readOnlyHint: true, idempotentHint: true, openWorldHint: false };

  server.registerTool(
    'get_conversation',
    {
      title: 'Get a conversation',
      description:
        "A conversation's status, title and latest answer (the agent's last message of its latest run), e.g. after start_conversation or send_message without wait.",
      inputSchema: GetConversationInput,
      outputSchema: ConversationResult.shape,
      annotations: reading,
    },
    (input) =>
      guarded(scope, async () => {
        const [conversation, final] = await Promise.all([
          client.getConversation(input.conversation),
          client.finalResponse(input.conversation),
        ]);
        const error = conversation.last_error;
        const result: z.infer<typeof ConversationResult> = {
          conversation: conversation.id,
          status: conversation.status,
          title: conversation.title,
          answer: final.text,
          answer_seq: final.seq,
          // an error the conversation went on from is history, not its state
          error: error && conversation.status === 'error' ? `${error.code}: ${error.detail}` : null,
          last_seq: conversation.last_seq,
        };
        return {
          content: [{ type: 'text', text: describeRun(result, conversation.queue !== null) }],
          structuredContent: result,
        };
      }),
  );

  server.registerTool(
    'read_events',
    {
      title: 'Read events',
      description:
        "A conversation's events in order (messages, the agent's actions and their observations, status changes), as JSON: at most `limit` after `after_seq`; next_after_seq continues.",
      inputSchema: ReadEventsInput,
      outputSchema: EventsResult.shape,
      annotations: reading,
    },
    (input) =>
      guarded(scope, async () => {
        const page = await client.searchEvents(input.conversation, {
          ...(input.after_seq === undefined ? {} : { after_seq: input.after_seq }),
          limit: input.limit,
        });
        const last = page.items.at(-1);
        return jsonResult({
          events: page.items,
          next_after_seq: last === undefined ? (input.after_seq ?? null) : last.seq,
        });
      }),
  );
}
