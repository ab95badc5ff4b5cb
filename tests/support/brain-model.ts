import { ScriptedLanguageModel, type GenerateRequest, type ScriptedReply } from '@flotilla/llm';
import { brainReply } from './brain-reply.js';
import { progressIn, type BrainTask } from './brain-task.js';

/**
 * The brain as an in-process model: the same pure function of the conversation as the brain
 * server's, read from the provider-neutral messages a step sends (no HTTP, no JSON), with the
 * task's latency. A benchmark's step worker runs on it to measure the runtime without the SDK's
 * HTTP round trip and without the server's CPU on the same cores.
 */
export function brainModel(): ScriptedLanguageModel {
  return new ScriptedLanguageModel({
    replies: brainModelReply,
    latencyMs: (request) => taskOf(request)?.latencyMs ?? 0,
    record: false,
    info: { model: 'brain' },
  });
}

export function brainModelReply(request: GenerateRequest): ScriptedReply {
  const task = taskOf(request);
  if (!task) return new Error('no TASK in the conversation');
  // steps only grow: the latest tool result (or a summary's PROGRESS after it) says how far it got
  const callId = new RegExp(`^call_${task.id}_(\\d+)_`);
  let step = 0;
  for (let index = request.messages.length - 1; index >= 0; index -= 1) {
    const message = request.messages[index]!;
    if (message.role === 'user') step = Math.max(step, progressIn(userText(message), task.id));
    const match = message.role === 'tool' ? callId.exec(message.toolCallId) : null;
    if (match) {
      step = Math.max(step, Number(match[1]) + 1);
      break;
    }
  }
  const reply = brainReply(task, step);
  return {
    ...(reply.text === undefined ? {} : { text: reply.text }),
    ...(reply.toolCalls ? { toolCalls: reply.toolCalls } : {}),
    usage: { inputTokens: reply.promptTokens, outputTokens: reply.completionTokens },
  };
}

/** The task the conversation's first `TASK {…}` user message carries. */
function taskOf(request: GenerateRequest): BrainTask | undefined {
  for (const message of request.messages) {
    const match = /TASK (\{.*\})/s.exec(userText(message));
    if (match) return JSON.parse(match[1]!) as BrainTask;
  }
  return undefined;
}

function userText(message: GenerateRequest['messages'][number]): string {
  return message.role === 'user' ? message.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '';
}
