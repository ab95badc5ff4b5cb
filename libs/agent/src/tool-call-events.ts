import type { ContentPart, EventDraft, Reasoning, SecurityRisk } from '@flotilla/events';
import { draftEvent, type DraftContext } from '@flotilla/events';
import type { GenerateResult } from '@flotilla/llm';
import type { ToolCatalog } from './tool-catalog.js';

const RISKS: ReadonlySet<string> = new Set(['low', 'medium', 'high']);

/**
 * Turns the tool calls of one response into action events. A call that cannot be executed
 * (unknown tool, invalid JSON, arguments failing the schema) still becomes an action, with
 * input null, answered at once by an agent_error the model reads: the transcript stays
 * well-formed and the model can correct itself.
 */
export function toolCallEvents(
  result: GenerateResult,
  tools: ToolCatalog,
  context: DraftContext,
  usedIds: ReadonlySet<string> = new Set(),
): EventDraft[] {
  const drafts: EventDraft[] = [];
  // an id the model repeats (within this reply, or from earlier in the conversation, where it is
  // answered already) is replaced: an action whose id is answered would never be run or answered
  const seenIds = new Set<string>();
  const taken = (id: string): boolean => seenIds.has(id) || usedIds.has(id);
  const thought: ContentPart[] = result.content.map((part) => ({ type: 'text', text: part.text }));
  result.toolCalls.forEach((call, index) => {
    let callId = call.id && !taken(call.id) ? call.id : `call_${result.responseId}_${index}`;
    while (taken(callId)) callId = `${callId}_`;
    seenIds.add(callId);
    const parsed = parseArguments(call.arguments);
    let input: Record<string, unknown> | null = null;
    let error: string | undefined;
    let risk: SecurityRisk = tools.isReadOnly(call.name) ? 'low' : 'unknown';
    let summary: string | undefined;
    if (!parsed.ok) {
      error = `The arguments for tool "${call.name}" are not valid JSON (${parsed.reason}). Send one JSON object matching the tool's parameters.`;
    } else {
      const { security_risk: rawRisk, summary: rawSummary, ...rest } = parsed.value;
      if (typeof rawRisk === 'string' && RISKS.has(rawRisk)) risk = rawRisk as SecurityRisk;
      if (typeof rawSummary === 'string' && rawSummary.trim() !== '') summary = rawSummary.slice(0, 200);
      const checked = tools.check(call.name, rest);
      if (checked.ok) input = checked.input;
      else error = checked.message;
    }
    const first = index === 0;
    const action = draftEvent(context, 'action', {
      tool_call_id: callId,
      tool_name: call.name || 'unknown',
      arguments: call.arguments,
      input,
      thought: first ? thought : [],
      ...(first && result.reasoning ? { reasoning: toReasoning(result.reasoning) } : {}),
      response_id: result.responseId,
      security_risk: risk,
      ...(summary === undefined ? {} : { summary }),
    });
    drafts.push(action);
    if (error !== undefined) {
      drafts.push(
        draftEvent({ ...context, source: 'environment' }, 'agent_error', {
          tool_call_id: callId,
          tool_name: call.name || 'unknown',
          action_id: action.id,
          error,
        }),
      );
    }
  });
  return drafts;
}

function parseArguments(raw: string): { ok: true; value: Record<string, unknown> } | { ok: false; reason: string } {
  if (raw.trim() === '') return { ok: true, value: {} };
  try {
    const value: unknown = JSON.parse(raw);
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return { ok: false, reason: 'expected a JSON object' };
    return { ok: true, value: value as Record<string, unknown> };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

/** The LLM layer's reasoning (camelCase) as the protocol's (snake_case). */
export function toReasoning(reasoning: NonNullable<GenerateResult['reasoning']>): Reasoning {
  return {
    ...(reasoning.text === undefined ? {} : { text: reasoning.text }),
    ...(reasoning.thinkingBlocks ? { thinking_blocks: reasoning.thinkingBlocks.map((block) => ({ ...block })) } : {}),
    ...(reasoning.items
      ? {
          items: reasoning.items.map((item) => ({
            id: item.id,
            ...(item.encryptedContent === undefined ? {} : { encrypted_content: item.encryptedContent }),
            ...(item.summary === undefined ? {} : { summary: [...item.summary] }),
          })),
        }
      : {}),
  };
}
