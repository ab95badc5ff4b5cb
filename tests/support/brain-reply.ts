import type { BrainTask } from './brain-task.js';

/** What the brain answers at step `step` of `task`: tool calls until the task's steps are done, then a final text. */
export function brainReply(
  task: BrainTask,
  step: number,
): {
  toolCalls?: { id: string; name: string; arguments: string }[];
  text?: string;
  promptTokens: number;
  completionTokens: number;
} {
  const tokens = { promptTokens: 100 + step * 20, completionTokens: 20 };
  if (step >= task.steps)
    return {
      text: task.finalAnswerChars ? 'x'.repeat(task.finalAnswerChars) : `Done: ${task.steps} steps for ${task.id}.`,
      ...tokens,
    };
  const batch = task.batches?.[step];
  if (batch)
    return {
      toolCalls: batch.map((call, index) => ({
        id: `call_${task.id}_${step}_${index}`,
        name: call.tool,
        arguments: JSON.stringify({ ...call.input, security_risk: 'low' }),
      })),
      ...tokens,
    };
  const toolCalls = Array.from({ length: task.parallel ?? 1 }, (_, index) => ({
    id: `call_${task.id}_${step}_${index}`,
    ...(task.calls?.[step]
      ? {
          name: task.calls[step]!.tool,
          arguments: JSON.stringify({ ...task.calls[step]!.input, security_risk: 'low' }),
        }
      : task.commands
        ? {
            name: 'terminal',
            arguments: JSON.stringify({ command: task.commands[step] ?? 'true', security_risk: 'low' }),
          }
        : task.tool === 'think'
          ? {
              name: 'think',
              arguments: JSON.stringify({
                thought: `Step ${step}.${index} of ${task.id}: plan the next move.`,
                security_risk: 'low',
              }),
            }
          : {
              name: 'terminal',
              arguments: JSON.stringify({
                command: `sleep ${task.sleep ?? 0}; echo "${task.id} ${step} ${index}" >> ${task.effects}`,
                security_risk: 'low',
              }),
            }),
  }));
  return { toolCalls, ...tokens };
}

/** What a hostile model answers at its `turn`-th turn (its ids never count as progress). */
export function hostileReply(
  task: BrainTask,
  hostile: 'invalid_tool_calls' | 'text_tool_calls',
  turn: number,
): ReturnType<typeof brainReply> {
  const tokens = { promptTokens: 100 + turn * 20, completionTokens: 20 };
  const command = `echo "${task.id} ${turn}" >> ${task.effects}`;
  if (hostile === 'invalid_tool_calls') {
    const calls = [
      { name: 'no_such_tool', arguments: JSON.stringify({ command }) },
      { name: 'terminal', arguments: '{"command": "ls -la' },
      { name: 'terminal', arguments: JSON.stringify({ command: 42 }) },
    ];
    return { toolCalls: [{ id: `bad_${task.id}_${turn}`, ...calls[turn % calls.length]! }], ...tokens };
  }
  const texts = [
    `<function=terminal>\n<parameter=command>\n${command}\n</parameter>\n</function>`,
    JSON.stringify({ tool: 'terminal', arguments: { command } }),
    `I will run it.\n<tool_call>\n${JSON.stringify({ name: 'terminal', arguments: { command } })}\n</tool_call>`,
  ];
  return { text: texts[turn % texts.length]!, ...tokens };
}
