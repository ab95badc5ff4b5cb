// What a `SendMessage` (`message/send`, `message/stream`) asks of Flotilla, checked: the user's
// text, the task it goes on with (a conversation of the caller's), the template a new one starts
// from, how much history to answer with, and whether to wait for the run.
import { Role, type SendMessageRequest } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError } from '@a2a-js/sdk/errors';
import { ConversationId, SpecName } from '@flotilla/events';
import { z } from 'zod';
import { taskNotFound } from './a2a-errors.js';
import { MAX_HISTORY } from './a2a-task-view.js';

export type SendRequest = {
  readonly text: string;
  /** The conversation to go on with; none: a new one. */
  readonly taskId: string | undefined;
  readonly template: string | undefined;
  readonly historyLength: number;
  /** Answer once the run has started, not when it rests. */
  readonly returnImmediately: boolean;
};

const Metadata = z.looseObject({ template: SpecName.optional() }).optional();

const SendParams = z.object({
  message: z.object(
    {
      role: z.literal(Role.ROLE_USER, { error: 'message.role must be "user" (ROLE_USER)' }),
      parts: z
        .array(z.object({ content: z.object({ $case: z.string(), value: z.unknown() }).optional() }))
        .min(1, { error: 'message.parts must hold at least one text part' }),
      taskId: z.string(),
      contextId: z.string(),
      metadata: Metadata,
    },
    { error: 'message is required' },
  ),
  configuration: z
    .object({ historyLength: z.number().int().nonnegative().optional(), returnImmediately: z.boolean() })
    .optional(),
  metadata: Metadata,
});

/** The request's meaning, or the A2A error naming what is wrong with it. */
export function readSendRequest(params: SendMessageRequest): SendRequest {
  const parsed = SendParams.safeParse(params);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') ?? '';
    throw new RequestMalformedError(`${where ? `${where}: ` : ''}${issue?.message ?? 'invalid params'}`);
  }
  const { message, configuration, metadata } = parsed.data;
  const texts = message.parts.map((part) => {
    if (part.content?.$case !== 'text')
      throw new ContentTypeNotSupportedError('Only text parts: this agent takes text/plain messages.');
    return String(part.content.value);
  });
  const text = texts.join('\n');
  if (text.trim() === '') throw new RequestMalformedError('message.parts: the message has no text.');
  return {
    text,
    taskId: taskIdOf(message.taskId, message.contextId),
    template: metadata?.template ?? message.metadata?.template,
    historyLength: Math.min(configuration?.historyLength ?? MAX_HISTORY, MAX_HISTORY),
    returnImmediately: configuration?.returnImmediately ?? false,
  };
}

/** A task's id from a request: a conversation id, or a task that cannot exist. */
export function checkedTaskId(id: string): string {
  if (!ConversationId.safeParse(id).success) throw taskNotFound(id);
  return id;
}

/** The task a message goes on with: its `taskId`, else its `contextId` (a task's context is the task itself). */
function taskIdOf(taskId: string, contextId: string): string | undefined {
  if (taskId !== '' && contextId !== '' && taskId !== contextId)
    throw new RequestMalformedError(
      `message.contextId "${contextId}" is not the context of task "${taskId}": a task's context id is its own id.`,
    );
  const id = taskId || contextId;
  return id === '' ? undefined : checkedTaskId(id);
}
