import type { AgentSpecEvent, Event, LlmUsageEvent, McpToolsEvent } from '@flotilla/events';
import { imageNote, wireRequest, type ChatMessage, type GenerateRequest, type LlmConfig } from '@flotilla/llm';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { ChatRenderer, ViewBuilder } from '@flotilla/view';
import { llmConfigOf, readAgentSpec } from './agent-spec.js';
import { withListedTools } from './mcp-tools-catalog.js';
import { SpecFold } from './spec-fold.js';
import { STEP_STREAMS, stepRequest } from './step-request.js';
import { specTools } from './task-tool.js';
import type { ToolCatalog } from './tool-catalog.js';
import { messageCharacters } from './token-estimate.js';

/** One step's model request, rebuilt from the log. */
export type ReplayedRequest = {
  /** The seq of the step's `llm_usage` event (purpose `step`): its commit is the step's. */
  readonly seq: number;
  /** The seq of the `agent_spec` event in force at the step. */
  readonly specSeq: number;
  /** The model that made the step: the spec's, or the fallback its `llm_usage` names. */
  readonly provider: string;
  readonly model: string;
  /** The request's body as the provider's adapter sends it (UTF-8 JSON), byte for byte. */
  readonly body: string;
};

export class ReplayError extends Error {
  override readonly name = 'ReplayError';
}

export type ReplayOptions = {
  /** Describes the built-in tools a spec names (their schemas); default the built-in tools, as the step workers describe them. */
  readonly registry?: ToolRegistry;
};

/**
 * The model request of every step of a conversation, rebuilt from its log alone (DESIGN invariant
 * 14): for each step commit (its `llm_usage` of purpose `step`), the view of the log before the
 * step's call (the system prompt as logged, the condensations applied) rendered by the step's own
 * `stepRequest`, the tools of the spec in force there (its built-in ones, and those its MCP servers
 * listed in the log), and the body the provider adapter of the model that made the step (the
 * spec's, or the fallback of the spec's `llm.fallbacks` its `llm_usage` names) builds from them.
 * `events` must be the whole log, from seq 1. A step that ran without a spec in the log (the
 * deployment's default, which the log does not hold), under a spec this build cannot read, or by a
 * fallback the spec does not hold cannot be rebuilt: a ReplayError says which.
 */
export function replayRequests(events: readonly Event[], options: ReplayOptions = {}): ReplayedRequest[] {
  const registry = options.registry ?? new ToolRegistry(createBuiltinTools());
  const agents = new Map<AgentSpecEvent, ReplayAgent>();
  const listedTools = new WeakMap<readonly McpToolsEvent[], ToolCatalog>();
  const view = new ViewBuilder();
  const renderer = new ChatRenderer(messageCharacters);
  const specs = new SpecFold();
  const replayed: ReplayedRequest[] = [];
  let folded = 0;
  events.forEach((event, index) => {
    if (event.seq !== index + 1)
      throw new ReplayError(`the log must be whole, from seq 1: found seq ${event.seq} at position ${index + 1}`);
    if (event.type !== 'llm_usage' || event.purpose !== 'step') return;
    // the step read every event before its llm_usage: the log before its commit, and what its commit starts with (the system prompt, skills)
    const read = events.slice(folded, index);
    view.append(read);
    specs.append(read);
    folded = index;
    const spec = specs.event();
    if (spec === undefined)
      throw new ReplayError(
        `the step at seq ${event.seq} ran the deployment's default agent spec: the log has no agent_spec before it`,
      );
    const agent = agentOf(spec, agents, registry);
    // the spec's built-in tools and what its MCP servers listed in the log, as the step worker offers them
    const listed = specs.listed();
    let tools = listedTools.get(listed);
    if (!tools) listedTools.set(listed, (tools = withListedTools(agent.tools, listed)));
    const { request } = stepRequest({
      history: events.slice(0, index),
      tools,
      view: () => view.view(),
      chat: renderer,
    });
    const wire = wireRequest(modelOf(agent, event, spec.seq), withoutStoredBytes(request), { stream: STEP_STREAMS });
    replayed.push({ seq: event.seq, specSeq: spec.seq, provider: wire.provider, model: wire.model, body: wire.body });
  });
  return replayed;
}

/**
 * The request with each stored image as a line naming it (its digest and size): its bytes are in
 * the images bucket, not in the log, so a rebuilt body differs from the one sent exactly there.
 */
