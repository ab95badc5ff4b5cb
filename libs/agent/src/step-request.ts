import type { Event, ToolSpec } from '@flotilla/events';
import type { GenerateRequest, ToolSchema } from '@flotilla/llm';
import { buildView, toChatMessages, type ChatRenderer, type View } from '@flotilla/view';
import { withAgentParameters } from './system-prompt.js';
import type { ToolCatalog } from './tool-catalog.js';

/**
 * A step's model call always streams (whether or not anyone follows its deltas), so the request's
 * body is one the log alone rebuilds: nothing of a step worker's own settings is in it.
 */
export const STEP_STREAMS = true;

export type StepRequestInput = {
  /** The log the step reads: every event before its commit, and the system prompt its commit starts with, if any. */
  readonly history: readonly Event[];
  readonly tools: ToolCatalog;
  /** The view of `history`, when the caller keeps one up to date; built from `history` otherwise. */
  readonly view?: () => View;
  /** Renders the view, when the caller keeps a renderer per conversation (see `StepInput.chat`). */
  readonly chat?: ChatRenderer;
};

export type StepRequest = {
  /** What the step asks the model: the view rendered as chat messages, and the tools offered. */
  readonly request: GenerateRequest & { readonly tools: readonly ToolSchema[] };
  readonly view: View;
  /** The renderer's measure of the messages, when it has one. */
  readonly measured: number | undefined;
};

/**
 * The request a step sends the model, from the log it read: the one place it is made, for the
 * step and for a replay of the step from the log (replay.ts).
 */
export function stepRequest(input: StepRequestInput): StepRequest {
  const view = input.view ? input.view() : buildView(input.history);
  const rendered = input.chat?.render(view.items);
  const messages = rendered?.messages ?? toChatMessages(view);
  return { request: { messages, tools: offeredTools(input.tools).toolSchemas }, view, measured: rendered?.measured };
}

type OfferedTools = { readonly specs: readonly ToolSpec[]; readonly toolSchemas: readonly ToolSchema[] };
const offered = new WeakMap<readonly ToolSpec[], OfferedTools>();

/** The catalog's tools as the model sees them, built once per catalog's spec list (not per step). */
export function offeredTools(tools: ToolCatalog): OfferedTools {
  const catalog = tools.specs();
  let prepared = offered.get(catalog);
  if (!prepared) {
    const specs = catalog.map(withAgentParameters);
    prepared = {
      specs,
      toolSchemas: specs.map((spec) => ({
        name: spec.name,
        description: spec.description,
        parameters: spec.parameters,
      })),
    };
    offered.set(catalog, prepared);
  }
  return prepared;
}
