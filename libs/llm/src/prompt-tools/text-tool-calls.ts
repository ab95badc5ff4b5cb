import { parseToolCallText } from './parse-tool-calls.js';

/** A tool call a model wrote into its text, in one of the formats models are trained on. */
export type TextToolCall = {
  /** `tool_call`: `<tool_call>{…}</tool_call>` (Hermes, Qwen); `function`: `<function=name>…` or `<function name="…">` / `<invoke name="…">` (Qwen3-Coder and XML styles); `json`: the whole reply is a JSON call object. */
  readonly format: 'tool_call' | 'function' | 'json';
  /** The tool it names (as written). */
  readonly name: string;
};

const FUNCTION_TAG =
  /<(?:function=\s*"?([A-Za-z0-9_.:-]+)"?\s*>|(?:function|invoke)\s+name\s*=\s*"([A-Za-z0-9_.:-]+)"\s*>)/;
const FENCED = /^```[A-Za-z]*\s*\n([\s\S]*?)\n?```$/;

/**
 * Finds a tool call written as text instead of made through the provider's tool-calling interface,
 * for a model that has native tool calls: the first one, or undefined. Markup (`<tool_call>`,
 * `<function=…>`) counts whatever tool it names; a JSON object counts only when it is the whole
 * reply (alone or in one code fence) and names one of `toolNames`, so an answer that merely
 * contains JSON is not taken for a call.
 */
export function findTextToolCall(text: string, toolNames: readonly string[]): TextToolCall | undefined {
  const tagged = parseToolCallText(text, 'text').toolCalls[0];
  if (tagged) return { format: 'tool_call', name: tagged.name };
  const tag = FUNCTION_TAG.exec(text);
  if (tag) return { format: 'function', name: (tag[1] ?? tag[2])! };
  const name = jsonCallName(text.trim());
  if (name !== undefined && toolNames.includes(name)) return { format: 'json', name };
  return undefined;
}

/** The tool a JSON call object names: `{"name"|"tool"|"tool_name": …}` or `{"function": {"name": …}}`, alone or the first of an array. */
function jsonCallName(trimmed: string): string | undefined {
  const body = FENCED.exec(trimmed)?.[1]?.trim() ?? trimmed;
  if (!body.startsWith('{') && !body.startsWith('[')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  const call: unknown = Array.isArray(value) ? value[0] : value;
  if (call === null || typeof call !== 'object') return undefined;
  const record = call as Record<string, unknown>;
  for (const key of ['name', 'tool', 'tool_name']) {
    if (typeof record[key] === 'string') return record[key];
  }
  const nested = record['function'];
  if (typeof nested === 'string') return nested;
  if (nested !== null && typeof nested === 'object' && typeof (nested as { name?: unknown }).name === 'string')
    return (nested as { name: string }).name;
  return undefined;
}
