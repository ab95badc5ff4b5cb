import type { ToolCall, ToolSchema } from '../messages.js';

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

/**
 * The system-prompt section that teaches a model without native tool calling how to call tools.
 * The format (one JSON object per `<tool_call>` block) is the one Hermes/Qwen-style models are trained on.
 */
export function renderToolPrompt(tools: readonly ToolSchema[]): string {
  const specs = tools
    .map((tool) => JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }))
    .join('\n');
  return [
    '# Tools',
    '',
    'You can call the following tools. Each is described by a JSON object with its name, description and a JSON Schema of its arguments:',
    '<tools>',
    specs,
    '</tools>',
    '',
    'To call a tool, write a block like this, with a JSON object holding the tool name and its arguments:',
    `${TOOL_CALL_OPEN}`,
    '{"name": "<tool name>", "arguments": {"<argument>": "<value>"}}',
    `${TOOL_CALL_CLOSE}`,
    'You may write several blocks to call several tools at once. After your tool calls, stop and wait:',
    'the results come back in the next user message inside <tool_result> blocks.',
  ].join('\n');
}

/** Renders a tool call the way the model would have written it (used to replay history). */
export function renderToolCall(call: ToolCall): string {
  return `${TOOL_CALL_OPEN}\n{"name": ${JSON.stringify(call.name)}, "arguments": ${argumentsForReplay(call.arguments)}}\n${TOOL_CALL_CLOSE}`;
}

export function renderToolResult(toolName: string, toolCallId: string, text: string, isError: boolean): string {
  const status = isError ? ' status="error"' : '';
  return `<tool_result name=${JSON.stringify(toolName)} id=${JSON.stringify(toolCallId)}${status}>\n${text}\n</tool_result>`;
}

function argumentsForReplay(raw: string): string {
  try {
    JSON.parse(raw);
    return raw;
  } catch {
    return JSON.stringify(raw);
  }
}
