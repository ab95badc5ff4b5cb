// A conversation seen as an A2A task: the task id (and its context id) is the conversation id,
// its state is the conversation's status, its answer the agent's final message, its history the
// user's and the agent's messages. Everything is read from the conversation through the API, so
// any gateway answers for any task.
import { Role, TaskState, type Artifact, type Message, type Part, type Task, type TaskStatus } from '@a2a-js/sdk';
import type { Conversation } from '@flotilla/api';
import { PendingActions, type FlotillaClient } from '@flotilla/client';
import type { ConversationStatus, Event } from '@flotilla/events';
import { asA2aError } from './a2a-errors.js';

/** The most history a task carries (the API's page): a client's `historyLength` asks for fewer. */
export const MAX_HISTORY = 100;
/** The text a reply to an input-required task approves the waiting actions with (anything else rejects them). */
export const APPROVAL_REPLIES: ReadonlySet<string> = new Set(['approve', 'approved', 'yes', 'y', 'ok']);

const STATES: Record<ConversationStatus, TaskState> = {
  idle: TaskState.TASK_STATE_SUBMITTED,
  running: TaskState.TASK_STATE_WORKING,
  waiting_for_confirmation: TaskState.TASK_STATE_INPUT_REQUIRED,
  finished: TaskState.TASK_STATE_COMPLETED,
  error: TaskState.TASK_STATE_FAILED,
  stuck: TaskState.TASK_STATE_FAILED,
  // a run is paused by a cancel (or a user): nothing goes on until a new message
  paused: TaskState.TASK_STATE_CANCELED,
};

export const taskStateOf = (status: ConversationStatus): TaskState => STATES[status];

/** The task `id` is, read now: its status, its answer as an artifact, and at most `historyLength` messages. */
export async function readTask(client: FlotillaClient, id: string, historyLength = MAX_HISTORY): Promise<Task> {
  try {
    const [conversation, final, history] = await Promise.all([
      client.getConversation(id),
      client.finalResponse(id),
      readHistory(client, id, Math.min(historyLength, MAX_HISTORY)),
    ]);
    const status = await statusOf(client, conversation, final.text);
    const answer = final.text === null || final.seq === null ? [] : [answerArtifact(final.text, final.seq)];
    return {
      id,
      contextId: id,
      status,
      artifacts: answer,
      history,
      metadata: { flotilla_status: conversation.status },
    };
  } catch (error) {
    throw asA2aError(error, id);
  }
}

/** A message of the agent's (or the user's) with one text part, on task `taskId`. */
export function textMessage(role: Role, text: string, taskId: string, messageId: string): Message {
  return {
    messageId,
    contextId: taskId,
    taskId,
    role,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** The agent's answer (its final message since the last user message) as the task's artifact. */
function answerArtifact(text: string, seq: number): Artifact {
  return {
    artifactId: `answer-${seq}`,
    name: 'answer',
    description: "The agent's final message",
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
  };
}

/** The task's status: its state, and a message saying what the client may do when the task rests. */
async function statusOf(
  client: FlotillaClient,
  conversation: Conversation,
  answer: string | null,
): Promise<TaskStatus> {
  const state = taskStateOf(conversation.status);
  const text = await statusText(client, conversation, answer);
  return {
    state,
    message:
      text === undefined
        ? undefined
        : textMessage(Role.ROLE_AGENT, text, conversation.id, `status-${conversation.last_seq}`),
    timestamp: conversation.updated_at ?? undefined,
  };
}

async function statusText(
  client: FlotillaClient,
  conversation: Conversation,
  answer: string | null,
): Promise<string | undefined> {
  switch (conversation.status) {
    case 'finished':
      return answer ?? undefined;
    case 'error':
    case 'stuck': {
      const error = conversation.last_error;
      return error ? `${error.code}: ${error.detail}` : `The run ended ${conversation.status}.`;
    }
    case 'paused':
      return 'Canceled: the run is paused. Send a message to this task to go on.';
    case 'waiting_for_confirmation':
      return `The agent waits for approval to run: ${await waitingActions(client, conversation)}. Reply "approve" to run them, anything else to refuse them (your reply is the reason the agent reads).`;
    case 'idle':
      return conversation.queue
        ? `Queued: its run is number ${conversation.queue.position} in this tenant's queue.`
        : undefined;
    case 'running':
      return undefined;
  }
}

/** The actions that await approval, as one line: each tool and its arguments (cut short). */
async function waitingActions(client: FlotillaClient, conversation: Conversation): Promise<string> {
  const pending = new PendingActions();
  // the latest calls and their answers: the waiting ones are the last the agent made
  const page = await client.searchEvents(conversation.id, {
    type: 'action,observation,user_rejection,agent_error,execution_started',
    order: 'desc',
    limit: 200,
  });
  for (const event of page.items.reverse()) pending.add(event);
  const actions = pending.list().map((action) => `${action.tool_name} ${cut(action.arguments, 300)}`);
  return actions.length > 0 ? actions.join('; ') : 'its pending actions';
}

/** The last `limit` user and agent messages, oldest first. */
async function readHistory(client: FlotillaClient, id: string, limit: number): Promise<Message[]> {
  if (limit <= 0) return [];
  const page = await client.searchEvents(id, { type: 'message', order: 'desc', limit });
  return page.items.flatMap((event) => historyMessage(event, id)).reverse();
}

function historyMessage(event: Event, taskId: string): Message[] {
  if (event.type !== 'message') return [];
  const text = event.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
  return [textMessage(event.role === 'user' ? Role.ROLE_USER : Role.ROLE_AGENT, text, taskId, event.id)];
}

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text);
