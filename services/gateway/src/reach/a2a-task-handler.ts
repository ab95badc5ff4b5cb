// A2A's request handler, with conversations as its tasks: the SDK's JSON-RPC transports parse,
// validate and answer the protocol; this decides what each method does, through the gateway's own
// API with the caller's key. It keeps nothing between requests (no task store, no event bus), so
// every gateway instance answers every task: a cancel or a subscribe may reach another instance
// than the message that started the run.
import { EventEmitter, on } from 'node:events';
import {
  TaskState,
  type AgentCard,
  type Artifact,
  type CancelTaskRequest,
  type GetTaskRequest,
  type ListTaskPushNotificationConfigsResponse,
  type ListTasksResponse,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { Conversation } from '@flotilla/api';
import type { FlotillaClient } from '@flotilla/client';
import type { AgentRuns, StartedRun } from './agent-runs.js';
import { asA2aError } from './a2a-errors.js';
import { checkedTaskId, readSendRequest, type SendRequest } from './a2a-send-request.js';
import { APPROVAL_REPLIES, MAX_HISTORY, readTask } from './a2a-task-view.js';

const PUSH_NOT_SUPPORTED =
  'This agent sends no push notifications: follow a task with SendStreamingMessage or SubscribeToTask.';

/** The A2A methods of one request, for the caller whose key `client` carries. */
export class ConversationTasks implements A2ARequestHandler {
  readonly #runs: AgentRuns;
  readonly #client: FlotillaClient;
  readonly #card: AgentCard;
  /** Aborts when the caller goes away: following stops (the run goes on). */
  readonly #signal: AbortSignal;

  constructor(options: {
    readonly runs: AgentRuns;
    readonly client: FlotillaClient;
    readonly card: AgentCard;
    readonly signal: AbortSignal;
  }) {
    this.#runs = options.runs;
    this.#client = options.client;
    this.#card = options.card;
    this.#signal = options.signal;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.#card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError(
      'This agent has no extended card: its public card is the whole of it.',
    );
  }

  /** A message: a new task (a conversation), or the next turn of one; answered once the run rests unless `returnImmediately`. */
  async sendMessage(params: SendMessageRequest): Promise<Task> {
    const request = readSendRequest(params);
    const started = await this.#start(request);
    if (!request.returnImmediately)
      await this.#api(started.conversation, () => this.#runs.follow(this.#client, started, { signal: this.#signal }));
    return readTask(this.#client, started.conversation, request.historyLength);
  }

  /** A message, then the task's updates as its run goes: the task, working, its answer, the state it rests at. */
  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const request = readSendRequest(params);
    const started = await this.#start(request);
    yield {
      payload: { $case: 'task', value: await readTask(this.#client, started.conversation, request.historyLength) },
    };
    yield* this.#updates(started, request.historyLength);
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    return readTask(this.#client, checkedTaskId(params.id), historyLengthOf(params.historyLength));
  }

  /** Interrupts a working task's run (the model call or tool in flight stops now): the conversation pauses, the task is canceled. */
  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const id = checkedTaskId(params.id);
    const conversation = await this.#api(id, () => this.#client.getConversation(id));
    if (conversation.status === 'running')
      await this.#api(id, () => this.#client.interrupt(id, 'canceled by an A2A client'));
    else if (conversation.status !== 'paused') throw new TaskNotCancelableError(notCancelable(conversation));
    const task = await readTask(this.#client, id);
    if (task.status?.state !== TaskState.TASK_STATE_CANCELED)
      throw new TaskNotCancelableError(`Task "${id}" came to rest before it could be canceled: read it with GetTask.`);
    return task;
  }

  /** The task now, then its updates while its run goes on (nothing more when it rests). */
  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const id = checkedTaskId(params.id);
    const conversation = await this.#api(id, () => this.#client.getConversation(id));
    yield { payload: { $case: 'task', value: await readTask(this.#client, id) } };
    const from = conversation.last_seq;
    // a run going on ends at its next rest; a queued one once it has run
    if (conversation.status === 'running')
      yield* this.#updates({ conversation: id, afterSeq: from, joinedAtSeq: from }, MAX_HISTORY);
    else if (conversation.status === 'idle' && conversation.queue)
      yield* this.#updates({ conversation: id, afterSeq: from }, MAX_HISTORY);
  }

  async listTasks(): Promise<ListTasksResponse> {
    throw new UnsupportedOperationError('ListTasks is not supported: list conversations with GET /v1/conversations.');
  }

  async createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError(PUSH_NOT_SUPPORTED);
  }

  async getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError(PUSH_NOT_SUPPORTED);
  }

  async listTaskPushNotificationConfigs(): Promise<ListTaskPushNotificationConfigsResponse> {
    throw new PushNotificationNotSupportedError(PUSH_NOT_SUPPORTED);
  }

  async deleteTaskPushNotificationConfig(): Promise<void> {
    throw new PushNotificationNotSupportedError(PUSH_NOT_SUPPORTED);
  }

  /** Sends the message: a new conversation, the next turn of one, or the answer to the actions it waits to have approved. */
  async #start(request: SendRequest): Promise<StartedRun> {
    const id = request.taskId;
    if (id === undefined)
      return this.#api(undefined, () =>
        this.#runs.start(this.#client, {
          text: request.text,
          ...(request.template === undefined ? {} : { template: request.template }),
        }),
      );
    if (request.template !== undefined)
      throw new RequestMalformedError(
        `metadata.template: only a new task starts from a template (task "${id}" exists).`,
      );
    const conversation = await this.#api(id, () => this.#client.getConversation(id));
    if (conversation.status === 'waiting_for_confirmation') return this.#answerConfirmation(conversation, request.text);
    return this.#api(id, () => this.#runs.start(this.#client, { text: request.text, conversation: id }));
  }

  /** An input-required task's reply: "approve" runs the waiting actions, anything else refuses them with it as the reason, and the run goes on. */
  async #answerConfirmation(conversation: Conversation, text: string): Promise<StartedRun> {
    const id = conversation.id;
    await this.#api(id, async () => {
      if (APPROVAL_REPLIES.has(text.trim().toLowerCase())) await this.#client.approve(id);
      else {
        await this.#client.reject(id, text);
        await this.#client.run(id);
      }
    });
    return { conversation: id, afterSeq: conversation.last_seq };
  }

  /** The run's updates until it rests: working when it runs, then its answer and its final status. */
  async *#updates(started: StartedRun, historyLength: number): AsyncGenerator<StreamResponse, void, undefined> {
    const id = started.conversation;
    const stop = new AbortController();
    const signal = AbortSignal.any([this.#signal, stop.signal]);
    const updates = new EventEmitter();
    const working = on(updates, 'working', { signal, close: ['rest'] });
    const followed = this.#runs
      .follow(this.#client, started, {
        signal,
        onEvent: (event) => {
          if (event.type === 'state_change' && event.status === 'running') updates.emit('working', event.timestamp);
        },
      })
      .finally(() => updates.emit('rest'));
    // awaited below, unless the caller left first
    followed.catch(() => undefined);
    try {
      for await (const [timestamp] of working)
        yield statusUpdate(id, { state: TaskState.TASK_STATE_WORKING, timestamp });
      await this.#api(id, () => followed);
    } finally {
      stop.abort();
    }
    const task = await readTask(this.#client, id, historyLength);
    for (const artifact of task.artifacts) yield artifactUpdate(id, artifact);
    if (task.status) yield statusUpdate(id, task.status);
  }

  /** Runs `call`, the API's refusals as A2A's errors about task `id`. */
  async #api<T>(id: string | undefined, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw asA2aError(error, id);
    }
  }
}

function statusUpdate(
  taskId: string,
  status: { state: TaskState; timestamp: string | undefined; message?: Task['history'][number] | undefined },
): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: { taskId, contextId: taskId, status: { message: undefined, ...status }, metadata: undefined },
    },
  };
}

function artifactUpdate(taskId: string, artifact: Artifact): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: { taskId, contextId: taskId, artifact, append: false, lastChunk: true, metadata: undefined },
    },
  };
}

function historyLengthOf(value: number | undefined): number {
  if (value === undefined) return MAX_HISTORY;
  if (!Number.isInteger(value) || value < 0)
    throw new RequestMalformedError('historyLength must be a whole number, 0 or more.');
  return value;
}

/** Why a task at rest cannot be canceled, and what the caller may do instead. */
function notCancelable(conversation: Conversation): string {
  switch (conversation.status) {
    case 'waiting_for_confirmation':
      return `Task "${conversation.id}" waits for input, nothing runs: reply "approve" to it, or anything else to refuse its actions.`;
    case 'idle':
      return `Task "${conversation.id}" is submitted and nothing runs${conversation.queue ? ' yet (its run is queued)' : ''}.`;
    default:
      return `Task "${conversation.id}" has ended (${conversation.status}): there is nothing to cancel.`;
  }
}
