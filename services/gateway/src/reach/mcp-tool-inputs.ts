// The MCP tools' arguments, as zod shapes the SDK validates (a refusal comes back as a tool result
// with isError naming the field) and lists as JSON Schema. Bounds are the REST API's own.
import { MessageText, Title } from '@flotilla/api';
import { ConversationId, SpecName } from '@flotilla/events';
import { z } from 'zod';

/** Events per read_events call, as the REST API's page. */
export const MAX_EVENTS_PER_READ = 200;
export const DEFAULT_EVENTS_PER_READ = 50;

const conversation = ConversationId.describe('The conversation id (a tool that starts a run returns it).');
const message = MessageText.describe('The user message to the agent.');
const wait = z
  .boolean()
  .default(true)
  .describe(
    'Follow the run until it comes to rest and return its answer (progress notifications meanwhile, when the request carries a progressToken); false returns at once.',
  );

export const StartConversationInput = {
  message,
  template: SpecName.optional().describe(
    "The operator's agent template to start from (GET /v1/server-info lists them); default the deployment's agent.",
  ),
  profile: SpecName.optional().describe("A model profile of the operator's to use instead of the template's model."),
  title: Title.optional().describe('A title for the conversation; default one the agent gives it.'),
  wait,
};

export const SendMessageInput = { conversation, message, wait };

export const ApproveInput = {
  conversation,
  decision: z
    .enum(['approve', 'reject'])
    .describe('approve runs the actions awaiting confirmation; reject refuses them (the agent reads why).'),
  reason: z
    .string()
    .min(1)
    .max(2_000)
    .optional()
    .describe('Why the actions are rejected, for the agent to read (with reject).'),
  wait,
};

export const ReadEventsInput = {
  conversation,
  after_seq: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('Only events after this seq (a previous call returns next_after_seq); default from the first.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_EVENTS_PER_READ)
    .default(DEFAULT_EVENTS_PER_READ)
    .describe(`Events to return, at most ${MAX_EVENTS_PER_READ}.`),
};

export const GetConversationInput = { conversation };
