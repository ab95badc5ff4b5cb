import type { ToolCall } from '../messages.js';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from './tool-prompt.js';

export type ParsedToolText = { readonly text: string; readonly toolCalls: readonly ToolCall[] };

const BLOCK = new RegExp(`${TOOL_CALL_OPEN}([\\s\\S]*?)(?:${TOOL_CALL_CLOSE.replace('/', '\\/')}|$)`, 'g');
const NAME = /"name"\s*:\s*"([^"]+)"/;

/**
 * Extracts `<tool_call>` blocks from model text. A block whose JSON does not parse still yields a
 * call (raw text as arguments, name `invalid_tool_call` if none is found) so the agent can tell the
 * model what was wrong instead of silently dropping it. An unterminated last block is accepted.
 */
export function parseToolCallText(text: string, responseId: string): ParsedToolText {
  const toolCalls: ToolCall[] = [];
  for (const match of text.matchAll(BLOCK)) {
    const body = (match[1] ?? '').trim();
    toolCalls.push({ id: `${responseId}-call-${toolCalls.length}`, ...parseBody(body) });
  }
  if (toolCalls.length === 0) return { text, toolCalls };
  return { text: text.replace(BLOCK, '').trim(), toolCalls };
}

function parseBody(body: string): { name: string; arguments: string } {
  try {
    const value: unknown = JSON.parse(body);
    if (isCall(value)) {
      const args = value.arguments ?? value.parameters ?? {};
      return { name: value.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
    }
  } catch {
    // fall through: keep the raw text so the caller can report it
  }
  return { name: NAME.exec(body)?.[1] ?? 'invalid_tool_call', arguments: body };
}

function isCall(value: unknown): value is { name: string; arguments?: unknown; parameters?: unknown } {
  return typeof value === 'object' && value !== null && typeof (value as { name?: unknown }).name === 'string';
}
