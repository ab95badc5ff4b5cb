import { draftEvent, type AgentSpecEvent, type EventDraft } from '@flotilla/events';
import { z } from 'zod';
import { AgentConfig } from './agent-config.js';
import { llmConfigOf, SpecModel } from './spec-model.js';

export { llmConfigOf, MAX_FALLBACKS, SpecFallback, SpecModel } from './spec-model.js';

/** The version of the agent spec's schema this build writes and reads (the `version` of every spec). */
export const AGENT_SPEC_VERSION = 1 as const;

/**
 * An agent spec: how a conversation's steps are made, as its log records it (`agent_spec`
 * events). The agent's configuration with its model as a `SpecModel`, every default filled in,
 * and its schema's version. Immutable; a change is a new spec in a new event.
 */
export const AgentSpec = AgentConfig.extend({
  version: z.literal(AGENT_SPEC_VERSION, { error: `this build reads agent specs of version ${AGENT_SPEC_VERSION}` }),
  llm: SpecModel,
});
export type AgentSpec = z.infer<typeof AgentSpec>;
export type AgentSpecInput = z.input<typeof AgentSpec>;

/** The configuration a step runs with, from a spec: the same settings, the model without where its key comes from (nor its fallbacks: the spec keeps them). */
export function agentConfigOf(spec: AgentSpec): AgentConfig {
  const { version: _version, llm, ...rest } = spec;
  return Object.freeze({ ...rest, llm: llmConfigOf(llm) });
}

/** The spec of an agent configuration, as a log records it: the same settings, its model without a key. */
export function specOfConfig(config: AgentConfig): AgentSpec {
  const { apiKey: _key, apiKeyEnv: _variable, ...model } = config.llm;
  return Object.freeze(AgentSpec.parse({ ...config, version: AGENT_SPEC_VERSION, llm: model }));
}

export type SpecRead =
  { readonly ok: true; readonly spec: AgentSpec } | { readonly ok: false; readonly reason: string };

const readSpecs = new WeakMap<object, SpecRead>();

/**
 * The spec an `agent_spec` event carries, parsed (once per event object). A spec the writer
 * validated parses; one that does not (a newer schema version, a hand-written log) is refused
 * with the reason, for the reader to end the run with, never to guess at.
 */
export function readAgentSpec(event: AgentSpecEvent): SpecRead {
  const known = readSpecs.get(event);
  if (known) return known;
  const parsed = AgentSpec.safeParse(event.spec);
  const read: SpecRead = parsed.success
    ? { ok: true, spec: Object.freeze(parsed.data) }
    : {
        ok: false,
        reason: `the agent spec at seq ${event.seq} is not one this build reads: ${describeIssues(parsed.error)}`,
      };
  readSpecs.set(event, read);
  return read;
}

/** A zod error's issues, each naming its field under `prefix` (`spec.llm.model`). */
export function fieldIssues(error: z.ZodError, prefix = ''): { readonly path: string; readonly message: string }[] {
  const at = (path: readonly PropertyKey[]): string =>
    [prefix, ...path.map(String)].filter(Boolean).join('.') || '(root)';
  // an unknown field is named itself, not the object holding it
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: at([...issue.path, key]), message: 'unknown field' }))
      : [{ path: at(issue.path), message: issue.message }],
  );
}

/** A zod error as one line naming each field (`llm.model: …; tools: …`). */
export function describeIssues(error: z.ZodError, prefix = ''): string {
  return fieldIssues(error, prefix)
    .slice(0, 5)
    .map((issue) => `${issue.path}: ${issue.message}`)
    .join('; ');
}

/**
 * What a service appends when the spec in force cannot be read (`readAgentSpec` refused it): the
 * run ends, saying why. Work made from a guess would not be the work the log asks for.
 */
export function unreadableSpecDrafts(
  ref: { readonly tenant: string; readonly conversation: string },
  reason: string,
): EventDraft[] {
  const system = { ...ref, source: 'system' as const };
  return [
    draftEvent(system, 'conversation_error', { code: 'invalid_spec', detail: reason }),
    draftEvent(system, 'state_change', { status: 'error', reason: 'the agent spec could not be read' }),
  ];
}