function withoutStoredBytes(request: GenerateRequest): GenerateRequest {
  const stored = (message: ChatMessage): boolean =>
    message.role !== 'system' && message.content.some((part) => part.type === 'image' && part.stored !== undefined);
  if (!request.messages.some(stored)) return request;
  return {
    ...request,
    messages: request.messages.map((message): ChatMessage => {
      if (message.role === 'system' || !stored(message)) return message;
      const content = message.content.map((part) =>
        part.type === 'image' && part.stored !== undefined
          ? {
              type: 'text' as const,
              text: imageNote(
                part,
                `stored image ${part.stored.sha256}: its bytes are in the images bucket, not in the log`,
              ),
            }
          : part,
      );
      return { ...message, content } as ChatMessage;
    }),
  };
}

/** A spec's tools, and its model and each of its fallbacks as they are called. */
type ReplayAgent = { readonly tools: ToolCatalog; readonly llm: LlmConfig; readonly fallbacks: readonly LlmConfig[] };

function agentOf(event: AgentSpecEvent, known: Map<AgentSpecEvent, ReplayAgent>, registry: ToolRegistry): ReplayAgent {
  let agent = known.get(event);
  if (!agent) {
    const read = readAgentSpec(event);
    if (!read.ok) throw new ReplayError(read.reason);
    agent = {
      tools: specTools(registry, read.spec),
      llm: llmConfigOf(read.spec.llm),
      fallbacks: (read.spec.llm.fallbacks ?? []).map(llmConfigOf),
    };
    known.set(event, agent);
  }
  return agent;
}

/** The model that made a step: the spec's, or the fallback its `llm_usage` names, which must be the spec's. */
function modelOf(agent: ReplayAgent, usage: LlmUsageEvent, specSeq: number): LlmConfig {
  const { fallback } = usage;
  if (fallback === undefined) return agent.llm;
  const model = agent.fallbacks[fallback.index];
  if (model === undefined)
    throw new ReplayError(
      `the step at seq ${usage.seq} was made by fallback ${fallback.index} (${fallback.model}), and the agent spec at seq ${specSeq} has ${agent.fallbacks.length === 0 ? 'no fallbacks' : `fallbacks 0 to ${agent.fallbacks.length - 1} only`}`,
    );
  if (model.provider !== fallback.provider || model.model !== fallback.model) {
    throw new ReplayError(
      `the step at seq ${usage.seq} names fallback ${fallback.index} as ${fallback.provider} ${fallback.model}, and the agent spec at seq ${specSeq} has ${model.provider} ${model.model} there`,
    );
  }
  return model;
}

/** A step's rebuilt request against the one recorded for it. */
export type RequestCheck =
  | { readonly seq: number; readonly result: 'same' }
  | { readonly seq: number; readonly result: 'different'; readonly byte: number; readonly detail: string }
  | { readonly seq: number; readonly result: 'missing' };

/** A recorded request: its body, and the step's seq when the recording knows it (else matched by position). */
export type RecordedModelRequest = { readonly seq?: number; readonly body: string };

/**
 * Compares the rebuilt requests with recorded ones, byte for byte: by seq where a recording gives
 * it, else in order. A difference names its first differing byte and what is there on each side.
 */
export function checkRequests(
  replayed: readonly ReplayedRequest[],
  recorded: readonly RecordedModelRequest[],
): RequestCheck[] {
  const bySeq = new Map(recorded.filter((entry) => entry.seq !== undefined).map((entry) => [entry.seq!, entry]));
  const inOrder = recorded.filter((entry) => entry.seq === undefined);
  return replayed.map((request, index): RequestCheck => {
    const other = bySeq.get(request.seq) ?? (bySeq.size === 0 ? inOrder[index] : undefined);
    if (other === undefined) return { seq: request.seq, result: 'missing' };
    const ours = Buffer.from(request.body, 'utf8');
    const theirs = Buffer.from(other.body, 'utf8');
    if (ours.equals(theirs)) return { seq: request.seq, result: 'same' };
    let byte = 0;
    while (byte < ours.length && byte < theirs.length && ours[byte] === theirs[byte]) byte += 1;
    // bodies are one line of JSON: the bytes around the difference, as they are
    const around = (bytes: Buffer): string => `…${bytes.subarray(Math.max(0, byte - 20), byte + 40).toString('utf8')}…`;
    return {
      seq: request.seq,
      result: 'different',
      byte,
      detail: `rebuilt ${around(ours)} (${ours.length} bytes), recorded ${around(theirs)} (${theirs.length} bytes)`,
    };
  });
}
